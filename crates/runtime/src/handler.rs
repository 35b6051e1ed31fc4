//! What a worker plugs into the runtime: a [`TaskHandler`].

use std::future::Future;

use snarkflow_bus::{Bus, BusError, Failure, Fetched, Outcome};
use snarkflow_wire::{PartitionTask, Versioned};
use tokio_util::sync::CancellationToken;

use crate::WorkerHost;

/// The worker cannot go on (e.g. its device stays broken): every slot stops and [`crate::run`]
/// returns this, so the process exits and its supervisor restarts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal(pub String);

/// One kind of work: what a worker does with one task of a live job.
///
/// The runtime has already decoded the task, opened its handling span (`synth.handle` /
/// `gpu.handle`, joined to the job's trace; a stage records `backend` and `bytes` on it), started
/// heartbeats, checked that the job is live and that the partition exists, and announced that
/// work started; it settles the message from the result (`Ok` → ack; a transient failure →
/// retry later; a permanent one → the job fails).
pub trait TaskHandler: Send + Sync + 'static {
    type Task: PartitionTask + Versioned + serde::de::DeserializeOwned + Clone + Send + Sync + 'static;

    /// Do the work. Runs inside `TaskHandler::span`; long CPU work belongs on blocking threads so
    /// heartbeats keep flowing.
    fn process(&self, task: Self::Task, cx: TaskContext) -> impl Future<Output = Result<Outcome, Failure>> + Send;

    /// Bytes handling `task` will hold at its peak beyond what the worker keeps resident
    /// (parameters, shapes), for admission under the memory budget; `None` when not yet known
    /// (a circuit never seen): the task is then admitted alone, taking the whole budget.
    /// Called after the job is known to be live; an estimate over the whole budget fails the
    /// task for good.
    fn estimated_bytes(&self, task: &Self::Task) -> Option<u64> {
        let _ = task;
        Some(0)
    }

    /// Called by each slot before it pulls: may wait (for a device probe, say), or stop the
    /// worker for good. `stop` is cancelled on shutdown.
    fn before_pull(&self, stop: &CancellationToken) -> impl Future<Output = Result<(), Fatal>> + Send {
        let _ = stop;
        async { Ok(()) }
    }
}

/// What a stage gets with each task.
#[derive(Clone)]
pub struct TaskContext {
    pub host: WorkerHost,
    pub bus: Bus,
    /// The trace context the task's message carried (the producer's span).
    pub parent: opentelemetry::Context,
    /// Which delivery of the task this is: 1 the first, 2 the first redelivery, ….
    pub delivery: u64,
    /// The task's watchdog: a stage pauses it while it waits for room (`watchdog.waiting()`).
    pub watchdog: crate::Watchdog,
}

/// Fetch an object a task points at and check its digest, classifying failures: a missing or
/// corrupt object is permanent (waiting cannot repair it); a broker error is transient.
pub async fn fetch_object(bus: &Bus, object: &str, sha256_hex: &str) -> Result<Fetched, Failure> {
    bus.get_object(object, sha256_hex).await.map_err(|e: BusError| Failure::from(e))
}
