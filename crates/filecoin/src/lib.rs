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
