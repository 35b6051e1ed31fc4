//! cuzk's gRPC interface, `cuzk.v1.ProvingEngine` (`proto/cuzk/v1/proving.proto`, wire-compatible
//! with Curio's cuzk): the messages, the server the gateway serves, the client the Curio proxy
//! and the tests call with, and the encoded descriptors gRPC server reflection serves.
//!
//! The code in `src/generated/` is what tonic-build writes for the `.proto`, checked in so that
//! no build needs a protobuf compiler or the generator (protox and tonic-build took ~50 CPU-s
//! of every fresh build, three times over). After changing the `.proto`, `just proto`
//! regenerates it; CI runs `generate-proto --check` (crates/proto-gen), which fails while the
//! two differ.

/// The messages and the `proving_engine_server` / `proving_engine_client` modules.
#[allow(unreachable_pub, clippy::all)]
#[rustfmt::skip]
pub mod cuzk_v1 {
    include!("generated/cuzk.v1.rs");
}

/// The interface's encoded `FileDescriptorSet`, for gRPC server reflection (so
/// `grpcurl -plaintext -unix .state/cuzk.sock list` works, as Curio's docs ask operators to check).
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!("generated/cuzk.v1.descriptor.bin");
