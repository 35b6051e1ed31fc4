//! `gpu-worker`: see the library docs and `docs/configuration.md`.

fn main() -> std::process::ExitCode {
    snarkflow_gpu_worker::main()
}
