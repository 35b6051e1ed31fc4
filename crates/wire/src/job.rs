//! Jobs as clients submit them and as the job ledger records them.

use serde::{Deserialize, Serialize};

use crate::{CircuitSpec, JobKind};

/// Size of one compressed BLS12-381 Groth16 partition proof.
pub const PARTITION_PROOF_BYTES: usize = 192;

/// Largest number of partitions one job may fan out into.
pub const MAX_PARTITIONS: u32 = 64;
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

    /// `low`, `normal`, `high` or `critical`.
    pub fn parse(s: &str) -> Option<Priority> {
        Priority::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// Sector sizes Filecoin has published proofs for, with their short names.
pub const SECTOR_SIZES: [(u64, &str); 5] =
    [(2 << 10, "2KiB"), (8 << 20, "8MiB"), (512 << 20, "512MiB"), (32 << 30, "32GiB"), (64 << 30, "64GiB")];

/// `2KiB` for 2048, and so on; `None` for a size Filecoin does not use.
pub fn sector_size_name(bytes: u64) -> Option<&'static str> {
    SECTOR_SIZES.iter().find(|(b, _)| *b == bytes).map(|(_, n)| *n)
}

/// How circuit ids write a sector size: its name, or `<bytes>B` for a size Filecoin does not use.
pub fn sector_size_label(bytes: u64) -> String {
    sector_size_name(bytes).map(str::to_owned).unwrap_or_else(|| format!("{bytes}B"))
}

/// Inverse of [`sector_size_name`]; also takes plain byte counts.
pub fn parse_sector_size(s: &str) -> Option<u64> {
    SECTOR_SIZES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(s))
        .map(|(b, _)| *b)
        .or_else(|| s.parse().ok().filter(|b| sector_size_name(*b).is_some()))
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProveStats {
    pub worker: String,
    pub backend: String,
    /// From the synth-worker's publish to this worker's pickup.
    pub queue_wait_s: f64,
    pub fetch_s: f64,
    pub deserialize_s: f64,
    /// Getting a compact witness ready for the device after decoding it: rebuilding a, b, c on
    /// the CPU, or, for the resident prover, uploading it to the device (0 for raw partitions).
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
    /// Seconds spent assembling the partition proofs once the last one arrived (for the
    /// Filecoin kinds, including filecoin-proofs' verification of the whole proof).
    pub assemble_s: Option<f64>,
    /// The job's input (C1 output, vanilla proofs) in the object store, for the kinds that
    /// have one.
    #[serde(default)]
    pub input: Option<InputRef>,
    /// The tenant whose API token submitted the job (`None`: submitted with authentication
    /// off, visible to admin tokens only once it is on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// When the job fails if it has not finished (milliseconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_at_ms: Option<u64>,
    /// Whether every partition's synthesis task has been published. A record left `false`
    /// (the gateway stopped mid fan-out) is completed by the next ledger pass.
    pub enqueued: bool,
    /// SHA-256 (hex) of the request's kind and input: an idempotency key reused for a
    /// different request is refused by comparing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sha256: Option<String>,
}

/// A job input stored in the object store: large (a 32 GiB C1 output is ~51 MB), so it
/// travels by reference and is checked against its digest when read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRef {
    pub object: String,
    pub sha256_hex: String,
    pub bytes: u64,
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

    #[test]
    fn priority_order_puts_critical_first() {
        assert_eq!(Priority::ALL[0], Priority::Critical);
        assert!(Priority::Critical > Priority::Low);
        assert_eq!(serde_json::to_string(&Priority::High).unwrap(), "\"high\"");
    }
}
