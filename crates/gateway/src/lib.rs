//! The snarkflow gateway: HTTP API in front of the proving pipeline.
//!
//! It validates and records jobs in the job ledger (a JetStream KV bucket), publishes one
//! synthesis task per partition, and applies the workers' events to the ledger until a job is
//! done, failed or cancelled. It holds no state of its own: restart it any time.
//!
//! Entry points: [`run`] (what `main` calls), [`serve`] (the same on a bound listener, for
//! tests) and [`app`] (the router, for handler tests without a socket).

mod config;
mod error;
mod events;
mod ledger;
mod metrics;
mod routes;
mod validate;
mod view;

use anyhow::Context as _;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
pub use config::Config;
pub use error::ApiError;
pub use ledger::Ledger;
pub use metrics::Metrics;
use snarkflow_bus::Bus;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;
pub use validate::{validate, ValidJob};
pub use view::JobView;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub bus: Bus,
    pub ledger: Ledger,
    pub metrics: Metrics,
    pub max_body_bytes: usize,
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

/// The HTTP router.
pub fn app(state: AppState) -> Router {
    let limit = state.max_body_bytes;
    Router::new()
        .route("/v1/jobs", get(routes::jobs::list).post(routes::jobs::submit))
        .route("/v1/jobs/{id}", get(routes::jobs::get).delete(routes::jobs::cancel))
        .route("/v1/jobs/{id}/proof", get(routes::jobs::proof))
        .route("/healthz", get(routes::health::healthz))
        .route("/readyz", get(routes::health::readyz))
        .route("/metrics", get(routes::health::metrics))
        .fallback(|| async { ApiError::NotFound("no such endpoint".into()) })
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(move |req, next| json_body_limit(limit, req, next)))
        .with_state(state)
}

/// Process entry point: parse flags and environment, start telemetry, run until SIGINT or
/// SIGTERM, drain, flush.
pub fn main() -> std::process::ExitCode {
    use clap::Parser as _;
    let config = Config::parse();
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("gateway", &telemetry, |shutdown| run(config, shutdown))
}

/// How often queue depths and job counts are refreshed for `/metrics`. Counting jobs reads
/// every ledger record, so this stays well above a scrape interval.
const GAUGE_REFRESH: std::time::Duration = std::time::Duration::from_secs(15);

/// Keep the queue-depth and jobs-by-state gauges current.
async fn refresh_gauges(bus: Bus, ledger: Ledger, metrics: Metrics, shutdown: CancellationToken) {
    use snarkflow_wire::{JobKind, JobState, EVENTS_STREAM, PROVE_STREAM, SYNTH_STREAM};
    loop {
        for (stage, stream) in [("synth", SYNTH_STREAM), ("prove", PROVE_STREAM), ("events", EVENTS_STREAM)] {
            if let Ok(depth) = bus.pending(stream).await {
                metrics.set_queue_depth(stage, depth);
            }
        }
        if let Ok(records) = ledger.list(None, usize::MAX).await {
            let mut counts = std::collections::BTreeMap::new();
            for state in JobState::ALL {
                for kind in JobKind::ALL {
                    counts.insert((state.as_str(), kind.as_str()), 0);
                }
            }
            for r in &records {
                *counts.entry((r.state.as_str(), r.kind().as_str())).or_insert(0) += 1;
            }
            metrics.set_jobs(&counts);
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(GAUGE_REFRESH) => {}
        }
    }
}

/// Bind `config.listen` and serve until `shutdown`.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.listen).await.with_context(|| format!("binding {}", config.listen))?;
    serve(listener, config, shutdown).await
}

/// Serve on an already bound listener until `shutdown`: connect to NATS, declare the
/// topology, start applying events, then accept requests. On shutdown: stop accepting,
/// finish in-flight requests, stop the event loop (un-acked events are redelivered).
pub async fn serve(listener: TcpListener, config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let bus = Bus::connect(config.nats.bus_config()).await?;
    let state = AppState {
        ledger: Ledger::new(bus.clone()),
        bus: bus.clone(),
        metrics: Metrics::new(),
        max_body_bytes: config.max_body_bytes,
    };
    let params_dir = config.params_dir();
    if let Err(e) = snarkflow_filecoin::use_parameter_dir(&params_dir) {
        tracing::warn!(error = %e, "Filecoin proofs will be verified against another parameter directory");
    }
    let events = tokio::spawn(events::run(
        bus.clone(),
        state.ledger.clone(),
        state.metrics.clone(),
        params_dir,
        shutdown.clone(),
    ));
    tokio::spawn(refresh_gauges(bus, state.ledger.clone(), state.metrics.clone(), shutdown.clone()));
    info!(addr = %listener.local_addr()?, "gateway listening");
    let http_shutdown = shutdown.clone();
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async move { http_shutdown.cancelled().await })
        .await
        .context("serving http")?;
    shutdown.cancel();
    events.await.context("event loop panicked")??;
    info!("gateway stopped");
    Ok(())
}
