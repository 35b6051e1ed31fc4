//! The synth-worker: pulls one partition at a time per slot from the synth lanes (most urgent
//! first), builds its circuit, synthesizes it into a `SynthesizedPartition`, writes the encoded
//! partition to the object store and announces it on the prove lane of the same priority.
//!
//! Failure classes decide the ack: a bad task or a circuit that cannot synthesize is permanent
//! (`Term` plus a failed-job event); a NATS hiccup is transient (`Nak` with delay); a
//! cancelled or finished job is dropped (`Ack`).

mod config;
mod synthesize;

use std::sync::Arc;
use std::time::Duration;

pub use config::Config;
use snarkflow_bus::Bus;
use snarkflow_service::Readiness;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Process entry point: parse flags and environment, start telemetry, run until SIGINT or
/// SIGTERM, drain, flush.
pub fn main() -> std::process::ExitCode {
    use clap::Parser as _;
    let config = Config::parse();
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("synth-worker", &telemetry, |shutdown| run(config, shutdown))
}

/// Run until `shutdown`; then stop pulling and give in-flight partitions `drain_secs` to finish.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let worker_id = config.worker_id.clone().unwrap_or_else(|| config::default_worker_id("synth"));
    let bus = Bus::connect(config.nats.bus_config()).await?;
    let lanes = Arc::new(bus.lanes("synth").await?);
    let metrics = synthesize::Metrics::new();
    let readiness = Readiness::default();
    readiness.set(true, serde_json::json!({ "worker": worker_id, "concurrency": config.concurrency }));
    snarkflow_service::spawn_status(
        config.status_listen,
        readiness.clone(),
        metrics.registry.clone(),
        shutdown.clone(),
    )
    .await?;
    let worker = Arc::new(synthesize::Worker {
        inputs: Default::default(),
        bus,
        worker_id: worker_id.clone(),
        metrics,
        compact: config.wire_format == "compact",
        shape_hashes: Default::default(),
    });
    info!(worker = %worker_id, concurrency = config.concurrency, "synth-worker ready");
    // `abandon` stops in-flight work that outlived the drain deadline; its messages are
    // nak'ed so another worker takes them at once.
    let abandon = CancellationToken::new();
    let mut slots = JoinSet::new();
    for _ in 0..config.concurrency.max(1) {
        let (worker, lanes, shutdown, abandon) = (worker.clone(), lanes.clone(), shutdown.clone(), abandon.clone());
        slots.spawn(async move {
            loop {
                match lanes.next(&shutdown).await {
                    Ok(Some((_, msg))) => worker.handle(&lanes, msg, &abandon).await,
                    Ok(None) => break,
                    Err(e) => {
                        warn!(error = %e, "pulling synthesis work failed; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
    }
    shutdown.cancelled().await;
    readiness.set(false, serde_json::json!({ "worker": worker_id, "draining": true }));
    let drained = tokio::time::timeout(Duration::from_secs(config.drain_secs), async {
        while slots.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!("drain deadline passed; handing in-flight partitions back");
        abandon.cancel();
        while slots.join_next().await.is_some() {}
    }
    info!(worker = %worker_id, "synth-worker stopped");
    Ok(())
}
