//! `gpu-worker`: proves synthesized partitions pulled from NATS (see the library docs).

use clap::Parser;
use snarkflow_gpu_worker::Config;

fn main() -> std::process::ExitCode {
    let config = Config::parse();
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("gpu-worker", &telemetry, |shutdown| snarkflow_gpu_worker::run(config, shutdown))
}
