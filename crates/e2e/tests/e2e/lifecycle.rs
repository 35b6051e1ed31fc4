//! Broker restarts and worker shutdowns with work in flight.

use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_e2e::{
    params_dir, start_gpu_worker, start_gpu_worker_reading, start_gpu_worker_with, verify_job_proof, Stack,
};
use snarkflow_prover::ParamStore;
use snarkflow_wire::{Priority, Stage};

const JOB_TIMEOUT: Duration = Duration::from_secs(600);
/// Big enough that proving takes seconds on a 2-core machine.
const CONSTRAINTS: u32 = 1 << 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_survive_a_broker_restart() {
    let mut stack = Stack::start().await.unwrap();
    let before = stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 256}})).await.unwrap();
    assert_eq!(stack.wait_finished(&before, JOB_TIMEOUT).await.unwrap()["state"], "done");

    stack.nats.restart();
    // every service reconnects by itself; the streams, ledger and consumers are on disk. The
    // gateway may answer 503 while it reconnects: a client retries with its idempotency key
    // (an answer lost after the job was taken does not make a second job)
    let body = json!({"kind": "dense-chain", "input": {"constraints": 256, "partitions": 2}, "idempotency_key": "after-restart"});
    let deadline = Instant::now() + Duration::from_secs(60);
    let after = loop {
        match stack.submit(&body).await {
            Ok(id) => break id,
            Err(e) => assert!(Instant::now() < deadline, "no submit was taken after the restart: {e:#}"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let job = stack.wait_finished(&after, JOB_TIMEOUT).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    verify_job_proof(&job, &stack.proof(&after).await.unwrap().1).unwrap();
    assert_eq!(stack.job(&before).await.unwrap()["state"], "done", "the earlier job is still known");
}

async fn wait_for_pickup(stack: &Stack) {
    let bus = Bus::connect(BusConfig::new(stack.nats.url())).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    while bus.lane_ack_pending(Stage::Proving, Priority::Normal).await.unwrap() == 0 {
        assert!(Instant::now() < deadline, "the prover never picked the partition up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn big_job(stack: &Stack) -> String {
    let spec = snarkflow_circuits::circuit(&format!("dense-chain-c{}", CONSTRAINTS));
    tokio::task::spawn_blocking(move || {
        ParamStore::new(params_dir(), snarkflow_circuits::catalog()).generate(&spec, false)
    })
    .await
    .unwrap()
    .unwrap();
    stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": CONSTRAINTS}})).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_finishes_the_proof_in_flight() {
    let mut stack = Stack::start().await.unwrap();
    // a drain deadline no loaded machine reaches (the default, 60 s, could be on a busy CI)
    for gpu in std::mem::take(&mut stack.gpu) {
        gpu.stop().await.unwrap();
    }
    let worker = start_gpu_worker_with(&stack.nats.url(), "gpu-1", &["--drain-secs", "600"]).unwrap();
    let id = big_job(&stack).await;
    wait_for_pickup(&stack).await;
    // stop pulling, but finish the proof at hand
    worker.stop().await.unwrap();
    let job = stack.wait_finished(&id, Duration::from_secs(30)).await.unwrap();
    assert_eq!(job["state"], "done", "the draining worker finished and reported the proof: {job}");
    assert_eq!(job["partition_details"][0]["prove"]["worker"], "gpu-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_past_the_drain_deadline_hands_the_work_back() {
    let mut stack = Stack::start().await.unwrap();
    for gpu in std::mem::take(&mut stack.gpu) {
        gpu.stop().await.unwrap();
    }
    let quitter = start_gpu_worker_with(&stack.nats.url(), "gpu-quitter", &["--drain-secs", "0"]).unwrap();
    let id = big_job(&stack).await;
    wait_for_pickup(&stack).await;
    let stopped = Instant::now();
    quitter.stop().await.unwrap();
    assert!(stopped.elapsed() < Duration::from_secs(3), "a zero drain deadline stops at once");
    assert_ne!(stack.job(&id).await.unwrap()["state"], "done");
    // the partition was handed back (nak), so a new worker proves it without waiting for ack-wait
    let _next = start_gpu_worker(&stack.nats.url(), "gpu-next").unwrap();
    let job = stack.wait_finished(&id, JOB_TIMEOUT).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["partition_details"][0]["prove"]["worker"], "gpu-next");
}

/// A free local port for a status endpoint.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gpu_worker_is_ready_only_after_its_device_probe_and_reports_the_device() {
    let stack = Stack::start().await.unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let worker = start_gpu_worker_with(&stack.nats.url(), "gpu-probe", &["--status-listen", &addr]).unwrap();
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let detail = loop {
        if let Ok(r) = http.get(format!("http://{addr}/readyz")).send().await {
            let ok = r.status().is_success();
            let body: serde_json::Value = r.json().await.unwrap();
            if ok {
                break body["detail"].clone();
            }
            // before ready it says what it is doing, and no device error on a working backend
            assert!(body["detail"]["state"].is_string(), "{body}");
            assert!(body["detail"]["device_error"].is_null(), "{body}");
        }
        assert!(Instant::now() < deadline, "the gpu-worker never became ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(detail["backend"], "cpu", "{detail}");
    assert_eq!(detail["devices"], json!([]), "the CPU backend uses no device: {detail}");
    assert!(detail["self_test_seconds"].as_f64().unwrap() > 0.0, "the self-test proof ran: {detail}");
    assert!(detail["device_error"].is_null(), "{detail}");
    let metrics = http.get(format!("http://{addr}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains(r#"snarkflow_gpu_device_info{backend="cpu",device="cpu",name="cpu"} 1"#), "{metrics}");
    worker.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_delivery_is_judged_by_the_consumers_own_max_deliver() {
    let nats = snarkflow_testkit::NatsServer::start();
    // the first process creates the lanes with max_deliver 2 ...
    let first = Bus::connect(BusConfig { max_deliver: 2, ..BusConfig::new(nats.url()) }).await.unwrap();
    first.lanes(Stage::Proving).await.unwrap();
    // ... a later one is configured with 5, but the consumers keep what they were created with
    let later = Bus::connect(BusConfig { max_deliver: 5, ..BusConfig::new(nats.url()) }).await.unwrap();
    let lanes = later.lanes(Stage::Proving).await.unwrap();
    later.publish("snarkflow.prove.normal".into(), b"task".to_vec(), None).await.unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (priority, msg) = lanes.next(&shutdown).await.unwrap().unwrap();
    assert_eq!(priority, Priority::Normal);
    assert_eq!(lanes.max_deliver(&msg), Some(2));
    assert_eq!(snarkflow_bus::settle::is_last_delivery(&later, &lanes, &msg), (false, 2), "first delivery of 2");
    msg.ack_with(async_nats::jetstream::AckKind::Nak(None)).await.unwrap();
    let (_, again) = lanes.next(&shutdown).await.unwrap().unwrap();
    assert_eq!(snarkflow_bus::settle::is_last_delivery(&later, &lanes, &again), (true, 2), "second delivery of 2");
    again.ack().await.unwrap();
}

/// `/readyz` at `addr` polled until `done(ready, body)` holds (at most two minutes); the body.
async fn readyz_until(addr: &str, done: impl Fn(bool, &serde_json::Value) -> bool) -> serde_json::Value {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last = serde_json::Value::Null;
    loop {
        if let Ok(r) = http.get(format!("http://{addr}/readyz")).send().await {
            let ok = r.status().is_success();
            last = r.json().await.unwrap();
            if done(ok, &last) {
                return last;
            }
        }
        assert!(Instant::now() < deadline, "readiness never got there; last answer {last}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gpu_worker_without_its_preload_parameters_stays_up_not_ready_saying_how_to_get_them() {
    let nats = snarkflow_testkit::NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let worker = start_gpu_worker_reading(
        &nats.url(),
        "gpu-no-params",
        dir.path(),
        &["--status-listen", &addr, "--preload", "dense-chain-c300"],
    )
    .unwrap();
    let fix = format!("snarkflow params generate --circuit dense-chain-c300 --params-dir {}", dir.path().display());
    let body = readyz_until(&addr, |ready, body| {
        assert!(!ready, "ready without its parameters: {body}");
        body["detail"]["state"].as_str().is_some_and(|s| s.contains("--preload dense-chain-c300"))
    })
    .await;
    let state = body["detail"]["state"].as_str().unwrap();
    assert!(state.contains(&fix) && state.contains("not found"), "{state}");
    // the operator makes the file: ready without a restart
    let spec = snarkflow_circuits::circuit("dense-chain-c300");
    ParamStore::new(dir.path(), snarkflow_circuits::catalog()).generate(&spec, false).unwrap();
    let body = readyz_until(&addr, |ready, _| ready).await;
    assert_eq!(body["detail"]["loaded_circuits"], json!(["dense-chain-c300"]), "{body}");
    worker.stop().await.unwrap();
}
