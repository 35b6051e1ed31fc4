//! `snarkflow`: the command line for snarkflow users and operators.

mod admin;
mod bench;
#[cfg(feature = "cuda-resident")]
mod bench_resident;
mod circuit_args;
mod client;
mod commands;
mod filecoin;
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
