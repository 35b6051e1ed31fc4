//! What the cluster is doing, for `GET /v1/cluster` (`snarkflow cluster status`) and cuzk's
//! `GetStatus`: the gpu-workers as they report themselves (a control request every live
//! gpu-worker answers), each stage's lanes (tasks waiting, held, the oldest one's age) and the
//! jobs in the ledger per state.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use snarkflow_bus::now_ms;
use snarkflow_wire::{GpuWorkerStatus, JobState, Stage, GPU_STATUS_SUBJECT};
use tracing::warn;

use crate::auth::Caller;
use crate::{ApiError, AppState};

/// How long the gateway listens for gpu-workers' status replies (they answer at once; the
/// window covers a busy network, and bounds a GetStatus, which Curio gives 5 s).
const STATUS_WINDOW: Duration = Duration::from_millis(500);

/// `GET /v1/cluster`.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClusterView {
    /// When it was read (Unix ms, the gateway's clock).
    pub at_ms: u64,
    /// Every gpu-worker that answered within half a second, by name.
    pub gpu_workers: Vec<GpuWorkerStatus>,
    /// Each stage's priority lanes, most urgent first.
    pub lanes: Vec<LaneView>,
    /// Jobs in the ledger per state (every state named, 0 included).
    pub jobs: BTreeMap<String, u64>,
}

/// One lane of one stage.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LaneView {
    /// `synthesis` or `proving`.
    pub stage: String,
    /// `critical`, `high`, `normal` or `low`.
    pub lane: String,
    /// Tasks no worker has taken yet.
    pub waiting: u64,
    /// Tasks a worker holds.
    pub in_progress: u64,
    /// Seconds since the oldest unsettled task was published (the NATS server's clock against
    /// the gateway's); absent when the lane is empty.
    pub oldest_secs: Option<f64>,
}

/// The cluster as `caller` may see it: job ids on other tenants' devices hidden.
pub(crate) async fn view(state: &AppState, caller: &Caller) -> Result<ClusterView, ApiError> {
    let (workers, lanes, jobs) = tokio::join!(gpu_workers(state), lanes(state), jobs(state));
    let gpu_workers = hide_others_jobs(state, caller, workers?).await;
    Ok(ClusterView { at_ms: now_ms(), gpu_workers, lanes: lanes?, jobs: jobs? })
}

async fn lanes(state: &AppState) -> Result<Vec<LaneView>, ApiError> {
    let now = now_ms();
    let mut lanes = Vec::new();
    for stage in Stage::ALL {
        for (lane, backlog) in state.bus.stage_backlog(stage).await? {
            lanes.push(LaneView {
                stage: stage.as_str().to_owned(),
                lane: lane.as_str().to_owned(),
                waiting: backlog.waiting,
                in_progress: backlog.in_progress,
                oldest_secs: backlog.oldest_ms.map(|at| now.saturating_sub(at) as f64 / 1000.0),
            });
        }
    }
    Ok(lanes)
}

async fn jobs(state: &AppState) -> Result<BTreeMap<String, u64>, ApiError> {
    let mut counts: BTreeMap<String, u64> = JobState::ALL.iter().map(|s| (s.as_str().to_owned(), 0)).collect();
    for job in state.index.jobs(&state.ledger).await? {
        *counts.entry(job.state.as_str().to_owned()).or_default() += 1;
    }
    Ok(counts)
}

/// Every gpu-worker that answers within [`STATUS_WINDOW`].
pub(crate) async fn gpu_workers(state: &AppState) -> Result<Vec<GpuWorkerStatus>, ApiError> {
    let replies = state.bus.gather(GPU_STATUS_SUBJECT, b"{}".to_vec(), None, STATUS_WINDOW).await?;
    let mut workers: Vec<GpuWorkerStatus> = replies
        .iter()
        // NATS's "no responders" answer has no payload: no gpu-worker is listening
        .filter(|r| !r.is_empty())
        .filter_map(|r| {
            serde_json::from_slice(r).map_err(|e| warn!(error = %e, "unreadable gpu-worker status reply")).ok()
        })
        .collect();
    workers.sort_by(|a, b| a.worker.cmp(&b.worker));
    Ok(workers)
}

/// `workers` with the job on each device named only when `caller` may see that job (its own
/// tenant's, or any for an admin): one tenant does not learn another's job ids.
pub(crate) async fn hide_others_jobs(
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
