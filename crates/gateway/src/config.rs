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
    /// Directory holding the Filecoin verifying keys (`v28-*.vk`), used to verify every
    /// Filecoin proof before its job is done; default `$FIL_PROOFS_PARAMETER_CACHE`, else
    /// `~/.cache/snarkflow/params`.
    #[arg(long, env = "SNARKFLOW_PARAMS_DIR")]
    pub params_dir: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
}

impl Config {
    /// `--params-dir`, else `$FIL_PROOFS_PARAMETER_CACHE`, else `~/.cache/snarkflow/params`.
    pub fn params_dir(&self) -> std::path::PathBuf {
        self.params_dir.clone().unwrap_or_else(default_params_dir)
    }
}

/// `$FIL_PROOFS_PARAMETER_CACHE` when set (operators already keep their parameters there),
/// else `~/.cache/snarkflow/params`.
pub fn default_params_dir() -> std::path::PathBuf {
    match std::env::var_os("FIL_PROOFS_PARAMETER_CACHE") {
        Some(dir) if !dir.is_empty() => dir.into(),
        _ => dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("snarkflow").join("params"),
    }
}
