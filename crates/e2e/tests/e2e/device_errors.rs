//! A device error while proving: the partition is handed back and proved after the worker's
//! device passes its probe again; the job still ends `done` with a proof that verifies. The
//! gpu-worker is a child process whose failpoint is set from its environment (`FAILPOINTS`), so
//! no other test's prover in this binary trips it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_e2e::{free_port, gpu_worker_args, verify_job_proof, Stack};

const JOB_TIMEOUT: Duration = Duration::from_secs(600);

async fn metric(http: &reqwest::Client, addr: &str, name: &str) -> f64 {
    let text = http.get(format!("http://{addr}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// A child process killed when dropped (a failed assertion must not leave it running).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_device_error_hands_the_partition_back_and_the_job_still_finishes() {
    let mut stack = Stack::start().await.unwrap();
    for gpu in std::mem::take(&mut stack.gpu) {
        gpu.stop().await.unwrap();
    }
    let addr = format!("127.0.0.1:{}", free_port());
    // its device probe's proof passes, its first partition's proof fails as a broken GPU would,
    // and the probe after that passes again
    let _worker = Child(
        Command::new(env!("CARGO_BIN_EXE_e2e-gpu-worker"))
            .args(gpu_worker_args(&stack.nats.url(), "gpu-flaky"))
            .args(["--status-listen", &addr])
            .env("FAILPOINTS", "prover-device-error=1*off->1*return")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("start the gpu-worker process"),
    );
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !http.get(format!("http://{addr}/readyz")).send().await.map(|r| r.status().is_success()).unwrap_or(false) {
        assert!(Instant::now() < deadline, "the gpu-worker never became ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let id = stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 256}})).await.unwrap();
    let job = stack.wait_finished(&id, JOB_TIMEOUT).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    verify_job_proof(&job, &stack.proof(&id).await.unwrap().1).unwrap();

    // the worker counts a partition once it has settled it, after the proof event the job's
    // state follows: the count may come a moment after the job's answer
    let proved = r#"snarkflow_prove_partitions_total{outcome="proved"}"#;
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&http, &addr, proved).await < 1.0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(metric(&http, &addr, "snarkflow_gpu_device_errors_total").await, 1.0);
    assert_eq!(metric(&http, &addr, r#"snarkflow_prove_partitions_total{outcome="retried"}"#).await, 1.0);
    assert_eq!(metric(&http, &addr, proved).await, 1.0);
    let ready: serde_json::Value =
        http.get(format!("http://{addr}/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["ready"], true, "the probe passed again: {ready}");
    assert!(ready["detail"]["device_error"].is_null(), "{ready}");
}
