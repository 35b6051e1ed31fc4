//! What `GET /v1/jobs/{id}` returns: the ledger record summarized for clients.

use serde::Serialize;
use snarkflow_wire::{JobRecord, PartitionRecord, ProveStats, SynthStats};

#[derive(Debug, Serialize)]
pub struct PartitionCounts {
    pub total: u32,
    pub synthesized: u32,
    pub proved: u32,
}

/// Seconds per stage, summed over partitions (`total_s` is wall clock, submit to finish).
#[derive(Debug, Default, Serialize)]
pub struct Timings {
    pub synthesize_s: f64,
    pub serialize_s: f64,
    pub store_s: f64,
    pub queue_wait_s: f64,
    pub fetch_s: f64,
    pub deserialize_s: f64,
    pub rebuild_s: f64,
    pub prove_s: f64,
    pub verify_s: f64,
    pub assemble_s: f64,
    pub total_s: Option<f64>,
}

/// Bytes per hop, summed over partitions.
#[derive(Debug, Default, Serialize)]
pub struct Bytes {
    /// Serialized partitions written by synth-workers to the object store.
    pub synth_to_prove: u64,
    /// Bytes gpu-workers fetched (more than `synth_to_prove` after redeliveries).
    pub fetched_by_prover: u64,
    /// Proof bytes returned to the gateway.
    pub proofs: u64,
}

#[derive(Debug, Serialize)]
pub struct PartitionView {
    pub index: usize,
    pub synthesized: bool,
    pub proved: bool,
    pub synth: Option<SynthStats>,
    pub prove: Option<ProveStats>,
}

#[derive(Debug, Serialize)]
pub struct JobView {
    pub id: String,
    pub kind: &'static str,
    pub circuit_id: String,
    pub state: &'static str,
    pub priority: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub seed: u64,
    pub partitions: PartitionCounts,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub timings: Timings,
    pub bytes: Bytes,
    pub trace_id: Option<String>,
    pub created_at_ms: u64,
    pub finished_at_ms: Option<u64>,
    pub partition_details: Vec<PartitionView>,
}

fn sum(parts: &[PartitionRecord], f: impl Fn(&PartitionRecord) -> Option<f64>) -> f64 {
    parts.iter().filter_map(f).sum()
}

impl From<&JobRecord> for JobView {
    fn from(r: &JobRecord) -> Self {
        let p = &r.partitions;
        let timings = Timings {
            synthesize_s: sum(p, |x| x.synth.as_ref().map(|s| s.synthesize_s)),
            serialize_s: sum(p, |x| x.synth.as_ref().map(|s| s.serialize_s)),
            store_s: sum(p, |x| x.synth.as_ref().map(|s| s.store_s)),
            queue_wait_s: sum(p, |x| x.prove.as_ref().map(|s| s.queue_wait_s)),
            fetch_s: sum(p, |x| x.prove.as_ref().map(|s| s.fetch_s)),
            deserialize_s: sum(p, |x| x.prove.as_ref().map(|s| s.deserialize_s)),
            rebuild_s: sum(p, |x| x.prove.as_ref().map(|s| s.rebuild_s)),
            prove_s: sum(p, |x| x.prove.as_ref().map(|s| s.prove_s)),
            verify_s: sum(p, |x| x.prove.as_ref().map(|s| s.verify_s)),
            assemble_s: r.assemble_s.unwrap_or(0.0),
            total_s: r.finished_at_ms.map(|f| f.saturating_sub(r.created_at_ms) as f64 / 1000.0),
        };
        let bytes = Bytes {
            synth_to_prove: p.iter().filter_map(|x| x.synth.as_ref().map(|s| s.bytes)).sum(),
            fetched_by_prover: p.iter().filter_map(|x| x.prove.as_ref().map(|s| s.bytes_fetched)).sum(),
            proofs: p.iter().filter_map(|x| x.proof_hex.as_ref().map(|h| h.len() as u64 / 2)).sum(),
        };
        JobView {
            id: r.id.clone(),
            kind: r.kind().as_str(),
            circuit_id: r.circuit.circuit_id(),
            state: r.state.as_str(),
            priority: r.priority.as_str(),
            tenant: r.tenant.clone(),
            seed: r.seed,
            partitions: PartitionCounts {
                total: p.len() as u32,
                synthesized: r.synthesized_count(),
                proved: r.proved_count(),
            },
            error: r.error.clone(),
            timings,
            bytes,
            trace_id: r.trace_id.clone(),
            created_at_ms: r.created_at_ms,
            finished_at_ms: r.finished_at_ms,
            partition_details: p
                .iter()
                .enumerate()
                .map(|(index, x)| PartitionView {
                    index,
                    synthesized: x.synthesized,
                    proved: x.proof_hex.is_some(),
                    synth: x.synth.clone(),
                    prove: x.prove.clone(),
                })
                .collect(),
        }
    }
}
