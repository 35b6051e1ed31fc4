//! Comb tables for fixed-base products k·G: d·2^(bits·w)·G for every digit position w and
//! digit value d, built once per base, so that k·G is at most one mixed addition per digit and
//! no doublings (32 with byte digits, 16 with 16-bit digits) instead of ~256 doublings and ~50
//! additions with wNAF. Parameter generation is almost all such products.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
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
}

/// A comb table: d·2^(bits·w)·base for every window w and non-zero digit d, affine, so that
/// k·base is the sum of one entry per non-zero digit of k. (A macro rather than a generic:
/// blstrs' mixed addition impls do not resolve through the `group` traits' associated types.)
macro_rules! comb {
    ($name:ident, $proj:ty, $affine:ty) => {
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

            pub(crate) fn mul(&self, k: &Fr) -> $proj {
                let repr = k.to_repr();
                let mut acc = <$proj>::identity();
                let entries = self.digits.entries();
                for (w, digit) in repr.as_ref().chunks_exact(self.digits.bytes()).enumerate() {
                    let d = digit.iter().rev().fold(0usize, |d, &byte| d << 8 | byte as usize);
                    if d != 0 {
                        acc += &self.table[w * entries + d - 1];
                    }
                }
                acc
            }

            /// k·base for every k (skipping zero scalars when `skip_zero`), affine and
            /// uncompressed as bellperson writes them, in parallel.
            pub(crate) fn bytes(&self, scalars: &[Fr], skip_zero: bool) -> Vec<u8> {
                let parts: Vec<Vec<u8>> = scalars
                    .par_chunks(1 << 12)
                    .map(|ks| {
                        let points: Vec<$proj> = ks
                            .iter()
                            .filter(|k| !(skip_zero && bool::from(k.is_zero())))
                            .map(|k| self.mul(k))
                            .collect();
                        let mut affine = vec![<$affine>::identity(); points.len()];
                        <$proj>::batch_normalize(&points, &mut affine);
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

comb!(CombG1, G1Projective, G1Affine);
comb!(CombG2, G2Projective, G2Affine);
