//! synth-worker configuration.

use std::net::SocketAddr;

use clap::Parser;
use snarkflow_runtime::{LaneArgs, MemoryBudgetArgs};
use snarkflow_service::{NatsArgs, TelemetryArgs};
use snarkflow_wire::PartitionEncoding;

/// Where witnesses come from (`--witness`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WitnessSource {
    /// The native generator where the kind has one, the gadgets elsewhere.
    Native,
    /// bellperson's gadgets for every kind.
    Gadgets,
}

impl WitnessSource {
    pub fn as_str(self) -> &'static str {
        match self {
            WitnessSource::Native => "native",
            WitnessSource::Gadgets => "gadgets",
        }
    }
}

/// snarkflow synth-worker: builds and synthesizes partition circuits.
#[derive(Debug, Clone, Parser)]
#[command(name = "synth-worker", version)]
pub struct Config {
    /// Name of this worker in events, spans and logs (default: synth-host-pid).
    #[arg(long, env = "SNARKFLOW_WORKER_ID")]
    pub worker_id: Option<String>,
    /// Partitions synthesized at once. A native witness (PoRep, SnapDeals, PoSt) spreads over
    /// all cores (its challenges in parallel), so a few slots keep a host busy; gadget synthesis
    /// (`--witness gadgets`, the test kinds) is single-threaded, one slot per core you give
    /// this worker.
    #[arg(long, env = "SNARKFLOW_SYNTH_CONCURRENCY", default_value_t = 1)]
    pub concurrency: usize,
    /// More slots that take only critical-priority partitions (WinningPoSt by default), so one
    /// never waits behind `--concurrency` long PoRep partitions. 0 = none.
    #[arg(long, env = "SNARKFLOW_URGENT_SLOTS", default_value_t = 1)]
    pub urgent_slots: usize,
    /// How partitions travel to the provers: `compact` (the witness only; provers rebuild
    /// a, b, c from the circuit's shape) or `raw` (the full synthesized partition, ~4× the
    /// witness in field elements alone).
    #[arg(long, env = "SNARKFLOW_WIRE_FORMAT", default_value = "compact")]
    pub wire_format: PartitionEncoding,
    /// Where a partition's witness comes from (compact wire format): `native` computes it
    /// directly for the kinds that have a native generator (PoRep, SnapDeals, WindowPoSt,
    /// WinningPoSt) and uses the gadgets for the others (the synthetic test kinds); `gadgets` runs bellperson's gadgets for every kind (the
    /// reference path).
    #[arg(long, env = "SNARKFLOW_WITNESS", value_enum, default_value = "native")]
    pub witness: WitnessSource,
    /// Also compute every Nth native witness with the gadgets and compare the two (0: never;
    /// 1: every partition, at about twice the witness-only cost). A difference fails the
    /// partition with the first differing variable, never ships either witness.
    #[arg(long, env = "SNARKFLOW_NATIVE_CHECK_EVERY", default_value_t = 0)]
    pub native_check_every: u64,
    #[command(flatten)]
    pub memory: MemoryBudgetArgs,
    #[command(flatten)]
    pub lanes: LaneArgs,
    /// Record these circuits' constraint shapes at start, before taking work (comma-separated
    /// circuit ids: `winning-post-32GiB,window-post-32GiB`), so the first job of each does not
    /// wait for it (a 32 GiB WinningPoSt's shape is seconds; PoRep's minutes).
    #[arg(long, env = "SNARKFLOW_PRELOAD_SHAPES", value_delimiter = ',')]
    pub preload_shapes: Vec<String>,
    /// Address for /healthz, /readyz and /metrics; unset serves none.
    #[arg(long, env = "SNARKFLOW_STATUS_LISTEN")]
    pub status_listen: Option<SocketAddr>,
    /// Seconds in-flight partitions get to finish on shutdown before being handed back.
    #[arg(long, env = "SNARKFLOW_DRAIN_SECS", default_value_t = 30)]
    pub drain_secs: u64,
    /// Longest one partition's synthesis may take (0: no limit). Past it the partition is handed
    /// to another worker and this worker exits non-zero, so its supervisor restarts it (work
    /// hung on a blocking thread cannot be interrupted). Raise it for 32 GiB on a CPU prover.
    #[arg(long, env = "SNARKFLOW_TASK_TIMEOUT_SECS", default_value_t = 3600)]
    pub task_timeout_secs: u64,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    #[test]
    fn the_flags_are_well_formed() {
        // clap checks its definitions only in debug builds, at parse time
        super::Config::command().debug_assert();
    }
}
