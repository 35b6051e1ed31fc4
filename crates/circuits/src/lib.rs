//! Every proof kind snarkflow proves, one module each, behind one trait ([`ProofKind`]):
//! parsing a request's input, the circuit for partition k (and the blank one), public
//! inputs, verification of the assembled proof, the parameter file name and the default
//! priority. A kind's methods see only its own typed spec and input ([`ProofKind::Spec`],
//! [`ProofKind::Input`]; the synthetic kinds' input is the job's [`Seed`]). The registry
//! ([`parse_request`], [`visit_blank`], [`visit_with_witness`], ...) is the one place that
//! maps a [`snarkflow_wire::JobKind`] to its module, reads the untyped [`snarkflow_wire::CircuitSpec`]
//! and [`JobInput`] once for it, and is the only list of kinds.
//!
//! Module map: `kind.rs` (the trait, [`ParsedRequest`], spec helpers); `registry.rs` (the
//! `registry!` list and every dispatching function; also [`JobInput::from_bytes`]);
//! `input.rs` ([`JobInput`] and its stored form, which names no kind); `catalog.rs` (the
//! kinds as a parameter store sees them); `kinds/` (one module per kind; `post.rs` is what
//! the two PoSt kinds share, `cube.rs` the example kind behind the `example-kind` feature).
//!
//! The synthetic kinds (`sha256-chain`, `dense-chain`) are bellperson circuits defined here;
//! the Filecoin kinds build filecoin-proofs' own circuits through `snarkflow-filecoin`.
//! This crate knows nothing of NATS, HTTP or tokio.

mod catalog;
mod input;
mod kind;
mod kinds;
mod registry;

pub use catalog::{catalog, Catalog};
pub use input::JobInput;
pub use kind::{circuit_id, circuit_spec, input_of, spec_of, KindError, ParsedRequest, ProofKind, Seed};
pub use kinds::dense_chain::{DenseChain, MAX_CONSTRAINTS as MAX_DENSE_CONSTRAINTS};
/// The Filecoin kinds, for what maps other software's names onto them (the cuzk interface).
pub mod filecoin_kinds {
    pub use crate::kinds::porep::Porep;
    pub use crate::kinds::snap::Snap;
    pub use crate::kinds::window_post::WindowPost;
    pub use crate::kinds::winning_post::WinningPost;
}
pub use kinds::sha256_chain::{Sha256Chain, MAX_BLOCKS as MAX_SHA256_BLOCKS};
pub use registry::{
    check_spec, circuit, dense_witness, documented_kinds, filecoin_request_kind, filecoin_sector_size, kind_info,
    kind_named, known_kind, native_witness, param_file_stem, parse_circuit_id, parse_filecoin_request, parse_request,
    public_inputs, record_shape, takes_input, test_constraints, text_fields, verified_whole, verify_job, visit_blank,
    visit_with_witness, KindInfo, KINDS,
};
pub use snarkflow_filecoin::{FilecoinRequest, VerifyFailure};

/// Deterministic per-partition randomness: the witness of partition `p` of job seed `s` is the
/// same on every synth-worker, so a redelivered partition re-synthesizes identically.
pub(crate) fn partition_rng(seed: u64, partition: u32) -> rand_chacha::ChaCha20Rng {
    use rand::SeedableRng;
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..12].copy_from_slice(&partition.to_le_bytes());
    key[12..].copy_from_slice(b"snarkflow-partition-");
    rand_chacha::ChaCha20Rng::from_seed(key)
}
