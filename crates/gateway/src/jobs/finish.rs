//! A job becoming terminal: the assembled proof verified before `done`, failing a job, and
//! deleting what is left of it in the object store.

use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;
use snarkflow_bus::{Bus, Ledger};
use snarkflow_wire::{self as wire, JobRecord, JobState};
use tracing::{info, info_span, warn};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::metrics::Metrics;

/// A verification's outcome: the job's record after it, and whether the verdict ended the job
/// (false when something else ended it meanwhile: a cancel, its deadline).
pub(crate) struct Verified {
    pub record: JobRecord,
    pub ended_now: bool,
}

/// All partitions of a job its kind verifies whole are proved: check the assembled proof (for
/// the Filecoin kinds with filecoin-proofs' verifiers), then mark the job done — or failed,
/// naming the partitions whose proofs did not verify. A wrong proof is never reported as done,
/// and a job that ended while it was verified keeps that end.
pub(crate) async fn verify_and_finish(
    bus: &Bus,
    ledger: &Ledger,
    params_dir: &Path,
    record: &JobRecord,
    started: Instant,
    at_ms: u64,
) -> anyhow::Result<Verified> {
    let verdict = {
        let fetched = match &record.input {
            None => None,
            Some(input) => Some(
                bus.get_object(&input.object, &input.sha256_hex)
                    .await
                    .with_context(|| format!("fetching the input of job {}", record.id))?,
            ),
        };
        {
            let proofs = record
                .partitions
                .iter()
                .map(|p| hex::decode(p.proof_hex.as_deref().unwrap_or_default()).unwrap_or_default())
                .collect::<Vec<_>>();
            let (spec, seed, dir) = (record.circuit.clone(), record.seed, params_dir.to_owned());
            let span = info_span!("verify", job_id = %record.id, verifier = "filecoin-proofs", worker = "gateway");
            tokio::task::spawn_blocking(move || {
                let _enter = span.enter();
                let input = match fetched {
                    Some(f) => Some(
                        snarkflow_circuits::JobInput::from_bytes(spec.kind(), &f.data).map_err(|e| e.to_string())?,
                    ),
                    None => None,
                };
                let verdict = snarkflow_circuits::verify_job(&spec, seed, input.as_ref(), &dir, &proofs)
                    .unwrap_or_else(|| {
                        Err(snarkflow_circuits::VerifyFailure::whole("this kind is not verified whole"))
                    });
                verdict.map_err(|e| {
                    if e.partitions.is_empty() {
                        format!("the assembled proof failed verification: {e}")
                    } else {
                        format!("the assembled proof failed verification: {e} (partitions {:?})", e.partitions)
                    }
                })
            })
            .await
            .context("verification panicked")?
        }
    };
    if let Err(reason) = &verdict {
        warn!(job_id = %record.id, %reason, "proof rejected");
        tracing::Span::current().set_status(opentelemetry::trace::Status::error(reason.clone()));
    }
    let mut ended_now = false;
    let updated = ledger
        .update(&record.id, |r| {
            if r.state.is_terminal() {
                ended_now = false;
                return false;
            }
            ended_now = true;
            match &verdict {
                Ok(()) => {
                    r.state = JobState::Done;
                    r.assemble_s = Some(started.elapsed().as_secs_f64());
                }
                Err(reason) => {
                    r.state = JobState::Failed;
                    r.error = Some(reason.clone());
                }
            }
            r.finished_at_ms = Some(at_ms);
            true
        })
        .await?;
    Ok(Verified { record: updated.unwrap_or_else(|| record.clone()), ended_now })
}

/// A job just became terminal: count it, say so, and delete what of it is left in the object
/// store (partitions no prover will fetch any more, and its input).
pub(crate) async fn finished(bus: &Bus, metrics: &Metrics, record: &JobRecord) {
    metrics.job_finished(record);
    info!(job_id = %record.id, state = record.state.as_str(), error = record.error.as_deref().unwrap_or(""), "job finished");
    if record.state != JobState::Done {
        cleanup_partitions(bus, record).await;
    }
    if let Some(input) = &record.input {
        if let Err(e) = bus.delete_object(&input.object).await {
            warn!(job_id = %record.id, error = %e, "could not delete the job input");
        }
    }
}

/// Fail a job that is not finished yet, with `reason`; false when it already was.
pub(crate) async fn fail_job(
    bus: &Bus,
    ledger: &Ledger,
    metrics: &Metrics,
    id: &str,
    reason: &str,
) -> anyhow::Result<bool> {
    let mut failed_now = false;
    let record = ledger
        .update(id, |r| {
            if r.state.is_terminal() {
                return false;
            }
            r.state = JobState::Failed;
            r.error = Some(reason.to_owned());
            r.finished_at_ms = Some(snarkflow_bus::now_ms());
            failed_now = true;
            true
        })
        .await?;
    if let (true, Some(record)) = (failed_now, record) {
        finished(bus, metrics, &record).await;
    }
    Ok(failed_now)
}

/// Remove partitions of a finished job that no prover will fetch any more.
pub(crate) async fn cleanup_partitions(bus: &Bus, record: &JobRecord) {
    for (i, p) in record.partitions.iter().enumerate() {
        if p.proof_hex.is_none() {
            if let Err(e) = bus.delete_object(&wire::partition_object(&record.id, i as u32)).await {
                warn!(job_id = %record.id, partition = i, error = %e, "could not delete partition object");
            }
        }
    }
}
