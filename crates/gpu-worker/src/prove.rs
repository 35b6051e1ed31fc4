//! The proving stage: one synthesized partition from task to verified, reported proof.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::Span as _;
use opentelemetry::KeyValue;
use prometheus::{CounterVec, IntCounter, IntGaugeVec, Opts};
use snarkflow_bus::BusError;
use snarkflow_circuits::KindError;
use snarkflow_prover::{LoadedParams, ParamStore, ParamsError};
use snarkflow_runtime::{partition_span, Failure, Outcome, TaskContext, TaskHandler, WorkerHost};
use snarkflow_wire::{self as wire, CircuitSpec, JobEvent, JobEventBody, ProveStats, ProveTask};
use tracing::{info, Instrument};

use crate::device::Device;
use crate::prepare::{prepare, Prepared, ProverInput, RebuildThreads};
use crate::shapes::ShapeStore;

/// Why a circuit could not be made ready to prove (a PreloadSRS).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    #[error(transparent)]
    Params(#[from] ParamsError),
    #[error("recording the constraint shape: {0}")]
    Shape(#[from] KindError),
}

/// Whether this process proves on a GPU (where a wrong proof may be the device's fault).
fn device_build() -> bool {
    snarkflow_prover::backend::active().is_device()
}

/// The proving stage; cheap to clone (a slot's blocking thread takes a clone).
#[derive(Clone)]
pub(crate) struct Proving {
    pub device: Arc<Device>,
    /// Threads for decoding and rebuilding a, b, c.
    pub rebuild: Arc<RebuildThreads>,
    pub params: Arc<ParamStore>,
    pub shapes: Arc<ShapeStore>,
    pub generate_missing_params: bool,
    metrics: ProveMetrics,
}

#[derive(Clone)]
struct ProveMetrics {
    busy: CounterVec,
    bytes: IntCounter,
    params_loaded: IntGaugeVec,
    memory_plan: IntGaugeVec,
}

/// A proof that verified, and what proving it cost.
struct Proved {
    proof: Vec<u8>,
    prove_s: f64,
    verify_s: f64,
}

impl Proving {
    pub(crate) fn new(
        host: &WorkerHost,
        device: Arc<Device>,
        rebuild_pool: rayon::ThreadPool,
        params: Arc<ParamStore>,
        shapes: Arc<ShapeStore>,
        generate_missing_params: bool,
    ) -> Self {
        let metrics = ProveMetrics {
            busy: host.register(
                CounterVec::new(
                    Opts::new("snarkflow_gpu_busy_seconds_total", "seconds the device spent proving"),
                    &["device", "worker"],
                )
                .expect("metric"),
            ),
            bytes: host.register(
                IntCounter::new("snarkflow_prove_fetched_bytes_total", "partition bytes fetched").expect("metric"),
            ),
            params_loaded: host.register(
                IntGaugeVec::new(
                    Opts::new("snarkflow_params_loaded", "Groth16 parameters resident in this worker, by circuit id"),
                    &["circuit_id"],
                )
                .expect("metric"),
            ),
            memory_plan: host.register(
                IntGaugeVec::new(
                    Opts::new(
                        "snarkflow_gpu_memory_plan",
                        "where the resident prover keeps a circuit's key on this worker: 3 resident, 2 partly \
                         resident, 1 streamed from host memory, 0 another prover (labels name the plan and prover)",
                    ),
                    &["circuit_id", "plan", "prover"],
                )
                .expect("metric"),
            ),
        };
        let proving = Proving {
            device,
            rebuild: Arc::new(RebuildThreads::new(rebuild_pool)),
            params,
            shapes,
            generate_missing_params,
            metrics,
        };
        proving.mark_loaded_params();
        proving
    }

    fn mark_loaded_params(&self) {
        for key in self.params.loaded_all() {
            self.metrics.params_loaded.with_label_values(&[&key.circuit_id]).set(1);
            let plan = key.memory_plan();
            self.metrics
                .memory_plan
                .with_label_values(&[
                    key.circuit_id.as_str(),
                    plan.as_ref().map_or("none", |p| p.kind.name()),
                    key.prover().name(),
                ])
                .set(plan.as_ref().map_or(0, |p| p.kind.level()));
        }
    }

    fn loaded_params(&self, task: &ProveTask) -> Result<Arc<LoadedParams>, Failure> {
        // a missing file is the operator's to fetch, not the job's fault: another worker may
        // have it, and the last delivery fails the job with the command that fixes it
        let loaded = self
            .params
            .get(&task.circuit, self.generate_missing_params)
            .map_err(|e| Failure::Transient(e.to_string()))?;
        self.mark_loaded_params();
        Ok(loaded)
    }

    /// Load `spec`'s parameters and constraint shape (a PreloadSRS from the gateway).
    pub(crate) fn load(&self, spec: &CircuitSpec) -> Result<(), LoadError> {
        let loaded = self.params.get(spec, self.generate_missing_params)?;
        if !loaded.takes_witness() {
            self.shapes.get(spec)?;
        }
        self.mark_loaded_params();
        Ok(())
    }

    /// Drop `spec`'s parameters (an EvictSRS); proofs in flight keep theirs until they end.
    pub(crate) fn evict(&self, spec: &CircuitSpec) -> bool {
        let was = self.params.evict(spec);
        self.metrics.params_loaded.with_label_values(&[&spec.circuit_id()]).set(0);
        was
    }

    /// Prove on the device (holding it) and verify against the verifying key.
    fn prove(
        &self,
        task: &ProveTask,
        loaded: &LoadedParams,
        input: ProverInput,
        worker: &str,
        delivery: u64,
    ) -> Result<Proved, Failure> {
        let public_inputs = input.public_inputs().to_vec();
        let constraints = input.num_constraints(self.shapes.sizes(&task.circuit).map(|(c, _)| c as usize)) as u64;
        // one partition on the device at a time, or one per prove lane (the next one waits
        // here, prepared)
        let _device = self.device.acquire(
            task.priority,
            wire::CurrentProof { job_id: task.job_id.clone(), kind: task.circuit.kind(), partition: task.partition },
            loaded.lanes(),
        )?;
        let (label, name) = self.device.label_and_name();
        let span = partition_span!(
            "prove", task, worker, backend = snarkflow_prover::backend_name(), gpu.device = %label, gpu.name = %name, constraints
        );
        let started = Instant::now();
        // supraseal-c2 reports a CUDA error by panicking: only a panic in here is the device's
        let proved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            span.in_scope(|| match input {
                ProverInput::Partition(partition) => loaded.prove(partition, &mut rand::rngs::OsRng),
                ProverInput::Staged { staged, .. } => loaded.prove_staged(&staged, &mut rand::rngs::OsRng),
            })
        }));
        let proof = match proved {
            Ok(Ok(proof)) => proof,
            Ok(Err(e)) if e.is_device_error() => {
                return Err(self.device.fail(&task.job_id, task.partition, e.to_string()))
            }
            Ok(Err(e)) => return Err(Failure::Permanent(e.to_string())),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)");
                return Err(self.device.fail(&task.job_id, task.partition, format!("the prover panicked: {what}")));
            }
        };
        let prove_s = started.elapsed().as_secs_f64();
        drop(span);
        self.metrics.busy.with_label_values(&[&label, worker]).inc_by(prove_s);
        let started = Instant::now();
        let valid = partition_span!("verify", task, worker)
            .in_scope(|| snarkflow_prover::verify(&loaded.pvk, &proof, &public_inputs));
        let verify_s = started.elapsed().as_secs_f64();
        if !valid {
            return Err(verification_failed(&self.device, task, worker, delivery));
        }
        let mut bytes = Vec::with_capacity(wire::PARTITION_PROOF_BYTES);
        proof.write(&mut bytes).expect("writing to a Vec cannot fail");
        Ok(Proved { proof: bytes, prove_s, verify_s })
    }
}

/// What a proof that failed verification means. On the CPU backend the witness is wrong: no
/// retry can help. On a GPU it may be the device's fault, so the first delivery is handed back
/// (proved again elsewhere, or here once the device passes a probe) — but only once: a second
/// wrong proof of the same partition fails the job rather than spending every delivery. The
/// device is probed after any wrong proof.
fn verification_failed(device: &crate::device::Device, task: &ProveTask, worker: &str, delivery: u64) -> Failure {
    let reason = "proof failed verification against the verifying key";
    if !device_build() {
        return Failure::Permanent(reason.into());
    }
    let handed_back = device.fail(&task.job_id, task.partition, reason.into());
    if retry_wrong_proof(delivery) {
        handed_back
    } else {
        Failure::Permanent(format!(
            "{reason} on {worker}, on delivery {delivery} of the partition (a wrong proof is retried once)"
        ))
    }
}

/// Whether a wrong proof from a GPU on this delivery of its task is proved once more.
fn retry_wrong_proof(delivery: u64) -> bool {
    delivery <= 1
}

/// Record the wait between the synth-worker's publish and this pickup as a span of its own
/// (cuzk's CHAN_SEND → GPU_PICKUP in its timeline), with the real start time.
fn record_queue_wait(parent: &opentelemetry::Context, task: &ProveTask, worker: &str) -> f64 {
    let published = UNIX_EPOCH + Duration::from_millis(task.published_at_ms);
    let now = SystemTime::now();
    let tracer = opentelemetry::global::tracer("snarkflow");
    let mut span = opentelemetry::trace::SpanBuilder::from_name("queue.wait")
        .with_start_time(published)
        .with_attributes([
            KeyValue::new("job_id", task.job_id.clone()),
            KeyValue::new("job.kind", task.circuit.kind().to_string()),
            KeyValue::new("partition", task.partition as i64),
            KeyValue::new("partitions", task.partitions as i64),
            KeyValue::new("worker", worker.to_owned()),
            KeyValue::new("host", snarkflow_telemetry::host_name()),
        ])
        .start_with_context(&tracer, parent);
    span.end_with_timestamp(now);
    now.duration_since(published).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

impl TaskHandler for Proving {
    type Task = ProveTask;

    /// The payload, plus the rebuilt partition (a, b, c: three field elements per constraint;
    /// the assignments: one per variable; densities: bits); unknown until the circuit's shape
    /// is loaded. A key that holds the shape on the device needs only the decoded witness on the
    /// host (its pinned upload buffers are the key's, a fixed two).
    fn estimated_bytes(&self, task: &ProveTask) -> Option<u64> {
        const FR: u64 = 32;
        if let Some(variables) = self.params.loaded(&task.circuit).and_then(|l| l.witness_len()) {
            return Some(task.bytes + FR * variables as u64);
        }
        let (constraints, variables) = self.shapes.sizes(&task.circuit)?;
        // a raw payload is about one more partition: task.bytes says so either way
        Some(task.bytes + FR * (3 * constraints + variables) + 3 * variables / 8)
    }

    async fn before_pull(&self, stop: &tokio_util::sync::CancellationToken) -> Result<(), snarkflow_runtime::Fatal> {
        self.device.before_pull(stop).await
    }

    async fn process(&self, task: ProveTask, cx: TaskContext) -> Result<Outcome, Failure> {
        let handling = tracing::Span::current();
        handling.record("backend", snarkflow_prover::backend_name());
        handling.record("bytes", task.bytes);
        let queue_wait_s = record_queue_wait(&cx.parent, &task, &cx.host.id);
        let fetched = match cx
            .bus
            .get_object(&task.object, &task.sha256_hex)
            .instrument(partition_span!("fetch", task, cx.host.id, bytes = task.bytes, object = %task.object))
            .await
        {
            Ok(fetched) => fetched,
            Err(BusError::NotFound(_)) if cx.delivery > 1 => {
                // A redelivered partition whose object is gone: an earlier delivery proved it
                // (a prover deletes the object once its proof is published) or the job ended.
                // A failure reported now could reach the ledger before that proof and fail a
                // job the proof completes; a job whose object was truly lost ends at its
                // deadline instead.
                tracing::warn!(
                    job_id = %task.job_id, partition = task.partition, delivery = cx.delivery,
                    "partition object gone on a redelivery: proved by an earlier delivery, or the job ended"
                );
                return Ok("gone");
            }
            Err(e) => return Err(e.into()),
        };
        let bytes_fetched = fetched.data.len() as u64;
        self.metrics.bytes.inc_by(bytes_fetched);
        // step spans are made where each step starts, inside the handling span
        let (parent, worker, this, blocking_task, delivery) =
            (tracing::Span::current(), cx.host.id.clone(), self.clone(), task.clone(), cx.delivery);
        let (prepared, proved) = tokio::task::spawn_blocking(move || {
            let _parent = parent.enter();
            let loaded = this.loaded_params(&blocking_task)?;
            let prepared = prepare(&blocking_task, fetched.data, &this.shapes, &this.rebuild, &worker, &loaded)?;
            let Prepared { input, deserialize_s, rebuild_s } = prepared;
            let proved = this.prove(&blocking_task, &loaded, input, &worker, delivery)?;
            Ok::<_, Failure>(((deserialize_s, rebuild_s), proved))
        })
        .await
        .map_err(|e| Failure::Permanent(format!("preparing the partition panicked: {e}")))??;
        let stats = ProveStats {
            worker: cx.host.id.clone(),
            backend: snarkflow_prover::backend_name().to_owned(),
            queue_wait_s,
            fetch_s: fetched.seconds,
            deserialize_s: prepared.0,
            rebuild_s: prepared.1,
            prove_s: proved.prove_s,
            verify_s: proved.verify_s,
            bytes_fetched,
        };
        for (step, seconds) in [
            ("queue_wait", stats.queue_wait_s),
            ("fetch", stats.fetch_s),
            ("deserialize", stats.deserialize_s),
            ("rebuild", stats.rebuild_s),
            ("prove", stats.prove_s),
            ("verify", stats.verify_s),
        ] {
            cx.host.observe(step, seconds);
        }
        info!(
            job_id = %task.job_id, partition = task.partition, bytes = bytes_fetched, queue_wait_s,
            fetch_s = stats.fetch_s, deserialize_s = stats.deserialize_s, prove_s = stats.prove_s,
            verify_s = stats.verify_s, "partition proved and verified"
        );
        let body = JobEventBody::PartitionProved { proof_hex: hex::encode(&proved.proof), stats };
        let event = JobEvent::new(&task.job_id, task.partition, snarkflow_bus::now_ms(), body);
        cx.bus.publish(wire::events_subject(&task.job_id), wire::encode(&event), None).await?;
        // the proof is out: a failed delete must not prove the partition again (the gateway
        // removes what is left of a job when it ends)
        if let Err(e) = cx.bus.delete_object(&task.object).await {
            tracing::warn!(job_id = %task.job_id, partition = task.partition, error = %e, "could not delete the proved partition");
        }
        Ok("proved")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_gpu_proof_is_proved_once_more_then_fails_the_job() {
        assert!(retry_wrong_proof(1), "the first wrong proof is handed back");
        assert!(!retry_wrong_proof(2), "a second delivery's wrong proof fails the job");
        assert!(!retry_wrong_proof(5));
    }
}
