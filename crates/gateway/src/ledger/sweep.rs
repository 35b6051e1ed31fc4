//! The ledger pass: every `--ledger-pass-secs`, from the gateway's index of the ledger (a read
//! of every record only while the index is not ready), it refreshes the queue-depth, jobs,
//! backlog (`backlog.rs`) and storage gauges and the tenants' in-flight counts, fails jobs past
//! their deadline, finishes fan-outs a stopped gateway left half done, and deletes objects of
//! finished jobs and, after a grace, objects of jobs that were never recorded. Any number of
//! gateways may run it; every change it makes to a record is a compare-and-set.

use std::time::{Duration, Instant};

use snarkflow_bus::{now_ms, Bus, Ledger};
use snarkflow_wire::{JobState, Stage, EVENTS_STREAM, PROVE_STREAM, SYNTH_STREAM};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::{JobSummary, LedgerIndex, LedgerRoom, Metrics, Quotas};

/// A record not marked enqueued this long after it was created lost its gateway mid fan-out
/// (a live submit finishes in milliseconds).
const FANOUT_GRACE: Duration = Duration::from_secs(30);

/// How often the ledger pass runs and how long it leaves an object whose job has no record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pass {
    pub every: Duration,
    pub orphan_grace: Duration,
    /// For the GPU-seconds backlog gauge.
    pub gpu_constraints_per_second: u64,
}

/// What the ledger pass reads and keeps current.
pub(crate) struct Parts {
    pub bus: Bus,
    pub ledger: Ledger,
    pub index: LedgerIndex,
    pub metrics: Metrics,
    pub quotas: Quotas,
    pub room: LedgerRoom,
}

/// Run the ledger pass every `pass.every` until `shutdown`.
pub(crate) async fn run(parts: Parts, pass: Pass, shutdown: CancellationToken) {
    let Parts { bus, ledger, index, metrics, quotas, room } = parts;
    loop {
        for (stage, stream) in [("synth", SYNTH_STREAM), ("prove", PROVE_STREAM), ("events", EVENTS_STREAM)] {
            if let Ok(depth) = bus.pending(stream).await {
                metrics.set_queue_depth(stage, depth);
            }
        }
        measure_queue_age(&bus, &metrics).await;
        let began = Instant::now();
        if let Ok(retention) = ledger.retention().await {
            index.prune(retention, now_ms());
        }
        match index.jobs(&ledger).await {
            Ok(jobs) => {
                quotas.refresh(began, &jobs);
                count_jobs(&metrics, &jobs);
                metrics.set_backlog(crate::ledger::backlog::Backlog::of(&jobs), pass.gpu_constraints_per_second);
                measure_room(&ledger, &room, &metrics, &jobs).await;
                match bus.object_store_usage().await {
                    Ok((used, limit)) => metrics.set_object_store_bytes(used, limit),
                    Err(e) => warn!(error = %e, "measuring the object store failed; the next pass retries"),
                }
                sweep(&bus, &ledger, &metrics, &jobs).await;
                collect_garbage(&bus, &ledger, &jobs, pass.orphan_grace).await;
            }
            Err(e) => warn!(error = %e, "reading the ledger failed; the next pass retries"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(pass.every) => {}
        }
    }
}

/// The ledger's size against its limit, and what the unfinished jobs may still write to it.
/// The oldest unsettled task's age on every lane of the work stages: a lane whose oldest task
/// keeps ageing has no worker taking it (the queue depth alone does not tell a busy lane from a
/// stuck one).
async fn measure_queue_age(bus: &Bus, metrics: &Metrics) {
    let now = now_ms();
    for stage in Stage::ALL {
        let name = match stage {
            Stage::Synthesis => "synth",
            Stage::Proving => "prove",
        };
        let Ok(lanes) = bus.stage_backlog(stage).await else { continue };
        for (lane, backlog) in lanes {
            let age = backlog.oldest_ms.map_or(0.0, |at| now.saturating_sub(at) as f64 / 1000.0);
            metrics.set_queue_oldest(name, lane.as_str(), age);
        }
    }
}

async fn measure_room(ledger: &Ledger, room: &LedgerRoom, metrics: &Metrics, jobs: &[JobSummary]) {
    match ledger.usage().await {
        Ok((used, limit)) => {
            let in_flight = jobs
                .iter()
                .filter(|j| !j.state.is_terminal())
                .map(|j| crate::ledger::room::allowance(j.partitions))
                .sum();
            room.measured(used, limit, in_flight);
            metrics.set_ledger_bytes(used, limit, in_flight);
        }
        Err(e) => warn!(error = %e, "measuring the ledger failed; the next pass retries"),
    }
}

fn count_jobs(metrics: &Metrics, records: &[JobSummary]) {
    let mut counts = std::collections::BTreeMap::new();
    for state in JobState::ALL {
        for &kind in snarkflow_circuits::KINDS {
            counts.insert((state.as_str(), kind), 0);
        }
    }
    for r in records {
        *counts.entry((r.state.as_str(), r.kind)).or_insert(0) += 1;
    }
    metrics.set_jobs(&counts);
}

/// Delete objects whose job is over or gone: object lifetimes follow their jobs, not a clock.
/// What a job's own clean-up missed (a delete that failed, a gateway that stopped first, a
/// partition stored after its job ended) goes here, and so does the input of a submit that
/// stored it and then failed to write its record (the client's retry made another job).
async fn collect_garbage(bus: &Bus, ledger: &Ledger, records: &[JobSummary], orphan_grace: Duration) {
    let objects = match bus.objects().await {
        Ok(objects) => objects,
        Err(e) => return warn!(error = %e, "listing objects failed; the next pass retries"),
    };
    // A pass can miss records (a listing cut short while NATS is unsteady) and a single read
    // can miss one too (a lagging replica answers), so an object goes when its record was seen
    // finished, or when its job has had no record for the whole grace: not in this pass's
    // list and not found by a read of its own, the object older than any submit can take.
    let finished: std::collections::HashSet<&str> =
        records.iter().filter(|r| r.state.is_terminal()).map(|r| r.id.as_str()).collect();
    let known: std::collections::HashSet<&str> = records.iter().map(|r| r.id.as_str()).collect();
    let now = now_ms();
    for (name, modified_ms) in objects {
        let job = name.split('/').next().unwrap_or_default();
        let why = if finished.contains(job) {
            "its job no longer needs it"
        } else if !known.contains(job)
            && Duration::from_millis(now.saturating_sub(modified_ms)) > orphan_grace
            && matches!(ledger.get(job).await, Ok(None))
        {
            "its job was never recorded"
        } else {
            continue;
        };
        match bus.delete_object(&name).await {
            Ok(()) => info!(object = %name, why, "deleted an object"),
            Err(e) => warn!(object = %name, error = %e, "deleting a leftover object failed; the next pass retries"),
        }
    }
    // an upload cut off half way: chunks no object owns, counted against the store's limit
    // until deleted (the stream's age limit is a week)
    let stray = match bus.stray_chunks().await {
        Ok(stray) => stray,
        Err(e) => return warn!(error = %e, "listing stray chunks failed; the next pass retries"),
    };
    for chunks in stray {
        if Duration::from_millis(now.saturating_sub(chunks.written_ms)) <= orphan_grace {
            continue;
        }
        match bus.delete_chunks(&chunks).await {
            Ok(()) => info!(subject = %chunks.subject, "deleted the chunks of an upload that never finished"),
            Err(e) => {
                warn!(subject = %chunks.subject, error = %e, "deleting stray chunks failed; the next pass retries")
            }
        }
    }
}

/// Fail overdue jobs; finish half-done fan-outs.
async fn sweep(bus: &Bus, ledger: &Ledger, metrics: &Metrics, records: &[JobSummary]) {
    let now = now_ms();
    for record in records.iter().filter(|r| !r.state.is_terminal()) {
        if let Some(deadline) = record.deadline_at_ms.filter(|d| now > *d) {
            let reason = format!(
                "missed its deadline of {} s after submission ({} of {} partitions proved, {})",
                deadline.saturating_sub(record.created_at_ms) / 1000,
                record.proved,
                record.partitions,
                record.state.as_str()
            );
            match crate::jobs::finish::fail_job(bus, ledger, metrics, &record.id, &reason).await {
                Ok(true) => warn!(job_id = %record.id, %reason, "job failed by the ledger pass"),
                Ok(false) => {}
                Err(e) => {
                    warn!(job_id = %record.id, error = format!("{e:#}"), "failing an overdue job failed; the next pass retries")
                }
            }
            continue;
        }
        let age = Duration::from_millis(now.saturating_sub(record.created_at_ms));
        if !record.enqueued && age > FANOUT_GRACE {
            // the whole record (the summary lacks what the tasks carry)
            let full = match ledger.get(&record.id).await {
                Ok(Some(full)) if !full.enqueued && !full.state.is_terminal() => full,
                Ok(_) => continue,
                Err(e) => {
                    warn!(job_id = %record.id, error = %e, "reading a half-queued job failed; the next pass retries");
                    continue;
                }
            };
            match crate::jobs::fanout::publish_tasks(bus, ledger, &full).await {
                Ok(()) => {
                    info!(job_id = %record.id, partitions = record.partitions, "finished a fan-out its gateway left half done")
                }
                Err(e) => warn!(job_id = %record.id, error = %e, "finishing a fan-out failed; the next pass retries"),
            }
        }
    }
}
