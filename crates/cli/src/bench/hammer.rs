//! `snarkflow bench hammer`: many verified proofs from several threads on this process's
//! device, with the gpu-worker's device discipline or without it.

use std::time::Instant;

use snarkflow_circuits::JobInput;
use snarkflow_prover::ParamStore;
use snarkflow_synthesis::{Synthesize, SynthesizedPartition};
use snarkflow_wire::CircuitSpec;

use super::timed;

/// How `snarkflow bench hammer` hammers.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    /// Proofs in all.
    pub proofs: usize,
    /// Distinct partitions, synthesized once and proved in turn.
    pub partitions: usize,
    pub threads: usize,
    /// One partition on the device at a time, as a gpu-worker's slots take turns.
    pub locked: bool,
}

/// `snarkflow bench hammer`: probe the device, load the parameters, hammer, print the summary;
/// whether every proof was valid.
pub(super) fn command(
    (spec, input, available): (CircuitSpec, Option<JobInput>, u32),
    run: Run,
    params_dir: &std::path::Path,
) -> anyhow::Result<bool> {
    let report = snarkflow_prover::device::probe()?;
    println!(
        "device: {} backend, {} ({}), self-test {:.2} s",
        report.backend,
        report.label(),
        report.names(),
        report.self_test_seconds
    );
    let params = ParamStore::new(params_dir, snarkflow_circuits::catalog()).get(&spec, false)?;
    let parts = hammer_partitions(&spec, input.as_ref(), available, run.partitions)?;
    let discipline =
        if run.locked { "locked (one partition on the device at a time)" } else { "UNLOCKED (concurrent device use)" };
    println!(
        "hammer: {} x {} proofs of {} distinct partitions, {} threads, {discipline}",
        spec.circuit_id(),
        run.proofs,
        parts.len(),
        run.threads,
    );
    let summary = hammer(&params, &parts, run.proofs, run.threads, run.locked);
    println!(
        "HAMMER backend {} threads {} {} proofs {} invalid {} errors {} wall {:.2} s => {:.1} valid proofs/min; median prove {:.3} s",
        snarkflow_prover::backend_name(),
        run.threads,
        if run.locked { "locked" } else { "unlocked" },
        summary.proofs,
        summary.invalid,
        summary.errors,
        summary.wall_s,
        60.0 * (summary.proofs - summary.invalid - summary.errors) as f64 / summary.wall_s,
        summary.median_prove_s
    );
    Ok(summary.invalid + summary.errors == 0)
}

/// What `snarkflow bench hammer` counted.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct HammerSummary {
    /// Proofs attempted: valid + invalid + errors.
    pub proofs: usize,
    pub invalid: usize,
    pub errors: usize,
    pub wall_s: f64,
    pub median_prove_s: f64,
}

/// `snarkflow bench hammer`: `proofs` proofs of `partitions` (distinct, synthesized once) from
/// `threads` threads at once on this process's device, every proof verified. `locked` is the
/// gpu-worker's discipline (one partition on the device at a time, the next one waiting
/// prepared); unlocked, the threads call the prover concurrently, as several stock processes
/// sharing one GPU do.
pub(super) fn hammer(
    params: &snarkflow_prover::LoadedParams,
    partitions: &[SynthesizedPartition],
    proofs: usize,
    threads: usize,
    locked: bool,
) -> HammerSummary {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let device = Mutex::new(());
    let results = Mutex::new((Vec::new(), 0usize, 0usize));
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= proofs {
                    break;
                }
                let partition = partitions[i % partitions.len()].clone();
                let public = partition.public_inputs().to_vec();
                let guard = locked.then(|| device.lock().unwrap_or_else(|p| p.into_inner()));
                let (proof, prove_s) = timed(|| params.prove(partition, &mut rand::rngs::OsRng));
                drop(guard);
                let mut r = results.lock().unwrap_or_else(|p| p.into_inner());
                match proof {
                    Ok(proof) if snarkflow_prover::verify(&params.pvk, &proof, &public) => r.0.push(prove_s),
                    Ok(_) => {
                        r.1 += 1;
                        println!("proof {i} (partition {}) INVALID", i % partitions.len());
                    }
                    Err(e) => {
                        r.2 += 1;
                        println!("proof {i}: error: {e}");
                    }
                }
            });
        }
    });
    let wall_s = started.elapsed().as_secs_f64();
    let (mut seconds, invalid, errors) = results.into_inner().unwrap_or_else(|p| p.into_inner());
    seconds.sort_by(f64::total_cmp);
    let median_prove_s = seconds.get(seconds.len() / 2).copied().unwrap_or(0.0);
    HammerSummary { proofs: seconds.len() + invalid + errors, invalid, errors, wall_s, median_prove_s }
}

/// Synthesize `count` distinct partitions of `spec` for [`hammer`]: seeds 0, 1, … for the
/// synthetic circuits; a Filecoin job's partitions in turn (`available` of them, from `input`).
pub(super) fn hammer_partitions(
    spec: &CircuitSpec,
    input: Option<&JobInput>,
    available: u32,
    count: usize,
) -> anyhow::Result<Vec<SynthesizedPartition>> {
    partitions_of(spec, input, available, count, None)
}

/// `count` partitions to prove, as `hammer_partitions`; with a constraint shape, the way the
/// pipeline makes them where the kind has a native witness generator: the synth-worker's native
/// witness, then a, b and c from the shape as the gpu-worker rebuilds them (the same partition
/// as the gadgets': tested). The gadgets alone take minutes on a 32 GiB WindowPoSt partition
/// (424 s on one core), the native generator and the rebuild seconds.
pub(super) fn partitions_of(
    spec: &CircuitSpec,
    input: Option<&JobInput>,
    available: u32,
    count: usize,
    shape: Option<&snarkflow_synthesis::ConstraintShape>,
) -> anyhow::Result<Vec<SynthesizedPartition>> {
    let id = spec.circuit_id();
    let available = available.max(1);
    (0..count.max(1))
        .map(|i| {
            let (seed, partition) = (i as u64, (i as u32) % available);
            if let Some(shape) = shape {
                if let Some(witness) = snarkflow_circuits::native_witness(spec, seed, partition, input) {
                    return Ok(shape.rebuild(witness?)?);
                }
            }
            Ok(snarkflow_circuits::visit_with_witness(spec, seed, partition, input, Synthesize(&id, partition))??)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hammer_counts_every_proof_and_all_verify() {
        let spec = snarkflow_circuits::circuit("dense-chain-c64");
        let dir = tempfile::tempdir().unwrap();
        let params = ParamStore::new(dir.path(), snarkflow_circuits::catalog()).get(&spec, true).unwrap();
        let partitions = hammer_partitions(&spec, None, u32::MAX, 3).unwrap();
        assert_ne!(partitions[0], partitions[1], "distinct witnesses");
        for locked in [true, false] {
            let s = hammer(&params, &partitions, 7, 3, locked);
            assert_eq!((s.proofs, s.invalid, s.errors), (7, 0, 0), "locked={locked}: {s:?}");
            assert!(s.median_prove_s > 0.0);
        }
    }

    #[test]
    fn partitions_through_the_shape_equal_the_gadgets() {
        // the pipeline's way (native witness, a, b, c from the shape) against the gadgets, on a
        // real 2 KiB PoRep and a WindowPoSt of two sectors; a synthetic kind has no native
        // generator and goes through the gadgets either way
        use rand::SeedableRng;
        use snarkflow_filecoin::{porep, sparse, sparse_post, PostKind};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let registered = porep::registered_proof(2 << 10, false).unwrap();
        let c1 = sparse::porep_c1(registered, snarkflow_filecoin::prover_id(1000), 7, &mut rng).unwrap();
        let porep = serde_json::json!({ "miner_id": 1000, "c1": porep::c1_envelope(&c1, 7) });
        let post = sparse_post::post_request(PostKind::Window, 2 << 10, 1000, &[1, 2], &mut rng).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = ParamStore::new(dir.path(), snarkflow_circuits::catalog());
        for (kind, request) in [("porep-c2", porep), ("window-post", post)] {
            let kind = snarkflow_circuits::kind_named(kind).unwrap();
            let parsed = snarkflow_circuits::parse_request(kind, request.as_object().unwrap()).unwrap();
            let (spec, input) = (parsed.spec, parsed.input.unwrap());
            assert!(snarkflow_circuits::native_witness(&spec, 0, 0, Some(&input)).is_some(), "{kind} is native");
            let shape = store.shape(&spec).unwrap();
            let gadgets = hammer_partitions(&spec, Some(&input), parsed.partitions, 2).unwrap();
            let native = partitions_of(&spec, Some(&input), parsed.partitions, 2, Some(&shape)).unwrap();
            assert_eq!(native.len(), 2, "{kind}");
            assert!(native == gadgets, "{kind}: the shape's partitions differ from the gadgets'");
        }
        let spec = snarkflow_circuits::circuit("dense-chain-c64");
        let shape = store.shape(&spec).unwrap();
        let through = partitions_of(&spec, None, u32::MAX, 2, Some(&shape)).unwrap();
        assert!(through == hammer_partitions(&spec, None, u32::MAX, 2).unwrap());
    }

    #[test]
    fn hammer_reports_proofs_that_do_not_verify() {
        // a tampered c vector (an unsatisfied constraint): every proof of it is wrong
        let spec = snarkflow_circuits::circuit("dense-chain-c64");
        let dir = tempfile::tempdir().unwrap();
        let params = ParamStore::new(dir.path(), snarkflow_circuits::catalog()).get(&spec, true).unwrap();
        let mut partitions = hammer_partitions(&spec, None, u32::MAX, 2).unwrap();
        partitions[1].c[5] += <blstrs::Scalar as ff::Field>::ONE;
        let s = hammer(&params, &partitions, 4, 2, true);
        assert_eq!((s.proofs, s.invalid, s.errors), (4, 2, 0), "{s:?}");
    }
}
