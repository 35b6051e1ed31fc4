//! Merkle paths and bit packing as storage-proofs' gadgets allocate them: `PoRCircuit`'s
//! inclusion (index bits, siblings, `insert`, one hash per level, path bits packed into public
//! inputs), `insertion::insert` for arities 2, 4, 8, `reverse_bit_numbering`, and bellperson's
//! `multipack`.

use blstrs::Scalar as Fr;
use ff::PrimeField;
use filecoin_hashers::{POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8};
use snarkflow_synthesis::native::{poseidon_hash, sha256, Aux, Bit, Num};

use super::PathLevel;
use crate::FilecoinError;

/// `Fr::CAPACITY`: bits a packed field element holds.
pub(super) const CAPACITY: usize = Fr::CAPACITY as usize;

/// The hash of a Merkle tree's levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TreeHash {
    /// filecoin-hashers' SHA-256 (tree D).
    Sha256,
    /// filecoin-hashers' Poseidon (tree C, tree R last).
    Poseidon,
}

/// `PoRCircuit::synthesize` with the leaf and root already allocated and a private root:
/// the computed root (its equality with the root is a constraint, not an allocation).
pub(super) fn inclusion(
    aux: &mut Aux,
    inputs: &mut Vec<Fr>,
    leaf: Num,
    path: &[PathLevel],
    hash: TreeHash,
) -> Result<Num, FilecoinError> {
    let mut cur = leaf;
    let mut path_bits = Vec::new();
    for (hashes, index) in path {
        let arity = hashes.len() + 1;
        if !arity.is_power_of_two() || arity < 2 {
            return Err(FilecoinError::new(format!("a Merkle level of arity {arity}")));
        }
        let bit_count = arity.trailing_zeros() as usize;
        let index_bits: Vec<Bit> = (0..bit_count).map(|i| Bit::alloc(aux, (index >> i) & 1 == 1)).collect();
        path_bits.extend_from_slice(&index_bits);
        let siblings: Vec<Num> = hashes.iter().map(|&h| Num::alloc(aux, h)).collect();
        cur = level(aux, cur, &index_bits, &siblings, hash)?;
    }
    pack_into_inputs(inputs, &path_bits);
    Ok(cur)
}

/// `por_no_challenge_input`: the root computed from `leaf` up through `levels` (siblings
/// already allocated), each level's position taken from the next bits of `bits`, which must
/// all be used. The root's equality with the claimed one is a constraint, not an allocation.
pub(super) fn por(
    aux: &mut Aux,
    bits: &[Bit],
    leaf: Num,
    levels: &[Vec<Num>],
    hash: TreeHash,
) -> Result<Num, FilecoinError> {
    let mut cur = leaf;
    let mut bits = bits;
    for siblings in levels {
        let arity = siblings.len() + 1;
        if !arity.is_power_of_two() || arity < 2 {
            return Err(FilecoinError::new(format!("a Merkle level of arity {arity}")));
        }
        let (index, rest) = bits
            .split_at_checked(arity.trailing_zeros() as usize)
            .ok_or_else(|| FilecoinError::new("a Merkle path longer than its challenge's bits"))?;
        bits = rest;
        cur = level(aux, cur, index, siblings, hash)?;
    }
    if !bits.is_empty() {
        return Err(FilecoinError::new("a Merkle path shorter than its challenge's bits"));
    }
    Ok(cur)
}

/// One level of a path: `cur` inserted among `siblings` at the position `index_bits` encode,
/// the row hashed.
fn level(aux: &mut Aux, cur: Num, index_bits: &[Bit], siblings: &[Num], hash: TreeHash) -> Result<Num, FilecoinError> {
    let row = insert(aux, cur, index_bits, siblings)?;
    Ok(match hash {
        TreeHash::Sha256 => sha256_leaves(aux, &row),
        TreeHash::Poseidon => match row.len() {
            2 => poseidon_hash(aux, &row, &POSEIDON_CONSTANTS_2),
            4 => poseidon_hash(aux, &row, &POSEIDON_CONSTANTS_4),
            8 => poseidon_hash(aux, &row, &POSEIDON_CONSTANTS_8),
            n => return Err(FilecoinError::new(format!("a Poseidon tree of arity {n}"))),
        },
    })
}

/// filecoin-hashers' `Sha256Function::hash_multi_leaf_circuit`: each leaf's 255 bits (padded
/// to bytes, bit order reversed within each byte), hashed, the digest's bytes bit-reversed and
/// packed. Also `hash2_circuit` of two numbers.
pub(super) fn sha256_leaves(aux: &mut Aux, leaves: &[Num]) -> Num {
    let mut message = Vec::with_capacity(leaves.len() * 256);
    for leaf in leaves {
        message.extend(reverse_bit_numbering(leaf.to_bits_le(aux)));
    }
    let digest = sha256(aux, &message);
    let bits = reverse_bit_numbering(digest);
    pack_bits(aux, &bits[..CAPACITY])
}

/// `gadgets::insertion::insert`: `element` placed among `siblings` at the position `bits`
/// encode, every output (and intermediate) a `pick`, allocated.
fn insert(aux: &mut Aux, element: Num, bits: &[Bit], siblings: &[Num]) -> Result<Vec<Num>, FilecoinError> {
    let a = element;
    Ok(match (bits, siblings) {
        ([b0], [b]) => vec![pick(aux, *b0, *b, a), pick(aux, *b0, a, *b)],
        ([b0, b1], [b, c, d]) => {
            let (b0, b1) = (*b0, *b1);
            let p0_x0 = pick(aux, b0, *b, a);
            let p0 = pick(aux, b1, *b, p0_x0);
            let p1_x0 = pick(aux, b0, a, *b);
            let p1 = pick(aux, b1, *c, p1_x0);
            let p2_x1 = pick(aux, b0, *d, a);
            let p2 = pick(aux, b1, p2_x1, *c);
            let p3_x1 = pick(aux, b0, a, *d);
            let p3 = pick(aux, b1, p3_x1, *d);
            vec![p0, p1, p2, p3]
        }
        ([b0, b1, b2], [b, c, d, e, f, g, h]) => {
            let (b0, b1, b2) = (*b0, *b1, *b2);
            // AllocatedBit::nor and ::and of the two low bits
            let nor = Bit::alloc(aux, !b0.value() && !b1.value());
            let and = Bit::alloc(aux, b0.value() && b1.value());
            let p0_xx0 = pick(aux, nor, a, *b);
            let p0 = pick(aux, b2, *b, p0_xx0);
            let p1_x00 = pick(aux, b0, a, *b);
            let p1_xx0 = pick(aux, b1, *c, p1_x00);
            let p1 = pick(aux, b2, *c, p1_xx0);
            let p2_x10 = pick(aux, b0, *d, a);
            let p2_xx0 = pick(aux, b1, p2_x10, *c);
            let p2 = pick(aux, b2, *d, p2_xx0);
            let p3_xx0 = pick(aux, and, a, *d);
            let p3 = pick(aux, b2, *e, p3_xx0);
            let p4_xx1 = pick(aux, nor, a, *f);
            let p4 = pick(aux, b2, p4_xx1, *e);
            let p5_x01 = pick(aux, b0, a, *f);
            let p5_xx1 = pick(aux, b1, *g, p5_x01);
            let p5 = pick(aux, b2, p5_xx1, *f);
            let p6_x11 = pick(aux, b0, *h, a);
            let p6_xx1 = pick(aux, b1, p6_x11, *g);
            let p6 = pick(aux, b2, p6_xx1, *g);
            let p7_xx1 = pick(aux, and, a, *h);
            let p7 = pick(aux, b2, p7_xx1, *h);
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        _ => {
            return Err(FilecoinError::new(format!(
                "insertion into {} siblings with {} index bits (arities 2, 4 and 8 are supported)",
                siblings.len(),
                bits.len()
            )))
        }
    })
}

/// `insertion::pick`: `a` if `condition`, else `b`, allocated.
fn pick(aux: &mut Aux, condition: Bit, a: Num, b: Num) -> Num {
    Num::alloc(aux, if condition.value() { a.value } else { b.value })
}

/// `insertion::select`: the element of `from` (2^n of them) at the position `bits` (n, least
/// significant first) encode, halving the candidates from the most significant bit down, each
/// pick allocated.
pub(super) fn select(aux: &mut Aux, from: &[Num], bits: &[Bit]) -> Result<Num, FilecoinError> {
    if from.len() != 1 << bits.len() {
        return Err(FilecoinError::new(format!("selecting among {} elements with {} bits", from.len(), bits.len())));
    }
    let mut state = from.to_vec();
    for &bit in bits.iter().rev() {
        let half = state.len() / 2;
        state = (0..half).map(|j| pick(aux, bit, state[half + j], state[j])).collect();
    }
    Ok(state[0])
}

/// storage-proofs' `reverse_bit_numbering`: pad to whole bytes with constant zeros, reverse
/// the bit order within each byte.
pub(super) fn reverse_bit_numbering(mut bits: Vec<Bit>) -> Vec<Bit> {
    bits.resize(bits.len().next_multiple_of(8), Bit::Const(false));
    for byte in bits.chunks_mut(8) {
        byte.reverse();
    }
    bits
}

/// The value of up to `CAPACITY` bits, least significant first.
fn packed(bits: &[Bit]) -> Fr {
    debug_assert!(bits.len() <= CAPACITY);
    let mut repr = [0u8; 32];
    for (i, bit) in bits.iter().enumerate() {
        if bit.value() {
            repr[i / 8] |= 1 << (i % 8);
        }
    }
    Fr::from_repr_vartime(repr).expect("fewer than 255 bits are below the modulus")
}

/// `multipack::pack_bits`: the first `CAPACITY` bits as one allocated number.
pub(super) fn pack_bits(aux: &mut Aux, bits: &[Bit]) -> Num {
    Num::alloc(aux, packed(&bits[..bits.len().min(CAPACITY)]))
}

/// `multipack::pack_into_inputs`: one public input per `CAPACITY` bits.
pub(super) fn pack_into_inputs(inputs: &mut Vec<Fr>, bits: &[Bit]) {
    inputs.extend(bits.chunks(CAPACITY).map(packed));
}
