//! `/v1/jobs`: submit, status, list, proof, cancel.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use snarkflow_bus::{now_ms, KeyClaim};
use snarkflow_service::tokens::Scope;
use snarkflow_wire::{self as wire, JobRecord, JobState, PartitionRecord, SCHEMA_VERSION};
use tracing::{info, info_span, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::auth::Caller;
use crate::validate::{validate, ValidJob};
use crate::view::JobView;
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

/// `POST /v1/jobs`. The body is read as bytes and parsed here so that every failure maps to
/// our JSON error (and so that nothing is written before the request is known good).
pub(crate) async fn submit(
    State(state): State<AppState>,
    caller: Result<Caller, ApiError>,
    headers: HeaderMap,
    body: Bytes,
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
        let value: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("request body is not valid JSON: {e}")))?;
        let explicit_priority = value.get("priority").is_some_and(|p| !p.is_null());
        // parsing and checking a C1 output (tens of MB at 32 GiB) is CPU work
        let mut job = tokio::task::spawn_blocking(move || validate(&value))
            .await
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("validation panicked: {e}")))??;
        state.policy.check(&job)?;
        if job.priority > caller.max_priority() {
            if explicit_priority {
                return Err(ApiError::Forbidden(format!(
                    "this API token may submit at priority {} at most; the job asks for {}",
                    caller.max_priority().as_str(),
                    job.priority.as_str()
                )));
            }
            // a kind's default above the token's ceiling is lowered to it
            job.priority = caller.max_priority();
        }
        let tenant = caller.tenant().to_owned();
        state.quotas.admit(&tenant, u64::from(job.partitions))?;
        let queued = enqueue(&state, job, &tenant).await;
        if queued.is_err() {
            state.quotas.release(&tenant);
        }
        queued
    }
    .instrument(span)
    .await;
    if let Err(e) = &result {
        state.metrics.rejected(error_code(e));
    }
    result
}

fn error_code(e: &ApiError) -> &'static str {
    e.parts().1
}

async fn enqueue(
    state: &AppState,
    job: ValidJob,
    tenant: &str,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let id = uuid::Uuid::new_v4().to_string();
    if let Some(key) = &job.idempotency_key {
        if let KeyClaim::Existing(existing) = state.ledger.claim_key(&wire_key(tenant, key), &id).await? {
            let record = state.ledger.get(&existing).await?.ok_or_else(|| {
                ApiError::Conflict(format!(
                    "idempotency key belongs to job {existing}, which is still being created; retry"
                ))
            })?;
            if !record.enqueued && !record.state.is_terminal() {
                // the first attempt stopped mid fan-out: finish it
                crate::fanout::publish_tasks(&state.bus, &state.ledger, &record).await?;
            }
            tracing::Span::current().record("job_id", existing.as_str());
            return Ok((StatusCode::OK, Json(serde_json::json!({ "id": record.id, "state": record.state.as_str() }))));
        }
    }
    let span = tracing::Span::current();
    span.record("job_id", id.as_str());
    span.record("job.kind", job.circuit.kind().as_str());
    span.record("partitions", i64::from(job.partitions));
    // The input (C1 output, vanilla proofs) goes to the object store before anything refers to it.
    let input = match &job.input {
        None => None,
        Some(input) => {
            let object = wire::input_object(&id);
            let input = input.clone();
            let bytes = tokio::task::spawn_blocking(move || input.to_json())
                .await
                .map_err(|e| ApiError::Internal(anyhow::anyhow!("encoding the input panicked: {e}")))?;
            let stored = state
                .bus
                .put_partition(&object, &bytes)
                .await
                .map_err(|e| ApiError::Unavailable(format!("storing the job input: {e}")))?;
            Some(wire::InputRef { object, sha256_hex: stored.sha256_hex, bytes: stored.bytes })
        }
    };
    let now = now_ms();
    let record = JobRecord {
        schema: SCHEMA_VERSION,
        id: id.clone(),
        circuit: job.circuit,
        priority: job.priority,
        seed: job.seed,
        state: JobState::Queued,
        error: None,
        trace_id: snarkflow_telemetry::current_trace_id(),
        idempotency_key: job.idempotency_key.clone(),
        created_at_ms: now,
        updated_at_ms: now,
        finished_at_ms: None,
        partitions: vec![PartitionRecord::default(); job.partitions as usize],
        assemble_s: None,
        input: input.clone(),
        tenant: Some(tenant.to_owned()),
        deadline_at_ms: Some(now + job.deadline_secs * 1000),
        enqueued: false,
    };
    state.ledger.create(&record).await.map_err(|e| ApiError::Unavailable(format!("{e:#}")))?;
    if let Err(e) = crate::fanout::publish_tasks(&state.bus, &state.ledger, &record).await {
        // The job is recorded (durably) but not fully queued: the ledger pass finishes the
        // fan-out once NATS takes messages again, so the job is accepted, not failed (a client
        // told to retry would make a second job, or with its key find a failed one).
        tracing::warn!(job_id = %id, error = %e, "queueing the job's tasks failed; the ledger pass will finish it");
    }
    state.metrics.job_submitted(job.circuit.kind().as_str());
    info!(job_id = %id, circuit_id = %job.circuit.circuit_id(), partitions = job.partitions, priority = job.priority.as_str(), "job queued");
    Ok((StatusCode::ACCEPTED, Json(serde_json::json!({ "id": id, "state": "queued" }))))
}

/// Idempotency keys are the tenant's own: the same key from two tenants names two jobs. KV
/// keys allow a limited alphabet; hex keeps any client key valid and distinct.
fn wire_key(tenant: &str, key: &str) -> String {
    if tenant == crate::auth::ANONYMOUS {
        // the form keys had before tenants, so their jobs are still found
        return hex::encode(key.as_bytes());
    }
    format!("{}.{}", hex::encode(tenant.as_bytes()), hex::encode(key.as_bytes()))
}

/// The job, if it exists and `caller` may see it: another tenant's job is "not found", so
/// its existence is not revealed.
async fn load(state: &AppState, caller: &Caller, id: &str) -> Result<JobRecord, ApiError> {
    let not_found = || ApiError::NotFound(format!("no job with id {id:?}"));
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(not_found());
    }
    let record = state.ledger.get(id).await?.ok_or_else(not_found)?;
    if !caller.owns(&record) {
        return Err(not_found());
    }
    Ok(record)
}

/// `GET /v1/jobs/{id}`.
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    caller.require(Scope::Read)?;
    Ok(Json(JobView::from(&load(&state, &caller, &id).await?)))
}

/// `GET /v1/jobs/{id}/proof`: the partition proofs concatenated in partition order.
pub(crate) async fn proof(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Scope::Read)?;
    let record = load(&state, &caller, &id).await?;
    if record.state != JobState::Done {
        return Err(ApiError::Conflict(format!("job {id} is {}, not done; no proof yet", record.state.as_str())));
    }
    let mut bytes = Vec::with_capacity(record.partitions.len() * wire::PARTITION_PROOF_BYTES);
    for (i, p) in record.partitions.iter().enumerate() {
        let hex_proof = p.proof_hex.as_deref().ok_or_else(|| anyhow::anyhow!("done job {id} lacks partition {i}"))?;
        bytes.extend(hex::decode(hex_proof).map_err(|e| anyhow::anyhow!("job {id} partition {i}: {e}"))?);
    }
    Ok(([(axum::http::header::CONTENT_TYPE, "application/octet-stream")], bytes))
}

/// `DELETE /v1/jobs/{id}`: cancel a job that has not finished.
pub(crate) async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    caller.require(Scope::Cancel)?;
    load(&state, &caller, &id).await?;
    let mut was = None;
    let record = state
        .ledger
        .update(&id, |r| {
            was = Some(r.state);
            if r.state.is_terminal() {
                return false;
            }
            r.state = JobState::Cancelled;
            r.finished_at_ms = Some(now_ms());
            true
        })
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no job with id {id:?}")))?;
    match was {
        Some(s) if s.is_terminal() && s != JobState::Cancelled => {
            Err(ApiError::Conflict(format!("job {id} already finished ({})", s.as_str())))
        }
        _ => {
            if was != Some(JobState::Cancelled) {
                crate::events::finished(&state.bus, &state.metrics, &record).await;
            }
            Ok(Json(JobView::from(&record)))
        }
    }
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
    let jobs: Vec<JobView> = state
        .ledger
        .list_where(|r| filter.is_none_or(|s| r.state == s) && caller.owns(r), limit)
        .await?
        .iter()
        .map(JobView::from)
        .collect();
    Ok(Json(serde_json::json!({ "jobs": jobs })))
}
