//! `snarkflow`: the command line for snarkflow users and operators.
//!
//! Jobs go through the gateway's HTTP API (no NATS here); the parameter and benchmark commands
//! run the libraries in-process.
//!
//! Module map:
//! - `commands.rs`: the subcommands (clap) and their dispatch, one line each to the module
//!   that runs it: `submit`, `status`, `list`, `proof`, `cancel`, `waterfall`, `traces`,
//!   `bench`, `filecoin`, `params`, `doctor`, `admin`.
//! - `jobs.rs`: `status`, `list`, `proof` (with `--verify`, checked here), `cancel`.
//! - `submit.rs`: submit, and with `--wait` follow the job. `client.rs`: the HTTP client (API
//!   token, CA). `circuit_args.rs`: how a command names a circuit (a synthetic kind and its
//!   size, or a Filecoin kind and its input).
//! - `params.rs`: `params generate` (random test parameters) and `params check`;
//!   `params/fetch.rs`: `params fetch` (by CID through an IPFS gateway, from a directory or a
//!   mirror), both against the digests filecoin-proofs publishes.
//! - `doctor.rs`: `doctor`, what on a host would fail a job. `cluster.rs`: `cluster status`.
//! - `filecoin.rs`: `filecoin seal` and `filecoin fixture`, Filecoin inputs made without lotus.
//! - `admin.rs`: `admin token create / list / revoke`, in the gateway's tokens file.
//! - `waterfall.rs`: `waterfall` and `traces collect`.
//! - `bench/`: `bench hop` and `shape` (`hop.rs`), `hammer`, `stock-c2`, `resident` (feature
//!   `cuda-resident`), one module each; `bench/mod.rs` the subcommands and their dispatch.

mod admin;
mod bench;
mod circuit_args;
mod client;
mod cluster;
mod commands;
mod doctor;
mod filecoin;
mod jobs;
mod params;
mod submit;
mod waterfall;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = commands::Cli::parse();
    // before any thread exists: filecoin-proofs reads its parameter directory from the
    // environment, once
    if let Some(params) = cli.params_dir() {
        params.export_for_filecoin_proofs();
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("snarkflow: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
