//! What a job request does, whichever API it came through (HTTP or cuzk's gRPC): submit
//! (policy, the caller's priority ceiling, quotas, idempotency, input stored, record written,
//! tasks published), look up, cancel, and the finished proof's bytes.

pub(crate) mod fanout;
pub(crate) mod finish;
pub(crate) mod validate;
pub(crate) mod view;

use snarkflow_bus::{now_ms, KeyClaim};
use snarkflow_service::tokens::Scope;
use snarkflow_wire::{self as wire, JobRecord, JobState, PartitionRecord, SCHEMA_VERSION};
use tracing::info;

use crate::auth::Caller;
use crate::jobs::validate::ValidJob;
use crate::{ApiError, AppState, Lane};

/// The job a submit made, or found under its idempotency key.
#[derive(Debug, Clone)]
pub(crate) struct Submitted {
    pub id: String,
    pub state: JobState,
    /// The idempotency key named this job already (nothing new was queued).
    pub existing: bool,
}

/// Submit `job` for `caller`. A priority above the caller's ceiling is refused when the request
/// named it (`requested_priority`) and lowered to the ceiling when it is the kind's default.
pub(crate) async fn submit(state: &AppState, caller: &Caller, mut job: ValidJob) -> Result<Submitted, ApiError> {
    caller.require(Scope::Submit)?;
    state.policy.admit(&job)?;
    if job.priority > caller.max_priority() {
        if job.requested_priority.is_some() {
            return Err(ApiError::Forbidden(format!(
                "this API token may submit at priority {} at most; the job asks for {}",
                caller.max_priority().as_str(),
                job.priority.as_str()
            )));
        }
        job.priority = caller.max_priority();
    }
    let tenant = caller.tenant().to_owned();
    // A retry of a request whose job lives (Curio retries with the same request id) is
    // answered with that job before any quota is counted: it adds no work.
    if let Some(existing) = live_keyed_job(state, &tenant, &job).await? {
        tracing::Span::current().record("job_id", existing.id.as_str());
        return Ok(Submitted { id: existing.id, state: existing.state, existing: true });
    }
    // A kind whose own class is critical (WinningPoSt: Curio never retries one, and a refusal
    // loses a block) is never refused by a quota that other work filled; it is still counted.
    // A WindowPoSt due within its challenge window passes a full quota up to as much again.
    // The kind and deadline decide, not the priority asked for: a token allowed `critical`
    // must not make PoRep jobs quota-free by asking for it.
    let lane = quota_lane(job.circuit.kind(), state.policy.deadline_secs(&job));
    // room in the ledger for this job's record while every job in flight can still finish
    state.ledger_room.admit(job.partitions, lane != Lane::Normal)?;
    state.quotas.admit(&tenant, u64::from(job.partitions), lane)?;
    let queued = enqueue(state, job, &tenant).await;
    if !matches!(&queued, Ok(Submitted { existing: false, .. })) {
        state.quotas.release(&tenant);
    }
    queued
}

/// Whether jobs of `kind` pass full quotas and a nearly full ledger: the kinds whose own
/// priority is critical (WinningPoSt), whatever priority a request asks for.
pub(crate) fn quota_exempt(kind: snarkflow_wire::JobKind) -> bool {
    snarkflow_circuits::kind_info(kind).is_some_and(|info| info.default_priority == snarkflow_wire::Priority::Critical)
}

/// A WindowPoSt challenge window: work due within it is urgent.
const URGENT_WITHIN_SECS: u64 = 30 * 60;

/// How a job of `kind` due in `deadline_secs` counts against its tenant's quotas: critical for
/// the kinds critical themselves ([`quota_exempt`]), urgent for a kind of high priority (the
/// PoSts) due within one challenge window, else normal.
pub(crate) fn quota_lane(kind: snarkflow_wire::JobKind, deadline_secs: u64) -> Lane {
    let Some(info) = snarkflow_circuits::kind_info(kind) else { return Lane::Normal };
    match info.default_priority {
        snarkflow_wire::Priority::Critical => Lane::Critical,
        snarkflow_wire::Priority::High if deadline_secs <= URGENT_WITHIN_SECS => Lane::Urgent,
        _ => Lane::Normal,
    }
}

/// The live job of the same request that `job`'s idempotency key already names, if any (read
/// only; `keyed_job` decides for real under the key's compare-and-set).
async fn live_keyed_job(state: &AppState, tenant: &str, job: &ValidJob) -> Result<Option<JobRecord>, ApiError> {
    let Some(key) = &job.idempotency_key else { return Ok(None) };
    let Some(id) = state.ledger.key_job(&wire_key(tenant, key)).await? else { return Ok(None) };
    let Some(record) = state.ledger.get(&id).await? else { return Ok(None) };
    let same_request = record.request_sha256.as_ref().is_some_and(|h| *h == job.fingerprint);
    let live = !matches!(record.state, JobState::Failed | JobState::Cancelled);
    Ok((same_request && live && record.enqueued).then_some(record))
}

/// The job an idempotency key names, when a new submit should return it rather than make
/// another: the same request (a retry) whose job has not failed or been cancelled. A key
/// reused for a different request is refused (never another job's proof); a key whose job
/// failed or was cancelled is taken over by a new job (a retry after a failure proves again).
async fn keyed_job(state: &AppState, key: &str, job: &ValidJob, id: &str) -> Result<Option<JobRecord>, ApiError> {
    for _ in 0..4 {
        let existing = match state.ledger.claim_key(key, id).await? {
            KeyClaim::Claimed => return Ok(None),
            KeyClaim::Existing(existing) => existing,
        };
        let record = state.ledger.get(&existing).await?.ok_or_else(|| {
            ApiError::Conflict(format!(
                "idempotency key belongs to job {existing}, which is still being created; retry"
            ))
        })?;
        if record.request_sha256.as_ref().is_some_and(|h| *h != job.fingerprint) {
            return Err(ApiError::KeyReused(format!(
                "idempotency key {:?} was used for a different request (job {existing}); use a new key for a new request",
                job.idempotency_key.as_deref().unwrap_or_default()
            )));
        }
        if !matches!(record.state, JobState::Failed | JobState::Cancelled) {
            return Ok(Some(record));
        }
        if state.ledger.retake_key(key, &existing, id).await? {
            info!(key, old_job = %existing, job_id = %id, "idempotency key of a {} job taken over by a new job", record.state.as_str());
            return Ok(None);
        }
        // another submit took it over first: look again
    }
    Err(ApiError::Conflict("idempotency key is being reused concurrently; retry".into()))
}

async fn enqueue(state: &AppState, job: ValidJob, tenant: &str) -> Result<Submitted, ApiError> {
    let id = uuid::Uuid::new_v4().to_string();
    let mut key_hold = None;
    if let Some(key) = &job.idempotency_key {
        let key = wire_key(tenant, key);
        if let Some(record) = keyed_job(state, &key, &job, &id).await? {
            if !record.enqueued && !record.state.is_terminal() {
                // the first attempt stopped mid fan-out: finish it
                crate::jobs::fanout::publish_tasks(&state.bus, &state.ledger, &record).await?;
            }
            tracing::Span::current().record("job_id", record.id.as_str());
            return Ok(Submitted { id: record.id, state: record.state, existing: true });
        }
        // the key is ours: renewed until the job record exists (storing a large input takes
        // a while), so that no retry takes it over meanwhile
        key_hold = Some(state.ledger.hold_key(&key, &id));
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
            let bytes = tokio::task::spawn_blocking(move || input.to_bytes())
                .await
                .map_err(|e| ApiError::Internal(anyhow::anyhow!("encoding the input panicked: {e}")))?;
            let stored = state.bus.put_object(&object, &bytes).await.map_err(|e| match e {
                snarkflow_bus::BusError::Full(m) => {
                    ApiError::StorageFull(format!("the job input cannot be stored: {m}"))
                }
                other => ApiError::Unavailable(format!("storing the job input: {other}")),
            })?;
            Some(wire::InputRef { object, sha256_hex: stored.sha256_hex, bytes: stored.bytes })
        }
    };
    let now = now_ms();
    let record = JobRecord {
        schema: SCHEMA_VERSION,
        id: id.clone(),
        circuit: job.circuit.clone(),
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
        input,
        tenant: Some(tenant.to_owned()),
        deadline_at_ms: Some(now + state.policy.deadline_secs(&job) * 1000),
        enqueued: false,
        request_sha256: Some(job.fingerprint.clone()),
    };
    state.ledger.create(&record).await.map_err(|e| match e {
        snarkflow_bus::BusError::Full(m) => ApiError::StorageFull(format!("the job ledger is full: {m}")),
        other => ApiError::Unavailable(format!("{other:#}")),
    })?;
    drop(key_hold);
    state.index.note(&record);
    if let Err(e) = crate::jobs::fanout::publish_tasks(&state.bus, &state.ledger, &record).await {
        // The job is recorded (durably) but not fully queued: the ledger pass finishes the
        // fan-out once NATS takes messages again, so the job is accepted, not failed (a client
        // told to retry would make a second job, or with its key find a failed one).
        tracing::warn!(job_id = %id, error = %e, "queueing the job's tasks failed; the ledger pass will finish it");
    }
    state.metrics.job_submitted(job.circuit.kind().as_str());
    info!(job_id = %id, circuit_id = %job.circuit.circuit_id(), partitions = job.partitions, priority = job.priority.as_str(), "job queued");
    Ok(Submitted { id, state: JobState::Queued, existing: false })
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
pub(crate) async fn load(state: &AppState, caller: &Caller, id: &str) -> Result<JobRecord, ApiError> {
    let not_found = || ApiError::NotFound(format!("no job with id {id:?}"));
    if !is_job_id(id) {
        return Err(not_found());
    }
    let record = state.ledger.get(id).await?.ok_or_else(not_found)?;
    if !caller.owns(&record) {
        return Err(not_found());
    }
    Ok(record)
}

/// Whether `id` is spelled as job ids are: a hyphenated lowercase UUID (the parser also takes
/// `urn:uuid:`, braces and other forms, which are not ledger keys).
pub(crate) fn is_job_id(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok_and(|u| u.hyphenated().to_string() == id)
}

/// Wait until the job has ended, or `timeout` (when given) has passed; its record then.
pub(crate) async fn wait(
    state: &AppState,
    caller: &Caller,
    id: &str,
    timeout: Option<std::time::Duration>,
) -> Result<JobRecord, ApiError> {
    caller.require(Scope::Read)?;
    load(state, caller, id).await?;
    state.ledger.wait_finished(id, timeout).await?.ok_or_else(|| ApiError::NotFound(format!("no job with id {id:?}")))
}

/// Cancel a job that has not finished; the record after, and the state it was in.
pub(crate) async fn cancel(state: &AppState, caller: &Caller, id: &str) -> Result<(JobRecord, JobState), ApiError> {
    caller.require(Scope::Cancel)?;
    load(state, caller, id).await?;
    let mut was = None;
    let record = state
        .ledger
        .update(id, |r| {
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
    let was = was.unwrap_or(record.state);
    match was {
        JobState::Cancelled => Ok((record, was)),
        s if s.is_terminal() => Err(ApiError::Conflict(format!("job {id} already finished ({})", s.as_str()))),
        _ => {
            state.index.note(&record);
            crate::jobs::finish::finished(&state.bus, &state.metrics, &record).await;
            Ok((record, was))
        }
    }
}

/// A done job's proof: the partition proofs concatenated in partition order, as
/// filecoin-proofs returns them for the kind.
pub(crate) fn proof_bytes(record: &JobRecord) -> Result<Vec<u8>, ApiError> {
    let id = &record.id;
    if record.state != JobState::Done {
        return Err(ApiError::Conflict(format!("job {id} is {}, not done; no proof yet", record.state.as_str())));
    }
    let mut bytes = Vec::with_capacity(record.partitions.len() * wire::PARTITION_PROOF_BYTES);
    for (i, p) in record.partitions.iter().enumerate() {
        let hex_proof = p.proof_hex.as_deref().ok_or_else(|| anyhow::anyhow!("done job {id} lacks partition {i}"))?;
        bytes.extend(hex::decode(hex_proof).map_err(|e| anyhow::anyhow!("job {id} partition {i}: {e}"))?);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use snarkflow_wire::JobKind;

    #[test]
    fn a_window_post_due_within_its_challenge_window_is_urgent() {
        use super::quota_lane;
        use crate::Lane;
        let window = JobKind::new("window-post");
        // its own default deadline is the challenge window
        let default = snarkflow_circuits::kind_info(window).unwrap().default_deadline_secs;
        assert_eq!(quota_lane(window, default), Lane::Urgent);
        assert_eq!(quota_lane(window, 600), Lane::Urgent);
        assert_eq!(quota_lane(window, 6 * 3600), Lane::Normal, "a WindowPoSt due in hours waits like other work");
        assert_eq!(quota_lane(JobKind::new("winning-post"), 6 * 3600), Lane::Critical);
        for kind in ["porep-c2", "snap-update", "dense-chain", "sha256-chain", "no-such-kind"] {
            assert_eq!(quota_lane(JobKind::new(kind), 60), Lane::Normal, "{kind}: a short deadline is not urgency");
        }
    }

    #[test]
    fn only_kinds_that_are_critical_themselves_pass_a_full_quota() {
        assert!(super::quota_exempt(JobKind::new("winning-post")));
        for kind in ["porep-c2", "snap-update", "window-post", "dense-chain", "sha256-chain", "no-such-kind"] {
            assert!(!super::quota_exempt(JobKind::new(kind)), "{kind}");
        }
    }
}
