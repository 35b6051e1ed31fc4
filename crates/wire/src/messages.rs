//! Messages published on the work and event streams.

use serde::{Deserialize, Serialize};

use crate::{CircuitSpec, InputRef, Priority, ProveStats, SynthStats, SCHEMA_VERSION};

/// One partition to synthesize; published by the gateway on the synth stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynthTask {
    pub schema: u32,
    pub job_id: String,
    pub circuit: CircuitSpec,
    pub priority: Priority,
    /// Job seed; partition `i`'s witness derives from (seed, i).
    pub seed: u64,
    pub partition: u32,
    pub partitions: u32,
    /// The job's input, for the kinds that take one (`TAKES_INPUT`: the Filecoin kinds, `cube`).
    #[serde(default)]
    pub input: Option<InputRef>,
}

/// How a synthesized partition is encoded in the object store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionEncoding {
    /// bincode of the full `SynthesizedPartition` (a, b, c, assignments, densities).
    RawBincode,
    /// The witness only, in the compact encoding; the prover rebuilds a, b, c from the
    /// circuit's constraint shape (whose hash the payload names).
    CompactWitness,
}

impl PartitionEncoding {
    /// The name in messages and stats: `raw-bincode` or `compact-witness`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionEncoding::RawBincode => "raw-bincode",
            PartitionEncoding::CompactWitness => "compact-witness",
        }
    }
}

impl std::str::FromStr for PartitionEncoding {
    type Err = UnknownEncoding;

    /// `compact` / `compact-witness` or `raw` / `raw-bincode`.
    fn from_str(s: &str) -> Result<Self, UnknownEncoding> {
        match s {
            "compact" | "compact-witness" => Ok(PartitionEncoding::CompactWitness),
            "raw" | "raw-bincode" => Ok(PartitionEncoding::RawBincode),
            other => Err(UnknownEncoding(other.to_owned())),
        }
    }
}

/// A partition wire format no [`PartitionEncoding`] names.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown wire format {0:?}; expected compact or raw")]
pub struct UnknownEncoding(pub String);

/// A synthesized partition ready for proving; published by a synth-worker on the prove stream.
/// The partition itself is in the object store under `object`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProveTask {
    pub schema: u32,
    pub job_id: String,
    pub circuit: CircuitSpec,
    pub priority: Priority,
    pub partition: u32,
    pub partitions: u32,
    pub object: String,
    pub encoding: PartitionEncoding,
    /// SHA-256 of the stored bytes, checked by the prover before deserializing.
    pub sha256_hex: String,
    pub bytes: u64,
    /// Unix milliseconds when the task was published (start of the queue wait).
    pub published_at_ms: u64,
}

/// The two work stages a partition passes through; each has its stream, lanes and workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Synthesis,
    Proving,
}

impl Stage {
    pub const ALL: [Stage; 2] = [Stage::Synthesis, Stage::Proving];

    /// `synthesis` or `proving`, for logs and error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Synthesis => "synthesis",
            Stage::Proving => "proving",
        }
    }

    /// The short name in subjects, consumer names and metric names: `synth` or `prove`.
    pub fn lane_name(self) -> &'static str {
        match self {
            Stage::Synthesis => "synth",
            Stage::Proving => "prove",
        }
    }

    /// The work-queue stream holding this stage's tasks.
    pub fn stream(self) -> &'static str {
        match self {
            Stage::Synthesis => crate::SYNTH_STREAM,
            Stage::Proving => crate::PROVE_STREAM,
        }
    }
}

/// What every work message says about the partition it is for; the worker runtime needs no
/// more than this to pull, span, settle and report a task of either stage.
pub trait PartitionTask {
    /// The stage whose workers consume this task.
    const STAGE: Stage;
    fn job_id(&self) -> &str;
    fn circuit(&self) -> &CircuitSpec;
    fn partition(&self) -> u32;
    fn partitions(&self) -> u32;
    /// The object this task owns (deleted when the task is dropped or fails for good).
    fn object(&self) -> Option<&str>;
}

impl PartitionTask for SynthTask {
    const STAGE: Stage = Stage::Synthesis;
    fn job_id(&self) -> &str {
        &self.job_id
    }
    fn circuit(&self) -> &CircuitSpec {
        &self.circuit
    }
    fn partition(&self) -> u32 {
        self.partition
    }
    fn partitions(&self) -> u32 {
        self.partitions
    }
    fn object(&self) -> Option<&str> {
        None
    }
}

impl PartitionTask for ProveTask {
    const STAGE: Stage = Stage::Proving;
    fn job_id(&self) -> &str {
        &self.job_id
    }
    fn circuit(&self) -> &CircuitSpec {
        &self.circuit
    }
    fn partition(&self) -> u32 {
        self.partition
    }
    fn partitions(&self) -> u32 {
        self.partitions
    }
    fn object(&self) -> Option<&str> {
        Some(&self.object)
    }
}

/// Progress and results of a job; published by workers on the events stream and applied to the
/// job ledger by the gateway. Applying the same event twice is harmless.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobEvent {
    pub schema: u32,
    pub job_id: String,
    pub partition: u32,
    pub at_ms: u64,
    pub body: JobEventBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum JobEventBody {
    SynthesisStarted {
        worker: String,
    },
    PartitionSynthesized {
        stats: SynthStats,
    },
    ProvingStarted {
        worker: String,
    },
    /// The partition proof, already verified against the verifying key by the prover.
    PartitionProved {
        proof_hex: String,
        stats: ProveStats,
    },
    /// A permanent failure: the job fails with this message.
    PartitionFailed {
        stage: Stage,
        message: String,
    },
}

impl JobEvent {
    pub fn new(job_id: &str, partition: u32, at_ms: u64, body: JobEventBody) -> Self {
        JobEvent { schema: SCHEMA_VERSION, job_id: job_id.to_owned(), partition, at_ms, body }
    }
}

/// Failure to decode a message from the wire.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
    #[error("message schema {found} is not the supported schema {expected}")]
    Schema { found: u32, expected: u32 },
}

/// Messages carry a schema version that consumers check.
pub trait Versioned {
    fn schema(&self) -> u32;
}

macro_rules! versioned {
    ($($t:ty),*) => {$(impl Versioned for $t { fn schema(&self) -> u32 { self.schema } })*};
}
versioned!(SynthTask, ProveTask, JobEvent, crate::JobRecord);

/// Encode a message as JSON (messages are small; JSON keeps them readable with `nats sub`).
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    serde_json::to_vec(msg).expect("wire types always serialize")
}

/// Decode a message and check its schema version.
pub fn decode<T: for<'de> Deserialize<'de> + Versioned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let msg: T = serde_json::from_slice(bytes)?;
    if msg.schema() != SCHEMA_VERSION {
        return Err(DecodeError::Schema { found: msg.schema(), expected: SCHEMA_VERSION });
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn priority() -> impl Strategy<Value = Priority> {
        prop::sample::select(Priority::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn prove_task_round_trips(job in "[a-f0-9-]{1,36}", partition in 0u32..64, bytes: u64,
                                  blocks in 1u32..100, p in priority()) {
            let task = ProveTask {
                schema: SCHEMA_VERSION,
                job_id: job.clone(),
                circuit: CircuitSpec::new(crate::JobKind::new("sha256-chain"), &format!("b{blocks}")).unwrap(),
                priority: p,
                partition,
                partitions: partition + 1,
                object: crate::partition_object(&job, partition),
                encoding: PartitionEncoding::RawBincode,
                sha256_hex: "00".repeat(32),
                bytes,
                published_at_ms: 1,
            };
            let back: ProveTask = decode(&encode(&task)).unwrap();
            prop_assert_eq!(back, task);
        }
    }

    /// A synthesis task queued by a schema 1 gateway is refused by its schema, whatever its form.
    #[test]
    fn a_task_of_schema_1_is_refused() {
        let old = br#"{"schema":1,"job_id":"j","circuit":{"kind":"porep-c2","spec":"32GiB"},
            "priority":"high","seed":0,"partition":3,"partitions":10,"input":null}"#;
        let err = decode::<SynthTask>(old).unwrap_err();
        assert!(matches!(err, DecodeError::Schema { found: 1, expected: 2 }), "{err}");
    }

    #[test]
    fn event_round_trips_and_schema_is_checked() {
        let ev =
            JobEvent::new("j", 2, 5, JobEventBody::PartitionFailed { stage: Stage::Proving, message: "boom".into() });
        let back: JobEvent = decode(&encode(&ev)).unwrap();
        assert_eq!(back, ev);

        let mut future = ev.clone();
        future.schema = SCHEMA_VERSION + 1;
        let err = decode::<JobEvent>(&encode(&future)).unwrap_err();
        assert!(matches!(err, DecodeError::Schema { found, .. } if found == SCHEMA_VERSION + 1));
    }
}
