//! Benchmark: the Poseidon witness through neptune's circuit (witness-only synthesis) vs the
//! native mirror, for the arities Filecoin's trees use. Prints time per hash and the ratio.
//!
//! `cargo run --release -p snarkflow-synthesis --example native_poseidon [hashes]`

use std::time::Instant;

use bellperson::gadgets::num::AllocatedNum;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use generic_array::typenum::{U11, U2, U8};
use neptune::poseidon::{Arity, PoseidonConstants};
use snarkflow_synthesis::native::{self, Aux, Num};

struct GadgetPoseidon<'a, A: Arity<Fr>>(&'a [Vec<Fr>], &'a PoseidonConstants<Fr, A>);

impl<A: Arity<Fr>> Circuit<Fr> for GadgetPoseidon<'_, A> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for (h, preimage) in self.0.iter().enumerate() {
            let nums = preimage
                .iter()
                .enumerate()
                .map(|(i, v)| AllocatedNum::alloc(cs.namespace(|| format!("{h} in {i}")), || Ok(*v)))
                .collect::<Result<Vec<_>, _>>()?;
            neptune::circuit::poseidon_hash(cs.namespace(|| format!("hash {h}")), nums, self.1)?;
        }
        Ok(())
    }
}

fn run<A: Arity<Fr>>(hashes: usize) {
    let constants = PoseidonConstants::<Fr, A>::new();
    let mut rng = rand::thread_rng();
    let preimages: Vec<Vec<Fr>> =
        (0..hashes).map(|_| (0..A::to_usize()).map(|_| Fr::random(&mut rng)).collect()).collect();
    let started = Instant::now();
    let gadget = snarkflow_synthesis::synthesize_witness(GadgetPoseidon(&preimages, &constants), "bench", 0).unwrap();
    let gadget_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut aux = Aux::with_capacity(gadget.aux.len());
    for preimage in &preimages {
        let nums: Vec<Num> = preimage.iter().map(|v| Num::alloc(&mut aux, *v)).collect();
        native::poseidon_hash(&mut aux, &nums, &constants);
    }
    let native_s = started.elapsed().as_secs_f64();
    assert!(aux.values() == gadget.aux, "the same witness");
    println!(
        "poseidon arity {:>2} ({} values per hash): gadget witness-only {:.1} µs/hash, native {:.1} µs/hash: native is {:.3}× the gadget path",
        A::to_usize(),
        gadget.aux.len() / hashes,
        gadget_s * 1e6 / hashes as f64,
        native_s * 1e6 / hashes as f64,
        native_s / gadget_s
    );
}

fn main() {
    let hashes = std::env::args().nth(1).map(|a| a.parse().expect("a number")).unwrap_or(2000);
    run::<U2>(hashes);
    run::<U8>(hashes);
    run::<U11>(hashes);
}
