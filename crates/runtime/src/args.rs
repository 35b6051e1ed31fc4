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
    /// Address for /healthz, /readyz and /metrics, or `off`. Default: 0.0.0.0:9101 for a
    /// synth-worker, 0.0.0.0:9102 for a gpu-worker (0.0.0.0:(9200 + N) with `--gpu N`, so
    /// the workers of one host's GPUs do not collide).
    #[arg(long, env = "SNARKFLOW_STATUS_LISTEN", overrides_with = "status_listen")]
    pub status_listen: Option<StatusListen>,
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

/// `--status-listen`: where a worker serves its status endpoint, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusListen {
    Off,
    At(SocketAddr),
}

impl std::str::FromStr for StatusListen {
    type Err = BadStatusListen;

    fn from_str(s: &str) -> Result<Self, BadStatusListen> {
        match s {
            "off" | "none" => Ok(StatusListen::Off),
            _ => s.parse().map(StatusListen::At).map_err(|_| BadStatusListen(s.to_owned())),
        }
    }
}

/// A `--status-listen` that is neither an address nor `off`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is neither an address such as 0.0.0.0:9101 nor `off`")]
pub struct BadStatusListen(String);

/// Where a worker of `stage` serves its status endpoint unless told: every worker is scraped
/// without being configured for it.
pub fn default_status_listen(stage: Stage) -> SocketAddr {
    let port = match stage {
        Stage::Synthesis => 9101,
        Stage::Proving => 9102,
    };
    SocketAddr::from(([0, 0, 0, 0], port))
}

impl WorkerArgs {
    /// Where this worker serves `/healthz`, `/readyz` and `/metrics` (`None`: `off`).
    pub fn status_addr(&self, stage: Stage) -> Option<SocketAddr> {
        match self.status_listen {
            Some(StatusListen::Off) => None,
            Some(StatusListen::At(addr)) => Some(addr),
            None => Some(default_status_listen(stage)),
        }
    }

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
    fn every_worker_serves_its_status_unless_told_off_and_the_last_flag_wins() {
        let args = Worker::try_parse_from(["w"]).unwrap().args;
        assert_eq!(args.status_addr(Stage::Synthesis), Some("0.0.0.0:9101".parse().unwrap()));
        assert_eq!(args.status_addr(Stage::Proving), Some("0.0.0.0:9102".parse().unwrap()));
        let args = Worker::try_parse_from(["w", "--status-listen", "off"]).unwrap().args;
        assert_eq!(args.status_addr(Stage::Proving), None);
        let args =
            Worker::try_parse_from(["w", "--status-listen", "off", "--status-listen", "127.0.0.1:1"]).unwrap().args;
        assert_eq!(args.status_addr(Stage::Proving), Some("127.0.0.1:1".parse().unwrap()));
        let err = Worker::try_parse_from(["w", "--status-listen", "9101"]).err().unwrap().to_string();
        assert!(err.contains("neither an address"), "{err}");
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
