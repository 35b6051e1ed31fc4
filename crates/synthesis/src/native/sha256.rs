//! SHA-256 as bellperson's `sha256` gadget allocates it.

use super::{Aux, Bit, U32};

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// The initial hash value, as constants.
pub fn sha256_iv() -> [U32; 8] {
    IV.map(U32::constant)
}

/// `sha256`: pad `input` (a whole number of bytes, bits most significant first) with constants
/// and compress block by block; the digest's 256 bits, most significant first.
pub fn sha256(aux: &mut Aux, input: &[Bit]) -> Vec<Bit> {
    assert!(input.len().is_multiple_of(8), "sha256 takes whole bytes");
    let mut padded = input.to_vec();
    let length = padded.len() as u64;
    padded.push(Bit::Const(true));
    while !(padded.len() + 64).is_multiple_of(512) {
        padded.push(Bit::Const(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Const((length >> i) & 1 == 1)));
    let mut state = sha256_iv();
    for block in padded.chunks(512) {
        state = sha256_compression(aux, block, &state);
    }
    state.iter().flat_map(|w| w.bits_be()).collect()
}

/// A word of the working state the gadget may leave as a pending sum, computed (with any extra
/// operands) only when next used: allocations happen where the gadget's happen.
enum Word {
    Deferred(Vec<U32>),
    Concrete(U32),
}

impl Word {
    fn compute(self, aux: &mut Aux, others: &[U32]) -> U32 {
        match self {
            Word::Concrete(v) => v,
            Word::Deferred(mut v) => {
                v.extend_from_slice(others);
                U32::addmany(aux, &v)
            }
        }
    }
}

/// `sha256_compression_function`: one 512-bit block (bits most significant first) into `state`.
pub fn sha256_compression(aux: &mut Aux, input: &[Bit], state: &[U32; 8]) -> [U32; 8] {
    assert_eq!(input.len(), 512);
    let mut w: Vec<U32> = input.chunks(32).map(U32::from_bits_be).collect();
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(aux, &w[i - 15].rotr(18)).xor(aux, &w[i - 15].shr(3));
        let s1 = w[i - 2].rotr(17).xor(aux, &w[i - 2].rotr(19)).xor(aux, &w[i - 2].shr(10));
        let next = U32::addmany(aux, &[w[i - 16], s0, w[i - 7], s1]);
        w.push(next);
    }
    let mut a = Word::Concrete(state[0]);
    let mut b = state[1];
    let mut c = state[2];
    let mut d = state[3];
    let mut e = Word::Concrete(state[4]);
    let mut f = state[5];
    let mut g = state[6];
    let mut h = state[7];
    for (i, k) in ROUND_CONSTANTS.iter().enumerate() {
        let new_e = e.compute(aux, &[]);
        let s1 = new_e.rotr(6).xor(aux, &new_e.rotr(11)).xor(aux, &new_e.rotr(25));
        let ch = U32::sha256_ch(aux, &new_e, &f, &g);
        let temp1 = [h, s1, ch, U32::constant(*k), w[i]];
        let new_a = a.compute(aux, &[]);
        let s0 = new_a.rotr(2).xor(aux, &new_a.rotr(13)).xor(aux, &new_a.rotr(22));
        let maj = U32::sha256_maj(aux, &new_a, &b, &c);
        h = g;
        g = f;
        f = new_e;
        e = Word::Deferred(temp1.iter().copied().chain(Some(d)).collect());
        d = c;
        c = b;
        b = new_a;
        a = Word::Deferred(temp1.iter().copied().chain([s0, maj]).collect());
    }
    let h0 = a.compute(aux, &[state[0]]);
    let h1 = U32::addmany(aux, &[state[1], b]);
    let h2 = U32::addmany(aux, &[state[2], c]);
    let h3 = U32::addmany(aux, &[state[3], d]);
    let h4 = e.compute(aux, &[state[4]]);
    let h5 = U32::addmany(aux, &[state[5], f]);
    let h6 = U32::addmany(aux, &[state[6], g]);
    let h7 = U32::addmany(aux, &[state[7], h]);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    fn digest_of(bytes: &[u8]) -> Vec<u8> {
        let bits: Vec<Bit> =
            bytes.iter().flat_map(|b| (0..8).rev().map(move |i| Bit::Const((b >> i) & 1 == 1))).collect();
        let mut aux = Aux::default();
        let digest = sha256(&mut aux, &bits);
        assert!(aux.is_empty(), "constants allocate nothing");
        digest.chunks(8).map(|b| b.iter().fold(0u8, |v, b| (v << 1) | u8::from(b.value()))).collect()
    }

    #[test]
    fn the_digest_of_constant_messages_is_sha256() {
        for len in [0usize, 1, 55, 56, 63, 64, 65, 119, 120, 130] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            assert_eq!(digest_of(&bytes), sha2::Sha256::digest(&bytes).to_vec(), "{len} bytes");
        }
    }
}
