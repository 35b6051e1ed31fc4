//! A cuzk `SubmitProofRequest` as a typed job request ([`JobRequest`]): its bytes stay binary
//! (no hex or base64 on the way to the checks), and `validate` checks it as it checks the HTTP
//! API's JSON, so both interfaces say the same things about bad input. Registered proofs arrive
//! as go-state-types ABI numbers and become filecoin-proofs-api names.

use snarkflow_circuits::filecoin_kinds::{Porep, Snap, WindowPost, WinningPost};
use snarkflow_circuits::{circuit_spec, FilecoinRequest};
use snarkflow_filecoin::PorepSpec;
use snarkflow_wire::{sector_size_name, CircuitSpec, Priority, SECTOR_SIZES};

use super::pb::{self, ProofKind};
use crate::{ApiError, JobRequest, ValidJob};

fn invalid(msg: impl Into<String>) -> ApiError {
    ApiError::Invalid(msg.into())
}

/// Whether `req` is of a kind whose work is critical ([`crate::jobs::quota_exempt`]:
/// WinningPoSt), read before its validation takes a slot.
pub(super) fn critical(req: &pb::SubmitProofRequest) -> bool {
    use snarkflow_circuits::ProofKind as _;
    let kind = match ProofKind::try_from(req.proof_kind) {
        Ok(ProofKind::WinningPost) => WinningPost::KIND,
        Ok(ProofKind::WindowPostPartition) => WindowPost::KIND,
        Ok(ProofKind::SnapDealsUpdate) => Snap::KIND,
        Ok(ProofKind::PorepSealCommit) => Porep::KIND,
        Ok(ProofKind::Unspecified) | Err(_) => return false,
    };
    crate::jobs::quota_exempt(kind)
}

/// The job request `req` makes (its byte fields moved, not copied).
pub(super) fn job_request(req: pb::SubmitProofRequest) -> Result<JobRequest, ApiError> {
    let kind =
        ProofKind::try_from(req.proof_kind).map_err(|_| invalid(format!("unknown proof_kind {}", req.proof_kind)))?;
    let priority =
        pb::Priority::try_from(req.priority).map_err(|_| invalid(format!("unknown priority {}", req.priority)))?;
    let priority = match priority {
        pb::Priority::Unspecified => None,
        pb::Priority::Low => Some(Priority::Low),
        pb::Priority::Normal => Some(Priority::Normal),
        pb::Priority::High => Some(Priority::High),
        pb::Priority::Critical => Some(Priority::Critical),
    };
    let idempotency_key = (!req.request_id.is_empty()).then(|| req.request_id.clone());
    let input = match kind {
        ProofKind::Unspecified => return Err(invalid("proof_kind is required")),
        ProofKind::PorepSealCommit => porep_input(req)?,
        ProofKind::SnapDealsUpdate => snap_input(req)?,
        ProofKind::WindowPostPartition => post_input(req, true)?,
        ProofKind::WinningPost => post_input(req, false)?,
    };
    Ok(JobRequest { priority, idempotency_key, ..JobRequest::filecoin(input) })
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

fn bytes32(field: &str, bytes: &[u8]) -> Result<[u8; 32], ApiError> {
    bytes.try_into().map_err(|_| invalid(format!("{field} must be 32 bytes; got {}", bytes.len())))
}

fn proof_list(field: &str, items: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, ApiError> {
    if items.is_empty() {
        return Err(invalid(format!("{field} must hold at least one proof")));
    }
    Ok(items)
}

fn porep_input(req: pb::SubmitProofRequest) -> Result<FilecoinRequest, ApiError> {
    let (size, _) = seal_abi(req.registered_proof)?;
    check_sector_size(&req, size)?;
    Ok(FilecoinRequest::PorepC2 { miner_id: req.miner_id, envelope: req.vanilla_proof })
}

fn snap_input(req: pb::SubmitProofRequest) -> Result<FilecoinRequest, ApiError> {
    let registered_proof = update_name(req.registered_proof)?;
    check_sector_size(&req, SECTOR_SIZES[(req.registered_proof % 5) as usize].0)?;
    Ok(FilecoinRequest::SnapUpdate {
        registered_proof,
        comm_r_old: bytes32("comm_r_old", &req.comm_r_old)?,
        comm_r_new: bytes32("comm_r_new", &req.comm_r_new)?,
        comm_d_new: bytes32("comm_d_new", &req.comm_d_new)?,
        vanilla_proofs: proof_list("vanilla_proofs", req.vanilla_proofs)?,
    })
}

fn post_input(req: pb::SubmitProofRequest, window: bool) -> Result<FilecoinRequest, ApiError> {
    let registered_proof = post_name(req.registered_proof)?;
    check_sector_size(&req, SECTOR_SIZES[(req.registered_proof % 5) as usize].0)?;
    let randomness = bytes32("randomness", &req.randomness)?;
    let vanilla_proofs = proof_list("vanilla_proofs", req.vanilla_proofs)?;
    let miner_id = req.miner_id;
    Ok(if window {
        let partition_index = req.partition_index;
        FilecoinRequest::WindowPost { registered_proof, miner_id, randomness, partition_index, vanilla_proofs }
    } else {
        FilecoinRequest::WinningPost { registered_proof, miner_id, randomness, vanilla_proofs }
    })
}

/// A PoRep job must be what the request says besides its C1 output: the circuit the ABI number
/// names (the C1 output carries its own registered proof; a request that disagrees with it is
/// refused), and the sector number the C1 envelope names.
pub(super) fn check_porep_job(registered_proof: u64, sector_number: u64, job: &ValidJob) -> Result<(), ApiError> {
    if let Ok(PorepSpec { sector_size, synthetic }) = snarkflow_circuits::spec_of::<Porep>(&job.circuit) {
        let (abi_size, abi_synthetic) = seal_abi(registered_proof)?;
        if (abi_size, abi_synthetic) != (sector_size, synthetic) {
            return Err(invalid(format!(
                "registered_proof {registered_proof} does not match the C1 output, which is a {}{} proof",
                sector_size_name(sector_size).unwrap_or("?"),
                if synthetic { " Synthetic PoRep" } else { "" }
            )));
        }
    }
    if let Some(input) = job.input.as_deref().and_then(|i| i.get::<Porep>()) {
        if input.sector_id != sector_number {
            return Err(invalid(format!(
                "sector_number {sector_number} differs from the C1 envelope's SectorNum {}",
                input.sector_id
            )));
        }
    }
    Ok(())
}

/// A circuit named as cuzk names them (`porep-32g`, `wpost-32g`, `winning-32g`, `snap-64g`,
/// and the other sizes as `2k`, `8m`, `512m`) or by our own circuit id (`porep-c2-32GiB`).
pub(super) fn circuit_from_id(id: &str) -> Result<CircuitSpec, ApiError> {
    if let Some(spec) = snarkflow_circuits::parse_circuit_id(id) {
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
        "porep" => Ok(circuit_spec::<Porep>(&PorepSpec { sector_size, synthetic: false })),
        "wpost" => Ok(circuit_spec::<WindowPost>(&sector_size)),
        "winning" => Ok(circuit_spec::<WinningPost>(&sector_size)),
        "snap" => Ok(circuit_spec::<Snap>(&sector_size)),
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
        assert_eq!(circuit_from_id("porep-32g").unwrap(), snarkflow_circuits::circuit("porep-c2-32GiB"));
        assert_eq!(circuit_from_id("wpost-32g").unwrap(), snarkflow_circuits::circuit("window-post-32GiB"));
        assert_eq!(circuit_from_id("winning-2k").unwrap(), snarkflow_circuits::circuit("winning-post-2KiB"));
        assert_eq!(circuit_from_id("snap-64g").unwrap(), snarkflow_circuits::circuit("snap-update-64GiB"));
        assert_eq!(circuit_from_id("porep-c2-2KiB").unwrap(), snarkflow_circuits::circuit("porep-c2-2KiB"));
        assert!(message(circuit_from_id("porep-16g").unwrap_err()).contains("unknown circuit_id"));
    }

    #[test]
    fn a_request_keeps_its_bytes_binary_and_its_priority_typed() {
        let req = pb::SubmitProofRequest {
            proof_kind: ProofKind::WindowPostPartition as i32,
            registered_proof: 13, // StackedDrgWindow32GiBV1_1 on chain: filecoin-proofs' V1_2
            miner_id: 1000,
            randomness: vec![7; 32],
            partition_index: 3,
            vanilla_proofs: vec![vec![1, 2, 3], vec![4]],
            priority: pb::Priority::Critical as i32,
            request_id: "r-1".into(),
            ..Default::default()
        };
        let request = job_request(req).unwrap();
        assert_eq!(request.kind, snarkflow_wire::JobKind::new("window-post"));
        assert_eq!(request.priority, Some(Priority::Critical));
        assert_eq!(request.idempotency_key.as_deref(), Some("r-1"));
        match request.input {
            crate::RequestInput::Filecoin(FilecoinRequest::WindowPost {
                registered_proof,
                miner_id,
                randomness,
                partition_index,
                vanilla_proofs,
            }) => {
                assert_eq!(registered_proof, "StackedDrgWindow32GiBV1_2");
                assert_eq!((miner_id, randomness, partition_index), (1000, [7; 32], 3));
                assert_eq!(vanilla_proofs, vec![vec![1, 2, 3], vec![4]]);
            }
            other => panic!("not a typed WindowPoSt input: {other:?}"),
        }
    }

    #[test]
    fn bad_fields_are_named() {
        let req = pb::SubmitProofRequest {
            proof_kind: ProofKind::SnapDealsUpdate as i32,
            registered_proof: 0,
            comm_r_old: vec![1; 31],
            ..Default::default()
        };
        assert!(message(job_request(req).unwrap_err()).contains("comm_r_old must be 32 bytes; got 31"));
        let req = pb::SubmitProofRequest {
            proof_kind: ProofKind::PorepSealCommit as i32,
            registered_proof: 5,
            sector_size: 32 << 30,
            ..Default::default()
        };
        assert!(message(job_request(req).unwrap_err()).contains("sector_size 34359738368 does not match"));
        let req = pb::SubmitProofRequest { proof_kind: 0, ..Default::default() };
        assert!(message(job_request(req).unwrap_err()).contains("proof_kind is required"));
    }
}
