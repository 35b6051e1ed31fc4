//! Reading the compact form: the payload checked (digest, header, stream lengths) into its
//! parts, then the values decoded in parallel pieces, or only what a reader needs of them.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use sha2::{Digest, Sha256};

use super::{parse_header, CompactError, WitnessShape, COMPACT_MAGIC, TAG_ONE, TAG_RAW, TAG_SMALL, TAG_ZERO};
use crate::PartitionWitness;

/// Values per chunk decoded by one thread.
pub(super) const CHUNK: usize = 1 << 20;

/// The values from their tags, small-value varints and raw representations, decoded into
/// `outs` in order (the inputs, then the aux values: no copy to split them afterwards), at most
/// `chunk` values per parallel piece. Where each piece's varints and raw values start is found
/// first: raw values by counting raw tags, varints by counting the bytes that end one (high bit
/// clear) — a quick scan; then the pieces decode in parallel, each checking it ends where the
/// next begins. Any structural fault is an error, as when decoded in one pass.
pub(super) fn decode_values(
    tags: &[u8],
    smalls: &[u8],
    raws: &[u8],
    outs: &mut [&mut [Fr]],
    chunk: usize,
) -> Result<(), CompactError> {
    use rayon::prelude::*;
    let tag = |i: usize| (tags[i / 4] >> (2 * (i % 4))) & 3;
    let pieces = pieces(outs, chunk.max(1));
    // per piece: how many small and raw values it holds
    let counts: Vec<(usize, usize)> = pieces
        .par_iter()
        .map(|(first, piece)| {
            (*first..first + piece.len()).fold((0, 0), |(s, r), i| match tag(i) {
                TAG_SMALL => (s + 1, r),
                TAG_RAW => (s, r + 1),
                _ => (s, r),
            })
        })
        .collect();
    let starts = stream_starts(&counts, smalls, raws)?;
    pieces.into_par_iter().enumerate().try_for_each(|(p, (first, out))| {
        let (mut s, mut r) = starts[p];
        for (k, v) in out.iter_mut().enumerate() {
            // 0 and 1, ~99 % of a Filecoin witness, without a call that can fail
            *v = match tag(first + k) {
                TAG_ZERO => Fr::ZERO,
                TAG_ONE => Fr::ONE,
                other => value(other, smalls, raws, &mut s, &mut r)?,
            };
        }
        debug_assert_eq!((s, r), starts[p + 1], "piece {p} ends where the next begins");
        Ok(())
    })
}

fn malformed(m: &str) -> CompactError {
    CompactError::Malformed(m.to_owned())
}

/// Each output cut into `chunk`s, with the index of its first value among all the outputs'.
fn pieces<'a>(outs: &'a mut [&mut [Fr]], chunk: usize) -> Vec<(usize, &'a mut [Fr])> {
    let mut pieces = Vec::new();
    let mut first = 0;
    for out in outs.iter_mut() {
        for piece in out.chunks_mut(chunk) {
            let len = piece.len();
            pieces.push((first, piece));
            first += len;
        }
    }
    pieces
}

/// Where each piece (of `counts`: its small and raw values) starts in the two streams, and
/// where the last ends; the streams must end exactly there.
fn stream_starts(counts: &[(usize, usize)], smalls: &[u8], raws: &[u8]) -> Result<Vec<(usize, usize)>, CompactError> {
    let mut starts = Vec::with_capacity(counts.len() + 1);
    let (mut small_values, mut raw_values) = (0usize, 0usize);
    let mut ends_seen = 0usize; // varints ended so far in the scan of `smalls`
    let mut byte = 0usize;
    for &(s, r) in std::iter::once(&(0, 0)).chain(counts) {
        small_values += s;
        raw_values += r;
        while ends_seen < small_values {
            let b = *smalls.get(byte).ok_or_else(|| malformed("small values truncated"))?;
            byte += 1;
            if b & 0x80 == 0 {
                ends_seen += 1;
            }
        }
        starts.push((byte, raw_values * 32));
    }
    let (smalls_end, raws_end) = starts[counts.len()];
    if smalls_end != smalls.len() || raws_end != raws.len() {
        return Err(malformed(if raws_end > raws.len() { "raw values truncated" } else { "trailing bytes" }));
    }
    Ok(starts)
}

/// `n` zero field elements, the pages written by all threads (a 32 GiB partition's aux
/// vector is 4.2 GB: one thread spends seconds faulting its pages in).
pub(super) fn zeros(n: usize) -> Vec<Fr> {
    use rayon::prelude::*;
    let mut v = Vec::new();
    (0..n).into_par_iter().map(|_| Fr::ZERO).collect_into_vec(&mut v);
    v
}

/// A compact payload checked — digest, header, and the three streams' extents — but not yet
/// decoded: what [`decode_compact`] decodes whole, and what a reader that needs only some of the
/// values (the resident prover: the tags and the values that are neither 0 nor 1) reads directly.
pub struct CompactParts<'a> {
    pub circuit_id: String,
    pub partition: u32,
    pub shape_hash: [u8; 32],
    pub inputs: u64,
    pub aux: u64,
    /// A 2-bit tag per value, four to a byte, value `i` in bits `2(i mod 4)` of byte `i / 4`:
    /// 0 zero, 1 one, 2 small (a varint in `smalls`), 3 raw (32 bytes in `raws`).
    pub tags: &'a [u8],
    smalls: &'a [u8],
    raws: &'a [u8],
}

impl<'a> CompactParts<'a> {
    /// Check the digest first, then the header and that the streams are there.
    pub fn parse(bytes: &'a [u8]) -> Result<CompactParts<'a>, CompactError> {
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
        let n = header.inputs.checked_add(header.aux).and_then(|n| usize::try_from(n).ok());
        let n = n.ok_or_else(|| malformed("too many values"))?;
        let tags = body.get(pos..pos + n.div_ceil(4)).ok_or_else(|| malformed("tags truncated"))?;
        pos += tags.len();
        let smalls_len =
            u64::from_le_bytes(body.get(pos..pos + 8).ok_or_else(|| malformed("truncated"))?.try_into().expect("8"));
        pos += 8;
        let smalls_end = usize::try_from(smalls_len).ok().and_then(|l| pos.checked_add(l));
        let smalls =
            smalls_end.and_then(|end| body.get(pos..end)).ok_or_else(|| malformed("small values truncated"))?;
        pos += smalls.len();
        Ok(CompactParts {
            circuit_id: header.circuit_id,
            partition: header.partition,
            shape_hash: header.shape_hash,
            inputs: header.inputs,
            aux: header.aux,
            tags,
            smalls,
            raws: &body[pos..],
        })
    }

    /// As [`CompactParts::parse`], for a reader that knows the shape: the header is checked
    /// against it first (its counts size what the reader allocates, up to 128 times the payload).
    pub fn parse_for(bytes: &'a [u8], expected: &WitnessShape) -> Result<CompactParts<'a>, CompactError> {
        let (header, _) = parse_header(bytes)?;
        if (header.shape_hash, header.inputs, header.aux) != (expected.hash, expected.inputs, expected.aux) {
            return Err(CompactError::WrongShape {
                got: hex::encode(header.shape_hash),
                got_inputs: header.inputs,
                got_aux: header.aux,
                expected: hex::encode(expected.hash),
                expected_inputs: expected.inputs,
                expected_aux: expected.aux,
            });
        }
        CompactParts::parse(bytes)
    }

    /// Values in the witness (inputs and aux).
    pub fn len(&self) -> usize {
        (self.inputs + self.aux) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many values are tagged small or raw: neither 0 nor 1.
    pub fn others(&self) -> usize {
        use rayon::prelude::*;
        self.tags.par_chunks(1 << 16).map(|c| c.iter().map(|t| (t & 0xaa).count_ones() as usize).sum::<usize>()).sum()
    }

    /// Every value, decoded in parallel pieces (the inputs, then the aux values).
    pub fn decode(self) -> Result<PartitionWitness, CompactError> {
        let n = self.len();
        let (mut inputs, mut aux) = (zeros(self.inputs as usize), zeros(n - self.inputs as usize));
        decode_values(self.tags, self.smalls, self.raws, &mut [&mut inputs, &mut aux], CHUNK)?;
        Ok(PartitionWitness { circuit_id: self.circuit_id, partition: self.partition, inputs, aux })
    }

    /// The first `k` values (the public inputs), decoded alone.
    pub fn first(&self, k: usize) -> Result<Vec<Fr>, CompactError> {
        if k > self.len() {
            return Err(malformed("fewer values than asked for"));
        }
        let (mut s, mut r) = (0usize, 0usize);
        (0..k).map(|i| value(tag_of(self.tags, i), self.smalls, self.raws, &mut s, &mut r)).collect()
    }

    /// The values that are neither 0 nor 1, in witness order, into `out` (exactly
    /// [`CompactParts::others`] of them); the two streams must be used up exactly.
    pub fn others_into(&self, out: &mut [Fr]) -> Result<(), CompactError> {
        let (mut s, mut r, mut at) = (0usize, 0usize, 0usize);
        for (b, &byte) in self.tags.iter().enumerate() {
            let mut high = byte & 0xaa;
            while high != 0 {
                let j = high.trailing_zeros() as usize / 2;
                if 4 * b + j >= self.len() {
                    return Err(malformed("a tag past the last value"));
                }
                let slot = out.get_mut(at).ok_or_else(|| malformed("more values than counted"))?;
                *slot = value((byte >> (2 * j)) & 3, self.smalls, self.raws, &mut s, &mut r)?;
                at += 1;
                high &= high - 1;
            }
        }
        if at != out.len() {
            return Err(malformed("fewer values than counted"));
        }
        if s != self.smalls.len() || r != self.raws.len() {
            return Err(malformed("trailing bytes"));
        }
        Ok(())
    }
}

/// The value of tag `tag`, reading the small and raw streams at `s` and `r` (moved past it).
#[inline]
fn value(tag: u8, smalls: &[u8], raws: &[u8], s: &mut usize, r: &mut usize) -> Result<Fr, CompactError> {
    Ok(match tag {
        TAG_ZERO => Fr::ZERO,
        TAG_ONE => Fr::ONE,
        TAG_SMALL => Fr::from(varint(smalls, s)?),
        _ => {
            let repr: [u8; 32] =
                raws.get(*r..*r + 32).ok_or_else(|| malformed("raw values truncated"))?.try_into().expect("32");
            *r += 32;
            Option::from(Fr::from_repr(repr)).ok_or_else(|| malformed("non-canonical field element"))?
        }
    })
}

fn tag_of(tags: &[u8], i: usize) -> u8 {
    (tags[i / 4] >> (2 * (i % 4))) & 3
}

/// The varint at `smalls[*at]`, `at` moved past it; one that runs off the end is an error.
#[inline]
fn varint(smalls: &[u8], at: &mut usize) -> Result<u64, CompactError> {
    let (mut x, mut shift) = (0u64, 0u32);
    loop {
        let byte = *smalls.get(*at).ok_or_else(|| malformed("small values truncated"))?;
        *at += 1;
        x |= u64::from(byte & 0x7f).checked_shl(shift).ok_or_else(|| malformed("varint too long"))?;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(x);
        }
    }
}

/// Decode a compact witness made for `expected`: its header is checked against the shape
/// before anything is allocated, then as [`decode_compact`].
pub fn decode_compact_for(bytes: &[u8], expected: &WitnessShape) -> Result<PartitionWitness, CompactError> {
    CompactParts::parse_for(bytes, expected)?.decode()
}

/// Decode and check a compact witness: digest first, then structure and canonical values.
/// The header's value counts are bounded only by the payload (four per byte of tags): readers
/// that know the shape use [`decode_compact_for`].
pub fn decode_compact(bytes: &[u8]) -> Result<(PartitionWitness, [u8; 32]), CompactError> {
    let parts = CompactParts::parse(bytes)?;
    let hash = parts.shape_hash;
    Ok((parts.decode()?, hash))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode_compact;
    use rand::{Rng, SeedableRng};

    fn witness(inputs: usize, aux: usize, seed: u64) -> PartitionWitness {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut value = || match rng.gen_range(0..10) {
            0..=3 => Fr::ZERO,
            4..=7 => Fr::ONE,
            8 => Fr::from(rng.gen::<u64>() >> rng.gen_range(0..64)),
            _ => Fr::random(&mut rng),
        };
        let inputs = (0..inputs).map(|_| value()).collect();
        let aux = (0..aux).map(|_| value()).collect();
        PartitionWitness { circuit_id: "t".into(), partition: 3, inputs, aux }
    }

    #[test]
    fn the_parts_give_the_values_that_are_neither_0_nor_1_and_the_first_ones() {
        for (ni, na) in [(1, 0), (1, 1), (3, 1001), (17, 4096), (1, 70_001)] {
            let w = witness(ni, na, (ni * na) as u64);
            let bytes = encode_compact(&w, [9; 32]);
            let parts = CompactParts::parse(&bytes).unwrap();
            let all: Vec<Fr> = w.inputs.iter().chain(&w.aux).copied().collect();
            let want: Vec<Fr> = all.iter().filter(|v| **v != Fr::ZERO && **v != Fr::ONE).copied().collect();
            assert_eq!(parts.others(), want.len(), "{ni} + {na}");
            let mut got = vec![Fr::ZERO; want.len()];
            parts.others_into(&mut got).unwrap();
            assert!(got == want, "{ni} + {na}");
            assert!(parts.first(ni).unwrap() == w.inputs);
            assert!(parts.first(all.len()).unwrap() == all);
            assert!(parts.first(all.len() + 1).is_err());
            let back = CompactParts::parse(&bytes).unwrap().decode().unwrap();
            assert!(back.inputs == w.inputs && back.aux == w.aux && back.partition == 3);
        }
    }

    #[test]
    fn the_parts_refuse_a_count_that_does_not_match_and_a_bad_digest() {
        let w = witness(2, 5000, 5);
        let mut bytes = encode_compact(&w, [1; 32]);
        let parts = CompactParts::parse(&bytes).unwrap();
        let n = parts.others();
        assert!(parts.others_into(&mut vec![Fr::ZERO; n + 1]).unwrap_err().to_string().contains("fewer values"));
        assert!(parts.others_into(&mut vec![Fr::ZERO; n - 1]).unwrap_err().to_string().contains("more values"));
        let shape = WitnessShape { hash: [2; 32], inputs: 2, aux: 5000 };
        assert!(matches!(CompactParts::parse_for(&bytes, &shape), Err(CompactError::WrongShape { .. })));
        let last = bytes.len() - 40;
        bytes[last] ^= 1;
        assert!(matches!(CompactParts::parse(&bytes), Err(CompactError::Digest)));
    }
}
