//! Filecoin proof kinds as snarkflow partition circuits, on filecoin-proofs 19.1.
//!
//! One module per kind: [`porep`], [`snap`], and [`post`] (WindowPoSt and WinningPoSt share
//! one construction). Each parses and checks what a client sends (a Curio/lotus-bench C1
//! envelope, vanilla PoSt or SnapDeals proofs) into a canonical input stored with the
//! job; rebuilds partition k's circuit from it exactly as filecoin-proofs builds it inside
//! `seal_commit_phase2` and friends; builds the blank circuit (parameter generation, constraint
//! shapes); derives public inputs; names the parameter files; and verifies the assembled proof
//! (the partition proofs concatenated in order, the bytes `seal_commit_phase2` returns) with
//! filecoin-proofs' verifiers. `snarkflow-circuits` registers them as proof kinds.
//!
//! Every published sector size (2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB) goes through the same
//! code; the sector shape is a type parameter chosen at run time.
//!
//! No NATS, HTTP or tokio here.
//!
//! Module map:
//! - [`porep`] (with `porep/c1.rs`: the wrappings a C1 arrives in, the Curio/lotus-bench
//!   envelope or a raw C1), [`snap`], [`post`]: for each construction, request parsing into a
//!   [`Parsed`] (the spec — [`PorepSpec`] or the sector size — and the kind's input), partition
//!   and blank circuits for every sector shape (PoRep's and PoSt's constraint shapes recorded
//!   from two challenges or sectors and copied), public inputs, verification, parameter names,
//!   and the native witness (`porep::native_witness`, `snap::native_witness`,
//!   `PostKind::native_witness`).
//! - `request.rs`: [`FilecoinRequest`], an input whose fields are already binary, as cuzk's gRPC
//!   carries them, checked by the same `porep::parse_envelope`, `snap::checked` and
//!   `PostKind::checked` the JSON parsers end in, into a [`CheckedRequest`].
//! - `native/`: the PoRep, SnapDeals and PoSt witnesses without a constraint system:
//!   `StackedCircuit`'s, `EmptySectorUpdateCircuit`'s (`native/snap.rs`) and
//!   `FallbackPoStCircuit`'s allocations mirrored on `snarkflow_synthesis::native`
//!   (`native/merkle.rs`: Merkle paths and bit packing), challenges (PoSt: sectors) in parallel,
//!   each written into its place. Equal to the gadgets' by `tests/native/porep.rs`,
//!   `tests/native/snap.rs` and `tests/native/post.rs`.
//! - `verify.rs`: each partition proof checked before filecoin-proofs' whole-proof verifier;
//!   [`VerifyFailure`] names the partitions that fail.
//! - [`manifest`]: the parameter files filecoin-proofs publishes, and their digests.
//! - [`stock`]: filecoin-proofs' own `seal_commit_phase2` in-process, for comparison.
//! - [`sparse`], [`sparse_post`], [`sparse_snap`] (on `sparse_tree.rs`): PoRep C1 outputs,
//!   PoSt vanilla proofs and SnapDeals partition proofs of any sector size without sealing,
//!   for tests and benchmarks: CC sectors with empty unopened subtrees, or
//!   (`SectorData::Random`, PoRep and PoSt) random data and random subtrees, whose witnesses
//!   repeat values as sealed sectors' do; an update of an empty replica with constant data.
//! - `fixtures` (feature `fixtures`): real sectors sealed with filecoin-proofs, and what a
//!   storage node would send for them; `random_snap` (same feature): SnapDeals partition
//!   circuits of any size with random contents.
//! - `fields.rs`: reading a request's `input` fields, with errors that name the field.
//!   `sector_shape.rs`: the sector shape type parameter, chosen at run time from the size.

#[macro_use]
mod sector_shape;
mod fields;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod manifest;
mod native;
pub mod porep;
pub mod post;
#[cfg(feature = "fixtures")]
pub mod random_snap;
mod request;
pub mod snap;
pub mod sparse;
pub mod sparse_post;
pub mod sparse_snap;
mod sparse_tree;
pub mod stock;
mod verify;

pub use fields::prover_id;
pub use porep::{PorepInput, PorepSpec};
pub use post::{PostInput, PostKind};
pub use request::{CheckedRequest, FilecoinRequest};
pub use snap::SnapInput;
pub use verify::VerifyFailure;

/// A request of one kind that passed every check: its circuit (PoRep: [`PorepSpec`]; the other
/// kinds: the sector size), its partitions and its canonical input.
#[derive(Debug, Clone)]
pub struct Parsed<S, I> {
    pub spec: S,
    pub partitions: u32,
    pub input: I,
}

/// The `.meta` file filecoin-proofs writes next to parameters it generates.
pub fn param_metadata_json(sector_size: u64) -> String {
    serde_json::json!({ "sector_size": sector_size }).to_string()
}

/// The directory filecoin-proofs' own lookups use (`verify_seal` and friends read
/// `FIL_PROOFS_PARAMETER_CACHE` once, at first use).
pub fn parameter_dir_in_use() -> &'static str {
    &storage_proofs_core::settings::SETTINGS.parameter_cache
}

/// Check that filecoin-proofs looks for parameters in `dir` (processes set
/// `FIL_PROOFS_PARAMETER_CACHE` in `main`, before any thread exists).
pub fn check_parameter_dir(dir: &std::path::Path) -> Result<(), FilecoinError> {
    let wanted = dir.to_string_lossy();
    let settled = parameter_dir_in_use();
    if settled.trim_end_matches('/') != wanted.trim_end_matches('/') {
        return Err(FilecoinError::new(format!("filecoin-proofs uses parameter directory {settled}, not {wanted}")));
    }
    Ok(())
}

/// A problem with a Filecoin job, in words meant for the client that sent it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FilecoinError(pub String);

impl FilecoinError {
    pub fn new(msg: impl Into<String>) -> Self {
        FilecoinError(msg.into())
    }
}

impl From<anyhow::Error> for FilecoinError {
    fn from(e: anyhow::Error) -> Self {
        FilecoinError(format!("{e:#}"))
    }
}
