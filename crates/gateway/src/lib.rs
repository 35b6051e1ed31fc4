//! The snarkflow gateway: HTTP API in front of the proving pipeline.
//!
//! It validates and records jobs in the job ledger (a JetStream KV bucket), publishes one
//! synthesis task per partition, and applies the workers' events to the ledger until a job is
//! done, failed or cancelled. It holds no state of its own: restart it any time.
//!
//! Entry points: [`run`] (what `main` calls), [`serve`] (the same on a bound listener, for
//! tests) and [`app`] (the router, for handler tests without a socket).

mod auth;
mod backlog;
mod config;
mod consume;
mod deadletter;
mod error;
mod event_loop;
mod events;
mod fanout;
mod finish;
pub mod grpc;
mod index;
mod jobs;
mod ledger_room;
mod metrics;
mod openapi;
mod quota;
mod routes;
mod services;
mod sweep;
mod validate;
mod view;

use anyhow::Context as _;
pub use auth::{Auth, TokenStore, ANONYMOUS};
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
pub use config::Config;
pub use error::ApiError;
use hyper_util::rt::TokioTimer;
pub use index::{maintain as maintain_index, JobSummary, LedgerIndex};
pub use ledger_room::LedgerRoom;
pub use metrics::Metrics;
pub use openapi::document as openapi_document;
pub use quota::{QuotaLimits, Quotas};
pub use services::serve;
use snarkflow_bus::{Bus, Ledger};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
pub use validate::{validate, JobRequest, Policy, RequestInput, ValidJob};
pub use view::JobView;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub bus: Bus,
    pub ledger: Ledger,
    pub metrics: Metrics,
    pub max_body_bytes: usize,
    pub auth: Auth,
    pub quotas: Quotas,
    pub policy: std::sync::Arc<Policy>,
    /// Longest a request may take, body included.
    pub request_timeout: std::time::Duration,
    /// Whether the event loop is applying events (the gateway is not ready while it is not:
    /// no job could finish).
    pub event_loop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Every job in summary, kept current by a ledger watch (empty and not ready: read the
    /// ledger instead).
    pub index: LedgerIndex,
    /// Room in the job ledger: new jobs wait while the jobs in flight need it.
    pub ledger_room: LedgerRoom,
    /// Request bodies parsed and validated at once, on blocking threads (a 32 GiB C1 is tens of
    /// MB of JSON and seconds of checks): one per core.
    pub validations: std::sync::Arc<tokio::sync::Semaphore>,
}

/// Permits of [`AppState::validations`]: the host's cores.
pub fn validation_slots() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

/// Turn the body-limit rejection into our JSON 413 (axum's own is plain text).
async fn json_body_limit(limit: usize, req: Request, next: Next) -> Response {
    let too_large = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > limit);
    if too_large {
        return ApiError::TooLarge(limit).into_response();
    }
    let response = next.run(req).await;
    if response.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE
        && response.headers().get(axum::http::header::CONTENT_TYPE).is_none_or(|v| v != "application/json")
    {
        return ApiError::TooLarge(limit).into_response();
    }
    response
}

/// Answer 408 (JSON) when a request takes longer than `limit`, body upload included.
async fn request_timeout(limit: std::time::Duration, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout(format!("the request took longer than {} s", limit.as_secs())).into_response(),
    }
}

/// `GET /v1/openapi.json`: this API's description (no token needed: it holds nothing secret).
async fn openapi_json() -> impl IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], openapi::document())
}

/// The HTTP router.
pub fn app(state: AppState) -> Router {
    let limit = state.max_body_bytes;
    let timeout = state.request_timeout;
    Router::new()
        // submits are bounded per tenant and in all by the quota book (`Quotas::upload_slot`),
        // which answers 429 rather than queueing behind slow uploads
        .route("/v1/jobs", get(routes::jobs::list).post(routes::jobs::submit))
        .route("/v1/jobs/{id}", get(routes::jobs::get).delete(routes::jobs::cancel))
        .route("/v1/jobs/{id}/proof", get(routes::jobs::proof))
        .route("/healthz", get(routes::health::healthz))
        .route("/readyz", get(routes::health::readyz))
        .route("/metrics", get(routes::health::metrics))
        .route("/v1/openapi.json", get(openapi_json))
        .fallback(|| async { ApiError::NotFound("no such endpoint".into()) })
        // one span per request on every route (submit's own span joins the job's trace)
        .layer(tower_http::trace::TraceLayer::new_for_http().make_span_with(|req: &Request| {
            tracing::info_span!(
                "http.request",
                otel.kind = "server",
                http.method = %req.method(),
                http.target = %req.uri().path(),
                tenant = tracing::field::Empty,
                worker = "gateway",
            )
        }))
        .layer(middleware::from_fn(move |req, next| request_timeout(timeout, req, next)))
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(move |req, next| json_body_limit(limit, req, next)))
        .with_state(state)
}

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

/// A client must send its request headers within this time (slow-loris connections are
/// dropped); the whole request is bounded by `--request-timeout-secs`.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Requests in flight on one HTTP/2 connection: one client cannot open hundreds of uploads
/// on a single connection (h2's own default is 200).
const HTTP2_MAX_STREAMS: u32 = 32;
/// Largest header block a request may send (hyper's HTTP/2 default is 16 MiB).
const MAX_HEADER_BYTES: u32 = 64 * 1024;
/// HTTP/2 pings on an idle connection, and how long one may go unanswered before the
/// connection is closed: a peer that stops reading does not hold its streams for ever.
const HTTP2_KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(30);

/// Limits on every connection, HTTP/1.1 and HTTP/2 alike.
fn connection_limits(builder: &mut hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>) {
    builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(HTTP2_MAX_STREAMS)
        .max_header_list_size(MAX_HEADER_BYTES)
        .keep_alive_interval(Some(HTTP2_KEEPALIVE))
        .keep_alive_timeout(HTTP2_KEEPALIVE / 2);
}

/// Bind `config.listen` and serve until `shutdown`.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.listen).await.with_context(|| format!("binding {}", config.listen))?;
    serve(listener, config, shutdown).await
}
