//! `/healthz`, `/readyz`, `/metrics`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;

use std::sync::{Arc, Mutex};

use axum::routing::get;
use axum::Router;

use crate::{ApiError, AppState};

pub(crate) async fn healthz() -> impl IntoResponse {
    Json(serde_json::json!({ "status": "ok" }))
}

/// Ready when NATS is connected (the streams and buckets were declared before serving) and
/// the event loop is applying events.
pub(crate) async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let (connected, connection) = state.bus.connection();
    let applying = state.event_loop.load(std::sync::atomic::Ordering::SeqCst);
    let ready = connected && applying;
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let event_loop = if applying { "running" } else { "not running" };
    (status, Json(serde_json::json!({ "ready": ready, "nats": connection, "event_loop": event_loop })))
}

/// The router served while the gateway cannot reach NATS yet: `/healthz` answers, `/readyz`
/// says why it is not ready, everything else is 503 (a client retries).
pub(crate) fn connecting(why: Arc<Mutex<String>>) -> Router {
    let reason = move || why.lock().expect("connecting reason").clone();
    let ready_reason = reason.clone();
    Router::new()
        .route("/healthz", get(healthz))
        .route(
            "/readyz",
            get(move || async move {
                (StatusCode::SERVICE_UNAVAILABLE, Json(serde_json::json!({ "ready": false, "nats": ready_reason() })))
            }),
        )
        .fallback(move || async move {
            ApiError::Unavailable(format!("the gateway is not connected to NATS: {}", reason()))
        })
}

pub(crate) async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        snarkflow_telemetry::render_metrics(&state.metrics.registry),
    )
}
