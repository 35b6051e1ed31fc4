//! Generates the `cuzk.v1.ProvingEngine` server from proto/cuzk/v1/proving.proto (protox:
//! a protobuf compiler in Rust, so building needs no protoc).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(["cuzk/v1/proving.proto"], ["proto"])?;
    tonic_build::configure().build_client(false).build_server(true).compile_fds(descriptors)?;
    Ok(())
}
