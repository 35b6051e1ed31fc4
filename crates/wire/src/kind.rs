//! A proof kind's name and a circuit's shape as they travel. The wire names no kind: which kinds
//! exist, what their specs mean and how they are proved is the circuits registry's business
//! (`snarkflow_circuits`). Here a kind is a well-formed name, and a circuit spec is that name
//! plus the kind's own rendering of its parameters, which is also the tail of the circuit id.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The name of a proof kind (`porep-c2`, `dense-chain`): 1 to 31 bytes of lowercase ASCII
/// letters, digits and inner dashes, held inline so that the type is `Copy`. Any well-formed
/// name travels; whether this build knows the kind is asked of the registry.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobKind {
    len: u8,
    bytes: [u8; JobKind::MAX_LEN],
}

impl JobKind {
    pub const MAX_LEN: usize = 31;

    /// A kind's own constant. Panics on a malformed name (at compile time in a `const`).
    pub const fn new(name: &str) -> JobKind {
        match JobKind::try_new(name) {
            Some(kind) => kind,
            None => panic!("a kind's name is 1 to 31 bytes of a-z, 0-9 and inner dashes"),
        }
    }

    /// `None` unless `name` is well formed (type docs).
    pub const fn try_new(name: &str) -> Option<JobKind> {
        let b = name.as_bytes();
        if b.is_empty() || b.len() > JobKind::MAX_LEN || b[0] == b'-' || b[b.len() - 1] == b'-' {
            return None;
        }
        let mut bytes = [0u8; JobKind::MAX_LEN];
        let mut i = 0;
        while i < b.len() {
            if !(b[i].is_ascii_lowercase() || b[i].is_ascii_digit() || b[i] == b'-') {
                return None;
            }
            bytes[i] = b[i];
            i += 1;
        }
        Some(JobKind { len: b.len() as u8, bytes })
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len as usize]).expect("kind names are ASCII")
    }
}

/// By name, as strings order.
impl Ord for JobKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for JobKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for JobKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for JobKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        JobKind::try_new(&name).ok_or_else(|| serde::de::Error::custom(format!("{name:?} is not a kind name")))
    }
}

/// The shape of one partition's circuit: its kind and the kind's own parameters, rendered by the
/// kind (`32GiB`, `synthetic-32GiB`, `c1024`). Two partitions with equal specs share Groth16
/// parameters; [`CircuitSpec::circuit_id`] names them (and their shapes and metrics).
///
/// JSON form: `{"kind": "porep-c2", "spec": "32GiB"}`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CircuitSpec {
    kind: JobKind,
    params: Arc<str>,
}

/// Longest rendering of a kind's parameters.
const MAX_PARAMS_LEN: usize = 64;

impl CircuitSpec {
    /// The spec of a `kind` circuit whose parameters the kind renders as `params`: 1 to 64 bytes
    /// of ASCII letters, digits, `-` and `_` (circuit ids name files, metrics and subjects).
    pub fn new(kind: JobKind, params: &str) -> Result<CircuitSpec, BadSpec> {
        let ok = !params.is_empty()
            && params.len() <= MAX_PARAMS_LEN
            && params.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(BadSpec(format!("{params:?} is not a {kind} circuit's parameters")));
        }
        Ok(CircuitSpec { kind, params: params.into() })
    }

    pub fn kind(&self) -> JobKind {
        self.kind
    }

    /// The kind's rendering of its parameters: what follows the kind's name in the circuit id.
    pub fn params(&self) -> &str {
        &self.params
    }

    /// Stable identity of the circuit shape: the kind's name, a dash, its parameters
    /// (`porep-c2-32GiB`, `dense-chain-c1024`). Synthetic kinds' parameter files are named by
    /// it; Filecoin parameter files keep filecoin-proofs' own names.
    pub fn circuit_id(&self) -> String {
        format!("{}-{}", self.kind, self.params)
    }
}

impl fmt::Debug for CircuitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.kind, self.params)
    }
}

/// A circuit spec that is not well formed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadSpec(pub String);

#[derive(Serialize, Deserialize)]
struct SpecRepr {
    kind: JobKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<String>,
}

impl Serialize for CircuitSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SpecRepr { kind: self.kind, spec: Some(self.params.to_string()) }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for CircuitSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let repr = SpecRepr::deserialize(d)?;
        let params = repr
            .spec
            .ok_or_else(|| serde::de::Error::custom(format!("a {} circuit spec without its \"spec\"", repr.kind)))?;
        CircuitSpec::new(repr.kind, &params).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DENSE: JobKind = JobKind::new("dense-chain");

    #[test]
    fn kind_names_are_checked() {
        assert_eq!(DENSE.as_str(), "dense-chain");
        for bad in ["", "-porep", "porep-", "Porep", "po rep", "porep.c2", &"k".repeat(32)] {
            assert_eq!(JobKind::try_new(bad), None, "{bad:?}");
        }
        assert!(JobKind::try_new(&"k".repeat(31)).is_some());
        // kinds order by name, not by length
        assert!(JobKind::new("a-longer-name") < JobKind::new("cube"));
        assert_eq!(serde_json::to_string(&DENSE).unwrap(), "\"dense-chain\"");
        assert_eq!(serde_json::from_str::<JobKind>("\"dense-chain\"").unwrap(), DENSE);
        let e = serde_json::from_str::<JobKind>("\"Dense\"").unwrap_err().to_string();
        assert!(e.contains("\"Dense\" is not a kind name"), "{e}");
    }

    #[test]
    fn a_spec_travels_as_its_kind_and_parameters() {
        let spec = CircuitSpec::new(JobKind::new("porep-c2"), "synthetic-32GiB").unwrap();
        assert_eq!(spec.circuit_id(), "porep-c2-synthetic-32GiB");
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(json, r#"{"kind":"porep-c2","spec":"synthetic-32GiB"}"#);
        assert_eq!(serde_json::from_str::<CircuitSpec>(&json).unwrap(), spec);
        for bad in ["", "32 GiB", "a.b", "x>", &"p".repeat(65)] {
            assert!(CircuitSpec::new(DENSE, bad).is_err(), "{bad:?}");
        }
        let e = serde_json::from_str::<CircuitSpec>(r#"{"kind":"dense-chain","spec":"c1.0"}"#).unwrap_err();
        assert!(e.to_string().contains("not a dense-chain circuit's parameters"), "{e}");
        let e = serde_json::from_str::<CircuitSpec>(r#"{"kind":"dense-chain"}"#).unwrap_err();
        assert!(e.to_string().contains("without its \"spec\""), "{e}");
    }

    /// The fields of the form before the spec became kind + parameters (schema 1) are not read.
    #[test]
    fn the_pre_release_form_is_refused() {
        let e = serde_json::from_str::<CircuitSpec>(r#"{"kind":"porep-c2","sector_size":34359738368}"#).unwrap_err();
        assert!(e.to_string().contains("without its \"spec\""), "{e}");
    }
}
