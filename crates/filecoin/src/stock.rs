//! The stock path, for side-by-side comparison: filecoin-proofs' own `seal_commit_phase2`
//! in-process (synthesis of every partition, then bellperson's prover), as Curio runs it.

use std::time::Instant;

use crate::FilecoinError;
use crate::PorepInput;

/// What one stock C2 took.
#[derive(Debug, Clone)]
pub struct StockRun {
    pub proof: Vec<u8>,
    pub seconds: f64,
}

/// Run `seal_commit_phase2` on a checked PoRep input (parameters from
/// `FIL_PROOFS_PARAMETER_CACHE`; it verifies its own result before returning).
pub fn seal_commit_phase2(input: &PorepInput) -> Result<StockRun, FilecoinError> {
    let started = Instant::now();
    let out = filecoin_proofs_api::seal::seal_commit_phase2(
        input.c1.clone(),
        input.prover_id,
        filecoin_proofs_api::SectorId::from(input.sector_id),
    )?;
    Ok(StockRun { proof: out.proof, seconds: started.elapsed().as_secs_f64() })
}
