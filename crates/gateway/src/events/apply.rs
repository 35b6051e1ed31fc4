//! Applying worker events to the job ledger: the gateway's half of the data path.

use snarkflow_wire::{JobEvent, JobEventBody, JobRecord, JobState};
use tracing::warn;

/// The state a non-terminal job is in, from its partitions.
pub(crate) fn derive_state(record: &JobRecord, started: bool) -> JobState {
    let total = record.partitions.len() as u32;
    if record.proved_count() == total {
        // a Filecoin proof is done only once filecoin-proofs has verified it whole
        if snarkflow_circuits::verified_whole(record.kind()) {
            JobState::Proving
        } else {
            JobState::Done
        }
    } else if record.synthesized_count() == total {
        JobState::Proving
    } else if started || record.synthesized_count() > 0 {
        JobState::Synthesizing
    } else {
        JobState::Queued
    }
}

/// Whether `hex` is one compressed Groth16 proof.
fn is_partition_proof(hex: &str) -> bool {
    hex.len() == 2 * snarkflow_wire::PARTITION_PROOF_BYTES && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Longest failure message a worker's event puts into a record (a job's error), in bytes.
const MAX_ERROR_BYTES: usize = 2048;
/// Longest worker name, backend or encoding a worker's stats put into a record, in bytes.
const MAX_LABEL_BYTES: usize = 128;

/// `text` cut to at most `max` bytes at a character boundary, marked when cut: what a worker
/// (or whoever can publish its events) writes into a record is bounded.
fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Largest constraint count a partition's stats may claim: 2^32, sixteen times a 64 GiB PoRep
/// partition (~260 M). The backlog multiplies it by partitions; an unbounded one overflows.
const MAX_CONSTRAINTS: u64 = 1 << 32;
/// Largest byte count a partition's stats may claim (a 64 GiB partition is ~10 GB on the wire).
const MAX_STAT_BYTES: u64 = 1 << 40;
/// Longest stage a partition's stats may claim, in seconds: a week.
const MAX_STAGE_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A stage's seconds as a worker reported them, within 0 ..= a week (negative, NaN: 0).
fn seconds(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(0.0, MAX_STAGE_SECONDS)
    }
}

/// `event` with what its worker wrote bounded, before it reaches a record or a metric: texts
/// cut (error messages to 2 KiB, names to 128 B), counts and seconds within what a real
/// partition can have, the time no later than `now_ms` (a worker's clock ahead of ours, or a
/// forged time, would end a job in the future).
pub(crate) fn bounded_event(mut event: JobEvent, now_ms: u64) -> JobEvent {
    event.at_ms = event.at_ms.min(now_ms);
    match &mut event.body {
        JobEventBody::SynthesisStarted { worker } | JobEventBody::ProvingStarted { worker } => {
            *worker = bounded(worker, MAX_LABEL_BYTES);
        }
        JobEventBody::PartitionSynthesized { stats: s } => {
            s.worker = bounded(&s.worker, MAX_LABEL_BYTES);
            s.encoding = s.encoding.as_deref().map(|e| bounded(e, MAX_LABEL_BYTES));
            s.constraints = s.constraints.min(MAX_CONSTRAINTS);
            s.bytes = s.bytes.min(MAX_STAT_BYTES);
            for v in [&mut s.synthesize_s, &mut s.serialize_s, &mut s.store_s] {
                *v = seconds(*v);
            }
        }
        JobEventBody::PartitionProved { stats: s, .. } => {
            s.worker = bounded(&s.worker, MAX_LABEL_BYTES);
            s.backend = bounded(&s.backend, MAX_LABEL_BYTES);
            s.bytes_fetched = s.bytes_fetched.min(MAX_STAT_BYTES);
            for v in [
                &mut s.queue_wait_s,
                &mut s.fetch_s,
                &mut s.deserialize_s,
                &mut s.rebuild_s,
                &mut s.prove_s,
                &mut s.verify_s,
            ] {
                *v = seconds(*v);
            }
        }
        JobEventBody::PartitionFailed { message, .. } => *message = bounded(message, MAX_ERROR_BYTES),
    }
    event
}

/// Apply one event (bounded by [`bounded_event`] when it was received); returns whether the
/// record changed. Idempotent and order-insensitive: a redelivered or reordered event leaves
/// the same record. Terminal jobs do not change.
pub(crate) fn apply(record: &mut JobRecord, event: &JobEvent) -> bool {
    if record.state.is_terminal() {
        return false;
    }
    let before = record.clone();
    let Some(part) = record.partitions.get_mut(event.partition as usize) else {
        warn!(job_id = %before.id, partition = event.partition, "event for a partition the job does not have");
        return false;
    };
    let mut started = record.state != JobState::Queued;
    match &event.body {
        JobEventBody::SynthesisStarted { .. } => started = true,
        JobEventBody::PartitionSynthesized { stats } => {
            part.synthesized = true;
            part.synth = Some(stats.clone());
        }
        JobEventBody::ProvingStarted { .. } => part.synthesized = true,
        JobEventBody::PartitionProved { .. } if part.proof_hex.is_some() => {
            // the first verified proof of a partition stands (a redelivery proved it again)
            return false;
        }
        JobEventBody::PartitionProved { proof_hex, .. } if !is_partition_proof(proof_hex) => {
            // a worker bug or a forged event: this proof could never be assembled
            record.state = JobState::Failed;
            record.error = Some(format!(
                "partition {} was reported proved with {} hex digits, not a {}-byte proof",
                event.partition,
                proof_hex.len(),
                snarkflow_wire::PARTITION_PROOF_BYTES
            ));
            record.finished_at_ms = Some(event.at_ms);
            return true;
        }
        JobEventBody::PartitionProved { proof_hex, stats } => {
            part.synthesized = true;
            part.proof_hex = Some(proof_hex.clone());
            part.prove = Some(stats.clone());
        }
        JobEventBody::PartitionFailed { .. } if part.proof_hex.is_some() => {
            // a redelivered attempt of a partition already proved (its worker reported the
            // proof, then died before acking): the proof stands
            return false;
        }
        JobEventBody::PartitionFailed { stage, message } => {
            record.state = JobState::Failed;
            record.error = Some(format!("partition {} failed during {}: {message}", event.partition, stage.as_str()));
            record.finished_at_ms = Some(event.at_ms);
            return true;
        }
    }
    record.state = derive_state(record, started);
    if record.state == JobState::Done {
        record.finished_at_ms = Some(event.at_ms);
    }
    *record != before
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn what_a_worker_writes_into_a_record_is_bounded() {
        let mut r = record(2);
        let huge = "é".repeat(1 << 20);
        let stats = SynthStats {
            worker: huge.clone(),
            encoding: Some(huge.clone()),
            constraints: u64::MAX,
            bytes: u64::MAX,
            synthesize_s: -5.0,
            serialize_s: f64::NAN,
            store_s: 1e300,
        };
        let event = bounded_event(ev(0, JobEventBody::PartitionSynthesized { stats }), 1_000);
        assert!(apply(&mut r, &event));
        let synth = r.partitions[0].synth.as_ref().unwrap();
        assert!(synth.worker.len() <= MAX_LABEL_BYTES && synth.worker.ends_with('…'), "{}", synth.worker.len());
        assert!(synth.encoding.as_ref().unwrap().len() <= MAX_LABEL_BYTES);
        assert_eq!((synth.constraints, synth.bytes), (MAX_CONSTRAINTS, MAX_STAT_BYTES));
        assert_eq!((synth.synthesize_s, synth.serialize_s, synth.store_s), (0.0, 0.0, MAX_STAGE_SECONDS));
        // the backlog of many such partitions still adds up without overflowing
        assert!(MAX_CONSTRAINTS.checked_mul(u64::from(u32::MAX)).is_some());
        let failed = ev(1, JobEventBody::PartitionFailed { stage: Stage::Proving, message: huge.clone() });
        let failed = JobEvent { at_ms: u64::MAX, ..failed };
        apply(&mut r, &bounded_event(failed, 1_000));
        let error = r.error.as_ref().unwrap();
        assert!(error.len() <= MAX_ERROR_BYTES + 64 && error.starts_with("partition 1 failed"), "{}", error.len());
        assert_eq!(r.finished_at_ms, Some(1_000), "a time from the future is now");
        let proved = ProveStats { worker: huge, prove_s: f64::INFINITY, bytes_fetched: u64::MAX, ..Default::default() };
        let JobEventBody::PartitionProved { stats, .. } =
            bounded_event(ev(0, JobEventBody::PartitionProved { proof_hex: String::new(), stats: proved }), 9).body
        else {
            unreachable!()
        };
        assert_eq!(
            (stats.prove_s, stats.bytes_fetched, stats.worker.len() <= MAX_LABEL_BYTES),
            (MAX_STAGE_SECONDS, MAX_STAT_BYTES, true)
        );
        // short texts are kept whole
        assert_eq!(bounded("boom", MAX_ERROR_BYTES), "boom");
    }
    use snarkflow_wire::{PartitionRecord, Priority, ProveStats, Stage, SynthStats, SCHEMA_VERSION};

    /// A queued dense-chain job of `partitions` partitions, for tests.
    pub(crate) fn record(partitions: usize) -> JobRecord {
        JobRecord {
            schema: SCHEMA_VERSION,
            id: "j".into(),
            circuit: snarkflow_circuits::circuit("dense-chain-c4"),
            priority: Priority::Normal,
            seed: 1,
            state: JobState::Queued,
            error: None,
            trace_id: None,
            idempotency_key: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            finished_at_ms: None,
            partitions: vec![PartitionRecord::default(); partitions],
            assemble_s: None,
            input: None,
            tenant: None,
            deadline_at_ms: None,
            enqueued: true,
            request_sha256: None,
        }
    }

    fn ev(partition: u32, body: JobEventBody) -> JobEvent {
        JobEvent::new("j", partition, 7, body)
    }

    fn proved(p: u32) -> JobEvent {
        proved_with(p, format!("{p:02x}").repeat(snarkflow_wire::PARTITION_PROOF_BYTES))
    }

    fn proved_with(p: u32, proof_hex: String) -> JobEvent {
        ev(p, JobEventBody::PartitionProved { proof_hex, stats: ProveStats::default() })
    }

    #[test]
    fn a_partition_keeps_its_first_proof_and_a_malformed_one_fails_the_job() {
        let mut r = record(2);
        apply(&mut r, &proved(0));
        let first = r.partitions[0].proof_hex.clone();
        assert!(!apply(&mut r, &proved_with(0, "ab".repeat(192))), "a second proof changes nothing");
        assert_eq!(r.partitions[0].proof_hex, first);
        assert!(apply(&mut r, &proved_with(1, "abcd".into())));
        assert_eq!(r.state, JobState::Failed);
        assert!(r.error.as_deref().unwrap().contains("not a 192-byte proof"), "{:?}", r.error);
        let mut r = record(1);
        assert!(apply(&mut r, &proved_with(0, "zz".repeat(192))));
        assert_eq!(r.state, JobState::Failed, "not hex");
    }

    #[test]
    fn states_follow_partitions_to_done() {
        let mut r = record(2);
        assert!(apply(&mut r, &ev(0, JobEventBody::SynthesisStarted { worker: "w".into() })));
        assert_eq!(r.state, JobState::Synthesizing);
        for p in 0..2 {
            apply(&mut r, &ev(p, JobEventBody::PartitionSynthesized { stats: SynthStats::default() }));
        }
        assert_eq!(r.state, JobState::Proving);
        apply(&mut r, &proved(1));
        assert_eq!(r.state, JobState::Proving);
        apply(&mut r, &proved(0));
        assert_eq!((r.state, r.finished_at_ms), (JobState::Done, Some(7)));
    }

    #[test]
    fn duplicate_and_reordered_events_are_harmless() {
        let mut a = record(1);
        apply(&mut a, &proved(0));
        let mut b = record(1);
        apply(&mut b, &ev(0, JobEventBody::PartitionSynthesized { stats: SynthStats::default() }));
        apply(&mut b, &proved(0));
        assert_eq!(a.state, JobState::Done);
        assert_eq!(a.partitions[0].proof_hex, b.partitions[0].proof_hex);
        // a late duplicate changes nothing on a finished job
        assert!(!apply(&mut a, &ev(0, JobEventBody::PartitionSynthesized { stats: SynthStats::default() })));
        assert!(!apply(&mut a, &proved(0)));
    }

    #[test]
    fn failure_is_terminal_and_named() {
        let mut r = record(3);
        apply(&mut r, &ev(2, JobEventBody::PartitionFailed { stage: Stage::Proving, message: "Bad".into() }));
        assert_eq!(r.state, JobState::Failed);
        assert!(r.error.as_deref().unwrap().contains("partition 2"));
        assert!(!apply(&mut r, &proved(0)), "a failed job takes no more results");
    }

    #[test]
    fn a_late_failure_of_a_proved_partition_is_ignored() {
        let mut r = record(2);
        apply(&mut r, &proved(0));
        let late = ev(0, JobEventBody::PartitionFailed { stage: Stage::Proving, message: "object gone".into() });
        assert!(!apply(&mut r, &late));
        assert_ne!(r.state, JobState::Failed);
    }

    #[test]
    fn cancelled_job_ignores_results() {
        let mut r = record(1);
        r.state = JobState::Cancelled;
        assert!(!apply(&mut r, &proved(0)));
        assert!(r.partitions[0].proof_hex.is_none());
    }

    #[test]
    fn event_for_missing_partition_is_ignored() {
        let mut r = record(1);
        assert!(!apply(&mut r, &proved(5)));
    }
}
