//! The prover half of snarkflow: turn a `SynthesizedPartition` into a Groth16 proof on the
//! backend this build has (bellperson's FFT and multi-exponentiation on the CPU or on its CUDA
//! kernels, supraseal-c2, or our GPU-resident prover), verify it, and keep Groth16 parameters
//! on disk and in memory.
//!
//! Given the same `r` and `s`, [`prove`] returns exactly the proof bellperson's own
//! `create_proof_batch` returns for the same circuit (tested), so synthesis may run anywhere.
//! No NATS, HTTP or tokio here, and no proof kind: parameter files are named through a
//! `CircuitCatalog` value.
//!
//! Module map:
//! - `groth16.rs`: [`prove`] and [`verify`], step for step as bellperson's prover. With the
//!   `cuda` feature it runs on bellperson's ec-gpu-gen kernels, where a kernel failure is an
//!   error (never a silent CPU fallback); without it the multi-scalar multiplications are
//!   `cpu_msm.rs`'s (blst's Pippenger) and the FFTs `fft_cpu.rs`'s.
//! - `supraseal.rs` (feature `cuda-supraseal`): supraseal-c2's prover, the parameter file
//!   loaded once as its SRS.
//! - `resident.rs` (feature `cuda-resident`): the resident prover's host half. It streams a
//!   parameter file to the device in the key's memory plan, stages witnesses there (before the
//!   gpu-worker's device gate; in the compact form of [`compact_witness`]: 2 bits a value and
//!   the values that are neither 0 nor 1) and proves them; `resident/upload.rs` streams a key's
//!   points and shape to the device when it loads. [`memory_plan`]: which plan (resident, partly
//!   resident, streamed) fits a device's free memory, arithmetic only.
//! - [`backend`]: which backends a build has and which one runs. [`compat`]: whether a build's
//!   kernels run on a device under its driver, and what is missing if not.
//! - `params.rs`: [`ParamStore`], the parameters on disk and loaded, named through a
//!   `CircuitCatalog`; a [`FileCheck`] runs before a file is first loaded; generated files get
//!   their recorded shape beside them; random Filecoin files are marked, and never written
//!   beside unmarked (trusted-setup) ones.
//! - `loaded.rs`: one circuit's parameters loaded for this process's backend: the resident key
//!   in its memory plan or, where none fits, supraseal-c2's SRS (when the build has it).
//! - `param_file.rs`: a parameter file's section table, and the check of a partition against
//!   it before any backend sees both.
//! - `paramgen.rs`: random parameters from a recorded shape, byte-identical to bellperson's
//!   `generate_parameters` for the same toxic waste, on the fixed-base comb tables of `comb.rs`
//!   and the closed-form Lagrange basis at τ of `lagrange.rs`; each section written as it is
//!   made. `paramgen/pieces.rs`: a section a piece at a time, the next piece made while the
//!   last is written, with per-step timing; on the GPU the points land in pooled pinned
//!   buffers.
//! - [`device`]: the device probe (the driver's device list and a verified self-test proof on
//!   this build's backend); `self_test.rs`: the probe's own circuit.

pub mod backend;
mod comb;
pub mod compact_witness;
pub mod compat;
#[cfg(not(feature = "cuda"))]
mod cpu_msm;
pub mod device;
#[cfg(not(feature = "cuda"))]
mod fft_cpu;
mod groth16;
mod lagrange;
mod loaded;
pub mod memory_plan;
mod param_file;
mod paramgen;
mod params;
#[cfg(feature = "cuda-resident")]
pub mod resident;
mod self_test;
#[cfg(feature = "cuda-supraseal")]
pub mod supraseal;

pub use groth16::{prove, prove_with_rng, verify, ProveError};
pub use loaded::{StageWireError, StagedWitness};
pub use param_file::{read_sections, FileSections};
pub use paramgen::{
    generate_from_shape, generate_random, write_from_shape, write_from_shape_on, ParamDevice, ToxicWaste,
};
pub use params::{FileCheck, FileRefused, LoadedParams, ParamStore, ParamsError};

/// Size of one compressed BLS12-381 Groth16 proof.
pub const PROOF_BYTES: usize = 192;

pub use backend::Backend;
pub use blstrs::Scalar as Fr;

/// Name of the backend this process proves with, for readiness, metrics and span attributes.
pub fn backend_name() -> &'static str {
    backend::active().name()
}

/// Whether `SNARKFLOW_PROVE_LANES=2` asks for a second prove lane (opt-in, being measured).
pub(crate) fn second_lane_asked() -> bool {
    std::env::var("SNARKFLOW_PROVE_LANES").is_ok_and(|v| v.trim() == "2")
}

/// Whether the resident prover stores a shape's repeated blocks once on the device: yes unless
/// `SNARKFLOW_FOLD_SHAPE=0` (for measuring against the whole matrices).
#[cfg(feature = "cuda-resident")]
pub(crate) fn fold_shapes() -> bool {
    !std::env::var("SNARKFLOW_FOLD_SHAPE").is_ok_and(|v| v.trim() == "0")
}

/// Partitions this process may prove at once on its GPU: 2 where `SNARKFLOW_PROVE_LANES=2`
/// asks for a second prove lane and the backend is the resident prover (each key still takes
/// it only where its memory plan leaves room: `resident::ResidentKey::lanes`), else 1.
pub fn prove_lanes() -> usize {
    if second_lane_asked() && backend_name() == "cuda-resident" {
        2
    } else {
        1
    }
}
