//! Lanes and the broker: pulls across a restart, only a worker's own lanes, no quorum at start.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_in_flight_across_a_broker_restart_are_made_again() {
    // slot 1 works on a long task; slot 2's pull waits at the broker meanwhile (the broker
    // holds a pull while another message of the consumer awaits its ack). The broker
    // restarts and forgets that pull: slot 2 must pull again, not wait for a reply that
    // will never come.
    // an ack wait longer than the restart: the long task's heartbeats pause while the broker is
    // down, and a current nats-server takes more than a second to recover its streams — with a
    // 1 s ack wait the long task was redelivered to slot 2, which then had no pull to lose
    let tuning = Tuning { ack_wait: Duration::from_secs(10), ..Tuning::default() };
    let mut h =
        start_full(Behaviour::SucceedAfter(Duration::from_secs(60)), 5, Duration::ZERO, (2, 0), 0, 1 << 30, tuning)
            .await;
    create_job(&h.bus, "job-long").await;
    publish(&h.bus, wire::encode(&task("job-long"))).await;
    let stage = h.stage.clone();
    wait_until("the long task is picked up", Duration::from_secs(20), async || stage.calls.load(Ordering::SeqCst) == 1)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    h.nats.restart();
    create_job(&h.bus, "job-after").await;
    publish(&h.bus, wire::encode(&task("job-after"))).await;
    wait_until("the second slot takes the task published after the restart", Duration::from_secs(20), async || {
        stage.seen.lock().unwrap().iter().any(|job| job == "job-after")
    })
    .await;
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_pulls_only_its_lanes() {
    // a sealing pool (normal, low) beside which a PoSt pool would take the critical lane
    let tuning = Tuning { lanes: vec![Priority::Normal, Priority::Low], ..Tuning::default() };
    let h = start_full(Behaviour::SucceedAfter(Duration::ZERO), 5, Duration::from_secs(5), (1, 1), 0, 1 << 30, tuning)
        .await;
    create_job(&h.bus, "job-winning").await;
    create_job(&h.bus, "job-porep").await;
    publish_critical(&h.bus, task("job-winning")).await;
    publish(&h.bus, wire::encode(&task("job-porep"))).await;
    let stage = h.stage.clone();
    wait_until("the normal task is handled", Duration::from_secs(20), async || {
        stage.seen.lock().unwrap().contains(&"job-porep".to_owned())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(*h.stage.seen.lock().unwrap(), vec!["job-porep".to_owned()], "the critical task was left alone");
    assert_eq!(h.bus.pending(wire::SYNTH_STREAM).await.unwrap(), 1, "it waits for a worker of its lane");
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow tier: a three-node NATS cluster that loses its quorum (~30 s of waiting for it)"]
async fn a_worker_started_while_nats_has_no_quorum_waits_for_its_lanes() {
    // the worker starts while a three-node cluster has lost two nodes (JetStream answers
    // "temporarily unavailable" or times out, so opening the lanes fails): it must wait and
    // take work once the quorum is back, not exit
    let mut cluster = NatsCluster::start(3);
    let config = BusConfig { ack_wait: Duration::from_secs(1), replicas: 3, ..BusConfig::new(cluster.url()) };
    let bus = Bus::connect(config).await.unwrap();
    let shutdown = CancellationToken::new();
    let host = WorkerHost::start(wire::Stage::Synthesis, "test-worker".into(), None, shutdown.clone()).await.unwrap();
    let stage = test_stage(Behaviour::SucceedAfter(Duration::ZERO), 0);
    cluster.nodes[0].stop();
    cluster.nodes[1].stop();
    let worker = tokio::spawn(snarkflow_runtime::run(
        host,
        bus.clone(),
        stage.clone(),
        SlotConfig {
            slots: 1,
            urgent_slots: 0,
            lanes: Vec::new(),
            drain: Duration::from_secs(1),
            memory: snarkflow_runtime::MemoryBudget::new(1 << 30),
            watchdog: None,
        },
        shutdown.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert!(!worker.is_finished(), "the worker exited while NATS had no quorum: {:?}", worker.await);
    cluster.nodes[0].restart();
    cluster.nodes[1].restart();
    let record = job_record("job-after-outage", 1);
    // (a create that timed out may still have been written)
    wait_until("the cluster takes writes again", Duration::from_secs(90), async || {
        bus.ledger().create(&record).await.is_ok() || matches!(bus.ledger().get(&record.id).await, Ok(Some(_)))
    })
    .await;
    let payload = wire::encode(&task("job-after-outage"));
    wait_until("the task is published", Duration::from_secs(60), async || {
        bus.publish(wire::synth_subject(Priority::Normal), payload.clone(), Some("job-after-outage/0")).await.is_ok()
    })
    .await;
    wait_until("the task is handled", Duration::from_secs(60), async || stage.calls.load(Ordering::SeqCst) == 1).await;
    shutdown.cancel();
    worker.await.unwrap().unwrap();
}
