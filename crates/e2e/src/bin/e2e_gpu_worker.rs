//! The gpu-worker binary, built inside this package so tests can run it as a child process.

use clap::Parser;
use snarkflow_gpu_worker::Config;

fn main() -> std::process::ExitCode {
    let config = Config::parse();
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("gpu-worker", &telemetry, |shutdown| snarkflow_gpu_worker::run(config, shutdown))
}
