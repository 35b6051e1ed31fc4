//! `gateway`: snarkflow's HTTP API (see the library docs and `docs/configuration.md`).

use clap::Parser;
use snarkflow_gateway::Config;

fn main() -> std::process::ExitCode {
    let config = Config::parse();
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("gateway", &telemetry, |shutdown| snarkflow_gateway::run(config, shutdown))
}
