//! A gpu-worker killed (SIGKILL) in the middle of a partition does not lose the job: the
//! partition is redelivered after the ack wait and another worker proves it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_e2e::{gpu_worker_args, params_dir, start_gpu_worker, verify_job_proof, Stack};
use snarkflow_prover::ParamStore;
use snarkflow_wire::{Priority, Stage};

/// 2^16 constraints: several seconds of CPU proving on a 2-core machine, a wide window in
/// which to kill the worker.
const CONSTRAINTS: u32 = 1 << 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gpu_worker_killed_mid_partition_does_not_lose_the_job() {
    let spec = snarkflow_circuits::circuit(&format!("dense-chain-c{}", CONSTRAINTS));
    tokio::task::spawn_blocking(move || {
        ParamStore::new(params_dir(), snarkflow_circuits::catalog()).generate(&spec, false)
    })
    .await
    .unwrap()
    .unwrap();

    let mut stack = Stack::start().await.unwrap();
    for gpu in std::mem::take(&mut stack.gpu) {
        gpu.stop().await.unwrap();
    }
    let mut victim = Command::new(env!("CARGO_BIN_EXE_e2e-gpu-worker"))
        .args(gpu_worker_args(&stack.nats.url(), "gpu-victim"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("start the gpu-worker process");

    let id = stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": CONSTRAINTS}})).await.unwrap();

    // wait until the victim holds the partition un-acked, then kill it
    let bus = Bus::connect(BusConfig::new(stack.nats.url())).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if bus.lane_ack_pending(Stage::Proving, Priority::Normal).await.unwrap() == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the victim never picked the partition up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
    let job = stack.job(&id).await.unwrap();
    assert_ne!(job["state"], "done", "the job finished before the kill; the test proved nothing");

    let _rescuer = start_gpu_worker(&stack.nats.url(), "gpu-rescuer").unwrap();
    let job = stack.wait_finished(&id, Duration::from_secs(600)).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["partition_details"][0]["prove"]["worker"], "gpu-rescuer");
    let (_, proof) = stack.proof(&id).await.unwrap();
    verify_job_proof(&job, &proof).unwrap();
}
