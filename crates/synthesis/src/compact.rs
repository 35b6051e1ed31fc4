//! The compact wire form of a partition: its witness only, for a prover that holds the
//! circuit's [`crate::ConstraintShape`].
//!
//! Layout: magic `SFCW`, version (u16 LE), a bincode header (circuit id, partition, shape hash,
//! counts), then the values in canonical form — a 2-bit tag per value (zero, one, small,
//! raw), small values (< 2^64) as LEB128 varints, the rest as 32-byte little-endian
//! representations — and a SHA-256 of everything before it. SHA-256-heavy circuits are mostly
//! bits, so a value typically costs 2 bits instead of the raw form's 128 bytes per constraint.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::PartitionWitness;

pub const COMPACT_MAGIC: [u8; 4] = *b"SFCW";
pub const COMPACT_VERSION: u16 = 1;

const TAG_ZERO: u8 = 0;
const TAG_ONE: u8 = 1;
const TAG_SMALL: u8 = 2;
const TAG_RAW: u8 = 3;

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("not a compact witness (bad magic)")]
    Magic,
    #[error("unsupported compact witness version {0}")]
    Version(u16),
    #[error("compact witness digest mismatch: corrupt or truncated")]
    Digest,
    #[error("malformed compact witness: {0}")]
    Malformed(String),
    /// The witness is not for the shape the reader holds; caught from the header, before any
    /// value is decoded or memory is set aside for them.
    #[error("compact witness for shape {got} ({got_inputs} inputs, {got_aux} aux) where shape {expected} ({expected_inputs} inputs, {expected_aux} aux) was expected")]
    WrongShape { got: String, got_inputs: u64, got_aux: u64, expected: String, expected_inputs: u64, expected_aux: u64 },
}

/// What a reader knows of the witnesses it accepts: the shape's hash and its value counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WitnessShape {
    pub hash: [u8; 32],
    pub inputs: u64,
    pub aux: u64,
}

impl WitnessShape {
    pub fn of(shape: &crate::ConstraintShape) -> WitnessShape {
        WitnessShape { hash: shape.hash, inputs: shape.num_inputs as u64, aux: shape.num_aux as u64 }
    }
}

#[derive(Serialize, Deserialize)]
struct Header {
    circuit_id: String,
    partition: u32,
    shape_hash: [u8; 32],
    inputs: u64,
    aux: u64,
}

/// Encode a witness for a prover holding the shape with hash `shape_hash`. Pieces of the
/// values are encoded in parallel (a 32 GiB PoRep partition has 130 M of them) and joined in
/// order: the bytes are the same for any piece size.
pub fn encode_compact(w: &PartitionWitness, shape_hash: [u8; 32]) -> Vec<u8> {
    encode_compact_in_pieces(w, shape_hash, ENCODE_CHUNK)
}

/// Values per piece encoded by one thread; a multiple of 4, so no tag byte spans two pieces.
const ENCODE_CHUNK: usize = 1 << 18;

/// One piece's tags, small-value varints and raw representations.
#[derive(Default)]
struct EncodedPiece {
    tags: Vec<u8>,
    smalls: Vec<u8>,
    raws: Vec<u8>,
}

/// `x` as a LEB128 varint.
fn push_varint(out: &mut Vec<u8>, mut x: u64) {
    loop {
        let byte = (x & 0x7f) as u8;
        x >>= 7;
        if x == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// The tag of a value neither 0 nor 1, its varint or canonical bytes written to `piece`.
#[cold]
fn encode_other(v: &Fr, smalls: &mut Vec<u8>, raws: &mut Vec<u8>) -> u8 {
    let repr = v.to_repr();
    if repr[8..].iter().all(|b| *b == 0) {
        push_varint(smalls, u64::from_le_bytes(repr[..8].try_into().expect("8 bytes")));
        TAG_SMALL
    } else {
        raws.extend_from_slice(&repr);
        TAG_RAW
    }
}

fn encode_piece(values: &[Fr]) -> EncodedPiece {
    let mut piece = EncodedPiece { tags: Vec::with_capacity(values.len().div_ceil(4)), ..Default::default() };
    // a tag byte at a time, from four values, kept in a register until written
    for four in values.chunks(4) {
        let mut byte = 0u8;
        for (k, v) in four.iter().enumerate() {
            // zero and one are told apart in Montgomery form (a compare); only the few other
            // values pay for the conversion to their canonical bytes. Whether a bit is 0 or 1
            // is as good as random, so it picks the tag without a branch; the branch is on "0
            // or 1 at all", which ~99 % of a PoRep partition's values are.
            // (plain compares: `is_zero` is constant-time, a quarter of the encoding's time in
            // subtle's optimisation barriers)
            let (zero, one) = (*v == Fr::ZERO, *v == Fr::ONE);
            let tag = if zero | one {
                TAG_ZERO + one as u8 * (TAG_ONE - TAG_ZERO)
            } else {
                encode_other(v, &mut piece.smalls, &mut piece.raws)
            };
            byte |= tag << (2 * k);
        }
        piece.tags.push(byte);
    }
    piece
}

fn encode_compact_in_pieces(w: &PartitionWitness, shape_hash: [u8; 32], chunk: usize) -> Vec<u8> {
    use rayon::prelude::*;
    debug_assert!(chunk > 0 && chunk.is_multiple_of(4), "pieces must hold whole tag bytes");
    let (ni, n) = (w.inputs.len(), w.inputs.len() + w.aux.len());
    let pieces: Vec<EncodedPiece> = (0..n.div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            let (start, end) = (c * chunk, ((c + 1) * chunk).min(n));
            if start >= ni {
                encode_piece(&w.aux[start - ni..end - ni])
            } else {
                // the pieces over the inputs (a few hundred values) and the first aux values
                let joined: Vec<Fr> = (start..end).map(|i| if i < ni { w.inputs[i] } else { w.aux[i - ni] }).collect();
                encode_piece(&joined)
            }
        })
        .collect();
    let header = Header {
        circuit_id: w.circuit_id.clone(),
        partition: w.partition,
        shape_hash,
        inputs: ni as u64,
        aux: w.aux.len() as u64,
    };
    let sum = |f: fn(&EncodedPiece) -> usize| pieces.iter().map(f).sum::<usize>();
    let (tags, smalls, raws) = (sum(|p| p.tags.len()), sum(|p| p.smalls.len()), sum(|p| p.raws.len()));
    let mut out = Vec::with_capacity(128 + tags + smalls + raws);
    out.extend_from_slice(&COMPACT_MAGIC);
    out.extend_from_slice(&COMPACT_VERSION.to_le_bytes());
    bincode::serialize_into(&mut out, &header).expect("writing to a Vec cannot fail");
    for p in &pieces {
        out.extend_from_slice(&p.tags);
    }
    out.extend_from_slice(&(smalls as u64).to_le_bytes());
    for p in &pieces {
        out.extend_from_slice(&p.smalls);
    }
    for p in &pieces {
        out.extend_from_slice(&p.raws);
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    out
}

/// The shape hash a compact payload was made for, read without decoding the values.
pub fn compact_shape_hash(bytes: &[u8]) -> Result<[u8; 32], CompactError> {
    Ok(parse_header(bytes)?.0.shape_hash)
}

fn parse_header(bytes: &[u8]) -> Result<(Header, usize), CompactError> {
    if bytes.len() < 6 || bytes[..4] != COMPACT_MAGIC {
        return Err(CompactError::Magic);
    }
    let version = u16::from_le_bytes([bytes[4], bytes[5]]);
    if version != COMPACT_VERSION {
        return Err(CompactError::Version(version));
    }
    let mut cursor = std::io::Cursor::new(&bytes[6..]);
    let header: Header = bincode::deserialize_from(&mut cursor).map_err(|e| CompactError::Malformed(e.to_string()))?;
    Ok((header, 6 + cursor.position() as usize))
}

mod decode;
pub use decode::{decode_compact, decode_compact_for, CompactParts};
#[cfg(test)]
use decode::{decode_values, zeros, CHUNK};

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The tag, varint and raw streams of `values`, as `encode_compact` lays them out.
    fn streams(values: Vec<Fr>) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let n = values.len();
        let w = PartitionWitness { circuit_id: "t".into(), partition: 0, inputs: Vec::new(), aux: values };
        let bytes = encode_compact(&w, [0; 32]);
        let (_, pos) = parse_header(&bytes).unwrap();
        let tags = bytes[pos..pos + n.div_ceil(4)].to_vec();
        let at = pos + tags.len();
        let smalls_len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        let smalls = bytes[at + 8..at + 8 + smalls_len].to_vec();
        let raws = bytes[at + 8 + smalls_len..bytes.len() - 32].to_vec();
        (tags, smalls, raws)
    }

    /// Decode `n` values into two outputs split at `split` (inputs and aux), joined again.
    fn decode(t: &[u8], s: &[u8], r: &[u8], n: usize, split: usize, chunk: usize) -> Result<Vec<Fr>, CompactError> {
        let (mut a, mut b) = (zeros(split), zeros(n - split));
        decode_values(t, s, r, &mut [&mut a, &mut b], chunk)?;
        Ok([a, b].concat())
    }

    fn mixed(n: usize, seed: u64) -> Vec<Fr> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| match rng.gen_range(0..4) {
                0 => Fr::ZERO,
                1 => Fr::ONE,
                2 => Fr::from(rng.gen::<u64>() >> rng.gen_range(0..64)),
                _ => Fr::random(&mut rng),
            })
            .collect()
    }

    #[test]
    fn decoding_in_pieces_gives_the_values_for_any_piece_size_and_split() {
        for n in [0, 1, 3, 4, 5, 1000, 1027] {
            let values = mixed(n, n as u64);
            let (tags, smalls, raws) = streams(values.clone());
            for chunk in [1, 3, 4, 8, 12, 100, 1024, CHUNK] {
                for split in [0, 1, 3, n / 2, n].into_iter().filter(|&k| k <= n) {
                    let got = decode(&tags, &smalls, &raws, n, split, chunk).unwrap();
                    assert!(got == values, "n {n}, pieces of {chunk}, split at {split}");
                }
            }
        }
    }

    #[test]
    fn encoding_in_pieces_gives_the_same_bytes_for_any_piece_size() {
        for n in [0, 1, 3, 4, 5, 1000, 1027] {
            let values = mixed(n, 100 + n as u64);
            let split = n / 3;
            let w = PartitionWitness {
                circuit_id: "t".into(),
                partition: 2,
                inputs: values[..split].to_vec(),
                aux: values[split..].to_vec(),
            };
            let whole = encode_compact_in_pieces(&w, [7; 32], 1 << 20);
            for chunk in [4, 8, 12, 100, 1024] {
                assert!(encode_compact_in_pieces(&w, [7; 32], chunk) == whole, "n {n}, pieces of {chunk}");
            }
            let (back, hash) = decode_compact(&whole).unwrap();
            assert_eq!(hash, [7; 32]);
            assert!(back == w, "n {n}: the round trip keeps every value");
        }
    }

    #[test]
    fn malformed_streams_are_refused_by_every_piece_size() {
        let n = 1000;
        let (tags, smalls, raws) = streams(mixed(n, 7));
        for (chunk, split) in [(4, 0), (12, 5), (1024, 3), (7, 1000)] {
            let err = |t: &[u8], s: &[u8], r: &[u8]| decode(t, s, r, n, split, chunk).unwrap_err().to_string();
            assert!(err(&tags, &smalls[..smalls.len() - 1], &raws).contains("small values truncated"));
            assert!(err(&tags, &[&smalls[..], &[1]].concat(), &raws).contains("trailing bytes"));
            assert!(err(&tags, &smalls, &raws[..raws.len() - 32]).contains("raw values truncated"));
            assert!(err(&tags, &smalls, &[&raws[..], &[0; 32]].concat()).contains("trailing bytes"));
            // a raw value at or above the field's modulus
            let mut big = raws.clone();
            big[..32].copy_from_slice(&[0xff; 32]);
            assert!(err(&tags, &smalls, &big).contains("non-canonical field element"));
            // a varint longer than 64 bits: eleven continuation bytes where one value was
            let long = [&[0x80u8; 10][..], &smalls[..]].concat();
            let e = err(&tags, &long, &raws);
            assert!(e.contains("varint too long") || e.contains("trailing bytes"), "{e}");
        }
    }
}
