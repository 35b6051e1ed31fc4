//! Handler tests on the router itself (no socket), against a real nats-server.

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
        max_concurrent_submits: 8,
        validations: Arc::new(tokio::sync::Semaphore::new(2)),
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
    for path in ["/v2/whatever", "/v1/jobs/00000000-0000-0000-0000-000000000000", "/v1/jobs/x/proof"] {
        let (status, json) = call(state.clone(), Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(json["error"]["code"], "not_found", "{path}");
    }
}

#[tokio::test]
async fn requests_without_a_valid_token_are_401_and_enqueue_nothing() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, _) = tokens(dir.path(), &[("acme", &[Scope::Submit, Scope::Read], Priority::Normal)]);
    let (_, limits, policy) = open_settings();
    let state = state_with(&nats, 1 << 20, (auth, limits, policy)).await;
    let forged = "sfk_00000000_0000000000000000000000000000000000000000000000000000000000000000";
    for req in [post(DENSE), as_token(post(DENSE), forged), as_token(post(DENSE), "not-a-token")] {
        let (status, headers, json) = call_with_headers(state.clone(), req).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{json}");
        assert_eq!(json["error"]["code"], "unauthorized");
        assert!(headers.contains_key(header::WWW_AUTHENTICATE));
    }
    let (status, _) = call(state.clone(), Request::get("/v1/jobs").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // health stays open
    let (status, _) = call(state.clone(), Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0);
}

#[tokio::test]
async fn an_unauthenticated_upload_is_refused_before_its_body_is_read() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, _) = tokens(dir.path(), &[("acme", &[Scope::Submit], Priority::Normal)]);
    let (_, limits, policy) = open_settings();
    let state = state_with(&nats, 96 << 20, (auth, limits, policy)).await;
    // a body that sends one chunk and then never ends: a gateway that buffered bodies before
    // checking the token would hold this request (and its memory) until the request timeout
    let endless =
        futures::stream::once(async { Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b'{'; 1 << 20])) })
            .chain(futures::stream::pending());
    let req =
        Request::post("/v1/jobs").header("content-type", "application/json").body(Body::from_stream(endless)).unwrap();
    let answered = tokio::time::timeout(Duration::from_secs(10), call(state.clone(), req)).await;
    let (status, json) = answered.expect("answered without waiting for the body");
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{json}");
    assert_eq!(json["error"]["code"], "unauthorized");
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0);
}

#[tokio::test]
async fn tenants_see_and_cancel_only_their_own_jobs_and_scopes_and_priorities_hold() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, t) = tokens(
        dir.path(),
        &[
            ("acme", &[Scope::Submit, Scope::Read, Scope::Cancel], Priority::Normal),
            ("globex", &[Scope::Submit, Scope::Read, Scope::Cancel], Priority::Critical),
            ("acme", &[Scope::Read], Priority::Low),
            ("ops", &[Scope::Admin], Priority::Critical),
        ],
    );
    let (acme, globex, acme_reader, admin) = (&t[0], &t[1], &t[2], &t[3]);
    let (_, limits, policy) = open_settings();
    let state = state_with(&nats, 1 << 20, (auth, limits, policy)).await;
    let (status, json) = call(state.clone(), as_token(post(DENSE), acme)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{json}");
    let id = json["id"].as_str().unwrap().to_owned();
    let job = |token: &str| as_token(Request::get(format!("/v1/jobs/{id}")).body(Body::empty()).unwrap(), token);

    // the owner and an admin see it; another tenant gets 404, as if it did not exist
    assert_eq!(call(state.clone(), job(acme)).await.1["tenant"], "acme");
    assert_eq!(call(state.clone(), job(acme_reader)).await.0, StatusCode::OK);
    assert_eq!(call(state.clone(), job(admin)).await.0, StatusCode::OK);
    let (status, json) = call(state.clone(), job(globex)).await;
    assert_eq!((status, json["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    let proof = as_token(Request::get(format!("/v1/jobs/{id}/proof")).body(Body::empty()).unwrap(), globex);
    assert_eq!(call(state.clone(), proof).await.0, StatusCode::NOT_FOUND);
    let cancel = |token: &str| as_token(Request::delete(format!("/v1/jobs/{id}")).body(Body::empty()).unwrap(), token);
    assert_eq!(call(state.clone(), cancel(globex)).await.0, StatusCode::NOT_FOUND);
    assert_eq!(state.ledger.get(&id).await.unwrap().unwrap().state, snarkflow_wire::JobState::Queued);

    // listings hold the caller's tenant only, all for an admin
    let list = |token: &str| as_token(Request::get("/v1/jobs").body(Body::empty()).unwrap(), token);
    let (_, json) = call(state.clone(), as_token(post(DENSE), globex)).await;
    let theirs = json["id"].as_str().unwrap().to_owned();
    let ids = |v: serde_json::Value| -> Vec<String> {
        v["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(ids(call(state.clone(), list(acme)).await.1), vec![id.clone()]);
    assert_eq!(ids(call(state.clone(), list(globex)).await.1), vec![theirs]);
    assert_eq!(ids(call(state.clone(), list(admin)).await.1).len(), 2);

    // a read-only token cannot submit or cancel
    let (status, json) = call(state.clone(), as_token(post(DENSE), acme_reader)).await;
    assert_eq!((status, json["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")));
    assert!(json["error"]["message"].as_str().unwrap().contains("submit"), "{json}");
    assert_eq!(call(state.clone(), cancel(acme_reader)).await.0, StatusCode::FORBIDDEN);

    // above the token's priority ceiling: refused, nothing enqueued
    let before = state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap();
    let urgent = r#"{"kind": "dense-chain", "input": {"constraints": 8}, "priority": "critical"}"#;
    let (status, json) = call(state.clone(), as_token(post(urgent), acme)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{json}");
    assert!(json["error"]["message"].as_str().unwrap().contains("normal at most"), "{json}");
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), before);
    assert_eq!(call(state.clone(), as_token(post(urgent), globex)).await.0, StatusCode::ACCEPTED);

    // the owner cancels
    assert_eq!(call(state.clone(), cancel(acme)).await.0, StatusCode::OK);

    // a revoked token stops working once the file changes
    let path = dir.path().join("tokens.json");
    let mut file = TokenFile::load(&path).unwrap();
    let globex_id = globex.split('_').nth(1).unwrap();
    assert!(file.revoke(globex_id));
    file.save(&path).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(call(state.clone(), list(globex)).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn idempotency_keys_belong_to_their_tenant() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, t) = tokens(
        dir.path(),
        &[
            ("acme", &[Scope::Submit, Scope::Read], Priority::Normal),
            ("globex", &[Scope::Submit, Scope::Read], Priority::Normal),
        ],
    );
    let (_, limits, policy) = open_settings();
    let state = state_with(&nats, 1 << 20, (auth, limits, policy)).await;
    let keyed = r#"{"kind": "dense-chain", "input": {"constraints": 8}, "idempotency_key": "porep-1000-1"}"#;
    let (_, first) = call(state.clone(), as_token(post(keyed), &t[0])).await;
    let (status, again) = call(state.clone(), as_token(post(keyed), &t[0])).await;
    assert_eq!((status, &again["id"]), (StatusCode::OK, &first["id"]), "the same tenant's retry is the same job");
    let (status, other) = call(state.clone(), as_token(post(keyed), &t[1])).await;
    assert_eq!(status, StatusCode::ACCEPTED, "another tenant's key is another job: {other}");
    assert_ne!(other["id"], first["id"]);
}

#[tokio::test]
async fn a_retry_of_a_live_job_and_the_critical_lane_pass_a_full_quota() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, t) = tokens(dir.path(), &[("curio", &[Scope::Submit], Priority::Critical)]);
    let (_, _, policy) = open_settings();
    let limits = QuotaLimits { max_jobs: 1, max_partitions: 0, submits_per_minute: 1 };
    let state = state_with(&nats, 1 << 20, (auth, limits, policy)).await;
    let keyed = r#"{"kind": "dense-chain", "input": {"constraints": 8}, "idempotency_key": "porep-1000-7"}"#;
    let (status, first) = call(state.clone(), as_token(post(keyed), &t[0])).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    // the tenant is now at its job limit and out of its rate: Curio's retry is still its job
    let (status, again) = call(state.clone(), as_token(post(keyed), &t[0])).await;
    assert_eq!((status, &again["id"]), (StatusCode::OK, &first["id"]), "{again}");
    let (status, _) = call(state.clone(), as_token(post(DENSE), &t[0])).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "new ordinary work waits");
    // a critical submit (a WinningPoSt) is never refused by the quota
    let critical = r#"{"kind": "dense-chain", "input": {"constraints": 8}, "priority": "critical"}"#;
    let (status, json) = call(state.clone(), as_token(post(critical), &t[0])).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{json}");
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 2);
}

#[tokio::test]
async fn tenant_quotas_answer_429_with_retry_after() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, t) = tokens(
        dir.path(),
        &[("acme", &[Scope::Submit], Priority::Normal), ("globex", &[Scope::Submit], Priority::Normal)],
    );
    let (_, _, policy) = open_settings();
    // jobs in flight
    let limits = QuotaLimits { max_jobs: 2, max_partitions: 0, submits_per_minute: 0 };
    let state = state_with(&nats, 1 << 20, (auth.clone(), limits, policy.clone())).await;
    for _ in 0..2 {
        assert_eq!(call(state.clone(), as_token(post(DENSE), &t[0])).await.0, StatusCode::ACCEPTED);
    }
    let (status, headers, json) = call_with_headers(state.clone(), as_token(post(DENSE), &t[0])).await;
    assert_eq!((status, json["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("too_many_requests")));
    assert!(headers[header::RETRY_AFTER].to_str().unwrap().parse::<u64>().unwrap() > 0);
    assert_eq!(
        call(state.clone(), as_token(post(DENSE), &t[1])).await.0,
        StatusCode::ACCEPTED,
        "other tenants are not held up"
    );
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 3);
    // partitions in flight
    let limits = QuotaLimits { max_jobs: 0, max_partitions: 4, submits_per_minute: 0 };
    let state = state_with(&nats, 1 << 20, (auth.clone(), limits, policy.clone())).await;
    let five = r#"{"kind": "dense-chain", "input": {"constraints": 8, "partitions": 5}}"#;
    let (status, json) = call(state.clone(), as_token(post(five), &t[0])).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{json}");
    // submit rate
    let limits = QuotaLimits { max_jobs: 0, max_partitions: 0, submits_per_minute: 1 };
    let state = state_with(&nats, 1 << 20, (auth, limits, policy)).await;
    assert_eq!(call(state.clone(), as_token(post(DENSE), &t[0])).await.0, StatusCode::ACCEPTED);
    let (status, headers, _) = call_with_headers(state.clone(), as_token(post(DENSE), &t[0])).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers[header::RETRY_AFTER], "60");
    // over its rate, a tenant's body is not even parsed: the answer is 429, not 400
    let (status, json) = call(state.clone(), as_token(post("{not json"), &t[0])).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{json}");
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
    assert!(message.contains(".vk") && message.contains(&empty.path().display().to_string()), "{message}");
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0);
}

/// Open settings, with idempotency keys that name no job taken over after `window`.
async fn state_with_orphan_window(nats: &NatsServer, window: Duration) -> AppState {
    let bus = Bus::connect(BusConfig { key_orphan_after: window, ..BusConfig::new(nats.url()) }).await.unwrap();
    let mut state = state(nats, 1 << 20).await;
    state.ledger = bus.ledger().clone();
    state.bus = bus;
    state
}

#[tokio::test]
async fn an_idempotency_key_whose_submit_stopped_half_way_is_taken_over() {
    let nats = NatsServer::start();
    let state = state_with_orphan_window(&nats, Duration::from_secs(1)).await;
    // a submit that claimed the key and stopped before writing its job
    let key = "porep-1000-7";
    let claimed = state.ledger.claim_key(&hex::encode(key), "00000000-0000-4000-8000-000000000000").await.unwrap();
    assert_eq!(claimed, snarkflow_bus::KeyClaim::Claimed);
    let keyed = format!(r#"{{"kind": "dense-chain", "input": {{"constraints": 8}}, "idempotency_key": "{key}"}}"#);
    // at once: the job may still be being created, so the client is told to retry
    let (status, json) = call(state.clone(), post(keyed.clone())).await;
    assert_eq!(status, StatusCode::CONFLICT, "{json}");
    // later: the key is taken over and a job is made
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, json) = call(state.clone(), post(keyed.clone())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{json}");
    let id = json["id"].as_str().unwrap().to_owned();
    let (status, again) = call(state.clone(), post(keyed)).await;
    assert_eq!((status, again["id"].as_str()), (StatusCode::OK, Some(id.as_str())));
}

#[tokio::test]
async fn an_idempotency_key_whose_job_is_still_being_created_is_not_taken_over() {
    // the submit that claimed the key is alive but slow (a large input still being stored): it
    // renews its claim, so however long a retry waits, and whatever the clocks say, the key is
    // not given to a second job
    let nats = NatsServer::start();
    let state = state_with_orphan_window(&nats, Duration::from_secs(1)).await;
    let key = "porep-1000-8";
    let first_job = "00000000-0000-4000-8000-000000000001";
    let claimed = state.ledger.claim_key(&hex::encode(key), first_job).await.unwrap();
    assert_eq!(claimed, snarkflow_bus::KeyClaim::Claimed);
    let hold = state.ledger.hold_key(&hex::encode(key), first_job);
    let keyed = format!(r#"{{"kind": "dense-chain", "input": {{"constraints": 8}}, "idempotency_key": "{key}"}}"#);
    for _ in 0..3 {
        let (status, json) = call(state.clone(), post(keyed.clone())).await;
        assert_eq!(status, StatusCode::CONFLICT, "{json}");
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    assert_eq!(state.ledger.key_job(&hex::encode(key)).await.unwrap().as_deref(), Some(first_job));
    // the claimer dies: a window later its key is taken over
    drop(hold);
    let (status, json) = call(state.clone(), post(keyed.clone())).await;
    assert_eq!(status, StatusCode::CONFLICT, "{json}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, json) = call(state.clone(), post(keyed)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{json}");
}

#[tokio::test]
async fn one_tenant_cannot_hold_every_submit_slot() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, t) = tokens(
        dir.path(),
        &[("acme", &[Scope::Submit], Priority::Normal), ("globex", &[Scope::Submit], Priority::Normal)],
    );
    let (_, limits, policy) = open_settings();
    let mut state = state_with(&nats, 96 << 20, (auth, limits, policy)).await;
    state.quotas = Quotas::new(limits).with_upload_share(2);
    // two uploads of acme's that never finish sending their bodies
    let endless = || {
        let body = futures::stream::once(async { Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"{")) })
            .chain(futures::stream::pending());
        as_token(post(Body::from_stream(body)), &t[0])
    };
    let held: Vec<_> = (0..2).map(|_| tokio::spawn(call(state.clone(), endless()))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // acme's third is refused at once; globex is served
    let answered = tokio::time::timeout(Duration::from_secs(5), call_with_headers(state.clone(), endless())).await;
    let (status, headers, json) = answered.expect("refused without waiting for a body");
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{json}");
    assert_eq!(headers.get(header::RETRY_AFTER).unwrap(), "1");
    let (status, json) = call(state.clone(), as_token(post(DENSE), &t[1])).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{json}");
    // once acme's uploads end, its slots are back
    for h in held {
        h.abort();
        let _ = h.await;
    }
    let (status, json) = call(state.clone(), as_token(post(DENSE), &t[0])).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{json}");
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
