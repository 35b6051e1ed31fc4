//! The gpu-worker binary, built inside this package so tests can run it as a child process.

fn main() -> std::process::ExitCode {
    snarkflow_gpu_worker::main()
}
