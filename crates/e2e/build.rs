//! Generates a cuzk.v1.ProvingEngine client from the gateway's .proto, separately from the
//! server's generated code, so the tests speak the interface as an outside client would.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../gateway/proto");
    let descriptors = protox::compile(["cuzk/v1/proving.proto"], ["../gateway/proto"])?;
    tonic_build::configure().build_server(false).build_client(true).compile_fds(descriptors)?;
    Ok(())
}
