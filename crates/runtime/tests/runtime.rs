//! The worker runtime against a real nats-server, with a stage whose behaviour each test
//! sets: heartbeats, the last-delivery rule, undecodable tasks, tasks of finished jobs, and
//! the drain on shutdown.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_runtime::{Failure, Outcome, SlotConfig, TaskContext, TaskHandler, WorkerHost};
use snarkflow_testkit::{NatsCluster, NatsServer};
use snarkflow_wire::{
    self as wire, CircuitSpec, JobEvent, JobEventBody, JobRecord, JobState, PartitionRecord, Priority, SynthTask,
    SCHEMA_VERSION,
};
use tokio_util::sync::CancellationToken;

/// What the test stage does with every task.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Work this long, then succeed.
    SucceedAfter(Duration),
    /// Fail transiently at once.
    Transient,
    /// Say the broker is unavailable this many times, then succeed.
    UnavailableTimes(usize),
    /// Hang on a blocking thread, as a wedged device would (no await point to cancel); for 8 s
    /// only, since the test's runtime waits for its blocking threads when it is dropped.
    Hang,
}

struct TestStage {
    behaviour: Behaviour,
    calls: AtomicUsize,
    /// What every task is estimated to need.
    estimate: u64,
    /// No estimate until a task has run for 300 ms (as a circuit's shape is known only once
    /// its first partition recorded it).
    estimate_after_first: AtomicBool,
    first_started: Mutex<Option<Instant>>,
    running: AtomicUsize,
    most_running: AtomicUsize,
    /// The jobs of the tasks handed to the stage, in order.
    seen: Mutex<Vec<String>>,
    /// The delivery of the message behind each call, in order.
    deliveries: Mutex<Vec<u64>>,
}

impl TaskHandler for TestStage {
    type Task = SynthTask;

    fn estimated_bytes(&self, _task: &SynthTask) -> Option<u64> {
        let recorded = self.first_started.lock().unwrap().is_some_and(|t| t.elapsed() >= Duration::from_millis(300));
        (recorded || !self.estimate_after_first.load(Ordering::SeqCst)).then_some(self.estimate)
    }

    async fn process(&self, task: SynthTask, cx: TaskContext) -> Result<Outcome, Failure> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        self.deliveries.lock().unwrap().push(cx.delivery);
        self.first_started.lock().unwrap().get_or_insert_with(Instant::now);
        self.seen.lock().unwrap().push(task.job_id);
        let running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_running.fetch_max(running, Ordering::SeqCst);
        let result = match self.behaviour {
            Behaviour::SucceedAfter(d) => {
                tokio::time::sleep(d).await;
                Ok("done")
            }
            Behaviour::Transient => Err(Failure::Transient("the test says so".into())),
            Behaviour::UnavailableTimes(n) if call < n => Err(Failure::Unavailable("no quorum, says the test".into())),
            Behaviour::UnavailableTimes(_) => Ok("done"),
            Behaviour::Hang => {
                let _ = tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_secs(8))).await;
                Ok("done")
            }
        };
        self.running.fetch_sub(1, Ordering::SeqCst);
        result
    }
}

struct Harness {
    nats: NatsServer,
    bus: Bus,
    stage: Arc<TestStage>,
    shutdown: CancellationToken,
    worker: tokio::task::JoinHandle<Result<(), snarkflow_runtime::RunError>>,
}

async fn start(behaviour: Behaviour, max_deliver: i64, drain: Duration) -> Harness {
    start_with(behaviour, max_deliver, drain, 1, 0, 1 << 30).await
}

async fn start_watched(behaviour: Behaviour, watchdog: Duration) -> Harness {
    let tuning = Tuning { watchdog: Some(watchdog), ..Tuning::default() };
    start_full(behaviour, 5, Duration::from_secs(5), (1, 0), 0, 1 << 30, tuning).await
}

async fn start_with(
    behaviour: Behaviour,
    max_deliver: i64,
    drain: Duration,
    slots: usize,
    estimate: u64,
    budget: u64,
) -> Harness {
    start_full(behaviour, max_deliver, drain, (slots, 0), estimate, budget, Tuning::default()).await
}

async fn start_full(
    behaviour: Behaviour,
    max_deliver: i64,
    drain: Duration,
    (slots, urgent_slots): (usize, usize),
    estimate: u64,
    budget: u64,
    Tuning { watchdog, ack_wait, lanes }: Tuning,
) -> Harness {
    let nats = NatsServer::start();
    let config = BusConfig { ack_wait, max_deliver, ..BusConfig::new(nats.url()) };
    let bus = Bus::connect(config).await.unwrap();
    let shutdown = CancellationToken::new();
    let host = WorkerHost::start(wire::Stage::Synthesis, "test-worker".into(), None, shutdown.clone()).await.unwrap();
    let stage = test_stage(behaviour, estimate);
    let worker = tokio::spawn(snarkflow_runtime::run(
        host,
        bus.clone(),
        stage.clone(),
        SlotConfig {
            slots,
            urgent_slots,
            lanes,
            drain,
            memory: snarkflow_runtime::MemoryBudget::new(budget),
            watchdog,
        },
        shutdown.clone(),
    ));
    Harness { nats, bus, stage, shutdown, worker }
}

/// The rest of a harness's settings.
struct Tuning {
    watchdog: Option<Duration>,
    /// Short by default, so that redeliveries come quickly.
    ack_wait: Duration,
    /// The lanes the worker pulls from (empty: all).
    lanes: Vec<Priority>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning { watchdog: None, ack_wait: Duration::from_secs(1), lanes: Vec::new() }
    }
}

fn test_stage(behaviour: Behaviour, estimate: u64) -> Arc<TestStage> {
    Arc::new(TestStage {
        behaviour,
        calls: AtomicUsize::new(0),
        estimate,
        estimate_after_first: AtomicBool::new(false),
        first_started: Mutex::new(None),
        running: AtomicUsize::new(0),
        most_running: AtomicUsize::new(0),
        seen: Mutex::new(Vec::new()),
        deliveries: Mutex::new(Vec::new()),
    })
}

fn task(job_id: &str) -> SynthTask {
    task_of(job_id, 0, 1)
}

fn task_of(job_id: &str, partition: u32, partitions: u32) -> SynthTask {
    SynthTask {
        schema: SCHEMA_VERSION,
        job_id: job_id.into(),
        circuit: CircuitSpec::new(snarkflow_wire::JobKind::new("dense-chain"), "c8").unwrap(),
        priority: Priority::Normal,
        seed: 1,
        partition,
        partitions,
        input: None,
    }
}

async fn create_job(bus: &Bus, id: &str) {
    create_job_of(bus, id, 1).await
}

async fn create_job_of(bus: &Bus, id: &str, partitions: usize) {
    bus.ledger().create(&job_record(id, partitions)).await.unwrap();
}

fn job_record(id: &str, partitions: usize) -> JobRecord {
    JobRecord {
        schema: SCHEMA_VERSION,
        id: id.into(),
        circuit: CircuitSpec::new(snarkflow_wire::JobKind::new("dense-chain"), "c8").unwrap(),
        priority: Priority::Normal,
        seed: 1,
        state: JobState::Queued,
        error: None,
        trace_id: None,
        idempotency_key: None,
        created_at_ms: 1,
        updated_at_ms: 1,
        finished_at_ms: None,
        partitions: vec![PartitionRecord::default(); partitions],
        assemble_s: None,
        input: None,
        tenant: None,
        deadline_at_ms: None,
        enqueued: true,
        request_sha256: None,
    }
}

async fn publish(bus: &Bus, payload: Vec<u8>) {
    bus.publish(wire::synth_subject(Priority::Normal), payload, None).await.unwrap();
}

async fn publish_critical(bus: &Bus, task: SynthTask) {
    let task = SynthTask { priority: Priority::Critical, ..task };
    bus.publish(wire::synth_subject(Priority::Critical), wire::encode(&task), None).await.unwrap();
}

/// Events published so far (the events stream is drained by this call).
async fn events(bus: &Bus, wait: Duration) -> Vec<JobEvent> {
    let consumer = bus.events_consumer().await.unwrap();
    let mut batch = consumer.fetch().max_messages(100).expires(wait).messages().await.unwrap();
    let mut out = Vec::new();
    while let Some(Ok(msg)) = batch.next().await {
        out.push(wire::decode(&msg.payload).unwrap());
        msg.ack().await.unwrap();
    }
    out
}

async fn wait_until(what: &str, timeout: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
