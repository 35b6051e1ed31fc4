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

pub fn hop(
    spec: CircuitSpec,
    input: Option<JobInput>,
    runs: usize,
    prove: bool,
    params_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    let id = spec.circuit_id();
    let seed = 42;
    let threads = rayon::current_num_threads();
    println!("circuit {id}, median of {runs} runs, {threads} threads for rebuild/proving");
    let (shape, shape_s) = timed(|| snarkflow_circuits::visit_blank(&spec, RecordShape(&id)));
    let shape = shape??;
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
    let (raw, raw_enc_s) = median_of(runs, || (), |_| full.encode());
    let (_, raw_dec_s) = median_of(runs, || (), |_| SynthesizedPartition::decode(&raw));
    let (compact, compact_enc_s) = median_of(runs, || (), |_| encode_compact(&witness, shape.hash));
    let (decoded, compact_dec_s) = median_of(runs, || (), |_| decode_compact(&compact));
    let (decoded, _) = decoded?;
    let (rebuilt, rebuild_s) = median_of(runs, || decoded.clone(), |w| shape.rebuild(w));
    let rebuilt = rebuilt?;
    anyhow::ensure!(rebuilt == full, "rebuilt partition differs from full synthesis");

    println!();
    println!("| measure | raw | compact | compact / raw |");
    println!("|---|---|---|---|");
    println!(
        "| bytes on the hop | {} | {} | {:.2}% |",
        raw.len(),
        compact.len(),
        100.0 * compact.len() as f64 / raw.len() as f64
    );
    println!(
        "| synthesis (1 core; Filecoin: incl. building the circuit) | {full_s:.4} s | {witness_s:.4} s (witness only) | {:.2}× |",
        witness_s / full_s
    );
    println!("| encode | {raw_enc_s:.4} s | {compact_enc_s:.4} s | |");
    println!("| decode | {raw_dec_s:.4} s | {compact_dec_s:.4} s | |");
    println!("| rebuild a, b, c ({threads} threads) | — | {rebuild_s:.4} s | |");
    if prove {
        let dir = params_dir.unwrap_or_else(ParamStore::default_dir);
        let params = ParamStore::new(dir).get(&spec, true)?;
        let (proof, prove_s) = median_of(runs, || rebuilt.clone(), |p| params.prove(p, &mut rand::rngs::OsRng));
        let proof = proof?;
        anyhow::ensure!(snarkflow_prover::verify(&params.pvk, &proof, full.public_inputs()), "proof does not verify");
        println!(
            "| prove ({}, {threads} threads) | {prove_s:.4} s | | rebuild / prove = {:.1}% |",
            snarkflow_prover::BACKEND,
            100.0 * rebuild_s / prove_s
        );
    }
    Ok(())
}

/// `snarkflow bench stock-c2`: filecoin-proofs' own C2, in this process, over a stream of
/// inputs (`runs` passes). Returns how many proofs failed (filecoin-proofs verifies its own
/// result and errors out on an invalid proof).
pub fn stock_c2(inputs: &[serde_json::Value], runs: usize, params_dir: &std::path::Path) -> anyhow::Result<usize> {
    snarkflow_filecoin::use_parameter_dir(params_dir)?;
    let mut parsed = Vec::new();
    for input in inputs {
        let obj = input.as_object().ok_or_else(|| anyhow::anyhow!("input is not an object"))?;
        let job = snarkflow_filecoin::parse_request(snarkflow_wire::JobKind::PorepC2, obj)?;
        let snarkflow_filecoin::JobInput::PorepC2(porep) = job.input else { anyhow::bail!("not a PoRep input") };
        parsed.push((job.spec, porep));
    }
    println!(
        "stock seal_commit_phase2 ({} build): {} inputs x {} runs, {}, parameters {}",
        snarkflow_prover::BACKEND,
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
