//! The native PoRep witness equals the gadgets' witness value for value: on sparse
//! C1 outputs of every size whose circuit fits a test (random ones at 2 KiB, 8 MiB and 512 MiB)
//! and on real sealed 2 KiB sectors. Its public inputs are also the
//! ones filecoin-proofs' verifier derives.

use filecoin_proofs_api::RegisteredSealProof;
use proptest::prelude::*;
use rand::SeedableRng;
use snarkflow_filecoin::porep::{self, PorepInput};
use snarkflow_filecoin::sparse::SectorData;
use snarkflow_synthesis::{PartitionWitness, Synthesize, SynthesizeWitness};

fn sparse_input(registered: RegisteredSealProof, miner_id: u64, sector_id: u64, seed: u64) -> PorepInput {
    sparse_input_of(registered, miner_id, sector_id, seed, SectorData::Zeros)
}

fn sparse_input_of(
    registered: RegisteredSealProof,
    miner_id: u64,
    sector_id: u64,
    seed: u64,
    data: SectorData,
) -> PorepInput {
    let prover_id = snarkflow_filecoin::prover_id(miner_id);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let c1 =
        snarkflow_filecoin::sparse::porep_c1_of(registered, prover_id, sector_id, data, &mut rng).expect("sparse C1");
    PorepInput { miner_id, sector_id, prover_id, c1 }
}

/// Where two witnesses first differ, for a readable failure.
fn first_difference(a: &[blstrs::Scalar], b: &[blstrs::Scalar]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y).or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

fn assert_native_matches(input: &PorepInput, what: &str) {
    let verifier_inputs = porep::public_inputs(input).expect("verifier inputs");
    for (k, verifier_inputs) in verifier_inputs.iter().enumerate() {
        let gadget: PartitionWitness =
            porep::visit_partition(input, k, SynthesizeWitness("porep", k as u32)).unwrap().expect("gadget witness");
        let native = porep::native_witness(input, k, "porep").expect("native witness");
        assert_eq!(native.partition, k as u32);
        assert_eq!(
            first_difference(&native.aux, &gadget.aux),
            None,
            "{what} partition {k}: aux differs ({} native, {} gadget values)",
            native.aux.len(),
            gadget.aux.len()
        );
        assert_eq!(first_difference(&native.inputs, &gadget.inputs), None, "{what} partition {k}: inputs differ");
        assert_eq!(native.inputs[1..], verifier_inputs[..], "{what} partition {k}: not the verifier's inputs");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn the_native_witness_equals_the_gadgets_on_random_2kib_sectors(seed in any::<u64>(), miner in 1000u64..1_000_000, sector in 0u64..1 << 40) {
        assert_native_matches(&sparse_input(RegisteredSealProof::StackedDrg2KiBV1_1, miner, sector, seed), "2 KiB");
    }
}

#[test]
fn the_native_witness_equals_the_gadgets_at_8mib_and_512mib() {
    // 8 MiB and 512 MiB: tree R and C of arity 8 with more levels, 2-layer columns
    assert_native_matches(&sparse_input(RegisteredSealProof::StackedDrg8MiBV1_1, 1234, 7, 1), "8 MiB");
    assert_native_matches(&sparse_input(RegisteredSealProof::StackedDrg512MiBV1_1, 1234, 8, 2), "512 MiB");
}

#[test]
fn the_native_witness_equals_the_gadgets_on_real_sealed_2kib_sectors() {
    // interactive PoRep (the fixture cannot seal synthetic PoRep; its circuit is the same
    // StackedCircuit, only its challenges are drawn differently)
    for seed in [3, 4, 5] {
        let dir = tempfile::tempdir().unwrap();
        let registered = RegisteredSealProof::StackedDrg2KiBV1_1;
        let sealed =
            snarkflow_filecoin::fixtures::seal_sector(dir.path(), registered, 1000, 11 + seed, seed).expect("sealing");
        let input = PorepInput {
            miner_id: sealed.miner_id,
            sector_id: sealed.sector_num,
            prover_id: sealed.prover_id,
            c1: sealed.c1,
        };
        assert_native_matches(&input, &format!("sealed sector {seed}"));
    }
}

#[test]
fn a_tampered_vanilla_proof_changes_the_native_witness_as_it_changes_the_gadgets() {
    // the comparison is not vacuous: a different sector gives a different witness on both paths
    let a = sparse_input(RegisteredSealProof::StackedDrg2KiBV1_1, 1000, 1, 10);
    let b = sparse_input(RegisteredSealProof::StackedDrg2KiBV1_1, 1000, 1, 11);
    let (na, nb) = (porep::native_witness(&a, 0, "p").unwrap(), porep::native_witness(&b, 0, "p").unwrap());
    assert_eq!(na.aux.len(), nb.aux.len());
    assert_ne!(na.aux, nb.aux);
}

/// How often the most frequent aux value that is neither 0 nor 1 occurs (a Pippenger bucket
/// method adds its points one after another).
fn most_repeated(aux: &[blstrs::Scalar]) -> usize {
    use ff::{Field, PrimeField};
    let mut counts = std::collections::HashMap::<[u8; 32], usize>::new();
    for v in aux.iter().filter(|v| !bool::from(v.is_zero()) && **v != blstrs::Scalar::ONE) {
        *counts.entry(v.to_repr().as_ref().try_into().expect("32 bytes")).or_default() += 1;
    }
    counts.into_values().max().unwrap_or(0)
}

/// A sector holding random data (`SectorData::Random`, the fixture for measuring what a sector
/// with deals costs): its partition satisfies every constraint, its native witness equals the
/// gadgets', and no value repeats as often as the CC fixture's empty siblings do (the values
/// every path shares near the roots still repeat, as in a sealed sector).
#[test]
fn a_random_data_sector_satisfies_the_circuit_and_repeats_less_than_a_cc_one() {
    let input = sparse_input_of(RegisteredSealProof::StackedDrg2KiBV1_1, 1234, 7, 3, SectorData::Random);
    let synthesized = porep::visit_partition(&input, 0, Synthesize("porep", 0)).unwrap().expect("synthesized");
    let unsatisfied =
        (0..synthesized.num_constraints()).filter(|&i| synthesized.a[i] * synthesized.b[i] != synthesized.c[i]).count();
    assert_eq!(unsatisfied, 0, "of {} constraints", synthesized.num_constraints());
    assert_native_matches(&input, "2 KiB, random data");
    let registered = RegisteredSealProof::StackedDrg8MiBV1_1;
    let random = sparse_input_of(registered, 1234, 7, 3, SectorData::Random);
    assert_native_matches(&random, "8 MiB, random data");
    let cc = sparse_input_of(registered, 1234, 7, 3, SectorData::Zeros);
    assert_ne!(random.c1.comm_d, cc.c1.comm_d);
    let of = |input: &PorepInput| most_repeated(&porep::native_witness(input, 0, "porep").unwrap().aux);
    let (random, cc) = (of(&random), of(&cc));
    eprintln!(
        "8 MiB, the most frequent value neither 0 nor 1: {random} times with random data, {cc} in the CC fixture"
    );
    assert!(random * 3 < cc, "random data {random}, CC {cc}");
}
