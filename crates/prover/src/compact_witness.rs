//! The witness as it crosses PCIe to the resident prover: two bits a value (0, 1, or neither)
//! and only the values that are neither, instead of 32 bytes a value.
//!
//! A Filecoin witness is almost all bits: at 32 GiB ~1.3 % of the 134 M values are neither 0
//! nor 1, so the 4.3 GB witness crosses as ~0.1 GB and a device kernel
//! (`expand_witness` in `cuda/kernels.cuh`) writes it out in device memory. The layout:
//!
//! - `classes`: one `u64` per 32 values, value `i` in bits `2(i mod 32)..`: 0 zero, 1 one,
//!   2 neither (3 is never written);
//! - `word_others`: per word, how many values before it are neither: where its first one is in
//!   `others`;
//! - `others`: the values that are neither, in witness order.
//!
//! Zero and one are recognised by their Montgomery limbs, and the device writes `Fr::ONE`'s
//! limbs for a one, so the expanded witness is the same bytes as the one sent whole. A witness
//! where more than half the values are neither (the dense synthetic kind) is sent whole: the
//! compact form would save little. [`expand`] is the kernel's rule on the host, for the tests.

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// Values per class word.
pub const PER_WORD: usize = 32;
/// Class words a parallel task classifies (2^16 values).
const CHUNK_WORDS: usize = 2048;

const ZERO: u64 = 0;
const ONE: u64 = 1;
const OTHER: u64 = 2;

/// A witness `[inputs | aux]` classified: its class words and, per chunk of `CHUNK_WORDS`, how
/// many values are neither 0 nor 1.
#[derive(Debug)]
pub struct Classified {
    pub classes: Vec<u64>,
    chunk_others: Vec<usize>,
    /// Values that are neither 0 nor 1.
    pub others: usize,
    /// Values in the witness.
    pub len: usize,
}

impl Classified {
    /// Whether sending the compact form pays: at most half the values are neither 0 nor 1.
    pub fn worth_it(&self) -> bool {
        compact_pays(self.others, self.len)
    }

    /// Class words in the compact form.
    pub fn words(&self) -> usize {
        self.classes.len()
    }
}

/// Whether sending a witness of `len` values, `others` of them neither 0 nor 1, in the compact
/// form pays: at most half the values are neither.
pub fn compact_pays(others: usize, len: usize) -> bool {
    others <= len / 2
}

/// Value `i` of `[inputs | aux]`.
fn value<'a>(inputs: &'a [Fr], aux: &'a [Fr], i: usize) -> &'a Fr {
    if i < inputs.len() {
        &inputs[i]
    } else {
        &aux[i - inputs.len()]
    }
}

/// Plain compares (`is_zero` is constant-time: its optimisation barriers cost more than the
/// rest of the classification), and no branch on 0 against 1, which is as good as random.
fn class_of(v: &Fr) -> u64 {
    let (zero, one) = (*v == Fr::ZERO, *v == Fr::ONE);
    if zero | one {
        ZERO + one as u64 * (ONE - ZERO)
    } else {
        OTHER
    }
}

/// Classify every value of `[inputs | aux]`, in parallel.
pub fn classify(inputs: &[Fr], aux: &[Fr]) -> Classified {
    let len = inputs.len() + aux.len();
    let mut classes = vec![0u64; len.div_ceil(PER_WORD)];
    let chunk_others: Vec<usize> = classes
        .par_chunks_mut(CHUNK_WORDS)
        .enumerate()
        .map(|(c, words)| {
            let mut others = 0;
            for (k, word) in words.iter_mut().enumerate() {
                let first = (c * CHUNK_WORDS + k) * PER_WORD;
                let mut bits = 0u64;
                for j in 0..PER_WORD.min(len - first) {
                    let class = class_of(value(inputs, aux, first + j));
                    others += (class == OTHER) as usize;
                    bits |= class << (2 * j);
                }
                *word = bits;
            }
            others
        })
        .collect();
    let others = chunk_others.iter().sum();
    Classified { classes, chunk_others, others, len }
}

/// Write the compact form's `word_others` (one per class word) and `others` (exactly
/// `classified.others` values) for the witness `classified` was made from.
pub fn fill(classified: &Classified, inputs: &[Fr], aux: &[Fr], word_others: &mut [u32], others: &mut [Fr]) {
    assert_eq!(word_others.len(), classified.words(), "one offset per class word");
    assert_eq!(others.len(), classified.others, "room for exactly the other values");
    assert!(classified.others <= u32::MAX as usize, "offsets are 32-bit");
    // each chunk's slice of `others`, split off in order
    let mut rest = others;
    let mut slices = Vec::with_capacity(classified.chunk_others.len());
    for &n in &classified.chunk_others {
        let (mine, tail) = std::mem::take(&mut rest).split_at_mut(n);
        slices.push(mine);
        rest = tail;
    }
    let mut bases = Vec::with_capacity(classified.chunk_others.len());
    let mut base = 0usize;
    for &n in &classified.chunk_others {
        bases.push(base);
        base += n;
    }
    word_others
        .par_chunks_mut(CHUNK_WORDS)
        .zip(classified.classes.par_chunks(CHUNK_WORDS))
        .zip(slices.into_par_iter().zip(bases.into_par_iter()))
        .enumerate()
        .for_each(|(c, ((offsets, words), (out, base)))| {
            let mut at = 0usize;
            for (k, (&word, offset)) in words.iter().zip(offsets.iter_mut()).enumerate() {
                *offset = (base + at) as u32;
                let mut neither = (word >> 1) & 0x5555_5555_5555_5555;
                while neither != 0 {
                    let j = neither.trailing_zeros() as usize / 2;
                    out[at] = *value(inputs, aux, (c * CHUNK_WORDS + k) * PER_WORD + j);
                    at += 1;
                    neither &= neither - 1;
                }
            }
        });
}

/// The class words and `word_others` straight from the compact wire form's tags
/// (`snarkflow_synthesis::CompactParts::tags`): the same order and packing as class words, a
/// value's tag 0 zero, 1 one, 2 small, 3 raw; a tag with its high bit set is "neither", so a
/// word is its 8 tag bytes with the low bit cleared wherever the high one is set. With the
/// wire's values that are neither in `others` (`CompactParts::others_into`), the witness is
/// staged without ever being decoded (4.2 GB at 32 GiB). Returns how many values are neither.
pub fn classes_from_tags(tags: &[u8], classes: &mut [u64], word_others: &mut [u32]) -> usize {
    assert_eq!(classes.len(), tags.len().div_ceil(8), "one class word per 8 tag bytes");
    assert_eq!(word_others.len(), classes.len(), "one offset per class word");
    const HIGH: u64 = 0xaaaa_aaaa_aaaa_aaaa;
    let word = |w: usize| {
        let mut bytes = [0u8; 8];
        let at = &tags[8 * w..(8 * w + 8).min(tags.len())];
        bytes[..at.len()].copy_from_slice(at);
        let tags = u64::from_le_bytes(bytes);
        tags & !((tags & HIGH) >> 1)
    };
    // the words a task fills, their counts summed first so each task knows its first offset
    let counts: Vec<usize> = classes
        .par_chunks_mut(CHUNK_WORDS)
        .enumerate()
        .map(|(c, out)| {
            let mut n = 0;
            for (k, class) in out.iter_mut().enumerate() {
                *class = word(c * CHUNK_WORDS + k);
                n += (*class & HIGH).count_ones() as usize;
            }
            n
        })
        .collect();
    let mut bases = Vec::with_capacity(counts.len());
    let mut total = 0usize;
    for n in &counts {
        bases.push(total);
        total += n;
    }
    assert!(total <= u32::MAX as usize, "offsets are 32-bit");
    word_others.par_chunks_mut(CHUNK_WORDS).zip(classes.par_chunks(CHUNK_WORDS)).zip(bases).for_each(
        |((offsets, words), base)| {
            let mut at = base;
            for (offset, class) in offsets.iter_mut().zip(words) {
                *offset = at as u32;
                at += (class & HIGH).count_ones() as usize;
            }
        },
    );
    total
}

/// The witness of `len` values from its compact form, by the device kernel's rule: value `i`
/// of a word is `others[word_others[w] + (neither-values below i in the word)]`.
pub fn expand(classes: &[u64], word_others: &[u32], others: &[Fr], len: usize) -> Vec<Fr> {
    (0..len)
        .map(|i| {
            let (w, j) = (i / PER_WORD, i % PER_WORD);
            let word = classes[w];
            match (word >> (2 * j)) & 3 {
                ZERO => Fr::ZERO,
                ONE => Fr::ONE,
                _ => {
                    let below = (1u64 << (2 * j)) - 1;
                    let rank = ((word >> 1) & 0x5555_5555_5555_5555 & below).count_ones() as usize;
                    others[word_others[w] as usize + rank]
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn round_trip(inputs: &[Fr], aux: &[Fr]) -> Classified {
        let c = classify(inputs, aux);
        let mut word_others = vec![0u32; c.words()];
        let mut others = vec![Fr::ZERO; c.others];
        fill(&c, inputs, aux, &mut word_others, &mut others);
        let whole: Vec<Fr> = inputs.iter().chain(aux).copied().collect();
        assert_eq!(expand(&c.classes, &word_others, &others, c.len), whole);
        c
    }

    fn bits_and_tails(n: usize, tail_every: usize, rng: &mut impl Rng) -> Vec<Fr> {
        (0..n)
            .map(|i| match i % tail_every {
                0 => Fr::random(&mut *rng),
                _ if rng.gen::<bool>() => Fr::ONE,
                _ => Fr::ZERO,
            })
            .collect()
    }

    #[test]
    fn a_filecoin_like_witness_round_trips_and_is_sent_compact() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        // several chunks, a length that ends inside a word, inputs that straddle the first word
        let inputs = bits_and_tails(37, 5, &mut rng);
        let aux = bits_and_tails(3 * CHUNK_WORDS * PER_WORD + 1001, 77, &mut rng);
        let c = round_trip(&inputs, &aux);
        assert!(c.worth_it());
        assert!(c.others > 0 && c.others < c.len / 50);
    }

    #[test]
    fn the_wire_tags_give_the_same_compact_form_as_classifying_the_decoded_witness() {
        use snarkflow_synthesis::{encode_compact, CompactParts, PartitionWitness};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for (ni, na) in [(1, 0), (1, 30), (37, 3 * CHUNK_WORDS * PER_WORD + 1001), (5, 2 * CHUNK_WORDS * PER_WORD - 5)]
        {
            let mut values = bits_and_tails(ni + na, 7, &mut rng);
            // small values are "neither" too, as are 2 and p − 1
            values.iter_mut().step_by(11).for_each(|v| *v = Fr::from(rng.gen::<u64>()));
            values[ni + na - 1] = -Fr::ONE;
            let aux = values.split_off(ni);
            let c = classify(&values, &aux);
            let (mut word_others, mut others) = (vec![0u32; c.words()], vec![Fr::ZERO; c.others]);
            fill(&c, &values, &aux, &mut word_others, &mut others);

            let w = PartitionWitness { circuit_id: "t".into(), partition: 0, inputs: values, aux };
            let bytes = encode_compact(&w, [0; 32]);
            let wire = CompactParts::parse(&bytes).unwrap();
            let (mut classes, mut offsets) = (vec![u64::MAX; c.words()], vec![u32::MAX; c.words()]);
            assert_eq!(classes_from_tags(wire.tags, &mut classes, &mut offsets), c.others);
            let mut from_wire = vec![Fr::ZERO; wire.others()];
            wire.others_into(&mut from_wire).unwrap();
            assert!(classes == c.classes, "{ni} + {na}");
            assert!(offsets == word_others && from_wire == others, "{ni} + {na}");
        }
    }

    #[test]
    fn a_dense_witness_round_trips_but_goes_whole() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let aux = bits_and_tails(5000, 1, &mut rng);
        let c = round_trip(&[Fr::ONE], &aux);
        assert!(!c.worth_it());
    }

    #[test]
    fn edge_lengths_round_trip() {
        for n in [0usize, 1, 31, 32, 33, 64, CHUNK_WORDS * PER_WORD, CHUNK_WORDS * PER_WORD + 1] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
            let aux = bits_and_tails(n, 3, &mut rng);
            round_trip(&[], &aux);
            // a word of nothing but values that are neither: the rank reaches 31
            let dense: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
            round_trip(&[], &dense);
        }
        // minus one is neither 0 nor 1 (same limbs as neither)
        let c = round_trip(&[Fr::ONE], &[-Fr::ONE, Fr::ZERO, Fr::ONE.double()]);
        assert_eq!((c.others, c.classes[0]), (2, 0b10_00_10_01));
    }
}
