//! The synthesis stage: one partition from task to announced payload.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus::{IntCounter, IntCounterVec, Opts};
use snarkflow_circuits::{JobInput, KindError};
use snarkflow_runtime::{partition_span, Failure, Outcome, TaskContext, TaskHandler, WorkerHost};
use snarkflow_synthesis::native::buffers;
use snarkflow_synthesis::{encode_compact, PartitionWitness, Synthesize, SynthesizeWitness};
use snarkflow_wire::{
    self as wire, JobEvent, JobEventBody, PartitionEncoding, ProveTask, SynthStats, SynthTask, SCHEMA_VERSION,
};
use tracing::{info, Instrument};

use crate::inputs::InputCache;
use crate::WitnessSource;

/// Where witnesses come from and how often a native one is checked against the gadgets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WitnessPolicy {
    pub(crate) source: WitnessSource,
    /// Every Nth native witness is also made by the gadgets and compared (0: never).
    pub(crate) check_every: u64,
}

/// The spot check's state, shared with the blocking synthesis threads.
#[derive(Clone)]
struct NativeCheck {
    policy: WitnessPolicy,
    /// Native witnesses made so far (which of them is checked).
    made: Arc<AtomicU64>,
    /// `snarkflow_synth_native_mismatches_total`.
    mismatches: IntCounter,
}

/// What synthesis needs to know of a circuit's shape: its hash (the compact payload names its
/// shape) and sizes (for memory estimates), by circuit id.
type ShapeSummaries = Arc<Mutex<HashMap<String, ShapeSummary>>>;

#[derive(Debug, Clone, Copy)]
struct ShapeSummary {
    /// Known once the shape is recorded (the compact path); the raw path only counts.
    hash: Option<[u8; 32]>,
    constraints: u64,
    variables: u64,
}

/// Bytes per field element.
const FR_BYTES: u64 = 32;

impl ShapeSummary {
    /// Peak bytes of synthesizing one partition into `encoding`: the witness (and for the
    /// raw form a, b, c as well) plus its encoded copy, and the gadgets' working set — about
    /// one more witness, by measurement at 2 KiB.
    fn estimated_bytes(&self, encoding: PartitionEncoding) -> u64 {
        let witness = self.variables * FR_BYTES;
        match encoding {
            PartitionEncoding::CompactWitness => 2 * witness + witness / 4,
            PartitionEncoding::RawBincode => 2 * (witness + 3 * self.constraints * FR_BYTES) + witness,
        }
    }
}

pub(crate) struct Synthesis {
    inputs: InputCache,
    encoding: PartitionEncoding,
    /// Recorded once per circuit id.
    shape_summaries: ShapeSummaries,
    /// `snarkflow_synth_bytes_total`: payload bytes stored for the provers.
    bytes: IntCounter,
    /// `snarkflow_synth_witness_total{path}`: partitions by where their witness came from
    /// (`native`, `gadgets`; `full` for the raw wire format's full synthesis).
    paths: IntCounterVec,
    native: NativeCheck,
}

/// A synthesized partition in its wire form, and what making it cost.
struct Encoded {
    bytes: Vec<u8>,
    encoding: PartitionEncoding,
    constraints: u64,
    synthesize_s: f64,
    serialize_s: f64,
    /// Where the witness came from: `native`, `gadgets` or `full`.
    path: &'static str,
}

impl Synthesis {
    pub(crate) fn new(host: &WorkerHost, encoding: PartitionEncoding, witness: WitnessPolicy) -> Self {
        let bytes = host.register(
            IntCounter::new("snarkflow_synth_bytes_total", "serialized partition bytes stored").expect("metric"),
        );
        let paths = host.register(
            IntCounterVec::new(
                Opts::new("snarkflow_synth_witness_total", "partitions synthesized, by where the witness came from"),
                &["path"],
            )
            .expect("metric"),
        );
        let mismatches = host.register(
            IntCounter::new(
                "snarkflow_synth_native_mismatches_total",
                "native witnesses that differed from the gadgets' in a spot check (each failed its partition)",
            )
            .expect("metric"),
        );
        let native = NativeCheck { policy: witness, made: Arc::default(), mismatches };
        Synthesis { inputs: InputCache::default(), encoding, shape_summaries: Default::default(), bytes, paths, native }
    }

    /// The job's input, for the kinds that have one.
    async fn input(&self, task: &SynthTask, cx: &TaskContext) -> Result<Option<Arc<JobInput>>, Failure> {
        match &task.input {
            Some(input_ref) => Ok(Some(self.inputs.input(task, input_ref, cx).await?)),
            None if snarkflow_circuits::takes_input(task.circuit.kind()) => {
                Err(Failure::Permanent(format!("a {} task without its job input", task.circuit.kind().as_str())))
            }
            None => Ok(None),
        }
    }
}

impl TaskHandler for Synthesis {
    type Task = SynthTask;

    fn estimated_bytes(&self, task: &SynthTask) -> Option<u64> {
        let summaries = self.shape_summaries.lock().expect("shape summaries lock");
        summaries.get(&task.circuit.circuit_id()).map(|s| s.estimated_bytes(self.encoding))
    }

    async fn process(&self, task: SynthTask, cx: TaskContext) -> Result<Outcome, Failure> {
        let input = self.input(&task, &cx).await?;
        // step spans are made where each step starts, inside the handling span
        let (parent, worker) = (tracing::Span::current(), cx.host.id.clone());
        let (summaries, encoding, blocking_task) = (self.shape_summaries.clone(), self.encoding, task.clone());
        let native = self.native.clone();
        let encoded = tokio::task::spawn_blocking(move || {
            let _parent = parent.enter();
            encode_partition(&blocking_task, input.as_deref(), encoding, &summaries, &native, &worker)
        })
        .await
        .map_err(|e| Failure::Permanent(format!("synthesis panicked: {e}")))?
        .map_err(|e| Failure::Permanent(e.to_string()))?;

        let object = wire::partition_object(&task.job_id, task.partition);
        let stored = store_when_there_is_room(&cx, &task.job_id, &object, &encoded.bytes)
            .instrument(
                partition_span!("store", task, cx.host.id, bytes = encoded.bytes.len() as u64, object = %object),
            )
            .await?;
        drop(encoded.bytes);
        let encoded_path = encoded.path;
        tracing::Span::current().record("bytes", stored.bytes);
        let prove_task = ProveTask {
            schema: SCHEMA_VERSION,
            job_id: task.job_id.clone(),
            circuit: task.circuit.clone(),
            priority: task.priority,
            partition: task.partition,
            partitions: task.partitions,
            object,
            encoding: encoded.encoding,
            sha256_hex: stored.sha256_hex.clone(),
            bytes: stored.bytes,
            published_at_ms: snarkflow_bus::now_ms(),
        };
        let msg_id = wire::partition_msg_id(wire::Stage::Proving, &task.job_id, task.partition);
        cx.bus
            .publish(wire::prove_subject(task.priority), wire::encode(&prove_task), Some(&msg_id))
            .instrument(partition_span!("publish", task, cx.host.id, otel.kind = "producer", bytes = stored.bytes))
            .await?;
        let stats = SynthStats {
            worker: cx.host.id.clone(),
            constraints: encoded.constraints,
            synthesize_s: encoded.synthesize_s,
            serialize_s: encoded.serialize_s,
            store_s: stored.seconds,
            bytes: stored.bytes,
            encoding: Some(encoded.encoding.as_str().into()),
        };
        cx.host.observe("synthesize", stats.synthesize_s);
        self.paths.with_label_values(&[encoded_path]).inc();
        cx.host.observe("serialize", stats.serialize_s);
        cx.host.observe("store", stats.store_s);
        self.bytes.inc_by(stored.bytes);
        info!(
            job_id = %task.job_id, partition = task.partition, constraints = stats.constraints, bytes = stats.bytes,
            synthesize_s = stats.synthesize_s, serialize_s = stats.serialize_s, store_s = stats.store_s,
            witness = encoded_path, "partition synthesized"
        );
        let event = JobEvent::new(
            &task.job_id,
            task.partition,
            snarkflow_bus::now_ms(),
            JobEventBody::PartitionSynthesized { stats },
        );
        cx.bus.publish(wire::events_subject(&task.job_id), wire::encode(&event), None).await?;
        Ok("synthesized")
    }
}

/// Why a partition could not be synthesized. Every one is permanent: the same task builds the
/// same circuit anywhere.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SynthError {
    #[error("building the circuit: {0}")]
    Build(KindError),
    #[error("synthesis error: {0}")]
    Synthesis(bellperson::SynthesisError),
    #[error("native witness: {0}")]
    Native(KindError),
    #[error(
        "the native witness differs from the gadgets' ({0}): a native-synthesis bug; \
         run the synth-workers with --witness gadgets until it is fixed"
    )]
    NativeMismatch(String),
    #[error("recording the constraint shape: {0}")]
    Shape(KindError),
    #[error("--preload-shapes: unknown circuit id {0:?}")]
    UnknownCircuit(String),
}

/// Build partition `task.partition`'s circuit and synthesize it into `encoding` (on a
/// blocking thread). Errors are permanent: the same task builds the same circuit anywhere.
fn encode_partition(
    task: &SynthTask,
    input: Option<&JobInput>,
    encoding: PartitionEncoding,
    summaries: &ShapeSummaries,
    native: &NativeCheck,
    worker: &str,
) -> Result<Encoded, SynthError> {
    let (circuit, id) = (&task.circuit, task.circuit.circuit_id());
    let (seed, partition) = (task.seed, task.partition);
    match encoding {
        PartitionEncoding::CompactWitness => {
            let (shape_hash, constraints) = shape_summary(task, summaries, worker)?;
            let span =
                partition_span!("synthesize", task, worker, witness_only = true, witness = tracing::field::Empty);
            let started = Instant::now();
            let (witness, path) = span.in_scope(|| witness_of(task, input, &id, native))?;
            span.record("witness", path);
            let synthesize_s = started.elapsed().as_secs_f64();
            drop(span);
            let span =
                partition_span!("serialize", task, worker, bytes = tracing::field::Empty, encoding = encoding.as_str());
            let started = Instant::now();
            let bytes = span.in_scope(|| encode_compact(&witness, shape_hash));
            span.record("bytes", bytes.len() as u64);
            // the next partition writes its witness over this one's buffer
            buffers::give_back(witness.aux);
            Ok(Encoded {
                bytes,
                encoding,
                constraints,
                synthesize_s,
                serialize_s: started.elapsed().as_secs_f64(),
                path,
            })
        }
        PartitionEncoding::RawBincode => {
            let span = partition_span!("synthesize", task, worker, constraints = tracing::field::Empty);
            let started = Instant::now();
            let synthesized = span
                .in_scope(|| {
                    snarkflow_circuits::visit_with_witness(circuit, seed, partition, input, Synthesize(&id, partition))
                })
                .map_err(SynthError::Build)?
                .map_err(SynthError::Synthesis)?;
            let synthesize_s = started.elapsed().as_secs_f64();
            let constraints = synthesized.num_constraints() as u64;
            span.record("constraints", constraints);
            let variables = (synthesized.input_assignment.len() + synthesized.aux_assignment.len()) as u64;
            summaries.lock().expect("shape summaries lock").entry(id.clone()).or_insert(ShapeSummary {
                hash: None,
                constraints,
                variables,
            });
            drop(span);
            let span =
                partition_span!("serialize", task, worker, bytes = tracing::field::Empty, encoding = encoding.as_str());
            let started = Instant::now();
            let bytes = span.in_scope(|| synthesized.encode());
            span.record("bytes", bytes.len() as u64);
            let serialize_s = started.elapsed().as_secs_f64();
            Ok(Encoded { bytes, encoding, constraints, synthesize_s, serialize_s, path: "full" })
        }
    }
}

/// The task's witness and where it came from: the kind's native generator when the policy
/// allows and the kind has one (spot-checked against the gadgets every `check_every`th
/// time), the gadgets otherwise.
fn witness_of(
    task: &SynthTask,
    input: Option<&JobInput>,
    id: &str,
    native: &NativeCheck,
) -> Result<(PartitionWitness, &'static str), SynthError> {
    let gadgets = || {
        snarkflow_circuits::visit_with_witness(
            &task.circuit,
            task.seed,
            task.partition,
            input,
            SynthesizeWitness(id, task.partition),
        )
        .map_err(SynthError::Build)?
        .map_err(SynthError::Synthesis)
    };
    if native.policy.source == WitnessSource::Native {
        if let Some(made) = snarkflow_circuits::native_witness(&task.circuit, task.seed, task.partition, input) {
            let made = made.map_err(SynthError::Native)?;
            let every = native.policy.check_every;
            if every > 0 && native.made.fetch_add(1, Ordering::Relaxed).is_multiple_of(every) {
                let _span = tracing::info_span!("native_check").entered();
                let reference = gadgets()?;
                if let Some(what) = made.difference(&reference) {
                    native.mismatches.inc();
                    tracing::error!(job_id = %task.job_id, partition = task.partition, difference = %what, "native witness differs from the gadgets'");
                    return Err(SynthError::NativeMismatch(what.to_string()));
                }
            }
            return Ok((made, "native"));
        }
    }
    Ok((gadgets()?, "gadgets"))
}

/// The shape hash and constraint count of the task's circuit, recorded on first use.
fn shape_summary(task: &SynthTask, summaries: &ShapeSummaries, worker: &str) -> Result<([u8; 32], u64), SynthError> {
    let span = partition_span!("shape.record", task, worker);
    record_summary(&task.circuit, summaries, &span)
}

/// The shape summary of `circuit`, recording its shape under `span` if no one has yet. One
/// recording per circuit at a time: the other partitions of a new circuit wait for the first
/// instead of each recording it (at 32 GiB PoRep a recording is minutes of a core and GBs of
/// memory); a different circuit — a WinningPoSt arriving meanwhile — does not wait for it.
fn record_summary(
    circuit: &snarkflow_wire::CircuitSpec,
    summaries: &ShapeSummaries,
    span: &tracing::Span,
) -> Result<([u8; 32], u64), SynthError> {
    let id = circuit.circuit_id();
    let known = || match summaries.lock().expect("shape summaries lock").get(&id).copied() {
        Some(ShapeSummary { hash: Some(hash), constraints, .. }) => Some((hash, constraints)),
        _ => None,
    };
    if let Some(found) = known() {
        return Ok(found);
    }
    static RECORDING: Mutex<Option<HashMap<String, Arc<Mutex<()>>>>> = Mutex::new(None);
    let lock = {
        let mut locks = RECORDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        locks.get_or_insert_with(HashMap::new).entry(id.clone()).or_default().clone()
    };
    let _one_recorder = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = known() {
        return Ok(found);
    }
    let shape = span.in_scope(|| snarkflow_circuits::record_shape(circuit)).map_err(SynthError::Shape)?;
    let summary = ShapeSummary {
        hash: Some(shape.hash),
        constraints: shape.num_constraints() as u64,
        variables: (shape.num_inputs + shape.num_aux) as u64,
    };
    summaries.lock().expect("shape summaries lock").insert(id, summary);
    Ok((shape.hash, summary.constraints))
}

impl Synthesis {
    /// Record the shapes of `circuit_ids` now (`--preload-shapes`), so the first job of each —
    /// a WinningPoSt with a 5-minute deadline — does not wait for its circuit to be recorded.
    pub(crate) fn preload_shapes(&self, circuit_ids: &[String]) -> Result<(), SynthError> {
        for id in circuit_ids {
            let spec =
                snarkflow_circuits::parse_circuit_id(id).ok_or_else(|| SynthError::UnknownCircuit(id.clone()))?;
            let started = std::time::Instant::now();
            let span = tracing::info_span!("shape.record", circuit_id = %id, worker = "synth", preload = true);
            let (_, constraints) = record_summary(&spec, &self.shape_summaries, &span)?;
            tracing::info!(circuit_id = %id, constraints, seconds = started.elapsed().as_secs_f64(), "constraint shape recorded ahead of work");
        }
        Ok(())
    }

    /// Circuits whose shape is recorded.
    #[cfg(test)]
    pub(crate) fn recorded(&self) -> Vec<String> {
        let summaries = self.shape_summaries.lock().expect("shape summaries lock");
        summaries.iter().filter(|(_, s)| s.hash.is_some()).map(|(id, _)| id.clone()).collect()
    }
}

/// How long a partition that does not fit in a full object store waits before trying again.
const FULL_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// Store the synthesized partition; while the object store is full, keep it (the task's
/// heartbeats hold the message) and try again as space returns, rather than hand back and
/// synthesize it all over again. Stops waiting if the job ends meanwhile.
async fn store_when_there_is_room(
    cx: &TaskContext,
    job_id: &str,
    object: &str,
    bytes: &[u8],
) -> Result<snarkflow_bus::Stored, Failure> {
    let mut warned = false;
    loop {
        match cx.bus.put_object(object, bytes).await {
            Err(snarkflow_bus::BusError::Full(why)) => {
                if !warned {
                    tracing::warn!(job_id, object, %why, "the object store is full; holding the partition until there is room");
                    warned = true;
                }
                let _waiting = cx.watchdog.waiting();
                if !cx.bus.ledger().is_live(job_id).await? {
                    return Err(Failure::Permanent(format!("job {job_id} ended while its partition waited for room")));
                }
                tokio::time::sleep(FULL_RETRY).await;
            }
            other => return Ok(other?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shapes_named_at_start_are_recorded_before_any_work_and_unknown_ids_refused() {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let host = WorkerHost::start(snarkflow_wire::Stage::Synthesis, "synth-test".into(), None, shutdown.clone())
            .await
            .unwrap();
        let witness = WitnessPolicy { source: crate::config::WitnessSource::Native, check_every: 0 };
        let synthesis = Synthesis::new(&host, PartitionEncoding::CompactWitness, witness);
        assert!(synthesis.recorded().is_empty());
        synthesis.preload_shapes(&["dense-chain-c64".into(), "sha256-chain-b1".into()]).unwrap();
        let mut recorded = synthesis.recorded();
        recorded.sort();
        assert_eq!(recorded, ["dense-chain-c64", "sha256-chain-b1"]);
        let err = synthesis.preload_shapes(&["porep-c2-3GiB".into()]).unwrap_err();
        assert!(matches!(&err, SynthError::UnknownCircuit(id) if id == "porep-c2-3GiB"), "{err}");
        shutdown.cancel();
    }
}
