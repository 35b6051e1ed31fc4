//! The prover half of snarkflow: turn a [`SynthesizedPartition`] into a Groth16 proof with
//! bellperson's FFT and multi-exponentiation (CPU, or its CUDA kernels with the `cuda`
//! feature), verify it, and keep Groth16 parameters on disk and in memory.
//!
//! Given the same `r` and `s`, [`prove`] returns exactly the proof bellperson's own
//! `create_proof_batch` returns for the same circuit (tested), so synthesis may run anywhere.
//! No NATS, HTTP or tokio here.

pub mod backend;
mod comb;
pub mod compat;
pub mod device;
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
pub use loaded::StagedWitness;
pub use param_file::{read_sections, FileSections};
pub use paramgen::{
    generate_from_shape, generate_random, write_from_shape, write_from_shape_on, ParamDevice, ToxicWaste,
};
pub use params::{FileCheck, LoadedParams, ParamStore, ParamsError};

/// Size of one compressed BLS12-381 Groth16 proof.
pub const PROOF_BYTES: usize = 192;

pub use backend::Backend;
pub use blstrs::Scalar as Fr;

/// Name of the backend this process proves with, for readiness, metrics and span attributes.
pub fn backend_name() -> &'static str {
    backend::active().name()
}
