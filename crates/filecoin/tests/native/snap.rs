//! The native SnapDeals witness equals the gadgets' value for value: on random
//! partitions of every published size (`random_snap`: random commitments and paths, the
//! circuit's own challenges, a random partition and `h`) and on real updated 2 KiB sectors,
//! whose native public inputs are also the ones filecoin-proofs' verifier derives.

use filecoin_proofs_api::RegisteredSealProof;
use snarkflow_filecoin::random_snap::{random_snap_partition, Witnesses};
use snarkflow_filecoin::snap;
use snarkflow_synthesis::SynthesizeWitness;

#[test]
fn the_native_snap_witness_equals_the_gadgets_on_random_partitions() {
    // the partition is seed mod partitions. 2 KiB: one partition, one digest of challenge
    // bits; 8 MiB: partitions 1 and 2 of 4, 10 challenges, h among 7..=12; 512 MiB: partition
    // 7 of 16, 86 challenges from 8 digests (~35 s of the gadgets). 32 GiB and 64 GiB (tree R
    // with sub- and top-tree levels) are checked by `examples/native_snap.rs` runs.
    for (size, seeds) in [(2048u64, 0..6u64), (8 << 20, 1..3), (512 << 20, 7..8)] {
        for seed in seeds {
            let p = random_snap_partition(size, seed, Witnesses::Both).expect("a random partition");
            let (native, gadgets) = (p.native.unwrap(), p.gadgets.unwrap());
            assert!(native.aux.len() > 1000, "{size} seed {seed}: a witness of {} values", native.aux.len());
            assert_eq!(native.difference(&gadgets), None, "{size} bytes, seed {seed} (partition {}, h {})", p.k, p.h);
            assert_eq!(native.inputs[1..], p.verifier_inputs[..], "{size} seed {seed}: not the verifier's inputs");
        }
    }
}

#[test]
fn different_random_partitions_give_different_witnesses() {
    // the comparison above is not vacuous: the inputs reach the witness
    let a = random_snap_partition(2048, 1, Witnesses::Native).unwrap().native.unwrap();
    let b = random_snap_partition(2048, 2, Witnesses::Native).unwrap().native.unwrap();
    assert_eq!(a.aux.len(), b.aux.len());
    assert!(a.difference(&b).is_some());
}

#[test]
fn the_native_snap_witness_equals_the_gadgets_on_sparse_fixtures() {
    // `sparse_snap`: an empty replica updated with constant data, vanilla proofs that verify;
    // 2 KiB (one partition) and 8 MiB (partitions 0 and 3 of 4, 10 challenges each)
    for (size, parts) in [(2048u64, &[0usize][..]), (8 << 20, &[0, 3])] {
        let request = snarkflow_filecoin::sparse_snap::snap_request(size, &mut rand::thread_rng()).unwrap();
        let input = snap::parse(request.as_object().unwrap()).expect("a valid request").input;
        let verifier = snap::public_inputs(&input).expect("verifier inputs");
        for &k in parts {
            let gadgets = snap::visit_partition(&input, k, SynthesizeWitness("snap", k as u32)).unwrap().unwrap();
            let native = snap::native_witness(&input, k, "snap").unwrap();
            assert_eq!(native.difference(&gadgets), None, "{size} bytes, partition {k}");
            assert_eq!(native.inputs[1..], verifier[k][..], "{size} bytes, partition {k}: not the verifier's inputs");
        }
    }
}

#[test]
fn the_native_snap_witness_equals_the_gadgets_on_real_updated_2kib_sectors() {
    let dir = tempfile::tempdir().unwrap();
    for (sector, seed) in [(3u64, 11u64), (4, 12)] {
        let sealed = snarkflow_filecoin::fixtures::seal_sector(
            &dir.path().join(format!("seal-{sector}")),
            RegisteredSealProof::StackedDrg2KiBV1_1,
            1000,
            sector,
            seed,
        )
        .unwrap();
        let request = sealed.snap_request_input(&dir.path().join(format!("update-{sector}")), seed).unwrap();
        let input = snap::parse(request.as_object().unwrap()).expect("a valid request").input;
        let gadgets = snap::visit_partition(&input, 0, SynthesizeWitness("snap", 0)).unwrap().expect("gadget witness");
        let native = snap::native_witness(&input, 0, "snap").expect("native witness");
        assert_eq!(native.difference(&gadgets), None, "sector {sector}");
        let verifier = snap::public_inputs(&input).expect("verifier inputs");
        assert_eq!(native.inputs[1..], verifier[0][..], "sector {sector}: not the verifier's inputs");
    }
}

/// The `snap-update` request input of a 2 KiB sector sealed in `dir` and then updated.
fn updated_sector_request(dir: &std::path::Path, sector: u64, seed: u64) -> serde_json::Value {
    let sealed = snarkflow_filecoin::fixtures::seal_sector(
        &dir.join("seal"),
        RegisteredSealProof::StackedDrg2KiBV1_1,
        1000,
        sector,
        seed,
    )
    .unwrap();
    sealed.snap_request_input(&dir.join("update"), seed).unwrap()
}

#[test]
fn a_new_replica_leaf_that_is_not_the_encoding_is_refused() {
    // the gadget asserts (panics) here; the native path says what is wrong instead
    let dir = tempfile::tempdir().unwrap();
    let request = updated_sector_request(dir.path(), 5, 13);
    let mut input = snap::parse(request.as_object().unwrap()).expect("a valid request").input;
    // a different comm_d_new changes phi, so every rho: the proofs' new leaves no longer match
    // (a request saying so is refused at parse; this input got past it, as a bug might)
    input.comm_d_new = [7u8; 32];
    let err = snap::native_witness(&input, 0, "snap").expect_err("an inconsistent partition");
    assert!(err.to_string().contains("label_r_old + data * rho"), "{err}");
}

#[test]
fn a_snap_request_whose_vanilla_proofs_do_not_verify_is_refused_at_parse() {
    let dir = tempfile::tempdir().unwrap();
    let request = updated_sector_request(dir.path(), 6, 14);
    assert!(snap::parse(request.as_object().unwrap()).is_ok(), "the real request verifies");
    for field in ["comm_d_new", "comm_r_new", "comm_r_old"] {
        let mut tampered = request.clone();
        tampered[field] = hex::encode([7u8; 32]).into();
        let err = snap::parse(tampered.as_object().unwrap()).expect_err("tampered commitments");
        assert!(err.to_string().contains("do not verify"), "{field}: {err}");
    }
}
