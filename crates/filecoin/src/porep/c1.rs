//! The wrappings a C1 output arrives in: Curio's and lotus-bench's envelope
//! `{"SectorNum", "Phase1Out", "SectorSize"}` (`Phase1Out` the base64 of the C1 JSON) as a JSON
//! object in `input.c1` or as the bytes of cuzk's `vanilla_proof`, or the raw C1 JSON with
//! `input.sector_num`.

use base64::Engine as _;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::fields::{err, u64_field};
use crate::FilecoinError;

/// A C1 output wrapped as Curio and lotus-bench wrap it.
pub fn c1_envelope(c1: &SealCommitPhase1Output, sector_num: u64) -> Value {
    let json = serde_json::to_vec(c1).expect("C1 output serializes");
    serde_json::json!({
        "SectorNum": sector_num,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(json),
        "SectorSize": u64::from(c1.registered_proof.sector_size()),
    })
}

/// The C1 JSON out of its wrapping, with the sector number that came with it.
pub(super) struct C1Data {
    pub(super) json: Vec<u8>,
    pub(super) sector_id: u64,
    pub(super) envelope_size: Option<u64>,
}

/// The C1 data of a request's `input`.
pub(super) fn c1_data(input: &Map<String, Value>) -> Result<C1Data, FilecoinError> {
    match (input.get("c1"), input.get("c1_raw")) {
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
            let sector_id = u64_field(env, "input.c1", "SectorNum")?;
            let size = u64_field(env, "input.c1", "SectorSize")?;
            let b64 = match env.get("Phase1Out") {
                Some(Value::String(s)) => s,
                None | Some(Value::Null) => return Err(err("input.c1.Phase1Out is required")),
                Some(_) => return Err(err("input.c1.Phase1Out must be a base64 string")),
            };
            let json = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| err(format!("input.c1.Phase1Out is not base64: {e}")))?;
            Ok(C1Data { json, sector_id, envelope_size: Some(size) })
        }
        (Some(_), None) => Err(err("input.c1 must be an object {SectorNum, Phase1Out, SectorSize}")),
        (None, Some(raw)) => {
            let sector_id = u64_field(input, "input", "sector_num")?;
            let json = match raw {
                Value::String(s) => s.clone().into_bytes(),
                Value::Object(_) => serde_json::to_vec(raw).expect("a JSON value serializes"),
                _ => return Err(err("input.c1_raw must be the C1 output as a JSON object or string")),
            };
            Ok(C1Data { json, sector_id, envelope_size: None })
        }
        (Some(_), Some(_)) => Err(err("give either input.c1 (the envelope) or input.c1_raw, not both")),
        (None, None) => {
            Err(err("input.c1 is required: {\"SectorNum\": n, \"Phase1Out\": \"<base64 C1>\", \"SectorSize\": bytes}"))
        }
    }
}

/// The C1 data of an envelope given as its JSON bytes, read straight into its three fields (no
/// JSON tree of a 50 MB string first).
pub(super) fn envelope_data(envelope: &[u8]) -> Result<C1Data, FilecoinError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Envelope {
        #[serde(rename = "SectorNum")]
        sector_num: u64,
        #[serde(rename = "Phase1Out")]
        phase1_out: String,
        #[serde(rename = "SectorSize")]
        sector_size: u64,
    }
    let env: Envelope = serde_json::from_slice(envelope)
        .map_err(|e| err(format!("the C1 envelope is not the JSON {{SectorNum, Phase1Out, SectorSize}}: {e}")))?;
    let json = base64::engine::general_purpose::STANDARD
        .decode(env.phase1_out.trim())
        .map_err(|e| err(format!("the C1 envelope's Phase1Out is not base64: {e}")))?;
    Ok(C1Data { json, sector_id: env.sector_num, envelope_size: Some(env.sector_size) })
}
