//! Dead letters: a work task that reached `max_deliver` without any worker settling it (each
//! worker holding it died: killed for memory at 32 GiB, a crashed host) would otherwise sit in
//! its queue while its job waits for its deadline. The server's advisory (kept in a stream, so
//! one sent while no gateway ran is still there) names the task; the gateway reads it, fails
//! its job saying so, removes it from the queue, and only then acks the advisory.

use std::time::Duration;

use snarkflow_bus::{AckKind, Bus, DeadLetter, Ledger, DEAD_LETTER_RETRY};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::Metrics;

/// Handle dead letters until `shutdown`, starting over after an error.
pub(crate) async fn run(bus: Bus, ledger: Ledger, metrics: Metrics, shutdown: CancellationToken) {
    loop {
        if let Err(e) = consume(&bus, &ledger, &metrics, &shutdown).await {
            warn!(error = %e, "the dead-letter loop stopped; starting it again");
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

async fn consume(bus: &Bus, ledger: &Ledger, metrics: &Metrics, shutdown: &CancellationToken) -> anyhow::Result<()> {
    let mut messages = bus.dead_letters().await?.messages().await?;
    loop {
        let Some(msg) = crate::consume::next_message(&mut messages, shutdown, "dead-letter").await? else {
            return Ok(());
        };
        let Some(letter) = DeadLetter::from_advisory(&msg.payload) else {
            let _ = msg.ack_with(AckKind::Term).await;
            continue;
        };
        match handle(bus, ledger, metrics, &letter).await {
            Ok(()) => {
                let _ = msg.ack().await;
            }
            Err(e) => {
                warn!(error = format!("{e:#}"), ?letter, "handling a dead letter failed; trying again");
                let _ = msg.ack_with(AckKind::Nak(Some(DEAD_LETTER_RETRY))).await;
            }
        }
    }
}

/// Fail the dead task's job, then remove the task from its queue (in that order: an error
/// between the two leaves the advisory to be handled again).
async fn handle(bus: &Bus, ledger: &Ledger, metrics: &Metrics, letter: &DeadLetter) -> anyhow::Result<()> {
    let Some(payload) = bus.dead_task(letter).await? else {
        return Ok(()); // handled before
    };
    let named = serde_json::from_slice::<serde_json::Value>(&payload).ok().and_then(|v| {
        let job = v.get("job_id")?.as_str()?.to_owned();
        Some((job, v.get("partition").and_then(|p| p.as_u64()).unwrap_or(0)))
    });
    let Some((job_id, partition)) = named else {
        warn!(?letter, "a dead task that names no job; removed");
        bus.remove_dead_task(letter).await?;
        return Ok(());
    };
    let reason = format!(
        "partition {partition} was handed to a worker {} times and no {} worker ever finished it \
         (each one stopped without reporting: killed, e.g. for memory, or crashed)",
        letter.deliveries,
        letter.stage.as_str()
    );
    if crate::finish::fail_job(bus, ledger, metrics, &job_id, &reason).await? {
        info!(job_id = %job_id, partition, stage = letter.stage.as_str(), "job failed: dead letter");
    }
    bus.remove_dead_task(letter).await?;
    Ok(())
}
