//! The event loop against a real nats-server.
use super::*;
use futures::StreamExt as _;
use snarkflow_bus::BusConfig;
use snarkflow_wire::ProveStats;

/// The next event the gateway's consumer delivers.
async fn delivered(
    messages: &mut (impl futures::Stream<Item = Result<Message, impl std::fmt::Debug>> + Unpin),
) -> Delivered {
    let msg = tokio::time::timeout(Duration::from_secs(10), messages.next()).await.unwrap().unwrap().unwrap();
    let event = wire::decode(&msg.payload).unwrap();
    Delivered { msg, event, parent: opentelemetry::Context::new() }
}

/// A PoRep job whose last proof arrives twice (a worker's redelivery) while every
/// verification slot is taken, and which is cancelled before its verification runs: one
/// verification starts (the duplicate event is acked at once, not verified again), and the
/// job ends once, cancelled: the verdict neither overwrites the cancel nor finishes the job
/// a second time (issue 39, items 7 and 15).
/// Event-loop parts over `nats` with one verification slot, and a 2 KiB PoRep job `id` in the
/// ledger, proving its one partition.
async fn proving_porep_job(nats: &snarkflow_testkit::NatsServer, id: &str) -> (Bus, EventParts, JobRecord) {
    let bus = Bus::connect(BusConfig::new(nats.url())).await.unwrap();
    let parts = EventParts {
        bus: bus.clone(),
        ledger: bus.ledger().clone(),
        metrics: Metrics::new(),
        params_dir: std::env::temp_dir(),
        verify: Arc::new(VerifySlots::new(1)),
        tasks: TaskTracker::new(),
    };
    let mut record = crate::events::apply::tests::record(1);
    record.id = id.into();
    record.circuit = snarkflow_circuits::circuit("porep-c2-2KiB");
    record.state = JobState::Proving;
    parts.ledger.create(&record).await.unwrap();
    (bus, parts, record)
}

#[tokio::test]
async fn a_job_cancelled_while_its_proof_waits_for_verification_ends_once() {
    let nats = snarkflow_testkit::NatsServer::start();
    let (bus, parts, record) = proving_porep_job(&nats, "0b6f7a1e-2b1c-4c57-9d7e-4f1f2d0a5c11").await;
    let held = parts.verify.acquire(Priority::Normal).await;

    let proof_hex = "ab".repeat(wire::PARTITION_PROOF_BYTES);
    let event =
        JobEvent::new(&record.id, 0, 7, JobEventBody::PartitionProved { proof_hex, stats: ProveStats::default() });
    for _ in 0..2 {
        bus.publish(wire::events_subject(&record.id), wire::encode(&event), None).await.unwrap();
    }
    let consumer = bus.events_consumer().await.unwrap();
    let mut messages = consumer.messages().await.unwrap();
    apply_one(&parts, delivered(&mut messages).await).await;
    apply_one(&parts, delivered(&mut messages).await).await;
    let mut consumer = bus.events_consumer().await.unwrap();
    let pending = async {
        loop {
            let info = consumer.info().await.unwrap().clone();
            if info.num_ack_pending == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), pending).await.expect("the duplicate is acked, the first held");

    // the cancel route's two steps
    let cancelled = parts
        .ledger
        .update(&record.id, |r| {
            r.state = JobState::Cancelled;
            true
        })
        .await
        .unwrap()
        .unwrap();
    crate::jobs::finish::finished(&parts.bus, &parts.metrics, &cancelled).await;
    drop(held);
    let settled = async {
        while parts.verify.running.lock().unwrap().contains(&record.id)
            || consumer.info().await.unwrap().num_ack_pending > 0
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), settled).await.expect("the verification ends and acks its event");

    let after = parts.ledger.get(&record.id).await.unwrap().unwrap();
    assert_eq!(after.state, JobState::Cancelled, "{:?}", after.error);
    let ended = |state: &str| parts.metrics.finished.with_label_values(&["porep-c2", state]).get();
    assert_eq!((ended("cancelled"), ended("failed"), ended("done")), (1, 0, 0), "the job ends once");
    let timed = parts.metrics.job_seconds.with_label_values(&["porep-c2", "cancelled"]).get_sample_count();
    assert_eq!(timed, 1, "its latency is observed once, by kind and end");
}

#[tokio::test]
async fn a_critical_job_is_verified_while_every_other_slot_is_taken() {
    let slots = VerifySlots::new(1);
    let _porep = slots.acquire(Priority::Normal).await;
    let wait = Duration::from_millis(100);
    assert!(tokio::time::timeout(wait, slots.acquire(Priority::High)).await.is_err(), "a second one waits");
    let _winning = tokio::time::timeout(wait, slots.acquire(Priority::Critical))
        .await
        .expect("a critical job takes the slot kept for it");
    assert!(
        tokio::time::timeout(wait, slots.acquire(Priority::Critical)).await.is_err(),
        "only one is kept for critical jobs"
    );
}

/// A gateway told to stop while a verification is under way waits for it: the verdict is
/// in the ledger once, the job ended once, and its event acked, never left half applied
/// (issue 40 item 3).
#[tokio::test]
async fn shutdown_waits_for_the_verification_under_way() {
    let nats = snarkflow_testkit::NatsServer::start();
    let (bus, parts, record) = proving_porep_job(&nats, "5d1c1c3e-7f2a-4a3e-8d59-0c2b8f3e9a10").await;
    let held = parts.verify.acquire(Priority::Normal).await;
    let proof_hex = "cd".repeat(wire::PARTITION_PROOF_BYTES);
    let event =
        JobEvent::new(&record.id, 0, 7, JobEventBody::PartitionProved { proof_hex, stats: ProveStats::default() });
    bus.publish(wire::events_subject(&record.id), wire::encode(&event), None).await.unwrap();

    let (running, shutdown) = (Arc::new(AtomicBool::new(false)), CancellationToken::new());
    let stopped = tokio::spawn(supervise(parts.clone(), running, shutdown.clone()));
    let started = async {
        while !parts.verify.running.lock().unwrap().contains(&record.id) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), started).await.expect("the verification starts");
    shutdown.cancel();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!stopped.is_finished(), "the event loop stopped with a verification under way");
    drop(held);
    tokio::time::timeout(Duration::from_secs(20), stopped).await.expect("it stops once the verification ends").unwrap();

    // the verdict (this job has no input to check its proof against: failed, saying so)
    let after = parts.ledger.get(&record.id).await.unwrap().unwrap();
    assert_eq!(after.state, JobState::Failed);
    assert!(after.error.as_deref().unwrap_or_default().contains("needs its input"), "{:?}", after.error);
    let ended = parts.metrics.finished.with_label_values(&["porep-c2", "failed"]).get();
    assert_eq!(ended, 1, "ended once");
    let mut consumer = bus.events_consumer().await.unwrap();
    assert_eq!(consumer.info().await.unwrap().num_ack_pending, 0, "its event is acked");
}
