//! Handler tests on the router itself (no socket), against a real nats-server.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_gateway::{app, AppState, Ledger, Metrics};
use snarkflow_testkit::NatsServer;
use tower::ServiceExt;

async fn state(nats: &NatsServer, max_body_bytes: usize) -> AppState {
    let bus = Bus::connect(BusConfig::new(nats.url())).await.unwrap();
    AppState { ledger: Ledger::new(bus.clone()), bus, metrics: Metrics::new(), max_body_bytes }
}

async fn call(state: AppState, req: Request<Body>) -> (StatusCode, serde_json::Value) {
    let resp = app(state).oneshot(req).await.unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

fn post(body: impl Into<Body>) -> Request<Body> {
    Request::post("/v1/jobs").header("content-type", "application/json").body(body.into()).unwrap()
}

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
    let mut ledger_stream = state.bus.js.get_stream(format!("KV_{}", snarkflow_wire::JOBS_BUCKET)).await.unwrap();
    assert_eq!(ledger_stream.info().await.unwrap().config.max_age, BusConfig::DEFAULT_JOB_RETENTION);

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
