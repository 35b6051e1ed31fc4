//! The registry as the rest of snarkflow sees it: kinds by name, circuit ids (the names on disk
//! and in ledger records), job inputs in their stored forms, and what an unknown kind gets.

use proptest::prelude::*;
use rand::SeedableRng;
use snarkflow_circuits::{circuit, kind_named, parse_circuit_id, JobInput, KINDS};
use snarkflow_filecoin::{porep, sparse, sparse_post, PostKind};
use snarkflow_wire::{CircuitSpec, JobKind, SECTOR_SIZES};

#[test]
fn every_kind_has_one_name_and_is_found_by_it() {
    for (i, kind) in KINDS.iter().enumerate() {
        assert_eq!(kind_named(kind.as_str()), Some(*kind));
        assert!(!KINDS[i + 1..].contains(kind), "{kind} is registered twice");
        assert!(snarkflow_circuits::kind_info(*kind).is_some());
    }
    for name in ["porep-c2", "snap-update", "window-post", "winning-post", "sha256-chain", "dense-chain"] {
        assert!(kind_named(name).is_some(), "{name}");
    }
    assert_eq!(kind_named("porep"), None);
}

#[test]
fn circuit_ids_are_the_ones_already_on_disk() {
    // parameter files, shapes and ledger records name circuits by these ids
    for id in [
        "sha256-chain-b64",
        "dense-chain-c1024",
        "porep-c2-32GiB",
        "porep-c2-synthetic-64GiB",
        "snap-update-2KiB",
        "window-post-32GiB",
        "winning-post-512MiB",
    ] {
        assert_eq!(parse_circuit_id(id).map(|s| s.circuit_id()).as_deref(), Some(id));
    }
    assert_eq!(snarkflow_circuits::filecoin_sector_size(&circuit("porep-c2-synthetic-64GiB")), Some(64 << 30));
    assert_eq!(snarkflow_circuits::filecoin_sector_size(&circuit("dense-chain-c8")), None);
}

#[test]
fn unknown_circuit_ids_are_rejected() {
    for id in [
        "porep-32g",
        "dense-chain-cX",
        "dense-chain-c0",
        "porep-c2-3GiB",
        "porep-c2",
        "sha256-chainb1",
        "snap-update-synthetic-2KiB",
        "nothing-c1",
    ] {
        assert_eq!(parse_circuit_id(id), None, "{id}");
    }
}

#[test]
fn a_spec_from_outside_becomes_the_kinds_own_rendering() {
    let kind = kind_named("porep-c2").unwrap();
    let by_bytes = CircuitSpec::new(kind, "34359738368").unwrap();
    assert_eq!(snarkflow_circuits::check_spec(&by_bytes).unwrap(), circuit("porep-c2-32GiB"));
    let foreign = CircuitSpec::new(JobKind::new("not-a-kind"), "x1").unwrap();
    let e = snarkflow_circuits::check_spec(&foreign).unwrap_err().to_string();
    assert!(e.contains("unknown kind not-a-kind (this build proves sha256-chain, dense-chain, porep-c2"), "{e}");
}

/// One circuit has one id: a spec spelled other than its kind renders it is not read as that
/// kind's (it would key its own parameters, shapes and caches), but `check_spec` renders it.
#[test]
fn only_the_kinds_own_rendering_is_its_spec() {
    let (porep, dense) = (kind_named("porep-c2").unwrap(), kind_named("dense-chain").unwrap());
    for (kind, other, own) in [(porep, "34359738368", "32GiB"), (porep, "32gib", "32GiB"), (dense, "c008", "c8")] {
        let (spelled, rendered) = (CircuitSpec::new(kind, other).unwrap(), CircuitSpec::new(kind, own).unwrap());
        let e = snarkflow_circuits::param_file_stem(&spelled).unwrap_err().to_string();
        assert!(e.contains("is not a"), "{e}");
        assert!(snarkflow_circuits::param_file_stem(&rendered).is_ok());
        assert_eq!(snarkflow_circuits::check_spec(&spelled).unwrap(), rendered);
    }
}

#[test]
fn a_job_of_a_kind_this_build_lacks_fails_with_a_reason() {
    let spec = CircuitSpec::new(JobKind::new("not-a-kind"), "x1").unwrap();
    let e = snarkflow_circuits::public_inputs(&spec, 0, 1, None).unwrap_err().to_string();
    assert!(e.contains("unknown kind not-a-kind"), "{e}");
    let verdict = snarkflow_circuits::verify_job(&spec, 0, None, std::path::Path::new("/nowhere"), &[]);
    assert!(verdict.unwrap().is_err(), "an unknown kind's proof is never passed");
    let e = JobInput::from_bytes(spec.kind(), b"SFJI\x02").unwrap_err().to_string();
    assert!(e.contains("unknown kind not-a-kind"), "{e}");
    assert!(snarkflow_circuits::verified_whole(spec.kind()));
}

proptest! {
    #[test]
    fn synthetic_circuit_ids_round_trip(blocks in 1u32..=4096, constraints in 1u32..(1 << 26)) {
        for id in [format!("sha256-chain-b{blocks}"), format!("dense-chain-c{constraints}")] {
            prop_assert_eq!(parse_circuit_id(&id).map(|s| s.circuit_id()), Some(id));
        }
    }

    #[test]
    fn filecoin_circuit_ids_round_trip(i in 0usize..5, synthetic: bool) {
        let size = SECTOR_SIZES[i].1;
        let porep = if synthetic { format!("porep-c2-synthetic-{size}") } else { format!("porep-c2-{size}") };
        for id in [porep, format!("snap-update-{size}"), format!("window-post-{size}"), format!("winning-post-{size}")] {
            let spec = parse_circuit_id(&id);
            prop_assert_eq!(spec.as_ref().map(|s| s.circuit_id()), Some(id));
            prop_assert_eq!(snarkflow_circuits::filecoin_sector_size(&spec.unwrap()), Some(SECTOR_SIZES[i].0));
        }
    }
}

/// A real input of every Filecoin kind, as the kind's parse makes it (snap from fixed bytes: its
/// parse verifies vanilla proofs this test does not have).
fn inputs() -> Vec<JobInput> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let registered = porep::registered_proof(2 << 10, false).unwrap();
    let c1 = sparse::porep_c1(registered, snarkflow_filecoin::prover_id(1000), 7, &mut rng).unwrap();
    let request = serde_json::json!({ "miner_id": 1000, "c1": porep::c1_envelope(&c1, 7) });
    let parse = |kind: &str, input: &serde_json::Value| {
        snarkflow_circuits::parse_request(kind_named(kind).unwrap(), input.as_object().unwrap()).unwrap().input.unwrap()
    };
    let mut inputs = vec![parse("porep-c2", &request)];
    for (kind, post, sectors) in
        [("window-post", PostKind::Window, &[1, 2][..]), ("winning-post", PostKind::Winning, &[1][..])]
    {
        let request = sparse_post::post_request(post, 2 << 10, 1000, sectors, &mut rng).unwrap();
        inputs.push(parse(kind, &request));
    }
    inputs.push(JobInput::of::<snarkflow_circuits::filecoin_kinds::Snap>(snarkflow_filecoin::SnapInput {
        registered_proof: filecoin_proofs_api::RegisteredUpdateProof::StackedDrg2KiBV1,
        comm_r_old: [1; 32],
        comm_r_new: [2; 32],
        comm_d_new: [3; 32],
        vanilla_proofs: vec![vec![4, 5, 6], vec![]],
    }));
    inputs
}

#[test]
fn every_kind_reads_back_what_it_stored() {
    for input in inputs() {
        let kind = input.kind();
        let stored = input.to_bytes();
        assert!(stored.starts_with(b"SFJI\x02"), "{kind}");
        let back = JobInput::from_bytes(kind, &stored).unwrap();
        assert_eq!(back.kind(), kind);
        // same content: the stored form is bincode, one encoding per value
        assert_eq!(back.to_bytes(), stored, "{kind}");
        // the pre-release forms (version 1, JSON) are not read: nothing in production wrote them
        let mut v1 = stored.clone();
        v1[4] = 1;
        let e = JobInput::from_bytes(kind, &v1).unwrap_err().to_string();
        assert!(e.contains("version 1, this build reads 2"), "{e}");
        let e = JobInput::from_bytes(kind, b"{\"kind\":\"porep-c2\"}").unwrap_err().to_string();
        assert!(e.contains("does not start with the stored form's header"), "{e}");
    }
}

#[test]
fn a_damaged_or_foreign_stored_input_is_refused_with_a_reason() {
    let inputs = inputs();
    let (porep, window, winning) = (&inputs[0], &inputs[1], &inputs[2]);
    let stored = porep.to_bytes();
    let e = JobInput::from_bytes(porep.kind(), &stored[..stored.len() / 2]).unwrap_err().to_string();
    assert!(e.contains("unreadable"), "{e}");
    let mut versioned = stored.clone();
    versioned[4] = 3;
    let e = JobInput::from_bytes(porep.kind(), &versioned).unwrap_err().to_string();
    assert!(e.contains("version 3"), "{e}");
    // a WindowPoSt input read as a PoRep job's
    let e = JobInput::from_bytes(porep.kind(), &window.to_bytes()).unwrap_err().to_string();
    assert!(e.contains("unreadable"), "{e}");
    // the two PoSt kinds store the same type: the job's kind, not the bytes, says whose it is
    let as_window = JobInput::from_bytes(window.kind(), &winning.to_bytes()).unwrap();
    assert_eq!(as_window.kind(), window.kind());
    // an input of one kind is not another's
    let e = snarkflow_circuits::public_inputs(&circuit("porep-c2-2KiB"), 0, 1, Some(window)).unwrap_err();
    assert!(e.to_string().contains("does not belong to a porep-c2 job"), "{e}");
    let e = snarkflow_circuits::public_inputs(&circuit("porep-c2-2KiB"), 0, 1, None).unwrap_err();
    assert!(e.to_string().contains("a porep-c2 job needs its input"), "{e}");
}

/// The synthetic kinds' input is the job's seed: it decides the witness, and nothing is stored.
#[test]
fn a_synthetic_jobs_input_is_its_seed() {
    let spec = circuit("dense-chain-c8");
    let job = snarkflow_circuits::parse_request(
        spec.kind(),
        serde_json::json!({"constraints": 8, "seed": 7}).as_object().unwrap(),
    )
    .unwrap();
    assert_eq!((job.seed, job.input.is_none()), (7, true));
    let seven = snarkflow_circuits::public_inputs(&spec, 7, 2, None).unwrap();
    assert_eq!(seven, snarkflow_circuits::public_inputs(&spec, 7, 2, None).unwrap());
    assert_ne!(seven, snarkflow_circuits::public_inputs(&spec, 8, 2, None).unwrap());
    assert_ne!(seven[0], seven[1], "partitions draw different witnesses");
}

#[test]
fn only_the_post_kinds_have_dense_witnesses() {
    for (id, dense) in [
        ("window-post-32GiB", true),
        ("winning-post-2KiB", true),
        ("porep-c2-32GiB", false),
        ("snap-update-32GiB", false),
        ("dense-chain-c64", false),
        ("sha256-chain-b4", false),
    ] {
        assert_eq!(snarkflow_circuits::dense_witness(&snarkflow_circuits::circuit(id)), dense, "{id}");
        assert_eq!(snarkflow_circuits::catalog().dense_witness(&snarkflow_circuits::circuit(id)), dense, "{id}");
    }
}
