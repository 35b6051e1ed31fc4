//! Every job ends and nothing is left behind: deadlines, a fan-out its gateway left half
//! done, tasks no worker survives (dead letters), and the object store after jobs end.

use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_bus::{now_ms, Bus, BusConfig};
use snarkflow_e2e::{start_gateway_with, verify_job_proof, Stack};
use snarkflow_testkit::NatsServer;
use snarkflow_wire::{JobRecord, JobState, PartitionRecord, Priority, Stage, SCHEMA_VERSION};

const JOB_TIMEOUT: Duration = Duration::from_secs(600);

/// Replace the stack's gateway with one that runs its ledger pass every second.
async fn fast_ledger_pass(stack: &mut Stack) {
    stack.gateway.take().unwrap().stop().await.unwrap();
    let (gateway, base) = start_gateway_with(&stack.nats.url(), &["--ledger-pass-secs", "1"]).await.unwrap();
    stack.gateway = Some(gateway);
    stack.base = base;
}

async fn objects(stack: &Stack) -> Vec<String> {
    let bus = Bus::connect(BusConfig::new(stack.nats.url())).await.unwrap();
    bus.object_names().await.unwrap()
}

/// The objects left once the store is empty or 30 s have passed: a job's answer may come a
/// moment before its partitions are deleted (a failed job's by the gateway after its state, a
/// done job's last one by the gpu-worker after its proof event).
async fn objects_left(stack: &Stack) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = objects(stack).await;
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_past_its_deadline_fails_saying_so_and_leaves_nothing_behind() {
    let mut stack = Stack::start().await.unwrap();
    fast_ledger_pass(&mut stack).await;
    // no prover: the partitions are synthesized, then wait
    for gpu in std::mem::take(&mut stack.gpu) {
        gpu.stop().await.unwrap();
    }
    let id = stack
        .submit(&json!({"kind": "dense-chain", "input": {"constraints": 256, "partitions": 2}, "deadline_secs": 3}))
        .await
        .unwrap();
    let job = stack.wait_finished(&id, Duration::from_secs(60)).await.unwrap();
    assert_eq!(job["state"], "failed", "{job}");
    let error = job["error"].as_str().unwrap();
    assert!(error.contains("missed its deadline of 3 s"), "{error}");
    let left = objects_left(&stack).await;
    assert!(left.is_empty(), "the synthesized partitions were deleted: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fan_out_its_gateway_left_half_done_is_finished() {
    let mut stack = Stack::start().await.unwrap();
    fast_ledger_pass(&mut stack).await;
    // what a gateway that stopped right after writing the record leaves: a record, no tasks
    let bus = Bus::connect(BusConfig::new(stack.nats.url())).await.unwrap();
    let id = uuid_like();
    let created = now_ms() - 60_000;
    let record = job_record(&id, created);
    bus.ledger().create(&record).await.unwrap();
    let job = stack.wait_finished(&id, JOB_TIMEOUT).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    verify_job_proof(&job, &stack.proof(&id).await.unwrap().1).unwrap();
    let left = objects_left(&stack).await;
    assert!(left.is_empty(), "a done job leaves no object behind: {left:?}");
}

/// A queued two-partition dense-chain record created at `created`, not yet fanned out.
pub(crate) fn job_record(id: &str, created: u64) -> JobRecord {
    JobRecord {
        schema: SCHEMA_VERSION,
        id: id.into(),
        circuit: snarkflow_circuits::circuit("dense-chain-c256"),
        priority: Priority::Normal,
        seed: 7,
        state: JobState::Queued,
        error: None,
        trace_id: None,
        idempotency_key: None,
        created_at_ms: created,
        updated_at_ms: created,
        finished_at_ms: None,
        partitions: vec![PartitionRecord::default(); 2],
        assemble_s: None,
        input: None,
        tenant: Some("ops".into()),
        deadline_at_ms: Some(created + 3_600_000),
        enqueued: false,
        request_sha256: None,
    }
}

pub(crate) fn uuid_like() -> String {
    let n: u128 = rand::random();
    let h = format!("{n:032x}");
    format!("{}-{}-4{}-a{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

/// A gateway allowing two deliveries per task (the harness's ack wait: 3 s) and no workers,
/// one one-partition job submitted, and the synthesis lane its task waits in: the test plays
/// the worker that dies holding the task (pulls it and never answers).
struct DyingWorker {
    nats: NatsServer,
    gateway: snarkflow_e2e::Service,
    base: String,
    http: reqwest::Client,
    id: String,
    js: async_nats::jetstream::Context,
    lane: async_nats::jetstream::consumer::PullConsumer,
}

async fn dying_worker() -> DyingWorker {
    snarkflow_e2e::init_test_logging();
    let nats = NatsServer::start();
    let (gateway, base) = start_gateway_with(&nats.url(), &["--max-deliver", "2"]).await.unwrap();
    let http = snarkflow_e2e::api_client();
    let submitted: serde_json::Value = http
        .post(format!("{base}/v1/jobs"))
        .json(&json!({"kind": "dense-chain", "input": {"constraints": 64}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = submitted["id"].as_str().unwrap().to_owned();
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await.unwrap());
    let lane = js
        .get_stream(snarkflow_wire::SYNTH_STREAM)
        .await
        .unwrap()
        .get_consumer(&snarkflow_wire::lane_consumer(Stage::Synthesis, Priority::Normal))
        .await
        .unwrap();
    DyingWorker { nats, gateway, base, http, id, js, lane }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_no_worker_survives_fails_its_job() {
    let DyingWorker { nats, gateway, base, http, id, lane, .. } = dying_worker().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let job = loop {
        // pull (and drop) whatever is due; once deliveries are used up, this pull is what makes
        // the server give up on the task
        use futures::StreamExt as _;
        let mut batch = lane.fetch().max_messages(1).expires(Duration::from_millis(1500)).messages().await.unwrap();
        while batch.next().await.is_some() {}
        let job: serde_json::Value =
            http.get(format!("{base}/v1/jobs/{id}")).send().await.unwrap().json().await.unwrap();
        if job["state"] == "failed" {
            break job;
        }
        assert!(Instant::now() < deadline, "the job never failed: {job}");
    };
    let error = job["error"].as_str().unwrap();
    assert!(error.contains("handed to a worker 2 times"), "{error}");
    // (the job is failed before its dead task is removed from the stream)
    let bus = Bus::connect(BusConfig::new(nats.url())).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap(), 0, "the dead task left the queue");
    // and it is counted (just after the task leaves the queue)
    let counted = r#"snarkflow_dead_letters_total{outcome="failed_job",stage="synthesis"} 1"#;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
        if metrics.contains(counted) {
            break;
        }
        assert!(Instant::now() < deadline, "{counted} not in {metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn objects_live_as_long_as_their_job() {
    let mut stack = Stack::start().await.unwrap();
    fast_ledger_pass(&mut stack).await;
    let id = stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 64}})).await.unwrap();
    assert_eq!(stack.wait_finished(&id, JOB_TIMEOUT).await.unwrap()["state"], "done");
    // a partition stored after its job ended (a redelivered synthesis finishing late)
    let bus = Bus::connect(BusConfig::new(stack.nats.url())).await.unwrap();
    let late = snarkflow_wire::partition_object(&id, 0);
    bus.put_object(&late, b"late partition").await.unwrap();
    // stored (the put was acknowledged); a ledger pass may already have taken it by the time
    // it is listed, so the list holds it or nothing
    let listed = objects(&stack).await;
    assert!(listed.is_empty() || listed == vec![late.clone()], "{listed:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !objects(&stack).await.is_empty() {
        assert!(Instant::now() < deadline, "the finished job's leftover object was never deleted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_object_of_a_job_never_recorded_and_stray_chunks_are_deleted_after_the_grace() {
    // what a submit leaves when it stored the input and then failed to write the record (the
    // client's retry made another job): an object no record names. Beside it, the input of a
    // live job, which must stay.
    let nats = NatsServer::start();
    let flags = ["--ledger-pass-secs", "1", "--request-timeout-secs", "2", "--orphan-grace-secs", "3"];
    let (gateway, _base) = start_gateway_with(&nats.url(), &flags).await.unwrap();
    let bus = Bus::connect(BusConfig::new(nats.url())).await.unwrap();
    let orphan = snarkflow_wire::input_object(&uuid_like());
    let written = Instant::now();
    bus.put_object(&orphan, b"an input whose record was never written").await.unwrap();
    let live = uuid_like();
    let mut record = job_record(&live, now_ms());
    let live_input = snarkflow_wire::input_object(&live);
    let stored = bus.put_object(&live_input, b"a live job's input").await.unwrap();
    record.enqueued = true;
    bus.ledger().create(&record).await.unwrap();
    // and what an upload cut off half way leaves: chunks under an upload id no object names
    let stray = format!("$O.{}.C.upload-cut-off", snarkflow_wire::PARTITIONS_BUCKET);
    for _ in 0..3 {
        bus.publish(stray.clone(), vec![7; 1000], None).await.unwrap();
    }
    let objects = || async { bus.object_names().await.unwrap() };
    let strays = || async { bus.stray_chunks().await.unwrap().into_iter().map(|c| c.subject).collect::<Vec<_>>() };
    assert_eq!(strays().await, vec![stray.clone()], "the live input's chunks are owned");
    // not within the grace (3 s from the writes: asked only while well inside it by this clock)
    tokio::time::sleep(Duration::from_millis(1500).saturating_sub(written.elapsed())).await;
    let (present, strays_now) = (objects().await.contains(&orphan), strays().await.len());
    if written.elapsed() < Duration::from_millis(2500) {
        assert!(present, "deleted before its grace was over");
        assert_eq!(strays_now, 1, "stray chunks deleted before the grace was over");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while objects().await.contains(&orphan) || !strays().await.is_empty() {
        assert!(Instant::now() < deadline, "the orphaned input or the stray chunks were never deleted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(objects().await, vec![live_input.clone()], "the live job's input stays");
    let fetched = bus.get_object(&live_input, &stored.sha256_hex).await;
    assert_eq!(fetched.unwrap().data, b"a live job's input", "its chunks stay too");
    gateway.stop().await.unwrap();
}

#[ignore = "slow tier: a three-node NATS cluster"]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_three_node_cluster_loses_a_node_and_no_job() {
    snarkflow_e2e::init_test_logging();
    let mut cluster = snarkflow_testkit::NatsCluster::start(3);
    let url = cluster.url();
    let replicated = ["--nats-replicas", "3"];
    let (gateway, base) = start_gateway_with(&url, &replicated).await.unwrap();
    let synth = snarkflow_e2e::start_synth_worker_with(&url, "synth-c", &replicated).unwrap();
    let gpu = snarkflow_e2e::start_gpu_worker_with(&url, "gpu-c", &replicated).unwrap();
    let http = snarkflow_e2e::api_client();
    let mut ids = Vec::new();
    for seed in 0..4 {
        let body = json!({"kind": "dense-chain", "input": {"constraints": 256, "partitions": 2, "seed": seed}});
        let v: serde_json::Value =
            http.post(format!("{base}/v1/jobs")).json(&body).send().await.unwrap().json().await.unwrap();
        ids.push(v["id"].as_str().unwrap_or_else(|| panic!("{v}")).to_owned());
    }
    // a node goes away while the jobs are in flight
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.nodes[1].stop();
    for id in &ids {
        let job = snarkflow_e2e::wait_job(&http, &base, id, Duration::from_secs(300)).await.unwrap();
        assert_eq!(job["state"], "done", "{job}");
        let proof = http.get(format!("{base}/v1/jobs/{id}/proof")).send().await.unwrap().bytes().await.unwrap();
        verify_job_proof(&job, &proof).unwrap();
    }
    cluster.nodes[1].restart();
    for service in [gpu, synth, gateway] {
        service.stop().await.unwrap();
    }
}

/// A task whose last worker reported its result and then died before acking it reaches its
/// delivery limit like a dead one; the ledger has the result, so the job is not failed — the
/// task is only taken off its queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_for_a_partition_already_done_does_not_fail_its_job() {
    use futures::StreamExt as _;
    let DyingWorker { nats, gateway, base, http, id, js, lane } = dying_worker().await;
    // the "worker" takes the task, reports the partition synthesized, and dies without acking
    let mut batch = lane.fetch().max_messages(1).expires(Duration::from_secs(5)).messages().await.unwrap();
    assert!(batch.next().await.is_some(), "the synthesis task was queued");
    while batch.next().await.is_some() {}
    let body = snarkflow_wire::JobEventBody::PartitionSynthesized { stats: Default::default() };
    let event = snarkflow_wire::JobEvent::new(&id, 0, now_ms(), body);
    js.publish(snarkflow_wire::events_subject(&id), snarkflow_wire::encode(&event).into())
        .await
        .unwrap()
        .await
        .unwrap();
    // its deliveries run out: pull (and drop) until the server gives up on it and the gateway
    // has dealt with the advisory (the task leaves the queue)
    let bus = Bus::connect(BusConfig::new(nats.url())).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while bus.pending(snarkflow_wire::SYNTH_STREAM).await.unwrap() > 0 {
        let mut batch = lane.fetch().max_messages(1).expires(Duration::from_millis(1500)).messages().await.unwrap();
        while batch.next().await.is_some() {}
        assert!(Instant::now() < deadline, "the dead task never left its queue");
    }
    let job: serde_json::Value = http.get(format!("{base}/v1/jobs/{id}")).send().await.unwrap().json().await.unwrap();
    assert_ne!(job["state"], "failed", "a partition whose result is recorded was failed: {job}");
    assert_eq!(job["partitions"]["synthesized"], 1, "{job}");
    // counted, as what it was
    let metrics = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains(r#"snarkflow_dead_letters_total{outcome="recorded",stage="synthesis"} 1"#), "{metrics}");
    gateway.stop().await.unwrap();
}

/// An object's size is what its writer recorded, and a role that may write the object store
/// may forge it: a reader that reserved it (2^62 bytes) would abort its process — every gateway
/// reading that job's input would crash-loop. The read must fail, saying the sizes disagree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_object_size_fails_the_read_instead_of_aborting_the_reader() {
    use base64::Engine as _;
    let nats = NatsServer::start();
    let bus = Bus::connect(BusConfig::new(nats.url())).await.unwrap();
    let name = "forged-job/partition-0";
    let data = b"a dozen bytes and a few more";
    let stored = bus.put_object(name, data).await.unwrap();
    // rewrite the object's record (its last meta message) with an absurd size
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await.unwrap());
    let bucket = snarkflow_wire::PARTITIONS_BUCKET;
    let subject = format!("$O.{bucket}.M.{}", base64::engine::general_purpose::URL_SAFE.encode(name));
    let stream = js.get_stream(format!("OBJ_{bucket}")).await.unwrap();
    let meta = stream.get_last_raw_message_by_subject(&subject).await.unwrap();
    let mut info: serde_json::Value = serde_json::from_slice(&meta.payload).unwrap();
    assert_eq!(info["size"], data.len(), "{info}");
    info["size"] = (1u64 << 62).into();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Rollup", "sub");
    js.publish_with_headers(subject, headers, serde_json::to_vec(&info).unwrap().into()).await.unwrap().await.unwrap();
    let err = bus.get_object(name, &stored.sha256_hex).await.unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
}
