//! The one error type of the HTTP API: a status and `{"error": {"code", "message"}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The body is not JSON, or not the JSON object the endpoint takes.
    #[error("{0}")]
    BadRequest(String),
    /// A field is missing, of the wrong type, or out of range; the message names it.
    #[error("{0}")]
    Invalid(String),
    #[error("request body exceeds the limit of {0} bytes")]
    TooLarge(usize),
    #[error("{0}")]
    NotFound(String),
    /// No token, or one that is not valid.
    #[error("{0}")]
    Unauthorized(String),
    /// A valid token without the scope (or priority) the request needs.
    #[error("{0}")]
    Forbidden(String),
    /// A tenant quota or rate limit; retry after this many seconds.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after_secs: u64 },
    #[error("{0}")]
    Timeout(String),
    /// A request this deployment cannot serve as configured (e.g. no verifying key); the
    /// message says what is missing.
    #[error("{0}")]
    NotServed(String),
    /// The job is in a state where the request makes no sense (e.g. proof before done).
    #[error("{0}")]
    Conflict(String),
    /// An idempotency key already names a job made from a different request.
    #[error("{0}")]
    KeyReused(String),
    /// NATS storage (a stream, a bucket or the object store) is at its limit; the message says
    /// which. Retrying once jobs finish may succeed.
    #[error("{0}")]
    StorageFull(String),
    /// A dependency (NATS) is unavailable; retrying later may succeed.
    #[error("{0}")]
    Unavailable(String),
    /// Anything else; logged in full, reported without detail.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// What a client is asked to wait when storage is full: room comes back as jobs finish and
/// their objects go, or as ledger records expire.
const STORAGE_RETRY_AFTER_SECS: u64 = 60;

/// The ledger and object store's errors: a concurrent-update conflict is the client's to retry,
/// anything else means NATS is not answering.
impl From<snarkflow_bus::BusError> for ApiError {
    fn from(e: snarkflow_bus::BusError) -> Self {
        match e {
            snarkflow_bus::BusError::Conflict(m) => ApiError::Conflict(m),
            snarkflow_bus::BusError::Full(m) => ApiError::StorageFull(m),
            other => ApiError::Unavailable(other.to_string()),
        }
    }
}

impl ApiError {
    pub(crate) fn parts(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
            ApiError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::TooManyRequests { .. } => (StatusCode::TOO_MANY_REQUESTS, "too_many_requests"),
            ApiError::Timeout(_) => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
            ApiError::NotServed(_) => (StatusCode::SERVICE_UNAVAILABLE, "not_served"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::KeyReused(_) => (StatusCode::CONFLICT, "idempotency_key_reused"),
            ApiError::StorageFull(_) => (StatusCode::SERVICE_UNAVAILABLE, "storage_full"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl ApiError {
    /// What the client is told (HTTP body or gRPC status): the message, except for internal
    /// and dependency failures, which are logged in full and answered without detail.
    pub(crate) fn public_message(&self) -> String {
        match self {
            ApiError::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "internal error");
                "internal error".to_owned()
            }
            ApiError::Unavailable(m) => {
                tracing::warn!(error = %m, "dependency unavailable");
                "the job system is temporarily unavailable; retry later".to_owned()
            }
            other => other.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.parts();
        let message = self.public_message();
        let mut response =
            (status, Json(serde_json::json!({ "error": { "code": code, "message": message } }))).into_response();
        let headers = response.headers_mut();
        match &self {
            ApiError::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"snarkflow\""));
            }
            ApiError::TooManyRequests { retry_after_secs, .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            ApiError::StorageFull(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(STORAGE_RETRY_AFTER_SECS));
            }
            _ => {}
        }
        response
    }
}
