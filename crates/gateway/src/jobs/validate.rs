//! Turning a submitted JSON body into a validated job, with errors that name the field.

use std::sync::Arc;

use serde_json::{Map, Value};
use snarkflow_circuits::{FilecoinRequest, JobInput};
use snarkflow_wire::{CircuitSpec, JobKind, Priority};

use crate::ApiError;

/// Longest deadline a request may ask for: six days, a day short of the ledger's default
/// retention (a week from a record's last change), so a job's record is still there when the
/// ledger pass fails it at its deadline.
pub(crate) const MAX_DEADLINE_SECS: u64 = 6 * 24 * 3600;

/// The fields of a job request (docs/openapi.json's `JobRequest` lists the same).
pub(crate) const REQUEST_FIELDS: [&str; 5] = ["kind", "input", "priority", "idempotency_key", "deadline_secs"];

/// Longest accepted idempotency key.
pub(crate) const MAX_IDEMPOTENCY_KEY: usize = 128;

/// A job request that passed validation.
#[derive(Debug, Clone)]
pub struct ValidJob {
    pub circuit: CircuitSpec,
    pub partitions: u32,
    pub seed: u64,
    /// The priority the job runs at: the one its request named, else its kind's default.
    pub priority: Priority,
    /// The priority its request named, if it named one (a caller's ceiling refuses a named
    /// priority above it and lowers a default one to it).
    pub requested_priority: Option<Priority>,
    pub idempotency_key: Option<String>,
    /// Seconds after submission by which the job must finish, else it fails.
    pub deadline_secs: u64,
    /// Whether that is its kind's default (the request named none): the gateway's
    /// `--default-deadline` may replace it.
    pub deadline_is_default: bool,
    /// The checked input of a kind that takes one.
    pub input: Option<Arc<JobInput>>,
    /// SHA-256 (hex) of the kind and the input as submitted (keys sorted): what an
    /// idempotency key's retry must repeat. Priority and deadline are not part of it.
    pub fingerprint: String,
}

/// What this gateway accepts beyond a well-formed request.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Accept the synthetic test kinds at all.
    pub enable_test_kinds: bool,
    /// Largest test-kind job, in constraints over all partitions.
    pub max_test_job_constraints: u64,
    /// Where the verifying keys of the kinds the gateway verifies are.
    pub params_dir: std::path::PathBuf,
    /// What the verifying keys must be: the files filecoin-proofs publishes (`None`: a test
    /// cache, random keys under the published names).
    pub published: Option<snarkflow_filecoin::manifest::Manifest>,
    /// Deadlines, in seconds, for jobs of these kinds whose request names none, instead of the
    /// kind's own (`--default-deadline`).
    pub default_deadlines: Vec<DefaultDeadline>,
    /// The longest deadline a job may have here: its record must outlive it (the ledger keeps
    /// records `--job-retention-hours`), so that the job fails saying so rather than vanish
    /// (`max_deadline_for_retention`).
    pub max_deadline_secs: u64,
}

/// The longest deadline a ledger that keeps records `retention_secs` allows: a day short of the
/// retention (a seventh of it when that is less), and never above [`MAX_DEADLINE_SECS`].
pub(crate) fn max_deadline_for_retention(retention_secs: u64) -> u64 {
    let margin = (24 * 3600).min(retention_secs / 7);
    retention_secs.saturating_sub(margin).clamp(1, MAX_DEADLINE_SECS)
}

/// `KIND=SECONDS`: the deadline of a `KIND` job whose request names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultDeadline {
    pub kind: JobKind,
    pub secs: u64,
}

impl std::str::FromStr for DefaultDeadline {
    type Err = BadDefaultDeadline;

    fn from_str(s: &str) -> Result<Self, BadDefaultDeadline> {
        let (kind, secs) = s.split_once('=').ok_or_else(|| BadDefaultDeadline::Form(s.to_owned()))?;
        let kind = snarkflow_circuits::kind_named(kind.trim())
            .ok_or_else(|| BadDefaultDeadline::UnknownKind(kind.to_owned()))?;
        let secs = secs.trim().parse().ok().filter(|n| (1..=MAX_DEADLINE_SECS).contains(n));
        let secs = secs.ok_or_else(|| BadDefaultDeadline::Seconds(s.to_owned()))?;
        Ok(DefaultDeadline { kind, secs })
    }
}

/// A `--default-deadline` entry the gateway cannot use.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadDefaultDeadline {
    #[error("{0:?} is not KIND=SECONDS")]
    Form(String),
    #[error("{0:?} is not a kind this build proves")]
    UnknownKind(String),
    #[error("{0:?}: the seconds must be an integer from 1 to {MAX_DEADLINE_SECS}")]
    Seconds(String),
}

impl Policy {
    /// The deadline `job` gets: the one its request named, else this gateway's default for its
    /// kind, else its kind's own.
    /// A default deadline longer than this gateway's ledger keeps records is lowered to the
    /// longest it allows; a named one that long is refused by [`Policy::admit`].
    pub fn deadline_secs(&self, job: &ValidJob) -> u64 {
        let kind = job.circuit.kind();
        let secs = match self.default_deadlines.iter().rev().find(|d| d.kind == kind) {
            Some(d) if job.deadline_is_default => d.secs,
            _ => job.deadline_secs,
        };
        secs.min(self.max_deadline_secs)
    }

    /// Refuse what this gateway will not run: test kinds unless enabled, test jobs above the
    /// size bound (one small request must not make hundreds of GiB of witnesses), and proofs
    /// the gateway could not verify (no verifying key here: the job would fail at the end).
    pub fn admit(&self, job: &ValidJob) -> Result<(), ApiError> {
        if !job.deadline_is_default && job.deadline_secs > self.max_deadline_secs {
            return Err(invalid(format!(
                "deadline_secs must be at most {} on this gateway: its ledger keeps a job's record for --job-retention-hours, and the record must outlive the deadline",
                self.max_deadline_secs
            )));
        }
        self.check_circuit(&job.circuit, job.partitions)
    }

    /// [`Policy::admit`] for `partitions` partitions of `circuit`.
    pub fn check_circuit(&self, circuit: &CircuitSpec, partitions: u32) -> Result<(), ApiError> {
        let kind = circuit.kind();
        if let Some(per_partition) = snarkflow_circuits::test_constraints(circuit) {
            if !self.enable_test_kinds {
                return Err(invalid(format!(
                    "{} is a test kind and this gateway does not accept test kinds (start it with --enable-test-kinds)",
                    kind.as_str()
                )));
            }
            let total = per_partition.saturating_mul(u64::from(partitions));
            if total > self.max_test_job_constraints {
                return Err(invalid(format!(
                    "this {} job is about {total} constraints over {} partitions; this gateway takes test jobs of at most {} (--max-test-job-constraints)",
                    kind.as_str(),
                    partitions,
                    self.max_test_job_constraints
                )));
            }
        }
        if snarkflow_circuits::verified_whole(kind) {
            let stem = snarkflow_circuits::param_file_stem(circuit).map_err(|e| invalid(e.to_string()))?;
            let vk = self.params_dir.join(format!("{stem}.vk"));
            // answers name the file, not where this host keeps it (the log has the path)
            let file = format!("{stem}.vk");
            if !vk.exists() {
                tracing::warn!(path = %vk.display(), circuit = %circuit.circuit_id(), "no verifying key");
                return Err(ApiError::NotServed(format!(
                    "this gateway has no verifying key {file} for {}, so it could not verify the proof; install the parameters in its parameter directory",
                    circuit.circuit_id()
                )));
            }
            if let Some(published) = &self.published {
                published.check_published(&vk).map_err(|e| {
                    tracing::warn!(error = %e, "a verifying key that is not the published one");
                    ApiError::NotServed(format!(
                        "{file} is not the file filecoin-proofs publishes under that name: this gateway would verify proofs \
                         against a key the chain does not use. Replace it with `snarkflow params fetch`, or start the gateway \
                         with --test-params if its parameter directory holds test parameters"
                    ))
                })?;
            }
        }
        Ok(())
    }
}

fn invalid(msg: impl Into<String>) -> ApiError {
    ApiError::Invalid(msg.into())
}

/// A job request before validation, whichever door it came through: the JSON body of
/// `POST /v1/jobs` ([`JobRequest::from_json`]) or a cuzk `SubmitProofRequest` (`grpc::request`,
/// with its bytes kept binary). [`validate`] checks both the same way.
#[derive(Debug, Clone)]
pub struct JobRequest {
    pub kind: JobKind,
    pub input: RequestInput,
    pub priority: Option<Priority>,
    pub idempotency_key: Option<String>,
    pub deadline_secs: Option<u64>,
}

/// A request's input: the JSON object of `POST /v1/jobs`, read by the kind's module, or a
/// Filecoin input whose fields are already binary.
#[derive(Debug, Clone)]
pub enum RequestInput {
    Json(Map<String, Value>),
    Filecoin(FilecoinRequest),
}

impl JobRequest {
    /// A Filecoin job of `request`'s kind with the kind's default priority and deadline.
    pub fn filecoin(request: FilecoinRequest) -> Self {
        JobRequest {
            kind: snarkflow_circuits::filecoin_request_kind(&request),
            input: RequestInput::Filecoin(request),
            priority: None,
            idempotency_key: None,
            deadline_secs: None,
        }
    }

    /// The kind a `POST /v1/jobs` body names, if it is a JSON object naming a known one (read
    /// without building any of its values: what the body's validation slot depends on).
    pub fn kind_of_json(body: &[u8]) -> Option<JobKind> {
        #[derive(serde::Deserialize)]
        struct Kind<'a> {
            #[serde(borrow)]
            kind: Option<std::borrow::Cow<'a, str>>,
        }
        let named = serde_json::from_slice::<Kind>(body).ok()?.kind?;
        snarkflow_circuits::kind_named(&named)
    }

    /// Read a `POST /v1/jobs` body from its bytes, as [`JobRequest::from_json`] does, without
    /// building the JSON tree of an input field its kind takes as text
    /// (`snarkflow_circuits::text_fields`: PoRep's `c1_raw`, whose tree would be 16-32x the
    /// C1 output's size): such a field reaches the kind as the JSON text it was sent as.
    pub fn from_json_bytes(body: &[u8]) -> Result<Self, ApiError> {
        use serde_json::value::RawValue;
        let envelope: std::collections::BTreeMap<String, &RawValue> = serde_json::from_slice(body).map_err(|e| {
            if e.is_data() {
                ApiError::BadRequest("request body must be a JSON object".into())
            } else {
                not_json(e)
            }
        })?;
        let kind = envelope.get("kind").and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
        let text_fields =
            kind.as_deref().and_then(snarkflow_circuits::kind_named).map_or(&[][..], snarkflow_circuits::text_fields);
        let mut obj = Map::new();
        for (key, raw) in envelope {
            let value = if key == "input" && raw.get().trim_start().starts_with('{') {
                let input: std::collections::BTreeMap<String, &RawValue> =
                    serde_json::from_str(raw.get()).map_err(not_json)?;
                let mut fields = Map::new();
                for (name, raw) in input {
                    let value = if text_fields.contains(&name.as_str()) && raw.get().trim_start().starts_with('{') {
                        Value::String(raw.get().to_owned())
                    } else {
                        serde_json::from_str(raw.get()).map_err(not_json)?
                    };
                    fields.insert(name, value);
                }
                Value::Object(fields)
            } else {
                serde_json::from_str(raw.get()).map_err(not_json)?
            };
            obj.insert(key, value);
        }
        Self::from_json(Value::Object(obj))
    }

    /// Read a `POST /v1/jobs` body: the envelope's fields and their types (the values' ranges
    /// and the input are [`validate`]'s).
    pub fn from_json(body: Value) -> Result<Self, ApiError> {
        let Value::Object(mut obj) = body else {
            return Err(ApiError::BadRequest("request body must be a JSON object".into()));
        };
        for key in obj.keys() {
            if !REQUEST_FIELDS.contains(&key.as_str()) {
                return Err(invalid(format!("unknown field {key:?}")));
            }
        }
        let kind_name = match obj.get("kind") {
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(invalid("kind must be a string")),
            None => return Err(invalid("kind is required")),
        };
        let kind = snarkflow_circuits::kind_named(kind_name).ok_or_else(|| {
            let known: Vec<_> = snarkflow_circuits::KINDS.iter().map(|k| k.as_str()).collect();
            invalid(format!("unknown kind {kind_name:?}; known kinds: {}", known.join(", ")))
        })?;
        let input = match obj.remove("input") {
            Some(Value::Object(m)) => m,
            Some(_) => return Err(invalid("input must be an object")),
            None => return Err(invalid("input is required")),
        };
        let priority =
            match obj.get("priority") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(Priority::parse(s).ok_or_else(|| {
                    invalid(format!("priority must be one of low, normal, high, critical; got {s:?}"))
                })?),
                Some(_) => return Err(invalid("priority must be a string")),
            };
        let idempotency_key = match obj.get("idempotency_key") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(bad_idempotency_key()),
        };
        let deadline_secs = match obj.get("deadline_secs") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(bad_deadline)?),
        };
        Ok(JobRequest { kind, input: RequestInput::Json(input), priority, idempotency_key, deadline_secs })
    }
}

fn not_json(e: serde_json::Error) -> ApiError {
    ApiError::BadRequest(format!("request body is not valid JSON: {e}"))
}

fn bad_idempotency_key() -> ApiError {
    invalid(format!("idempotency_key must be a string of 1 to {MAX_IDEMPOTENCY_KEY} bytes"))
}

fn bad_deadline() -> ApiError {
    invalid(format!("deadline_secs must be an integer from 1 to {MAX_DEADLINE_SECS}"))
}

/// Validate a job request: the envelope here, the input by its kind's module.
pub fn validate(request: JobRequest) -> Result<ValidJob, ApiError> {
    let JobRequest { kind, input, priority: requested_priority, idempotency_key, deadline_secs } = request;
    let info = snarkflow_circuits::known_kind(kind).map_err(|e| invalid(e.to_string()))?;
    let priority = requested_priority.unwrap_or(info.default_priority);
    if idempotency_key.as_ref().is_some_and(|k| k.is_empty() || k.len() > MAX_IDEMPOTENCY_KEY) {
        return Err(bad_idempotency_key());
    }
    let deadline_is_default = deadline_secs.is_none();
    let deadline_secs = match deadline_secs {
        None => info.default_deadline_secs,
        Some(n) if (1..=MAX_DEADLINE_SECS).contains(&n) => n,
        Some(_) => return Err(bad_deadline()),
    };
    let (parsed, fingerprint) = match input {
        RequestInput::Json(input) => {
            let parsed = snarkflow_circuits::parse_request(kind, &input).map_err(|e| invalid(e.to_string()))?;
            (parsed, request_fingerprint(kind, &input))
        }
        RequestInput::Filecoin(request) => {
            let made = snarkflow_circuits::filecoin_request_kind(&request);
            if made != kind {
                return Err(invalid(format!("a {made} input for a {kind} job")));
            }
            // of the binary fields: a retry through the same door repeats it
            let fingerprint = request.fingerprint(kind.as_str());
            let parsed = snarkflow_circuits::parse_filecoin_request(request).map_err(|e| invalid(e.to_string()))?;
            (parsed, fingerprint)
        }
    };
    Ok(ValidJob {
        circuit: parsed.spec,
        partitions: parsed.partitions,
        seed: parsed.seed,
        priority,
        requested_priority,
        idempotency_key,
        deadline_secs,
        deadline_is_default,
        input: parsed.input.map(Arc::new),
        fingerprint,
    })
}

/// SHA-256 of `{"input": ..., "kind": ...}` serialized with sorted keys.
fn request_fingerprint(kind: JobKind, input: &Map<String, Value>) -> String {
    use sha2::Digest as _;
    let canonical = serde_json::json!({ "kind": kind.as_str(), "input": input });
    hex::encode(sha2::Sha256::digest(serde_json::to_vec(&canonical).expect("JSON values serialize")))
}

#[cfg(test)]
mod published_keys;
#[cfg(test)]
mod tests;
