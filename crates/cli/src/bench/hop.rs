//! `snarkflow bench hop`: what the synth → prove hop costs in each wire form, measured
//! in-process on one partition (no NATS): bytes, synthesis, encoding, rebuild, proving. And
//! `bench shape`: a kind's way of recording its constraint shape against the whole blank
//! circuit's.

use std::path::PathBuf;

use snarkflow_circuits::JobInput;
use snarkflow_prover::ParamStore;
use snarkflow_synthesis::{
    decode_compact, encode_compact, PartitionWitness, RecordShape, Synthesize, SynthesizeWitness, SynthesizedPartition,
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

/// The kind's native witness generator, where it has one, timed (wall and core seconds, median
/// of `runs`); it must give `witness` value for value.
fn native_timing(
    spec: &CircuitSpec,
    seed: u64,
    input: Option<&JobInput>,
    runs: usize,
    witness: &PartitionWitness,
) -> anyhow::Result<Option<(f64, f64)>> {
    if snarkflow_circuits::native_witness(spec, seed, 0, input).is_none() {
        return Ok(None);
    }
    let cpu_before = cpu_seconds();
    let (made, native_s) = median_of(runs, || (), |_| snarkflow_circuits::native_witness(spec, seed, 0, input));
    let native_cpu_s = (cpu_seconds() - cpu_before) / runs.max(1) as f64;
    let made = made.expect("the kind has a native generator")?;
    if let Some(what) = made.difference(witness) {
        anyhow::bail!("the native witness differs from the gadgets' ({what})");
    }
    Ok(Some((native_s, native_cpu_s)))
}

/// The hop's numbers, printed as a markdown table.
struct HopTable {
    threads: usize,
    raw_len: usize,
    compact_len: usize,
    full_s: f64,
    witness_s: f64,
    native: Option<(f64, f64)>,
    encode_s: (f64, f64),
    decode_s: (f64, f64),
    rebuild_s: f64,
}

impl HopTable {
    fn print(&self) {
        let HopTable { threads, raw_len, compact_len, full_s, witness_s, native, .. } = *self;
        println!();
        println!("| measure | raw | compact | compact / raw |");
        println!("|---|---|---|---|");
        println!(
            "| bytes on the hop | {raw_len} | {compact_len} | {:.2}% |",
            100.0 * compact_len as f64 / raw_len as f64
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
        println!("| encode | {:.4} s | {:.4} s | |", self.encode_s.0, self.encode_s.1);
        println!("| decode | {:.4} s | {:.4} s | |", self.decode_s.0, self.decode_s.1);
        println!("| rebuild a, b, c ({threads} threads) | — | {:.4} s | |", self.rebuild_s);
    }
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
    let native = native_timing(&spec, seed, input, runs, &witness)?;
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

    HopTable {
        threads,
        raw_len,
        compact_len: compact.len(),
        full_s,
        witness_s,
        native,
        encode_s: (raw_enc_s, compact_enc_s),
        decode_s: (raw_dec_s, compact_dec_s),
        rebuild_s,
    }
    .print();
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
