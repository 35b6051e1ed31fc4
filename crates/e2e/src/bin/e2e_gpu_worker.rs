//! The gpu-worker binary, built inside this package so tests can run it as a child process,
//! with the prover's failpoints compiled in: `FAILPOINTS=prover-device-error=1*off->1*return` makes
//! its second proof (the first after its device probe's) fail as a broken device would (crates/e2e/tests/e2e/device_errors.rs).

fn main() -> std::process::ExitCode {
    let _failpoints = fail::FailScenario::setup();
    snarkflow_gpu_worker::main()
}
