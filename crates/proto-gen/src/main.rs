//! Writes `crates/proto/src/generated/` from `crates/proto/proto/` (`just proto`: `cargo run
//! -p snarkflow-proto-gen`), or with `--check` compares instead and fails, naming the file,
//! when the checked-in code is not what the `.proto` generates.

use std::path::Path;
use std::process::ExitCode;

/// The generated files: the Rust module and the encoded descriptors.
const RUST: &str = "cuzk.v1.rs";
const DESCRIPTORS: &str = "cuzk.v1.descriptor.bin";

fn main() -> ExitCode {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => {
            eprintln!("generate-proto: unknown argument {other:?} (only --check)");
            return ExitCode::from(2);
        }
    };
    match run(check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("generate-proto: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Generates into a scratch directory, then writes or compares; false when a check failed.
fn run(check: bool) -> Result<bool, Box<dyn std::error::Error>> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().ok_or("crates/proto-gen has no parent directory")?;
    let crate_dir = crates.join("proto");
    let descriptors = protox::compile(["cuzk/v1/proving.proto"], [crate_dir.join("proto")])?;
    let scratch = std::env::temp_dir().join(format!("snarkflow-proto-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    tonic_build::configure()
        .build_server(true)
        .build_client(true)
        .out_dir(&scratch)
        .emit_rerun_if_changed(false)
        .compile_fds(descriptors.clone())?;
    let files =
        [(RUST, std::fs::read(scratch.join(RUST))?), (DESCRIPTORS, prost::Message::encode_to_vec(&descriptors))];
    std::fs::remove_dir_all(&scratch)?;
    let generated = crate_dir.join("src/generated");
    let mut current = true;
    for (name, bytes) in files {
        let path = generated.join(name);
        if !check {
            std::fs::write(&path, bytes)?;
            println!("wrote {}", path.display());
        } else if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            eprintln!("{} is not what crates/proto/proto/ generates: run `just proto` and commit it", path.display());
            current = false;
        }
    }
    Ok(current)
}
