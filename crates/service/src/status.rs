//! `/healthz`, `/readyz` and `/metrics` for the workers.

use std::sync::{Arc, RwLock};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use tokio_util::sync::CancellationToken;

/// What `/readyz` reports: ready or not, and a JSON body saying why.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<RwLock<(bool, serde_json::Value)>>);

impl Readiness {
    /// Say whether the service is ready and why; the first "ready" also tells systemd
    /// (`Type=notify` units).
    pub fn set(&self, ready: bool, detail: serde_json::Value) {
        *self.0.write().expect("readiness lock") = (ready, detail);
        if ready {
            crate::systemd::notify_ready();
        }
    }

    pub fn get(&self) -> (bool, serde_json::Value) {
        self.0.read().expect("readiness lock").clone()
    }
}

#[derive(Clone)]
struct StatusState {
    readiness: Readiness,
    registry: prometheus::Registry,
}

async fn healthz() -> impl IntoResponse {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn readyz(State(s): State<StatusState>) -> impl IntoResponse {
    let (ready, detail) = s.readiness.get();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(serde_json::json!({ "ready": ready, "detail": detail })))
}

async fn metrics(State(s): State<StatusState>) -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        snarkflow_telemetry::render_metrics(&s.registry),
    )
}

/// Serve the status endpoints on `listener` until `shutdown`.
pub async fn serve_status(
    listener: tokio::net::TcpListener,
    readiness: Readiness,
    registry: prometheus::Registry,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(StatusState { readiness, registry });
    axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await
}

/// Bind `addr` (when given) and serve the status endpoints on it in the background until
/// `shutdown`; binding errors are returned (a worker should not start without its status port).
pub async fn spawn_status(
    addr: Option<std::net::SocketAddr>,
    readiness: Readiness,
    registry: prometheus::Registry,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let Some(addr) = addr else { return Ok(()) };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "status endpoint listening");
    tokio::spawn(serve_status(listener, readiness, registry, shutdown));
    Ok(())
}
