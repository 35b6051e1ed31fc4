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
}

#[derive(Serialize, Deserialize)]
struct Header {
    circuit_id: String,
    partition: u32,
    shape_hash: [u8; 32],
    inputs: u64,
    aux: u64,
}

/// Encode a witness for a prover holding the shape with hash `shape_hash`.
pub fn encode_compact(w: &PartitionWitness, shape_hash: [u8; 32]) -> Vec<u8> {
    let n = w.inputs.len() + w.aux.len();
    let mut tags = vec![0u8; n.div_ceil(4)];
    let mut smalls = Vec::new();
    let mut raws = Vec::new();
    for (i, v) in w.inputs.iter().chain(&w.aux).enumerate() {
        let repr = v.to_repr();
        let tag = if repr.iter().all(|b| *b == 0) {
            TAG_ZERO
        } else if *v == Fr::ONE {
            TAG_ONE
        } else if repr[8..].iter().all(|b| *b == 0) {
            let mut x = u64::from_le_bytes(repr[..8].try_into().expect("8 bytes"));
            loop {
                let byte = (x & 0x7f) as u8;
                x >>= 7;
                if x == 0 {
                    smalls.push(byte);
                    break;
                }
                smalls.push(byte | 0x80);
            }
            TAG_SMALL
        } else {
            raws.extend_from_slice(&repr);
            TAG_RAW
        };
        tags[i / 4] |= tag << (2 * (i % 4));
    }
    let header = Header {
        circuit_id: w.circuit_id.clone(),
        partition: w.partition,
        shape_hash,
        inputs: w.inputs.len() as u64,
        aux: w.aux.len() as u64,
    };
    let mut out = Vec::with_capacity(64 + tags.len() + smalls.len() + raws.len());
    out.extend_from_slice(&COMPACT_MAGIC);
    out.extend_from_slice(&COMPACT_VERSION.to_le_bytes());
    bincode::serialize_into(&mut out, &header).expect("writing to a Vec cannot fail");
    out.extend_from_slice(&tags);
    out.extend_from_slice(&(smalls.len() as u64).to_le_bytes());
    out.extend_from_slice(&smalls);
    out.extend_from_slice(&raws);
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

/// Decode and check a compact witness: digest first, then structure and canonical values.
pub fn decode_compact(bytes: &[u8]) -> Result<(PartitionWitness, [u8; 32]), CompactError> {
    if bytes.len() < 4 || bytes[..4] != COMPACT_MAGIC {
        return Err(CompactError::Magic);
    }
    if bytes.len() < 6 + 32 {
        return Err(CompactError::Digest);
    }
    let (body, digest) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != digest {
        return Err(CompactError::Digest);
    }
    let (header, mut pos) = parse_header(body)?;
    let malformed = |m: &str| CompactError::Malformed(m.to_owned());
    let n = usize::try_from(header.inputs + header.aux).map_err(|_| malformed("too many values"))?;
    let tags = body.get(pos..pos + n.div_ceil(4)).ok_or_else(|| malformed("tags truncated"))?;
    pos += tags.len();
    let smalls_len =
        u64::from_le_bytes(body.get(pos..pos + 8).ok_or_else(|| malformed("truncated"))?.try_into().expect("8"));
    pos += 8;
    let smalls = body.get(pos..pos + smalls_len as usize).ok_or_else(|| malformed("small values truncated"))?;
    pos += smalls.len();
    let raws = &body[pos..];
    let (mut s, mut r) = (0usize, 0usize);
    let mut values = Vec::with_capacity(n);
    for i in 0..n {
        let v = match (tags[i / 4] >> (2 * (i % 4))) & 3 {
            TAG_ZERO => Fr::ZERO,
            TAG_ONE => Fr::ONE,
            TAG_SMALL => {
                let (mut x, mut shift) = (0u64, 0u32);
                loop {
                    let byte = *smalls.get(s).ok_or_else(|| malformed("small values truncated"))?;
                    s += 1;
                    x |= u64::from(byte & 0x7f).checked_shl(shift).ok_or_else(|| malformed("varint too long"))?;
                    shift += 7;
                    if byte & 0x80 == 0 {
                        break;
                    }
                }
                Fr::from(x)
            }
            _ => {
                let repr: [u8; 32] =
                    raws.get(r..r + 32).ok_or_else(|| malformed("raw values truncated"))?.try_into().expect("32");
                r += 32;
                Option::from(Fr::from_repr(repr)).ok_or_else(|| malformed("non-canonical field element"))?
            }
        };
        values.push(v);
    }
    if s != smalls.len() || r != raws.len() {
        return Err(malformed("trailing bytes"));
    }
    let aux = values.split_off(header.inputs as usize);
    Ok((
        PartitionWitness { circuit_id: header.circuit_id, partition: header.partition, inputs: values, aux },
        header.shape_hash,
    ))
}
