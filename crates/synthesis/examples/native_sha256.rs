//! Benchmark: the SHA-256 witness through bellperson's gadget (witness-only synthesis, our
//! fastest gadget path) vs the native mirror, for messages of allocated bits as PoRep's labels
//! hash them. Prints time per compression and the ratio.
//!
//! `cargo run --release -p snarkflow-synthesis --example native_sha256 [bytes] [rounds]`

use std::time::Instant;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use snarkflow_synthesis::native::{self, Aux, Bit};

struct GadgetSha256(Vec<bool>);

impl Circuit<Fr> for GadgetSha256 {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let bits = self
            .0
            .iter()
            .enumerate()
            .map(|(i, b)| Ok(Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(*b))?)))
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        bellperson::gadgets::sha256::sha256(cs.namespace(|| "sha256"), &bits)?;
        Ok(())
    }
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let bytes = args.first().copied().unwrap_or(32 * 14); // a PoRep label: 14 parents' labels
    let rounds = args.get(1).copied().unwrap_or(20);
    let message: Vec<bool> = (0..bytes * 8).map(|i| (i * 2_654_435_761usize) >> 7 & 1 == 1).collect();
    let blocks = (bytes * 8 + 1 + 64).div_ceil(512);

    let started = Instant::now();
    let mut gadget_len = 0;
    for _ in 0..rounds {
        gadget_len =
            snarkflow_synthesis::synthesize_witness(GadgetSha256(message.clone()), "bench", 0).unwrap().aux.len();
    }
    let gadget = started.elapsed().as_secs_f64() / rounds as f64;

    let started = Instant::now();
    let mut native_len = 0;
    for _ in 0..rounds {
        let mut aux = Aux::with_capacity(gadget_len);
        let bits: Vec<Bit> = message.iter().map(|b| Bit::alloc(&mut aux, *b)).collect();
        native::sha256(&mut aux, &bits);
        native_len = aux.len();
        std::hint::black_box(&aux);
    }
    let native = started.elapsed().as_secs_f64() / rounds as f64;
    assert_eq!(gadget_len, native_len, "the same allocations");
    println!(
        "sha256 of {bytes} bytes ({blocks} blocks, {gadget_len} values): gadget witness-only {:.1} µs/block, native {:.1} µs/block: native is {:.3}× the gadget path",
        gadget * 1e6 / blocks as f64,
        native * 1e6 / blocks as f64,
        native / gadget
    );
}
