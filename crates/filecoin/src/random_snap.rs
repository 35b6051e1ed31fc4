//! SnapDeals partition circuits with random contents, for comparing the native witness with
//! the gadgets' at sizes no sector can be updated here (8 MiB, 512 MiB, 32 GiB, 64 GiB).
//!
//! Everything the circuit takes is random — the three public commitments, `comm_c`, the tree R
//! roots, the apex leaves, every sibling of every path, the old replica and new data leaves —
//! except what `EmptySectorUpdateCircuit::synthesize` itself insists on: the challenges are the
//! ones it draws from `comm_r_new` and the partition index, every challenge's tree D path ends
//! in the partition's path, and each new replica leaf is `label_r_old + data * rho` with the
//! challenge's `rho`. The paths do not verify (no constraint system checks anything here), and
//! nothing in a witness depends on whether they do: random siblings make every `insert` and
//! `select` pick differ by position, which equal (empty) subtrees would hide.

use std::marker::PhantomData;

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::Domain;
use rand::{Rng, SeedableRng};
use snarkflow_synthesis::{CircuitVisitor, PartitionWitness, SynthesizeWitness};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::{self, ChallengeProof, PrivateInputs};
use storage_proofs_update::constants::{hs, TreeDDomain, TreeRDomain, TreeRHasher};
use storage_proofs_update::{
    vanilla, Challenges, EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
};

use crate::FilecoinError;

/// Which witnesses [`random_snap_partition`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Witnesses {
    Both,
    /// The native path alone (timing it at large sizes).
    Native,
    /// The gadgets alone.
    Gadgets,
}

/// One random partition's witnesses and public inputs.
#[derive(Debug)]
pub struct RandomSnapPartition {
    /// Partition index and `h` drawn for it.
    pub k: usize,
    pub h: usize,
    /// Witness-only synthesis of the circuit by its gadgets.
    pub gadgets: Option<PartitionWitness>,
    /// The same circuit's witness from the native generator.
    pub native: Option<PartitionWitness>,
    /// The public inputs filecoin-proofs' verifier derives for this partition (no leading ONE).
    pub verifier_inputs: Vec<Fr>,
}

/// A random partition of a `sector_size` SnapDeals sector, from `seed` (the same seed gives
/// the same circuit): partition `seed mod partitions`, `h` drawn from the allowed ones.
pub fn random_snap_partition(
    sector_size: u64,
    seed: u64,
    which: Witnesses,
) -> Result<RandomSnapPartition, FilecoinError> {
    Ok((|| with_sector_shape!(sector_size, random_partition, sector_size, seed, which))()?)
}

fn random_partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    seed: u64,
    which: Witnesses,
) -> anyhow::Result<RandomSnapPartition> {
    let circuit = random_circuit::<Tree>(sector_size, seed);
    let (k, h) = (circuit.k, circuit.h);
    let vanilla_in = storage_proofs_update::PublicInputs {
        k,
        comm_r_old: circuit.comm_r_old,
        comm_d_new: circuit.comm_d_new,
        comm_r_new: circuit.comm_r_new,
        h,
    };
    let verifier_inputs = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::generate_public_inputs(&vanilla_in, &circuit.circuit.pub_params, Some(k))?;
    let native = match which {
        Witnesses::Gadgets => None,
        _ => {
            let (inputs, aux) = crate::native::snap_partition(&circuit.circuit)?;
            Some(PartitionWitness { circuit_id: "snap".into(), partition: k as u32, inputs, aux })
        }
    };
    let gadgets = match which {
        Witnesses::Native => None,
        _ => Some(SynthesizeWitness("snap", k as u32).visit(circuit.circuit)?),
    };
    Ok(RandomSnapPartition { k, h, gadgets, native, verifier_inputs })
}

struct Random<Tree: MerkleTreeTrait<Hasher = TreeRHasher>> {
    circuit: EmptySectorUpdateCircuit<Tree>,
    k: usize,
    h: usize,
    comm_r_old: TreeRDomain,
    comm_d_new: TreeDDomain,
    comm_r_new: TreeRDomain,
}

fn random_circuit<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(sector_size: u64, seed: u64) -> Random<Tree> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let pub_params = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    let nodes = pub_params.sector_nodes;
    let k = (seed % pub_params.partition_count as u64) as usize;
    let allowed = hs(nodes);
    let h = allowed[rng.gen_range(0..allowed.len())];
    let comm_r_old = TreeRDomain::random(&mut rng);
    let comm_d_new = TreeDDomain::random(&mut rng);
    let comm_r_new = TreeRDomain::random(&mut rng);
    let pub_inputs = circuit::PublicInputs::new(nodes, k, h, comm_r_old, comm_d_new, comm_r_new);

    let phi = vanilla::phi(&comm_d_new, &comm_r_old);
    let shape = ChallengeProof::<Tree>::empty(nodes);
    let random_path = |rng: &mut rand_chacha::ChaCha20Rng, shape: &[Vec<Option<Fr>>]| -> Vec<Vec<Option<Fr>>> {
        shape.iter().map(|level| level.iter().map(|_| Some(Fr::random(&mut *rng))).collect()).collect()
    };
    let in_partition = pub_params.challenge_bit_len - pub_params.partition_bit_len;
    let partition_path = random_path(&mut rng, &shape.path_d_new[in_partition..]);
    let challenge_proofs = Challenges::new(nodes, comm_r_new, k)
        .map(|c| {
            let rho = vanilla::rho(&phi, c >> (pub_params.challenge_bit_len - h));
            let (leaf_r_old, leaf_d_new) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let mut path_d_new = random_path(&mut rng, &shape.path_d_new[..in_partition]);
            path_d_new.extend(partition_path.iter().cloned());
            ChallengeProof {
                leaf_r_old: Some(leaf_r_old),
                path_r_old: random_path(&mut rng, &shape.path_r_old),
                leaf_d_new: Some(leaf_d_new),
                path_d_new,
                leaf_r_new: Some(leaf_r_old + leaf_d_new * rho),
                path_r_new: random_path(&mut rng, &shape.path_r_new),
                _tree_r: PhantomData,
            }
        })
        .collect();
    let priv_inputs = PrivateInputs {
        comm_c: Some(Fr::random(&mut rng)),
        root_r_old: Some(Fr::random(&mut rng)),
        root_r_new: Some(Fr::random(&mut rng)),
        apex_leafs: (0..pub_params.apex_leaf_count).map(|_| Some(Fr::random(&mut rng))).collect(),
        challenge_proofs,
    };
    Random {
        circuit: EmptySectorUpdateCircuit { pub_params, pub_inputs, priv_inputs },
        k,
        h,
        comm_r_old,
        comm_d_new,
        comm_r_new,
    }
}
