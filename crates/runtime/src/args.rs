//! The flags both workers take ([`WorkerArgs`]): who the worker is, where it reports, how it
//! stops, its memory budget, and `--lanes`, the priority lanes it pulls, so an operator can
//! run a small always-on pool for PoSt (WinningPoSt's default lane is `critical`,
//! WindowPoSt's `high`) beside an autoscaled sealing pool (`normal,low`: PoRep and SnapDeals).

use std::net::SocketAddr;
use std::time::Duration;

use snarkflow_service::{NatsArgs, TelemetryArgs};
use snarkflow_wire::{Priority, Stage};

use crate::{MemoryBudgetArgs, SlotConfig};

/// The flags both workers take; each worker flattens it into its own `Config`.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// Name of this worker in events, spans and logs (default: `<stage>-<host>-<pid>`).
    #[arg(long, env = "SNARKFLOW_WORKER_ID")]
    pub worker_id: Option<String>,
    /// More slots that take only critical-priority partitions (WinningPoSt by default), so one
    /// never waits behind long PoRep partitions. 0 = none. They exist only when the worker
    /// pulls the critical lane.
    #[arg(long, env = "SNARKFLOW_URGENT_SLOTS", default_value_t = 1)]
    pub urgent_slots: usize,
    #[command(flatten)]
    pub lanes: LaneArgs,
    #[command(flatten)]
    pub memory: MemoryBudgetArgs,
    /// Address for /healthz, /readyz and /metrics; unset serves none.
    #[arg(long, env = "SNARKFLOW_STATUS_LISTEN")]
    pub status_listen: Option<SocketAddr>,
    /// Seconds in-flight partitions get to finish on shutdown before being handed back
    /// (default: 30 for a synth-worker, 60 for a gpu-worker).
    #[arg(long, env = "SNARKFLOW_DRAIN_SECS")]
    pub drain_secs: Option<u64>,
    /// Longest one partition may take (0: no limit). Past it the partition is handed to another
    /// worker and this worker exits non-zero, so its supervisor restarts it (work hung on a
    /// blocking thread, a wedged GPU, cannot be interrupted). Raise it for 32 GiB on a CPU.
    #[arg(long, env = "SNARKFLOW_TASK_TIMEOUT_SECS", default_value_t = 3600)]
    pub task_timeout_secs: u64,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
}

impl WorkerArgs {
    /// This worker's id: `--worker-id`, else one made of its stage's role, host and pid.
    pub fn id(&self, stage: Stage) -> String {
        self.worker_id.clone().unwrap_or_else(|| crate::default_worker_id(role(stage)))
    }

    /// The slot loop's configuration: `slots` general slots plus these flags.
    pub fn slot_config(&self, stage: Stage, slots: usize) -> SlotConfig {
        let drain = self.drain_secs.unwrap_or(match stage {
            Stage::Synthesis => 30,
            Stage::Proving => 60,
        });
        SlotConfig {
            slots,
            urgent_slots: self.urgent_slots,
            lanes: self.lanes.lanes.clone(),
            drain: Duration::from_secs(drain),
            memory: self.memory.budget(),
            watchdog: (self.task_timeout_secs > 0).then(|| Duration::from_secs(self.task_timeout_secs)),
        }
    }
}

/// The short name of a stage's workers: in default ids and NATS credentials.
pub(crate) fn role(stage: Stage) -> &'static str {
    match stage {
        Stage::Synthesis => "synth",
        Stage::Proving => "gpu",
    }
}

/// `--lanes`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LaneArgs {
    /// Pull only these lanes (comma-separated: critical, high, normal, low). Default: all.
    #[arg(long, env = "SNARKFLOW_LANES", value_delimiter = ',', value_parser = parse_lane)]
    pub lanes: Vec<Priority>,
}

fn parse_lane(s: &str) -> Result<Priority, NotALane> {
    Priority::parse(s.trim()).ok_or_else(|| NotALane(s.to_owned()))
}

/// A `--lanes` entry that names no lane.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a lane: critical, high, normal or low")]
pub(crate) struct NotALane(String);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        lanes: LaneArgs,
    }

    #[derive(Parser)]
    struct Worker {
        #[command(flatten)]
        args: WorkerArgs,
    }

    #[test]
    fn each_stage_gets_its_own_drain_unless_one_is_given() {
        let args = Worker::try_parse_from(["w"]).unwrap().args;
        assert_eq!(args.slot_config(Stage::Synthesis, 2).drain, Duration::from_secs(30));
        assert_eq!(args.slot_config(Stage::Proving, 2).drain, Duration::from_secs(60));
        assert_eq!(args.slot_config(Stage::Proving, 2).slots, 2);
        assert_eq!(args.slot_config(Stage::Proving, 2).watchdog, Some(Duration::from_secs(3600)));
        let args = Worker::try_parse_from(["w", "--drain-secs", "5", "--task-timeout-secs", "0"]).unwrap().args;
        assert_eq!(args.slot_config(Stage::Proving, 1).drain, Duration::from_secs(5));
        assert_eq!(args.slot_config(Stage::Proving, 1).watchdog, None);
    }

    #[test]
    fn the_flags_are_well_formed() {
        use clap::CommandFactory as _;
        Worker::command().debug_assert();
    }

    #[test]
    fn lanes_parse_as_a_list_and_unknown_names_are_refused() {
        let cli = Cli::try_parse_from(["w", "--lanes", "critical,high"]).unwrap();
        assert_eq!(cli.lanes.lanes, vec![Priority::Critical, Priority::High]);
        assert!(Cli::try_parse_from(["w"]).unwrap().lanes.lanes.is_empty(), "all by default");
        let err = Cli::try_parse_from(["w", "--lanes", "urgent"]).err().unwrap().to_string();
        assert!(err.contains("not a lane"), "{err}");
    }
}
