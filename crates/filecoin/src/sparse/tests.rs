//! Sparse PoRep fixtures: refused for synthetic PoRep, parsed like real C1 outputs, verified at
//! every size.

use super::*;

#[test]
fn synthetic_porep_cannot_be_sparse() {
    let err =
        porep_c1(RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep, [0; 32], 1, &mut rand::thread_rng())
            .unwrap_err();
    assert!(err.to_string().contains("only interactive PoRep"), "{err}");
}

#[test]
fn a_2kib_fixture_parses_like_a_real_c1() {
    let c1 =
        porep_c1(RegisteredSealProof::StackedDrg2KiBV1_1, crate::prover_id(1000), 7, &mut rand::thread_rng()).unwrap();
    let request = serde_json::json!({ "miner_id": 1000, "c1": crate::porep::c1_envelope(&c1, 7) });
    let parsed = crate::porep::parse(request.as_object().unwrap()).unwrap();
    assert_eq!(parsed.partitions, 1);
}

/// Change one byte of one label in the first challenge's first DRG parent column (the
/// circuit reads parent labels from these columns; the challenge's own column it
/// recomputes).
pub(crate) fn with_one_label_changed(c1: &SealCommitPhase1Output) -> SealCommitPhase1Output {
    let mut value = serde_json::to_value(c1).unwrap();
    let proofs = value["vanilla_proofs"].as_object_mut().unwrap().values_mut().next().unwrap();
    let row = &mut proofs[0][0]["replica_column_proofs"]["drg_parents"][0]["column"]["rows"][0];
    row[0] = (row[0].as_u64().unwrap() ^ 1).into();
    serde_json::from_value(value).unwrap()
}

#[test]
fn a_fixture_with_one_label_changed_is_refused_at_submission() {
    let c1 =
        porep_c1(RegisteredSealProof::StackedDrg2KiBV1_1, crate::prover_id(1000), 7, &mut rand::thread_rng()).unwrap();
    let bad = with_one_label_changed(&c1);
    let request = serde_json::json!({ "miner_id": 1000, "c1": crate::porep::c1_envelope(&bad, 7) });
    let err = crate::porep::parse(request.as_object().unwrap()).unwrap_err().to_string();
    assert!(err.contains("vanilla proofs do not verify"), "{err}");
}

/// Every published size, 32 GiB (8-8-0 trees) and 64 GiB (8-8-2) included, and random data
/// at 512 MiB and 32 GiB: the fixture is built, filecoin-proofs' vanilla verification
/// accepts it (inside `porep_c1_of` and again at parse), and its paths are full length and
/// hash to their roots.
#[test]
fn fixtures_of_every_size_pass_vanilla_verification() {
    let cases = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"].map(|n| (n, SectorData::Zeros));
    for (name, data) in cases.into_iter().chain([("512MiB", SectorData::Random), ("32GiB", SectorData::Random)]) {
        let registered: RegisteredSealProof = crate::fields::by_name(format!("StackedDrg{name}V1_1")).unwrap();
        let started = std::time::Instant::now();
        let c1 = porep_c1_of(registered, crate::prover_id(1000), 9, data, &mut rand::thread_rng()).unwrap();
        let built_s = started.elapsed().as_secs_f64();
        let request =
            serde_json::json!({ "miner_id": 1000, "c1_raw": serde_json::to_value(&c1).unwrap(), "sector_num": 9 });
        let parsed = crate::porep::parse(request.as_object().unwrap()).unwrap();
        assert_eq!(u64::from(parsed.partitions), u64::from(registered.partitions()), "{name}");
        let size = u64::from(registered.sector_size());
        (|| with_sector_shape!(size, paths_hash_to_their_roots, &c1))().unwrap();
        println!("{name} ({data:?}): built and verified in {built_s:.2} s");
    }
}

/// What the vanilla verifier leaves out: tree D and tree R paths hash to their roots, and
/// every labeling proof names its challenge.
fn paths_hash_to_their_roots<Tree: 'static + MerkleTreeTrait>(c1: &SealCommitPhase1Output) -> anyhow::Result<()> {
    use storage_proofs_core::merkle::MerkleProofTrait;
    let proofs: Vec<Vec<VanillaProof<Tree>>> = c1.vanilla_proofs.clone().try_into()?;
    for proof in proofs.iter().flatten() {
        let challenge = proof.comm_r_last_proof.path_index();
        let c_x = &proof.replica_column_proofs.c_x;
        ensure!(c_x.verify(challenge as u32, &c_x.root()), "the column of {challenge} is at {challenge}");
        ensure!(proof.comm_d_proofs.validate(challenge), "tree D path of {challenge}");
        ensure!(proof.comm_r_last_proof.validate(challenge), "tree R path of {challenge}");
        ensure!(proof.replica_column_proofs.drg_parents.len() == BASE_DEGREE, "6 DRG parents");
        ensure!(proof.replica_column_proofs.exp_parents.len() == 8, "8 expander parents");
    }
    Ok(())
}
