//! Dead letters: a work task that reached `max_deliver` without any worker settling it (each
//! worker holding it died: killed for memory at 32 GiB, a crashed host) would otherwise sit in
//! its queue while its job waits for its deadline. The server's advisory (kept in a stream, so
//! one sent while no gateway ran is still there) names the task; the gateway reads it, fails
//! its job saying so, removes it from the queue, and only then acks the advisory. The ledger
//! decides first: a partition whose result for that stage is recorded (its last worker
//! published the result, then died before acking) is not failed, only its task removed; and
//! since that result may still be on its way through the events stream, an advisory whose task
//! looks pending is looked at again [`SETTLE`] later before it fails the job.

use std::time::Duration;

use snarkflow_bus::{AckKind, Bus, DeadLetter, Ledger, TaskStatus, DEAD_LETTER_RETRY};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::Metrics;

/// How long an advisory whose task looks unfinished waits before it fails the job: longer than
/// the gateway takes to apply an event already published (milliseconds; seconds under load).
const SETTLE: Duration = Duration::from_secs(10);

/// What became of an advisory.
enum Handled {
    Done,
    /// Look again after [`SETTLE`].
    Later,
}

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
        let Some(msg) = crate::events::consume::next_message(&mut messages, shutdown, "dead-letter").await? else {
            return Ok(());
        };
        let Some(letter) = DeadLetter::from_advisory(&msg.payload) else {
            let _ = msg.ack_with(AckKind::Term).await;
            continue;
        };
        let first_look = msg.info().map(|i| i.delivered <= 1).unwrap_or(true);
        match handle(bus, ledger, metrics, &letter, first_look).await {
            Ok(Handled::Done) => {
                let _ = msg.ack().await;
            }
            Ok(Handled::Later) => {
                let _ = msg.ack_with(AckKind::Nak(Some(SETTLE))).await;
            }
            Err(e) => {
                warn!(error = format!("{e:#}"), ?letter, "handling a dead letter failed; trying again");
                let _ = msg.ack_with(AckKind::Nak(Some(DEAD_LETTER_RETRY))).await;
            }
        }
    }
}

/// Fail the dead task's job, then remove the task from its queue (in that order: an error
/// between the two leaves the advisory to be handled again) — unless the ledger has the task's
/// result, or (on the advisory's `first_look`) may be about to.
async fn handle(
    bus: &Bus,
    ledger: &Ledger,
    metrics: &Metrics,
    letter: &DeadLetter,
    first_look: bool,
) -> anyhow::Result<Handled> {
    let Some(payload) = bus.dead_task(letter).await? else {
        return Ok(Handled::Done); // handled before
    };
    let named = serde_json::from_slice::<serde_json::Value>(&payload).ok().and_then(|v| {
        let job = v.get("job_id")?.as_str()?.to_owned();
        Some((job, v.get("partition").and_then(|p| p.as_u64()).unwrap_or(0)))
    });
    let Some((job_id, partition)) = named else {
        warn!(?letter, "a dead task that names no job; removed");
        bus.remove_dead_task(letter).await?;
        metrics.dead_letter(letter.stage.as_str(), "unnamed");
        return Ok(Handled::Done);
    };
    match ledger.task_status(&job_id, partition as u32, letter.stage).await? {
        TaskStatus::AlreadyDone | TaskStatus::JobOver => {
            info!(job_id = %job_id, partition, stage = letter.stage.as_str(), "a dead task whose result is recorded (or whose job ended); removed");
            bus.remove_dead_task(letter).await?;
            metrics.dead_letter(letter.stage.as_str(), "recorded");
            return Ok(Handled::Done);
        }
        TaskStatus::Pending if first_look => return Ok(Handled::Later),
        TaskStatus::Pending => {}
    }
    let reason = format!(
        "partition {partition} was handed to a worker {} times and no {} worker ever finished it \
         (each one stopped without reporting: killed, e.g. for memory, or crashed)",
        letter.deliveries,
        letter.stage.as_str()
    );
    if crate::jobs::finish::fail_job(bus, ledger, metrics, &job_id, &reason).await? {
        info!(job_id = %job_id, partition, stage = letter.stage.as_str(), "job failed: dead letter");
    }
    bus.remove_dead_task(letter).await?;
    metrics.dead_letter(letter.stage.as_str(), "failed_job");
    Ok(Handled::Done)
}
