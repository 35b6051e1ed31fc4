//! Generates the `cuzk.v1.ProvingEngine` server from proto/cuzk/v1/proving.proto (protox:
//! a protobuf compiler in Rust, so building needs no protoc), and its encoded descriptors for
//! server reflection.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(["cuzk/v1/proving.proto"], ["proto"])?;
    // the descriptors again, encoded, for gRPC server reflection (grpcurl)
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("cuzk_descriptor.bin"), prost::Message::encode_to_vec(&descriptors))?;
    tonic_build::configure().build_client(false).build_server(true).compile_fds(descriptors)?;
    Ok(())
}
