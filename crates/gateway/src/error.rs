//! The one error type of the HTTP API: a status and `{"error": {"code", "message"}}`.

use axum::http::StatusCode;
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
    /// The job is in a state where the request makes no sense (e.g. proof before done).
    #[error("{0}")]
    Conflict(String),
    /// A dependency (NATS) is unavailable; retrying later may succeed.
    #[error("{0}")]
    Unavailable(String),
    /// Anything else; logged in full, reported without detail.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    fn parts(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
            ApiError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.parts();
        let message = match &self {
            ApiError::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "internal error");
                "internal error".to_owned()
            }
            ApiError::Unavailable(m) => {
                tracing::warn!(error = %m, "dependency unavailable");
                "the job system is temporarily unavailable; retry later".to_owned()
            }
            other => other.to_string(),
        };
        (status, Json(serde_json::json!({ "error": { "code": code, "message": message } }))).into_response()
    }
}
