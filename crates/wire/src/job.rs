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

    /// `low`, `normal`, `high` or `critical`.
    pub fn parse(s: &str) -> Option<Priority> {
        Priority::ALL.into_iter().find(|p| p.as_str() == s)
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
    /// Filecoin PoRep commit phase 2: a C1 output in, the sector's seal proof out.
    PorepC2,
    /// Filecoin SnapDeals (empty sector update) proof from the partition vanilla proofs.
    SnapUpdate,
    /// Filecoin WindowPoSt, one partition, from vanilla sector proofs.
    WindowPost,
    /// Filecoin WinningPoSt from vanilla sector proofs.
    WinningPost,
}

impl JobKind {
    pub const ALL: [JobKind; 6] = [
        JobKind::Sha256Chain,
        JobKind::DenseChain,
        JobKind::PorepC2,
        JobKind::SnapUpdate,
        JobKind::WindowPost,
        JobKind::WinningPost,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Sha256Chain => "sha256-chain",
            JobKind::DenseChain => "dense-chain",
            JobKind::PorepC2 => "porep-c2",
            JobKind::SnapUpdate => "snap-update",
            JobKind::WindowPost => "window-post",
            JobKind::WinningPost => "winning-post",
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
    Sha256Chain {
        blocks: u32,
    },
    DenseChain {
        constraints: u32,
    },
    /// Interactive PoRep (`StackedDrg<size>V1_1`) or Synthetic PoRep
    /// (`StackedDrg<size>V1_1_Feat_SyntheticPoRep`), one circuit per partition.
    PorepC2 {
        sector_size: u64,
        synthetic: bool,
    },
    /// `StackedDrg<size>V1` empty sector update.
    SnapUpdate {
        sector_size: u64,
    },
    /// `StackedDrgWindow<size>V1_2`.
    WindowPost {
        sector_size: u64,
    },
    /// `StackedDrgWinning<size>V1`.
    WinningPost {
        sector_size: u64,
    },
}

/// Sector sizes Filecoin has published proofs for, with their short names.
pub const SECTOR_SIZES: [(u64, &str); 5] =
    [(2 << 10, "2KiB"), (8 << 20, "8MiB"), (512 << 20, "512MiB"), (32 << 30, "32GiB"), (64 << 30, "64GiB")];

/// `2KiB` for 2048, and so on; `None` for a size Filecoin does not use.
pub fn sector_size_name(bytes: u64) -> Option<&'static str> {
    SECTOR_SIZES.iter().find(|(b, _)| *b == bytes).map(|(_, n)| *n)
}

/// Inverse of [`sector_size_name`]; also takes plain byte counts.
pub fn parse_sector_size(s: &str) -> Option<u64> {
    SECTOR_SIZES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(s))
        .map(|(b, _)| *b)
        .or_else(|| s.parse().ok().filter(|b| sector_size_name(*b).is_some()))
}

impl CircuitSpec {
    pub fn kind(&self) -> JobKind {
        match self {
            CircuitSpec::Sha256Chain { .. } => JobKind::Sha256Chain,
            CircuitSpec::DenseChain { .. } => JobKind::DenseChain,
            CircuitSpec::PorepC2 { .. } => JobKind::PorepC2,
            CircuitSpec::SnapUpdate { .. } => JobKind::SnapUpdate,
            CircuitSpec::WindowPost { .. } => JobKind::WindowPost,
            CircuitSpec::WinningPost { .. } => JobKind::WinningPost,
        }
    }

    /// Sector size of a Filecoin circuit.
    pub fn sector_size(&self) -> Option<u64> {
        match *self {
            CircuitSpec::PorepC2 { sector_size, .. }
            | CircuitSpec::SnapUpdate { sector_size }
            | CircuitSpec::WindowPost { sector_size }
            | CircuitSpec::WinningPost { sector_size } => Some(sector_size),
            CircuitSpec::Sha256Chain { .. } | CircuitSpec::DenseChain { .. } => None,
        }
    }

    /// Stable identity of the circuit shape: names shapes, metrics and (for the synthetic
    /// kinds) parameter files. Filecoin parameter files keep filecoin-proofs' own names. It is
    /// the kind's name, a dash, and the spec's own part ([`CircuitSpec::id_params`]).
    pub fn circuit_id(&self) -> String {
        format!("{}-{}", self.kind().as_str(), self.id_params())
    }

    /// What follows the kind's name in a circuit id: `b64`, `c1024`, `32GiB`, `synthetic-32GiB`.
    fn id_params(&self) -> String {
        let size = |b: u64| sector_size_name(b).map(str::to_owned).unwrap_or_else(|| format!("{b}B"));
        match *self {
            CircuitSpec::Sha256Chain { blocks } => format!("b{blocks}"),
            CircuitSpec::DenseChain { constraints } => format!("c{constraints}"),
            CircuitSpec::PorepC2 { sector_size, synthetic: false } => size(sector_size),
            CircuitSpec::PorepC2 { sector_size, synthetic: true } => format!("synthetic-{}", size(sector_size)),
            CircuitSpec::SnapUpdate { sector_size }
            | CircuitSpec::WindowPost { sector_size }
            | CircuitSpec::WinningPost { sector_size } => size(sector_size),
        }
    }

    /// Inverse of [`CircuitSpec::id_params`] for a circuit of `kind`. The match is over every
    /// kind, so a kind added to [`JobKind`] does not compile until its ids parse.
    fn from_id_params(kind: JobKind, params: &str) -> Option<CircuitSpec> {
        Some(match kind {
            JobKind::Sha256Chain => CircuitSpec::Sha256Chain { blocks: params.strip_prefix('b')?.parse().ok()? },
            JobKind::DenseChain => CircuitSpec::DenseChain { constraints: params.strip_prefix('c')?.parse().ok()? },
            JobKind::PorepC2 => match params.strip_prefix("synthetic-") {
                Some(size) => CircuitSpec::PorepC2 { sector_size: parse_sector_size(size)?, synthetic: true },
                None => CircuitSpec::PorepC2 { sector_size: parse_sector_size(params)?, synthetic: false },
            },
            JobKind::SnapUpdate => CircuitSpec::SnapUpdate { sector_size: parse_sector_size(params)? },
            JobKind::WindowPost => CircuitSpec::WindowPost { sector_size: parse_sector_size(params)? },
            JobKind::WinningPost => CircuitSpec::WinningPost { sector_size: parse_sector_size(params)? },
        })
    }

    /// Inverse of [`CircuitSpec::circuit_id`].
    pub fn parse_circuit_id(id: &str) -> Option<CircuitSpec> {
        JobKind::ALL.into_iter().find_map(|kind| {
            let params = id.strip_prefix(kind.as_str())?.strip_prefix('-')?;
            CircuitSpec::from_id_params(kind, params)
        })
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
    #[serde(default = "published")]
    pub enqueued: bool,
    /// SHA-256 (hex) of the request's kind and input: an idempotency key reused for a
    /// different request is refused by comparing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sha256: Option<String>,
}

/// Records written before `enqueued` existed were published before they were written.
fn published() -> bool {
    true
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
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn circuit_id_round_trips(blocks in 1u32..10_000, constraints in 1u32..(1 << 26)) {
            for spec in [CircuitSpec::Sha256Chain { blocks }, CircuitSpec::DenseChain { constraints }] {
                prop_assert_eq!(CircuitSpec::parse_circuit_id(&spec.circuit_id()), Some(spec));
            }
        }

        #[test]
        fn filecoin_circuit_ids_round_trip(i in 0usize..5, synthetic: bool) {
            let sector_size = SECTOR_SIZES[i].0;
            for spec in [
                CircuitSpec::PorepC2 { sector_size, synthetic },
                CircuitSpec::SnapUpdate { sector_size },
                CircuitSpec::WindowPost { sector_size },
                CircuitSpec::WinningPost { sector_size },
            ] {
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

    /// `JobKind::ALL` is a list the compiler does not check; this match is. A kind added to
    /// the enum needs a position here, and the test fails until `ALL` holds it there.
    #[test]
    fn every_kind_is_in_all() {
        fn position(kind: JobKind) -> usize {
            match kind {
                JobKind::Sha256Chain => 0,
                JobKind::DenseChain => 1,
                JobKind::PorepC2 => 2,
                JobKind::SnapUpdate => 3,
                JobKind::WindowPost => 4,
                JobKind::WinningPost => 5,
            }
        }
        for (i, kind) in JobKind::ALL.into_iter().enumerate() {
            assert_eq!(position(kind), i, "{kind:?}");
            assert_eq!(JobKind::parse(kind.as_str()), Some(kind));
        }
        let largest = JobKind::ALL.into_iter().map(position).max().unwrap();
        assert_eq!(largest + 1, JobKind::ALL.len());
    }

    #[test]
    fn circuit_ids_are_the_ones_already_on_disk() {
        // parameter files, shapes and ledger records name circuits by these ids
        for (spec, id) in [
            (CircuitSpec::Sha256Chain { blocks: 64 }, "sha256-chain-b64"),
            (CircuitSpec::DenseChain { constraints: 1024 }, "dense-chain-c1024"),
            (CircuitSpec::PorepC2 { sector_size: 32 << 30, synthetic: false }, "porep-c2-32GiB"),
            (CircuitSpec::PorepC2 { sector_size: 64 << 30, synthetic: true }, "porep-c2-synthetic-64GiB"),
            (CircuitSpec::SnapUpdate { sector_size: 2048 }, "snap-update-2KiB"),
            (CircuitSpec::WindowPost { sector_size: 32 << 30 }, "window-post-32GiB"),
            (CircuitSpec::WinningPost { sector_size: 512 << 20 }, "winning-post-512MiB"),
        ] {
            assert_eq!(spec.circuit_id(), id);
            assert_eq!(CircuitSpec::parse_circuit_id(id), Some(spec));
        }
    }

    #[test]
    fn unknown_circuit_id_is_rejected() {
        assert_eq!(CircuitSpec::parse_circuit_id("porep-32g"), None);
        assert_eq!(CircuitSpec::parse_circuit_id("dense-chain-cX"), None);
        assert_eq!(CircuitSpec::parse_circuit_id("porep-c2-3GiB"), None);
        assert_eq!(CircuitSpec::parse_circuit_id("porep-c2"), None);
        assert_eq!(CircuitSpec::parse_circuit_id("sha256-chainb1"), None);
    }
}
