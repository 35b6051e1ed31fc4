//! Storage limits: a full object store, a server too small for the stream limits, a full
//! ledger — refused with a clear answer, and nothing accepted is lost.

use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_e2e::{verify_job_proof, Stack};
use snarkflow_testkit::NatsServer;

async fn objects(stack: &Stack) -> Vec<String> {
    let bus = Bus::connect(BusConfig::new(stack.nats.url())).await.unwrap();
    bus.object_names().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_object_store_refuses_inputs_with_503_and_partitions_wait_for_room() {
    snarkflow_e2e::filecoin_env();
    let spec = snarkflow_circuits::circuit("winning-post-2KiB");
    tokio::task::spawn_blocking(move || {
        snarkflow_prover::ParamStore::new(snarkflow_e2e::params_dir(), snarkflow_circuits::catalog())
            .generate(&spec, false)
            .unwrap()
    })
    .await
    .unwrap();
    // the gateway starts first, so the object store is created with its 64 KiB limit
    let stack = Stack::start_with_gateway(&["--nats-max-object-bytes", "64KiB"]).await.unwrap();
    let bus = Bus::connect(BusConfig::new(stack.nats.url())).await.unwrap();
    bus.put_object("ballast", &vec![7u8; 64_000]).await.unwrap();

    // a job input that does not fit: 503 storage_full saying so, and no job
    let input = snarkflow_filecoin::sparse_post::post_request(
        snarkflow_filecoin::PostKind::Winning,
        2048,
        1000,
        &[5],
        &mut rand::thread_rng(),
    )
    .unwrap();
    let (status, body) = stack.post_job(&json!({"kind": "winning-post", "input": input})).await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "storage_full", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("object store is full"), "{body}");
    let listed: serde_json::Value =
        stack.http.get(format!("{}/v1/jobs", stack.base)).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 0, "{listed}");

    // a synthesized partition that does not fit waits (its job neither fails nor redoes the
    // work) and is stored once there is room
    let id = stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 256}})).await.unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let job = stack.job(&id).await.unwrap();
    assert_eq!(job["state"], "synthesizing", "{job}");
    assert_eq!(objects(&stack).await, vec!["ballast".to_owned()]);
    bus.delete_object("ballast").await.unwrap();
    let job = stack.wait_finished(&id, Duration::from_secs(120)).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    let (_, proof) = stack.proof(&id).await.unwrap();
    verify_job_proof(&job, &proof).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_too_small_for_the_stream_limits_is_reported_with_what_to_change() {
    // 3 GB of JetStream storage: the default limits (6 streams of 1 GiB) do not fit
    let nats = NatsServer::start_with_max_store(3_000_000_000);
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = reports.clone();
    let waiting = move |message: &str| seen.lock().unwrap().push(message.to_owned());
    let connect = Bus::connect_reporting(BusConfig::new(nats.url()), &waiting);
    let waited = tokio::time::timeout(Duration::from_secs(8), connect).await;
    assert!(waited.is_err(), "the default limits were reserved from 3 GB");
    let reports = reports.lock().unwrap().clone();
    let report = reports.iter().find(|r| r.contains("insufficient storage")).unwrap_or_else(|| panic!("{reports:?}"));
    assert!(
        report.contains("--nats-max-stream-bytes")
            && report.contains("5 streams of 1.0 GiB")
            && report.contains("the job ledger's 1.0 GiB (--nats-max-ledger-bytes)"),
        "{report}"
    );

    // the two streams made before the refusal keep their 1 GiB (limits apply at creation);
    // the other four at 128 MiB fit beside them
    let config = BusConfig {
        max_stream_bytes: Some(128 << 20),
        max_ledger_bytes: Some(128 << 20),
        ..BusConfig::new(nats.url())
    };
    let bus = tokio::time::timeout(Duration::from_secs(20), Bus::connect(config)).await;
    assert!(matches!(bus, Ok(Ok(_))), "smaller limits did not fit in 3 GB");
}

/// A ledger filled to the brim: new jobs are refused (503 storage_full, with Retry-After)
/// while the jobs in flight may still need the room to record their proofs, every job that was
/// accepted finishes, and new jobs are taken again once the room is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_ledger_refuses_new_jobs_and_finishes_every_accepted_one() {
    let stack =
        Stack::start_with_gateway(&["--nats-max-ledger-bytes", "96KiB", "--ledger-pass-secs", "1"]).await.unwrap();
    // the first ledger pass measures the bucket (until it has, every job is admitted)
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = reqwest::get(format!("{}/metrics", stack.base)).await.unwrap().text().await.unwrap();
        if metrics.contains("snarkflow_ledger_bytes{what=\"limit\"} 98304") {
            break;
        }
        assert!(Instant::now() < deadline, "the ledger pass never measured the bucket: {metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let body = |n: u64| json!({"kind": "dense-chain", "input": {"constraints": 64, "partitions": 3, "seed": n}});
    let (mut accepted, mut refused) = (Vec::new(), Vec::new());
    for n in 0..40 {
        let r = stack.http.post(format!("{}/v1/jobs", stack.base)).json(&body(n)).send().await.unwrap();
        let status = r.status().as_u16();
        let retry_after = r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
        let v: serde_json::Value = r.json().await.unwrap();
        match status {
            202 => accepted.push(v["id"].as_str().unwrap().to_owned()),
            503 => {
                assert_eq!(v["error"]["code"], "storage_full", "{v}");
                assert!(v["error"]["message"].as_str().unwrap().contains("ledger"), "{v}");
                assert!(retry_after.is_some(), "a full ledger's 503 says when to retry");
                refused.push(n);
            }
            other => panic!("submit {n} answered {other}: {v}"),
        }
    }
    assert!(!accepted.is_empty() && !refused.is_empty(), "accepted {accepted:?}, refused {refused:?}");
    // nothing accepted is frozen: every job records its proofs and finishes
    for id in &accepted {
        let job = stack.wait_finished(id, Duration::from_secs(240)).await.unwrap();
        assert_eq!(job["state"], "done", "{job}");
    }
    let metrics = reqwest::get(format!("{}/metrics", stack.base)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("snarkflow_ledger_bytes{what=\"limit\"} 98304"), "{metrics}");
    assert!(metrics.contains("snarkflow_object_store_bytes{what=\"used\"}"), "{metrics}");
    // the finished jobs promise nothing more: a new job fits again after a pass or two (a
    // refusal creates nothing, so asking again is safe)
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = stack.http.post(format!("{}/v1/jobs", stack.base)).json(&body(100)).send().await.unwrap();
        let status = r.status().as_u16();
        if status == 202 {
            break;
        }
        let text = r.text().await.unwrap();
        assert!(status == 503 && Instant::now() < deadline, "{status}: {text}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
