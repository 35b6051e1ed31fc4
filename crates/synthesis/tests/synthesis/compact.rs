//! The compact path (shape + witness + rebuild) reproduces full synthesis exactly, and the
//! compact encoding round-trips and detects corruption.

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use snarkflow_synthesis::{
    decode_compact, decode_compact_for, encode_compact, record_shape, synthesize, synthesize_witness, CompactError,
    ConstraintShape, PartitionWitness, RecordShape, Synthesize, SynthesizeWitness, SynthesizedPartition, WitnessShape,
};
use snarkflow_wire::CircuitSpec;

/// The blank circuit of `spec`'s kind, recorded under `id`.
fn blank_shape(spec: &CircuitSpec, id: &str) -> ConstraintShape {
    snarkflow_circuits::visit_blank(spec, RecordShape(id)).unwrap().unwrap()
}

/// Partition `p` of a job of `spec` with `seed`, fully synthesized under `id`.
fn full(spec: &CircuitSpec, seed: u64, p: u32, id: &str) -> SynthesizedPartition {
    snarkflow_circuits::visit_with_witness(spec, seed, p, None, Synthesize(id, p)).unwrap().unwrap()
}

/// The same partition's witness only.
fn witness_of(spec: &CircuitSpec, seed: u64, p: u32, id: &str) -> PartitionWitness {
    snarkflow_circuits::visit_with_witness(spec, seed, p, None, SynthesizeWitness(id, p)).unwrap().unwrap()
}

/// A random circuit: its structure comes from `structure_seed`, its values from `value_seed`.
/// Values mix zeros, ones, small numbers and random elements; linear combinations mix inputs,
/// aux variables and ONE with coefficients 0, ±1, small and random, duplicates included.
#[derive(Clone, Debug)]
struct RandomCircuit {
    structure_seed: u64,
    value_seed: u64,
}

impl Circuit<Fr> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut st = rand_chacha::ChaCha8Rng::seed_from_u64(self.structure_seed);
        let mut val = rand_chacha::ChaCha8Rng::seed_from_u64(self.value_seed);
        let mut vars: Vec<Variable> = vec![CS::one()];
        let steps = st.gen_range(1..60);
        for _ in 0..steps {
            let value = match val.gen_range(0..4) {
                0 => Fr::ZERO,
                1 => Fr::ONE,
                2 => Fr::from(val.gen::<u64>() >> val.gen_range(0..64)),
                _ => Fr::random(&mut val),
            };
            match st.gen_range(0..5) {
                0 => vars.push(cs.alloc_input(|| "i", || Ok(value))?),
                1 | 2 => vars.push(cs.alloc(|| "a", || Ok(value))?),
                _ => {
                    let mut lcs: Vec<LinearCombination<Fr>> = Vec::new();
                    for _ in 0..3 {
                        let mut lc = LinearCombination::zero();
                        for _ in 0..st.gen_range(0..5) {
                            let v = vars[st.gen_range(0..vars.len())];
                            let coeff = match st.gen_range(0..5) {
                                0 => Fr::ZERO,
                                1 => Fr::ONE,
                                2 => -Fr::ONE,
                                3 => Fr::from(st.gen_range(2..1000u64)),
                                _ => Fr::random(&mut st),
                            };
                            lc = lc + (coeff, v);
                        }
                        lcs.push(lc);
                    }
                    let (a, b, c) = (lcs[0].clone(), lcs[1].clone(), lcs[2].clone());
                    cs.enforce(|| "c", |_| a, |_| b, |_| c);
                }
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rebuild_equals_full_synthesis_on_random_circuits(structure_seed: u64, value_seed: u64, other_values: u64) {
        let circuit = RandomCircuit { structure_seed, value_seed };
        // the shape does not depend on the values
        let shape = record_shape(RandomCircuit { structure_seed, value_seed: other_values }, "random").unwrap();
        let full = synthesize(circuit.clone(), "random", 7).unwrap();
        let witness = synthesize_witness(circuit, "random", 7).unwrap();
        let rebuilt = shape.rebuild(witness.clone()).unwrap();
        prop_assert_eq!(&rebuilt, &full);

        let bytes = encode_compact(&witness, shape.hash);
        let (back, hash) = decode_compact(&bytes).unwrap();
        prop_assert_eq!(back, witness);
        prop_assert_eq!(hash, shape.hash);
    }

    #[test]
    fn any_flipped_byte_is_detected(flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        let spec = snarkflow_circuits::circuit("dense-chain-c20");
        let w = witness_of(&spec, 1, 0, "d");
        let mut bytes = encode_compact(&w, [7; 32]);
        let i = flip.index(bytes.len());
        bytes[i] ^= 1 << bit;
        prop_assert!(decode_compact(&bytes).is_err());
    }
}

fn check_kind(spec: CircuitSpec) -> (usize, usize) {
    let id = spec.circuit_id();
    let shape = blank_shape(&spec, &id);
    let full = full(&spec, 5, 2, &id);
    let witness = witness_of(&spec, 5, 2, &id);
    assert_eq!(shape.num_constraints(), full.num_constraints());
    let compact = encode_compact(&witness, shape.hash);
    assert_eq!(shape.rebuild(witness).unwrap(), full, "{id}: rebuilt partition differs from full synthesis");
    (compact.len(), full.encode().len())
}

#[test]
fn rebuild_equals_full_synthesis_for_sha256_chain() {
    let (compact, raw) = check_kind(snarkflow_circuits::circuit("sha256-chain-b2"));
    assert!(compact * 100 < raw * 10, "compact {compact} bytes is not under 10% of raw {raw}");
}

#[test]
fn rebuild_equals_full_synthesis_for_dense_chain() {
    check_kind(snarkflow_circuits::circuit("dense-chain-c300"));
}

#[test]
fn truncated_and_foreign_payloads_are_rejected() {
    let spec = snarkflow_circuits::circuit("sha256-chain-b1");
    let w = witness_of(&spec, 1, 0, "s");
    let bytes = encode_compact(&w, [1; 32]);
    for cut in [1, 31, 32, 100, bytes.len() - 1] {
        assert!(matches!(decode_compact(&bytes[..bytes.len() - cut]), Err(CompactError::Digest | CompactError::Magic)));
    }
    assert!(matches!(decode_compact(b"SFSPxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), Err(CompactError::Magic)));
}

#[test]
fn a_witness_of_the_wrong_shape_is_refused() {
    let shape = blank_shape(&snarkflow_circuits::circuit("dense-chain-c8"), "dense-chain-c8");
    let other = witness_of(&snarkflow_circuits::circuit("dense-chain-c9"), 1, 0, "dense-chain-c8");
    assert!(shape.rebuild(other).is_err());
}

#[test]
fn shape_files_round_trip_and_corruption_is_refused() {
    let spec = snarkflow_circuits::circuit("sha256-chain-b1");
    let shape = blank_shape(&spec, &spec.circuit_id());
    let mut bytes = Vec::new();
    shape.write_to(&mut bytes).unwrap();
    assert_eq!(snarkflow_synthesis::ConstraintShape::read_from(&bytes[..]).unwrap(), shape);
    // any flipped byte is refused (everything stored is hashed or checked)
    for i in (6..bytes.len()).step_by(bytes.len() / 97 + 1) {
        let mut bad = bytes.clone();
        bad[i] ^= 0x01;
        assert!(snarkflow_synthesis::ConstraintShape::read_from(&bad[..]).is_err(), "flip at byte {i} went unnoticed");
    }
    assert!(snarkflow_synthesis::ConstraintShape::read_from(&bytes[..bytes.len() / 3]).is_err());
}

/// A witness whose header claims more values than the shape has is refused from its header:
/// four zero values per byte of tags would otherwise decode into 128 bytes of memory each.
#[test]
fn a_witness_for_other_counts_is_refused_before_decoding() {
    let spec = snarkflow_circuits::circuit("dense-chain-c20");
    let id = spec.circuit_id();
    let shape = blank_shape(&spec, &id);
    let witness = witness_of(&spec, 1, 0, &id);
    let expected = WitnessShape::of(&shape);
    let ok = decode_compact_for(&encode_compact(&witness, shape.hash), &expected).unwrap();
    assert_eq!(ok, witness);

    // the same shape hash, a million (zero) aux values: a 250 KB payload
    let inflated = PartitionWitness { aux: vec![Fr::ZERO; 1_000_000], ..witness.clone() };
    let bytes = encode_compact(&inflated, shape.hash);
    assert!(bytes.len() < 300_000, "{} bytes", bytes.len());
    assert!(decode_compact(&bytes).is_ok(), "well-formed on its own");
    match decode_compact_for(&bytes, &expected) {
        Err(CompactError::WrongShape { got_aux, expected_aux, .. }) => {
            assert_eq!((got_aux, expected_aux), (1_000_000, shape.num_aux as u64));
        }
        other => panic!("expected WrongShape, got {other:?}"),
    }
    // and a witness made for another shape
    let other = encode_compact(&witness, [9; 32]);
    assert!(matches!(decode_compact_for(&other, &expected), Err(CompactError::WrongShape { .. })));
}
