//! Turning a submitted JSON body into a validated job, with errors that name the field.

use std::sync::Arc;

use serde_json::{Map, Value};
use snarkflow_filecoin::JobInput;
use snarkflow_wire::{CircuitSpec, JobKind, Priority, MAX_DENSE_CONSTRAINTS, MAX_PARTITIONS, MAX_SHA256_BLOCKS};

use crate::ApiError;

/// Longest accepted idempotency key.
pub const MAX_IDEMPOTENCY_KEY: usize = 128;

/// A job request that passed validation.
#[derive(Debug, Clone)]
pub struct ValidJob {
    pub circuit: CircuitSpec,
    pub partitions: u32,
    pub seed: u64,
    pub priority: Priority,
    pub idempotency_key: Option<String>,
    /// The checked input of a Filecoin job.
    pub input: Option<Arc<JobInput>>,
}

fn invalid(msg: impl Into<String>) -> ApiError {
    ApiError::Invalid(msg.into())
}

fn uint(input: &Map<String, Value>, field: &str, min: u64, max: u64, default: Option<u64>) -> Result<u64, ApiError> {
    match input.get(field) {
        None | Some(Value::Null) => default.ok_or_else(|| invalid(format!("input.{field} is required"))),
        Some(v) => {
            let n = v.as_u64().ok_or_else(|| invalid(format!("input.{field} must be a non-negative integer")))?;
            if n < min || n > max {
                return Err(invalid(format!("input.{field} must be between {min} and {max}, got {n}")));
            }
            Ok(n)
        }
    }
}

/// Validate a `POST /v1/jobs` body.
pub fn validate(body: &Value) -> Result<ValidJob, ApiError> {
    let obj = body.as_object().ok_or_else(|| ApiError::BadRequest("request body must be a JSON object".into()))?;
    for key in obj.keys() {
        if !["kind", "input", "priority", "idempotency_key"].contains(&key.as_str()) {
            return Err(invalid(format!("unknown field {key:?}")));
        }
    }
    let kind_name = match obj.get("kind") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(invalid("kind must be a string")),
        None => return Err(invalid("kind is required")),
    };
    let kind = JobKind::parse(kind_name).ok_or_else(|| {
        let known: Vec<_> = JobKind::ALL.iter().map(|k| k.as_str()).collect();
        invalid(format!("unknown kind {kind_name:?}; known kinds: {}", known.join(", ")))
    })?;
    let input = match obj.get("input") {
        Some(Value::Object(m)) => m,
        Some(_) => return Err(invalid("input must be an object")),
        None => return Err(invalid("input is required")),
    };
    let priority = match obj.get("priority") {
        None | Some(Value::Null) => kind.default_priority(),
        Some(Value::String(s)) => Priority::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| invalid(format!("priority must be one of low, normal, high, critical; got {s:?}")))?,
        Some(_) => return Err(invalid("priority must be a string")),
    };
    let idempotency_key = match obj.get("idempotency_key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_IDEMPOTENCY_KEY => Some(s.clone()),
        Some(_) => {
            return Err(invalid(format!("idempotency_key must be a string of 1 to {MAX_IDEMPOTENCY_KEY} bytes")))
        }
    };
    if kind.is_filecoin() {
        let parsed = snarkflow_filecoin::parse_request(kind, input).map_err(|e| invalid(e.to_string()))?;
        return Ok(ValidJob {
            circuit: parsed.spec,
            partitions: parsed.partitions,
            seed: 0,
            priority,
            idempotency_key,
            input: Some(Arc::new(parsed.input)),
        });
    }
    let size_field = match kind {
        JobKind::Sha256Chain => "blocks",
        _ => "constraints",
    };
    for key in input.keys() {
        if ![size_field, "partitions", "seed"].contains(&key.as_str()) {
            return Err(invalid(format!(
                "input.{key} is not a field of {kind_name} (fields: {size_field}, partitions, seed)"
            )));
        }
    }
    let circuit = match kind {
        JobKind::Sha256Chain => {
            CircuitSpec::Sha256Chain { blocks: uint(input, "blocks", 1, MAX_SHA256_BLOCKS.into(), None)? as u32 }
        }
        _ => CircuitSpec::DenseChain {
            constraints: uint(input, "constraints", 1, MAX_DENSE_CONSTRAINTS.into(), None)? as u32,
        },
    };
    let partitions = uint(input, "partitions", 1, MAX_PARTITIONS.into(), Some(1))? as u32;
    let seed = match input.get("seed") {
        None | Some(Value::Null) => rand::random(),
        Some(v) => v.as_u64().ok_or_else(|| invalid("input.seed must be a non-negative integer below 2^64"))?,
    };
    Ok(ValidJob { circuit, partitions, seed, priority, idempotency_key, input: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(body: Value) -> String {
        match validate(&body) {
            Err(ApiError::Invalid(m) | ApiError::BadRequest(m)) => m,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn accepts_a_full_request() {
        let job = validate(&json!({
            "kind": "dense-chain", "input": {"constraints": 1024, "partitions": 3, "seed": 5},
            "priority": "high", "idempotency_key": "k1"
        }))
        .unwrap();
        assert_eq!(job.circuit, CircuitSpec::DenseChain { constraints: 1024 });
        assert_eq!((job.partitions, job.seed, job.priority), (3, 5, Priority::High));
        assert_eq!(job.idempotency_key.as_deref(), Some("k1"));
    }

    #[test]
    fn defaults_partitions_and_priority() {
        let job = validate(&json!({"kind": "sha256-chain", "input": {"blocks": 2}})).unwrap();
        assert_eq!((job.partitions, job.priority), (1, Priority::Normal));
    }

    #[test]
    fn errors_name_the_field() {
        assert!(err(json!({"input": {}})).contains("kind is required"));
        assert!(err(json!({"kind": "porep-9000", "input": {}})).contains("unknown kind \"porep-9000\""));
        assert!(err(json!({"kind": "sha256-chain", "input": {}})).contains("input.blocks is required"));
        assert!(err(json!({"kind": "sha256-chain", "input": {"blocks": 0}})).contains("input.blocks must be between 1"));
        assert!(err(json!({"kind": "sha256-chain", "input": {"blocks": "2"}}))
            .contains("input.blocks must be a non-negative integer"));
        assert!(err(json!({"kind": "dense-chain", "input": {"constraints": 8, "partitions": 65}}))
            .contains("input.partitions"));
        assert!(err(json!({"kind": "dense-chain", "input": {"constraints": 8, "blocks": 1}}))
            .contains("input.blocks is not a field"));
        assert!(err(json!({"kind": "dense-chain", "input": {"constraints": 8}, "priority": "asap"}))
            .contains("priority must be one of"));
        assert!(err(json!({"kind": "dense-chain", "input": {"constraints": 8}, "idempotency_key": ""}))
            .contains("idempotency_key"));
        assert!(err(json!([1, 2])).contains("JSON object"));
        assert!(err(json!({"kind": "dense-chain", "input": {"constraints": 8}, "colour": 1}))
            .contains("unknown field \"colour\""));
    }
}
