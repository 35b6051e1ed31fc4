//! `synth-worker`: see the library docs and `docs/configuration.md`.

fn main() -> std::process::ExitCode {
    snarkflow_synth_worker::main()
}
