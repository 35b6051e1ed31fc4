//! Gateway configuration: every flag also reads an environment variable.

use std::net::SocketAddr;

use clap::Parser;
use snarkflow_service::{NatsArgs, TelemetryArgs};

/// Default listen address: loopback, so a fresh install exposes nothing.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default request body limit: a 32 GiB C1 output is ~70 MB as base64 (issue 3), with room.
pub const DEFAULT_MAX_BODY_BYTES: usize = 96 * 1024 * 1024;

/// snarkflow gateway: HTTP API for submitting and following proving jobs.
#[derive(Debug, Clone, Parser)]
#[command(name = "gateway", version)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "SNARKFLOW_GATEWAY_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Largest accepted request body in bytes; larger bodies get 413.
    #[arg(long, env = "SNARKFLOW_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
}
