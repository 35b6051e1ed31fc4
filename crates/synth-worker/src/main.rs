//! `synth-worker`: synthesizes partitions pulled from NATS (see the library docs).

use clap::Parser;
use snarkflow_synth_worker::Config;

fn main() -> std::process::ExitCode {
    let config = Config::parse();
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("synth-worker", &telemetry, |shutdown| snarkflow_synth_worker::run(config, shutdown))
}
