//! Shared process plumbing for the snarkflow binaries (gateway, synth-worker, gpu-worker):
//! the flags every service takes ([`NatsArgs`], [`TelemetryArgs`]), [`main`] (runtime,
//! telemetry, signals, ordered shutdown, flush), and the workers' status endpoint
//! ([`serve_status`]: `/healthz`, `/readyz`, `/metrics`).
//!
//! Module map:
//! - `args.rs`: the flags every service flattens into its own `Config`: [`NatsArgs`] (the URL,
//!   credentials and TLS, stream limits), [`TelemetryArgs`], [`ParamsDir`].
//! - `status.rs`: the workers' status endpoint and [`Readiness`].
//! - [`systemd`]: systemd's readiness protocol (`READY=1` / `STOPPING=1` to `$NOTIFY_SOCKET`).
//! - [`tokens`]: the API tokens file, shared by the gateway and `snarkflow admin`.

mod args;
mod status;
pub mod systemd;
pub mod tokens;
mod unix;

use std::future::Future;
use std::process::ExitCode;

pub use args::{parse_bytes, BadByteCount, NatsArgs, ParamsDir, TelemetryArgs, FILECOIN_PROOFS_PARAMS_DIR};
pub use status::{serve_status, spawn_status, Readiness};
use tokio_util::sync::CancellationToken;
pub use unix::{bind_socket, parse_mode, BadListen, Listen};

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// Run a service: start a tokio runtime and telemetry, call `run(shutdown)` with a token that
/// SIGINT/SIGTERM cancel, then flush telemetry. Exit code 1 on error.
pub fn main<F, Fut>(service: &str, telemetry: &TelemetryArgs, run: F) -> ExitCode
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{service}: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        let guard = match snarkflow_telemetry::init(&telemetry.to_config(service)) {
            Ok(guard) => guard,
            Err(e) => {
                eprintln!("{service}: {e:#}");
                return ExitCode::FAILURE;
            }
        };
        let shutdown = CancellationToken::new();
        let on_signal = shutdown.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            tracing::info!("shutdown requested; draining");
            systemd::notify("STOPPING=1");
            on_signal.cancel();
        });
        let result = run(shutdown).await;
        if let Err(e) = &result {
            tracing::error!(error = format!("{e:#}"), "{service} failed");
        }
        guard.shutdown();
        if result.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    });
    // a blocking thread still running (a hung proof the watchdog gave up on) must not keep
    // the process alive: its supervisor is waiting to restart it
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    code
}
