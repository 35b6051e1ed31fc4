//! `/healthz`, `/readyz`, `/metrics`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;

use crate::AppState;

pub async fn healthz() -> impl IntoResponse {
    Json(serde_json::json!({ "status": "ok" }))
}

/// Ready when NATS is connected (the streams and buckets were declared before serving).
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let connection = state.bus.client.connection_state();
    let ready = matches!(connection, async_nats::connection::State::Connected);
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(serde_json::json!({ "ready": ready, "nats": connection.to_string() })))
}

pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        snarkflow_telemetry::render_metrics(&state.metrics.registry),
    )
}
