//! Reading the fields of a request's `input` object, with errors that name the field.

use base64::Engine as _;
use serde_json::{Map, Value};
use snarkflow_wire::sector_size_name;

use crate::FilecoinError;

pub(crate) fn err(msg: impl Into<String>) -> FilecoinError {
    FilecoinError::new(msg)
}

/// Refuse fields `kind` does not have.
pub(crate) fn only_fields(input: &Map<String, Value>, kind: &str, allowed: &[&str]) -> Result<(), FilecoinError> {
    for key in input.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(err(format!("input.{key} is not a field of {kind} (fields: {})", allowed.join(", "))));
        }
    }
    Ok(())
}

pub(crate) fn u64_field(obj: &Map<String, Value>, path: &str, field: &str) -> Result<u64, FilecoinError> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(err(format!("{path}.{field} is required"))),
        Some(v) => v.as_u64().ok_or_else(|| err(format!("{path}.{field} must be a non-negative integer"))),
    }
}

/// 32 bytes as 64 hex digits, base64, or an array of 32 numbers (what Curio and lotus send).
pub(crate) fn bytes32(obj: &Map<String, Value>, path: &str, field: &str) -> Result<[u8; 32], FilecoinError> {
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

pub(crate) fn base64_list(obj: &Map<String, Value>, path: &str, field: &str) -> Result<Vec<Vec<u8>>, FilecoinError> {
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

/// `registered_proof` as filecoin-proofs-api names it (`StackedDrgWindow32GiBV1_2`, ...).
pub(crate) fn registered<T: serde::de::DeserializeOwned>(
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

/// The name filecoin-proofs-api serializes a registered proof as.
pub(crate) fn registered_name<T: serde::Serialize>(proof: T) -> String {
    serde_json::to_value(proof).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub(crate) fn sector_size_of(bytes: u64) -> Result<u64, FilecoinError> {
    sector_size_name(bytes)
        .map(|_| bytes)
        .ok_or_else(|| err(format!("sector size {bytes} is not supported (2KiB, 8MiB, 512MiB, 32GiB, 64GiB are)")))
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

/// A registered proof by its filecoin-proofs-api name.
pub(crate) fn by_name<T: serde::de::DeserializeOwned>(name: String) -> Result<T, FilecoinError> {
    serde_json::from_value(Value::String(name.clone()))
        .map_err(|_| FilecoinError::new(format!("filecoin-proofs has no registered proof {name}")))
}

/// `2KiB` and so on, for a supported sector size.
pub(crate) fn size_name(bytes: u64) -> Result<&'static str, FilecoinError> {
    sector_size_name(bytes).ok_or_else(|| FilecoinError::new(format!("{bytes} bytes is not a Filecoin sector size")))
}

/// `v28-<circuit identifier>`: the parameter files are this plus `.params`, `.vk`, `.meta`,
/// exactly as filecoin-proofs (and `paramfetch`) name them.
pub(crate) fn param_file_stem(circuit_identifier: &str) -> String {
    format!("v{}-{circuit_identifier}", storage_proofs_core::parameter_cache::VERSION)
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
}
