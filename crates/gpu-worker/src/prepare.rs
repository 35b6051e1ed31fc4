//! Turning a fetched payload into the partition the prover takes: decode, check, and for a
//! compact witness either rebuild a, b, c from the circuit's constraint shape or, for a prover
//! that holds the shape on the device, upload the witness there. Runs on a slot's blocking
//! thread while another partition may be on the device.

use std::time::Instant;

use snarkflow_prover::{LoadedParams, StageWireError, StagedWitness};
use snarkflow_runtime::{partition_span, Failure};
use snarkflow_synthesis::{
    decode_compact_for, CompactError, CompactParts, PartitionWitness, SynthesizedPartition, WitnessShape,
};
use snarkflow_wire::{PartitionEncoding, ProveTask};

use crate::shapes::ShapeStore;

/// Partitions with at least this many constraints are prepared one at a time: each then has
/// every rebuild thread, so the next partition for the device is ready in half the time (two
/// 32 GiB partitions rebuilt together both finished late, leaving the GPU idle). Small ones
/// prepare side by side: their pieces are too small to spread over every thread.
const ONE_AT_A_TIME: usize = 1 << 24;

/// The threads that decode and rebuild partitions, kept apart from the prover's own CPU work
/// (supraseal prepares MSMs and does the B-G2 MSM on the CPU while the GPU runs).
pub(crate) struct RebuildThreads {
    pool: rayon::ThreadPool,
    large: std::sync::Mutex<()>,
}

impl RebuildThreads {
    pub(crate) fn new(pool: rayon::ThreadPool) -> Self {
        RebuildThreads { pool, large: std::sync::Mutex::new(()) }
    }

    /// For a partition of `constraints` at or over [`ONE_AT_A_TIME`]: wait until no other such
    /// partition is being prepared; it is this one's turn while the guard lives.
    fn turn(&self, constraints: usize) -> Option<std::sync::MutexGuard<'_, ()>> {
        (constraints >= ONE_AT_A_TIME).then(|| self.large.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// What the prover takes: a whole synthesized partition, or (for a prover that builds a, b, c
/// on the device) its witness, already uploaded there; `witness` then keeps only the inputs.
pub(crate) enum ProverInput {
    Partition(SynthesizedPartition),
    Staged { witness: PartitionWitness, staged: StagedWitness },
}

impl ProverInput {
    fn identity(&self) -> (&str, u32) {
        match self {
            ProverInput::Partition(p) => (&p.circuit_id, p.partition),
            ProverInput::Staged { witness, .. } => (&witness.circuit_id, witness.partition),
        }
    }

    /// The public inputs, without the leading ONE.
    pub(crate) fn public_inputs(&self) -> &[snarkflow_prover::Fr] {
        match self {
            ProverInput::Partition(p) => p.public_inputs(),
            ProverInput::Staged { witness, .. } => witness.inputs.get(1..).unwrap_or(&[]),
        }
    }

    pub(crate) fn num_constraints(&self, shape_rows: Option<usize>) -> usize {
        match self {
            ProverInput::Partition(p) => p.num_constraints(),
            ProverInput::Staged { .. } => shape_rows.unwrap_or(0),
        }
    }
}

/// A decoded partition, ready for the device, and what preparing it cost.
pub(crate) struct Prepared {
    pub input: ProverInput,
    pub deserialize_s: f64,
    /// Rebuilding a, b, c, or (resident prover) staging the witness on the device.
    pub rebuild_s: f64,
}

/// A compact witness that cannot be proved here: permanent (the same bytes fail on any worker
/// holding this circuit's parameters).
fn compact_failure(e: CompactError, task: &ProveTask) -> Failure {
    match e {
        CompactError::WrongShape { .. } => {
            Failure::Permanent(format!("a witness this prover's {} shape cannot take: {e}", task.circuit.circuit_id()))
        }
        _ => Failure::Permanent(format!("undecodable compact witness: {e}")),
    }
}

/// Decode `payload` as `task.encoding` says. When `loaded` holds the constraint shape on the
/// device, a compact witness is decoded, checked against that shape and uploaded to the device;
/// otherwise a, b, c are rebuilt here. Every failure but the upload's is permanent: the same
/// bytes decode the same way on any worker.
pub(crate) fn prepare(
    task: &ProveTask,
    payload: Vec<u8>,
    shapes: &ShapeStore,
    rebuild: &RebuildThreads,
    worker: &str,
    loaded: &LoadedParams,
) -> Result<Prepared, Failure> {
    let resident_shape = loaded.resident_witness_shape();
    let bytes = payload.len() as u64;
    let started = Instant::now();
    let prepared = match task.encoding {
        PartitionEncoding::RawBincode => {
            let partition = partition_span!("deserialize", task, worker, bytes)
                .in_scope(|| SynthesizedPartition::decode(&payload))
                .map_err(|e| Failure::Permanent(format!("undecodable partition: {e}")))?;
            Prepared {
                input: ProverInput::Partition(partition),
                deserialize_s: started.elapsed().as_secs_f64(),
                rebuild_s: 0.0,
            }
        }
        PartitionEncoding::CompactWitness if resident_shape.is_some() => {
            let expected = resident_shape.expect("checked by the guard");
            let wire = partition_span!("deserialize", task, worker, bytes)
                .in_scope(|| CompactParts::parse_for(&payload, &expected))
                .map_err(|e| compact_failure(e, task))?;
            // the public inputs, for verifying the proof; the rest goes to the device undecoded
            let inputs = wire.first(wire.inputs as usize).map_err(|e| compact_failure(e, task))?;
            let deserialize_s = started.elapsed().as_secs_f64();
            let started = Instant::now();
            let staged = partition_span!("upload", task, worker, from_wire = true)
                .in_scope(|| loaded.stage_wire(&wire))
                .map_err(|e| match e {
                    StageWireError::Wire(e) => compact_failure(e, task),
                    StageWireError::Stage(e) => Failure::Transient(format!("uploading the witness to the device: {e}")),
                })?;
            let (circuit_id, partition) = (wire.circuit_id.clone(), wire.partition);
            let (witness, staged, deserialize_s, upload_s) = match staged {
                Some(staged) => {
                    let witness = PartitionWitness { circuit_id, partition, inputs, aux: Vec::new() };
                    (witness, staged, deserialize_s, started.elapsed().as_secs_f64())
                }
                None => {
                    // sent whole (a dense witness, or SNARKFLOW_WHOLE_WITNESS=1): decoded first
                    let mut witness = partition_span!("deserialize", task, worker, bytes)
                        .in_scope(|| rebuild.pool.install(|| wire.decode()))
                        .map_err(|e| compact_failure(e, task))?;
                    let (decoded_s, started) = (started.elapsed().as_secs_f64(), Instant::now());
                    let staged = partition_span!("upload", task, worker)
                        .in_scope(|| loaded.stage(&witness))
                        .map_err(|e| Failure::Transient(format!("uploading the witness to the device: {e}")))?
                        .ok_or_else(|| Failure::Permanent("a resident key that stages no witness".into()))?;
                    // on the device now: the host keeps only what verifying the proof needs
                    witness.aux = Vec::new();
                    (witness, staged, deserialize_s + decoded_s, started.elapsed().as_secs_f64())
                }
            };
            drop(payload);
            Prepared { input: ProverInput::Staged { witness, staged }, deserialize_s, rebuild_s: upload_s }
        }
        PartitionEncoding::CompactWitness => {
            let shape = shapes.get(&task.circuit).map_err(|e| Failure::Permanent(e.to_string()))?;
            let constraints = shape.num_constraints();
            let turn = rebuild.turn(constraints);
            // timed from the turn, not the wait for it; decoded in parallel pieces on the
            // rebuild threads (not the prover's)
            let started = Instant::now();
            let witness = partition_span!("deserialize", task, worker, bytes)
                .in_scope(|| rebuild.pool.install(|| decode_compact_for(&payload, &WitnessShape::of(&shape))))
                .map_err(|e| compact_failure(e, task))?;
            drop(payload);
            let deserialize_s = started.elapsed().as_secs_f64();
            let started = Instant::now();
            let partition = partition_span!("rebuild", task, worker, constraints = constraints as u64)
                .in_scope(|| rebuild.pool.install(|| shape.rebuild(witness)))
                .map_err(|e| Failure::Permanent(format!("rebuilding the partition: {e}")))?;
            drop(turn);
            Prepared {
                input: ProverInput::Partition(partition),
                deserialize_s,
                rebuild_s: started.elapsed().as_secs_f64(),
            }
        }
    };
    let (circuit_id, partition) = prepared.input.identity();
    if circuit_id != task.circuit.circuit_id() || partition != task.partition {
        return Err(Failure::Permanent(format!(
            "object holds {circuit_id} partition {partition}, task says {} partition {}",
            task.circuit.circuit_id(),
            task.partition
        )));
    }
    Ok(prepared)
}
