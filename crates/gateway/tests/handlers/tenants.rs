//! Tokens, tenants and their limits: who may see, submit and cancel what, quotas, idempotency
//! keys and the submit slots a tenant may hold.

use super::*;

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
async fn a_retry_of_a_live_job_passes_a_full_quota_and_a_requested_critical_priority_does_not() {
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
    // asking for the critical lane does not make other kinds quota-free (only WinningPoSt,
    // by its kind, passes: `jobs::quota_exempt`)
    let critical = r#"{"kind": "dense-chain", "input": {"constraints": 8}, "priority": "critical"}"#;
    let (status, json) = call(state.clone(), as_token(post(critical), &t[0])).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{json}");
    assert_eq!(state.bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 1);
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
    // and a refused request spends the rate as a submit does: globex's one bad request leaves
    // it no room for a good one this minute
    let (status, json) = call(state.clone(), as_token(post("{not json"), &t[1])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{json}");
    let (status, json) = call(state.clone(), as_token(post(DENSE), &t[1])).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{json}");
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

/// Two tenants reading slow uploads cannot hold every submit slot between them: the last
/// quarter is kept for tenants with none in flight (issue 39 item 12).
#[tokio::test]
async fn tenants_with_slow_uploads_leave_a_slot_for_one_with_none() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (auth, t) = tokens(
        dir.path(),
        &[
            ("acme", &[Scope::Submit], Priority::Normal),
            ("globex", &[Scope::Submit], Priority::Normal),
            ("initech", &[Scope::Submit], Priority::Normal),
        ],
    );
    let (_, limits, policy) = open_settings();
    let mut state = state_with(&nats, 96 << 20, (auth, limits, policy)).await;
    // four slots, two per tenant, one kept for a tenant with none in flight
    state.quotas = Quotas::new(limits).with_upload_share(2).with_upload_slots(4);
    let endless = |token: &str| {
        let body = futures::stream::once(async { Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"{")) })
            .chain(futures::stream::pending());
        as_token(post(Body::from_stream(body)), token)
    };
    let mut held = Vec::new();
    for token in [&t[0], &t[0], &t[1]] {
        held.push(tokio::spawn(call(state.clone(), endless(token))));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // globex's second would take the kept slot: refused at once
    let answered = tokio::time::timeout(Duration::from_secs(5), call(state.clone(), endless(&t[1]))).await;
    let (status, json) = answered.expect("refused without waiting for a body");
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{json}");
    assert!(json["error"]["message"].as_str().unwrap().contains("kept for tenants with none in flight"), "{json}");
    // initech, with none in flight, is served
    let (status, json) = call(state.clone(), as_token(post(DENSE), &t[2])).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{json}");
    for h in held {
        h.abort();
        let _ = h.await;
    }
}
