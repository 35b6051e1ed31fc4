//! Sparse WindowPoSt / WinningPoSt fixtures: vanilla sector proofs for sectors of any size
//! without sealing them.
//!
//! A PoSt vanilla proof opens tree R_last of each sector at leaves chosen from the randomness
//! and the sector id, and proves comm_r = H(comm_c, comm_r_last). Nothing ties the leaves to
//! labels (PoSt has no label check), and the challenges do not depend on comm_r, so each
//! sector gets a sparse tree R with random leaves at its challenges and a random comm_c.
//! These are test fixtures: real sectors commit to comm_r long before any PoSt randomness.

use std::collections::BTreeMap;

use base64::Engine as _;
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{FallbackPoStSectorProof, MerkleTreeTrait};
use filecoin_proofs_api::{RegisteredPoStProof, SectorId};
use rand::RngCore;
use storage_proofs_post::fallback;

use crate::sparse::{fr_safe_bytes, SectorData};
use crate::sparse_tree::{PoseidonNodes as _, SparseTree};
use crate::{FilecoinError, PostKind};

/// The `input` of a `window-post` or `winning-post` job for `sector_ids` of miner `miner_id`,
/// with fresh randomness and vanilla proofs from sparse trees. It passes the checks
/// filecoin-proofs' own proving runs on vanilla proofs (done again when it is parsed).
pub fn post_request(
    kind: PostKind,
    sector_size: u64,
    miner_id: u64,
    sector_ids: &[u64],
    rng: &mut impl RngCore,
) -> Result<serde_json::Value, FilecoinError> {
    post_request_of(kind, sector_size, miner_id, sector_ids, SectorData::Zeros, rng)
}

/// [`post_request`] with each sector's tree R as `data` says: empty where no challenge opens
/// it (`Zeros`: every sector's paths then share their siblings), or random there
/// (`Random`: siblings that differ from sector to sector, as sealed sectors' do).
pub fn post_request_of(
    kind: PostKind,
    sector_size: u64,
    miner_id: u64,
    sector_ids: &[u64],
    data: SectorData,
    rng: &mut impl RngCore,
) -> Result<serde_json::Value, FilecoinError> {
    let registered = kind.registered_proof(sector_size)?;
    let randomness = fr_safe_bytes(rng);
    let prover_id = crate::prover_id(miner_id);
    let mut proofs = Vec::with_capacity(sector_ids.len());
    for &sector_id in sector_ids {
        let (comm_c, leaf_seed) = (fr_safe_bytes(rng), fr_safe_bytes(rng));
        let fill = (data == SectorData::Random).then(|| fr_safe_bytes(rng));
        let proof = (|| {
            with_sector_shape!(
                sector_size,
                sector_proof,
                registered,
                randomness,
                prover_id,
                sector_id,
                comm_c,
                leaf_seed,
                fill
            )
        })()?;
        proofs.push(base64::engine::general_purpose::STANDARD.encode(proof));
    }
    let mut input = serde_json::json!({
        "registered_proof": crate::fields::registered_name(registered),
        "miner_id": miner_id,
        "randomness": hex::encode(randomness),
        "vanilla_proofs": proofs,
    });
    if kind == PostKind::Window {
        input["partition_index"] = 0.into();
    }
    Ok(input)
}

/// bincode of one sector's `FallbackPoStSectorProof`.
fn sector_proof<Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    registered: RegisteredPoStProof,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    sector_id: u64,
    comm_c: [u8; 32],
    leaf_seed: [u8; 32],
    fill: Option<[u8; 32]>,
) -> anyhow::Result<Vec<u8>> {
    let config = registered.as_v1_config();
    let nodes = u64::from(config.sector_size) / 32;
    let sector = SectorId::from(sector_id);
    let challenges =
        filecoin_proofs::generate_fallback_sector_challenges::<Tree>(&config, &randomness, &[sector], prover_id)?;
    let challenges = &challenges[&sector];
    // a leaf is any field element: derive each from the seed and its index
    let leaves: BTreeMap<u64, PoseidonDomain> = challenges
        .iter()
        .map(|c| {
            let mut leaf = leaf_seed;
            for (byte, index) in leaf.iter_mut().zip(c.to_le_bytes()) {
                *byte ^= index;
            }
            leaf[31] &= 0x3f;
            (*c, PoseidonDomain::from(leaf))
        })
        .collect();
    let tree_r = SparseTree::filled::<Tree>(nodes, leaves, fill)?;
    let comm_c = PoseidonDomain::from(comm_c);
    let comm_r_last = tree_r.root();
    let comm_r = <PoseidonHasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let proof = FallbackPoStSectorProof::<Tree> {
        sector_id: sector,
        comm_r,
        vanilla_proof: fallback::Proof {
            sectors: vec![fallback::SectorProof {
                inclusion_proofs: challenges.iter().map(|c| tree_r.proof::<Tree>(*c)).collect(),
                comm_c,
                comm_r_last,
            }],
        },
    };
    Ok(bincode::serialize(&proof)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size, 32 GiB and 64 GiB included: the request parses, which runs
    /// filecoin-proofs' partitioning and vanilla verification of the sector proofs.
    #[test]
    fn post_fixtures_of_every_size_pass_vanilla_verification() {
        for (size, name) in snarkflow_wire::SECTOR_SIZES {
            for kind in [PostKind::Window, PostKind::Winning] {
                let input = post_request(kind, size, 1000, &[3], &mut rand::thread_rng()).unwrap();
                let parsed = kind.parse(input.as_object().unwrap()).unwrap_or_else(|e| panic!("{name} {kind:?}: {e}"));
                assert_eq!(parsed.partitions, 1);
            }
        }
    }

    /// Random subtrees: two sectors' proofs still verify, and no two sectors share a sibling
    /// (with empty subtrees every sector's paths share theirs).
    #[test]
    fn post_fixtures_with_random_subtrees_verify_and_share_no_siblings() {
        for data in [SectorData::Random, SectorData::Zeros] {
            let input =
                post_request_of(PostKind::Window, 8 << 20, 1000, &[3, 4], data, &mut rand::thread_rng()).unwrap();
            PostKind::Window.parse(input.as_object().unwrap()).unwrap();
            let siblings: Vec<Vec<PoseidonDomain>> = input["vanilla_proofs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b64| {
                    let bytes = base64::engine::general_purpose::STANDARD.decode(b64.as_str().unwrap()).unwrap();
                    let proof: FallbackPoStSectorProof<filecoin_proofs::SectorShape8MiB> =
                        bincode::deserialize(&bytes).unwrap();
                    use storage_proofs_core::merkle::MerkleProofTrait as _;
                    let opening = &proof.vanilla_proof.sectors[0].inclusion_proofs[0];
                    opening.path().iter().flat_map(|(level, _)| level.clone()).collect()
                })
                .collect();
            let shared = siblings[0].iter().filter(|s| siblings[1].contains(s)).count();
            match data {
                SectorData::Random => assert_eq!(shared, 0, "random subtrees"),
                SectorData::Zeros => assert!(shared > 0, "empty subtrees are the same in every sector"),
            }
        }
    }

    #[test]
    fn a_post_fixture_with_a_changed_comm_c_is_refused() {
        for kind in [PostKind::Window, PostKind::Winning] {
            let mut input = post_request(kind, 2048, 1000, &[3], &mut rand::thread_rng()).unwrap();
            let b64 = input["vanilla_proofs"][0].as_str().unwrap().to_owned();
            let mut bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
            let in_comm_c = bytes.len() - 40; // the proof ends with comm_c, comm_r_last
            bytes[in_comm_c] ^= 1;
            input["vanilla_proofs"][0] = base64::engine::general_purpose::STANDARD.encode(bytes).into();
            let err = kind.parse(input.as_object().unwrap()).unwrap_err().to_string();
            assert!(err.contains("verify"), "{kind:?}: {err}");
        }
    }
}
