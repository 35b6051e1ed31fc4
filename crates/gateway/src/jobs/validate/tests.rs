//! Validation of requests: envelopes, defaults, deadlines, fingerprints.
use super::*;
use serde_json::json;

/// Through the HTTP door's parser, from the body's bytes.
fn check(body: Value) -> Result<ValidJob, ApiError> {
    validate(JobRequest::from_json_bytes(&serde_json::to_vec(&body).unwrap())?)
}

/// PoRep's `c1_raw` sent as an object reaches the kind as the text it was sent as (no JSON tree
/// of a C1 output); every other field, and every field of the other kinds, as a tree.
#[test]
fn a_c1_raw_object_reaches_porep_as_its_text() {
    let c1 = r#"{"registered_proof": "StackedDrg2KiBV1_1", "vanilla_proofs": {"a": [1, 2]}}"#;
    let body = format!(r#"{{"kind": "porep-c2", "input": {{"miner_id": 1000, "sector_num": 7, "c1_raw": {c1}}}}}"#);
    let request = JobRequest::from_json_bytes(body.as_bytes()).unwrap();
    let RequestInput::Json(input) = &request.input else { panic!("a JSON input") };
    assert_eq!(input["c1_raw"], Value::String(c1.into()));
    assert_eq!(input["miner_id"], json!(1000));
    let body = br#"{"kind": "dense-chain", "input": {"constraints": 8, "more": {"a": [1]}}}"#;
    let RequestInput::Json(input) = JobRequest::from_json_bytes(body).unwrap().input else { panic!("JSON") };
    assert_eq!(input["more"], json!({"a": [1]}));
}

#[test]
fn a_body_that_is_not_a_json_object_is_a_bad_request() {
    for (body, says) in
        [(&b"{\"kind\": "[..], "not valid JSON"), (b"[1, 2]", "must be a JSON object"), (b"7", "must be a JSON object")]
    {
        match JobRequest::from_json_bytes(body) {
            Err(ApiError::BadRequest(m)) => assert!(m.contains(says), "{m}"),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(body)),
        }
    }
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
    for (bad, refused, says) in [
        ("winning-post", BadDefaultDeadline::Form("winning-post".into()), "is not KIND=SECONDS"),
        ("no-such-kind=5", BadDefaultDeadline::UnknownKind("no-such-kind".into()), "is not a kind this build proves"),
        ("winning-post=0", BadDefaultDeadline::Seconds("winning-post=0".into()), "an integer from 1 to"),
        ("winning-post=soon", BadDefaultDeadline::Seconds("winning-post=soon".into()), "an integer from 1 to"),
    ] {
        let e = bad.parse::<DefaultDeadline>().unwrap_err();
        assert_eq!(e, refused);
        assert!(e.to_string().contains(says), "{bad}: {e}");
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
    let e = policy.admit(&named).unwrap_err().to_string();
    assert!(e.contains(&format!("deadline_secs must be at most {day}")), "{e}");
    let within = check(json!({"kind": "dense-chain", "input": {"constraints": 8}, "deadline_secs": 3600})).unwrap();
    assert!(policy.admit(&within).is_ok());
    let unnamed = check(json!({"kind": "dense-chain", "input": {"constraints": 8}})).unwrap();
    assert!(policy.admit(&unnamed).is_ok(), "a default deadline is lowered, not refused");
    assert_eq!(policy.deadline_secs(&unnamed), day);
}

#[test]
fn the_fingerprint_is_the_kind_and_input_whatever_the_key_order_or_priority() {
    let a = check(json!({"kind": "dense-chain", "input": {"constraints": 8, "seed": 1}})).unwrap();
    let b = check(json!({"input": {"seed": 1, "constraints": 8}, "kind": "dense-chain", "priority": "low"})).unwrap();
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
    assert!(
        err(json!({"kind": "dense-chain", "input": {"constraints": 8, "partitions": 65}})).contains("input.partitions")
    );
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

/// The kind a body names decides its validation slot, before the body is parsed for real: read
/// without its values, and nothing for a body that is not an object naming a known kind.
#[test]
fn the_kind_of_a_body_is_read_without_its_values() {
    let kind = |body: &str| JobRequest::kind_of_json(body.as_bytes()).map(|k| k.as_str().to_owned());
    let vanilla = "A".repeat(200_000);
    let winning =
        format!(r#"{{"input": {{"vanilla_proofs": ["{vanilla}"], "x": [1, {{"y": null}}]}}, "kind": "winning-post"}}"#);
    assert_eq!(kind(&winning).as_deref(), Some("winning-post"));
    assert!(crate::jobs::quota_exempt(JobRequest::kind_of_json(winning.as_bytes()).unwrap()));
    assert_eq!(kind(r#"{"kind": "porep-c2", "input": {}}"#).as_deref(), Some("porep-c2"));
    assert!(!crate::jobs::quota_exempt(JobRequest::kind_of_json(br#"{"kind": "window-post"}"#).unwrap()));
    for other in
        [r#"{"kind": "no-such-kind"}"#, r#"{"kind": 7}"#, r#"{"input": {}}"#, "[1]", "{\"kind\": \"winning-post\""]
    {
        assert_eq!(kind(other), None, "{other}");
    }
}
