//! Sparse SnapDeals fixtures: the `input` of a `snap-update` job for a sector of any size (32 GiB
//! and 64 GiB included) without sealing or updating one.
//!
//! An update's vanilla partition proof opens, at each challenge c, the old replica's tree R, the
//! new data's tree D and the new replica's tree R, and the verifier checks
//! `new[c] = old[c] + data[c]·ρ(c's high bits)` with ρ from φ = H(comm_d_new, comm_r_old). The
//! challenges come from comm_r_new, the root of the new replica, so the new replica must satisfy
//! that relation at every node, not only at chosen leaves (as the PoSt fixtures' trees do). Here
//! the old replica is all zeros (its tree R empty), the new data one value d repeated (tree D of
//! a repeating pattern), and the new replica d·ρ(high bits): constant over each of the 2^h
//! regions of high bits, a tree computed per region (`RegionTree`). Its witness repeats values
//! more than a real update's (every old path is the empty tree's, every data path the same):
//! a TEST FIXTURE for sizes and timings, not a sector.

use base64::Engine as _;
use blstrs::Scalar as Fr;
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::sha256::Sha256Domain;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredUpdateProof;
use rand::RngCore;
use storage_proofs_update::{phi, rho, ChallengeProof, Challenges, PartitionProof};

use crate::sparse::fr_safe_bytes;
use crate::sparse_tree::{PoseidonNodes as _, RegionTree, SparseTree, TreeD};
use crate::FilecoinError;

/// The `input` of a `snap-update` job for a sector of `sector_size` whose old replica is empty
/// and whose new data is one random value repeated, with a random comm_c: vanilla partition
/// proofs of every partition, which pass filecoin-proofs' verification (done again when the
/// request is parsed).
pub fn snap_request(sector_size: u64, rng: &mut impl RngCore) -> Result<serde_json::Value, FilecoinError> {
    let name = snarkflow_wire::sector_size_name(sector_size)
        .ok_or_else(|| FilecoinError::from(anyhow::anyhow!("unsupported sector size {sector_size}")))?;
    let registered: RegisteredUpdateProof = serde_json::from_value(serde_json::json!(format!("StackedDrg{name}V1")))
        .map_err(|e| FilecoinError::from(anyhow::anyhow!("no update proof for {name}: {e}")))?;
    let (comm_c, data) = (fr_safe_bytes(rng), fr_safe_bytes(rng));
    let update = (|| with_sector_shape!(sector_size, partition_proofs, registered, comm_c, data))()?;
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(serde_json::json!({
        "registered_proof": crate::fields::registered_name(registered),
        "comm_r_old": hex::encode(update.comm_r_old),
        "comm_r_new": hex::encode(update.comm_r_new),
        "comm_d_new": hex::encode(update.comm_d_new),
        "vanilla_proofs": update.proofs.iter().map(|p| b64.encode(p)).collect::<Vec<_>>(),
    }))
}

/// An update's commitments and its partitions' vanilla proofs (bincode).
struct Update {
    comm_r_old: [u8; 32],
    comm_r_new: [u8; 32],
    comm_d_new: [u8; 32],
    proofs: Vec<Vec<u8>>,
}

fn partition_proofs<Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    registered: RegisteredUpdateProof,
    comm_c: [u8; 32],
    data: [u8; 32],
) -> anyhow::Result<Update> {
    // the h the proof is checked with (as `snap::parts` takes it)
    let config = filecoin_proofs::SectorUpdateConfig::from_porep_config(&registered.as_v1_config());
    let params = storage_proofs_update::PublicParams::from_sector_size(u64::from(config.sector_size));
    let nodes = params.sector_nodes as u64;
    let region_bits = (params.challenge_bit_len - config.h) as u32;

    let tree_r_old = SparseTree::filled::<Tree>(nodes, Default::default(), None)?;
    let tree_d = TreeD::repeating(vec![Sha256Domain::from(data)], nodes)?;
    let comm_c = PoseidonDomain::from(comm_c);
    let hash2 = <PoseidonHasher as Hasher>::Function::hash2;
    let comm_r_old = hash2(&comm_c, &tree_r_old.root());
    let comm_d_new = tree_d.root();
    let phi = phi(&comm_d_new, &comm_r_old);
    // old labels are 0: a new label is the data times ρ of its region
    let d: Fr = Sha256Domain::from(data).into();
    let regions = (0..1u32 << config.h).map(|high| PoseidonDomain::from(d * rho(&phi, high))).collect();
    let tree_r_new = RegionTree::new::<Tree>(nodes, region_bits, regions)?;
    let comm_r_new = hash2(&comm_c, &tree_r_new.root());

    // each partition's apex leaves: tree D's nodes at the apex height under the partition
    let apex_height = params.challenge_bit_len - params.partition_bit_len - params.apex_leaf_bit_len;
    let proofs = (0..params.partition_count)
        .map(|k| {
            let apex_leafs = (0..params.apex_leaf_count as u64)
                .map(|j| tree_d.node(apex_height, (k * params.apex_leaf_count) as u64 + j))
                .collect();
            let challenge_proofs = Challenges::new(params.sector_nodes, comm_r_new, k)
                .map(|c| ChallengeProof::<Tree> {
                    proof_r_old: tree_r_old.proof::<Tree>(u64::from(c)),
                    proof_d_new: tree_d.proof(u64::from(c)),
                    proof_r_new: tree_r_new.proof::<Tree>(u64::from(c)),
                })
                .collect();
            Ok(bincode::serialize(&PartitionProof::<Tree> { comm_c, apex_leafs, challenge_proofs })?)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Update { comm_r_old: comm_r_old.into(), comm_r_new: comm_r_new.into(), comm_d_new: comm_d_new.into(), proofs })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size, 32 GiB and 64 GiB included: the request parses, which runs filecoin-proofs'
    /// vanilla verification of every partition proof against the commitments.
    #[test]
    fn snap_fixtures_of_every_size_pass_vanilla_verification() {
        for (size, name) in snarkflow_wire::SECTOR_SIZES {
            let input = snap_request(size, &mut rand::thread_rng()).unwrap();
            let parsed = crate::snap::parse(input.as_object().unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
            // an update's partitions, not the PoRep's (10 at 32 GiB)
            let partitions = storage_proofs_update::constants::partition_count((size / 32) as usize);
            assert_eq!(parsed.partitions as usize, partitions, "{name}");
            if size == 32 << 30 {
                assert_eq!(partitions, 16);
            }
        }
    }

    /// The check is not vacuous: with another comm_d_new (so another φ and other ρs, and
    /// another tree D root) the same partition proofs are refused.
    #[test]
    fn a_snap_fixture_with_a_changed_commitment_is_refused() {
        let mut input = snap_request(8 << 20, &mut rand::thread_rng()).unwrap();
        let mut comm = hex::decode(input["comm_d_new"].as_str().unwrap()).unwrap();
        comm[0] ^= 1;
        input["comm_d_new"] = hex::encode(comm).into();
        let err = crate::snap::parse(input.as_object().unwrap()).unwrap_err().to_string();
        assert!(err.contains("do not verify"), "{err}");
    }
}
