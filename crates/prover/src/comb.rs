//! Comb tables for fixed-base products k·G: d·2^(bits·w)·G for every digit position w and
//! digit value d, built once per base, so that k·G is at most one mixed addition per digit and
//! no doublings (32 with byte digits, 16 with 16-bit digits) instead of ~256 doublings and ~50
//! additions with wNAF. Parameter generation is almost all such products.

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

/// Comb digits of 8 bits (32 × 255 entries per base: built in milliseconds, what small
/// circuits use) or 16 bits (16 × 65,535 entries, 100 MB in G1 and 200 MB in G2, built in about
/// a second: half the additions per point, for circuits with millions of points).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Digits {
    Bits8,
    Bits16,
}

impl Digits {
    /// 16-bit digits once there are enough points to repay the larger tables.
    pub(crate) fn for_points(points: usize) -> Self {
        if points >= 1 << 22 {
            Digits::Bits16
        } else {
            Digits::Bits8
        }
    }

    fn bytes(self) -> usize {
        match self {
            Digits::Bits8 => 1,
            Digits::Bits16 => 2,
        }
    }

    fn windows(self) -> usize {
        32 / self.bytes()
    }

    /// Non-zero digit values: 2^bits − 1.
    fn entries(self) -> usize {
        (1 << (8 * self.bytes())) - 1
    }

    /// Digit `w` of a scalar's little-endian bytes.
    fn digit(self, repr: &[u8], w: usize) -> usize {
        let width = self.bytes();
        repr[w * width..(w + 1) * width].iter().rev().fold(0, |d, &byte| d << 8 | byte as usize)
    }
}

/// A comb table: d·2^(bits·w)·base for every window w and non-zero digit d, affine, so that
/// k·base is the sum of one entry per non-zero digit of k. (A macro rather than a generic:
/// blstrs' mixed addition impls do not resolve through the `group` traits' associated types.)
macro_rules! comb {
    ($name:ident, $proj:ty, $affine:ty, $field:ty) => {
        pub(crate) struct $name {
            digits: Digits,
            pub(crate) table: Vec<$affine>,
        }

        impl $name {
            pub(crate) fn new(base: $proj, digits: Digits) -> Self {
                let entries = digits.entries();
                let mut bases = Vec::with_capacity(digits.windows());
                let mut b = base;
                for _ in 0..digits.windows() {
                    bases.push(b);
                    for _ in 0..8 * digits.bytes() {
                        b = b.double();
                    }
                }
                let rows: Vec<Vec<$affine>> = bases
                    .par_iter()
                    .map(|b| {
                        let mut acc = *b;
                        let mut row = Vec::with_capacity(entries);
                        for _ in 0..entries {
                            row.push(acc);
                            acc += b;
                        }
                        let mut affine = vec![<$affine>::identity(); entries];
                        <$proj>::batch_normalize(&row, &mut affine);
                        affine
                    })
                    .collect();
                $name { digits, table: rows.concat() }
            }

            #[cfg(test)]
            fn mul(&self, k: &Fr) -> $proj {
                let repr = k.to_repr();
                let mut acc = <$proj>::identity();
                let entries = self.digits.entries();
                for w in 0..self.digits.windows() {
                    let d = self.digits.digit(repr.as_ref(), w);
                    if d != 0 {
                        acc += &self.table[w * entries + d - 1];
                    }
                }
                acc
            }

            /// k·base for every k of `ks`, affine, with the partial sums kept affine: the
            /// additions of one digit position across the batch share one field inversion
            /// (Montgomery's trick), so an addition is ~6 field multiplications where a mixed
            /// projective one is ~11, and nothing is normalised at the end. The points are the
            /// same as `products_projective`'s (affine coordinates are unique).
            pub(crate) fn products(&self, ks: &[Fr]) -> Vec<$affine> {
                let entries = self.digits.entries();
                let reprs: Vec<_> = ks.iter().map(|k| k.to_repr()).collect();
                // each point's partial sum, affine; None while it is the identity
                let mut acc: Vec<Option<($field, $field)>> = vec![None; ks.len()];
                // the point and table entry of each addition of one digit position
                let mut pending: Vec<(usize, $affine)> = Vec::with_capacity(ks.len());
                let mut dx: Vec<$field> = Vec::with_capacity(ks.len());
                for w in 0..self.digits.windows() {
                    // the entries copied out first, in a loop that does nothing else: the
                    // loads (random over 6 MB a position with 16-bit digits, past the L2
                    // cache) then overlap instead of each waiting behind field arithmetic
                    pending.clear();
                    for (i, repr) in reprs.iter().enumerate() {
                        let d = self.digits.digit(repr.as_ref(), w);
                        if d != 0 {
                            pending.push((i, self.table[w * entries + d - 1]));
                        }
                    }
                    dx.clear();
                    pending.retain(|(i, t)| match acc[*i] {
                        None => {
                            acc[*i] = Some((t.x(), t.y()));
                            false
                        }
                        Some((x, y)) if x == t.x() => {
                            // the sum is ±t: a doubling or the identity (never for canonical
                            // scalars: a partial sum and the next entry add up to less than r)
                            let sum = <$proj>::from(<$affine>::from_raw_unchecked(x, y, false)) + t;
                            acc[*i] = (!bool::from(sum.is_identity())).then(|| {
                                let a = sum.to_affine();
                                (a.x(), a.y())
                            });
                            false
                        }
                        Some((x, _)) => {
                            dx.push(t.x() - x);
                            true
                        }
                    });
                    invert_all(&mut dx);
                    for ((i, t), inv) in pending.iter().zip(&dx) {
                        let (x, y) = acc[*i].expect("a pending sum has started");
                        let lambda = (t.y() - y) * inv;
                        let x3 = lambda.square() - x - t.x();
                        acc[*i] = Some((x3, lambda * (x - x3) - y));
                    }
                }
                acc.into_iter()
                    .map(|a| a.map_or_else(<$affine>::identity, |(x, y)| <$affine>::from_raw_unchecked(x, y, false)))
                    .collect()
            }

            /// k·base for every k of `ks`, affine: projective sums normalised together (what
            /// `products` replaced; the tests compare the two).
            #[cfg(test)]
            fn products_projective(&self, ks: &[Fr]) -> Vec<$affine> {
                let points: Vec<$proj> = ks.iter().map(|k| self.mul(k)).collect();
                let mut affine = vec![<$affine>::identity(); points.len()];
                <$proj>::batch_normalize(&points, &mut affine);
                affine
            }

            /// k·base for every k (skipping zero scalars when `skip_zero`), affine and
            /// uncompressed as bellperson writes them, in parallel.
            pub(crate) fn bytes(&self, scalars: &[Fr], skip_zero: bool) -> Vec<u8> {
                let parts: Vec<Vec<u8>> = scalars
                    .par_chunks(1 << 12)
                    .map(|ks| {
                        let kept: Vec<Fr>;
                        let ks = if skip_zero {
                            kept = ks.iter().filter(|k| !bool::from(k.is_zero())).copied().collect();
                            &kept[..]
                        } else {
                            ks
                        };
                        let affine = self.products(ks);
                        let mut bytes = Vec::with_capacity(
                            affine.len()
                                * std::mem::size_of::<<$affine as group::UncompressedEncoding>::Uncompressed>(),
                        );
                        for p in &affine {
                            bytes.extend_from_slice(group::UncompressedEncoding::to_uncompressed(p).as_ref());
                        }
                        bytes
                    })
                    .collect();
                parts.concat()
            }
        }
    };
}

comb!(CombG1, G1Projective, G1Affine, Fp);
comb!(CombG2, G2Projective, G2Affine, Fp2);

/// Every element replaced by its inverse (none may be zero), with one field inversion.
fn invert_all<F: Field>(v: &mut [F]) {
    let mut prefix = Vec::with_capacity(v.len());
    let mut running = F::ONE;
    for x in v.iter() {
        prefix.push(running);
        running *= x;
    }
    let mut inv = running.invert().expect("no element is zero");
    for (x, before) in v.iter_mut().zip(prefix).rev() {
        let this = inv * before;
        inv *= *x;
        *x = this;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn batch_affine_products_equal_the_projective_ones_in_g1_and_g2() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut ks: Vec<Fr> = (0..300).map(|_| Fr::random(&mut rng)).collect();
        ks.extend([Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(256), Fr::from(65_536), Fr::from(u64::MAX)]);
        let base = G1Projective::generator() * Fr::from(7);
        let base2 = G2Projective::generator() * Fr::from(5);
        for digits in [Digits::Bits8, Digits::Bits16] {
            let comb = CombG1::new(base, digits);
            let batch = comb.products(&ks);
            assert_eq!(batch, comb.products_projective(&ks), "{digits:?}");
            assert_eq!(batch[300], G1Affine::identity());
            assert_eq!(G1Projective::from(batch[305]), base * Fr::from(u64::MAX));
            let comb2 = CombG2::new(base2, digits);
            let batch2 = comb2.products(&ks[290..]);
            assert_eq!(batch2, comb2.products_projective(&ks[290..]), "G2 {digits:?}");
            assert_eq!(G2Projective::from(batch2[12]), base2 * -Fr::ONE);
        }
    }
}
