//! `GetStatus`, `PreloadSRS` and `EvictSRS`: what the gpu-workers report of themselves (a
//! control request every live gpu-worker answers) and the queues as the ledger has them,
//! across the whole cluster (Curio sums `pending + in_progress` for back-pressure).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use snarkflow_wire::{
    CircuitSpec, GpuWorkerStatus, JobState, ParamsCommand, ParamsReply, GPU_PARAMS_SUBJECT, GPU_STATUS_SUBJECT,
};
use tracing::warn;

use super::pb;
use crate::auth::Caller;
use crate::{ApiError, AppState};

/// How long the gateway listens for gpu-workers' status replies (they answer at once; the
/// window covers a busy network, and bounds a GetStatus, which Curio gives 5 s).
const STATUS_WINDOW: Duration = Duration::from_millis(500);
/// Longest a parameter load may take (64 GiB PoRep parameters from a slow disk).
const PRELOAD_WINDOW: Duration = Duration::from_secs(30 * 60);
/// A ledger count this young is answered again (Curio asks before every task it takes).
const COUNTS_TTL: Duration = Duration::from_secs(1);

/// Jobs per kind and state, from one pass over the ledger.
#[derive(Debug, Clone, Default)]
pub(super) struct LedgerCounts {
    pub queues: BTreeMap<snarkflow_wire::JobKind, (u32, u32)>,
    pub done: u64,
    pub failed: u64,
}

/// The last [`LedgerCounts`] and when they were taken.
#[derive(Default)]
pub(super) struct CountsCache(Mutex<Option<(Instant, LedgerCounts)>>);

impl CountsCache {
    pub(super) async fn get(&self, state: &AppState) -> Result<LedgerCounts, ApiError> {
        if let Some((at, counts)) = &*self.0.lock().expect("counts cache") {
            if at.elapsed() < COUNTS_TTL {
                return Ok(counts.clone());
            }
        }
        let mut counts = LedgerCounts::default();
        let jobs = state.index.jobs(&state.ledger).await?;
        for record in jobs {
            let (pending, running) = counts.queues.entry(record.kind).or_default();
            match record.state {
                JobState::Queued => *pending += 1,
                JobState::Synthesizing | JobState::Proving => *running += 1,
                JobState::Done => counts.done += 1,
                JobState::Failed => counts.failed += 1,
                JobState::Cancelled => {}
            }
        }
        *self.0.lock().expect("counts cache") = Some((Instant::now(), counts.clone()));
        Ok(counts)
    }
}

/// Every gpu-worker that answers within [`STATUS_WINDOW`].
pub(super) async fn gpu_workers(state: &AppState) -> Result<Vec<GpuWorkerStatus>, ApiError> {
    let replies = state.bus.gather(GPU_STATUS_SUBJECT, b"{}".to_vec(), None, STATUS_WINDOW).await?;
    let mut workers: Vec<GpuWorkerStatus> = replies
        .iter()
        .filter_map(|r| {
            serde_json::from_slice(r).map_err(|e| warn!(error = %e, "unreadable gpu-worker status reply")).ok()
        })
        .collect();
    workers.sort_by(|a, b| a.worker.cmp(&b.worker));
    Ok(workers)
}

/// The `GetStatus` answer from the workers' reports and the ledger's counts.
pub(super) fn status_response(
    workers: &[GpuWorkerStatus],
    counts: &LedgerCounts,
    uptime: Duration,
) -> pb::GetStatusResponse {
    let gpus = workers
        .iter()
        .flat_map(|w| {
            w.devices.iter().map(move |d| pb::GpuStatus {
                ordinal: d.index,
                name: format!("{} ({} on {})", d.name, w.worker, w.host),
                vram_total_bytes: d.memory_bytes,
                vram_free_bytes: 0,
                current_job_id: w.current.as_ref().map(|c| c.job_id.clone()).unwrap_or_default(),
                current_proof_kind: w.current.as_ref().map(|c| c.kind.as_str().to_owned()).unwrap_or_default(),
            })
        })
        .collect();
    let mut srs: BTreeMap<&str, (u64, u32)> = BTreeMap::new();
    for loaded in workers.iter().flat_map(|w| &w.loaded) {
        let entry = srs.entry(&loaded.circuit_id).or_default();
        entry.0 = entry.0.max(loaded.bytes);
        entry.1 += 1;
    }
    let loaded_srs = srs
        .into_iter()
        .map(|(id, (bytes, holders))| pb::SrsStatus {
            circuit_id: id.to_owned(),
            tier: pb::srs_status::Tier::Hot as i32,
            size_bytes: bytes,
            ref_count: holders,
        })
        .collect();
    let queues = counts
        .queues
        .iter()
        .map(|(kind, (pending, running))| pb::QueueStatus {
            proof_kind: kind.to_string(),
            pending: *pending,
            in_progress: *running,
        })
        .collect();
    pb::GetStatusResponse {
        gpus,
        loaded_srs,
        queues,
        total_proofs_completed: counts.done,
        total_proofs_failed: counts.failed,
        uptime_seconds: uptime.as_secs(),
        pinned_memory_bytes: 0,
        pinned_memory_limit_bytes: 0,
    }
}

/// Send `command` to every live gpu-worker and wait for all their answers.
pub(super) async fn params_command(state: &AppState, command: ParamsCommand) -> Result<Vec<ParamsReply>, ApiError> {
    let expected = gpu_workers(state).await?.len();
    if expected == 0 {
        return Err(ApiError::Unavailable("no gpu-worker answered: none is running or reachable".into()));
    }
    let payload = serde_json::to_vec(&command).expect("commands serialize");
    let replies = state.bus.gather(GPU_PARAMS_SUBJECT, payload, Some(expected), PRELOAD_WINDOW).await?;
    let replies: Vec<ParamsReply> = replies.iter().filter_map(|r| serde_json::from_slice(r).ok()).collect();
    let errors: Vec<String> = replies
        .iter()
        .filter_map(|r| match r {
            ParamsReply::Error { worker, message } => Some(format!("{worker}: {message}")),
            _ => None,
        })
        .collect();
    if !errors.is_empty() {
        return Err(ApiError::NotServed(errors.join("; ")));
    }
    if replies.is_empty() {
        return Err(ApiError::Unavailable("no gpu-worker answered the parameters request".into()));
    }
    Ok(replies)
}

/// Our circuit id for a `PreloadSRS`/`EvictSRS` request's, if this gateway serves that circuit
/// (it takes jobs for it): an id such as `dense-chain-c67108864` would otherwise have every
/// gpu-worker try to build or load parameters no job will use.
pub(super) fn served_circuit_id(state: &AppState, id: &str) -> Result<String, ApiError> {
    let spec: CircuitSpec = super::request::circuit_from_id(id)?;
    state.policy.check_circuit(&spec, 1)?;
    Ok(spec.circuit_id())
}

/// `workers` with the job on each device named only when `caller` may see that job (its own
/// tenant's, or any for an admin): one tenant does not learn another's job ids.
pub(super) async fn hide_others_jobs(
    state: &AppState,
    caller: &Caller,
    mut workers: Vec<GpuWorkerStatus>,
) -> Vec<GpuWorkerStatus> {
    if caller.is_admin() {
        return workers;
    }
    for worker in &mut workers {
        let Some(current) = worker.current.as_mut() else { continue };
        let tenant = state.index.tenant_of(&state.ledger, &current.job_id).await;
        if tenant.as_deref() != Some(caller.tenant()) {
            current.job_id.clear();
        }
    }
    workers
}
