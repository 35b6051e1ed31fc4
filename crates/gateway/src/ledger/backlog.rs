//! The work waiting for each stage, weighted by its size: what autoscalers follow. A queue depth
//! counts a 2 KiB partition like a 32 GiB one (~50 times the constraints); the backlog counts
//! constraints — partitions not yet synthesized for the synth-workers, partitions synthesized
//! and not yet proved for the gpu-workers — and the GPU seconds those imply at the rate the
//! operator gives (`--gpu-constraints-per-second`).

use std::collections::HashMap;

use snarkflow_wire::CircuitSpec;

use crate::JobSummary;

/// Constraints per second one GPU proves: an H200 with the resident prover measured 130.3 M
/// constraints (a 32 GiB PoRep partition) in 1.99 s (docs/benchmarks.md, 2026-12-03).
pub(crate) const DEFAULT_GPU_CONSTRAINTS_PER_SECOND: u64 = 65_000_000;

/// Constraints waiting for each stage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Backlog {
    /// Partitions of unfinished jobs not yet synthesized.
    pub(crate) synth: u64,
    /// Partitions synthesized and not yet proved (queued or on a GPU).
    pub(crate) prove: u64,
}

impl Backlog {
    /// The backlog of `jobs` (unfinished ones count). A partition's size is what a
    /// synth-worker reported for its circuit (any job of that circuit in `jobs`), else the
    /// size a test kind declares, else — a circuit no partition of which has been synthesized
    /// yet — the largest size known, so that a first 32 GiB job scales up rather than down.
    pub(crate) fn of(jobs: &[JobSummary]) -> Backlog {
        let mut sizes: HashMap<CircuitSpec, u64> = HashMap::new();
        for j in jobs {
            if let Some(c) = j.constraints {
                let known = sizes.entry(j.circuit.clone()).or_default();
                *known = (*known).max(c);
            }
        }
        let largest = sizes.values().copied().max().unwrap_or(1);
        let size = |spec: &CircuitSpec| {
            sizes.get(spec).copied().or_else(|| snarkflow_circuits::test_constraints(spec)).unwrap_or(largest)
        };
        let mut backlog = Backlog::default();
        for j in jobs.iter().filter(|j| !j.state.is_terminal()) {
            let per = size(&j.circuit);
            let synthesized = j.synthesized.min(j.partitions);
            backlog.synth += u64::from(j.partitions - synthesized) * per;
            backlog.prove += u64::from(synthesized.saturating_sub(j.proved)) * per;
        }
        backlog
    }

    /// Seconds of one GPU the proving backlog needs at `rate` constraints per second.
    pub(crate) fn gpu_seconds(&self, rate: u64) -> f64 {
        self.prove as f64 / rate.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snarkflow_wire::JobState;

    fn porep_32() -> CircuitSpec {
        snarkflow_circuits::circuit("porep-c2-32GiB")
    }

    fn porep_2k() -> CircuitSpec {
        snarkflow_circuits::circuit("porep-c2-2KiB")
    }
    const SIZE_32: u64 = 130_278_869;
    const SIZE_2K: u64 = 2_687_961;

    /// A job of `partitions`, `synthesized` and `proved` of them, whose synth-workers reported
    /// `constraints` per partition.
    fn job(circuit: CircuitSpec, state: JobState, counts: (u32, u32, u32), constraints: Option<u64>) -> JobSummary {
        let (partitions, synthesized, proved) = counts;
        JobSummary {
            id: format!("{circuit:?}-{synthesized}-{proved}"),
            kind: circuit.kind(),
            state,
            tenant: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            deadline_at_ms: None,
            enqueued: true,
            circuit,
            partitions,
            synthesized,
            proved,
            constraints,
        }
    }

    #[test]
    fn partitions_weigh_what_their_circuit_weighs() {
        let jobs = [
            job(porep_32(), JobState::Proving, (10, 4, 1), Some(SIZE_32)),
            // not synthesized yet: sized from the other job of its circuit
            job(porep_32(), JobState::Queued, (10, 0, 0), None),
            // finished jobs wait for nothing
            job(porep_32(), JobState::Done, (10, 10, 10), Some(SIZE_32)),
            job(porep_2k(), JobState::Proving, (1, 1, 0), Some(SIZE_2K)),
        ];
        let b = Backlog::of(&jobs);
        assert_eq!(b.synth, (6 + 10) * SIZE_32);
        assert_eq!(b.prove, 3 * SIZE_32 + SIZE_2K);
        assert!((b.gpu_seconds(65_000_000) - 6.054).abs() < 0.01, "{}", b.gpu_seconds(65_000_000));
    }

    #[test]
    fn an_unknown_circuit_counts_as_the_largest_known_and_a_test_kind_as_it_declares() {
        let dense = snarkflow_circuits::circuit("dense-chain-c5000");
        let jobs = [
            job(porep_2k(), JobState::Proving, (1, 1, 0), Some(SIZE_2K)),
            job(porep_32(), JobState::Queued, (10, 0, 0), None),
            job(dense.clone(), JobState::Queued, (3, 0, 0), None),
        ];
        let b = Backlog::of(&jobs);
        let dense_size = snarkflow_circuits::test_constraints(&dense).expect("a test kind declares its size");
        // the 2 KiB PoRep's reported size stands in for the 32 GiB one nobody synthesized yet
        assert_eq!(b.synth, 10 * SIZE_2K + 3 * dense_size);
        assert_eq!(b.prove, SIZE_2K);
        assert_eq!(
            Backlog::of(&[job(porep_32(), JobState::Queued, (10, 0, 0), None)]).synth,
            10,
            "nothing known: a partition each"
        );
    }
}
