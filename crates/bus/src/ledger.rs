//! The job ledger: one JSON [`JobRecord`] per job in a JetStream KV bucket, changed only by
//! compare-and-set, so concurrent writers (several gateways, the event loop and a cancel)
//! never lose an update, and a gateway restart loses nothing. Idempotency keys live beside it.
//!
//! The gateway writes the ledger; workers only ask whether a job is still live
//! ([`Ledger::is_live`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{self, Operation};
use futures::StreamExt;
use snarkflow_wire::{self as wire, JobRecord, JobState, Stage};

use crate::{nats_err, BusError};

/// Attempts of one compare-and-set update before giving up (each loses only to a concurrent
/// writer, so a handful is plenty).
const CAS_ATTEMPTS: usize = 16;

/// How long a listing waits for the next record before taking the ones it has.
const LIST_IDLE: Duration = Duration::from_secs(5);

/// Where job records and idempotency keys live; cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    jobs: kv::Store,
    idempotency: kv::Store,
    js: async_nats::jetstream::Context,
    /// An idempotency key naming no job whose claim has not been renewed for this long (as
    /// this process's own clock measures it) is taken over.
    key_orphan_after: Duration,
    /// Keys naming no job, as first seen by this process: their revision then, and when.
    unfinished_keys: Arc<Mutex<HashMap<String, (u64, Instant)>>>,
}

/// Keeps an idempotency key claimed while its job is being created (a large input can take a
/// while to store): the key is rewritten every third of the orphan window, so a submit that
/// finds the key without a job sees its revision move and does not take it over. Stops when
/// dropped.
#[must_use = "the claim is renewed only while this is held"]
pub struct KeyHold {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KeyHold {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").finish_non_exhaustive()
    }
}

/// What the ledger says of one task (see [`Ledger::task_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    /// The job ended or is unknown: drop the task.
    JobOver,
    /// The partition's result for this stage is recorded already: drop the task.
    AlreadyDone,
    /// Do the work.
    Pending,
}

/// One step of [`Ledger::changes`].
#[derive(Debug, Clone)]
pub enum LedgerChange {
    /// A job record, new or changed.
    Record(Box<JobRecord>),
    /// A record deleted or purged.
    Removed(String),
    /// Every record that existed when the watch began has been delivered.
    CaughtUp,
}

/// What claiming an idempotency key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyClaim {
    /// The key is new and now names the given job.
    Claimed,
    /// The key already names this job.
    Existing(String),
}

fn undecodable(id: &str) -> impl FnOnce(wire::DecodeError) -> BusError + '_ {
    move |e| BusError::Undecodable { what: format!("job record {id}"), reason: e.to_string() }
}

impl Ledger {
    pub(crate) fn new(
        jobs: kv::Store,
        idempotency: kv::Store,
        js: async_nats::jetstream::Context,
        key_orphan_after: Duration,
    ) -> Self {
        Ledger { jobs, idempotency, js, key_orphan_after, unfinished_keys: Arc::default() }
    }

    /// Store a new job; fails if the id exists.
    pub async fn create(&self, record: &JobRecord) -> Result<(), BusError> {
        self.jobs
            .create(&record.id, wire::encode(record).into())
            .await
            .map_err(nats_err(format!("creating job {}", record.id)))?;
        Ok(())
    }

    async fn entry(&self, id: &str) -> Result<Option<(JobRecord, u64)>, BusError> {
        let entry = self.jobs.entry(id).await.map_err(nats_err(format!("reading job {id}")))?;
        match entry {
            Some(e) if e.operation == Operation::Put => {
                let record = wire::decode(&e.value).map_err(undecodable(id))?;
                Ok(Some((record, e.revision)))
            }
            _ => Ok(None),
        }
    }

    pub async fn get(&self, id: &str) -> Result<Option<JobRecord>, BusError> {
        Ok(self.entry(id).await?.map(|(r, _)| r))
    }

    /// Whether a worker should still work on `id`: the job exists and has not ended. A record
    /// that cannot be decoded counts as not live (nothing could finish it).
    pub async fn is_live(&self, id: &str) -> Result<bool, BusError> {
        match self.get(id).await {
            Ok(record) => Ok(record.is_some_and(|r| !r.state.is_terminal())),
            Err(BusError::Undecodable { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether partition `partition` of job `id` still needs `stage`: the job is live and
    /// the ledger does not show that stage's result for the partition yet (a task redelivered
    /// after its worker reported the result but died before acking it).
    pub async fn task_status(&self, id: &str, partition: u32, stage: Stage) -> Result<TaskStatus, BusError> {
        let record = match self.get(id).await {
            Ok(Some(record)) if !record.state.is_terminal() => record,
            Ok(_) | Err(BusError::Undecodable { .. }) => return Ok(TaskStatus::JobOver),
            Err(e) => return Err(e),
        };
        let done = record.partitions.get(partition as usize).is_some_and(|p| match stage {
            Stage::Synthesis => p.synthesized,
            Stage::Proving => p.proof_hex.is_some(),
        });
        Ok(if done { TaskStatus::AlreadyDone } else { TaskStatus::Pending })
    }

    /// The job idempotency key `key` names, if any (read only: nothing is claimed).
    pub async fn key_job(&self, key: &str) -> Result<Option<String>, BusError> {
        let entry = self.idempotency.entry(key).await.map_err(nats_err("reading an idempotency key"))?;
        Ok(entry.filter(|e| e.operation == Operation::Put).map(|e| String::from_utf8_lossy(&e.value).into_owned()))
    }

    /// Point idempotency key `key` at job `id` unless it already points somewhere.
    pub async fn claim_key(&self, key: &str, id: &str) -> Result<KeyClaim, BusError> {
        match self.idempotency.create(key, id.to_owned().into()).await {
            Ok(_) => Ok(KeyClaim::Claimed),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                let entry = self.idempotency.entry(key).await.map_err(nats_err("reading an idempotency key"))?;
                let Some(entry) = entry.filter(|e| e.operation == Operation::Put) else {
                    // deleted between our create and read: a concurrent claim is in progress
                    return Err(BusError::Conflict("idempotency key is being reused concurrently; retry".into()));
                };
                let existing = String::from_utf8_lossy(&entry.value).into_owned();
                if self.get(&existing).await?.is_some() {
                    return Ok(KeyClaim::Existing(existing));
                }
                // The key names no job: its job is still being created (the claimer renews the
                // key meanwhile, see `hold_key`), or the submit that claimed it stopped before
                // writing the job. Without comparing clocks: the first time this process sees the
                // key so, it notes the key's revision; once that revision has stood for the
                // orphan window by this process's own clock, the claim is dead and is taken over
                // (compare-and-set on that revision). Until then the caller says "retry".
                if !self.claim_abandoned(key, entry.revision) {
                    return Ok(KeyClaim::Existing(existing));
                }
                match self.idempotency.update(key, id.to_owned().into(), entry.revision).await {
                    Ok(_) => {
                        self.unfinished_keys.lock().expect("keys lock").remove(key);
                        Ok(KeyClaim::Claimed)
                    }
                    Err(_) => Err(BusError::Conflict("idempotency key is being reused concurrently; retry".into())),
                }
            }
            Err(e) => Err(nats_err("claiming an idempotency key")(e)),
        }
    }

    /// Whether key `key`, naming no job at `revision`, has stood unrenewed for the orphan window
    /// as this process has watched it.
    fn claim_abandoned(&self, key: &str, revision: u64) -> bool {
        let mut seen = self.unfinished_keys.lock().expect("keys lock");
        let window = self.key_orphan_after;
        // forget keys not asked about for a while (their jobs appeared, or nobody retried)
        if seen.len() > 1024 {
            seen.retain(|_, (_, at)| at.elapsed() < window * 4);
        }
        match seen.get(key) {
            Some(&(r, at)) if r == revision => at.elapsed() >= window,
            _ => {
                seen.insert(key.to_owned(), (revision, Instant::now()));
                false
            }
        }
    }

    /// Renew the claim of `key` (naming job `id`) until the returned hold drops: call it once the
    /// key is claimed and keep it until the job record exists.
    pub fn hold_key(&self, key: &str, id: &str) -> KeyHold {
        let (store, key, id) = (self.idempotency.clone(), key.to_owned(), id.to_owned());
        let every = (self.key_orphan_after / 3).max(Duration::from_millis(100));
        let task = tokio::spawn(async move {
            // A failed read or renewal (the broker restarting, a timeout) is tried again next
            // round, not given up: a key left to expire lets a retry start a second job. It
            // ends only when the key no longer names this job, and says so.
            loop {
                tokio::time::sleep(every).await;
                let entry = match store.entry(&key).await {
                    Ok(Some(entry)) => entry,
                    Ok(None) => {
                        tracing::warn!(key = %key, job_id = %id, "the idempotency key this submit holds is gone; a retry may start another job");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(key = %key, job_id = %id, error = %e, "reading an idempotency key to renew it failed; trying again");
                        continue;
                    }
                };
                if entry.operation != Operation::Put || entry.value.as_ref() != id.as_bytes() {
                    tracing::warn!(key = %key, job_id = %id, "the idempotency key this submit held names another job now");
                    return;
                }
                if let Err(e) = store.update(&key, id.clone().into(), entry.revision).await {
                    tracing::warn!(key = %key, job_id = %id, error = %e, "renewing an idempotency key failed; trying again");
                }
            }
        });
        KeyHold { task }
    }

    /// Point idempotency key `key`, which names job `from`, at job `to` instead (a failed or
    /// cancelled job's key taken over by a new job). `false` if the key no longer names `from`
    /// (another submit took it over first).
    pub async fn retake_key(&self, key: &str, from: &str, to: &str) -> Result<bool, BusError> {
        let entry = self.idempotency.entry(key).await.map_err(nats_err("reading an idempotency key"))?;
        let Some(entry) = entry.filter(|e| e.operation == Operation::Put && e.value.as_ref() == from.as_bytes()) else {
            return Ok(false);
        };
        Ok(self.idempotency.update(key, to.to_owned().into(), entry.revision).await.is_ok())
    }

    /// The job's record once it has ended, or as it is when `timeout` (if any) has passed;
    /// `None` if there is no such job. Woken by the record's changes (a KV watch), and
    /// re-read every few seconds in case a change was missed across a reconnect.
    pub async fn wait_finished(&self, id: &str, timeout: Option<Duration>) -> Result<Option<JobRecord>, BusError> {
        const REREAD: Duration = Duration::from_secs(5);
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut changes = self.jobs.watch(id).await.map_err(nats_err(format!("watching job {id}")))?;
        loop {
            let Some(record) = self.get(id).await? else {
                return Ok(None);
            };
            let now = tokio::time::Instant::now();
            if record.state.is_terminal() || deadline.is_some_and(|d| now >= d) {
                return Ok(Some(record));
            }
            let until = deadline.map_or(now + REREAD, |d| d.min(now + REREAD));
            if let Ok(None) = tokio::time::timeout_at(until, changes.next()).await {
                // the watch ended (connection lost): read again after a pause, then watch anew
                tokio::time::sleep_until(until).await;
                changes = self.jobs.watch(id).await.map_err(nats_err(format!("watching job {id}")))?;
            }
        }
    }

    /// How long records stay after their last change, as the bucket has it.
    pub async fn retention(&self) -> Result<Duration, BusError> {
        let mut stream =
            self.js.get_stream(format!("KV_{}", wire::JOBS_BUCKET)).await.map_err(nats_err("opening the ledger"))?;
        Ok(stream.info().await.map_err(nats_err("reading the ledger's settings"))?.config.max_age)
    }

    /// Bytes the ledger holds now, and its limit (`None`: as large as the server allows).
    pub async fn usage(&self) -> Result<(u64, Option<u64>), BusError> {
        let mut stream =
            self.js.get_stream(format!("KV_{}", wire::JOBS_BUCKET)).await.map_err(nats_err("opening the ledger"))?;
        let info = stream.info().await.map_err(nats_err("reading the ledger's size"))?;
        Ok((info.state.bytes, u64::try_from(info.config.max_bytes).ok().filter(|b| *b > 0)))
    }

    /// Apply `change` with compare-and-set. `change` returns whether it changed anything;
    /// returns the record after the change (`None` if the job does not exist).
    pub async fn update<F>(&self, id: &str, mut change: F) -> Result<Option<JobRecord>, BusError>
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
            record.updated_at_ms = crate::now_ms();
            match self.jobs.update(id, wire::encode(&record).into(), revision).await {
                Ok(_) => return Ok(Some(record)),
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(e) => return Err(nats_err(format!("updating job {id}"))(e)),
            }
        }
        Err(BusError::Conflict(format!("job {id}: too many concurrent updates")))
    }

    /// Every record as it is now, then every change as it happens: an ordered consumer over the
    /// bucket's last value per key. [`LedgerChange::CaughtUp`] marks the end of the records
    /// that existed when it started. The stream ends when the connection breaks (start over).
    pub async fn changes(&self) -> Result<impl futures::Stream<Item = LedgerChange> + Unpin + use<>, BusError> {
        let stored = self.stored_records().await?;
        let watch = self.jobs.watch_with_history(">").await.map_err(nats_err("watching the ledger"))?;
        let first = futures::stream::iter((stored == 0).then_some(LedgerChange::CaughtUp));
        let mut caught_up = stored == 0;
        let changes = watch
            .take_while(|entry| futures::future::ready(entry.is_ok()))
            .filter_map(move |entry| {
                let entry = entry.expect("errors end the stream above");
                let mut out = Vec::with_capacity(2);
                if entry.operation == Operation::Put {
                    match wire::decode::<JobRecord>(&entry.value) {
                        Ok(record) => out.push(LedgerChange::Record(Box::new(record))),
                        Err(e) => tracing::warn!(job_id = %entry.key, error = %e, "undecodable job record left out of the index"),
                    }
                } else {
                    out.push(LedgerChange::Removed(entry.key.clone()));
                }
                if !caught_up && entry.delta == 0 {
                    caught_up = true;
                    out.push(LedgerChange::CaughtUp);
                }
                futures::future::ready(Some(futures::stream::iter(out)))
            })
            .flatten();
        Ok(Box::pin(first.chain(changes)))
    }

    async fn stored_records(&self) -> Result<u64, BusError> {
        let stream = format!("KV_{}", wire::JOBS_BUCKET);
        Ok(self
            .js
            .get_stream(&stream)
            .await
            .map_err(nats_err("reading the ledger's size"))?
            .info()
            .await
            .map_err(nats_err("reading the ledger's size"))?
            .state
            .messages)
    }

    /// Jobs, newest first, optionally of one state: one pass over the bucket's latest values
    /// (an ordered consumer delivering the last record per key), not a read per key.
    pub async fn list(&self, state: Option<JobState>, limit: usize) -> Result<Vec<JobRecord>, BusError> {
        self.list_where(|r| state.is_none_or(|s| r.state == s), limit).await
    }

    /// Jobs that `keep` accepts, newest first, at most `limit`.
    pub async fn list_where(
        &self,
        keep: impl Fn(&JobRecord) -> bool,
        limit: usize,
    ) -> Result<Vec<JobRecord>, BusError> {
        let stored = self.stored_records().await?;
        if stored == 0 {
            return Ok(Vec::new());
        }
        // by key: a record updated during the pass arrives again, newer (the later one wins)
        let mut latest_by_key: std::collections::HashMap<String, JobRecord> = Default::default();
        let mut latest = self.jobs.watch_with_history(">").await.map_err(nats_err("listing jobs"))?;
        loop {
            // the last pending entry says delta 0; the timeout only ends a pass whose records
            // all expired between the count above and the watch
            let entry = match tokio::time::timeout(LIST_IDLE, latest.next()).await {
                Ok(Some(entry)) => entry.map_err(nats_err("listing jobs"))?,
                Ok(None) | Err(_) => break,
            };
            if entry.operation == Operation::Put {
                let record: JobRecord = wire::decode(&entry.value).map_err(undecodable(&entry.key))?;
                latest_by_key.insert(entry.key, record);
            } else {
                latest_by_key.remove(&entry.key);
            }
            if entry.delta == 0 {
                break;
            }
        }
        let mut records: Vec<JobRecord> = latest_by_key.into_values().filter(|r| keep(r)).collect();
        records.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then_with(|| a.id.cmp(&b.id)));
        records.truncate(limit);
        Ok(records)
    }
}
