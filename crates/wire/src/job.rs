//! Jobs as clients submit them and as the job ledger records them.

use serde::{Deserialize, Serialize};

/// Size of one compressed BLS12-381 Groth16 partition proof.
pub const PARTITION_PROOF_BYTES: usize = 192;

/// Largest number of partitions one job may fan out into.
pub const MAX_PARTITIONS: u32 = 64;
/// Largest `sha256-chain` length: 4096 compressions is ~110 M constraints, beyond which a CPU
/// prover takes hours and a 32 GiB-class circuit belongs to the Filecoin kinds anyway.
pub const MAX_SHA256_BLOCKS: u32 = 4096;
/// Largest `dense-chain` size (2^26 constraints, above a 32 GiB PoRep partition's domain).
pub const MAX_DENSE_CONSTRAINTS: u32 = 1 << 26;

/// How urgent a job is; higher priorities are pulled first at every stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
    Critical,
}

impl Priority {
    /// Most urgent first: the order in which workers poll their lanes.
    pub const ALL: [Priority; 4] = [Priority::Critical, Priority::High, Priority::Normal, Priority::Low];

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

/// The circuit family a job proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobKind {
    /// `blocks` chained SHA-256 compressions (bit-heavy, like PoRep labeling).
    Sha256Chain,
    /// `constraints` constraints of x_{i+1} = x_i^2 + x_i + k with every witness value random.
    DenseChain,
}

impl JobKind {
    pub const ALL: [JobKind; 2] = [JobKind::Sha256Chain, JobKind::DenseChain];

    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Sha256Chain => "sha256-chain",
            JobKind::DenseChain => "dense-chain",
        }
    }

    pub fn parse(s: &str) -> Option<JobKind> {
        JobKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// The shape of one partition's circuit. Two partitions with equal specs share Groth16
/// parameters; the spec's [`CircuitSpec::circuit_id`] names them on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CircuitSpec {
    Sha256Chain { blocks: u32 },
    DenseChain { constraints: u32 },
}

impl CircuitSpec {
    pub fn kind(&self) -> JobKind {
        match self {
            CircuitSpec::Sha256Chain { .. } => JobKind::Sha256Chain,
            CircuitSpec::DenseChain { .. } => JobKind::DenseChain,
        }
    }

    /// Stable identity of the circuit shape, used as the parameter file name.
    pub fn circuit_id(&self) -> String {
        match self {
            CircuitSpec::Sha256Chain { blocks } => format!("sha256-chain-b{blocks}"),
            CircuitSpec::DenseChain { constraints } => format!("dense-chain-c{constraints}"),
        }
    }

    /// Inverse of [`CircuitSpec::circuit_id`].
    pub fn parse_circuit_id(id: &str) -> Option<CircuitSpec> {
        if let Some(n) = id.strip_prefix("sha256-chain-b") {
            let blocks = n.parse().ok()?;
            return Some(CircuitSpec::Sha256Chain { blocks });
        }
        if let Some(n) = id.strip_prefix("dense-chain-c") {
            let constraints = n.parse().ok()?;
            return Some(CircuitSpec::DenseChain { constraints });
        }
        None
    }
}

/// Life cycle of a job. `done`, `failed` and `cancelled` are terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Synthesizing,
    Proving,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 6] = [
        JobState::Queued,
        JobState::Synthesizing,
        JobState::Proving,
        JobState::Done,
        JobState::Failed,
        JobState::Cancelled,
    ];

    pub fn is_terminal(self) -> bool {
        matches!(self, JobState::Done | JobState::Failed | JobState::Cancelled)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Synthesizing => "synthesizing",
            JobState::Proving => "proving",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What the synth-worker measured for one partition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SynthStats {
    pub worker: String,
    pub constraints: u64,
    pub synthesize_s: f64,
    pub serialize_s: f64,
    pub store_s: f64,
    /// Serialized partition size: the bytes on the synth → prove hop.
    pub bytes: u64,
    /// Wire form: `raw-bincode` or `compact-witness`.
    #[serde(default)]
    pub encoding: Option<String>,
}

/// What the gpu-worker measured for one partition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProveStats {
    pub worker: String,
    pub backend: String,
    /// From the synth-worker's publish to this worker's pickup.
    pub queue_wait_s: f64,
    pub fetch_s: f64,
    pub deserialize_s: f64,
    /// Rebuilding a, b, c from a compact witness (0 for raw partitions).
    #[serde(default)]
    pub rebuild_s: f64,
    pub prove_s: f64,
    pub verify_s: f64,
    pub bytes_fetched: u64,
}

/// Ledger entry for one partition of a job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PartitionRecord {
    pub synthesized: bool,
    /// Hex of the 192-byte compressed Groth16 proof, once proved and verified.
    pub proof_hex: Option<String>,
    pub synth: Option<SynthStats>,
    pub prove: Option<ProveStats>,
}

/// The job ledger's record of one job, stored as JSON in [`crate::JOBS_BUCKET`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub schema: u32,
    pub id: String,
    pub circuit: CircuitSpec,
    pub priority: Priority,
    pub seed: u64,
    pub state: JobState,
    pub error: Option<String>,
    pub trace_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    pub finished_at_ms: Option<u64>,
    pub partitions: Vec<PartitionRecord>,
    /// Seconds spent assembling the partition proofs once the last one arrived.
    pub assemble_s: Option<f64>,
}

impl JobRecord {
    pub fn kind(&self) -> JobKind {
        self.circuit.kind()
    }

    pub fn synthesized_count(&self) -> u32 {
        self.partitions.iter().filter(|p| p.synthesized).count() as u32
    }

    pub fn proved_count(&self) -> u32 {
        self.partitions.iter().filter(|p| p.proof_hex.is_some()).count() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn circuit_id_round_trips(blocks in 1u32..10_000, constraints in 1u32..(1 << 26)) {
            for spec in [CircuitSpec::Sha256Chain { blocks }, CircuitSpec::DenseChain { constraints }] {
                prop_assert_eq!(CircuitSpec::parse_circuit_id(&spec.circuit_id()), Some(spec));
            }
        }
    }

    #[test]
    fn priority_order_puts_critical_first() {
        assert_eq!(Priority::ALL[0], Priority::Critical);
        assert!(Priority::Critical > Priority::Low);
        assert_eq!(serde_json::to_string(&Priority::High).unwrap(), "\"high\"");
    }

    #[test]
    fn unknown_circuit_id_is_rejected() {
        assert_eq!(CircuitSpec::parse_circuit_id("porep-32g"), None);
        assert_eq!(CircuitSpec::parse_circuit_id("dense-chain-cX"), None);
    }
}
