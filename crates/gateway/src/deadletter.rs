//! Dead letters: a work task that reached `max_deliver` without any worker settling it (each
//! worker holding it died: killed for memory at 32 GiB, a crashed host) would otherwise sit in
//! its queue while its job waits for ever. The server's advisory names the task; the gateway
//! reads it, fails its job saying so, and removes it from the queue.

use futures::StreamExt as _;
use snarkflow_bus::{Bus, Ledger};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::Metrics;

/// Handle dead letters until `shutdown`.
pub(crate) async fn run(bus: Bus, ledger: Ledger, metrics: Metrics, shutdown: CancellationToken) {
    let mut letters = match bus.dead_letters().await {
        Ok(letters) => letters,
        Err(e) => {
            warn!(error = %e, "cannot listen for dead letters; a task no worker survives ends at its job's deadline instead");
            return;
        }
    };
    loop {
        let letter = tokio::select! {
            _ = shutdown.cancelled() => return,
            letter = letters.next() => match letter {
                Some(letter) => letter,
                None => return,
            },
        };
        let payload = match bus.take_dead_letter(&letter).await {
            Ok(Some(payload)) => payload,
            Ok(None) => continue,
            Err(e) => {
                warn!(error = %e, ?letter, "reading a dead task failed; its job ends at its deadline");
                continue;
            }
        };
        let named = serde_json::from_slice::<serde_json::Value>(&payload).ok().and_then(|v| {
            let job = v.get("job_id")?.as_str()?.to_owned();
            Some((job, v.get("partition").and_then(|p| p.as_u64()).unwrap_or(0)))
        });
        let Some((job_id, partition)) = named else {
            warn!(?letter, "a dead task that names no job; removed");
            continue;
        };
        let reason = format!(
            "partition {partition} was handed to a worker {} times and no {} worker ever finished it \
             (each one stopped without reporting: killed, e.g. for memory, or crashed)",
            letter.deliveries,
            letter.stage.as_str()
        );
        match crate::events::fail_job(&bus, &ledger, &metrics, &job_id, &reason).await {
            Ok(true) => info!(job_id = %job_id, partition, stage = letter.stage.as_str(), "job failed: dead letter"),
            Ok(false) => {}
            Err(e) => {
                warn!(job_id = %job_id, error = format!("{e:#}"), "failing a job after a dead letter failed; its deadline ends it")
            }
        }
    }
}
