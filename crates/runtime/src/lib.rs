//! The worker runtime: the one loop both snarkflow workers run.
//!
//! A worker is a [`TaskHandler`] (what to do with one task) plugged into [`run`], which owns
//! everything else, once: `1 + n` slots pulling the stage's priority lanes (most urgent first),
//! decoding (an undecodable task fails its job when it names one, and is terminated), the
//! handling span joined to the job's trace, in-progress heartbeats, the check that the job is
//! still live, the partition's "started" event, settling the message by the failure's class
//! (`snarkflow_bus::settle`), outcome metrics, and the ordered drain on shutdown (stop
//! pulling, give in-flight work `drain` to finish, then hand it back).
//!
//! [`WorkerHost`] is what a worker process has before its stage exists: its id, the status
//! endpoint (`/healthz`, `/readyz`, `/metrics`) and the metrics every worker exports.
//!
//! This crate knows nothing of circuits, provers or devices.
//!
//! Module map:
//! - `slots.rs`: [`run`], the slot loop: pull, decode, span, heartbeat, liveness check,
//!   "started" event, handle, settle, until shutdown; then drain. [`SlotConfig`]: `1 + n`
//!   slots over the worker's lanes, plus urgent slots that pull only the most urgent lane
//!   (when the worker pulls the critical one).
//! - `handler.rs`: [`TaskHandler`], what a worker does with one task (its memory estimate,
//!   a check before each pull, the handling itself); [`fetch_object`] (digest checked).
//! - `budget.rs`: the memory budget (`--memory-budget`): a partition starts only when its
//!   estimate fits what is left; one larger than the whole budget fails its job.
//! - `watchdog.rs`: a task's watchdog clock, counting the time it works, not the time it waits
//!   for memory, room in the store or the broker.
//! - `args.rs`: [`WorkerArgs`], the flags both workers take (`--lanes` among them).
//! - `serve.rs`: [`serve`], the one bootstrap: host, the worker's own preparation, the slot
//!   loop.
//! - `host.rs`: [`WorkerHost`].

mod args;
mod budget;
mod handler;
mod host;
mod serve;
mod slots;
mod watchdog;

pub use args::{default_status_listen, BadStatusListen, LaneArgs, StatusListen, WorkerArgs};
pub use budget::{gib, Admission, MemoryBudget, MemoryBudgetArgs, TooLarge};
pub use handler::{fetch_object, Fatal, TaskContext, TaskHandler};
pub use host::{default_worker_id, WorkerHost};
pub use serve::{serve, Bootstrap, Ready};
pub use slots::{run, RunError, SlotConfig};
pub use snarkflow_bus::{Failure, Outcome};
pub use watchdog::{Waiting, Watchdog};

#[doc(hidden)]
pub mod __private {
    pub use snarkflow_telemetry::host_name;
    pub use snarkflow_wire::PartitionTask;
    pub use tracing::info_span;
}

/// A span for one step of one partition, carrying the attributes every span of a partition
/// has (job, kind, partition, worker, host), plus any extra fields given.
#[macro_export]
macro_rules! partition_span {
    ($name:literal, $task:expr, $worker:expr $(, $($extra:tt)*)?) => {{
        #[allow(unused_imports)]
        use $crate::__private::PartitionTask as _;
        $crate::__private::info_span!(
            $name,
            job_id = %$task.job_id(),
            job.kind = %$task.circuit().kind(),
            partition = i64::from($task.partition()),
            partitions = i64::from($task.partitions()),
            worker = %$worker,
            host = %$crate::__private::host_name(),
            $($($extra)*)?
        )
    }};
}
