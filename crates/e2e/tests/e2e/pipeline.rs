//! The whole pipeline against a real nats-server: jobs go from POST to a verified proof,
//! rejected requests enqueue nothing, a gateway restart loses nothing, cancellation works.

use std::time::Duration;

use serde_json::json;
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_e2e::{start_gateway, start_gateway_with, verify_job_proof, Stack};

const JOB_TIMEOUT: Duration = Duration::from_secs(600);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sha256_chain_job_is_proved_and_verifies() {
    let stack = Stack::start().await.unwrap();
    let id = stack.submit(&json!({"kind": "sha256-chain", "input": {"blocks": 1}})).await.unwrap();
    let job = stack.wait_finished(&id, JOB_TIMEOUT).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["partitions"]["proved"], 1);
    assert!(job["bytes"]["synth_to_prove"].as_u64().unwrap() > 1_000, "{job}");
    assert_eq!(job["bytes"]["proofs"], 192);
    assert!(job["timings"]["prove_s"].as_f64().unwrap() > 0.0);
    let (status, proof) = stack.proof(&id).await.unwrap();
    assert_eq!(status, 200);
    verify_job_proof(&job, &proof).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compact_and_raw_wire_forms_give_verified_proofs() {
    for (format, encoding) in [("compact", "compact-witness"), ("raw", "raw-bincode")] {
        let stack = Stack::start_with(&["--wire-format", format]).await.unwrap();
        let id = stack.submit(&json!({"kind": "sha256-chain", "input": {"blocks": 1, "seed": 11}})).await.unwrap();
        let job = stack.wait_finished(&id, JOB_TIMEOUT).await.unwrap();
        assert_eq!(job["state"], "done", "{format}: {job}");
        let synth = &job["partition_details"][0]["synth"];
        assert_eq!(synth["encoding"], encoding);
        let rebuild_s = job["partition_details"][0]["prove"]["rebuild_s"].as_f64().unwrap();
        assert_eq!(rebuild_s > 0.0, format == "compact", "{format}: rebuild time {rebuild_s}");
        let (_, proof) = stack.proof(&id).await.unwrap();
        verify_job_proof(&job, &proof).unwrap();
        println!("{format}: {} bytes on the synth → prove hop", synth["bytes"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_partition_dense_chain_job_assembles_in_order() {
    let stack = Stack::start().await.unwrap();
    let id = stack
        .submit(&json!({"kind": "dense-chain", "input": {"constraints": 1024, "partitions": 3}, "priority": "high"}))
        .await
        .unwrap();
    let job = stack.wait_finished(&id, JOB_TIMEOUT).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["partitions"], json!({"total": 3, "synthesized": 3, "proved": 3}));
    let (status, proof) = stack.proof(&id).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(proof.len(), 3 * 192);
    // verification uses each partition's own public inputs, so a reordering would fail here
    verify_job_proof(&job, &proof).unwrap();
    let mut swapped = proof.clone();
    swapped[..192].copy_from_slice(&proof[192..384]);
    swapped[192..384].copy_from_slice(&proof[..192]);
    assert!(verify_job_proof(&job, &swapped).is_err(), "swapped partitions must not verify");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rejected_requests_say_why_and_enqueue_nothing() {
    let stack = Stack::start().await.unwrap();
    let cases = [
        (json!({"kind": "sha256-chain"}), 422, "input is required"),
        (json!({"kind": "groth17", "input": {}}), 422, "unknown kind"),
        (json!({"kind": "dense-chain", "input": {"constraints": 0}}), 422, "input.constraints"),
        (json!({"kind": "dense-chain", "input": {"constraints": 10, "partitions": 1000}}), 422, "input.partitions"),
        (json!({"kind": "dense-chain", "input": {"constraints": 10}, "priority": "now"}), 422, "priority"),
    ];
    for (body, status, needle) in cases {
        let (got, v) = stack.post_job(&body).await.unwrap();
        assert_eq!(got, status, "{body} → {v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{body}: {msg:?} lacks {needle:?}");
        assert_eq!(v["error"]["code"], "invalid_input");
    }
    let raw = |body: Vec<u8>| {
        stack.http.post(format!("{}/v1/jobs", stack.base)).header("content-type", "application/json").body(body).send()
    };
    let r = raw(b"{not json".to_vec()).await.unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<serde_json::Value>().await.unwrap()["error"]["code"], "bad_request");
    // a small limit keeps the oversized body inside socket buffers, so the early 413 is read
    // back instead of racing the upload
    let (small, small_base) = start_gateway_with(&stack.nats.url(), &["--max-body-bytes", "4096"]).await.unwrap();
    let oversized =
        format!(r#"{{"kind": "dense-chain", "input": {{"constraints": 8}}, "pad": "{}"}}"#, " ".repeat(16 * 1024));
    let r = stack
        .http
        .post(format!("{small_base}/v1/jobs"))
        .header("content-type", "application/json")
        .body(oversized)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(r.json::<serde_json::Value>().await.unwrap()["error"]["code"], "payload_too_large");
    small.stop().await.unwrap();
    let r = stack.http.get(format!("{}/v1/jobs/not-a-job", stack.base)).send().await.unwrap();
    assert_eq!(r.status(), 404);

    let bus = Bus::connect(BusConfig::new(stack.nats.url())).await.unwrap();
    assert_eq!(bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0, "a rejected request was enqueued");
    let listed: serde_json::Value =
        stack.http.get(format!("{}/v1/jobs", stack.base)).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["jobs"], json!([]), "a rejected request created a job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gateway_restart_keeps_job_states_and_proofs() {
    let mut stack = Stack::start().await.unwrap();
    let id =
        stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 512, "partitions": 2}})).await.unwrap();
    // stop the gateway at once: the workers' events pile up in the stream meanwhile
    stack.gateway.take().unwrap().stop().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (gateway, base) = start_gateway(&stack.nats.url()).await.unwrap();
    stack.base = base;
    let job = stack.wait_finished(&id, JOB_TIMEOUT).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    let (_, proof) = stack.proof(&id).await.unwrap();
    verify_job_proof(&job, &proof).unwrap();

    // and a second restart serves the same finished job and proof
    gateway.stop().await.unwrap();
    let (_gateway, base) = start_gateway(&stack.nats.url()).await.unwrap();
    stack.base = base;
    assert_eq!(stack.job(&id).await.unwrap()["state"], "done");
    assert_eq!(stack.proof(&id).await.unwrap(), (200, proof));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_idempotency_and_listing() {
    let mut stack = Stack::start().await.unwrap();
    // stop the provers so the job cannot finish before it is cancelled
    for gpu in std::mem::take(&mut stack.gpu) {
        gpu.stop().await.unwrap();
    }
    let body = json!({"kind": "dense-chain", "input": {"constraints": 64}, "idempotency_key": "order-7"});
    let id = stack.submit(&body).await.unwrap();
    let (status, again) = stack.post_job(&body).await.unwrap();
    assert_eq!((status, again["id"].as_str().unwrap()), (200, id.as_str()), "same key, same job");

    let (status, _) = stack.proof(&id).await.unwrap();
    assert_eq!(status, 409, "no proof before done");
    let r = stack.http.delete(format!("{}/v1/jobs/{id}", stack.base)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(stack.job(&id).await.unwrap()["state"], "cancelled");
    let listed: serde_json::Value = stack
        .http
        .get(format!("{}/v1/jobs?state=cancelled&limit=5", stack.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["jobs"][0]["id"], id.as_str());
    let r = stack.http.get(format!("{}/v1/jobs?state=bogus", stack.base)).send().await.unwrap();
    assert_eq!(r.status(), 422);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn listing_returns_every_job_newest_first_with_state_and_limit() {
    let mut stack = Stack::start().await.unwrap();
    for gpu in std::mem::take(&mut stack.gpu) {
        gpu.stop().await.unwrap();
    }
    let list = |query: &'static str| {
        let (http, base) = (stack.http.clone(), stack.base.clone());
        async move {
            let started = std::time::Instant::now();
            let v: serde_json::Value =
                http.get(format!("{base}/v1/jobs{query}")).send().await.unwrap().json().await.unwrap();
            (
                v["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>(),
                started.elapsed(),
            )
        }
    };
    let (empty, took) = list("").await;
    assert!(empty.is_empty(), "{empty:?}");
    assert!(took < Duration::from_secs(2), "an empty ledger lists at once, not after a timeout: {took:?}");

    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 64}})).await.unwrap());
        tokio::time::sleep(Duration::from_millis(5)).await; // distinct creation times
    }
    let r = stack.http.delete(format!("{}/v1/jobs/{}", stack.base, ids[1])).send().await.unwrap();
    assert_eq!(r.status(), 200);

    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(list("").await.0, newest_first);
    assert_eq!(list("?limit=2").await.0, newest_first[..2].to_vec());
    assert_eq!(list("?state=cancelled").await.0, vec![ids[1].clone()]);
    assert!(list("?state=done").await.0.is_empty(), "no prover ran: nothing can be done");
}

/// `GET /v1/cluster` (`snarkflow cluster status`): the gpu-worker with what it loaded, the jobs
/// per state, and a lane's backlog and age while no gpu-worker takes its work.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_cluster_view_shows_workers_lanes_and_jobs() {
    let mut stack = Stack::start().await.unwrap();
    let cluster = |stack: &Stack| {
        let (http, url) = (stack.http.clone(), format!("{}/v1/cluster", stack.base));
        async move {
            let r = http.get(url).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
            r.json::<snarkflow_gateway::ClusterView>().await.unwrap()
        }
    };
    let id = stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 256}})).await.unwrap();
    assert_eq!(stack.wait_finished(&id, Duration::from_secs(300)).await.unwrap()["state"], "done");
    // the counts come from the gateway's index (the ledger's watch) and the lanes from the
    // streams, where the worker acks after the proof event the job's state follows: both may
    // lag the job's answer a little
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let view = loop {
        let view = cluster(&stack).await;
        let idle = view.lanes.iter().all(|l| l.waiting == 0 && l.in_progress == 0);
        if (view.jobs["done"] == 1 && idle) || std::time::Instant::now() > deadline {
            break view;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(view.gpu_workers.len(), 1, "{view:?}");
    let worker = &view.gpu_workers[0];
    assert!(worker.ready && worker.worker == "gpu-1", "{worker:?}");
    assert!(worker.loaded.iter().any(|l| l.circuit_id == "dense-chain-c256"), "{worker:?}");
    assert_eq!(view.jobs["done"], 1);
    assert_eq!(view.jobs["queued"] + view.jobs["proving"] + view.jobs["failed"], 0);
    assert_eq!(view.lanes.len(), 8, "two stages of four lanes");
    assert!(view.lanes.iter().all(|l| l.waiting == 0 && l.in_progress == 0 && l.oldest_secs.is_none()), "{view:?}");

    // no gpu-worker: the partition waits on the proving lane, and ages
    stack.gpu.pop().unwrap().stop().await.unwrap();
    let waiting = stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 256}})).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let lane = loop {
        let view = cluster(&stack).await;
        let normal = view.lanes.into_iter().find(|l| l.stage == "proving" && l.lane == "normal").unwrap();
        if normal.waiting == 1 && normal.oldest_secs.is_some_and(|s| s >= 1.0) {
            assert!(view.gpu_workers.is_empty());
            assert_eq!(view.jobs["proving"] + view.jobs["synthesizing"], 1, "{:?}", view.jobs);
            break normal;
        }
        assert!(std::time::Instant::now() < deadline, "the partition never waited on the proving lane: {normal:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(lane.in_progress, 0);
    // the same age on the gateway's /metrics, from its ledger pass
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let text = stack.http.get(format!("{}/metrics", stack.base)).send().await.unwrap().text().await.unwrap();
        let age = text
            .lines()
            .find(|l| l.starts_with("snarkflow_queue_oldest_seconds{lane=\"normal\",stage=\"prove\"}"))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        if age.is_some_and(|a| a >= 1.0) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no queue age on /metrics: {age:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    stack.gpu.push(snarkflow_e2e::start_gpu_worker(&stack.nats.url(), "gpu-2").unwrap());
    assert_eq!(stack.wait_finished(&waiting, Duration::from_secs(300)).await.unwrap()["state"], "done");
}
