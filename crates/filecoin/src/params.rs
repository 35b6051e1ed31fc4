//! Which registered proof a circuit spec is, and the names of its parameter files in a
//! `FIL_PROOFS_PARAMETER_CACHE` directory (`v28-<circuit identifier>.params`, `.vk`, `.meta`).

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof};
use snarkflow_wire::{sector_size_name, CircuitSpec};

use crate::FilecoinError;

fn by_name<T: serde::de::DeserializeOwned>(name: String) -> Result<T, FilecoinError> {
    serde_json::from_value(serde_json::Value::String(name.clone()))
        .map_err(|_| FilecoinError::new(format!("filecoin-proofs has no registered proof {name}")))
}

fn size_name(spec: &CircuitSpec) -> Result<&'static str, FilecoinError> {
    let bytes = spec.sector_size().ok_or_else(|| FilecoinError::new(format!("{spec:?} is not a Filecoin circuit")))?;
    sector_size_name(bytes).ok_or_else(|| FilecoinError::new(format!("{bytes} bytes is not a Filecoin sector size")))
}

/// The PoRep registered proof of a `porep-c2` or `snap-update` spec (SnapDeals parameters are
/// keyed by the sector's seal proof too).
pub fn registered_seal_proof(spec: &CircuitSpec) -> Result<RegisteredSealProof, FilecoinError> {
    let size = size_name(spec)?;
    match spec {
        CircuitSpec::PorepC2 { synthetic: true, .. } => by_name(format!("StackedDrg{size}V1_1_Feat_SyntheticPoRep")),
        CircuitSpec::PorepC2 { .. } | CircuitSpec::SnapUpdate { .. } => by_name(format!("StackedDrg{size}V1_1")),
        _ => Err(FilecoinError::new(format!("{} has no seal proof", spec.circuit_id()))),
    }
}

pub(crate) fn registered_post_proof(spec: &CircuitSpec) -> Result<RegisteredPoStProof, FilecoinError> {
    let size = size_name(spec)?;
    match spec {
        CircuitSpec::WindowPost { .. } => by_name(format!("StackedDrgWindow{size}V1_2")),
        CircuitSpec::WinningPost { .. } => by_name(format!("StackedDrgWinning{size}V1")),
        _ => Err(FilecoinError::new(format!("{} is not a PoSt circuit", spec.circuit_id()))),
    }
}

/// filecoin-proofs' circuit identifier for `spec` (what its parameter files are named after).
pub fn circuit_identifier(spec: &CircuitSpec) -> Result<String, FilecoinError> {
    let id = match spec {
        CircuitSpec::PorepC2 { .. } => registered_seal_proof(spec)?.circuit_identifier(),
        CircuitSpec::SnapUpdate { .. } => return crate::kinds::snap_circuit_identifier(spec),
        CircuitSpec::WindowPost { .. } | CircuitSpec::WinningPost { .. } => {
            registered_post_proof(spec)?.circuit_identifier()
        }
        _ => return Err(FilecoinError::new(format!("{} is not a Filecoin circuit", spec.circuit_id()))),
    };
    Ok(id?)
}

/// `v28-<circuit identifier>`: the parameter files are this plus `.params`, `.vk`, `.meta`,
/// exactly as filecoin-proofs (and `paramfetch`) name them.
pub fn param_file_stem(spec: &CircuitSpec) -> Result<String, FilecoinError> {
    Ok(format!("v{}-{}", storage_proofs_core::parameter_cache::VERSION, circuit_identifier(spec)?))
}

/// Contents of the `.meta` file filecoin-proofs writes next to generated parameters.
pub fn param_metadata_json(spec: &CircuitSpec) -> Option<String> {
    spec.sector_size().map(|sector_size| serde_json::json!({ "sector_size": sector_size }).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_names_match_filecoin_proofs() {
        let spec = CircuitSpec::PorepC2 { sector_size: 2048, synthetic: false };
        let stem = param_file_stem(&spec).unwrap();
        let theirs = RegisteredSealProof::StackedDrg2KiBV1_1.cache_params_path().unwrap();
        assert_eq!(theirs.file_name().unwrap().to_str().unwrap(), format!("{stem}.params"));
        assert!(stem.starts_with("v28-stacked-proof-of-replication-"), "{stem}");
        let post = param_file_stem(&CircuitSpec::WinningPost { sector_size: 2048 }).unwrap();
        let theirs = RegisteredPoStProof::StackedDrgWinning2KiBV1.cache_params_path().unwrap();
        assert_eq!(theirs.file_name().unwrap().to_str().unwrap(), format!("{post}.params"));
        let snap = param_file_stem(&CircuitSpec::SnapUpdate { sector_size: 2048 }).unwrap();
        assert!(snap.starts_with("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-"), "{snap}");
        assert!(param_file_stem(&CircuitSpec::DenseChain { constraints: 4 }).is_err());
    }
}
