//! snarkflow on NATS JetStream.
//!
//! [`Bus::connect`] connects and makes sure every stream, consumer and bucket exists
//! (idempotently: every service calls it at start, in any order). On top of that: publishing
//! with W3C trace context in message headers and JetStream de-duplication ids
//! ([`Bus::publish`]), priority-lane pulling ([`Lanes`]), in-progress heartbeats for long work
//! ([`Heartbeat`]), and the object store (partitions and job inputs) with digest checks ([`Bus::put_object`],
//! [`Bus::get_object`]), and the job ledger ([`Ledger`]).
//!
//! Module map:
//! - `connect.rs`: [`Bus`] and [`BusConfig`]: connecting (waiting, and saying why), declaring
//!   every stream, consumer and bucket, publishing.
//! - `backlog.rs`: [`LaneBacklog`] and what waits in the work streams (per lane, per stage).
//! - `security.rs`: [`NatsSecurity`]: who a service is to NATS (credentials, TLS, a per-role
//!   inbox prefix).
//! - `lanes.rs`: [`Lanes`], pulling by priority (the pulls re-made after a reconnection), and
//!   [`Heartbeat`], in-progress acks from a task of their own.
//! - `ledger.rs`: [`Ledger`]: job records by compare-and-set, idempotency keys, `is_live`,
//!   `task_status`, `wait_finished`, `changes` (a watch).
//! - `objects.rs`: the object store (partitions and job inputs), digest checked on the way out.
//! - `dead_letters.rs`: the max-deliveries advisories, kept in a stream of their own.
//! - `control.rs`: control requests over core NATS (one request, every worker's reply).
//! - `trace_context.rs`: W3C trace context in message headers.
//! - `settle.rs`: [`settle`](fn@settle) and [`Failure`]: one classification of failures and one
//!   ack rule for every worker.

mod backlog;
mod connect;
mod control;
mod dead_letters;
mod lanes;
mod ledger;
mod objects;
mod security;
pub mod settle;
mod trace_context;

pub use async_nats::jetstream::{kv, AckKind, Message};
pub use backlog::LaneBacklog;
pub use connect::{Bus, BusConfig};
pub use dead_letters::{DeadLetter, DEAD_LETTER_RETRY};
pub use lanes::{Heartbeat, Lanes};
pub use ledger::{KeyClaim, KeyHold, Ledger, LedgerChange, TaskStatus};
pub use objects::{object_digest, Fetched, Stored, StrayChunks};
pub use security::{inbox_prefix, redact_url, NatsSecurity, Secret, SecurityError};
pub use settle::{settle, Failure, Outcome, TaskRef};
pub use trace_context::{extract_context, inject_current_context};

/// Errors from the bus; the message says which operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("{op}: {source}")]
    Nats { op: String, source: async_nats::Error },
    #[error("object {object} is corrupt: {reason}")]
    Corrupt { object: String, reason: String },
    #[error("object {0} not found")]
    NotFound(String),
    #[error("{what} cannot be decoded: {reason}")]
    Undecodable { what: String, reason: String },
    /// A compare-and-set kept losing, or a key is being claimed concurrently: retry.
    #[error("{0}")]
    Conflict(String),
    /// A setting that can never work (contradictory or unreadable credentials).
    #[error("{0}")]
    Config(String),
    /// A stream, bucket or the object store is at its size limit (or the server is out of
    /// storage): nothing was written; space returns as jobs finish.
    #[error("{0}")]
    Full(String),
}

/// What JetStream says when a write does not fit (a stream's max_bytes with discard new, or
/// the server's storage).
const FULL_MARKERS: [&str; 3] = ["maximum bytes exceeded", "insufficient resources", "maximum messages exceeded"];

pub(crate) fn nats_err<E: Into<async_nats::Error>>(op: impl Into<String>) -> impl FnOnce(E) -> BusError {
    let op = op.into();
    move |e| {
        let source: async_nats::Error = e.into();
        let text = source.to_string().to_lowercase();
        if FULL_MARKERS.iter().any(|m| text.contains(m)) {
            return BusError::Full(format!("{op}: NATS storage is full ({source})"));
        }
        BusError::Nats { op, source }
    }
}

/// Milliseconds since the Unix epoch (timestamps in messages and records).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
