//! The SnapDeals witness (`EmptySectorUpdateCircuit::synthesize`) computed natively.
//!
//! Head, in the gadget's order: `k_and_h_select` and its bits, the partition index packed,
//! the three public commitments, `phi = H(comm_d_new, comm_r_old)`, the private roots, apex
//! leaves and partition path, `comm_r = H(comm_c, root_r)` for the old and new replica, the
//! apex tree (SHA-256) and its inclusion in `comm_d_new`, then the challenges' bits drawn from
//! Poseidon digests of `comm_r_new`. Each challenge then: its high bits selected by `h`,
//! `rho = H(phi, high)`, `label_r_new = label_r_old + label_d_new * rho`, its inclusion in the
//! old and new tree R, the apex leaf it falls under, and its tree D path up to that leaf.
//! Challenges are independent and equal in size: they are made in parallel by [`assemble`].

use blstrs::Scalar as Fr;
use ff::{Field, PrimeFieldBits};
use filecoin_hashers::POSEIDON_CONSTANTS_2;
use snarkflow_synthesis::native::{poseidon_hash, Aux, Bit, Num};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::ChallengeProof;
use storage_proofs_update::constants::{hs, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::{EmptySectorUpdateCircuit, PublicParams};

use super::merkle::{pack_bits, por, select, sha256_leaves, TreeHash, CAPACITY};
use super::{assemble, Head};
use crate::FilecoinError;

/// What every challenge of a partition shares.
struct Shared {
    partition_bits: Vec<Bit>,
    h_select_bits: Vec<Bit>,
    hs: [usize; 6],
    phi: Num,
    apex_leafs: Vec<Num>,
    challenge_bit_len: usize,
    partition_bit_len: usize,
    apex_leaf_bit_len: usize,
}

/// The public inputs (leading ONE included) and auxiliary assignment of the SnapDeals
/// partition `circuit` (built by `EmptySectorUpdateCompound::circuit`, witness present).
pub(crate) fn snap_partition<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: &EmptySectorUpdateCircuit<Tree>,
) -> Result<(Vec<Fr>, Vec<Fr>), FilecoinError> {
    let p = &circuit.pub_params;
    let (pub_in, priv_in) = (&circuit.pub_inputs, &circuit.priv_inputs);
    let hs = hs(p.sector_nodes);
    let proofs = &priv_in.challenge_proofs;
    let partition_path = checked_partition_path(circuit)?;
    let k_and_h_select = value(pub_in.k_and_h_select, "k_and_h_select")?;
    let bits = k_and_h_select.to_le_bits();
    let h_bits = &bits[p.partition_bit_len..p.partition_bit_len + hs.len()];
    if h_bits.count_ones() != 1 || bits[p.partition_bit_len + hs.len()..].any() {
        return Err(FilecoinError::new("k_and_h_select does not select exactly one h"));
    }

    let mut head = Head { inputs: vec![Fr::ONE], aux: Aux::default() };
    let aux = &mut head.aux;
    let k_and_h_select = Num::alloc(aux, k_and_h_select);
    head.inputs.push(k_and_h_select.value);
    let k_and_h_bits: Vec<Bit> = (0..p.partition_bit_len + hs.len()).map(|i| Bit::alloc(aux, bits[i])).collect();
    let (partition_bits, h_select_bits) = k_and_h_bits.split_at(p.partition_bit_len);
    let partition = pack_bits(aux, partition_bits);
    let mut public = |aux: &mut Aux, v: Option<Fr>, what: &str| -> Result<Num, FilecoinError> {
        let n = Num::alloc(aux, value(v, what)?);
        head.inputs.push(n.value);
        Ok(n)
    };
    let comm_r_old = public(aux, pub_in.comm_r_old, "comm_r_old")?;
    let comm_d_new = public(aux, pub_in.comm_d_new, "comm_d_new")?;
    let comm_r_new = public(aux, pub_in.comm_r_new, "comm_r_new")?;
    let phi = poseidon_hash(aux, &[comm_d_new, comm_r_old], &POSEIDON_CONSTANTS_GEN_RANDOMNESS);

    let comm_c = Num::alloc(aux, value(priv_in.comm_c, "comm_c")?);
    let root_r_old = Num::alloc(aux, value(priv_in.root_r_old, "root_r_old")?);
    let root_r_new = Num::alloc(aux, value(priv_in.root_r_new, "root_r_new")?);
    let apex_leafs = priv_in
        .apex_leafs
        .iter()
        .map(|&l| Ok(Num::alloc(aux, value(l, "an apex leaf")?)))
        .collect::<Result<Vec<_>, FilecoinError>>()?;
    let partition_path = d_path(aux, partition_path)?;
    let _ = poseidon_hash(aux, &[comm_c, root_r_old], &POSEIDON_CONSTANTS_2);
    let _ = poseidon_hash(aux, &[comm_c, root_r_new], &POSEIDON_CONSTANTS_2);

    // apex_por: the apex tree over this partition's apex leaves, its root included in comm_d_new
    let mut row = apex_leafs.clone();
    while row.len() > 1 {
        row = row.chunks(2).map(|pair| sha256_leaves(aux, pair)).collect();
    }
    por(aux, partition_bits, row[0], &partition_path, TreeHash::Sha256)?;

    let generated = challenge_bits(aux, p, partition, comm_r_new);

    let shared = Shared {
        partition_bits: partition_bits.to_vec(),
        h_select_bits: h_select_bits.to_vec(),
        hs,
        phi,
        apex_leafs,
        challenge_bit_len: p.challenge_bit_len,
        partition_bit_len: p.partition_bit_len,
        apex_leaf_bit_len: p.apex_leaf_bit_len,
    };
    let challenges: Vec<(&Vec<Bit>, &ChallengeProof<Tree>)> = generated.iter().zip(proofs).collect();
    assemble(head, &challenges, |(bits, proof), aux| {
        challenge(&shared, bits, proof, aux)?;
        Ok(Vec::new())
    })
}

/// The partition's tree D path, once the partition's sizes are checked against the sector
/// size's and every challenge is seen to lie in it (its tree D path ends in the partition's).
fn checked_partition_path<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: &EmptySectorUpdateCircuit<Tree>,
) -> Result<&[Vec<Option<Fr>>], FilecoinError> {
    let (p, priv_in) = (&circuit.pub_params, &circuit.priv_inputs);
    let proofs = &priv_in.challenge_proofs;
    if proofs.len() != p.challenge_count || priv_in.apex_leafs.len() != p.apex_leaf_count {
        return Err(FilecoinError::new(format!(
            "a SnapDeals partition with {} challenges and {} apex leaves; this sector size has {} and {}",
            proofs.len(),
            priv_in.apex_leafs.len(),
            p.challenge_count,
            p.apex_leaf_count
        )));
    }
    let partition_path = &proofs[0].path_d_new[p.challenge_bit_len - p.partition_bit_len..];
    if proofs.iter().any(|c| &c.path_d_new[p.challenge_bit_len - p.partition_bit_len..] != partition_path) {
        return Err(FilecoinError::new("the challenges of a SnapDeals partition disagree on the partition's path"));
    }
    Ok(partition_path)
}

/// gen_challenge_bits: each Poseidon digest of (comm_r_new, digest index) gives
/// ⌊CAPACITY / bits⌋ challenges' random bits, allocated into `aux` in the gadgets' order.
fn challenge_bits(aux: &mut Aux, p: &PublicParams, partition: Num, comm_r_new: Num) -> Vec<Vec<Bit>> {
    let bits_per_challenge = p.challenge_bit_len - p.partition_bit_len;
    let per_digest = CAPACITY / bits_per_challenge;
    let digests = p.challenge_count.div_ceil(per_digest);
    let mut generated: Vec<Vec<Bit>> = Vec::with_capacity(p.challenge_count);
    for j in 0..digests {
        let index = Num::alloc(aux, partition.value * Fr::from(digests as u64) + Fr::from(j as u64));
        let digest = poseidon_hash(aux, &[comm_r_new, index], &POSEIDON_CONSTANTS_GEN_RANDOMNESS);
        let digest_bits = digest.to_bits_le(aux);
        let take = if j + 1 == digests { p.challenge_count - generated.len() } else { per_digest };
        generated.extend(digest_bits.chunks(bits_per_challenge).take(take).map(<[Bit]>::to_vec));
    }
    generated
}

/// One challenge of the partition, allocated into `aux` (it has no public inputs).
fn challenge<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(
    s: &Shared,
    generated: &[Bit],
    proof: &ChallengeProof<Tree>,
    aux: &mut Aux,
) -> Result<(), FilecoinError> {
    let c_bits: Vec<Bit> = generated.iter().chain(&s.partition_bits).copied().collect();

    // get_challenge_high_bits: the top h bits for every allowed h, zeroed but the selected one
    let mut high = Fr::ZERO;
    for (&h, selected) in s.hs.iter().zip(&s.h_select_bits) {
        let c_high = pack_bits(aux, &c_bits[c_bits.len() - h..]);
        let c_high_or_zero = Num::alloc(aux, if selected.value() { c_high.value } else { Fr::ZERO });
        high += c_high_or_zero.value;
    }
    let high = Num::alloc(aux, high);
    let rho = poseidon_hash(aux, &[s.phi, high], &POSEIDON_CONSTANTS_GEN_RANDOMNESS);

    let leaf_r_old = Num::alloc(aux, value(proof.leaf_r_old, "leaf_r_old")?);
    let leaf_d_new = Num::alloc(aux, value(proof.leaf_d_new, "leaf_d_new")?);
    let product = leaf_d_new.mul(aux, &rho);
    let leaf_r_new = Num::alloc(aux, leaf_r_old.value + product.value);
    if Some(leaf_r_new.value) != proof.leaf_r_new {
        return Err(FilecoinError::new("a SnapDeals challenge's new replica leaf is not label_r_old + data * rho"));
    }

    let path_r_old = r_path(aux, &proof.path_r_old)?;
    por(aux, &c_bits, leaf_r_old, &path_r_old, TreeHash::Poseidon)?;
    let path_r_new = r_path(aux, &proof.path_r_new)?;
    por(aux, &c_bits, leaf_r_new, &path_r_new, TreeHash::Poseidon)?;

    let to_apex = s.challenge_bit_len - s.partition_bit_len - s.apex_leaf_bit_len;
    // the apex leaf under the challenge: the root its tree D path must reach (a constraint)
    let _apex_leaf = select(aux, &s.apex_leafs, &c_bits[to_apex..to_apex + s.apex_leaf_bit_len])?;
    let path_to_apex = d_path(aux, proof.path_d_new.get(..to_apex).unwrap_or(&proof.path_d_new))?;
    por(aux, &c_bits[..to_apex], leaf_d_new, &path_to_apex, TreeHash::Sha256)?;
    Ok(())
}

/// A tree R path's siblings, allocated level by level.
fn r_path(aux: &mut Aux, path: &[Vec<Option<Fr>>]) -> Result<Vec<Vec<Num>>, FilecoinError> {
    path.iter()
        .map(|level| level.iter().map(|&s| Ok(Num::alloc(aux, value(s, "a tree R sibling")?))).collect())
        .collect()
}

/// A tree D path's siblings (one per level), allocated.
fn d_path(aux: &mut Aux, path: &[Vec<Option<Fr>>]) -> Result<Vec<Vec<Num>>, FilecoinError> {
    path.iter()
        .map(|level| match level.as_slice() {
            [sibling] => Ok(vec![Num::alloc(aux, value(*sibling, "a tree D sibling")?)]),
            _ => Err(FilecoinError::new("a tree D path level without exactly one sibling")),
        })
        .collect()
}

fn value(v: Option<Fr>, what: &str) -> Result<Fr, FilecoinError> {
    v.ok_or_else(|| FilecoinError::new(format!("a SnapDeals circuit without {what}")))
}
