//! Names of the JetStream streams, consumers, buckets and subjects snarkflow uses.
//!
//! The data path: `snarkflow.synth.<priority>` (one message per partition to synthesize) →
//! object store bucket + `snarkflow.prove.<priority>` (one message per synthesized partition) →
//! `snarkflow.events.<job>` (progress, results, failures) → the gateway's job ledger (KV).

use crate::{Priority, Stage};

/// Work-queue stream holding partitions waiting for synthesis.
pub const SYNTH_STREAM: &str = "SNARKFLOW_SYNTH";
/// Work-queue stream holding synthesized partitions waiting for a prover.
pub const PROVE_STREAM: &str = "SNARKFLOW_PROVE";
/// Stream of job events (partition synthesized, partition proved, failures) for the gateway.
pub const EVENTS_STREAM: &str = "SNARKFLOW_EVENTS";
/// Key-value bucket holding one [`crate::JobRecord`] per job id: the source of truth for job
/// state, so a gateway restart loses nothing.
pub const JOBS_BUCKET: &str = "snarkflow_jobs";
/// Key-value bucket mapping idempotency keys to job ids.
pub const IDEMPOTENCY_BUCKET: &str = "snarkflow_idempotency";
/// Object store bucket holding serialized synthesized partitions between the two workers.
pub const PARTITIONS_BUCKET: &str = "snarkflow_partitions";

/// Stream keeping the server's max-deliveries advisories of the work streams (dead letters),
/// so none is lost while no gateway runs.
pub const DEAD_LETTERS_STREAM: &str = "SNARKFLOW_DEAD_LETTERS";
/// Durable consumer the gateway uses to handle dead letters.
pub const DEAD_LETTERS_CONSUMER: &str = "gateway-dead-letters";

/// Durable consumer the gateway uses to apply job events.
pub const EVENTS_CONSUMER: &str = "gateway-ledger";

/// Subject of one priority lane of a stage: `snarkflow.synth.high`, `snarkflow.prove.low`.
pub fn lane_subject(stage: Stage, priority: Priority) -> String {
    format!("snarkflow.{}.{}", stage.lane_name(), priority.as_str())
}

/// Subject on which a partition to synthesize is published.
pub fn synth_subject(priority: Priority) -> String {
    lane_subject(Stage::Synthesis, priority)
}

/// Subject on which a synthesized partition is announced to provers.
pub fn prove_subject(priority: Priority) -> String {
    lane_subject(Stage::Proving, priority)
}

/// Subject for events of one job.
pub fn events_subject(job_id: &str) -> String {
    format!("snarkflow.events.{job_id}")
}

/// Durable consumer name for one priority lane of a work stream (`synth-high`, `prove-low`).
/// Work-queue streams forbid overlapping consumers, so each lane has its own.
pub fn lane_consumer(stage: Stage, priority: Priority) -> String {
    format!("{}-{}", stage.lane_name(), priority.as_str())
}

/// Object name of a synthesized partition in [`PARTITIONS_BUCKET`].
pub fn partition_object(job_id: &str, partition: u32) -> String {
    format!("{job_id}/{partition}")
}

/// Object name of a job's input (C1 output, vanilla proofs) in [`PARTITIONS_BUCKET`].
pub fn input_object(job_id: &str) -> String {
    format!("{job_id}/input")
}

/// De-duplication id for a message about one partition at one stage; JetStream drops a second
/// publish with the same id within the stream's duplicate window, so a redelivered synthesis
/// does not announce the partition twice.
pub fn partition_msg_id(stage: Stage, job_id: &str, partition: u32) -> String {
    format!("{}:{job_id}:{partition}", stage.lane_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_are_distinct_per_priority() {
        let subjects: std::collections::HashSet<_> = Priority::ALL.iter().map(|p| synth_subject(*p)).collect();
        assert_eq!(subjects.len(), Priority::ALL.len());
        assert_eq!(synth_subject(Priority::Critical), "snarkflow.synth.critical");
        assert_eq!(lane_consumer(Stage::Proving, Priority::Low), "prove-low");
        assert_eq!(partition_msg_id(Stage::Synthesis, "j", 3), "synth:j:3");
    }
}
