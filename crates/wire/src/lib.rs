//! Wire types for snarkflow: what travels between the gateway, the synth-workers and the
//! gpu-workers over NATS JetStream, and what the HTTP API returns.
//!
//! This crate is deliberately small: serde types, subject and stream names, and the schema
//! version. It knows nothing of tokio, NATS clients, HTTP or bellperson, so every service and
//! every tool can depend on it without pulling those in. It names no proof kind.
//!
//! Module map: `kind.rs` ([`JobKind`], any well-formed name — which kinds exist is the
//! registry's business — and [`CircuitSpec`], a kind's name plus the kind's own rendering of
//! its spec, which is also the circuit id's tail); `job.rs` (job records, [`Priority`],
//! sector-size names, [`MAX_PARTITIONS`]); `messages.rs` ([`SynthTask`], [`ProveTask`],
//! [`JobEvent`], [`Stage`], the [`PartitionTask`] trait, [`encode`] / [`decode`], which check
//! [`SCHEMA_VERSION`]); `control.rs` (control requests to gpu-workers and their replies: plain
//! JSON, no schema field); `topology.rs` (stream, consumer, bucket, subject and object names,
//! message ids).

mod control;
mod job;
mod kind;
mod messages;
mod topology;

pub use control::*;
pub use job::*;
pub use kind::{BadSpec, CircuitSpec, JobKind};
pub use messages::*;
pub use topology::*;

/// Version of the message schema. Bumped on any incompatible change to a type in this crate;
/// consumers reject messages whose `schema` field differs. 2 (2026-12-04): the readers of
/// pre-release forms (specs as a kind's fields, records without `enqueued`) went; a gateway of
/// schema 2 does not read schema 1's records or messages (docs/operations.md, upgrading).
pub const SCHEMA_VERSION: u32 = 2;
