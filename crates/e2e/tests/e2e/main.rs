//! The end-to-end suite, one test binary (one link instead of one per file): each module is one
//! concern, against a real nats-server and the real services. `cargo test -p snarkflow-e2e
//! --test e2e chaos::` runs one module. Tests that set process-wide state live in their own
//! binaries: a failpoint (`tests/device_errors.rs`, so that no other test's prover trips it) and
//! the global tracing subscriber (`tests/trace.rs`).

mod added_kind;
mod autoscale;
mod chaos;
mod curio;
mod filecoin;
mod lifecycle;
mod otlp_export;
mod pipeline;
mod redelivery;
mod reliability;
mod security;
