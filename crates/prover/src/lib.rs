//! The prover half of snarkflow: turn a [`SynthesizedPartition`] into a Groth16 proof with
//! bellperson's FFT and multi-exponentiation (CPU, or its CUDA kernels with the `cuda`
//! feature), verify it, and keep Groth16 parameters on disk and in memory.
//!
//! Given the same `r` and `s`, [`prove`] returns exactly the proof bellperson's own
//! `create_proof_batch` returns for the same circuit (tested), so synthesis may run anywhere.
//! No NATS, HTTP or tokio here.

pub mod device;
mod groth16;
mod paramgen;
mod params;
mod self_test;
#[cfg(feature = "cuda-supraseal")]
pub mod supraseal;

pub use groth16::{prove, prove_with_rng, verify, ProveError};
pub use paramgen::{generate_from_shape, generate_random, write_from_shape, ToxicWaste};
pub use params::{LoadedParams, ParamStore, ParamsError};

/// Size of one compressed BLS12-381 Groth16 proof.
pub const PROOF_BYTES: usize = 192;

/// Name of the backend this build proves with, for readiness, metrics and span attributes.
pub const BACKEND: &str = if cfg!(feature = "cuda-supraseal") {
    "cuda-supraseal"
} else if cfg!(feature = "cuda") {
    "cuda"
} else {
    "cpu"
};
