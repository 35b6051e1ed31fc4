//! The PoRep and PoSt witnesses computed natively: the inputs and auxiliary
//! assignment `StackedCircuit::synthesize` (and `FallbackPoStCircuit::synthesize`) would
//! allocate, from the partition's vanilla proofs, without a constraint system.
//!
//! Every function here mirrors one storage-proofs gadget's allocations, in its order, on top
//! of the bellperson mirrors in [`snarkflow_synthesis::native`]:
//!
//! - [`partition`]: `StackedCircuit::synthesize` (public commitments, `comm_r = H(comm_c, comm_r_last)`).
//! - `challenge`: `stacked::circuit::params::Proof::synthesize` (one challenge: the data
//!   leaf's inclusion, the parents' columns, labelling, encoding, the replica and column
//!   inclusions).
//! - `inclusion`: `PoRCircuit::synthesize` with a private root (index bits, path elements,
//!   `insert`, one hash per level, the path bits packed into public inputs).
//! - `insert`: `gadgets::insertion::insert` for arities 2, 4, 8 (every published tree).
//! - `label`: `create_label_circuit`.
//! - [`post_partition`]: `FallbackPoStCircuit` (WindowPoSt and WinningPoSt): per sector
//!   `comm_r = H(comm_c, comm_r_last)` and each challenged leaf's inclusion in tree R.
//!
//! The challenges of a PoRep partition (the sectors of a PoSt one) are independent and each
//! allocates the same number of variables, so they are computed in parallel, each straight
//! into its place in the witness ([`assemble`]).
//!
//! - [`snap_partition`] (`snap.rs`): `EmptySectorUpdateCircuit` (SnapDeals).
//!
//! Exactness against the gadgets is what the tests in `tests/native/porep.rs`,
//! `tests/native/post.rs` and `tests/native/snap.rs` check; a storage-proofs upgrade that
//! changes a gadget fails them.

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::{Hasher, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use rayon::prelude::*;
use snarkflow_synthesis::native::{poseidon_hash, sha256, Aux, Bit, Num};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};

use crate::FilecoinError;

mod merkle;
mod snap;

use merkle::{inclusion, pack_bits, reverse_bit_numbering, TreeHash, CAPACITY};
pub(crate) use snap::snap_partition;

/// One level of a Merkle path as the circuit takes it: the siblings and the position of the
/// node among them.
pub(crate) type PathLevel = (Vec<Fr>, usize);

/// A Merkle path as storage-proofs' `as_options` gives it: per level the siblings and the
/// position, each possibly missing (a blank circuit's).
type OptionPath = Vec<(Vec<Option<Fr>>, Option<usize>)>;

/// The partition's own variables, before its challenges': inputs and auxiliary values.
#[derive(Debug, Default)]
struct Head {
    inputs: Vec<Fr>,
    aux: Aux<'static>,
}

/// What a column proof gives the circuit: the column's rows and its inclusion path in tree C.
struct ColumnParts {
    rows: Vec<Fr>,
    path: Vec<PathLevel>,
}

/// One challenge's proof, taken out of its vanilla form.
struct ChallengeParts {
    data_leaf: Fr,
    challenge: u64,
    comm_d_path: Vec<PathLevel>,
    comm_r_last_path: Vec<PathLevel>,
    comm_c_path: Vec<PathLevel>,
    drg_parents: Vec<ColumnParts>,
    exp_parents: Vec<ColumnParts>,
}

/// The public inputs (leading ONE included) and auxiliary assignment of a PoRep partition
/// whose challenges' vanilla proofs are `proofs`.
pub(crate) fn partition<Tree: 'static + MerkleTreeTrait>(
    replica_id: Fr,
    comm_d: Fr,
    comm_r: Fr,
    proofs: &[filecoin_proofs::VanillaSealProof<Tree>],
) -> Result<(Vec<Fr>, Vec<Fr>), FilecoinError> {
    let first = proofs.first().ok_or_else(|| FilecoinError::new("a partition without vanilla proofs"))?;
    let (comm_r_last, comm_c): (Fr, Fr) = (first.comm_r_last().into(), first.comm_c().into());
    if proofs.iter().any(|p| Into::<Fr>::into(p.comm_r_last()) != comm_r_last || Into::<Fr>::into(p.comm_c()) != comm_c)
    {
        return Err(FilecoinError::new("the partition's vanilla proofs disagree on comm_r_last or comm_c"));
    }
    let challenges = proofs.par_iter().map(challenge_parts::<Tree>).collect::<Result<Vec<_>, _>>()?;

    let mut head = Head::default();
    head.inputs.push(Fr::ONE);
    let aux = &mut head.aux;
    let replica_id = Num::alloc(aux, replica_id);
    head.inputs.push(replica_id.value);
    let replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(aux));
    let comm_d = Num::alloc(aux, comm_d);
    head.inputs.push(comm_d.value);
    let comm_r = Num::alloc(aux, comm_r);
    head.inputs.push(comm_r.value);
    let comm_r_last = Num::alloc(aux, comm_r_last);
    let comm_c = Num::alloc(aux, comm_c);
    let _ = poseidon_hash(aux, &[comm_c, comm_r_last], &POSEIDON_CONSTANTS_2);

    assemble(head, &challenges, |c, aux| challenge(c, &replica_id_bits, aux))
}

/// The witness of a circuit made of `head` followed by independent `items` that each allocate
/// the same number of variables (`make` allocates one into its `Aux` and returns its public
/// inputs). The first item, made on its own, says how many; the others are written in
/// parallel straight into their place in the witness: no copy of a 4 GB witness at 32 GiB,
/// no buffer growing (page faults from many threads contend in the kernel).
fn assemble<T: Sync>(
    head: Head,
    items: &[T],
    make: impl Fn(&T, &mut Aux<'_>) -> Result<Vec<Fr>, FilecoinError> + Sync,
) -> Result<(Vec<Fr>, Vec<Fr>), FilecoinError> {
    let Some((first, rest)) = items.split_first() else {
        return Ok((head.inputs, head.aux.into_values()));
    };
    let mut first_aux = Aux::default();
    let first = make(first, &mut first_aux)?;
    let (head_len, per) = (head.aux.len(), first_aux.len());
    let total = head_len + per * items.len();
    // a kept buffer where the process keeps them (every value is written below), else zeros
    let mut aux = snarkflow_synthesis::native::buffers::take(total);
    aux[..head_len].copy_from_slice(head.aux.values());
    aux[head_len..head_len + per].copy_from_slice(first_aux.values());
    let rest_inputs: Vec<Vec<Fr>> = aux[head_len + per..]
        .par_chunks_mut(per.max(1))
        .zip(rest.par_iter())
        .map(|(slot, item)| {
            let mut aux = Aux::over(slot);
            let inputs = make(item, &mut aux)?;
            if aux.len() != per {
                return Err(FilecoinError::new(format!(
                    "parts of one circuit allocate different numbers of variables ({} and {per})",
                    aux.len()
                )));
            }
            Ok(inputs)
        })
        .collect::<Result<_, _>>()?;
    let mut inputs = head.inputs;
    inputs.extend(first);
    inputs.extend(rest_inputs.into_iter().flatten());
    Ok((inputs, aux))
}

/// One sector of a PoSt partition as the circuit takes it.
pub(crate) struct PostSector {
    pub(crate) comm_r: Fr,
    pub(crate) comm_c: Fr,
    pub(crate) comm_r_last: Fr,
    /// The challenged leaves and their paths in tree R.
    pub(crate) challenges: Vec<(Fr, Vec<PathLevel>)>,
}

/// The public inputs and auxiliary assignment of a WindowPoSt or WinningPoSt partition
/// (`FallbackPoStCircuit::synthesize` without an extensible constraint system: each sector's
/// `comm_r = H(comm_c, comm_r_last)`, then each challenge's inclusion in tree R).
pub(crate) fn post_partition(sectors: &[PostSector]) -> Result<(Vec<Fr>, Vec<Fr>), FilecoinError> {
    let head = Head { inputs: vec![Fr::ONE], aux: Aux::default() };
    assemble(head, sectors, |sector, aux| {
        let mut inputs = Vec::new();
        let comm_r_last = Num::alloc(aux, sector.comm_r_last);
        let comm_c = Num::alloc(aux, sector.comm_c);
        let comm_r = Num::alloc(aux, sector.comm_r);
        inputs.push(comm_r.value);
        let _ = poseidon_hash(aux, &[comm_c, comm_r_last], &POSEIDON_CONSTANTS_2);
        for (leaf, path) in &sector.challenges {
            // the leaf is a value (`Root::Val`): PoRCircuit allocates it
            let leaf = Num::alloc(aux, *leaf);
            inclusion(aux, &mut inputs, leaf, path, TreeHash::Poseidon)?;
        }
        Ok(inputs)
    })
}

/// A PoSt sector proof's paths (`SectorProof::as_options`) as [`PostSector`] takes them.
pub(crate) fn post_paths(options: Vec<OptionPath>) -> Result<Vec<Vec<PathLevel>>, FilecoinError> {
    options.into_iter().map(path_levels).collect()
}

/// A Merkle proof's levels as the circuit takes them (`as_options`, all present).
fn levels<P: MerkleProofTrait>(proof: &P) -> Result<Vec<PathLevel>, FilecoinError> {
    path_levels(proof.as_options())
}

/// Levels from `as_options` form, every element present.
fn path_levels(options: OptionPath) -> Result<Vec<PathLevel>, FilecoinError> {
    options
        .into_iter()
        .map(|(hashes, index)| match (hashes.into_iter().collect::<Option<Vec<Fr>>>(), index) {
            (Some(hashes), Some(index)) => Ok((hashes, index)),
            _ => Err(FilecoinError::new("a Merkle proof with a missing element")),
        })
        .collect()
}

/// The parts of one challenge's vanilla proof. A column proof keeps its inclusion proof
/// private to storage-proofs, so columns are read through their serde form.
fn challenge_parts<Tree: 'static + MerkleTreeTrait>(
    proof: &filecoin_proofs::VanillaSealProof<Tree>,
) -> Result<ChallengeParts, FilecoinError> {
    type TreeProof<Tree> = storage_proofs_core::merkle::MerkleProof<
        <Tree as MerkleTreeTrait>::Hasher,
        <Tree as MerkleTreeTrait>::Arity,
        <Tree as MerkleTreeTrait>::SubTreeArity,
        <Tree as MerkleTreeTrait>::TopTreeArity,
    >;
    let bad = |what: &str, e: serde_json::Error| FilecoinError::new(format!("reading a vanilla proof's {what}: {e}"));
    let column = |value: &serde_json::Value| -> Result<ColumnParts, FilecoinError> {
        let rows: Vec<<Tree::Hasher as Hasher>::Domain> =
            serde_json::from_value(value["column"]["rows"].clone()).map_err(|e| bad("column rows", e))?;
        let inclusion: TreeProof<Tree> =
            serde_json::from_value(value["inclusion_proof"].clone()).map_err(|e| bad("column inclusion proof", e))?;
        Ok(ColumnParts { rows: rows.into_iter().map(Into::into).collect(), path: levels(&inclusion)? })
    };
    let columns = serde_json::to_value(&proof.replica_column_proofs).map_err(|e| bad("column proofs", e))?;
    let list = |key: &str| -> Result<Vec<ColumnParts>, FilecoinError> {
        columns[key]
            .as_array()
            .ok_or_else(|| FilecoinError::new(format!("no {key} in a vanilla proof")))?
            .iter()
            .map(column)
            .collect()
    };
    let labeling =
        proof.labeling_proofs.first().ok_or_else(|| FilecoinError::new("a vanilla proof without labeling proofs"))?;
    let labeling = serde_json::to_value(labeling).map_err(|e| bad("labeling proof", e))?;
    let challenge = labeling["node"].as_u64().ok_or_else(|| FilecoinError::new("a labeling proof without a node"))?;
    let c_x = column(&columns["c_x"])?;
    Ok(ChallengeParts {
        data_leaf: proof.comm_d_proofs.leaf().into(),
        challenge,
        comm_d_path: levels(&proof.comm_d_proofs)?,
        comm_r_last_path: levels(&proof.comm_r_last_proof)?,
        comm_c_path: c_x.path,
        drg_parents: list("drg_parents")?,
        exp_parents: list("exp_parents")?,
    })
}

/// `params::Proof::synthesize`: one challenge's variables, allocated into `aux`; returns its
/// public inputs.
fn challenge(c: &ChallengeParts, replica_id_bits: &[Bit], aux: &mut Aux<'_>) -> Result<Vec<Fr>, FilecoinError> {
    let mut inputs = Vec::new();
    let inputs = &mut inputs;
    let data_leaf = Num::alloc(aux, c.data_leaf);
    inclusion(aux, inputs, data_leaf, &c.comm_d_path, TreeHash::Sha256)?;

    let layers = c.drg_parents.first().map_or(0, |p| p.rows.len());
    if layers == 0 || c.exp_parents.is_empty() {
        return Err(FilecoinError::new("a challenge without parents"));
    }
    let mut columns = |parents: &[ColumnParts]| -> Result<Vec<Vec<Num>>, FilecoinError> {
        parents
            .iter()
            .map(|parent| {
                if parent.rows.len() != layers {
                    return Err(FilecoinError::new("parent columns of different heights"));
                }
                let rows: Vec<Num> = parent.rows.iter().map(|&r| Num::alloc(aux, r)).collect();
                let hash = column_hash(aux, &rows)?;
                inclusion(aux, inputs, hash, &parent.path, TreeHash::Poseidon)?;
                Ok(rows)
            })
            .collect()
    };
    let drg = columns(&c.drg_parents)?;
    let exp = columns(&c.exp_parents)?;

    // UInt64::alloc, then pack_into_input (64 bits: one input)
    let node_bits: Vec<Bit> = (0..64).map(|i| Bit::alloc(aux, (c.challenge >> i) & 1 == 1)).collect();
    inputs.push(Fr::from(c.challenge));
    let node_be: Vec<Bit> = node_bits.iter().rev().copied().collect();

    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents: Vec<Vec<Bit>> = Vec::with_capacity(drg.len() + exp.len());
        for column in &drg {
            parents.push(reverse_bit_numbering(column[layer - 1].to_bits_le(aux)));
        }
        if layer > 1 {
            for column in &exp {
                parents.push(reverse_bit_numbering(column[layer - 2].to_bits_le(aux)));
            }
        }
        labels.push(label(aux, replica_id_bits, &parents, layer as u32, &node_be)?);
    }

    // encode: key + data, allocated
    let key = labels[layers - 1];
    let encoded = Num::alloc(aux, key.value + data_leaf.value);
    inclusion(aux, inputs, encoded, &c.comm_r_last_path, TreeHash::Poseidon)?;
    let column = column_hash(aux, &labels)?;
    inclusion(aux, inputs, column, &c.comm_c_path, TreeHash::Poseidon)?;
    Ok(std::mem::take(inputs))
}

/// `create_label_circuit` of the expanded parents of `parents` (6 base parents at layer 1,
/// 6 + 8 above): SHA-256 of replica id, layer, node and 37 parents, packed.
fn label(
    aux: &mut Aux,
    replica_id: &[Bit],
    parents: &[Vec<Bit>],
    layer: u32,
    node_be: &[Bit],
) -> Result<Num, FilecoinError> {
    const TOTAL_PARENTS: usize = 37;
    let expanded: Vec<&Vec<Bit>> = match parents.len() {
        // layer 1: the base parents repeated, then the first once more
        6 => parents.iter().cycle().take(36).chain(std::iter::once(&parents[0])).collect(),
        // above: base and expansion parents twice, then the first 9
        14 => parents.iter().chain(parents).chain(&parents[..9]).collect(),
        n => return Err(FilecoinError::new(format!("{n} parents per layer; the stacked graph has 6 and 14"))),
    };
    debug_assert_eq!(expanded.len(), TOTAL_PARENTS);
    let mut message = Vec::with_capacity((2 + TOTAL_PARENTS) * 256);
    message.extend_from_slice(replica_id);
    message.resize(256, Bit::Const(false));
    message.extend((0..32).rev().map(|i| Bit::Const((layer >> i) & 1 == 1)));
    message.extend_from_slice(node_be);
    message.resize(512, Bit::Const(false));
    for parent in expanded {
        message.extend_from_slice(parent);
        message.resize(message.len().next_multiple_of(256), Bit::Const(false));
    }
    let digest = sha256(aux, &message);
    let bits = reverse_bit_numbering(digest);
    Ok(pack_bits(aux, &bits[..CAPACITY]))
}

/// `hash_single_column`: Poseidon of a column (2 layers at test sizes, 11 in production).
fn column_hash(aux: &mut Aux, rows: &[Num]) -> Result<Num, FilecoinError> {
    match rows.len() {
        2 => Ok(poseidon_hash(aux, rows, &POSEIDON_CONSTANTS_2)),
        11 => Ok(poseidon_hash(aux, rows, &POSEIDON_CONSTANTS_11)),
        n => Err(FilecoinError::new(format!("columns of {n} layers; the stacked circuit hashes 2 or 11"))),
    }
}
