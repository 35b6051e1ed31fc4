//! A cuzk `SubmitProofRequest` as the HTTP API's job request: the same JSON `validate` takes,
//! so both interfaces check a job the same way and say the same things about bad input.
//! Registered proofs arrive as go-state-types ABI numbers and become filecoin-proofs-api names.

use base64::Engine as _;
use serde_json::{json, Value};
use snarkflow_wire::{sector_size_name, CircuitSpec, SECTOR_SIZES};

use super::pb::{self, ProofKind};
use crate::ApiError;

fn invalid(msg: impl Into<String>) -> ApiError {
    ApiError::Invalid(msg.into())
}

/// The request body `validate` takes for `req`, and whether it named a priority.
pub(super) fn job_body(req: &pb::SubmitProofRequest) -> Result<(Value, bool), ApiError> {
    let kind =
        ProofKind::try_from(req.proof_kind).map_err(|_| invalid(format!("unknown proof_kind {}", req.proof_kind)))?;
    let (name, input) = match kind {
        ProofKind::Unspecified => return Err(invalid("proof_kind is required")),
        ProofKind::PorepSealCommit => ("porep-c2", porep_input(req)?),
        ProofKind::SnapDealsUpdate => ("snap-update", snap_input(req)?),
        ProofKind::WindowPostPartition => ("window-post", post_input(req, true)?),
        ProofKind::WinningPost => ("winning-post", post_input(req, false)?),
    };
    let mut body = json!({ "kind": name, "input": input });
    if !req.request_id.is_empty() {
        body["idempotency_key"] = req.request_id.clone().into();
    }
    let priority =
        pb::Priority::try_from(req.priority).map_err(|_| invalid(format!("unknown priority {}", req.priority)))?;
    let priority = match priority {
        pb::Priority::Unspecified => None,
        pb::Priority::Low => Some("low"),
        pb::Priority::Normal => Some("normal"),
        pb::Priority::High => Some("high"),
        pb::Priority::Critical => Some("critical"),
    };
    if let Some(p) = priority {
        body["priority"] = p.into();
    }
    Ok((body, priority.is_some()))
}

/// `2KiB`, ... for the sector size at `index` (0..5) of an ABI number's size group.
fn size_of_abi(number: u64) -> &'static str {
    SECTOR_SIZES[(number % 5) as usize].1
}

/// What a seal proof's ABI number says: its sector size and whether it is Synthetic PoRep.
fn seal_abi(number: u64) -> Result<(u64, bool), ApiError> {
    let size = SECTOR_SIZES[(number % 5) as usize].0;
    match number / 5 {
        0 | 1 => Ok((size, false)),
        2 => Ok((size, true)),
        3 => Err(invalid(format!(
            "registered_proof {number} is a Non-Interactive PoRep proof (StackedDrg{}V1_2_Feat_NiPoRep), which snarkflow does not prove",
            size_of_abi(number)
        ))),
        _ => Err(invalid(format!("registered_proof {number} is not a seal proof (0 to 19)"))),
    }
}

/// A PoSt proof's ABI number as filecoin-proofs-api names it. The chain's WindowPoSt V1_1 is
/// filecoin-proofs' V1_2 (the grindability fix), as filecoin-ffi maps it.
fn post_name(number: u64) -> Result<String, ApiError> {
    let size = size_of_abi(number);
    match number / 5 {
        0 => Ok(format!("StackedDrgWinning{size}V1")),
        1 => Ok(format!("StackedDrgWindow{size}V1")),
        2 => Ok(format!("StackedDrgWindow{size}V1_2")),
        _ => Err(invalid(format!("registered_proof {number} is not a PoSt proof (0 to 14)"))),
    }
}

fn update_name(number: u64) -> Result<String, ApiError> {
    if number >= 5 {
        return Err(invalid(format!("registered_proof {number} is not a SnapDeals update proof (0 to 4)")));
    }
    Ok(format!("StackedDrg{}V1", size_of_abi(number)))
}

fn check_sector_size(req: &pb::SubmitProofRequest, abi_size: u64) -> Result<(), ApiError> {
    if req.sector_size != 0 && req.sector_size != abi_size {
        return Err(invalid(format!(
            "sector_size {} does not match registered_proof {} (a {} proof)",
            req.sector_size,
            req.registered_proof,
            sector_size_name(abi_size).unwrap_or("?")
        )));
    }
    Ok(())
}

fn bytes32(field: &str, bytes: &[u8]) -> Result<String, ApiError> {
    if bytes.len() != 32 {
        return Err(invalid(format!("{field} must be 32 bytes; got {}", bytes.len())));
    }
    Ok(hex::encode(bytes))
}

fn base64_list(field: &str, items: &[Vec<u8>]) -> Result<Vec<String>, ApiError> {
    if items.is_empty() {
        return Err(invalid(format!("{field} must hold at least one proof")));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(items.iter().map(|p| b64.encode(p)).collect())
}

fn porep_input(req: &pb::SubmitProofRequest) -> Result<Value, ApiError> {
    let (size, _) = seal_abi(req.registered_proof)?;
    check_sector_size(req, size)?;
    let envelope: Value = serde_json::from_slice(&req.vanilla_proof).map_err(|e| {
        invalid(format!("vanilla_proof is not the C1 envelope JSON ({{SectorNum, Phase1Out, SectorSize}}): {e}"))
    })?;
    if let Some(num) = envelope.get("SectorNum").and_then(Value::as_u64) {
        if num != req.sector_number {
            return Err(invalid(format!(
                "sector_number {} differs from the C1 envelope's SectorNum {num}",
                req.sector_number
            )));
        }
    }
    Ok(json!({ "miner_id": req.miner_id, "c1": envelope }))
}

fn snap_input(req: &pb::SubmitProofRequest) -> Result<Value, ApiError> {
    let name = update_name(req.registered_proof)?;
    check_sector_size(req, SECTOR_SIZES[(req.registered_proof % 5) as usize].0)?;
    Ok(json!({
        "registered_proof": name,
        "comm_r_old": bytes32("comm_r_old", &req.comm_r_old)?,
        "comm_r_new": bytes32("comm_r_new", &req.comm_r_new)?,
        "comm_d_new": bytes32("comm_d_new", &req.comm_d_new)?,
        "vanilla_proofs": base64_list("vanilla_proofs", &req.vanilla_proofs)?,
    }))
}

fn post_input(req: &pb::SubmitProofRequest, window: bool) -> Result<Value, ApiError> {
    let name = post_name(req.registered_proof)?;
    check_sector_size(req, SECTOR_SIZES[(req.registered_proof % 5) as usize].0)?;
    let mut input = json!({
        "registered_proof": name,
        "miner_id": req.miner_id,
        "randomness": bytes32("randomness", &req.randomness)?,
        "vanilla_proofs": base64_list("vanilla_proofs", &req.vanilla_proofs)?,
    });
    if window {
        input["partition_index"] = req.partition_index.into();
    }
    Ok(input)
}

/// A PoRep job's circuit must be the one the request's ABI number names (the C1 output
/// carries its own registered proof; a request that disagrees with it is refused).
pub(super) fn check_porep_circuit(req: &pb::SubmitProofRequest, circuit: &CircuitSpec) -> Result<(), ApiError> {
    if let CircuitSpec::PorepC2 { sector_size, synthetic } = *circuit {
        let (abi_size, abi_synthetic) = seal_abi(req.registered_proof)?;
        if (abi_size, abi_synthetic) != (sector_size, synthetic) {
            return Err(invalid(format!(
                "registered_proof {} does not match the C1 output, which is a {}{} proof",
                req.registered_proof,
                sector_size_name(sector_size).unwrap_or("?"),
                if synthetic { " Synthetic PoRep" } else { "" }
            )));
        }
    }
    Ok(())
}

/// A circuit named as cuzk names them (`porep-32g`, `wpost-32g`, `winning-32g`, `snap-64g`,
/// and the other sizes as `2k`, `8m`, `512m`) or by our own circuit id (`porep-c2-32GiB`).
pub(super) fn circuit_from_id(id: &str) -> Result<CircuitSpec, ApiError> {
    if let Some(spec) = CircuitSpec::parse_circuit_id(id) {
        return Ok(spec);
    }
    let unknown = || {
        invalid(format!(
            "unknown circuit_id {id:?}: use cuzk's (porep-32g, wpost-32g, winning-32g, snap-32g, ...) or snarkflow's (porep-c2-32GiB, ...)"
        ))
    };
    let (family, size) = id.rsplit_once('-').ok_or_else(unknown)?;
    let sector_size = match size {
        "2k" => 2 << 10,
        "8m" => 8 << 20,
        "512m" => 512 << 20,
        "32g" => 32 << 30,
        "64g" => 64 << 30,
        _ => return Err(unknown()),
    };
    match family {
        "porep" => Ok(CircuitSpec::PorepC2 { sector_size, synthetic: false }),
        "wpost" => Ok(CircuitSpec::WindowPost { sector_size }),
        "winning" => Ok(CircuitSpec::WinningPost { sector_size }),
        "snap" => Ok(CircuitSpec::SnapUpdate { sector_size }),
        _ => Err(unknown()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(e: ApiError) -> String {
        e.to_string()
    }

    #[test]
    fn abi_numbers_become_filecoin_proofs_api_names() {
        assert_eq!(seal_abi(5).unwrap(), (2048, false)); // StackedDrg2KiBV1_1
        assert_eq!(seal_abi(8).unwrap(), (32 << 30, false)); // StackedDrg32GiBV1_1
        assert_eq!(seal_abi(13).unwrap(), (32 << 30, true)); // ..._Feat_SyntheticPoRep
        assert!(message(seal_abi(18).unwrap_err()).contains("Non-Interactive"));
        assert_eq!(post_name(3).unwrap(), "StackedDrgWinning32GiBV1");
        assert_eq!(post_name(13).unwrap(), "StackedDrgWindow32GiBV1_2");
        assert_eq!(post_name(10).unwrap(), "StackedDrgWindow2KiBV1_2");
        assert_eq!(update_name(4).unwrap(), "StackedDrg64GiBV1");
        assert!(update_name(5).is_err());
    }

    #[test]
    fn cuzk_circuit_ids_map_to_ours() {
        assert_eq!(
            circuit_from_id("porep-32g").unwrap(),
            CircuitSpec::PorepC2 { sector_size: 32 << 30, synthetic: false }
        );
        assert_eq!(circuit_from_id("wpost-32g").unwrap(), CircuitSpec::WindowPost { sector_size: 32 << 30 });
        assert_eq!(circuit_from_id("winning-2k").unwrap(), CircuitSpec::WinningPost { sector_size: 2048 });
        assert_eq!(circuit_from_id("snap-64g").unwrap(), CircuitSpec::SnapUpdate { sector_size: 64 << 30 });
        assert_eq!(
            circuit_from_id("porep-c2-2KiB").unwrap(),
            CircuitSpec::PorepC2 { sector_size: 2048, synthetic: false }
        );
        assert!(message(circuit_from_id("porep-16g").unwrap_err()).contains("unknown circuit_id"));
    }

    #[test]
    fn bad_fields_are_named() {
        let req = pb::SubmitProofRequest {
            proof_kind: ProofKind::SnapDealsUpdate as i32,
            registered_proof: 0,
            comm_r_old: vec![1; 31],
            ..Default::default()
        };
        assert!(message(job_body(&req).unwrap_err()).contains("comm_r_old must be 32 bytes; got 31"));
        let req = pb::SubmitProofRequest {
            proof_kind: ProofKind::PorepSealCommit as i32,
            registered_proof: 5,
            sector_size: 32 << 30,
            ..Default::default()
        };
        assert!(message(job_body(&req).unwrap_err()).contains("sector_size 34359738368 does not match"));
        let req = pb::SubmitProofRequest { proof_kind: 0, ..Default::default() };
        assert!(message(job_body(&req).unwrap_err()).contains("proof_kind is required"));
    }
}
