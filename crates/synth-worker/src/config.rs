//! synth-worker configuration.

use std::net::SocketAddr;

use clap::Parser;
use snarkflow_runtime::MemoryBudgetArgs;
use snarkflow_service::{NatsArgs, TelemetryArgs};
use snarkflow_wire::PartitionEncoding;

/// snarkflow synth-worker: builds and synthesizes partition circuits.
#[derive(Debug, Clone, Parser)]
#[command(name = "synth-worker", version)]
pub struct Config {
    /// Name of this worker in events, spans and logs (default: synth-host-pid).
    #[arg(long, env = "SNARKFLOW_WORKER_ID")]
    pub worker_id: Option<String>,
    /// Partitions synthesized at once. Synthesis of one circuit is single-threaded, so one per
    /// core you give this worker is the usual choice.
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
    #[command(flatten)]
    pub memory: MemoryBudgetArgs,
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
