//! The job ledger: one JSON [`JobRecord`] per job in a JetStream KV bucket, changed only by
//! compare-and-set, so concurrent writers (several gateways, the event loop and a cancel)
//! never lose an update, and a gateway restart loses nothing.

use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream::kv::Operation;
use futures::StreamExt;
use snarkflow_bus::Bus;
use snarkflow_wire::{self as wire, JobRecord, JobState};

/// Attempts of one compare-and-set update before giving up (each loses only to a concurrent
/// writer, so a handful is plenty).
const CAS_ATTEMPTS: usize = 16;

/// How long a listing waits for the next record before taking the ones it has.
const LIST_IDLE: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct Ledger {
    bus: Bus,
}

impl Ledger {
    pub fn new(bus: Bus) -> Self {
        Ledger { bus }
    }

    /// Store a new job; fails if the id exists.
    pub async fn create(&self, record: &JobRecord) -> anyhow::Result<()> {
        self.bus
            .jobs
            .create(&record.id, wire::encode(record).into())
            .await
            .with_context(|| format!("creating job {}", record.id))?;
        Ok(())
    }

    async fn entry(&self, id: &str) -> anyhow::Result<Option<(JobRecord, u64)>> {
        let entry = self.bus.jobs.entry(id).await.with_context(|| format!("reading job {id}"))?;
        match entry {
            Some(e) if e.operation == Operation::Put => {
                let record = wire::decode(&e.value).with_context(|| format!("decoding job {id}"))?;
                Ok(Some((record, e.revision)))
            }
            _ => Ok(None),
        }
    }

    pub async fn get(&self, id: &str) -> anyhow::Result<Option<JobRecord>> {
        Ok(self.entry(id).await?.map(|(r, _)| r))
    }

    /// Apply `change` with compare-and-set. `change` returns whether it changed anything;
    /// returns the record after the change (`None` if the job does not exist).
    pub async fn update<F>(&self, id: &str, mut change: F) -> anyhow::Result<Option<JobRecord>>
    where
        F: FnMut(&mut JobRecord) -> bool,
    {
        for _ in 0..CAS_ATTEMPTS {
            let Some((mut record, revision)) = self.entry(id).await? else {
                return Ok(None);
            };
            if !change(&mut record) {
                return Ok(Some(record));
            }
            record.updated_at_ms = snarkflow_bus::now_ms();
            match self.bus.jobs.update(id, wire::encode(&record).into(), revision).await {
                Ok(_) => return Ok(Some(record)),
                Err(e) if e.kind() == async_nats::jetstream::kv::UpdateErrorKind::WrongLastRevision => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(e) => return Err(e).with_context(|| format!("updating job {id}")),
            }
        }
        anyhow::bail!("job {id}: too many concurrent updates")
    }

    /// Jobs, newest first, optionally of one state: one pass over the bucket's latest values
    /// (an ordered consumer delivering the last record per key), not a read per key.
    pub async fn list(&self, state: Option<JobState>, limit: usize) -> anyhow::Result<Vec<JobRecord>> {
        let stream = format!("KV_{}", wire::JOBS_BUCKET);
        let stored = self
            .bus
            .js
            .get_stream(&stream)
            .await
            .context("listing jobs")?
            .info()
            .await
            .context("listing jobs")?
            .state
            .messages;
        if stored == 0 {
            return Ok(Vec::new());
        }
        // by key: a record updated during the pass arrives again, newer (the later one wins)
        let mut latest_by_key: std::collections::HashMap<String, JobRecord> = Default::default();
        let mut latest = self.bus.jobs.watch_with_history(">").await.context("listing jobs")?;
        loop {
            // the last pending entry says delta 0; the timeout only ends a pass whose records
            // all expired between the count above and the watch
            let entry = match tokio::time::timeout(LIST_IDLE, latest.next()).await {
                Ok(Some(entry)) => entry.context("listing jobs")?,
                Ok(None) | Err(_) => break,
            };
            if entry.operation == Operation::Put {
                let record: JobRecord =
                    wire::decode(&entry.value).with_context(|| format!("job record {}", entry.key))?;
                latest_by_key.insert(entry.key, record);
            } else {
                latest_by_key.remove(&entry.key);
            }
            if entry.delta == 0 {
                break;
            }
        }
        let mut records: Vec<JobRecord> =
            latest_by_key.into_values().filter(|r| state.is_none_or(|s| r.state == s)).collect();
        records.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then_with(|| a.id.cmp(&b.id)));
        records.truncate(limit);
        Ok(records)
    }
}
