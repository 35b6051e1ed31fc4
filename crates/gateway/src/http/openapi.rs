//! The HTTP API described as OpenAPI 3.1 (utoipa), served at `GET /v1/openapi.json` and
//! committed as `docs/openapi.json` (a test fails when the two differ; regenerate with
//! `SNARKFLOW_WRITE_OPENAPI=1 cargo test -p snarkflow-gateway --lib openapi`).
//!
//! The response schemas are derived from the types the handlers serialize ([`JobView`] and its
//! parts); the request body's fields are checked against what validation accepts, and the
//! enumerations (kinds, priorities, states) are filled in from the wire types, so none of them
//! can drift from the code.

use utoipa::openapi::schema::Schema;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{OpenApi as Document, RefOr};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::cluster::{ClusterView, LaneView};
use crate::jobs::view::{Bytes, JobView, PartitionCounts, PartitionView, Timings};

/// `POST /v1/jobs`: one proof job.
#[derive(ToSchema)]
#[allow(dead_code)] // a description of the body `validate` reads, never built
pub(crate) struct JobRequest {
    /// The proof kind (the test kinds `sha256-chain` and `dense-chain` only where the gateway
    /// runs with `--enable-test-kinds`).
    kind: String,
    /// The kind's input. PoRep C2: `{"c1": <C1 output as Curio and lotus-bench write it>,
    /// "miner_id": <actor id>}` or the C1 envelope itself; SnapDeals, WindowPoSt and
    /// WinningPoSt: their vanilla proofs and public inputs (docs/filecoin.md); test kinds:
    /// `{"blocks"|"constraints": n, "partitions": n, "seed": n}`. Checked completely before the
    /// job is accepted; a wrong field is named in the 422 answer.
    #[schema(value_type = Object)]
    input: serde_json::Value,
    /// Scheduling priority; the kind's default when absent (WinningPoSt `critical`, WindowPoSt
    /// `high`, the others `normal`). A token may cap it.
    priority: Option<String>,
    /// A retry with the same key and the same kind and input names the same job (200) instead
    /// of making another; the same key with another request is refused (409).
    #[schema(min_length = 1, max_length = 128)]
    idempotency_key: Option<String>,
    /// Seconds from now by which the job must be done, else it fails (the kind's default when
    /// absent).
    #[schema(minimum = 1, maximum = 518400)]
    deadline_secs: Option<u64>,
}

/// A job accepted (or found again by its idempotency key).
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct Submitted {
    id: String,
    /// The job's state now (`queued` for a new job).
    state: String,
}

/// `GET /v1/jobs`: newest first.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct JobList {
    jobs: Vec<JobView>,
}

/// Every error of the API.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct ErrorBody {
    error: ErrorDetail,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct ErrorDetail {
    /// Machine-readable: `bad_request`, `invalid_input`, `payload_too_large`, `not_found`,
    /// `unauthorized`, `forbidden`, `too_many_requests`, `request_timeout`, `not_served`,
    /// `conflict`, `idempotency_key_reused`, `storage_full`, `unavailable`, `internal`.
    code: String,
    /// What is wrong, in words (names the field for `invalid_input`).
    message: String,
}

#[utoipa::path(post, path = "/v1/jobs", tag = "jobs", request_body = JobRequest,
    responses(
        (status = 202, description = "Accepted: a new job", body = Submitted),
        (status = 200, description = "The job this idempotency key already names", body = Submitted),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token lacks the submit scope or the priority", body = ErrorBody),
        (status = 409, description = "The idempotency key names a different request", body = ErrorBody),
        (status = 408, description = "The request (body upload included) took longer than the gateway's --request-timeout-secs", body = ErrorBody),
        (status = 413, description = "The body is over the gateway's limit", body = ErrorBody),
        (status = 422, description = "A field is missing, of the wrong type or out of range", body = ErrorBody),
        (status = 429, description = "A tenant quota or rate limit (Retry-After)", body = ErrorBody),
        (status = 503, description = "No verifying key for the kind, storage full (Retry-After), or NATS unavailable", body = ErrorBody),
    ))]
#[allow(dead_code)]
fn submit() {}

#[utoipa::path(get, path = "/v1/jobs", tag = "jobs",
    params(
        ("state" = Option<String>, Query, description = "Only jobs in this state"),
        ("limit" = Option<u32>, Query, description = "At most this many (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "The caller's jobs (every job for an admin), newest first", body = JobList),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 422, description = "An unknown state or a bad limit", body = ErrorBody),
    ))]
#[allow(dead_code)]
fn list() {}

#[utoipa::path(get, path = "/v1/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "The job id")),
    responses(
        (status = 200, description = "The job: state, progress, timings, bytes", body = JobView),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 404, description = "No such job (or not the caller's)", body = ErrorBody),
    ))]
#[allow(dead_code)]
fn get() {}

#[utoipa::path(delete, path = "/v1/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "The job id")),
    responses(
        (status = 200, description = "Cancelled: the job, state `cancelled`", body = JobView),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token lacks the cancel scope", body = ErrorBody),
        (status = 404, description = "No such job (or not the caller's)", body = ErrorBody),
        (status = 409, description = "The job is already done or failed", body = ErrorBody),
    ))]
#[allow(dead_code)]
fn cancel() {}

#[utoipa::path(get, path = "/v1/jobs/{id}/proof", tag = "jobs",
    params(("id" = String, Path, description = "The job id")),
    responses(
        (status = 200, description = "The proof bytes, verified: the partition proofs (192 bytes each) in order", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 404, description = "No such job (or not the caller's)", body = ErrorBody),
        (status = 409, description = "The job is not done", body = ErrorBody),
    ))]
#[allow(dead_code)]
fn proof() {}

#[utoipa::path(get, path = "/v1/cluster", tag = "operations",
    responses((status = 200, description = "The gpu-workers as they report themselves (memory plan per circuit, the partition on each device), each stage's priority lanes (tasks waiting, held, the oldest one's age) and the jobs per state", body = ClusterView),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 503, body = ErrorBody)))]
#[allow(dead_code)]
fn cluster() {}

#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process is up")))]
#[allow(dead_code)]
fn healthz() {}

#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Connected to NATS and applying events"),
        (status = 503, description = "Not ready; the body says why"),
    ))]
#[allow(dead_code)]
fn readyz() {}

#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain")))]
#[allow(dead_code)]
fn metrics() {}

#[utoipa::path(get, path = "/v1/openapi.json", tag = "operations",
    responses((status = 200, description = "This document", content_type = "application/json")))]
#[allow(dead_code)]
fn openapi() {}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "snarkflow gateway",
        description = "Distributed Groth16 proving for Filecoin: submit a job, poll it, fetch its verified proof, cancel it. Every request but /healthz, /readyz, /metrics and this document carries `Authorization: Bearer <token>` unless the gateway runs with --insecure-no-auth. Curio speaks cuzk's gRPC interface instead (docs/curio.md)."
    ),
    paths(submit, list, get, cancel, proof, cluster, healthz, readyz, metrics, openapi),
    components(schemas(JobRequest, Submitted, JobList, ErrorBody, ErrorDetail, JobView, PartitionCounts, PartitionView, Timings, Bytes, ClusterView, LaneView)),
    modifiers(&Enumerations),
    security(("bearer" = [])),
)]
struct ApiDoc;

/// The enumerations and the security scheme, filled in from the code.
struct Enumerations;

impl Modify for Enumerations {
    fn modify(&self, doc: &mut Document) {
        let Some(components) = doc.components.as_mut() else { return };
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
        let kinds = snarkflow_circuits::documented_kinds();
        let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        let priorities = snarkflow_wire::Priority::ALL.map(|p| p.as_str());
        let states = snarkflow_wire::JobState::ALL.map(|s| s.as_str());
        set_enum(components.schemas.get_mut("JobRequest"), "kind", &kinds);
        set_enum(components.schemas.get_mut("JobRequest"), "priority", &priorities);
        set_enum(components.schemas.get_mut("JobView"), "kind", &kinds);
        set_enum(components.schemas.get_mut("JobView"), "priority", &priorities);
        set_enum(components.schemas.get_mut("JobView"), "state", &states);
        set_enum(components.schemas.get_mut("Submitted"), "state", &states);
    }
}

/// Make `property` of an object schema a string that takes one of `values`.
fn set_enum(schema: Option<&mut RefOr<Schema>>, property: &str, values: &[&str]) {
    let Some(RefOr::T(Schema::Object(object))) = schema else { return };
    let Some(RefOr::T(Schema::Object(field))) = object.properties.get_mut(property) else { return };
    field.enum_values = Some(values.iter().map(|v| serde_json::Value::from(*v)).collect());
}

/// The document, as served and committed (pretty JSON, one trailing newline).
pub fn document() -> String {
    let mut json = ApiDoc::openapi().to_pretty_json().expect("the OpenAPI document serializes");
    json.push('\n');
    json
}

/// The field names of [`JobRequest`], for the test that holds them to what validation accepts.
#[cfg(test)]
pub(crate) fn request_fields() -> Vec<String> {
    let doc = ApiDoc::openapi();
    let schemas = doc.components.expect("components").schemas;
    match schemas.get("JobRequest") {
        Some(RefOr::T(Schema::Object(object))) => object.properties.keys().cloned().collect(),
        _ => panic!("JobRequest is an object schema"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");

    #[test]
    fn the_committed_document_is_the_served_one() {
        let served = document();
        if std::env::var_os("SNARKFLOW_WRITE_OPENAPI").is_some() {
            std::fs::write(COMMITTED, &served).expect("writing docs/openapi.json");
            return;
        }
        let committed = std::fs::read_to_string(COMMITTED).unwrap_or_default();
        assert!(
            committed == served,
            "docs/openapi.json differs from what the gateway serves: regenerate it with \
             `SNARKFLOW_WRITE_OPENAPI=1 cargo test -p snarkflow-gateway --lib openapi` and commit it"
        );
    }

    #[test]
    fn the_request_fields_are_what_validation_accepts() {
        let mut documented = request_fields();
        documented.sort();
        let mut accepted: Vec<String> = crate::jobs::validate::REQUEST_FIELDS.iter().map(|f| f.to_string()).collect();
        accepted.sort();
        assert_eq!(documented, accepted);
    }

    #[test]
    fn every_kind_priority_and_state_is_enumerated() {
        let doc: serde_json::Value = serde_json::from_str(&document()).unwrap();
        let kinds = &doc["components"]["schemas"]["JobRequest"]["properties"]["kind"]["enum"];
        assert_eq!(kinds.as_array().map(Vec::len), Some(snarkflow_circuits::documented_kinds().len()), "{kinds}");
        assert!(kinds.as_array().unwrap().contains(&"porep-c2".into()));
        let states = &doc["components"]["schemas"]["JobView"]["properties"]["state"]["enum"];
        assert_eq!(states.as_array().map(Vec::len), Some(snarkflow_wire::JobState::ALL.len()), "{states}");
        let priorities = &doc["components"]["schemas"]["JobRequest"]["properties"]["priority"]["enum"];
        assert_eq!(priorities.as_array().map(Vec::len), Some(snarkflow_wire::Priority::ALL.len()), "{priorities}");
        assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    }
}
