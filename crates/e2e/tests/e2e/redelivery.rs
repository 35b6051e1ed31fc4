//! A gpu-worker killed (SIGKILL) in the middle of a partition does not lose the job: the
//! partition is redelivered after the ack wait and another worker proves it. A redelivery that
//! finds its partition's object gone (an earlier delivery proved it) does not fail the job.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_bus::{now_ms, Bus, BusConfig};
use snarkflow_e2e::{gpu_worker_args, params_dir, start_gpu_worker, verify_job_proof, Stack};
use snarkflow_prover::ParamStore;
use snarkflow_wire::{Priority, Stage};

use crate::reliability::{job_record, uuid_like};

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

/// A prove task for partition `partition` of job `id` whose object was never stored.
fn task_without_object(id: &str, partition: u32) -> Vec<u8> {
    snarkflow_wire::encode(&snarkflow_wire::ProveTask {
        schema: snarkflow_wire::SCHEMA_VERSION,
        job_id: id.into(),
        circuit: snarkflow_circuits::circuit("dense-chain-c256"),
        priority: Priority::Normal,
        partition,
        partitions: 2,
        object: snarkflow_wire::partition_object(id, partition),
        encoding: snarkflow_wire::PartitionEncoding::RawBincode,
        sha256_hex: "00".repeat(32),
        bytes: 64,
        published_at_ms: snarkflow_bus::now_ms(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_redelivered_partition_whose_object_is_gone_is_dropped_while_a_first_delivery_fails() {
    let nats = snarkflow_testkit::NatsServer::start();
    let bus = Bus::connect(BusConfig::new(nats.url())).await.unwrap();
    let lanes = bus.lanes(Stage::Proving).await.unwrap();
    let subject = snarkflow_wire::prove_subject(Priority::Normal);
    // a live two-partition job, as its gateway recorded it (none runs here)
    let id = uuid_like();
    bus.ledger().create(&job_record(&id, now_ms())).await.unwrap();
    // partition 1 was delivered once and handed back (as when its prover's ack deadline
    // passed while another delivery proved it and deleted the object) ...
    bus.publish(subject.clone(), task_without_object(&id, 1), None).await.unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (_, msg) = lanes.next(&shutdown).await.unwrap().unwrap();
    msg.ack_with(async_nats::jetstream::AckKind::Nak(None)).await.unwrap();
    // ... partition 0 is on its first delivery: its object was truly never there
    bus.publish(subject, task_without_object(&id, 0), None).await.unwrap();
    let worker = start_gpu_worker(&nats.url(), "gpu-gone").unwrap();
    // the failure of partition 0 is reported; partition 1 is taken off the lane without one
    let events = bus.events_consumer().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut failed: Vec<(u32, String)> = Vec::new();
    loop {
        let mut batch = events.fetch().max_messages(10).expires(Duration::from_secs(1)).messages().await.unwrap();
        while let Some(Ok(m)) = futures::StreamExt::next(&mut batch).await {
            let event: snarkflow_wire::JobEvent = snarkflow_wire::decode(&m.payload).unwrap();
            if let snarkflow_wire::JobEventBody::PartitionFailed { message, .. } = &event.body {
                failed.push((event.partition, message.clone()));
            }
            m.ack().await.unwrap();
        }
        // a work-queue stream drops a message once it is acked or terminated
        let left = bus.pending(Stage::Proving.stream()).await.unwrap();
        if !failed.is_empty() && left == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the worker never settled both tasks: failures {failed:?}, {left} left");
    }
    worker.stop().await.unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, 0, "only the first delivery reports the missing object: {failed:?}");
    assert!(failed[0].1.contains(&format!("{id}/0")), "{failed:?}");
}
