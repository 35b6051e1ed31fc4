//! The worker runtime against a real nats-server, with a stage whose behaviour each test
//! sets: this file is the harness, each module one concern.

mod admission;
mod delivery;
mod lanes;
mod shutdown;

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
