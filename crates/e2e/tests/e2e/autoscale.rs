//! The signal autoscalers follow (deploy/k8s/base/keda.yaml): the gateway's work-weighted
//! backlog rises with submitted work, moves from synthesis to proving as a synth-worker takes
//! it, and falls to nothing once a gpu-worker has proved it.

use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_e2e::{api_client, start_gateway_with, start_gpu_worker, start_synth_worker, Stack};
use snarkflow_testkit::NatsServer;

const CONSTRAINTS: u32 = 4096;

/// (synth constraints, prove constraints, GPU seconds) as /metrics says now.
async fn backlog(stack: &Stack) -> (u64, u64, f64) {
    let text = reqwest::get(format!("{}/metrics", stack.base)).await.unwrap().text().await.unwrap();
    let value = |prefix: &str| {
        text.lines().find_map(|l| l.strip_prefix(prefix)).map(|v| v.trim().parse::<f64>().unwrap()).unwrap_or(-1.0)
    };
    (
        value(r#"snarkflow_backlog_constraints{stage="synth"} "#) as u64,
        value(r#"snarkflow_backlog_constraints{stage="prove"} "#) as u64,
        value("snarkflow_backlog_gpu_seconds "),
    )
}

/// Poll until `pred` holds for the backlog (the ledger pass runs every second).
async fn until(stack: &Stack, what: &str, pred: impl Fn((u64, u64, f64)) -> bool) -> (u64, u64, f64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let b = backlog(stack).await;
        if pred(b) {
            return b;
        }
        assert!(Instant::now() < deadline, "{what}: the backlog stayed at {b:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backlog_rises_with_work_and_falls_as_workers_take_it() {
    snarkflow_e2e::init_test_logging();
    let nats = NatsServer::start();
    let (gateway, base) = start_gateway_with(&nats.url(), &["--ledger-pass-secs", "1"]).await.unwrap();
    let mut stack = Stack { nats, gateway: Some(gateway), base, synth: vec![], gpu: vec![], http: api_client() };
    until(&stack, "an empty cluster", |b| b == (0, 0, 0.0)).await;

    let mut ids = Vec::new();
    for seed in 0..3 {
        let body = json!({"kind": "dense-chain", "input": {"constraints": CONSTRAINTS, "partitions": 2, "seed": seed}});
        ids.push(stack.submit(&body).await.unwrap());
    }
    // no worker yet: six partitions wait for synthesis, each counted at its declared size
    let per =
        snarkflow_circuits::test_constraints(&snarkflow_circuits::circuit(&format!("dense-chain-c{}", CONSTRAINTS)))
            .unwrap();
    until(&stack, "submitted work", |(synth, prove, _)| synth == 6 * per && prove == 0).await;

    // a synth-worker takes it: the work now waits for a GPU, sized as the worker reported it
    stack.synth.push(start_synth_worker(&stack.nats.url(), "synth-1").unwrap());
    let (_, prove, gpu_seconds) =
        until(&stack, "synthesized work", |(synth, prove, _)| synth == 0 && prove >= 6 * u64::from(CONSTRAINTS)).await;
    assert!(gpu_seconds > 0.0 && (gpu_seconds - prove as f64 / 65e6).abs() < 1e-9, "{prove} {gpu_seconds}");

    // a gpu-worker proves it: nothing waits
    stack.gpu.push(start_gpu_worker(&stack.nats.url(), "gpu-1").unwrap());
    for id in &ids {
        assert_eq!(stack.wait_finished(id, Duration::from_secs(300)).await.unwrap()["state"], "done");
    }
    until(&stack, "finished work", |b| b == (0, 0, 0.0)).await;
    drop(stack);
}
