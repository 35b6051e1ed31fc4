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
    /// ([`max_deadline_for_retention`]).
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
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, secs) = s.split_once('=').ok_or_else(|| format!("{s:?} is not KIND=SECONDS"))?;
        let kind = snarkflow_circuits::kind_named(kind.trim())
            .ok_or_else(|| format!("{kind:?} is not a kind this build proves"))?;
        let secs = secs.trim().parse().ok().filter(|n| (1..=MAX_DEADLINE_SECS).contains(n));
        let secs =
            secs.ok_or_else(|| format!("{s:?}: the seconds must be an integer from 1 to {MAX_DEADLINE_SECS}"))?;
        Ok(DefaultDeadline { kind, secs })
    }
}

impl Policy {
    /// The deadline `job` gets: the one its request named, else this gateway's default for its
    /// kind, else its kind's own.
    /// A default deadline longer than this gateway's ledger keeps records is lowered to the
    /// longest it allows; a named one that long is refused by [`Policy::check`].
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
    pub fn check(&self, job: &ValidJob) -> Result<(), ApiError> {
        if !job.deadline_is_default && job.deadline_secs > self.max_deadline_secs {
            return Err(invalid(format!(
                "deadline_secs must be at most {} on this gateway: its ledger keeps a job's record for --job-retention-hours, and the record must outlive the deadline",
                self.max_deadline_secs
            )));
        }
        self.check_circuit(&job.circuit, job.partitions)
    }

    /// [`Policy::check`] for `partitions` partitions of `circuit`.
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
mod tests {
    use super::*;
    use serde_json::json;

    fn check(body: Value) -> Result<ValidJob, ApiError> {
        validate(JobRequest::from_json(body)?)
    }

    fn err(body: Value) -> String {
        match check(body) {
            Err(ApiError::Invalid(m) | ApiError::BadRequest(m)) => m,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn accepts_a_full_request() {
        let job = check(json!({
            "kind": "dense-chain", "input": {"constraints": 1024, "partitions": 3, "seed": 5},
            "priority": "high", "idempotency_key": "k1"
        }))
        .unwrap();
        assert_eq!(job.circuit, snarkflow_circuits::circuit("dense-chain-c1024"));
        assert_eq!((job.partitions, job.seed, job.priority), (3, 5, Priority::High));
        assert_eq!(job.idempotency_key.as_deref(), Some("k1"));
    }

    /// A WinningPoSt's own deadline is its 30 s epoch; `--default-deadline KIND=SECONDS`
    /// replaces a kind's default for requests that name none, never a deadline a request names.
    #[test]
    fn a_gateway_default_deadline_replaces_the_kinds_only_where_the_request_names_none() {
        let winning = snarkflow_circuits::kind_info(snarkflow_circuits::kind_named("winning-post").unwrap()).unwrap();
        assert_eq!(winning.default_deadline_secs, 30);
        let policy = Policy {
            enable_test_kinds: true,
            max_test_job_constraints: 1 << 20,
            params_dir: std::env::temp_dir(),
            published: None,
            default_deadlines: vec!["dense-chain=60".parse().unwrap(), "winning-post=600".parse().unwrap()],
            max_deadline_secs: MAX_DEADLINE_SECS,
        };
        let unnamed = check(json!({"kind": "dense-chain", "input": {"constraints": 8}})).unwrap();
        assert_eq!((unnamed.deadline_secs, policy.deadline_secs(&unnamed)), (3600, 60));
        let named = check(json!({"kind": "dense-chain", "input": {"constraints": 8}, "deadline_secs": 7})).unwrap();
        assert_eq!(policy.deadline_secs(&named), 7);
        let other = check(json!({"kind": "sha256-chain", "input": {"blocks": 1}})).unwrap();
        assert_eq!(policy.deadline_secs(&other), 3600, "a kind the flag does not name keeps its own");
        for (bad, says) in [
            ("winning-post", "is not KIND=SECONDS"),
            ("no-such-kind=5", "is not a kind this build proves"),
            ("winning-post=0", "an integer from 1 to"),
            ("winning-post=soon", "an integer from 1 to"),
        ] {
            let e = bad.parse::<DefaultDeadline>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// A job's record must outlive its deadline: with a ledger that keeps records a day, a named
    /// deadline past what that allows is refused, and a default one is lowered to it.
    #[test]
    fn deadlines_fit_inside_the_ledgers_retention() {
        assert_eq!(max_deadline_for_retention(7 * 24 * 3600), MAX_DEADLINE_SECS, "the default week");
        let day = max_deadline_for_retention(24 * 3600);
        assert_eq!(day, 24 * 3600 - 24 * 3600 / 7);
        let policy = Policy {
            enable_test_kinds: true,
            max_test_job_constraints: 1 << 20,
            params_dir: std::env::temp_dir(),
            published: None,
            default_deadlines: vec!["dense-chain=86400".parse().unwrap()],
            max_deadline_secs: day,
        };
        let named = check(json!({"kind": "dense-chain", "input": {"constraints": 8}, "deadline_secs": 86000})).unwrap();
        let e = policy.check(&named).unwrap_err().to_string();
        assert!(e.contains(&format!("deadline_secs must be at most {day}")), "{e}");
        let within = check(json!({"kind": "dense-chain", "input": {"constraints": 8}, "deadline_secs": 3600})).unwrap();
        assert!(policy.check(&within).is_ok());
        let unnamed = check(json!({"kind": "dense-chain", "input": {"constraints": 8}})).unwrap();
        assert!(policy.check(&unnamed).is_ok(), "a default deadline is lowered, not refused");
        assert_eq!(policy.deadline_secs(&unnamed), day);
    }

    #[test]
    fn the_fingerprint_is_the_kind_and_input_whatever_the_key_order_or_priority() {
        let a = check(json!({"kind": "dense-chain", "input": {"constraints": 8, "seed": 1}})).unwrap();
        let b =
            check(json!({"input": {"seed": 1, "constraints": 8}, "kind": "dense-chain", "priority": "low"})).unwrap();
        let c = check(json!({"kind": "dense-chain", "input": {"constraints": 8, "seed": 2}})).unwrap();
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_ne!(a.fingerprint, c.fingerprint);
    }

    #[test]
    fn defaults_partitions_and_priority() {
        let job = check(json!({"kind": "sha256-chain", "input": {"blocks": 2}})).unwrap();
        assert_eq!((job.partitions, job.priority), (1, Priority::Normal));
    }

    #[test]
    fn errors_name_the_field() {
        let too_late =
            serde_json::json!({"kind": "dense-chain", "input": {"constraints": 8}, "deadline_secs": 7 * 24 * 3600});
        let e = check(too_late).unwrap_err().to_string();
        assert!(e.contains("deadline_secs must be an integer from 1 to 518400"), "{e}");
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

#[cfg(test)]
mod published_keys {
    use super::*;
    use snarkflow_filecoin::manifest::{digest_file, Manifest};

    /// A 2 KiB PoRep verifying key (any bytes) in a fresh directory, and a policy that checks
    /// keys against a manifest publishing `digest` under its name (`None`: a test cache).
    fn policy(dir: &std::path::Path, digest: Option<&str>) -> (Policy, CircuitSpec) {
        let spec = snarkflow_circuits::circuit("porep-c2-2KiB");
        let name = format!("{}.vk", snarkflow_circuits::param_file_stem(&spec).unwrap());
        std::fs::write(dir.join(&name), b"a verifying key").unwrap();
        let published = digest.map(|d| {
            Manifest::parse(&format!(r#"{{"{name}": {{"cid": "Qm", "digest": "{d}", "sector_size": 2048}}}}"#)).unwrap()
        });
        let policy = Policy {
            enable_test_kinds: false,
            max_test_job_constraints: 0,
            params_dir: dir.to_owned(),
            published,
            default_deadlines: Vec::new(),
            max_deadline_secs: super::MAX_DEADLINE_SECS,
        };
        (policy, spec)
    }

    #[test]
    fn a_verifying_key_that_is_not_the_published_one_is_refused_unless_the_cache_is_a_test_cache() {
        let dir = tempfile::tempdir().unwrap();
        let (wrong, spec) = policy(dir.path(), Some("00000000000000000000000000000000"));
        match wrong.check_circuit(&spec, 1) {
            Err(ApiError::NotServed(m)) => {
                assert!(m.contains("not the file filecoin-proofs publishes") && m.contains("--test-params"), "{m}");
                assert!(!m.contains(&*dir.path().to_string_lossy()), "the answer names no host path: {m}");
            }
            other => panic!("a key with another digest was accepted: {other:?}"),
        }
        let vk = dir.path().join(format!("{}.vk", snarkflow_circuits::param_file_stem(&spec).unwrap()));
        let (right, _) = policy(dir.path(), Some(&digest_file(&vk).unwrap()));
        right.check_circuit(&spec, 1).unwrap();
        let (test_cache, _) = policy(dir.path(), None);
        test_cache.check_circuit(&spec, 1).unwrap();
    }

    #[test]
    fn a_forged_key_of_the_same_length_with_a_forged_check_record_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (_, spec) = policy(dir.path(), None);
        let vk = dir.path().join(format!("{}.vk", snarkflow_circuits::param_file_stem(&spec).unwrap()));
        let published = digest_file(&vk).unwrap();
        let (right, _) = policy(dir.path(), Some(&published));
        right.check_circuit(&spec, 1).unwrap();
        // whoever can write the directory swaps the key for another of the same length and
        // writes the record a cached check would believe: this size, this time, the published digest
        let mut forged = std::fs::read(&vk).unwrap();
        let last = forged.len() - 1;
        forged[last] ^= 0x5a;
        std::fs::write(&vk, &forged).unwrap();
        let meta = std::fs::metadata(&vk).unwrap();
        let mtime = meta.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        std::fs::write(vk.with_extension("vk.checked"), format!("{} {mtime} {published}\n", meta.len())).unwrap();
        match right.check_circuit(&spec, 1) {
            Err(ApiError::NotServed(m)) => assert!(m.contains("not the file filecoin-proofs publishes"), "{m}"),
            other => panic!("a forged key was accepted: {other:?}"),
        }
    }
}
