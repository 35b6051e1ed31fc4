//! A job's input (a C1 output, vanilla proofs) whatever its kind: the kind's own
//! [`ProofKind::Input`] behind one type, and the form it is stored in with the job.
//!
//! Stored form: `SFJI`, a version byte (2), then the kind's input in bincode; the job says which
//! kind it is. A 32 GiB C1 output is 51–70 MB of JSON, parsed once at submit; the synth-workers
//! and the gateway's final check read the binary form instead of parsing that JSON again.
//! Reading goes through the registry ([`JobInput::from_bytes`]), which knows the kinds; this
//! module knows none.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use snarkflow_wire::JobKind;

use crate::kind::{KindError, ProofKind};

/// One job's input, of the kind [`JobInput::kind`] names.
#[derive(Clone)]
pub struct JobInput {
    kind: JobKind,
    value: Arc<dyn StoredInput>,
}

/// A kind's input as [`JobInput`] holds it: itself, and how it is stored.
trait StoredInput: Any + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn encode(&self) -> Vec<u8>;
}

impl<T: serde::Serialize + Any + Send + Sync> StoredInput for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(VERSION);
        bincode::serialize_into(&mut out, self).expect("job inputs serialize");
        out
    }
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
        self.value.as_any().downcast_ref()
    }

    /// The stored form (module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.value.encode()
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

fn unreadable(e: impl fmt::Display) -> KindError {
    KindError(format!("stored job input is unreadable: {e}"))
}

/// A stored `K` input ([`JobInput::to_bytes`]'s form).
pub(crate) fn decode<K: ProofKind>(bytes: &[u8]) -> Result<JobInput, KindError> {
    let body = match bytes.strip_prefix(MAGIC) {
        Some([VERSION, body @ ..]) => body,
        Some([version, ..]) => {
            return Err(unreadable(format!("stored form version {version}, this build reads {VERSION}")))
        }
        Some([]) => return Err(unreadable("it ends after its header")),
        None => return Err(unreadable("it does not start with the stored form's header")),
    };
    let input: K::Input = bincode::deserialize(body).map_err(unreadable)?;
    Ok(JobInput::of::<K>(input))
}
