//! `snarkflow`: the command line for snarkflow users and operators.

mod bench;
mod client;
mod commands;
mod waterfall;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = commands::Cli::parse();
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
