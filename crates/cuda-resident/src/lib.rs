//! The device half of snarkflow's GPU-resident Groth16 prover (`cuda/resident.cu`, our code on
//! sppark's BLS12-381 field, NTT and MSM templates).
//!
//! A circuit's parameters (`Srs`) and constraint shape (`Shape`) are uploaded once and stay
//! in device memory; a proof then costs one witness upload (`DeviceWitness`, made while the
//! partition before proves) and device work only: a, b, c by
//! sparse matrix-vector products, the quotient h by seven NTTs, and the five multi-
//! exponentiations against resident points (`msm_sums`). The caller adds r and s (a few point
//! operations) to get the proof; `snarkflow-prover` does that and checks the proof.
//!
//! This crate is only the boundary: it knows raw arrays and blstrs types, not parameter files,
//! circuits or partitions. Without the `cuda` feature it is empty (no CUDA toolkit needed).
//!
//! Module map:
//! - `cuda/resident.cu`: the one translation unit, with the device and prove entry points. It
//!   includes `device_types.cuh` (errors, device buffers and the types handed out; it includes
//!   `msm_one_pass.cuh`, our one-pass MSM driver over sppark's digit and sort kernels, for H and
//!   the tails, which includes `msm_segments.cuh`, the bucket accumulation in equal segments),
//!   `spmv.cuh` (a, b = A·w, B·w: a warp per 32 rows), `kernels.cuh` (our
//!   kernels), `resident_data.cuh` (the witness, parameter and shape entry points),
//!   `queries.cuh` (a query's MSMs beside the NTTs, with the split of its 0/1 scalars) and
//!   `fixed_base.cuh` (random parameters on the device).
//! - `src/ffi.rs`: the C ABI of `resident.cu`.
//! - `src/device.rs`: the safe owners: `Device`, `Srs`, `Shape`, and `msm_sums`, the call that
//!   proves. `src/witness.rs`: `PinnedBuffer`, a witness's compact form in one
//!   (`CompactLayout`), and `DeviceWitness`, uploaded whole or expanded from the compact form. A `Placement` puts any point section
//!   and the matrices in pinned host memory instead, which a prove then streams or reads in
//!   place.
//! - `src/fixed_base.rs`: random parameters' points computed on the device.
//! - `build.rs`: compiles `cuda/` with nvcc and records the architectures and toolkit it
//!   compiled for ([`ARCHS_BUILT`], [`PTX_ARCH`], [`TOOLKIT_BUILT`]).

#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod ffi;
#[cfg(feature = "cuda")]
mod fixed_base;
#[cfg(feature = "cuda")]
mod placement;
#[cfg(feature = "cuda")]
mod witness;

/// The SASS architectures this build's kernels were compiled for ("80 86 89 90 100 120"; empty
/// without the `cuda` feature), set by build.rs.
pub const ARCHS_BUILT: &str = env!("SNARKFLOW_CUDA_ARCHS_BUILT");
/// The architecture of the PTX embedded beside them, for the driver to JIT on newer devices.
pub const PTX_ARCH: &str = env!("SNARKFLOW_CUDA_PTX_ARCH");
/// The CUDA toolkit the kernels were built with (`major.minor`).
pub const TOOLKIT_BUILT: &str = env!("SNARKFLOW_CUDA_TOOLKIT_BUILT");

#[cfg(feature = "cuda")]
pub use device::{driver_version, msm_sums, Csr, Device, RowFold, Shape, ShapeDesc, Srs, Sums, Timings};
#[cfg(feature = "cuda")]
pub use fixed_base::{fixed_base_g1, fixed_base_g1_into, fixed_base_g2, fixed_base_g2_into, COMB_ENTRIES};
#[cfg(feature = "cuda")]
pub use placement::{Placement, Section};
#[cfg(feature = "cuda")]
pub use witness::{CompactLayout, CompactParts, DeviceWitness, PinnedBuffer};

/// A CUDA failure, with the message the device code gave.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (CUDA code {code})")]
pub struct Error {
    pub code: i32,
    pub message: String,
}
