//! The `cuzk.v1.ProvingEngine` server (what Curio calls) and client (what the gateways serve)
//! from the gateway's .proto.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../gateway/proto");
    let descriptors = protox::compile(["cuzk/v1/proving.proto"], ["../gateway/proto"])?;
    tonic_build::configure().build_server(true).build_client(true).compile_fds(descriptors)?;
    Ok(())
}
