//! Handling one synthesis task.

use std::time::{Duration, Instant};

use prometheus::{HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts, Registry};
use snarkflow_bus::{extract_context, now_ms, AckKind, Bus, BusError, Lanes, Message};
use snarkflow_circuits::PartitionCircuit;
use snarkflow_synthesis::synthesize;
use snarkflow_wire::{
    self as wire, JobEvent, JobEventBody, JobRecord, PartitionEncoding, ProveTask, Stage, SynthStats, SynthTask,
    SCHEMA_VERSION,
};
use tokio_util::sync::CancellationToken;
use tracing::{info, info_span, warn, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// How long a transient failure waits before the task is offered again.
const RETRY_DELAY: Duration = Duration::from_secs(2);

#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    seconds: HistogramVec,
    bytes: IntCounter,
    outcomes: IntCounterVec,
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
        let bytes = IntCounter::new("snarkflow_synth_bytes_total", "serialized partition bytes stored").expect("metric");
        let outcomes =
            IntCounterVec::new(Opts::new("snarkflow_synth_partitions_total", "partitions handled by outcome"), &["outcome"])
                .expect("metric");
        registry.register(Box::new(seconds.clone())).expect("unique");
        registry.register(Box::new(bytes.clone())).expect("unique");
        registry.register(Box::new(outcomes.clone())).expect("unique");
        Metrics { registry, seconds, bytes, outcomes }
    }
}

/// What went wrong, classified once; the class decides the ack.
enum Failure {
    /// Bad input: retrying cannot help.
    Permanent(String),
    /// The broker or store hiccuped: retry later.
    Transient(String),
}

impl From<BusError> for Failure {
    fn from(e: BusError) -> Self {
        Failure::Transient(e.to_string())
    }
}

pub struct Worker {
    pub bus: Bus,
    pub worker_id: String,
    pub metrics: Metrics,
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
        let span = info_span!(
            "synthesize",
            otel.kind = "consumer",
            job_id = %task.job_id,
            job.kind = task.circuit.kind().as_str(),
            partition = i64::from(task.partition),
            partitions = i64::from(task.partitions),
            worker = %self.worker_id,
            circuit_id = %task.circuit.circuit_id(),
            bytes = tracing::field::Empty,
        );
        span.set_parent(extract_context(msg.headers.as_ref()));
        let _heartbeat = lanes.heartbeat(&msg);
        let outcome = tokio::select! {
            r = self.process(&task).instrument(span.clone()) => r,
            _ = abandon.cancelled() => Err(Failure::Transient("worker shutting down".into())),
        };
        let _enter = span.enter();
        match outcome {
            Ok(true) => {
                self.metrics.outcomes.with_label_values(&["synthesized"]).inc();
                let _ = msg.ack().await;
            }
            Ok(false) => {
                self.metrics.outcomes.with_label_values(&["skipped"]).inc();
                let _ = msg.ack().await;
            }
            Err(Failure::Transient(reason)) => {
                self.metrics.outcomes.with_label_values(&["retried"]).inc();
                warn!(job_id = %task.job_id, partition = task.partition, %reason, "synthesis will be retried");
                let _ = msg.ack_with(AckKind::Nak(Some(RETRY_DELAY))).await;
            }
            Err(Failure::Permanent(reason)) => {
                self.metrics.outcomes.with_label_values(&["failed"]).inc();
                warn!(job_id = %task.job_id, partition = task.partition, %reason, "synthesis failed permanently");
                let event = JobEvent::new(
                    &task.job_id,
                    task.partition,
                    now_ms(),
                    JobEventBody::PartitionFailed { stage: Stage::Synthesis, message: reason },
                );
                match self.bus.publish(wire::events_subject(&task.job_id), wire::encode(&event), None).await {
                    Ok(()) => {
                        let _ = msg.ack_with(AckKind::Term).await;
                    }
                    // without the event the job would hang: let the task come back instead
                    Err(_) => {
                        let _ = msg.ack_with(AckKind::Nak(Some(RETRY_DELAY))).await;
                    }
                }
            }
        }
    }

    async fn job(&self, id: &str) -> Result<Option<JobRecord>, Failure> {
        match self.bus.jobs.get(id).await {
            Ok(Some(bytes)) => wire::decode(&bytes).map(Some).map_err(|e| Failure::Permanent(format!("job record: {e}"))),
            Ok(None) => Ok(None),
            Err(e) => Err(Failure::Transient(format!("reading job {id}: {e}"))),
        }
    }

    async fn event(&self, task: &SynthTask, body: JobEventBody) -> Result<(), Failure> {
        let event = JobEvent::new(&task.job_id, task.partition, now_ms(), body);
        Ok(self.bus.publish(wire::events_subject(&task.job_id), wire::encode(&event), None).await?)
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
            return Err(Failure::Permanent(format!("partition {} of {} does not exist", task.partition, task.partitions)));
        }
        self.event(task, JobEventBody::SynthesisStarted { worker: self.worker_id.clone() }).await?;

        let (circuit, seed, partition) = (task.circuit, task.seed, task.partition);
        let compute = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let synthesized = synthesize(PartitionCircuit::with_witness(circuit, seed, partition), &circuit.circuit_id(), partition)
                .map_err(|e| format!("synthesis error: {e}"))?;
            let synthesize_s = started.elapsed().as_secs_f64();
            let constraints = synthesized.num_constraints() as u64;
            let started = Instant::now();
            let encoded = synthesized.encode();
            Ok::<_, String>((encoded, synthesize_s, started.elapsed().as_secs_f64(), constraints))
        });
        let (encoded, synthesize_s, serialize_s, constraints) = compute
            .instrument(info_span!("synthesize.compute"))
            .await
            .map_err(|e| Failure::Permanent(format!("synthesis panicked: {e}")))?
            .map_err(Failure::Permanent)?;

        let object = wire::partition_object(&task.job_id, task.partition);
        let stored = self
            .bus
            .put_partition(&object, &encoded)
            .instrument(info_span!("store", bytes = encoded.len() as u64, object = %object))
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
            encoding: PartitionEncoding::RawBincode,
            sha256_hex: stored.sha256_hex.clone(),
            bytes: stored.bytes,
            published_at_ms: now_ms(),
        };
        let msg_id = wire::partition_msg_id("prove", &task.job_id, task.partition);
        self.bus
            .publish(wire::prove_subject(task.priority), wire::encode(&prove_task), Some(&msg_id))
            .instrument(info_span!("publish", otel.kind = "producer", bytes = stored.bytes))
            .await?;
        let stats = SynthStats {
            worker: self.worker_id.clone(),
            constraints,
            synthesize_s,
            serialize_s,
            store_s: stored.seconds,
            bytes: stored.bytes,
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
