//! `/v1/jobs`: submit, status, list, proof, cancel.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use snarkflow_bus::now_ms;
use snarkflow_wire::{self as wire, JobRecord, JobState, PartitionRecord, SynthTask, SCHEMA_VERSION};
use tracing::{info, info_span, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

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
pub async fn submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let span = info_span!(
        "http.submit",
        otel.kind = "server",
        http.method = "POST",
        http.route = "/v1/jobs",
        job_id = tracing::field::Empty,
        job.kind = tracing::field::Empty,
        partitions = tracing::field::Empty,
        worker = "gateway",
        host = %snarkflow_telemetry::host_name(),
    );
    // a client that sends traceparent gets the job in its own trace
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&HttpHeaders(&headers)));
    span.set_parent(parent);
    let result = async {
        let value: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("request body is not valid JSON: {e}")))?;
        // parsing and checking a C1 output (tens of MB at 32 GiB) is CPU work
        let job = tokio::task::spawn_blocking(move || validate(&value))
            .await
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("validation panicked: {e}")))??;
        enqueue(&state, job).await
    }
    .instrument(span)
    .await;
    if let Err(e) = &result {
        state.metrics.rejected(error_code(e));
    }
    result
}

fn error_code(e: &ApiError) -> &'static str {
    match e {
        ApiError::BadRequest(_) => "bad_request",
        ApiError::Invalid(_) => "invalid_input",
        ApiError::TooLarge(_) => "payload_too_large",
        ApiError::Unavailable(_) => "unavailable",
        _ => "other",
    }
}

async fn enqueue(state: &AppState, job: ValidJob) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let id = uuid::Uuid::new_v4().to_string();
    if let Some(key) = &job.idempotency_key {
        let kv_key = wire_key(key);
        if let Err(e) = state.bus.idempotency.create(&kv_key, id.clone().into()).await {
            if e.kind() != async_nats::jetstream::kv::CreateErrorKind::AlreadyExists {
                return Err(ApiError::Unavailable(format!("idempotency store: {e}")));
            }
            let existing = state
                .bus
                .idempotency
                .get(&kv_key)
                .await
                .map_err(|e| ApiError::Unavailable(format!("idempotency store: {e}")))?
                .ok_or_else(|| ApiError::Conflict("idempotency key is being reused concurrently; retry".into()))?;
            let existing = String::from_utf8_lossy(&existing).into_owned();
            let record = state.ledger.get(&existing).await?.ok_or_else(|| {
                ApiError::Conflict(format!(
                    "idempotency key belongs to job {existing}, which is still being created; retry"
                ))
            })?;
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
    };
    state.ledger.create(&record).await.map_err(|e| ApiError::Unavailable(format!("{e:#}")))?;
    for partition in 0..job.partitions {
        let task = SynthTask {
            schema: SCHEMA_VERSION,
            job_id: id.clone(),
            circuit: job.circuit,
            priority: job.priority,
            seed: job.seed,
            partition,
            partitions: job.partitions,
            input: input.clone(),
        };
        let msg_id = wire::partition_msg_id("synth", &id, partition);
        if let Err(e) = state.bus.publish(wire::synth_subject(job.priority), wire::encode(&task), Some(&msg_id)).await {
            // The job exists but is not fully enqueued: fail it rather than leave it hanging.
            let reason = format!("enqueueing partition {partition} failed: {e}");
            let _ = state
                .ledger
                .update(&id, |r| {
                    r.state = JobState::Failed;
                    r.error = Some(reason.clone());
                    r.finished_at_ms = Some(now_ms());
                    true
                })
                .await;
            return Err(ApiError::Unavailable(reason));
        }
    }
    state.metrics.job_submitted(job.circuit.kind().as_str());
    info!(job_id = %id, circuit_id = %job.circuit.circuit_id(), partitions = job.partitions, priority = job.priority.as_str(), "job queued");
    Ok((StatusCode::ACCEPTED, Json(serde_json::json!({ "id": id, "state": "queued" }))))
}

/// KV keys allow a limited alphabet; hex keeps any client key valid and distinct.
fn wire_key(key: &str) -> String {
    hex::encode(key.as_bytes())
}

async fn load(state: &AppState, id: &str) -> Result<JobRecord, ApiError> {
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(ApiError::NotFound(format!("no job with id {id:?}")));
    }
    state.ledger.get(id).await?.ok_or_else(|| ApiError::NotFound(format!("no job with id {id:?}")))
}

/// `GET /v1/jobs/{id}`.
pub async fn get(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<JobView>, ApiError> {
    Ok(Json(JobView::from(&load(&state, &id).await?)))
}

/// `GET /v1/jobs/{id}/proof`: the partition proofs concatenated in partition order.
pub async fn proof(State(state): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    let record = load(&state, &id).await?;
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
pub async fn cancel(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<JobView>, ApiError> {
    load(&state, &id).await?;
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
            info!(job_id = %id, "job cancelled");
            crate::events::cleanup_partitions(&state.bus, &record).await;
            Ok(Json(JobView::from(&record)))
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    state: Option<String>,
    limit: Option<String>,
}

/// `GET /v1/jobs?state=&limit=`: newest first.
pub async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
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
    let jobs: Vec<JobView> = state.ledger.list(filter, limit).await?.iter().map(JobView::from).collect();
    Ok(Json(serde_json::json!({ "jobs": jobs })))
}
