//! Handling one synthesized partition.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::Span as _;
use opentelemetry::KeyValue;
use prometheus::{CounterVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry};
use snarkflow_bus::{extract_context, now_ms, AckKind, Bus, BusError, Lanes, Message, TaskRef};
use snarkflow_prover::{ParamStore, ParamsError};
use snarkflow_synthesis::{decode_compact, SynthesizedPartition};
use snarkflow_wire::PartitionEncoding;

use crate::shapes::ShapeStore;
use snarkflow_wire::{self as wire, JobEvent, JobEventBody, ProveStats, ProveTask, Stage};
use tokio_util::sync::CancellationToken;
use tracing::{info, info_span, warn, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Whether this build proves on a GPU (where a wrong proof may be the device's fault).
const DEVICE_BUILD: bool = cfg!(any(feature = "cuda", feature = "cuda-supraseal"));

/// A stage span carrying the attributes every span of a partition has.
macro_rules! stage_span {
    ($name:literal, $task:expr, $worker:expr $(, $($extra:tt)*)?) => {
        info_span!(
            $name,
            job_id = %$task.job_id,
            job.kind = $task.circuit.kind().as_str(),
            partition = i64::from($task.partition),
            partitions = i64::from($task.partitions),
            worker = %$worker,
            host = %snarkflow_telemetry::host_name(),
            $($($extra)*)?
        )
    };
}

#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    seconds: HistogramVec,
    busy: CounterVec,
    pub in_flight: IntGauge,
    bytes: IntCounter,
    outcomes: IntCounterVec,
    /// 1 for every circuit id whose parameters this worker holds in memory.
    pub params_loaded: prometheus::IntGaugeVec,
    /// 1, labelled with the backend and the device(s) the probe found.
    pub device_info: prometheus::IntGaugeVec,
    /// Device errors while proving (each takes the worker out until a probe passes).
    pub device_errors: IntCounter,
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let seconds = HistogramVec::new(
            HistogramOpts::new("snarkflow_prove_stage_seconds", "gpu-worker stage durations")
                .buckets(prometheus::exponential_buckets(0.005, 2.5, 14).expect("buckets")),
            &["stage"],
        )
        .expect("metric");
        let busy = CounterVec::new(
            Opts::new("snarkflow_gpu_busy_seconds_total", "seconds the device spent proving"),
            &["device", "worker"],
        )
        .expect("metric");
        let in_flight =
            IntGauge::new("snarkflow_prove_in_flight", "partitions being proved by this worker").expect("metric");
        registry.register(Box::new(in_flight.clone())).expect("unique");
        let bytes = IntCounter::new("snarkflow_prove_fetched_bytes_total", "partition bytes fetched").expect("metric");
        let outcomes = IntCounterVec::new(
            Opts::new("snarkflow_prove_partitions_total", "partitions handled by outcome"),
            &["outcome"],
        )
        .expect("metric");
        registry.register(Box::new(seconds.clone())).expect("unique");
        registry.register(Box::new(busy.clone())).expect("unique");
        registry.register(Box::new(bytes.clone())).expect("unique");
        registry.register(Box::new(outcomes.clone())).expect("unique");
        let params_loaded = prometheus::IntGaugeVec::new(
            Opts::new("snarkflow_params_loaded", "Groth16 parameters resident in this worker, by circuit id"),
            &["circuit_id"],
        )
        .expect("metric");
        registry.register(Box::new(params_loaded.clone())).expect("unique");
        let device_info = prometheus::IntGaugeVec::new(
            Opts::new("snarkflow_gpu_device_info", "the proving backend and device(s) of this worker"),
            &["backend", "device", "name"],
        )
        .expect("metric");
        registry.register(Box::new(device_info.clone())).expect("unique");
        let device_errors = IntCounter::new(
            "snarkflow_gpu_device_errors_total",
            "device errors while proving; each triggers a probe before more work is taken",
        )
        .expect("metric");
        registry.register(Box::new(device_errors.clone())).expect("unique");
        Metrics { registry, seconds, busy, in_flight, bytes, outcomes, params_loaded, device_info, device_errors }
    }
}

enum Failure {
    Permanent(String),
    Transient(String),
    /// The device failed: retried elsewhere (or here after the device passes a probe).
    Device(String),
}

impl From<BusError> for Failure {
    fn from(e: BusError) -> Self {
        Failure::Transient(e.to_string())
    }
}

pub struct Worker {
    /// Held while a partition is on the device: slots overlap their CPU-side work (fetch,
    /// decode, rebuild) but never share the GPU.
    pub device: Arc<std::sync::Mutex<()>>,
    /// `cpu` or `cuda:<ordinals>`, and the device names, for spans and metrics.
    pub device_label: String,
    pub device_name: String,
    /// Set by a device error; the worker takes no work until a probe passes.
    pub device_failed: Arc<std::sync::atomic::AtomicBool>,
    /// Threads for rebuilding a, b, c: kept apart from the prover's own CPU work
    /// (supraseal prepares MSMs and does the B-G2 MSM on the CPU while the GPU runs).
    pub rebuild_pool: Arc<rayon::ThreadPool>,
    pub bus: Bus,
    pub worker_id: String,
    pub params: Arc<ParamStore>,
    pub shapes: Arc<ShapeStore>,
    pub generate_missing_params: bool,
    pub metrics: Metrics,
}

/// Record the wait between the synth-worker's publish and this pickup as a span of its own
/// (the seed's CHAN_SEND → GPU_PICKUP), with the real start time.
fn record_queue_wait(parent: &opentelemetry::Context, task: &ProveTask, worker: &str) -> f64 {
    let published = UNIX_EPOCH + Duration::from_millis(task.published_at_ms);
    let now = SystemTime::now();
    let tracer = opentelemetry::global::tracer("snarkflow");
    let mut span = opentelemetry::trace::SpanBuilder::from_name("queue.wait")
        .with_start_time(published)
        .with_attributes([
            KeyValue::new("job_id", task.job_id.clone()),
            KeyValue::new("job.kind", task.circuit.kind().as_str()),
            KeyValue::new("partition", task.partition as i64),
            KeyValue::new("partitions", task.partitions as i64),
            KeyValue::new("worker", worker.to_owned()),
            KeyValue::new("host", snarkflow_telemetry::host_name()),
        ])
        .start_with_context(&tracer, parent);
    span.end_with_timestamp(now);
    now.duration_since(published).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

impl Worker {
    pub async fn handle(&self, lanes: &Lanes, msg: Message, abandon: &CancellationToken) {
        let task: ProveTask = match wire::decode(&msg.payload) {
            Ok(t) => t,
            Err(e) => {
                warn!(error = %e, subject = %msg.subject, "terminating undecodable prove task");
                let _ = msg.ack_with(AckKind::Term).await;
                return;
            }
        };
        let parent = extract_context(msg.headers.as_ref());
        let queue_wait_s = record_queue_wait(&parent, &task, &self.worker_id);
        let span = stage_span!(
            "gpu.handle",
            task,
            self.worker_id,
            otel.kind = "consumer",
            backend = snarkflow_prover::BACKEND,
            circuit_id = %task.circuit.circuit_id(),
            bytes = task.bytes
        );
        span.set_parent(parent);
        let _heartbeat = lanes.heartbeat(&msg);
        self.metrics.in_flight.inc();
        let outcome = tokio::select! {
            r = self.process(&task, queue_wait_s).instrument(span.clone()) => r,
            _ = abandon.cancelled() => Err(Failure::Transient("worker shutting down".into())),
        };
        self.metrics.in_flight.dec();
        let _enter = span.enter();
        let outcome = match outcome {
            Ok(outcome) => Ok(outcome),
            Err(Failure::Permanent(reason)) => Err(snarkflow_bus::Failure::Permanent(reason)),
            Err(Failure::Transient(reason)) => Err(snarkflow_bus::Failure::Transient(reason)),
            Err(Failure::Device(reason)) => {
                warn!(job_id = %task.job_id, partition = task.partition, %reason, "device error: probing the device before taking more work");
                self.device_failed.store(true, std::sync::atomic::Ordering::SeqCst);
                self.metrics.device_errors.inc();
                Err(snarkflow_bus::Failure::Transient(format!("device error on {}: {reason}", self.worker_id)))
            }
        };
        let task_ref = TaskRef {
            job_id: &task.job_id,
            partition: task.partition,
            stage: Stage::Proving,
            object: Some(&task.object),
        };
        let outcome = snarkflow_bus::settle(&self.bus, lanes, &msg, task_ref, outcome).await;
        self.metrics.outcomes.with_label_values(&[outcome]).inc();
    }

    async fn job_is_live(&self, id: &str) -> Result<bool, Failure> {
        match self.bus.jobs.get(id).await {
            Ok(Some(bytes)) => {
                Ok(wire::decode::<wire::JobRecord>(&bytes).map(|r| !r.state.is_terminal()).unwrap_or(false))
            }
            Ok(None) => Ok(false),
            Err(e) => Err(Failure::Transient(format!("reading job {id}: {e}"))),
        }
    }

    async fn process(&self, task: &ProveTask, queue_wait_s: f64) -> Result<&'static str, Failure> {
        if !self.job_is_live(&task.job_id).await? {
            info!(job_id = %task.job_id, partition = task.partition, "job finished or unknown; dropping partition");
            self.bus.delete_partition(&task.object).await?;
            return Ok("skipped");
        }
        let event = JobEvent::new(
            &task.job_id,
            task.partition,
            now_ms(),
            JobEventBody::ProvingStarted { worker: self.worker_id.clone() },
        );
        self.bus.publish(wire::events_subject(&task.job_id), wire::encode(&event), None).await?;

        let fetched = match self
            .bus
            .get_partition(&task.object, &task.sha256_hex)
            .instrument(stage_span!("fetch", task, self.worker_id, bytes = task.bytes, object = %task.object))
            .await
        {
            Ok(f) => f,
            // a corrupt or missing object cannot become valid by waiting
            Err(e @ (BusError::Corrupt { .. } | BusError::NotFound(_))) => {
                return Err(Failure::Permanent(e.to_string()))
            }
            Err(e) => return Err(e.into()),
        };
        let bytes_fetched = fetched.data.len() as u64;
        self.metrics.bytes.inc_by(bytes_fetched);

        let (params, generate, spec) = (self.params.clone(), self.generate_missing_params, task.circuit);
        let shapes = self.shapes.clone();
        let device = self.device.clone();
        let device_failed = self.device_failed.clone();
        let (device_label, device_name) = (self.device_label.clone(), self.device_name.clone());
        let rebuild_pool = self.rebuild_pool.clone();
        let expected_partition = task.partition;
        // Stage spans are made where each stage starts (a span's time runs from creation
        // to close), inside the worker's span.
        let parent = tracing::Span::current();
        let (span_task, worker_id) = (task.clone(), self.worker_id.clone());
        let result = tokio::task::spawn_blocking(move || {
            let _parent = parent.enter();
            let (task, worker_id) = (&span_task, &worker_id);
            let started = Instant::now();
            let (partition, deserialize_s, rebuild_s) = match task.encoding {
                PartitionEncoding::RawBincode => {
                    let partition = stage_span!("deserialize", task, worker_id, bytes = bytes_fetched)
                        .in_scope(|| SynthesizedPartition::decode(&fetched.data))
                        .map_err(|e| Failure::Permanent(format!("undecodable partition: {e}")))?;
                    (partition, started.elapsed().as_secs_f64(), 0.0)
                }
                PartitionEncoding::CompactWitness => {
                    let (witness, shape_hash) = stage_span!("deserialize", task, worker_id, bytes = bytes_fetched)
                        .in_scope(|| decode_compact(&fetched.data))
                        .map_err(|e| Failure::Permanent(format!("undecodable compact witness: {e}")))?;
                    let deserialize_s = started.elapsed().as_secs_f64();
                    let shape = shapes.get(&spec).map_err(Failure::Permanent)?;
                    if shape.hash != shape_hash {
                        return Err(Failure::Permanent(format!(
                            "witness was made for shape {} but this prover's {} shape is {}",
                            hex::encode(shape_hash),
                            spec.circuit_id(),
                            shape.hash_hex()
                        )));
                    }
                    let started = Instant::now();
                    let partition =
                        stage_span!("rebuild", task, worker_id, constraints = shape.num_constraints() as u64)
                            .in_scope(|| rebuild_pool.install(|| shape.rebuild(witness)))
                            .map_err(|e| Failure::Permanent(format!("rebuilding the partition: {e}")))?;
                    (partition, deserialize_s, started.elapsed().as_secs_f64())
                }
            };
            drop(fetched.data);
            if partition.circuit_id != spec.circuit_id() || partition.partition != expected_partition {
                return Err(Failure::Permanent(format!(
                    "object holds {} partition {}, task says {} partition {}",
                    partition.circuit_id,
                    partition.partition,
                    spec.circuit_id(),
                    expected_partition
                )));
            }
            let loaded = params.get(&spec, generate).map_err(|e| match e {
                ParamsError::Missing { .. } => Failure::Permanent(e.to_string()),
                other => Failure::Transient(other.to_string()),
            })?;
            let public_inputs = partition.public_inputs().to_vec();
            // one partition on the device at a time (the next one waits here, prepared)
            let _device = device.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            // a slot that was already waiting for work when the device failed must not use it
            if device_failed.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Failure::Transient("the device failed and is being probed again".into()));
            }
            let prove_span = stage_span!(
                "prove",
                task,
                worker_id,
                backend = snarkflow_prover::BACKEND,
                gpu.device = %device_label,
                gpu.name = %device_name,
                constraints = partition.num_constraints() as u64
            );
            let started = Instant::now();
            // supraseal-c2 reports a CUDA error by panicking: only a panic in here is the device's
            let proved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                prove_span.in_scope(|| loaded.prove(partition, &mut rand::rngs::OsRng))
            }));
            let proof = match proved {
                Ok(Ok(proof)) => proof,
                Ok(Err(e)) if e.is_device_error() => return Err(Failure::Device(e.to_string())),
                Ok(Err(e)) => return Err(Failure::Permanent(e.to_string())),
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("(no message)");
                    return Err(Failure::Device(format!("the prover panicked: {what}")));
                }
            };
            let prove_s = started.elapsed().as_secs_f64();
            drop(prove_span);
            let started = Instant::now();
            let valid = stage_span!("verify", task, worker_id)
                .in_scope(|| snarkflow_prover::verify(&loaded.pvk, &proof, &public_inputs));
            let verify_s = started.elapsed().as_secs_f64();
            if !valid {
                let reason = "proof failed verification against the verifying key";
                // on a GPU a wrong proof may be the device's fault: retry elsewhere and probe it
                // (a partition that can never verify fails once its deliveries run out)
                return Err(if DEVICE_BUILD {
                    Failure::Device(reason.into())
                } else {
                    Failure::Permanent(reason.into())
                });
            }
            let mut proof_bytes = Vec::with_capacity(wire::PARTITION_PROOF_BYTES);
            proof.write(&mut proof_bytes).expect("writing to a Vec cannot fail");
            Ok((proof_bytes, deserialize_s, rebuild_s, prove_s, verify_s))
        })
        .await
        .map_err(|e| Failure::Permanent(format!("preparing the partition panicked: {e}")))?;
        let (proof_bytes, deserialize_s, rebuild_s, prove_s, verify_s) = result?;

        let stats = ProveStats {
            worker: self.worker_id.clone(),
            backend: snarkflow_prover::BACKEND.to_owned(),
            queue_wait_s,
            fetch_s: fetched.seconds,
            deserialize_s,
            rebuild_s,
            prove_s,
            verify_s,
            bytes_fetched,
        };
        for (stage, v) in [
            ("queue_wait", queue_wait_s),
            ("fetch", fetched.seconds),
            ("deserialize", deserialize_s),
            ("rebuild", rebuild_s),
            ("prove", prove_s),
            ("verify", verify_s),
        ] {
            self.metrics.seconds.with_label_values(&[stage]).observe(v);
        }
        self.metrics.busy.with_label_values(&[&self.device_label, &self.worker_id]).inc_by(prove_s);
        info!(
            job_id = %task.job_id, partition = task.partition, bytes = bytes_fetched,
            queue_wait_s, fetch_s = fetched.seconds, deserialize_s, prove_s, verify_s, "partition proved and verified"
        );
        let event = JobEvent::new(
            &task.job_id,
            task.partition,
            now_ms(),
            JobEventBody::PartitionProved { proof_hex: hex::encode(&proof_bytes), stats },
        );
        self.bus.publish(wire::events_subject(&task.job_id), wire::encode(&event), None).await?;
        self.bus.delete_partition(&task.object).await?;
        Ok("proved")
    }
}
