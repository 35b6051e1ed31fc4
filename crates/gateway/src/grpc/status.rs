//! `GetStatus`, `PreloadSRS` and `EvictSRS`: what the gpu-workers report of themselves (a
//! control request every live gpu-worker answers) and the queues as the ledger has them,
//! across the whole cluster (Curio sums `pending + in_progress` for back-pressure).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use snarkflow_wire::{
    CircuitSpec, GpuWorkerStatus, JobState, LoadedCircuit, ParamsCommand, ParamsReply, GPU_PARAMS_SUBJECT,
};

use super::pb;
use crate::{ApiError, AppState};

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
                name: format!("{} ({} on {}{})", d.name, w.worker, w.host, plans(w)),
                vram_total_bytes: d.memory_bytes,
                vram_free_bytes: 0,
                current_job_id: w.current.as_ref().map(|c| c.job_id.clone()).unwrap_or_default(),
                current_proof_kind: w.current.as_ref().map(|c| c.kind.as_str().to_owned()).unwrap_or_default(),
            })
        })
        .collect();
    // a circuit's tier is the coldest any worker holds it in: HOT all on a device, WARM part
    // of it in host memory (partly resident), COLD streamed from host memory
    let mut srs: BTreeMap<&str, (u64, u32, pb::srs_status::Tier)> = BTreeMap::new();
    for loaded in workers.iter().flat_map(|w| &w.loaded) {
        let entry = srs.entry(&loaded.circuit_id).or_insert((0, 0, pb::srs_status::Tier::Hot));
        entry.0 = entry.0.max(loaded.bytes);
        entry.1 += 1;
        entry.2 = entry.2.max(tier(loaded));
    }
    let loaded_srs = srs
        .into_iter()
        .map(|(id, (bytes, holders, tier))| pb::SrsStatus {
            circuit_id: id.to_owned(),
            tier: tier as i32,
            size_bytes: bytes,
            ref_count: holders,
        })
        .collect();
    let pinned: u64 = workers.iter().flat_map(|w| &w.loaded).map(|l| l.host_bytes).sum();
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
        pinned_memory_bytes: pinned,
        pinned_memory_limit_bytes: 0,
    }
}

/// Where a worker keeps a circuit's key, as cuzk's SRS tiers say it.
fn tier(loaded: &LoadedCircuit) -> pb::srs_status::Tier {
    match loaded.memory_plan.as_deref() {
        Some("partly-resident") => pb::srs_status::Tier::Warm,
        Some("streamed" | "lean" | "compact") => pb::srs_status::Tier::Cold,
        // supraseal-c2 streams its pinned host copy for every partition
        None if loaded.prover == "cuda-supraseal" => pb::srs_status::Tier::Cold,
        _ => pb::srs_status::Tier::Hot,
    }
}

/// `; porep-c2-32GiB streamed, …`: each loaded circuit's memory plan (or prover), for the GPU's
/// name in GetStatus (cuzk's message has no field of its own for it).
fn plans(w: &GpuWorkerStatus) -> String {
    let each: Vec<String> = w
        .loaded
        .iter()
        .filter(|l| l.memory_plan.is_some() || !l.prover.is_empty())
        .map(|l| format!("{} {}", l.circuit_id, l.memory_plan.as_deref().unwrap_or(&l.prover)))
        .collect();
    if each.is_empty() {
        String::new()
    } else {
        format!("; {}", each.join(", "))
    }
}

/// Send `command` to every live gpu-worker and wait for all their answers.
pub(super) async fn params_command(state: &AppState, command: ParamsCommand) -> Result<Vec<ParamsReply>, ApiError> {
    let expected = crate::cluster::gpu_workers(state).await?.len();
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

#[cfg(test)]
mod tests {
    use snarkflow_wire::GpuDevice;

    use super::*;

    fn loaded(id: &str, prover: &str, plan: Option<&str>, host_bytes: u64) -> LoadedCircuit {
        LoadedCircuit {
            circuit_id: id.into(),
            bytes: 47_000_000_000,
            prover: prover.into(),
            memory_plan: plan.map(Into::into),
            host_bytes,
        }
    }

    fn worker(name: &str, loaded: Vec<LoadedCircuit>) -> GpuWorkerStatus {
        GpuWorkerStatus {
            worker: name.into(),
            host: "gpu-host".into(),
            backend: "cuda-resident".into(),
            ready: true,
            state: "ready".into(),
            devices: vec![GpuDevice { index: 0, name: "NVIDIA GeForce RTX 4090".into(), memory_bytes: 24 << 30 }],
            loaded,
            current: None,
        }
    }

    #[test]
    fn memory_plans_show_as_tiers_pinned_bytes_and_in_the_gpu_name() {
        let workers = [
            worker("a", vec![loaded("porep-c2-32GiB", "cuda-resident", Some("streamed"), 51 << 30)]),
            worker("b", vec![loaded("porep-c2-32GiB", "cuda-resident", Some("resident"), 0)]),
            worker(
                "c",
                vec![
                    loaded("winning-post-32GiB", "cuda-resident", Some("partly-resident"), 1 << 30),
                    loaded("window-post-32GiB", "cuda-supraseal", None, 0),
                ],
            ),
            worker("d", vec![loaded("snap-update-32GiB", "cuda-resident", Some("lean"), 49 << 30)]),
        ];
        let status = status_response(&workers, &LedgerCounts::default(), Duration::from_secs(5));
        let tier = |id: &str| status.loaded_srs.iter().find(|s| s.circuit_id == id).map(|s| s.tier);
        // the coldest holder decides: one worker streams the 32 GiB PoRep key
        assert_eq!(tier("porep-c2-32GiB"), Some(pb::srs_status::Tier::Cold as i32));
        assert_eq!(tier("winning-post-32GiB"), Some(pb::srs_status::Tier::Warm as i32));
        assert_eq!(
            tier("window-post-32GiB"),
            Some(pb::srs_status::Tier::Cold as i32),
            "supraseal streams its pinned copy"
        );
        assert_eq!(status.loaded_srs.iter().find(|s| s.circuit_id == "porep-c2-32GiB").unwrap().ref_count, 2);
        // the lean plan (16 GB cards) streams its key as the streamed plan does
        assert_eq!(tier("snap-update-32GiB"), Some(pb::srs_status::Tier::Cold as i32));
        assert_eq!(status.pinned_memory_bytes, (51 << 30) + (1 << 30) + (49 << 30));
        assert_eq!(status.gpus[0].name, "NVIDIA GeForce RTX 4090 (a on gpu-host; porep-c2-32GiB streamed)");
        assert!(status.gpus[2].name.ends_with("winning-post-32GiB partly-resident, window-post-32GiB cuda-supraseal)"));
    }
}
