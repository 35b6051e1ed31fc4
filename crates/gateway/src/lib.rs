//! The snarkflow gateway: HTTP API in front of the proving pipeline.
//!
//! It validates and records jobs in the job ledger (a JetStream KV bucket), publishes one
//! synthesis task per partition, and applies the workers' events to the ledger until a job is
//! done, failed or cancelled. It holds no state of its own: restart it any time.
//!
//! Entry points: [`run`] (what `main` calls), [`serve`] (the same on a bound listener, for
//! tests) and [`app`] (the router, for handler tests without a socket).
//!
//! # Map
//! - `http`: the HTTP door — router, limits, handlers, the JSON error type, OpenAPI.
//! - [`grpc`]: the other door, cuzk's `ProvingEngine` for Curio.
//! - `auth`, `quota`: who is calling, and how much they may submit.
//! - `jobs`: what a request does through either door — validate, submit (fan out into
//!   tasks), look up, cancel, the view clients get, and a job's end (verify, fail, clean up).
//! - `events`: the event loop applying workers' events to the ledger, and dead letters.
//! - `ledger`: the gateway's index of the ledger, the room left in it, the periodic pass,
//!   the backlog autoscalers follow.
//! - `cluster`: what the cluster is doing (gpu-workers, lanes, jobs per state), for both doors.
//! - `services`: the supervisor that starts all of the above and stops it in order;
//!   `state`: what handlers share; `config`, `metrics`.

mod auth;
mod cluster;
mod config;
mod events;
pub mod grpc;
mod http;
mod jobs;
mod ledger;
mod metrics;
mod quota;
mod services;
mod state;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use auth::{Auth, TokenStore, ANONYMOUS};
pub use cluster::{ClusterView, LaneView};
pub use config::Config;
pub use http::app;
pub use http::error::ApiError;
pub use http::openapi::document as openapi_document;
pub use jobs::validate::{validate, JobRequest, Policy, RequestInput, ValidJob};
pub use jobs::view::JobView;
pub use ledger::index::{maintain as maintain_index, JobSummary, LedgerIndex};
pub use ledger::room::LedgerRoom;
pub use metrics::Metrics;
pub use quota::{Lane, QuotaLimits, Quotas};
pub use services::serve;
pub use state::{validation_slots, AppState, ValidationSlots, SMALL_REQUEST_BYTES};

/// Process entry point: parse flags and environment, start telemetry, run until SIGINT or
/// SIGTERM, drain, flush.
pub fn main() -> std::process::ExitCode {
    use clap::Parser as _;
    let config = Config::parse();
    // before any thread exists: filecoin-proofs' verifiers read their directory from the
    // environment, once
    config.params.export_for_filecoin_proofs();
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("gateway", &telemetry, |shutdown| run(config, shutdown))
}

/// Bind `config.listen` and serve until `shutdown`.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.listen).await.with_context(|| format!("binding {}", config.listen))?;
    serve(listener, config, shutdown).await
}
