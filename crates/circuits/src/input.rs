//! A job's input (a C1 output, vanilla proofs) whatever its kind: the kind's own
//! [`ProofKind::Input`] behind one type, and the form it is stored in with the job.
//!
//! Stored form: `SFJI`, a version byte (2), then the kind's input in bincode; the job says which
//! kind it is. A 32 GiB C1 output is 51–70 MB of JSON, parsed once at submit; the synth-workers
//! and the gateway's final check read the binary form instead of parsing that JSON again. Two
//! older forms are still read: version 1 (a kind tag byte after the version, 2026-12-03) and the
//! JSON gateways stored before it (the kind's name in a `kind` field beside the input's fields).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use snarkflow_wire::JobKind;

use crate::kind::{KindError, ProofKind};

/// One job's input, of the kind [`JobInput::kind`] names.
#[derive(Clone)]
pub struct JobInput {
    kind: JobKind,
    value: Arc<dyn Any + Send + Sync>,
}

impl JobInput {
    pub fn of<K: ProofKind>(input: K::Input) -> JobInput {
        JobInput { kind: K::KIND, value: Arc::new(input) }
    }

    pub fn kind(&self) -> JobKind {
        self.kind
    }

    /// The input as `K` made it; `None` when it is another kind's.
    pub fn get<K: ProofKind>(&self) -> Option<&K::Input> {
        if self.kind != K::KIND {
            return None;
        }
        self.value.downcast_ref()
    }

    /// The stored form (module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::registry::encode_input(self)
    }

    /// Read a stored `kind` input in any of the forms the module docs name.
    pub fn from_bytes(kind: JobKind, bytes: &[u8]) -> Result<JobInput, KindError> {
        crate::registry::decode_input(kind, bytes)
    }

    /// The JSON form gateways stored before the binary one (still read): for tests and for
    /// comparing the two forms.
    pub fn to_json(&self) -> Vec<u8> {
        crate::registry::input_json(self)
    }
}

impl fmt::Debug for JobInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // inputs are megabytes: name them, don't print them
        write!(f, "a {} input", self.kind)
    }
}

const MAGIC: &[u8; 4] = b"SFJI";
const VERSION: u8 = 2;
/// The kinds version 1's tag bytes stood for (a frozen table: version 1 is written no more).
const VERSION_1_TAGS: [&str; 4] = ["porep-c2", "snap-update", "window-post", "winning-post"];

fn unreadable(e: impl fmt::Display) -> KindError {
    KindError(format!("stored job input is unreadable: {e}"))
}

pub(crate) fn encode<K: ProofKind>(input: &JobInput) -> Vec<u8> {
    let input = input.get::<K>().expect("the registry dispatches on the input's own kind");
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    bincode::serialize_into(&mut out, input).expect("job inputs serialize");
    out
}

pub(crate) fn decode<K: ProofKind>(bytes: &[u8]) -> Result<JobInput, KindError> {
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        return from_json::<K>(bytes);
    };
    let body = match rest {
        [VERSION, body @ ..] => body,
        // version 1: a kind tag byte, then the same bincode
        [1, tag, body @ ..] => match VERSION_1_TAGS.get(usize::from(*tag)) {
            Some(name) if *name == K::KIND.as_str() => body,
            _ => return Err(unreadable(format!("it is tagged {tag}, not a {} input", K::KIND))),
        },
        [1] => return Err(unreadable("it ends after its header")),
        [version, ..] => return Err(unreadable(format!("stored form version {version}, this build reads {VERSION}"))),
        [] => return Err(unreadable("it ends after its header")),
    };
    let input: K::Input = bincode::deserialize(body).map_err(unreadable)?;
    Ok(JobInput::of::<K>(input))
}

pub(crate) fn to_json<K: ProofKind>(input: &JobInput) -> Vec<u8> {
    let input = input.get::<K>().expect("the registry dispatches on the input's own kind");
    let mut json = serde_json::to_value(input).expect("job inputs serialize");
    if let Some(fields) = json.as_object_mut() {
        fields.insert("kind".into(), K::KIND.as_str().into());
    }
    serde_json::to_vec(&json).expect("JSON serializes")
}

fn from_json<K: ProofKind>(bytes: &[u8]) -> Result<JobInput, KindError> {
    let mut json: serde_json::Value = serde_json::from_slice(bytes).map_err(unreadable)?;
    if let Some(fields) = json.as_object_mut() {
        match fields.remove("kind") {
            Some(serde_json::Value::String(kind)) if kind == K::KIND.as_str() => {}
            other => return Err(unreadable(format!("it is not a {} input (kind {other:?})", K::KIND))),
        }
    }
    let input: K::Input = serde_json::from_value(json).map_err(unreadable)?;
    Ok(JobInput::of::<K>(input))
}
