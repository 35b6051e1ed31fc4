//! Filecoin proof kinds as snarkflow partition circuits, on filecoin-proofs 19.1.
//!
//! What a client sends (a Curio/lotus-bench C1 envelope, vanilla PoSt or SnapDeals proofs) is
//! parsed and checked once by the gateway ([`parse_request`]) into a canonical [`JobInput`],
//! stored with the job. Each partition's circuit is then rebuilt from that input by any
//! synth-worker ([`visit_partition`]) exactly as filecoin-proofs builds it inside
//! `seal_commit_phase2` and friends; the blank circuit of the same shape drives parameter
//! generation and the constraint shape ([`visit_blank`]). The assembled proof — the partition
//! proofs concatenated in order, the bytes `seal_commit_phase2` returns — is checked with
//! filecoin-proofs' verifiers before a job is done ([`verify_job`]).
//!
//! Every published sector size (2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB) goes through the same
//! code; the sector shape is a type parameter chosen at run time.
//!
//! No NATS, HTTP or tokio here.

pub mod fixtures;
mod input;
mod kinds;
mod params;
pub mod stock;

pub use input::{parse_request, prover_id, JobInput, ParsedJob, PorepInput, PostInput, SnapInput};
pub use kinds::{partition_public_inputs, verify_job, visit_blank, visit_partition, VerifyFailure};
pub use params::{param_file_stem, param_metadata_json, registered_seal_proof};

/// Point filecoin-proofs at `dir` for its own parameter lookups (`verify_seal` and friends
/// read `FIL_PROOFS_PARAMETER_CACHE` once, at first use). Call early in `main`, before any
/// other thread exists; fails if filecoin-proofs already settled on another directory.
pub fn use_parameter_dir(dir: &std::path::Path) -> Result<(), FilecoinError> {
    let wanted = dir.to_string_lossy().into_owned();
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &wanted);
    let settled = &storage_proofs_core::settings::SETTINGS.parameter_cache;
    if settled.trim_end_matches('/') != wanted.trim_end_matches('/') {
        return Err(FilecoinError::new(format!(
            "filecoin-proofs already uses parameter directory {settled}, not {wanted}"
        )));
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
