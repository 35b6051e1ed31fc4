//! `snarkflow bench hop`: what the synth → prove hop costs in each wire form, measured
//! in-process on one partition (no NATS): bytes, synthesis, encoding, rebuild, proving.

use std::path::PathBuf;
use std::time::Instant;

use snarkflow_circuits::JobInput;
use snarkflow_prover::ParamStore;
use snarkflow_synthesis::{
    decode_compact, encode_compact, RecordShape, Synthesize, SynthesizeWitness, SynthesizedPartition,
};
use snarkflow_wire::CircuitSpec;

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let started = Instant::now();
    let out = f();
    (out, started.elapsed().as_secs_f64())
}

/// CPU seconds this process has used (user and system, all threads).
fn cpu_seconds() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}

/// Median of `runs` timings of `f` (each run gets a fresh input from `make`).
fn median_of<I, T>(runs: usize, mut make: impl FnMut() -> I, mut f: impl FnMut(I) -> T) -> (T, f64) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs.max(1) {
        let input = make();
        let (out, t) = timed(|| f(input));
        times.push(t);
        last = Some(out);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    (last.expect("at least one run"), times[times.len() / 2])
}

/// `snarkflow bench shape`: the kind's way of recording `spec`'s shape against recording its
/// whole blank circuit (one after the other: at 32 GiB each holds ~9 GB). Whether they agree.
pub(crate) fn shape(spec: CircuitSpec) -> anyhow::Result<bool> {
    let id = spec.circuit_id();
    let (ours, ours_s) = timed(|| snarkflow_circuits::record_shape(&spec));
    let ours = ours?;
    let nnz = ours.a.nnz() + ours.b.nnz() + ours.c.nnz();
    println!("{id}: {} constraints, nnz(A+B+C) {nnz}", ours.num_constraints());
    println!("the kind's recording: {ours_s:.2} s, hash {}", ours.hash_hex());
    let ours = ours.hash_hex();
    let (whole, whole_s) = timed(|| snarkflow_circuits::visit_blank(&spec, RecordShape(&id)));
    let whole = whole??.hash_hex();
    println!("the whole blank circuit: {whole_s:.2} s, hash {whole}");
    let same = ours == whole;
    println!("{}", if same { "same shape" } else { "DIFFERENT shapes" });
    Ok(same)
}

pub(crate) fn hop(
    spec: CircuitSpec,
    input: Option<JobInput>,
    runs: usize,
    prove: bool,
    params_dir: PathBuf,
) -> anyhow::Result<()> {
    let id = spec.circuit_id();
    let seed = 42;
    let threads = rayon::current_num_threads();
    println!("circuit {id}, median of {runs} runs, {threads} threads for rebuild/proving");
    let (shape, shape_s) = timed(|| snarkflow_circuits::record_shape(&spec));
    let shape = shape?;
    let nnz = shape.a.nnz() + shape.b.nnz() + shape.c.nnz();
    println!(
        "constraints {}, inputs {}, aux {}, nnz(A+B+C) {nnz}, shape recorded once in {shape_s:.3} s",
        shape.num_constraints(),
        shape.num_inputs,
        shape.num_aux
    );

    let input = input.as_ref();
    let (full, full_s) =
        median_of(runs, || (), |_| snarkflow_circuits::visit_with_witness(&spec, seed, 0, input, Synthesize(&id, 0)));
    let full = full??;
    let (witness, witness_s) = median_of(
        runs,
        || (),
        |_| snarkflow_circuits::visit_with_witness(&spec, seed, 0, input, SynthesizeWitness(&id, 0)),
    );
    let witness = witness??;
    // the kind's native generator, where it has one: the same witness, value for value
    let native = match snarkflow_circuits::native_witness(&spec, seed, 0, input) {
        Some(_) => {
            let cpu_before = cpu_seconds();
            let (made, native_s) =
                median_of(runs, || (), |_| snarkflow_circuits::native_witness(&spec, seed, 0, input));
            let native_cpu_s = (cpu_seconds() - cpu_before) / runs.max(1) as f64;
            let made = made.expect("the kind has a native generator")?;
            if let Some(what) = made.difference(&witness) {
                anyhow::bail!("the native witness differs from the gadgets' ({what})");
            }
            Some((native_s, native_cpu_s))
        }
        None => None,
    };
    let (raw, raw_enc_s) = median_of(runs, || (), |_| full.encode());
    let (_, raw_dec_s) = median_of(runs, || (), |_| SynthesizedPartition::decode(&raw));
    // at 32 GiB the raw form is ~17 GB: keep only its size
    let raw_len = raw.len();
    drop(raw);
    let (compact, compact_enc_s) = median_of(runs, || (), |_| encode_compact(&witness, shape.hash));
    let (decoded, compact_dec_s) = median_of(runs, || (), |_| decode_compact(&compact));
    let (decoded, _) = decoded?;
    let (rebuilt, rebuild_s) = median_of(runs, || decoded.clone(), |w| shape.rebuild(w));
    let rebuilt = rebuilt?;
    anyhow::ensure!(rebuilt == full, "rebuilt partition differs from full synthesis");
    let (unsatisfied, check_s) = timed(|| rebuilt.unsatisfied());
    anyhow::ensure!(
        unsatisfied.is_empty(),
        "{} of {} constraints are not satisfied (first: {:?})",
        unsatisfied.len(),
        rebuilt.num_constraints(),
        &unsatisfied[..unsatisfied.len().min(5)]
    );
    println!(
        "all {} constraints satisfied by the witness (a·b = c checked in {check_s:.2} s); rebuild equals full synthesis",
        rebuilt.num_constraints()
    );

    println!();
    println!("| measure | raw | compact | compact / raw |");
    println!("|---|---|---|---|");
    println!(
        "| bytes on the hop | {} | {} | {:.2}% |",
        raw_len,
        compact.len(),
        100.0 * compact.len() as f64 / raw_len as f64
    );
    println!(
        "| synthesis (1 core; Filecoin: incl. building the circuit) | {full_s:.4} s | {witness_s:.4} s (witness only) | {:.2}× |",
        witness_s / full_s
    );
    if let Some((native_s, native_cpu_s)) = native {
        println!(
            "| synthesis, native witness ({threads} threads; equal to the gadgets') | {full_s:.4} s | {native_s:.4} s wall, {native_cpu_s:.4} core-s (native) | {:.2}× wall, {:.2}× core-s |",
            native_s / full_s,
            native_cpu_s / full_s
        );
    }
    println!("| encode | {raw_enc_s:.4} s | {compact_enc_s:.4} s | |");
    println!("| decode | {raw_dec_s:.4} s | {compact_dec_s:.4} s | |");
    println!("| rebuild a, b, c ({threads} threads) | — | {rebuild_s:.4} s | |");
    if prove {
        let params = ParamStore::new(params_dir, snarkflow_circuits::catalog()).get(&spec, true)?;
        let (proof, prove_s) = median_of(runs, || rebuilt.clone(), |p| params.prove(p, &mut rand::rngs::OsRng));
        let proof = proof?;
        anyhow::ensure!(snarkflow_prover::verify(&params.pvk, &proof, full.public_inputs()), "proof does not verify");
        println!(
            "| prove ({}, {threads} threads) | {prove_s:.4} s | | rebuild / prove = {:.1}% |",
            snarkflow_prover::backend_name(),
            100.0 * rebuild_s / prove_s
        );
    }
    Ok(())
}

/// `snarkflow bench stock-c2`: filecoin-proofs' own C2, in this process, over a stream of
/// inputs (`runs` passes). Returns how many proofs failed (filecoin-proofs verifies its own
/// result and errors out on an invalid proof).
pub(crate) fn stock_c2(
    inputs: &[serde_json::Value],
    runs: usize,
    params_dir: &std::path::Path,
) -> anyhow::Result<usize> {
    snarkflow_filecoin::check_parameter_dir(params_dir)?;
    let mut parsed = Vec::new();
    for input in inputs {
        let obj = input.as_object().ok_or_else(|| anyhow::anyhow!("input is not an object"))?;
        let job = snarkflow_filecoin::porep::parse(obj)?;
        let spec = snarkflow_circuits::circuit_spec::<snarkflow_circuits::filecoin_kinds::Porep>(&job.spec);
        parsed.push((spec, job.input));
    }
    println!(
        "stock seal_commit_phase2 ({} build): {} inputs x {} runs, {}, parameters {}",
        snarkflow_prover::backend_name(),
        parsed.len(),
        runs.max(1),
        parsed[0].0.circuit_id(),
        params_dir.display()
    );
    let (mut seconds, mut failed) = (Vec::new(), 0);
    let started = Instant::now();
    for run in 0..runs.max(1) {
        for (spec, porep) in &parsed {
            match snarkflow_filecoin::stock::seal_commit_phase2(porep) {
                Ok(out) => {
                    println!(
                        "run {run} sector {}: {:.3} s, {} bytes, verified by filecoin-proofs ({})",
                        porep.sector_id,
                        out.seconds,
                        out.proof.len(),
                        spec.circuit_id()
                    );
                    seconds.push(out.seconds);
                }
                Err(e) => {
                    failed += 1;
                    println!("run {run} sector {}: FAILED: {e}", porep.sector_id);
                }
            }
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let done = seconds.len();
    let first = seconds.first().copied().unwrap_or(0.0);
    seconds.sort_by(f64::total_cmp);
    let median = seconds.get(seconds.len() / 2).copied().unwrap_or(0.0);
    println!(
        "STOCK proofs {done} failed {failed} wall {wall:.2} s => {:.1} proofs/min; median {median:.3} s per proof; first (incl. parameter load) {first:.3} s",
        60.0 * done as f64 / wall
    );
    Ok(failed)
}

/// What `snarkflow bench hammer` counted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HammerSummary {
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
pub(crate) fn hammer(
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
pub(crate) fn hammer_partitions(
    spec: &CircuitSpec,
    input: Option<&JobInput>,
    available: u32,
    count: usize,
) -> anyhow::Result<Vec<SynthesizedPartition>> {
    let id = spec.circuit_id();
    let available = available.max(1);
    (0..count.max(1))
        .map(|i| {
            let (seed, partition) = (i as u64, (i as u32) % available);
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
