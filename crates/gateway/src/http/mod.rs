//! The HTTP door: the router with its limits (body size, request time, header read time, HTTP/2
//! streams) and the handlers, one group per file. What a request *does* lives in
//! [`crate::jobs`]; this module only turns HTTP into calls there and answers back.

mod cluster;
pub(crate) mod error;
pub(crate) mod health;
mod jobs;
pub(crate) mod openapi;

use anyhow::Context as _;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use axum_server::tls_rustls::RustlsConfig;
use hyper_util::rt::TokioTimer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::{ApiError, AppState};

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
        .route("/v1/jobs", get(jobs::list).post(jobs::submit))
        .route("/v1/jobs/{id}", get(jobs::get).delete(jobs::cancel))
        .route("/v1/jobs/{id}/proof", get(jobs::proof))
        .route("/v1/cluster", get(cluster::get))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
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

/// Serve the HTTP API on `listener` until `shutdown`; in-flight requests finish.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<RustlsConfig>,
    state: AppState,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let listener = listener.into_std()?;
    info!(addr = %listener.local_addr()?, tls = tls.is_some(), "gateway listening");
    let handle = axum_server::Handle::new();
    let stopper = handle.clone();
    let http_shutdown = shutdown.clone();
    tokio::spawn(async move {
        http_shutdown.cancelled().await;
        // in-flight requests finish (a client uploading a C1 gets its answer)
        stopper.graceful_shutdown(None);
    });
    let service = app(state).into_make_service();
    match tls {
        Some(tls) => {
            let mut server = axum_server::from_tcp_rustls(listener, tls).handle(handle);
            connection_limits(server.http_builder());
            server.serve(service).await
        }
        None => {
            let mut server = axum_server::from_tcp(listener).handle(handle);
            connection_limits(server.http_builder());
            server.serve(service).await
        }
    }
    .context("serving http")
}
