//! `/v1/jobs`: submit, status, list, proof, cancel.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use snarkflow_service::tokens::Scope;
use snarkflow_wire::{JobState, Priority};
use tracing::{info_span, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::auth::Caller;
use crate::jobs::validate::{validate, JobRequest};
use crate::jobs::view::JobView;
use crate::{ApiError, AppState};

/// Default and largest page of `GET /v1/jobs`.
const DEFAULT_LIST_LIMIT: usize = 100;
const MAX_LIST_LIMIT: usize = 1000;

struct HttpHeaders<'a>(&'a HeaderMap);

impl opentelemetry::propagation::Extractor for HttpHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// Parse a submit's body and validate it on a blocking thread, at most
/// [`AppState::validations`] at once: JSON of tens of MB and a C1 check are seconds of CPU,
/// kept off the async executor and bounded. A small body naming a critical kind may take the
/// slot kept for critical work.
async fn parse_and_validate(state: &AppState, body: Bytes) -> Result<crate::ValidJob, ApiError> {
    let critical = body.len() <= crate::SMALL_REQUEST_BYTES
        && JobRequest::kind_of_json(&body).is_some_and(crate::jobs::quota_exempt);
    state.validations.run(critical, move || validate(JobRequest::from_json_bytes(&body)?)).await
}

/// `POST /v1/jobs`. The caller is authenticated from the headers before a byte of the body is
/// read (an unauthenticated upload is refused at once instead of buffering up to the body
/// limit); the body is then read with the limit and parsed here, so that every failure maps to
/// our JSON error and nothing is written before the request is known good.
pub(crate) async fn submit(
    State(state): State<AppState>,
    caller: Result<Caller, ApiError>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<impl IntoResponse, ApiError> {
    // the root of the job's trace (or a child of the client's traceparent), not of the
    // per-request span every route gets
    let span = info_span!(
        parent: None,
        "http.submit",
        otel.kind = "server",
        http.method = "POST",
        http.route = "/v1/jobs",
        job_id = tracing::field::Empty,
        job.kind = tracing::field::Empty,
        partitions = tracing::field::Empty,
        tenant = tracing::field::Empty,
        worker = "gateway",
        host = %snarkflow_telemetry::host_name(),
    );
    // a client that sends traceparent gets the job in its own trace
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&HttpHeaders(&headers)));
    span.set_parent(parent);
    let result = async {
        let caller = caller?;
        caller.require(Scope::Submit)?;
        tracing::Span::current().record("tenant", caller.tenant());
        // a tenant over its rate or job limit is refused before its body costs anything; one
        // that may submit high or critical work is checked after parsing (a WinningPoSt, a
        // WindowPoSt due within its window and a retry of a live job pass a full quota)
        if caller.max_priority() < Priority::High {
            state.quotas.precheck(caller.tenant())?;
        }
        // held while the body is read, parsed and submitted
        let _slot = state.quotas.upload_slot(caller.tenant())?;
        // a request refused for its content is billed to the tenant's rate, as a submit
        let job = match read_body(body, state.max_body_bytes).await {
            Ok(body) => parse_and_validate(&state, body).await,
            Err(e) => Err(e),
        }
        .inspect_err(|e| {
            if e.parts().0.is_client_error() {
                state.quotas.bill_rejected(caller.tenant());
            }
        })?;
        let submitted = crate::jobs::submit(&state, &caller, job).await?;
        let status = if submitted.existing { StatusCode::OK } else { StatusCode::ACCEPTED };
        Ok((status, Json(serde_json::json!({ "id": submitted.id, "state": submitted.state.as_str() }))))
    }
    .instrument(span)
    .await;
    if let Err(e) = &result {
        state.metrics.rejected(error_code(e));
    }
    result
}

/// The whole body, at most `limit` bytes (413 past it).
async fn read_body(body: axum::body::Body, limit: usize) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        // http-body-util's LengthLimitError ("length limit exceeded"), somewhere in the chain
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        let mut too_large = false;
        while let Some(c) = cause {
            too_large |= c.to_string().contains("length limit exceeded");
            cause = c.source();
        }
        if too_large {
            ApiError::TooLarge(limit)
        } else {
            ApiError::BadRequest(format!("reading the request body: {e}"))
        }
    })
}

fn error_code(e: &ApiError) -> &'static str {
    e.parts().1
}

/// `GET /v1/jobs/{id}`.
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    caller.require(Scope::Read)?;
    Ok(Json(JobView::for_caller(&crate::jobs::load(&state, &caller, &id).await?, caller.is_admin())))
}

/// `GET /v1/jobs/{id}/proof`: the partition proofs concatenated in partition order.
pub(crate) async fn proof(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Scope::Read)?;
    let record = crate::jobs::load(&state, &caller, &id).await?;
    let bytes = crate::jobs::proof_bytes(&record)?;
    Ok(([(axum::http::header::CONTENT_TYPE, "application/octet-stream")], bytes))
}

/// `DELETE /v1/jobs/{id}`: cancel a job that has not finished.
pub(crate) async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    let (record, _) = crate::jobs::cancel(&state, &caller, &id).await?;
    Ok(Json(JobView::for_caller(&record, caller.is_admin())))
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    state: Option<String>,
    limit: Option<String>,
}

/// `GET /v1/jobs?state=&limit=`: newest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    caller.require(Scope::Read)?;
    let filter = match q.state.as_deref() {
        None | Some("") => None,
        Some(s) => Some(JobState::parse(s).ok_or_else(|| {
            ApiError::Invalid(format!(
                "state must be one of queued, synthesizing, proving, done, failed, cancelled; got {s:?}"
            ))
        })?),
    };
    let limit = match q.limit.as_deref() {
        None | Some("") => DEFAULT_LIST_LIMIT,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=MAX_LIST_LIMIT).contains(&n) => n,
            _ => {
                return Err(ApiError::Invalid(format!(
                    "limit must be an integer from 1 to {MAX_LIST_LIMIT}; got {s:?}"
                )))
            }
        },
    };
    let owns = |tenant: Option<&str>| caller.is_admin() || tenant == Some(caller.tenant());
    let ids = state.index.newest(|j| filter.is_none_or(|s| j.state == s) && owns(j.tenant.as_deref()), limit);
    let records = match ids {
        // the index names the page; the records come from the ledger (a few reads, not all)
        Some(ids) => {
            let reads = ids.iter().map(|id| state.ledger.get(id));
            // as the ledger has them now (the index may be a moment behind a change of state)
            let fresh: Vec<_> = futures::future::try_join_all(reads).await?.into_iter().flatten().collect();
            fresh.into_iter().filter(|r| filter.is_none_or(|s| r.state == s)).collect()
        }
        None => state.ledger.list_where(|r| filter.is_none_or(|s| r.state == s) && caller.owns(r), limit).await?,
    };
    let jobs: Vec<JobView> = records.iter().map(|r| JobView::for_caller(r, caller.is_admin())).collect();
    Ok(Json(serde_json::json!({ "jobs": jobs })))
}
