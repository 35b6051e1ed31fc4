//! Handler tests on the router itself (no socket), against a real nats-server. Who may do
//! what (tokens, tenants, quotas, idempotency keys, submit slots) is in `tenants.rs`.

mod tenants;

use axum::body::Body;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_gateway::{app, AppState, Auth, Metrics, Policy, QuotaLimits, Quotas, TokenStore};
use snarkflow_service::tokens::{Scope, TokenFile};
use snarkflow_testkit::NatsServer;
use snarkflow_wire::Priority;
use tower::ServiceExt;

/// Generous limits, test kinds on, authentication off: what the tests below that are not
/// about limits or authentication need.
fn open_settings() -> (Auth, QuotaLimits, Policy) {
    let limits = QuotaLimits { max_jobs: 0, max_partitions: 0, submits_per_minute: 0 };
    let policy = Policy {
        enable_test_kinds: true,
        max_test_job_constraints: 1 << 24,
        params_dir: std::env::temp_dir(),
        published: None,
        default_deadlines: Vec::new(),
        max_deadline_secs: 6 * 24 * 3600,
    };
    (Auth::Disabled, limits, policy)
}

async fn state(nats: &NatsServer, max_body_bytes: usize) -> AppState {
    state_with(nats, max_body_bytes, open_settings()).await
}

async fn state_with(
    nats: &NatsServer,
    max_body_bytes: usize,
    (auth, limits, policy): (Auth, QuotaLimits, Policy),
) -> AppState {
    let bus = Bus::connect(BusConfig::new(nats.url())).await.unwrap();
    AppState {
        ledger: bus.ledger().clone(),
        bus,
        metrics: Metrics::new(),
        max_body_bytes,
        auth,
        quotas: Quotas::new(limits),
        policy: Arc::new(policy),
        request_timeout: Duration::from_secs(60),
        event_loop: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        index: snarkflow_gateway::LedgerIndex::default(),
        ledger_room: snarkflow_gateway::LedgerRoom::new(10),
        validations: snarkflow_gateway::ValidationSlots::new(2),
    }
}

async fn call(state: AppState, req: Request<Body>) -> (StatusCode, serde_json::Value) {
    let (status, _, json) = call_with_headers(state, req).await;
    (status, json)
}

async fn call_with_headers(state: AppState, req: Request<Body>) -> (StatusCode, HeaderMap, serde_json::Value) {
    let resp = app(state).oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

fn post(body: impl Into<Body>) -> Request<Body> {
    Request::post("/v1/jobs").header("content-type", "application/json").body(body.into()).unwrap()
}

fn as_token(mut req: Request<Body>, token: &str) -> Request<Body> {
    req.headers_mut().insert(header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
    req
}

/// A tokens file with the given tenants' tokens; returns the auth and the tokens in order.
fn tokens(dir: &std::path::Path, specs: &[(&str, &[Scope], Priority)]) -> (Auth, Vec<String>) {
    let path = dir.join("tokens.json");
    let mut file = TokenFile::default();
    let tokens =
        specs.iter().map(|(tenant, scopes, max)| file.create(tenant, scopes.to_vec(), *max, 0).unwrap().0).collect();
    file.save(&path).unwrap();
    (Auth::Tokens(Arc::new(TokenStore::open(path).unwrap())), tokens)
}

const DENSE: &str = r#"{"kind": "dense-chain", "input": {"constraints": 8}}"#;

#[tokio::test]
async fn oversized_body_is_a_json_413_and_enqueues_nothing() {
    let nats = NatsServer::start();
    let state = state(&nats, 1024).await;
    let body = format!(r#"{{"kind": "dense-chain", "input": {{"constraints": 8}}, "x": "{}"}}"#, "a".repeat(4096));
    let (status, json) = call(state.clone(), post(body)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json["error"]["code"], "payload_too_large");
    assert!(json["error"]["message"].as_str().unwrap().contains("1024"));
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0);
}

#[tokio::test]
async fn accepted_job_is_recorded_and_fanned_out_per_partition() {
    let nats = NatsServer::start();
    let state = state(&nats, 1 << 20).await;
    let (status, json) =
        call(state.clone(), post(r#"{"kind": "dense-chain", "input": {"constraints": 8, "partitions": 4}}"#)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(json["state"], "queued");
    let id = json["id"].as_str().unwrap();
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 4, "one synth task per partition");
    let record = state.ledger.get(id).await.unwrap().unwrap();
    assert_eq!(record.partitions.len(), 4);

    // finished jobs are not kept forever: the ledger bucket expires records
    assert_eq!(state.ledger.retention().await.unwrap(), BusConfig::DEFAULT_JOB_RETENTION);

    let (status, view) = call(state.clone(), Request::get(format!("/v1/jobs/{id}")).body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(view["partitions"], serde_json::json!({"total": 4, "synthesized": 0, "proved": 0}));
}

#[tokio::test]
async fn unknown_routes_and_ids_are_json_404s() {
    let nats = NatsServer::start();
    let state = state(&nats, 1 << 20).await;
    // every spelling of a UUID but the hyphenated one a job id has (urn:uuid: reached the
    // ledger as a key NATS refuses: 503)
    for path in [
        "/v2/whatever",
        "/v1/jobs/00000000-0000-0000-0000-000000000000",
        "/v1/jobs/x/proof",
        "/v1/jobs/urn:uuid:00000000-0000-0000-0000-000000000000",
        "/v1/jobs/{00000000-0000-0000-0000-000000000000}",
        "/v1/jobs/00000000000000000000000000000000",
    ] {
        let (status, json) = call(state.clone(), Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(json["error"]["code"], "not_found", "{path}");
    }
}

#[tokio::test]
async fn test_kinds_are_off_unless_enabled_and_bounded_when_on() {
    let nats = NatsServer::start();
    let (auth, limits, mut policy) = open_settings();
    policy.enable_test_kinds = false;
    let state = state_with(&nats, 1 << 20, (auth.clone(), limits, policy.clone())).await;
    let (status, json) = call(state.clone(), post(DENSE)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(json["error"]["message"].as_str().unwrap().contains("--enable-test-kinds"), "{json}");
    // on, but the amplification request (2^26 constraints x 64 partitions: ~128 GiB of witnesses)
    policy.enable_test_kinds = true;
    let state = state_with(&nats, 1 << 20, (auth, limits, policy)).await;
    let huge = r#"{"kind": "dense-chain", "input": {"constraints": 67108864, "partitions": 64}}"#;
    let (status, json) = call(state.clone(), post(huge)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(json["error"]["message"].as_str().unwrap().contains("--max-test-job-constraints"), "{json}");
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0);
}

#[tokio::test]
async fn a_kind_the_gateway_cannot_verify_is_refused_saying_why() {
    let nats = NatsServer::start();
    let (auth, limits, mut policy) = open_settings();
    let empty = tempfile::tempdir().unwrap();
    policy.params_dir = empty.path().to_owned();
    let state = state_with(&nats, 1 << 20, (auth, limits, policy)).await;
    // a well-formed WinningPoSt request (sparse-tree vanilla proofs that pass the submission checks)
    let input = snarkflow_filecoin::sparse_post::post_request(
        snarkflow_filecoin::PostKind::Winning,
        2048,
        1000,
        &[1],
        &mut rand::thread_rng(),
    )
    .unwrap();
    let body = serde_json::json!({"kind": "winning-post", "input": input}).to_string();
    let (status, json) = call(state.clone(), post(body)).await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("not_served")),
        "{json}"
    );
    let message = json["error"]["message"].as_str().unwrap();
    // the file it lacks, not where this host keeps its parameters
    assert!(message.contains(".vk") && !message.contains(&empty.path().display().to_string()), "{message}");
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0);
}

/// Resident memory of this process, from /proc (kB).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_unauthenticated_uploads_is_refused_at_once_and_costs_no_memory() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, _) = tokens(dir.path(), &[("acme", &[Scope::Submit], Priority::Normal)]);
    let (_, limits, policy) = open_settings();
    let state = state_with(&nats, 96 << 20, (auth, limits, policy)).await;
    let before = rss_kib();
    // 200 uploads that announce 96 MiB and never finish sending it: a gateway that read bodies
    // before the token would hold them (and up to 96 MiB each) until the request timeout
    let uploads = (0..200).map(|_| {
        let chunk = axum::body::Bytes::from_static(&[b'{'; 4096]);
        let body = futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()))
            .take(64)
            .chain(futures::stream::pending());
        let req = Request::post("/v1/jobs")
            .header("content-type", "application/json")
            .header("content-length", (96u64 << 20).to_string())
            .header(header::AUTHORIZATION, "Bearer sfk_forged_0000")
            .body(Body::from_stream(body))
            .unwrap();
        tokio::spawn(call(state.clone(), req))
    });
    let answered = tokio::time::timeout(Duration::from_secs(20), futures::future::join_all(uploads))
        .await
        .expect("every upload answered without waiting for its body");
    for result in answered {
        let (status, json) = result.unwrap();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{json}");
    }
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    println!("RSS grew {grown_mib} MiB for 200 refused uploads");
    assert!(grown_mib < 64, "200 refused uploads took {grown_mib} MiB");
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0);
}

/// The served OpenAPI document names only routes the router has: every documented path and
/// method answers something other than "no such endpoint" (404 from the fallback) or 405.
#[tokio::test]
async fn every_path_of_the_openapi_document_is_routed() {
    let nats = NatsServer::start();
    let state = state(&nats, 1 << 20).await;
    let (status, doc) = call(state.clone(), Request::get("/v1/openapi.json").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc, serde_json::from_str::<serde_json::Value>(&snarkflow_gateway::openapi_document()).unwrap());
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() >= 7, "{paths:?}");
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            let uri = path.replace("{id}", "00000000-0000-0000-0000-000000000000");
            let req = Request::builder().method(method.to_uppercase().as_str()).uri(&uri).body(Body::empty()).unwrap();
            let (status, body) = call(state.clone(), req).await;
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            assert!(
                !(status == StatusCode::NOT_FOUND && body["error"]["message"] == "no such endpoint"),
                "{method} {path} is documented but not routed"
            );
        }
    }
}
