//! The gateway's index of the job ledger: a summary of every job, read once at start and kept
//! current by a watch on the bucket, so listing, the job gauges, tenant quotas, deadlines,
//! garbage collection and GetStatus read memory instead of every record each time (a full
//! read of 100,000 records takes seconds; see docs/benchmarks.md).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt as _;
use snarkflow_bus::{BusError, Ledger, LedgerChange};
use snarkflow_wire::{CircuitSpec, JobKind, JobRecord, JobState};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// What the index keeps of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSummary {
    pub id: String,
    pub kind: JobKind,
    pub state: JobState,
    pub tenant: Option<String>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    pub deadline_at_ms: Option<u64>,
    pub enqueued: bool,
    pub circuit: CircuitSpec,
    pub partitions: u32,
    pub synthesized: u32,
    pub proved: u32,
    /// Constraints per partition, once a synth-worker has reported one.
    pub constraints: Option<u64>,
}

impl From<&JobRecord> for JobSummary {
    fn from(r: &JobRecord) -> Self {
        JobSummary {
            id: r.id.clone(),
            kind: r.kind(),
            state: r.state,
            tenant: r.tenant.clone(),
            created_at_ms: r.created_at_ms,
            updated_at_ms: r.updated_at_ms,
            deadline_at_ms: r.deadline_at_ms,
            enqueued: r.enqueued,
            circuit: r.circuit.clone(),
            partitions: r.partitions.len() as u32,
            synthesized: r.synthesized_count(),
            proved: r.proved_count(),
            constraints: r.partitions.iter().filter_map(|p| p.synth.as_ref()).map(|s| s.constraints).max(),
        }
    }
}

#[derive(Default)]
struct Inner {
    jobs: HashMap<String, JobSummary>,
    /// Every record that existed when the current watch began has been read.
    ready: bool,
}

/// The index; cheap to clone. Until it is ready (at start, and after the watch broke while it
/// reads the ledger again) callers read the ledger itself.
#[derive(Clone, Default)]
pub struct LedgerIndex(Arc<RwLock<Inner>>);

impl LedgerIndex {
    pub fn ready(&self) -> bool {
        self.0.read().expect("index").ready
    }

    /// Every job, when the index is ready.
    pub fn snapshot(&self) -> Option<Vec<JobSummary>> {
        let inner = self.0.read().expect("index");
        inner.ready.then(|| inner.jobs.values().cloned().collect())
    }

    /// Every job: from the index when it is ready, else read from `ledger` (seconds at 100,000
    /// records: only while the index reads the ledger itself).
    pub async fn jobs(&self, ledger: &Ledger) -> Result<Vec<JobSummary>, BusError> {
        if let Some(jobs) = self.snapshot() {
            return Ok(jobs);
        }
        Ok(ledger.list_where(|_| true, usize::MAX).await?.iter().map(JobSummary::from).collect())
    }

    /// The tenant of job `id` (`None`: no tenant, or no such job), from the index when it is
    /// ready, else from the job's record.
    pub async fn tenant_of(&self, ledger: &Ledger, id: &str) -> Option<String> {
        {
            let inner = self.0.read().expect("index");
            if inner.ready {
                return inner.jobs.get(id).and_then(|j| j.tenant.clone());
            }
        }
        ledger.get(id).await.ok().flatten().and_then(|r| r.tenant)
    }

    /// The ids of the newest `limit` jobs `keep` accepts, newest first, when ready.
    pub fn newest(&self, keep: impl Fn(&JobSummary) -> bool, limit: usize) -> Option<Vec<String>> {
        let inner = self.0.read().expect("index");
        if !inner.ready {
            return None;
        }
        let mut kept: Vec<&JobSummary> = inner.jobs.values().filter(|j| keep(j)).collect();
        kept.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then_with(|| a.id.cmp(&b.id)));
        Some(kept.into_iter().take(limit).map(|j| j.id.clone()).collect())
    }

    /// Forget jobs the bucket has expired (its max_age drops records without a delete marker).
    pub fn prune(&self, retention: Duration, now_ms: u64) {
        let horizon = now_ms.saturating_sub(retention.as_millis() as u64);
        self.0.write().expect("index").jobs.retain(|_, j| j.updated_at_ms >= horizon);
    }

    /// A record this gateway has just written: listed at once, without waiting for the
    /// watch to bring it (a client lists what it just submitted).
    pub fn note(&self, record: &JobRecord) {
        self.apply(LedgerChange::Record(Box::new(record.clone())));
    }

    fn apply(&self, change: LedgerChange) {
        let mut inner = self.0.write().expect("index");
        match change {
            LedgerChange::Record(record) => {
                // an ended job never runs again: a record of it still running is an older
                // revision the watch brings after this gateway noted the end (a cancel)
                let ended = inner.jobs.get(&record.id).is_some_and(|held| held.state.is_terminal());
                if ended && !record.state.is_terminal() {
                    return;
                }
                inner.jobs.insert(record.id.clone(), JobSummary::from(&*record));
            }
            LedgerChange::Removed(id) => {
                inner.jobs.remove(&id);
            }
            LedgerChange::CaughtUp => inner.ready = true,
        }
    }

    fn reset(&self) {
        let mut inner = self.0.write().expect("index");
        inner.jobs.clear();
        inner.ready = false;
    }
}

/// Keep `index` current until `shutdown`: read the ledger, then follow its changes; when the
/// watch breaks (NATS restarted, a leader moved), read it again.
pub async fn maintain(ledger: Ledger, index: LedgerIndex, shutdown: CancellationToken) {
    loop {
        index.reset();
        match ledger.changes().await {
            Ok(mut changes) => {
                let started = std::time::Instant::now();
                let mut announced = false;
                loop {
                    let change = tokio::select! {
                        _ = shutdown.cancelled() => return,
                        change = changes.next() => change,
                    };
                    let Some(change) = change else { break };
                    let caught_up = matches!(change, LedgerChange::CaughtUp);
                    index.apply(change);
                    if caught_up && !announced {
                        announced = true;
                        let jobs = index.0.read().expect("index").jobs.len();
                        info!(jobs, seconds = started.elapsed().as_secs_f64(), "ledger index ready");
                    }
                }
                warn!("the ledger watch ended; reading the ledger again");
            }
            Err(e) => warn!(error = %e, "watching the ledger failed; retrying"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, created: u64, state: JobState) -> JobSummary {
        JobSummary {
            id: id.into(),
            kind: JobKind::new("dense-chain"),
            state,
            tenant: None,
            created_at_ms: created,
            updated_at_ms: created,
            deadline_at_ms: None,
            enqueued: true,
            circuit: snarkflow_circuits::circuit("dense-chain-c64"),
            partitions: 1,
            synthesized: 0,
            constraints: None,
            proved: 0,
        }
    }

    #[test]
    fn newest_first_filtered_and_only_when_ready() {
        let index = LedgerIndex::default();
        {
            let mut inner = index.0.write().unwrap();
            for (id, at, state) in [("a", 1, JobState::Done), ("b", 3, JobState::Queued), ("c", 2, JobState::Queued)] {
                inner.jobs.insert(id.into(), summary(id, at, state));
            }
        }
        assert_eq!(index.newest(|_| true, 10), None, "not ready: callers read the ledger");
        index.apply(LedgerChange::CaughtUp);
        assert_eq!(index.newest(|_| true, 2).unwrap(), vec!["b", "c"]);
        assert_eq!(index.newest(|j| j.state == JobState::Done, 10).unwrap(), vec!["a"]);
        index.apply(LedgerChange::Removed("b".into()));
        index.prune(Duration::from_millis(5), 7);
        assert_eq!(index.newest(|_| true, 10).unwrap(), vec!["c"], "removed and expired jobs are gone");
    }

    #[test]
    fn a_noted_end_is_not_taken_back_by_the_watchs_older_revisions() {
        let index = LedgerIndex::default();
        index.apply(LedgerChange::CaughtUp);
        let record = |state: JobState| JobRecord { state, ..crate::events::apply::tests::record(1) };
        let state = |index: &LedgerIndex| index.snapshot().unwrap().into_iter().find(|j| j.id == "j").unwrap().state;
        index.apply(LedgerChange::Record(Box::new(record(JobState::Proving))));
        // the cancel, noted at once; then the watch brings the revisions before it, then it
        index.note(&record(JobState::Cancelled));
        index.apply(LedgerChange::Record(Box::new(record(JobState::Proving))));
        assert_eq!(state(&index), JobState::Cancelled);
        index.apply(LedgerChange::Record(Box::new(record(JobState::Cancelled))));
        assert_eq!(state(&index), JobState::Cancelled);
        // a running job's records move it as they come
        let k = |state: JobState| Box::new(JobRecord { id: "k".into(), ..record(state) });
        index.apply(LedgerChange::Record(k(JobState::Queued)));
        index.apply(LedgerChange::Record(k(JobState::Synthesizing)));
        let k = index.snapshot().unwrap().into_iter().find(|j| j.id == "k").unwrap();
        assert_eq!(k.state, JobState::Synthesizing);
    }
}
