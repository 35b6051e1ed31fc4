//! The synth-worker: the synthesis [`TaskHandler`](snarkflow_runtime::TaskHandler) on the worker runtime.
//! Per partition it builds the circuit, synthesizes it (by default the witness only, shipped
//! in the compact encoding), writes the payload to the object store and announces it on the
//! prove lane of the same priority.
//!
//! Pulling, heartbeats, the job-liveness check, settling and draining are the runtime's
//! (`snarkflow-runtime`); this crate is what synthesis adds to them.
//!
//! Module map:
//! - `synthesize.rs`: the stage, one partition from task to announced payload. The circuit comes
//!   from the circuits registry; the witness from the kind's native generator where it has one
//!   (PoRep, SnapDeals, PoSt; `--witness gadgets` for the gadgets everywhere), spot-checked
//!   against the gadgets every `--native-check-every`th time. By default only the witness is
//!   shipped, in the compact encoding (2 bits per bit-valued variable, digest-protected, naming
//!   its constraint shape's hash); `--wire-format raw` ships the full `SynthesizedPartition`
//!   (a, b, c, assignments, densities). Also the memory estimate and the shapes recorded ahead
//!   of time (`--preload-shapes`).
//! - `inputs.rs`: job inputs (C1 outputs, vanilla proofs) fetched once per job, digest checked,
//!   and kept in a small LRU for its partitions.
//! - `huge_pages.rs`: whether the witness buffers get transparent huge pages (reported at start
//!   and in readiness).
//! - `config.rs`: the flags.

mod config;
mod huge_pages;
mod inputs;
mod synthesize;

use std::sync::Arc;

pub use config::{Config, WitnessSource};
use snarkflow_runtime::{Bootstrap, Ready};
use snarkflow_wire::Stage;
use tokio_util::sync::CancellationToken;

/// Process entry point: parse flags and environment, start telemetry, run until SIGINT or
/// SIGTERM, drain, flush.
pub fn main() -> std::process::ExitCode {
    use clap::Parser as _;
    let config = Config::parse();
    let telemetry = config.worker.telemetry.clone();
    snarkflow_service::main("synth-worker", &telemetry, |shutdown| run(config, shutdown))
}

/// Run until `shutdown`; then stop pulling and give in-flight partitions `--drain-secs` to
/// finish.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let args = config.worker.clone();
    snarkflow_runtime::serve(Stage::Synthesis, args, shutdown, |boot| prepare(config, boot)).await
}

/// Connect, record the `--preload-shapes`, report ready.
async fn prepare(config: Config, boot: Bootstrap) -> anyhow::Result<Option<Ready<synthesize::Synthesis>>> {
    let host = &boot.host;
    let readiness = host.readiness.clone();
    let Some(bus) = boot.connect(move |why| readiness.set(false, serde_json::json!({ "nats": why }))).await? else {
        return Ok(None);
    };
    let witness = synthesize::WitnessPolicy { source: config.witness, check_every: config.native_check_every };
    // a witness buffer kept per slot: a partition writes over an earlier one's instead of
    // faulting in (and the kernel zeroing) 4 GB of fresh pages at 32 GiB
    snarkflow_synthesis::native::buffers::keep(config.concurrency);
    let stage = Arc::new(synthesize::Synthesis::new(host, config.wire_format, witness));
    if !config.preload_shapes.is_empty() {
        host.readiness.set(false, serde_json::json!({ "worker": host.id, "state": "recording shapes" }));
        let (preloading, ids) = (stage.clone(), config.preload_shapes.clone());
        tokio::task::spawn_blocking(move || preloading.preload_shapes(&ids)).await??;
    }
    let huge_pages = huge_pages::detect();
    if huge_pages.on {
        tracing::info!(huge_pages = %huge_pages.why, "witness buffers");
    } else {
        tracing::warn!(huge_pages = %huge_pages.why, "witness buffers page-fault 4 KiB at a time (about half of a large native witness's time)");
    }
    host.readiness.set(
        true,
        serde_json::json!({
            "worker": host.id,
            "concurrency": config.concurrency,
            "wire_format": config.wire_format.as_str(),
            "witness": witness.source.as_str(),
            "huge_pages": huge_pages.why,
        }),
    );
    Ok(Some(Ready { bus, handler: stage, slots: config.concurrency }))
}
