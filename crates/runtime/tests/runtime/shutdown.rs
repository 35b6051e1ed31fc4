//! Stopping: the drain deadline and the task watchdog.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_hands_work_back_after_the_drain_deadline() {
    let h = start(Behaviour::SucceedAfter(Duration::from_secs(600)), 5, Duration::from_millis(500)).await;
    create_job(&h.bus, "job-stuck").await;
    publish(&h.bus, wire::encode(&task("job-stuck"))).await;
    let stage = h.stage.clone();
    wait_until("the task is picked up", Duration::from_secs(20), async || stage.calls.load(Ordering::SeqCst) == 1)
        .await;
    let stopping = Instant::now();
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
    assert!(stopping.elapsed() < Duration::from_secs(10), "the worker stopped after the drain, not the work");
    assert_eq!(h.bus.pending(wire::SYNTH_STREAM).await.unwrap(), 1, "the task is still there for another worker");
    let failed = events(&h.bus, Duration::from_millis(500))
        .await
        .into_iter()
        .any(|e| matches!(e.body, JobEventBody::PartitionFailed { .. }));
    assert!(!failed, "handing work back does not fail the job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_past_the_watchdog_is_handed_back_and_the_worker_stops() {
    let h = start_watched(Behaviour::Hang, Duration::from_secs(2)).await;
    create_job(&h.bus, "job-hung").await;
    publish(&h.bus, wire::encode(&task("job-hung"))).await;
    let started = Instant::now();
    let stopped = tokio::time::timeout(Duration::from_secs(30), h.worker).await.expect("the worker stops").unwrap();
    let err = stopped.expect_err("a hung task stops the worker");
    assert!(err.to_string().contains("task watchdog"), "{err}");
    assert!(started.elapsed() >= Duration::from_secs(2), "not before the watchdog's limit");
    // handed back, not failed: another worker takes it
    assert_eq!(h.bus.pending(wire::SYNTH_STREAM).await.unwrap(), 1, "the task waits for another worker");
    let failed = events(&h.bus, Duration::from_millis(500))
        .await
        .into_iter()
        .any(|e| matches!(e.body, JobEventBody::PartitionFailed { .. }));
    assert!(!failed, "a hung worker does not fail the job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_waiting_for_the_memory_budget_does_not_count_toward_the_watchdog() {
    // three tasks that each need the whole budget and work 1.5 s, two slots, a 2 s watchdog:
    // the second waits 1.5 s for memory and the third 3 s, so counting from the pull they
    // would pass the watchdog; counting work only, none does
    let tuning = Tuning { watchdog: Some(Duration::from_secs(2)), ..Tuning::default() };
    let h = start_full(
        Behaviour::SucceedAfter(Duration::from_millis(1500)),
        5,
        Duration::from_secs(5),
        (2, 0),
        1 << 20,
        1 << 20,
        tuning,
    )
    .await;
    for job in ["job-w1", "job-w2", "job-w3"] {
        create_job(&h.bus, job).await;
        publish(&h.bus, wire::encode(&task(job))).await;
    }
    let bus = h.bus.clone();
    wait_until("all three tasks are acked", Duration::from_secs(30), async || {
        bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 3, "each task ran once: none was handed back");
    assert_eq!(h.stage.most_running.load(Ordering::SeqCst), 1, "the budget let one run at a time");
    assert!(!h.worker.is_finished(), "the watchdog did not stop the worker");
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}
