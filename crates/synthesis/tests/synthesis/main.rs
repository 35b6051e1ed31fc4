//! The synthesis library's integration tests, one test binary: the compact encoding, the
//! native SHA-256 witness against the gadgets, repeated synthesis.

mod compact;
mod native_sha256;
mod repeat;
