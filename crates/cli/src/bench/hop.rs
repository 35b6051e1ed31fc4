//! `snarkflow bench hop`: what the synth → prove hop costs in each wire form, measured
//! in-process on one partition (no NATS): bytes, synthesis, encoding, rebuild, proving. And
//! `bench shape`: a kind's way of recording its constraint shape against the whole blank
//! circuit's.

use std::path::PathBuf;

use snarkflow_circuits::JobInput;
use snarkflow_prover::ParamStore;
use snarkflow_synthesis::{
    decode_compact, encode_compact, RecordShape, Synthesize, SynthesizeWitness, SynthesizedPartition,
};
use snarkflow_wire::CircuitSpec;

use super::{cpu_seconds, median_of, timed};

/// `snarkflow bench shape`: the kind's way of recording `spec`'s shape against recording its
/// whole blank circuit (one after the other: at 32 GiB each holds ~9 GB). Whether they agree.
pub(super) fn shape(spec: CircuitSpec) -> anyhow::Result<bool> {
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

pub(super) fn hop(
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
