//! Checking a job's partition proofs one by one, before filecoin-proofs' whole-proof verifier.

use std::path::Path;

use bellperson::groth16::{self, prepare_verifying_key, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};

/// Why an assembled proof was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct VerifyFailure {
    /// Partitions whose proof did not verify (empty when the failure is not a partition's).
    pub partitions: Vec<u32>,
    pub message: String,
}

impl VerifyFailure {
    pub fn whole(message: impl Into<String>) -> Self {
        VerifyFailure { partitions: vec![], message: message.into() }
    }
}

/// Check every partition proof against its public inputs with the verifying key
/// `<params_dir>/<stem>.vk`, naming the partitions that fail.
pub(crate) fn verify_partitions(
    params_dir: &Path,
    stem: &str,
    inputs: &[Vec<Fr>],
    partition_proofs: &[Vec<u8>],
) -> Result<(), VerifyFailure> {
    let vk_path = params_dir.join(format!("{stem}.vk"));
    let vk = std::fs::File::open(&vk_path)
        .and_then(|f| VerifyingKey::<Bls12>::read(std::io::BufReader::new(f)))
        .map_err(|e| VerifyFailure::whole(format!("verifying key {} unreadable: {e}", vk_path.display())))?;
    let pvk = prepare_verifying_key(&vk);
    if inputs.len() != partition_proofs.len() {
        return Err(VerifyFailure::whole(format!(
            "{} partition proofs for {} partitions",
            partition_proofs.len(),
            inputs.len()
        )));
    }
    let mut bad = Vec::new();
    for (k, (proof, inputs)) in partition_proofs.iter().zip(inputs).enumerate() {
        let ok = Proof::<Bls12>::read(&proof[..])
            .ok()
            .and_then(|p| groth16::verify_proof(&pvk, &p, inputs).ok())
            .unwrap_or(false);
        if !ok {
            bad.push(k as u32);
        }
    }
    if !bad.is_empty() {
        let list: Vec<String> = bad.iter().map(u32::to_string).collect();
        return Err(VerifyFailure {
            message: format!("partition proof(s) {} failed verification", list.join(", ")),
            partitions: bad,
        });
    }
    Ok(())
}

/// filecoin-proofs' whole-proof verdict, as a [`VerifyFailure`] when it is not a yes.
pub(crate) fn verdict(verdict: anyhow::Result<bool>) -> Result<(), VerifyFailure> {
    match verdict {
        Ok(true) => Ok(()),
        Ok(false) => Err(VerifyFailure::whole("filecoin-proofs rejected the assembled proof")),
        Err(e) => Err(VerifyFailure::whole(format!("filecoin-proofs could not verify the proof: {e:#}"))),
    }
}
