//! Job inputs as clients send them, checked once at submission and stored in a canonical form.

use base64::Engine as _;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use snarkflow_wire::{sector_size_name, CircuitSpec, JobKind};

use crate::FilecoinError;

/// A checked Filecoin job input, as stored with the job (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum JobInput {
    PorepC2(PorepInput),
    SnapUpdate(SnapInput),
    WindowPost(PostInput),
    WinningPost(PostInput),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PorepInput {
    pub miner_id: u64,
    pub sector_id: u64,
    pub prover_id: [u8; 32],
    /// The C1 output exactly as filecoin-proofs-api's `seal_commit_phase1` returned it.
    pub c1: SealCommitPhase1Output,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PostInput {
    pub miner_id: u64,
    pub prover_id: [u8; 32],
    pub registered_proof: RegisteredPoStProof,
    pub randomness: [u8; 32],
    /// WindowPoSt: which partition of the deadline these sectors are (0 for WinningPoSt).
    pub partition_index: u32,
    /// bincode `FallbackPoStSectorProof`s, as `generate_single_vanilla_proof` returns them.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SnapInput {
    pub registered_proof: RegisteredUpdateProof,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    /// bincode partition proofs, as `generate_partition_proofs` returns them.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

impl JobInput {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("job inputs serialize")
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, FilecoinError> {
        serde_json::from_slice(bytes).map_err(|e| FilecoinError::new(format!("stored job input is unreadable: {e}")))
    }
}

/// A request that passed every check.
#[derive(Debug, Clone)]
pub struct ParsedJob {
    pub spec: CircuitSpec,
    pub partitions: u32,
    pub input: JobInput,
}

/// A Filecoin prover id: the miner's ID-address payload (the unsigned varint of the actor id),
/// left-aligned in 32 bytes — what lotus' `toProverID` passes to filecoin-ffi.
pub fn prover_id(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut v, mut i) = (miner_id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

fn err(msg: impl Into<String>) -> FilecoinError {
    FilecoinError::new(msg)
}

fn only_fields(input: &Map<String, Value>, kind: &str, allowed: &[&str]) -> Result<(), FilecoinError> {
    for key in input.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(err(format!("input.{key} is not a field of {kind} (fields: {})", allowed.join(", "))));
        }
    }
    Ok(())
}

fn u64_field(obj: &Map<String, Value>, path: &str, field: &str) -> Result<u64, FilecoinError> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(err(format!("{path}.{field} is required"))),
        Some(v) => v.as_u64().ok_or_else(|| err(format!("{path}.{field} must be a non-negative integer"))),
    }
}

fn bytes32(obj: &Map<String, Value>, path: &str, field: &str) -> Result<[u8; 32], FilecoinError> {
    let bad = || err(format!("{path}.{field} must be 32 bytes as 64 hex digits, base64, or an array of 32 numbers"));
    let bytes = match obj.get(field) {
        None | Some(Value::Null) => return Err(err(format!("{path}.{field} is required"))),
        Some(Value::String(s)) if s.len() == 64 => hex::decode(s).map_err(|_| bad())?,
        Some(Value::String(s)) => base64::engine::general_purpose::STANDARD.decode(s).map_err(|_| bad())?,
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_u64().filter(|b| *b < 256).map(|b| b as u8))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(bad)?,
        Some(_) => return Err(bad()),
    };
    bytes.try_into().map_err(|_| bad())
}

fn base64_list(obj: &Map<String, Value>, path: &str, field: &str) -> Result<Vec<Vec<u8>>, FilecoinError> {
    let list = match obj.get(field) {
        Some(Value::Array(a)) if !a.is_empty() => a,
        None | Some(Value::Null) => return Err(err(format!("{path}.{field} is required"))),
        Some(_) => return Err(err(format!("{path}.{field} must be a non-empty array of base64 strings"))),
    };
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
                .ok_or_else(|| err(format!("{path}.{field}[{i}] is not a base64 string")))
        })
        .collect()
}

fn registered<T: serde::de::DeserializeOwned>(
    obj: &Map<String, Value>,
    path: &str,
    what: &str,
) -> Result<T, FilecoinError> {
    match obj.get("registered_proof") {
        Some(Value::String(s)) => serde_json::from_value(Value::String(s.clone()))
            .map_err(|_| err(format!("{path}.registered_proof {s:?} is not a {what} registered proof"))),
        None | Some(Value::Null) => Err(err(format!("{path}.registered_proof is required"))),
        Some(_) => Err(err(format!("{path}.registered_proof must be a string"))),
    }
}

fn sector_size_of(bytes: u64) -> Result<u64, FilecoinError> {
    sector_size_name(bytes)
        .map(|_| bytes)
        .ok_or_else(|| err(format!("sector size {bytes} is not supported (2KiB, 8MiB, 512MiB, 32GiB, 64GiB are)")))
}

/// Check a Filecoin job request (`input` of `POST /v1/jobs`) and turn it into a job.
pub fn parse_request(kind: JobKind, input: &Map<String, Value>) -> Result<ParsedJob, FilecoinError> {
    match kind {
        JobKind::PorepC2 => parse_porep(input),
        JobKind::WindowPost | JobKind::WinningPost => parse_post(kind, input),
        JobKind::SnapUpdate => parse_snap(input),
        other => Err(err(format!("{} is not a Filecoin kind", other.as_str()))),
    }
}

fn parse_porep(input: &Map<String, Value>) -> Result<ParsedJob, FilecoinError> {
    only_fields(input, "porep-c2", &["miner_id", "c1", "c1_raw", "sector_num"])?;
    let miner_id = u64_field(input, "input", "miner_id")?;
    let (c1_json, sector_id, envelope_size): (Vec<u8>, u64, Option<u64>) = match (input.get("c1"), input.get("c1_raw"))
    {
        (Some(Value::Object(env)), None) => {
            for key in env.keys() {
                if !["SectorNum", "Phase1Out", "SectorSize"].contains(&key.as_str()) {
                    return Err(err(format!(
                        "input.c1.{key} is not a field of the C1 envelope (SectorNum, Phase1Out, SectorSize)"
                    )));
                }
            }
            if input.contains_key("sector_num") {
                return Err(err("input.sector_num goes with c1_raw; the envelope carries SectorNum"));
            }
            let sector = u64_field(env, "input.c1", "SectorNum")?;
            let size = u64_field(env, "input.c1", "SectorSize")?;
            let b64 = match env.get("Phase1Out") {
                Some(Value::String(s)) => s,
                None | Some(Value::Null) => return Err(err("input.c1.Phase1Out is required")),
                Some(_) => return Err(err("input.c1.Phase1Out must be a base64 string")),
            };
            let json = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| err(format!("input.c1.Phase1Out is not base64: {e}")))?;
            (json, sector, Some(size))
        }
        (Some(_), None) => return Err(err("input.c1 must be an object {SectorNum, Phase1Out, SectorSize}")),
        (None, Some(raw)) => {
            let sector = u64_field(input, "input", "sector_num")?;
            let json = match raw {
                Value::String(s) => s.clone().into_bytes(),
                Value::Object(_) => serde_json::to_vec(raw).expect("a JSON value serializes"),
                _ => return Err(err("input.c1_raw must be the C1 output as a JSON object or string")),
            };
            (json, sector, None)
        }
        (Some(_), Some(_)) => return Err(err("give either input.c1 (the envelope) or input.c1_raw, not both")),
        (None, None) => {
            return Err(err(
                "input.c1 is required: {\"SectorNum\": n, \"Phase1Out\": \"<base64 C1>\", \"SectorSize\": bytes}",
            ))
        }
    };
    let c1: SealCommitPhase1Output = serde_json::from_slice(&c1_json)
        .map_err(|e| err(format!("the C1 data is not a C1 output (SealCommitPhase1Output JSON): {e}")))?;
    let proof = c1.registered_proof;
    let sector_size = u64::from(proof.sector_size());
    sector_size_of(sector_size)?;
    let name = serde_json::to_value(proof).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let synthetic = match name.as_str() {
        n if n.ends_with("V1_1") => false,
        n if n.ends_with("V1_1_Feat_SyntheticPoRep") => true,
        n if n.ends_with("NonInteractivePoRep") => {
            return Err(err(format!("{n}: non-interactive PoRep is not supported yet")));
        }
        n => return Err(err(format!("{n}: PoRep V1 is retired on mainnet; reseal with V1_1"))),
    };
    if let Some(size) = envelope_size {
        if size != sector_size {
            return Err(err(format!(
                "input.c1.SectorSize is {size} but the C1 output is a {name} proof, for {sector_size}-byte sectors"
            )));
        }
    }
    if c1.comm_r == [0; 32] || c1.comm_d == [0; 32] || c1.seed == [0; 32] {
        return Err(err("the C1 output has an all-zero comm_r, comm_d or seed"));
    }
    let partitions = usize::from(proof.partitions());
    let found = match &c1.vanilla_proofs {
        filecoin_proofs_api::seal::VanillaSealProof::StackedDrg2KiBV1(p) => (p.len(), 2u64 << 10),
        filecoin_proofs_api::seal::VanillaSealProof::StackedDrg8MiBV1(p) => (p.len(), 8 << 20),
        filecoin_proofs_api::seal::VanillaSealProof::StackedDrg512MiBV1(p) => (p.len(), 512 << 20),
        filecoin_proofs_api::seal::VanillaSealProof::StackedDrg32GiBV1(p) => (p.len(), 32 << 30),
        filecoin_proofs_api::seal::VanillaSealProof::StackedDrg64GiBV1(p) => (p.len(), 64 << 30),
    };
    if found.1 != sector_size {
        return Err(err(format!(
            "the C1 output's vanilla proofs are for {}-byte sectors, its proof type {name} is not",
            found.1
        )));
    }
    if found.0 != partitions {
        return Err(err(format!(
            "the C1 output has {} partitions of vanilla proofs; {name} has {partitions}",
            found.0
        )));
    }
    let prover_id = prover_id(miner_id);
    check_replica_id(proof, &c1, &prover_id, sector_id).map_err(|e| {
        err(format!(
            "{e}: the C1 output was not made by miner {miner_id} for sector {sector_id} (wrong miner_id or SectorNum?)"
        ))
    })?;
    Ok(ParsedJob {
        spec: CircuitSpec::PorepC2 { sector_size, synthetic },
        partitions: partitions as u32,
        input: JobInput::PorepC2(PorepInput { miner_id, sector_id, prover_id, c1 }),
    })
}

/// The replica id in a C1 output commits to the prover id and sector number: recompute it.
fn check_replica_id(
    proof: RegisteredSealProof,
    c1: &SealCommitPhase1Output,
    prover_id: &[u8; 32],
    sector_id: u64,
) -> Result<(), FilecoinError> {
    use filecoin_proofs::constants::DefaultTreeHasher;
    let config = proof.as_v1_config();
    let expected = storage_proofs_porep::stacked::generate_replica_id::<DefaultTreeHasher, _>(
        prover_id,
        sector_id,
        &c1.ticket,
        c1.comm_d,
        &config.porep_id,
    );
    if expected != c1.replica_id {
        return Err(err("replica id mismatch"));
    }
    Ok(())
}

fn parse_post(kind: JobKind, input: &Map<String, Value>) -> Result<ParsedJob, FilecoinError> {
    let window = kind == JobKind::WindowPost;
    let fields: &[&str] = if window {
        &["registered_proof", "miner_id", "randomness", "partition_index", "vanilla_proofs"]
    } else {
        &["registered_proof", "miner_id", "randomness", "vanilla_proofs"]
    };
    only_fields(input, kind.as_str(), fields)?;
    let registered_proof: RegisteredPoStProof = registered(input, "input", "PoSt")?;
    let name =
        serde_json::to_value(registered_proof).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    match (window, name.as_str()) {
        (true, n) if n.starts_with("StackedDrgWindow") && n.ends_with("V1_2") => {}
        (true, n) => {
            return Err(err(format!(
                "input.registered_proof {n} is not a current WindowPoSt proof (StackedDrgWindow<size>V1_2)"
            )))
        }
        (false, n) if n.starts_with("StackedDrgWinning") => {}
        (false, n) => return Err(err(format!("input.registered_proof {n} is not a WinningPoSt proof"))),
    }
    let sector_size = sector_size_of(u64::from(registered_proof.sector_size()))?;
    let miner_id = u64_field(input, "input", "miner_id")?;
    let randomness = bytes32(input, "input", "randomness")?;
    let partition_index = if window {
        match input.get("partition_index") {
            None | Some(Value::Null) => 0,
            Some(v) => v
                .as_u64()
                .filter(|p| *p < 1 << 20)
                .ok_or_else(|| err("input.partition_index must be a small non-negative integer"))?
                as u32,
        }
    } else {
        0
    };
    let vanilla_proofs = base64_list(input, "input", "vanilla_proofs")?;
    let spec = if window { CircuitSpec::WindowPost { sector_size } } else { CircuitSpec::WinningPost { sector_size } };
    let parsed = PostInput {
        miner_id,
        prover_id: prover_id(miner_id),
        registered_proof,
        randomness,
        partition_index,
        vanilla_proofs,
    };
    crate::kinds::check_post(&spec, &parsed)?;
    let input = if window { JobInput::WindowPost(parsed) } else { JobInput::WinningPost(parsed) };
    Ok(ParsedJob { spec, partitions: 1, input })
}

fn parse_snap(input: &Map<String, Value>) -> Result<ParsedJob, FilecoinError> {
    only_fields(
        input,
        "snap-update",
        &["registered_proof", "comm_r_old", "comm_r_new", "comm_d_new", "vanilla_proofs"],
    )?;
    let registered_proof: RegisteredUpdateProof = registered(input, "input", "update")?;
    let sector_size = sector_size_of(u64::from(registered_proof.sector_size()))?;
    let parsed = SnapInput {
        registered_proof,
        comm_r_old: bytes32(input, "input", "comm_r_old")?,
        comm_r_new: bytes32(input, "input", "comm_r_new")?,
        comm_d_new: bytes32(input, "input", "comm_d_new")?,
        vanilla_proofs: base64_list(input, "input", "vanilla_proofs")?,
    };
    let partitions = usize::from(registered_proof.partitions());
    if parsed.vanilla_proofs.len() != partitions {
        return Err(err(format!(
            "input.vanilla_proofs has {} partition proofs; this sector size has {partitions}",
            parsed.vanilla_proofs.len()
        )));
    }
    let spec = CircuitSpec::SnapUpdate { sector_size };
    crate::kinds::check_snap(&spec, &parsed)?;
    Ok(ParsedJob { spec, partitions: partitions as u32, input: JobInput::SnapUpdate(parsed) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_the_id_address_payload() {
        assert_eq!(prover_id(0)[..2], [0, 0]);
        assert_eq!(prover_id(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id(127)[..2], [127, 0]);
        assert_eq!(prover_id(128)[..3], [0x80, 0x01, 0]);
    }

    fn porep_err(v: Value) -> String {
        parse_request(JobKind::PorepC2, v.as_object().unwrap()).unwrap_err().to_string()
    }

    #[test]
    fn porep_requests_name_what_is_wrong() {
        use serde_json::json;
        assert!(porep_err(json!({"c1": {}})).contains("input.miner_id is required"));
        assert!(porep_err(json!({"miner_id": 1})).contains("input.c1 is required"));
        assert!(porep_err(json!({"miner_id": 1, "c1": {"SectorNum": 1, "SectorSize": 2048, "Phase1Out": "!!"}}))
            .contains("not base64"));
        assert!(porep_err(json!({"miner_id": 1, "c1": {"SectorNum": 1, "SectorSize": 2048, "Phase1Out": "e30="}}))
            .contains("not a C1 output"));
        assert!(porep_err(json!({"miner_id": 1, "c1": {"SectorNum": 1, "Phase1Out": "e30="}}))
            .contains("input.c1.SectorSize is required"));
        assert!(porep_err(json!({"miner_id": 1, "c1_raw": {}})).contains("input.sector_num is required"));
        assert!(porep_err(json!({"miner_id": 1, "c1": {}, "c1_raw": {}})).contains("not both"));
        assert!(porep_err(json!({"miner_id": 1, "colour": 2})).contains("input.colour is not a field"));
    }
}
