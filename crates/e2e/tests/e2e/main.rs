//! The end-to-end suite, one test binary (one link instead of one per file): each module is one
//! concern, against a real nats-server and the real services. `cargo test -p snarkflow-e2e
//! --test e2e chaos::` runs one module. Tests that arm process-wide failpoints live in their own
//! binaries (`tests/device_errors.rs`), so that no other test's prover can trip them.

mod chaos;
mod curio;
mod filecoin;
mod lifecycle;
mod otlp_export;
mod pipeline;
mod redelivery;
mod reliability;
mod security;
mod trace;
