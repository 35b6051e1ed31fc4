//! The slot loop: pull, handle, settle, until shutdown; then drain.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use snarkflow_bus::{extract_context, now_ms, AckKind, Bus, Failure, Lanes, Message, Outcome, TaskRef, TaskStatus};
use snarkflow_wire::{self as wire, JobEvent, JobEventBody, PartitionTask, Priority, Stage};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::watchdog::Watchdog;
use crate::{Fatal, MemoryBudget, TaskContext, TaskHandler, WorkerHost};

/// How many tasks a worker handles at once and how it stops.
#[derive(Debug, Clone)]
pub struct SlotConfig {
    /// Slots pulling and handling tasks concurrently (at least 1).
    pub slots: usize,
    /// More slots that pull only critical-priority tasks (WinningPoSt by default), so one never
    /// waits for a regular slot to come free behind partitions that take a minute; their tasks
    /// are admitted by the same memory budget.
    pub urgent_slots: usize,
    /// The priority lanes this worker pulls from (empty: all). Its urgent slots exist only
    /// when the critical lane is among them.
    pub lanes: Vec<Priority>,
    /// Time in-flight tasks get to finish after shutdown before they are handed back.
    pub drain: Duration,
    /// Memory the tasks in flight may hold together (their stage's estimates).
    pub memory: MemoryBudget,
    /// Longest one task may take (`None`: no limit). A task past it is handed back to another
    /// worker and this worker stops with [`RunError::Fatal`]: work hung on a blocking thread
    /// (a wedged GPU, a deadlock) cannot be interrupted, and heartbeats would otherwise keep
    /// it from ever being redelivered. The supervisor restarts the process.
    pub watchdog: Option<Duration>,
}

/// Why a worker stopped other than by shutdown.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{}", .0.0)]
    Fatal(Fatal),
}

/// How long a slot waits after a failed pull before pulling again.
const PULL_RETRY: Duration = Duration::from_secs(1);

/// How often a task whose estimate is not known yet re-asks for it while it waits.
const REESTIMATE: Duration = Duration::from_millis(500);

/// How long a task keeps being retried in place, its message held, while the broker is
/// unavailable ([`Failure::Unavailable`]) before it is handed back like any transient failure,
/// spending a delivery. Leader elections and node restarts take seconds; a NATS cluster that
/// loses quorum for longer than this is an outage, and the job's deadline bounds it anyway.
const BROKER_PATIENCE: Duration = Duration::from_secs(90);

/// First and longest pause between in-place retries while the broker is unavailable.
const BROKER_RETRY: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(8));

/// Run `stage` on `bus` until `shutdown` (or a [`Fatal`] from the stage): the host reports
/// ready while slots pull; on shutdown it reports draining, slots stop pulling, and in-flight
/// tasks get `config.drain` before they are handed back (nak'ed, so another worker takes them
/// at once).
pub async fn run<S: TaskHandler>(
    host: WorkerHost,
    bus: Bus,
    stage: Arc<S>,
    config: SlotConfig,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    debug_assert_eq!(host.stage, S::Task::STAGE, "a worker host runs the stage it was made for");
    // the lanes' consumers are created (or opened) on the broker: during a NATS outage or a
    // cluster without quorum that fails for a while, which is no reason for the worker to exit
    let lanes = loop {
        match bus.lanes(S::Task::STAGE).await {
            Ok(lanes) if config.lanes.is_empty() => break Arc::new(lanes),
            Ok(lanes) => break Arc::new(lanes.only(&config.lanes)),
            Err(e) => {
                warn!(error = %e, stage = S::Task::STAGE.as_str(), "opening the work lanes failed; retrying");
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(PULL_RETRY) => {}
                }
            }
        }
    };
    // `stop` ends pulling (shutdown or fatal); `abandon` ends in-flight work after the drain
    let stop = shutdown.child_token();
    let abandon = CancellationToken::new();
    let fatal: Arc<Mutex<Option<Fatal>>> = Default::default();
    let drain = {
        let (shutdown, abandon, host, drain) = (shutdown.clone(), abandon.clone(), host.clone(), config.drain);
        tokio::spawn(async move {
            shutdown.cancelled().await;
            host.readiness.set(false, serde_json::json!({ "worker": host.id, "state": "draining" }));
            tokio::time::sleep(drain).await;
            abandon.cancel();
        })
    };
    let priorities = lanes.priorities();
    let urgent_slots = if priorities.contains(&Priority::Critical) { config.urgent_slots } else { 0 };
    let lane_names: Vec<&str> = priorities.iter().map(|p| p.as_str()).collect();
    info!(
        worker = %host.id, stage = S::Task::STAGE.as_str(), slots = config.slots.max(1), lanes = %lane_names.join(","),
        urgent_slots, memory_budget = %crate::gib(config.memory.bytes()), "worker taking work"
    );
    let urgent = Arc::new(lanes.most_urgent());
    let mut slots = tokio::task::JoinSet::new();
    let pulls = std::iter::repeat_n(&lanes, config.slots.max(1)).chain(std::iter::repeat_n(&urgent, urgent_slots));
    for lanes in pulls {
        let slot = Slot {
            host: host.clone(),
            bus: bus.clone(),
            lanes: lanes.clone(),
            stage: stage.clone(),
            abandon: abandon.clone(),
            memory: config.memory.clone(),
            watchdog: config.watchdog,
        };
        let (stop, fatal) = (stop.clone(), fatal.clone());
        slots.spawn(async move {
            if let Err(e) = slot.pull_until(&stop).await {
                fatal.lock().expect("fatal lock").get_or_insert(e);
                stop.cancel();
            }
        });
    }
    while slots.join_next().await.is_some() {}
    drain.abort();
    if let Some(fatal) = fatal.lock().expect("fatal lock").take() {
        return Err(RunError::Fatal(fatal));
    }
    info!(worker = %host.id, "worker stopped");
    Ok(())
}

/// The span a task is handled under: one per task, named by its stage.
fn handle_span<T: PartitionTask>(task: &T, worker: &str) -> tracing::Span {
    let circuit_id = task.circuit().circuit_id();
    match T::STAGE {
        Stage::Synthesis => crate::partition_span!(
            "synth.handle", task, worker, otel.kind = "consumer", circuit_id = %circuit_id,
            backend = tracing::field::Empty, bytes = tracing::field::Empty
        ),
        Stage::Proving => crate::partition_span!(
            "gpu.handle", task, worker, otel.kind = "consumer", circuit_id = %circuit_id,
            backend = tracing::field::Empty, bytes = tracing::field::Empty
        ),
    }
}

struct Slot<S: TaskHandler> {
    host: WorkerHost,
    bus: Bus,
    lanes: Arc<Lanes>,
    stage: Arc<S>,
    abandon: CancellationToken,
    memory: MemoryBudget,
    watchdog: Option<Duration>,
}

impl<S: TaskHandler> Slot<S> {
    async fn pull_until(&self, stop: &CancellationToken) -> Result<(), Fatal> {
        loop {
            self.stage.before_pull(stop).await?;
            match self.lanes.next(stop).await {
                Ok(Some((_, msg))) => self.handle(msg).await?,
                Ok(None) => return Ok(()),
                Err(e) => {
                    warn!(error = %e, stage = S::Task::STAGE.as_str(), "pulling work failed; retrying");
                    tokio::select! {
                        _ = stop.cancelled() => return Ok(()),
                        _ = tokio::time::sleep(PULL_RETRY) => {}
                    }
                }
            }
        }
    }

    /// Handle one message; `Err` when the task outlived the watchdog (the worker must stop).
    async fn handle(&self, msg: Message) -> Result<(), Fatal> {
        let task: S::Task = match wire::decode(&msg.payload) {
            Ok(task) => task,
            Err(e) => {
                self.undecodable(&msg, e).await;
                return Ok(());
            }
        };
        let parent = extract_context(msg.headers.as_ref());
        let span = handle_span(&task, &self.host.id);
        span.set_parent(parent.clone());
        let _heartbeat = self.lanes.heartbeat(&msg);
        self.host.in_flight.inc();
        let delivery = msg.info().map(|i| i.delivered.max(1) as u64).unwrap_or(1);
        let watchdog = Watchdog::start(self.watchdog);
        let cx = TaskContext {
            host: self.host.clone(),
            bus: self.bus.clone(),
            parent,
            delivery,
            watchdog: watchdog.clone(),
        };
        let mut hung = None;
        let result = tokio::select! {
            r = self.process_patiently(&task, cx).instrument(span.clone()) => r,
            _ = self.abandon.cancelled() => Err(Failure::Transient("worker shutting down".into())),
            _ = watchdog.expired() => {
                let limit = self.watchdog.unwrap_or_default().as_secs();
                let reason = format!(
                    "{} of job {} partition {} worked longer than the {limit} s task watchdog on {} (waits for room or the broker not counted)",
                    S::Task::STAGE.as_str(), task.job_id(), task.partition(), self.host.id
                );
                tracing::error!(%reason, "task watchdog fired: handing the task back and stopping this worker for a restart");
                hung = Some(reason.clone());
                Err(Failure::Transient(reason))
            }
        };
        self.host.in_flight.dec();
        if let Err(failure) = &result {
            // the trace shows the failed step in red, with why (Jaeger, Tempo)
            let (class, reason) = match failure {
                Failure::Permanent(r) => ("permanent", r),
                Failure::Transient(r) => ("transient", r),
                Failure::Unavailable(r) => ("unavailable", r),
            };
            span.set_status(opentelemetry::trace::Status::error(format!("{class}: {reason}")));
        }
        let task_ref = TaskRef {
            job_id: task.job_id(),
            partition: task.partition(),
            stage: S::Task::STAGE,
            object: task.object(),
        };
        let outcome = snarkflow_bus::settle(&self.bus, &self.lanes, &msg, task_ref, result).instrument(span).await;
        self.host.outcomes.with_label_values(&[outcome]).inc();
        match hung {
            Some(reason) => Err(Fatal(reason)),
            None => Ok(()),
        }
    }

    /// [`Self::process_live`], again while the broker is unavailable, for up to
    /// [`BROKER_PATIENCE`]: the message stays held (heartbeats go on), so a leader election
    /// does not spend one of the task's deliveries, and the next try starts over from the
    /// ledger check (the partition may have been finished elsewhere meanwhile).
    async fn process_patiently(&self, task: &S::Task, cx: TaskContext) -> Result<Outcome, Failure> {
        let began = tokio::time::Instant::now();
        let (mut pause, longest) = BROKER_RETRY;
        loop {
            match self.process_live(task.clone(), cx.clone()).await {
                Err(Failure::Unavailable(reason)) if began.elapsed() + pause < BROKER_PATIENCE => {
                    warn!(
                        job_id = %task.job_id(), partition = task.partition(), %reason,
                        retry_in_ms = pause.as_millis() as u64, "the broker is unavailable; retrying the task in place"
                    );
                    let _waiting = cx.watchdog.waiting();
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(longest);
                }
                other => return other,
            }
        }
    }

    /// The stage's work, for a job that is still live and a partition that exists.
    async fn process_live(&self, task: S::Task, cx: TaskContext) -> Result<Outcome, Failure> {
        let status = self.bus.ledger().task_status(task.job_id(), task.partition(), S::Task::STAGE).await?;
        if status != TaskStatus::Pending {
            let why = match status {
                TaskStatus::JobOver => "job finished or unknown",
                _ => "partition already done at this stage (a redelivery)",
            };
            info!(job_id = %task.job_id(), partition = task.partition(), why, "dropping the task");
            if let Some(object) = task.object() {
                // the work is done: a failed delete is left to the ledger pass's garbage
                // collection (the job's objects go when it ends), never a reason to redo it
                if let Err(e) = self.bus.delete_object(object).await {
                    warn!(job_id = %task.job_id(), partition = task.partition(), error = %e, "deleting a redelivered task's partition failed; garbage collection takes it");
                }
            }
            return Ok("skipped");
        }
        if task.partition() >= task.partitions() {
            return Err(Failure::Permanent(format!(
                "partition {} of {} does not exist",
                task.partition(),
                task.partitions()
            )));
        }
        let waiting = cx.watchdog.waiting();
        let _admission = self.admit(&task).await?;
        drop(waiting);
        let worker = self.host.id.clone();
        let started = match S::Task::STAGE {
            Stage::Synthesis => JobEventBody::SynthesisStarted { worker },
            Stage::Proving => JobEventBody::ProvingStarted { worker },
        };
        let event = JobEvent::new(task.job_id(), task.partition(), now_ms(), started);
        self.bus.publish(wire::events_subject(task.job_id()), wire::encode(&event), None).await?;
        self.stage.process(task, cx).await
    }

    /// Wait until the task's estimated bytes fit in the memory budget. A task whose estimate is
    /// not known yet (its circuit's shape is recorded by the first partition to run) waits for
    /// the whole budget, re-estimating meanwhile: once the shape is known it waits for its
    /// estimate only, so partitions pulled before the shape was known do not run one by one.
    async fn admit(&self, task: &S::Task) -> Result<crate::budget::Admission, Failure> {
        loop {
            let admitted = match self.stage.estimated_bytes(task) {
                Some(needed) => self.memory.admit(needed).await,
                None => tokio::select! {
                    admitted = self.memory.admit(self.memory.bytes()) => admitted,
                    _ = tokio::time::sleep(REESTIMATE) => continue,
                },
            };
            return admitted.map_err(|e| Failure::Permanent(e.to_string()));
        }
    }

    /// A message that is not a task of this stage. If it names a job, the job fails with the
    /// reason (nothing else could ever finish that partition); either way it is terminated.
    async fn undecodable(&self, msg: &Message, error: wire::DecodeError) {
        let stage = S::Task::STAGE;
        let named = serde_json::from_slice::<serde_json::Value>(&msg.payload).ok().and_then(|v| {
            let job_id = v.get("job_id")?.as_str()?.to_owned();
            let partition = v.get("partition").and_then(|p| p.as_u64()).and_then(|p| u32::try_from(p).ok());
            Some((job_id, partition.unwrap_or(0)))
        });
        let Some((job_id, partition)) = named else {
            warn!(error = %error, subject = %msg.subject, "terminating an undecodable {} task that names no job", stage.as_str());
            let _ = msg.ack_with(AckKind::Term).await;
            self.host.outcomes.with_label_values(&["undecodable"]).inc();
            return;
        };
        let task_ref = TaskRef { job_id: &job_id, partition, stage, object: None };
        let reason = format!("undecodable {} task: {error}", stage.as_str());
        let outcome =
            snarkflow_bus::settle(&self.bus, &self.lanes, msg, task_ref, Err(Failure::Permanent(reason))).await;
        self.host.outcomes.with_label_values(&[outcome]).inc();
    }
}
