//! The GPU-resident prover's proofs, made on an H200 (`snarkflow bench resident --params-seed`,
//! `deploy/scripts/device.sh resident-batch`, 2026-12-02) and kept in
//! `tests/data/resident-h200-proofs.txt`, must be exactly the CPU prover's proofs of the same
//! partitions with the same parameters and blinding factors. The parameters come from the same
//! seed, the partitions from the same seeds, r and s from the same stream as the bench's: so
//! this test, which needs no GPU, checks the resident backend byte for byte against bellperson's
//! arithmetic (and fails if either side's inputs or arithmetic drift).

use ff::Field;
use rand::SeedableRng;
use snarkflow_prover::{ParamStore, ToxicWaste};
use snarkflow_synthesis::Synthesize;

/// The bench's stream of blinding factors: r, s for partition 0, then for partition 1, …
const BLINDING_SEED: u64 = 2026;

#[test]
fn cpu_proofs_equal_the_resident_proofs_made_on_an_h200() {
    let golden = include_str!("data/resident-h200-proofs.txt");
    let dir = tempfile::tempdir().unwrap();
    let store = ParamStore::new(dir.path(), snarkflow_circuits::catalog());
    let mut checked = 0;
    let mut lines: Vec<(&str, u32, u64, &str)> = golden
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0], f[1].parse().unwrap(), f[2].parse().unwrap(), f[3])
        })
        .collect();
    lines.sort_by_key(|&(id, partition, _, _)| (id, partition));
    let mut current: Option<(&str, bellperson::groth16::Parameters<blstrs::Bls12>, rand_chacha::ChaCha20Rng)> = None;
    for (id, partition, seed, proof_hex) in lines {
        if current.as_ref().is_none_or(|(c, _, _)| *c != id) {
            let spec = snarkflow_circuits::parse_circuit_id(id).expect("a synthetic circuit id");
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
            let path = store.generate_with(&spec, true, ToxicWaste::random(&mut rng)).unwrap();
            let file = std::fs::File::open(path).unwrap();
            let params = bellperson::groth16::Parameters::read(std::io::BufReader::new(file), false).unwrap();
            current = Some((id, params, rand_chacha::ChaCha20Rng::seed_from_u64(BLINDING_SEED)));
        }
        let (_, params, blinding) = current.as_mut().unwrap();
        let (r, s) = (blstrs::Scalar::random(&mut *blinding), blstrs::Scalar::random(&mut *blinding));
        let spec = snarkflow_circuits::parse_circuit_id(id).unwrap();
        let part =
            snarkflow_circuits::visit_with_witness(&spec, partition as u64, partition, None, Synthesize(id, partition))
                .unwrap()
                .unwrap();
        let proof = snarkflow_prover::prove(part, params, r, s).unwrap();
        let mut bytes = Vec::new();
        proof.write(&mut bytes).unwrap();
        assert_eq!(
            hex::encode(&bytes),
            proof_hex,
            "{id} partition {partition}: the CPU proof differs from the H200's resident proof"
        );
        checked += 1;
    }
    assert_eq!(checked, 6, "every recorded proof was checked");
}
