//! The end-to-end suite, one test binary (one link instead of one per file): each module is one
//! concern, against a real nats-server and the real services. `cargo test -p snarkflow-e2e
//! --test e2e chaos::` runs one module. Tests that need process-wide state run it in a child
//! process (a failpoint: `device_errors.rs`; tracing: `otlp_export.rs`).

mod added_kind;
mod autoscale;
mod chaos;
mod curio;
mod curio_listener;
mod curio_proxy;
mod device_errors;
mod filecoin;
mod grpc_clients;
mod lifecycle;
mod otlp_export;
mod pipeline;
mod redelivery;
mod reliability;
mod security;
mod storage_limits;
