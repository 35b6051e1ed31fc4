//! Deliveries: heartbeats, the last-delivery rule, broker outages, undecodable tasks, tasks of
//! finished jobs or recorded results.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_long_work_from_being_redelivered() {
    // three ack waits of work: without in-progress heartbeats the broker would redeliver it
    let h = start(Behaviour::SucceedAfter(Duration::from_millis(3500)), 5, Duration::from_secs(5)).await;
    create_job(&h.bus, "job-long").await;
    publish(&h.bus, wire::encode(&task("job-long"))).await;
    let bus = h.bus.clone();
    wait_until("the task is acked", Duration::from_secs(20), async || {
        bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 1, "handled once, never redelivered meanwhile");
    let started: Vec<_> = events(&h.bus, Duration::from_secs(1)).await.into_iter().map(|e| e.body).collect();
    assert!(matches!(started[..], [JobEventBody::SynthesisStarted { .. }]), "{started:?}");
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_failure_on_the_last_delivery_fails_the_job() {
    let h = start(Behaviour::Transient, 2, Duration::from_secs(5)).await;
    create_job(&h.bus, "job-flaky").await;
    publish(&h.bus, wire::encode(&task("job-flaky"))).await;
    let bus = h.bus.clone();
    wait_until("the task is settled for good", Duration::from_secs(30), async || {
        bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 2, "one try per allowed delivery");
    let failed: Vec<String> = events(&h.bus, Duration::from_secs(1))
        .await
        .into_iter()
        .filter_map(|e| match e.body {
            JobEventBody::PartitionFailed { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(failed, vec!["gave up after 2 deliveries: the test says so".to_owned()]);
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_outage_does_not_spend_the_tasks_deliveries() {
    // two deliveries allowed, the broker "unavailable" three times in a row: the task is retried
    // in place on its first delivery and succeeds; handed back each time, it would have failed
    // its job on the second delivery
    let h = start(Behaviour::UnavailableTimes(3), 2, Duration::from_secs(5)).await;
    create_job(&h.bus, "job-election").await;
    publish(&h.bus, wire::encode(&task("job-election"))).await;
    let bus = h.bus.clone();
    wait_until("the task is acked", Duration::from_secs(30), async || {
        bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(*h.stage.deliveries.lock().unwrap(), [1, 1, 1, 1], "four tries, all on the first delivery");
    let failed = events(&h.bus, Duration::from_millis(500))
        .await
        .into_iter()
        .any(|e| matches!(e.body, JobEventBody::PartitionFailed { .. }));
    assert!(!failed, "the job did not fail");
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_task_fails_the_job_it_names() {
    let h = start(Behaviour::SucceedAfter(Duration::ZERO), 5, Duration::from_secs(5)).await;
    create_job(&h.bus, "job-garbled").await;
    publish(&h.bus, br#"{"schema": 1, "job_id": "job-garbled", "partition": 0, "circuit": 7}"#.to_vec()).await;
    // and one that names no job at all: terminated, nothing else
    publish(&h.bus, b"not json".to_vec()).await;
    let bus = h.bus.clone();
    wait_until("both messages are settled", Duration::from_secs(20), async || {
        bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 0, "the stage never sees them");
    let events = events(&h.bus, Duration::from_secs(1)).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].job_id, "job-garbled");
    match &events[0].body {
        JobEventBody::PartitionFailed { stage, message } => {
            assert_eq!(*stage, wire::Stage::Synthesis);
            assert!(message.starts_with("undecodable synthesis task: "), "{message}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_unknown_or_finished_jobs_are_dropped_unprocessed() {
    let h = start(Behaviour::SucceedAfter(Duration::ZERO), 5, Duration::from_secs(5)).await;
    publish(&h.bus, wire::encode(&task("no-such-job"))).await;
    let bus = h.bus.clone();
    wait_until("the task is acked", Duration::from_secs(20), async || {
        bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 0);
    assert!(events(&h.bus, Duration::from_millis(500)).await.is_empty(), "nothing is announced for it");
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_result_is_recorded_already_is_dropped_unprocessed() {
    // its worker reported the partition synthesized, then died before acking: the redelivery
    // must not do the work again (nor, for a proof, fail on the object it already deleted)
    let h = start(Behaviour::SucceedAfter(Duration::ZERO), 5, Duration::from_secs(5)).await;
    create_job_of(&h.bus, "job-redelivered", 2).await;
    h.bus
        .ledger()
        .update("job-redelivered", |r| {
            r.partitions[0].synthesized = true;
            true
        })
        .await
        .unwrap();
    publish(&h.bus, wire::encode(&task_of("job-redelivered", 0, 2))).await;
    publish(&h.bus, wire::encode(&task_of("job-redelivered", 1, 2))).await;
    let bus = h.bus.clone();
    wait_until("both tasks are acked", Duration::from_secs(20), async || {
        bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 1, "only the partition not yet done is worked on");
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}
