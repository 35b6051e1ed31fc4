//! Turning a fetched payload into the partition the prover takes: decode, check, and for a
//! compact witness rebuild a, b, c from the circuit's constraint shape. Runs on a slot's
//! blocking thread while another partition may be on the device.

use std::time::Instant;

use snarkflow_runtime::{partition_span, Failure};
use snarkflow_synthesis::{decode_compact, SynthesizedPartition};
use snarkflow_wire::{PartitionEncoding, ProveTask};

use crate::shapes::ShapeStore;

/// A decoded partition, ready for the device, and what preparing it cost.
pub(crate) struct Prepared {
    pub partition: SynthesizedPartition,
    pub deserialize_s: f64,
    pub rebuild_s: f64,
}

/// Decode `payload` as `task.encoding` says. Every failure is permanent: the same bytes decode
/// the same way on any worker.
pub(crate) fn prepare(
    task: &ProveTask,
    payload: Vec<u8>,
    shapes: &ShapeStore,
    rebuild_pool: &rayon::ThreadPool,
    worker: &str,
) -> Result<Prepared, Failure> {
    let bytes = payload.len() as u64;
    let started = Instant::now();
    let prepared = match task.encoding {
        PartitionEncoding::RawBincode => {
            let partition = partition_span!("deserialize", task, worker, bytes)
                .in_scope(|| SynthesizedPartition::decode(&payload))
                .map_err(|e| Failure::Permanent(format!("undecodable partition: {e}")))?;
            Prepared { partition, deserialize_s: started.elapsed().as_secs_f64(), rebuild_s: 0.0 }
        }
        PartitionEncoding::CompactWitness => {
            // decoded in parallel pieces, on the rebuild threads (not the prover's)
            let (witness, shape_hash) = partition_span!("deserialize", task, worker, bytes)
                .in_scope(|| rebuild_pool.install(|| decode_compact(&payload)))
                .map_err(|e| Failure::Permanent(format!("undecodable compact witness: {e}")))?;
            drop(payload);
            let deserialize_s = started.elapsed().as_secs_f64();
            let shape = shapes.get(&task.circuit).map_err(Failure::Permanent)?;
            if shape.hash != shape_hash {
                return Err(Failure::Permanent(format!(
                    "witness was made for shape {} but this prover's {} shape is {}",
                    hex::encode(shape_hash),
                    task.circuit.circuit_id(),
                    shape.hash_hex()
                )));
            }
            let started = Instant::now();
            let partition = partition_span!("rebuild", task, worker, constraints = shape.num_constraints() as u64)
                .in_scope(|| rebuild_pool.install(|| shape.rebuild(witness)))
                .map_err(|e| Failure::Permanent(format!("rebuilding the partition: {e}")))?;
            Prepared { partition, deserialize_s, rebuild_s: started.elapsed().as_secs_f64() }
        }
    };
    let partition = &prepared.partition;
    if partition.circuit_id != task.circuit.circuit_id() || partition.partition != task.partition {
        return Err(Failure::Permanent(format!(
            "object holds {} partition {}, task says {} partition {}",
            partition.circuit_id,
            partition.partition,
            task.circuit.circuit_id(),
            task.partition
        )));
    }
    Ok(prepared)
}
