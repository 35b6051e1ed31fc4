//! Handling one synthesis task.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus::{HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry};
use snarkflow_bus::{extract_context, now_ms, AckKind, Bus, BusError, Failure, Lanes, Message, TaskRef};
use snarkflow_circuits::JobInput;
use snarkflow_synthesis::{encode_compact, RecordShape, Synthesize, SynthesizeWitness};
use snarkflow_wire::{
    self as wire, JobEvent, JobEventBody, JobRecord, PartitionEncoding, ProveTask, Stage, SynthStats, SynthTask,
    SCHEMA_VERSION,
};
use tokio_util::sync::CancellationToken;
use tracing::{info, info_span, warn, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

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

/// How long a transient failure waits before the task is offered again.

#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    seconds: HistogramVec,
    bytes: IntCounter,
    outcomes: IntCounterVec,
    in_flight: IntGauge,
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let seconds = HistogramVec::new(
            HistogramOpts::new("snarkflow_synth_stage_seconds", "synth-worker stage durations")
                .buckets(prometheus::exponential_buckets(0.005, 2.5, 14).expect("buckets")),
            &["stage"],
        )
        .expect("metric");
        let bytes =
            IntCounter::new("snarkflow_synth_bytes_total", "serialized partition bytes stored").expect("metric");
        let outcomes = IntCounterVec::new(
            Opts::new("snarkflow_synth_partitions_total", "partitions handled by outcome"),
            &["outcome"],
        )
        .expect("metric");
        let in_flight =
            IntGauge::new("snarkflow_synth_in_flight", "partitions being synthesized by this worker").expect("metric");
        registry.register(Box::new(in_flight.clone())).expect("unique");
        registry.register(Box::new(seconds.clone())).expect("unique");
        registry.register(Box::new(bytes.clone())).expect("unique");
        registry.register(Box::new(outcomes.clone())).expect("unique");
        Metrics { registry, seconds, bytes, outcomes, in_flight }
    }
}

/// Shape hash and constraint count of a circuit id.
pub type ShapeSummaries = Arc<Mutex<HashMap<String, ([u8; 32], u64)>>>;

/// Job inputs most recently used, by job id: a job's partitions (10 for a 32 GiB PoRep) mostly
/// land on the same workers, and a 32 GiB C1 output is ~51 MB to fetch and parse.
#[derive(Default)]
pub struct InputCache {
    recent: Mutex<Vec<(String, Arc<JobInput>)>>,
}

const INPUT_CACHE_ENTRIES: usize = 4;

impl InputCache {
    fn get(&self, job_id: &str) -> Option<Arc<JobInput>> {
        self.recent.lock().expect("input cache lock").iter().find(|(id, _)| id == job_id).map(|(_, i)| i.clone())
    }

    fn put(&self, job_id: &str, input: Arc<JobInput>) {
        let mut recent = self.recent.lock().expect("input cache lock");
        recent.retain(|(id, _)| id != job_id);
        recent.insert(0, (job_id.to_owned(), input));
        recent.truncate(INPUT_CACHE_ENTRIES);
    }
}

pub struct Worker {
    pub inputs: InputCache,
    pub bus: Bus,
    pub worker_id: String,
    pub metrics: Metrics,
    /// Ship the compact witness instead of the raw partition.
    pub compact: bool,
    /// Shape hash and constraint count per circuit id, recorded once (the compact payload
    /// names its shape).
    pub shape_hashes: ShapeSummaries,
}

impl Worker {
    pub async fn handle(&self, lanes: &Lanes, msg: Message, abandon: &CancellationToken) {
        let task: SynthTask = match wire::decode(&msg.payload) {
            Ok(t) => t,
            Err(e) => {
                warn!(error = %e, subject = %msg.subject, "terminating undecodable synthesis task");
                let _ = msg.ack_with(AckKind::Term).await;
                return;
            }
        };
        let span = stage_span!(
            "synth.handle",
            task,
            self.worker_id,
            otel.kind = "consumer",
            circuit_id = %task.circuit.circuit_id(),
            bytes = tracing::field::Empty
        );
        span.set_parent(extract_context(msg.headers.as_ref()));
        let _heartbeat = lanes.heartbeat(&msg);
        self.metrics.in_flight.inc();
        let outcome = tokio::select! {
            r = self.process(&task).instrument(span.clone()) => r,
            _ = abandon.cancelled() => Err(Failure::Transient("worker shutting down".into())),
        };
        self.metrics.in_flight.dec();
        let _enter = span.enter();
        let outcome = outcome.map(|synthesized| if synthesized { "synthesized" } else { "skipped" });
        let task_ref =
            TaskRef { job_id: &task.job_id, partition: task.partition, stage: Stage::Synthesis, object: None };
        let outcome = snarkflow_bus::settle(&self.bus, lanes, &msg, task_ref, outcome).await;
        self.metrics.outcomes.with_label_values(&[outcome]).inc();
    }

    async fn job(&self, id: &str) -> Result<Option<JobRecord>, Failure> {
        match self.bus.jobs.get(id).await {
            Ok(Some(bytes)) => {
                wire::decode(&bytes).map(Some).map_err(|e| Failure::Permanent(format!("job record: {e}")))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(Failure::Transient(format!("reading job {id}: {e}"))),
        }
    }

    async fn event(&self, task: &SynthTask, body: JobEventBody) -> Result<(), Failure> {
        let event = JobEvent::new(&task.job_id, task.partition, now_ms(), body);
        Ok(self.bus.publish(wire::events_subject(&task.job_id), wire::encode(&event), None).await?)
    }

    /// The job's input (Filecoin kinds), fetched once per job and digest-checked.
    async fn input(&self, task: &SynthTask) -> Result<Option<Arc<JobInput>>, Failure> {
        let Some(input_ref) = &task.input else {
            if task.circuit.kind().is_filecoin() {
                return Err(Failure::Permanent(format!(
                    "a {} task without its job input",
                    task.circuit.kind().as_str()
                )));
            }
            return Ok(None);
        };
        if let Some(input) = self.inputs.get(&task.job_id) {
            return Ok(Some(input));
        }
        let fetched = match self
            .bus
            .get_partition(&input_ref.object, &input_ref.sha256_hex)
            .instrument(stage_span!("input.fetch", task, self.worker_id, bytes = input_ref.bytes))
            .await
        {
            Ok(f) => f,
            Err(e @ (BusError::Corrupt { .. } | BusError::NotFound(_))) => {
                return Err(Failure::Permanent(format!("job input: {e}")))
            }
            Err(e) => return Err(e.into()),
        };
        let input = tokio::task::spawn_blocking(move || JobInput::from_json(&fetched.data))
            .await
            .map_err(|e| Failure::Permanent(format!("parsing the job input panicked: {e}")))?
            .map_err(|e| Failure::Permanent(e.to_string()))?;
        let input = Arc::new(input);
        self.inputs.put(&task.job_id, input.clone());
        Ok(Some(input))
    }

    /// Ok(true): synthesized and announced; Ok(false): job gone or finished, nothing to do.
    async fn process(&self, task: &SynthTask) -> Result<bool, Failure> {
        match self.job(&task.job_id).await? {
            Some(job) if !job.state.is_terminal() => {}
            Some(job) => {
                info!(job_id = %task.job_id, state = job.state.as_str(), "job already finished; skipping partition");
                return Ok(false);
            }
            None => {
                warn!(job_id = %task.job_id, "task for an unknown job; dropping it");
                return Ok(false);
            }
        }
        if task.partition >= task.partitions {
            return Err(Failure::Permanent(format!(
                "partition {} of {} does not exist",
                task.partition, task.partitions
            )));
        }
        self.event(task, JobEventBody::SynthesisStarted { worker: self.worker_id.clone() }).await?;
        let input = self.input(task).await?;

        let (circuit, seed, partition) = (task.circuit, task.seed, task.partition);
        // Stage spans are made where each stage starts (a span's time runs from creation
        // to close), inside the worker's span.
        let parent = tracing::Span::current();
        let (span_task, worker_id) = (task.clone(), self.worker_id.clone());
        let (compact, hashes) = (self.compact, self.shape_hashes.clone());
        let compute = tokio::task::spawn_blocking(move || {
            let _parent = parent.enter();
            let (task, worker_id) = (&span_task, &worker_id);
            let id = circuit.circuit_id();
            let input = input.as_deref();
            if compact {
                let known = hashes.lock().expect("shape hashes lock").get(&id).copied();
                let (shape_hash, constraints) = match known {
                    Some(known) => known,
                    None => {
                        let shape = stage_span!("shape.record", task, worker_id)
                            .in_scope(|| snarkflow_circuits::visit_blank(&circuit, RecordShape(&id)))
                            .map_err(|e| format!("building the circuit: {e}"))?
                            .map_err(|e| format!("recording the circuit shape: {e}"))?;
                        let known = (shape.hash, shape.num_constraints() as u64);
                        hashes.lock().expect("shape hashes lock").insert(id.clone(), known);
                        known
                    }
                };
                let synthesize_span = stage_span!("synthesize", task, worker_id, witness_only = true);
                let started = Instant::now();
                let witness = synthesize_span
                    .in_scope(|| {
                        snarkflow_circuits::visit_with_witness(
                            &circuit,
                            seed,
                            partition,
                            input,
                            SynthesizeWitness(&id, partition),
                        )
                    })
                    .map_err(|e| format!("building the circuit: {e}"))?
                    .map_err(|e| format!("synthesis error: {e}"))?;
                let synthesize_s = started.elapsed().as_secs_f64();
                drop(synthesize_span);
                let serialize_span = stage_span!(
                    "serialize",
                    task,
                    worker_id,
                    bytes = tracing::field::Empty,
                    encoding = "compact-witness"
                );
                let started = Instant::now();
                let encoded = serialize_span.in_scope(|| encode_compact(&witness, shape_hash));
                serialize_span.record("bytes", encoded.len() as u64);
                return Ok::<_, String>((
                    encoded,
                    synthesize_s,
                    started.elapsed().as_secs_f64(),
                    constraints,
                    PartitionEncoding::CompactWitness,
                ));
            }
            let synthesize_span = stage_span!("synthesize", task, worker_id, constraints = tracing::field::Empty);
            let started = Instant::now();
            let synthesized = synthesize_span
                .in_scope(|| {
                    snarkflow_circuits::visit_with_witness(&circuit, seed, partition, input, Synthesize(&id, partition))
                })
                .map_err(|e| format!("building the circuit: {e}"))?
                .map_err(|e| format!("synthesis error: {e}"))?;
            let synthesize_s = started.elapsed().as_secs_f64();
            let constraints = synthesized.num_constraints() as u64;
            synthesize_span.record("constraints", constraints);
            drop(synthesize_span);
            let serialize_span =
                stage_span!("serialize", task, worker_id, bytes = tracing::field::Empty, encoding = "raw-bincode");
            let started = Instant::now();
            let encoded = serialize_span.in_scope(|| synthesized.encode());
            serialize_span.record("bytes", encoded.len() as u64);
            Ok((encoded, synthesize_s, started.elapsed().as_secs_f64(), constraints, PartitionEncoding::RawBincode))
        });
        let (encoded, synthesize_s, serialize_s, constraints, encoding) = compute
            .await
            .map_err(|e| Failure::Permanent(format!("synthesis panicked: {e}")))?
            .map_err(Failure::Permanent)?;

        let object = wire::partition_object(&task.job_id, task.partition);
        let stored = self
            .bus
            .put_partition(&object, &encoded)
            .instrument(stage_span!("store", task, self.worker_id, bytes = encoded.len() as u64, object = %object))
            .await?;
        drop(encoded);
        tracing::Span::current().record("bytes", stored.bytes);

        let prove_task = ProveTask {
            schema: SCHEMA_VERSION,
            job_id: task.job_id.clone(),
            circuit: task.circuit,
            priority: task.priority,
            partition: task.partition,
            partitions: task.partitions,
            object,
            encoding,
            sha256_hex: stored.sha256_hex.clone(),
            bytes: stored.bytes,
            published_at_ms: now_ms(),
        };
        let msg_id = wire::partition_msg_id("prove", &task.job_id, task.partition);
        self.bus
            .publish(wire::prove_subject(task.priority), wire::encode(&prove_task), Some(&msg_id))
            .instrument(stage_span!("publish", task, self.worker_id, otel.kind = "producer", bytes = stored.bytes))
            .await?;
        let stats = SynthStats {
            worker: self.worker_id.clone(),
            constraints,
            synthesize_s,
            serialize_s,
            store_s: stored.seconds,
            bytes: stored.bytes,
            encoding: Some(match encoding {
                PartitionEncoding::RawBincode => "raw-bincode".into(),
                PartitionEncoding::CompactWitness => "compact-witness".into(),
            }),
        };
        self.metrics.seconds.with_label_values(&["synthesize"]).observe(synthesize_s);
        self.metrics.seconds.with_label_values(&["serialize"]).observe(serialize_s);
        self.metrics.seconds.with_label_values(&["store"]).observe(stored.seconds);
        self.metrics.bytes.inc_by(stored.bytes);
        info!(
            job_id = %task.job_id, partition = task.partition, constraints, bytes = stored.bytes,
            synthesize_s, serialize_s, store_s = stored.seconds, "partition synthesized"
        );
        self.event(task, JobEventBody::PartitionSynthesized { stats }).await?;
        Ok(true)
    }
}
