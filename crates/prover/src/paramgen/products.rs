//! k·G for the scalars of one piece, on the device chosen, in G1 or G2.

use bellperson::SynthesisError;
use blstrs::{G1Projective, G2Projective, Scalar as Fr};
#[cfg(feature = "cuda-resident")]
use ff::Field;
#[cfg(feature = "cuda-resident")]
use rayon::prelude::*;

use super::pieces::Piece;
#[cfg(feature = "cuda-resident")]
use super::pieces::PinnedPool;
use super::ParamDevice;
use crate::comb::{CombG1, CombG2, Digits};

/// The comb tables of the two generators and where the products run.
pub(super) struct Products<'a> {
    device: &'a ParamDevice,
    pub(super) g1: CombG1,
    g2: CombG2,
    /// The device's tables (byte digits) when the CPU's have other digits.
    #[cfg(feature = "cuda-resident")]
    gpu_tables: Option<(CombG1, CombG2)>,
    /// The device writes its points into pinned buffers, reused piece after piece.
    #[cfg(feature = "cuda-resident")]
    pool: std::sync::Arc<PinnedPool>,
}

impl<'a> Products<'a> {
    /// Tables for `g1` and `g2` with `digits`, or for `points` products: the device's tables
    /// have byte digits; the CPU takes 16-bit ones once there are enough points to repay them
    /// (a million G2 points to build).
    pub(super) fn new(
        device: &'a ParamDevice,
        (g1, g2): (G1Projective, G2Projective),
        digits: Option<Digits>,
        points: usize,
    ) -> Self {
        let digits = digits.unwrap_or(match device {
            ParamDevice::Cpu => Digits::for_points(points),
            #[cfg(feature = "cuda-resident")]
            ParamDevice::Gpu(_) => Digits::Bits8,
        });
        let (t1, t2) = rayon::join(|| CombG1::new(g1, digits), || CombG2::new(g2, digits));
        #[cfg(feature = "cuda-resident")]
        let gpu_tables = match device {
            ParamDevice::Gpu(_) if digits != Digits::Bits8 => {
                Some((CombG1::new(g1, Digits::Bits8), CombG2::new(g2, Digits::Bits8)))
            }
            _ => None,
        };
        Products {
            device,
            g1: t1,
            g2: t2,
            #[cfg(feature = "cuda-resident")]
            gpu_tables,
            #[cfg(feature = "cuda-resident")]
            pool: std::sync::Arc::new(PinnedPool::default()),
        }
    }

    /// k·G for each scalar of `ks` (the zero ones dropped when `skip_zero`), in G1 or G2, as
    /// the file's bytes.
    pub(super) fn points(&self, ks: &[Fr], skip_zero: bool, in_g2: bool) -> Result<Piece, SynthesisError> {
        match self.device {
            ParamDevice::Cpu if in_g2 => Ok(Piece::Bytes(self.g2.bytes(ks, skip_zero))),
            ParamDevice::Cpu => Ok(Piece::Bytes(self.g1.bytes(ks, skip_zero))),
            #[cfg(feature = "cuda-resident")]
            ParamDevice::Gpu(d) => {
                let kept: Vec<Fr>;
                let ks = if skip_zero {
                    kept = ks.par_iter().filter(|k| !bool::from(k.is_zero())).copied().collect();
                    &kept[..]
                } else {
                    ks
                };
                let (t1, t2) =
                    self.gpu_tables.as_ref().map_or((&self.g1.table, &self.g2.table), |(a, b)| (&a.table, &b.table));
                let len = ks.len() * if in_g2 { 192 } else { 96 };
                let mut buffer = self.pool.take(len)?;
                let out = &mut buffer.as_mut_slice()[..len];
                if in_g2 {
                    snarkflow_cuda_resident::fixed_base_g2_into(d, t2, ks, out)
                } else {
                    snarkflow_cuda_resident::fixed_base_g1_into(d, t1, ks, out)
                }
                .map_err(|e| SynthesisError::IoError(std::io::Error::other(e.to_string())))?;
                Ok(Piece::Pinned { buffer: Some(buffer), len, pool: self.pool.clone() })
            }
        }
    }
}
