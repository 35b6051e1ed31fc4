//! Admission by the memory budget and the urgent slot.

use super::*;

/// A job of `partitions` partitions, each queued as a task; returns once none is left queued.
async fn run_job(bus: &Bus, job_id: &str, partitions: u32, limit: Duration) {
    create_job_of(bus, job_id, partitions as usize).await;
    for partition in 0..partitions {
        publish(bus, wire::encode(&task_of(job_id, partition, partitions))).await;
    }
    wait_until("the partitions are done", limit, async || bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_for_one_partition_never_holds_two() {
    // two slots, two partitions, a budget of 1.5 partitions: they run one after the other
    let h = start_with(
        Behaviour::SucceedAfter(Duration::from_millis(700)),
        5,
        Duration::from_secs(5),
        2,
        600 << 20,
        900 << 20,
    )
    .await;
    run_job(&h.bus, "job-big", 2, Duration::from_secs(20)).await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 2);
    assert_eq!(h.stage.most_running.load(Ordering::SeqCst), 1, "never two partitions in the budget at once");
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_critical_task_takes_the_urgent_slot_while_the_regular_slot_is_busy() {
    // one regular slot, one urgent slot: two normal tasks, then a critical one while the first
    // normal task runs. The critical task runs beside it; the second normal task waits for the
    // regular slot (the urgent slot never takes it).
    let h = start_full(
        Behaviour::SucceedAfter(Duration::from_millis(1500)),
        5,
        Duration::from_secs(5),
        (1, 1),
        0,
        1 << 30,
        Tuning::default(),
    )
    .await;
    for job in ["normal-1", "normal-2", "urgent"] {
        create_job(&h.bus, job).await;
    }
    publish(&h.bus, wire::encode(&task("normal-1"))).await;
    publish(&h.bus, wire::encode(&task("normal-2"))).await;
    wait_until("the first normal task runs", Duration::from_secs(10), async || {
        h.stage.calls.load(Ordering::SeqCst) == 1
    })
    .await;
    publish_critical(&h.bus, task("urgent")).await;
    wait_until("every task ran", Duration::from_secs(20), async || {
        h.bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(*h.stage.seen.lock().unwrap(), ["normal-1", "urgent", "normal-2"], "the critical task went first");
    assert_eq!(h.stage.most_running.load(Ordering::SeqCst), 2, "the critical task ran beside the regular slot's");
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_pulled_before_the_estimate_is_known_are_admitted_by_it_once_known() {
    // three slots, three partitions of 100 MiB in a 1 GiB budget, no estimate until the first
    // runs: the first takes the whole budget; the two waiting behind it learn the estimate
    // and then run together (before, each waited for the whole budget: one by one)
    let h = start_with(
        Behaviour::SucceedAfter(Duration::from_millis(1500)),
        5,
        Duration::from_secs(5),
        3,
        100 << 20,
        1 << 30,
    )
    .await;
    h.stage.estimate_after_first.store(true, Ordering::SeqCst);
    run_job(&h.bus, "job-new-circuit", 3, Duration::from_secs(30)).await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        h.stage.most_running.load(Ordering::SeqCst),
        2,
        "the two that waited for the unknown estimate ran together once it was known"
    );
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_larger_than_the_budget_fails_its_job_without_running() {
    let h = start_with(Behaviour::SucceedAfter(Duration::ZERO), 5, Duration::from_secs(5), 1, 2 << 30, 1 << 30).await;
    create_job(&h.bus, "job-huge").await;
    publish(&h.bus, wire::encode(&task("job-huge"))).await;
    let bus = h.bus.clone();
    wait_until("the task is settled", Duration::from_secs(20), async || {
        bus.pending(wire::SYNTH_STREAM).await.unwrap() == 0
    })
    .await;
    assert_eq!(h.stage.calls.load(Ordering::SeqCst), 0, "never admitted");
    let failed: Vec<String> = events(&h.bus, Duration::from_secs(1))
        .await
        .into_iter()
        .filter_map(|e| match e.body {
            JobEventBody::PartitionFailed { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        vec!["the partition needs about 2.0 GiB of memory but this worker's --memory-budget is 1.0 GiB".to_owned()]
    );
    h.shutdown.cancel();
    h.worker.await.unwrap().unwrap();
}
