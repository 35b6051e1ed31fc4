//! The gateway's event loop: worker events applied to the job ledger.
//!
//! Events of one job go to one of [`SHARDS`] appliers (by a hash of the job id), each applying
//! its events one at a time, so the ledger's compare-and-set rarely meets a conflict. A job of
//! a kind verified whole whose last partition proof is in is verified on a task of its own,
//! which holds that event's message until the verdict is in the ledger (a gateway that dies
//! meanwhile gets the event again and verifies again). So a PoRep verification (its 51–100 MB
//! input fetched and parsed, seconds of pairings) holds up neither other jobs' events nor the
//! rest of its shard; verifications run at most `--verify-slots` at a time, and one more slot is
//! kept for critical jobs, so a WinningPoSt's completion never waits behind PoRep verifications.
//!
//! Appliers and verifications are tracked ([`EventParts::tasks`]): at shutdown the loop stops
//! pulling, then waits (at most [`STOP_WAIT`]) for the events it holds to be applied and the
//! verifications under way to end, each acking its event once its verdict is in the ledger.

pub(crate) mod apply;
pub(crate) mod consume;
pub(crate) mod deadletter;

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use snarkflow_bus::{extract_context, AckKind, Bus, Heartbeat, Ledger, Message};
use snarkflow_wire::{self as wire, JobEvent, JobEventBody, JobRecord, JobState, Priority};
use tokio::sync::{mpsc, Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info_span, warn, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use self::apply::apply;
use crate::jobs::finish::{fail_job, finished, verify_and_finish};
use crate::metrics::Metrics;

/// Deliveries of one event before the gateway gives up applying it and fails its job (with
/// growing pauses between them: about five minutes in all).
pub(crate) const EVENT_ATTEMPTS: u64 = 12;

/// Appliers; a job's events all go to the same one.
const SHARDS: usize = 8;
/// Events waiting per applier before the loop stops pulling more.
const SHARD_QUEUE: usize = 256;

/// How many whole-proof verifications run at once: `general` for any job, and `critical` more
/// that only critical jobs may take; and which jobs are being verified, so that one job is
/// verified once at a time however many events complete it (a worker's redelivered last proof).
pub(crate) struct VerifySlots {
    general: Semaphore,
    critical: Semaphore,
    running: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// A job's verification running in this gateway; the job is free to be verified again once
/// this is dropped.
pub(crate) struct Verifying<'a> {
    slots: &'a VerifySlots,
    job_id: String,
}

impl Drop for Verifying<'_> {
    fn drop(&mut self) {
        self.slots.running.lock().expect("never poisoned").remove(&self.job_id);
    }
}

impl VerifySlots {
    pub(crate) fn new(general: usize) -> VerifySlots {
        VerifySlots {
            general: Semaphore::new(general.max(1)),
            critical: Semaphore::new(1),
            running: Default::default(),
        }
    }

    /// `job_id`'s verification, unless one is running already.
    pub(crate) fn start(&self, job_id: &str) -> Option<Verifying<'_>> {
        let mut running = self.running.lock().expect("never poisoned");
        running.insert(job_id.to_owned()).then(|| Verifying { slots: self, job_id: job_id.to_owned() })
    }

    async fn acquire(&self, priority: Priority) -> SemaphorePermit<'_> {
        let permit = if priority == Priority::Critical {
            tokio::select! {
                p = self.general.acquire() => p,
                p = self.critical.acquire() => p,
            }
        } else {
            self.general.acquire().await
        };
        permit.expect("the semaphores are never closed")
    }
}

/// What the appliers and verifications share.
#[derive(Clone)]
pub(crate) struct EventParts {
    pub bus: Bus,
    pub ledger: Ledger,
    pub metrics: Metrics,
    pub params_dir: PathBuf,
    pub verify: Arc<VerifySlots>,
    /// The appliers and the verifications, waited for at shutdown.
    pub tasks: TaskTracker,
}

/// How long a stopping gateway waits for the events it holds to be applied and the
/// verifications under way to end (each then acks its event); what is left is redelivered to
/// the next gateway, and a verdict already in the ledger is never applied twice.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(30);

/// Run the event loop until `shutdown`, restarting it after an error; `running` says whether
/// it is applying events (the gateway's readiness). Returns once the events it pulled are
/// applied and the verifications under way have ended, or after [`STOP_WAIT`].
pub(crate) async fn supervise(parts: EventParts, running: Arc<AtomicBool>, shutdown: CancellationToken) {
    pull(&parts, &running, &shutdown).await;
    parts.tasks.close();
    if tokio::time::timeout(STOP_WAIT, parts.tasks.wait()).await.is_err() {
        warn!(
            left = parts.tasks.len(),
            "event appliers or verifications still busy {} s after shutdown: left for the next gateway (their events are redelivered)",
            STOP_WAIT.as_secs()
        );
    }
}

async fn pull(parts: &EventParts, running: &AtomicBool, shutdown: &CancellationToken) {
    loop {
        let result = run(parts, running, shutdown).await;
        running.store(false, Ordering::SeqCst);
        match result {
            Ok(()) => return,
            Err(e) => {
                error!(
                    error = format!("{e:#}"),
                    "the event loop stopped; restarting it (the gateway is not ready meanwhile)"
                );
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    }
}

/// One event as pulled: the message (acked once the event is applied), its decoded body, and
/// the trace context it carried.
struct Delivered {
    msg: Message,
    event: JobEvent,
    parent: opentelemetry::Context,
}

/// Pull job events until `shutdown` and hand each to its job's applier.
async fn run(parts: &EventParts, running: &AtomicBool, shutdown: &CancellationToken) -> anyhow::Result<()> {
    let consumer = parts.bus.events_consumer().await?;
    let mut messages = consumer.messages().await?;
    let shards: Vec<mpsc::Sender<Delivered>> = (0..SHARDS)
        .map(|_| {
            let (tx, rx) = mpsc::channel(SHARD_QUEUE);
            parts.tasks.spawn(applier(parts.clone(), rx));
            tx
        })
        .collect();
    running.store(true, Ordering::SeqCst);
    loop {
        let Some(msg) = crate::events::consume::next_message(&mut messages, shutdown, "event").await? else {
            return Ok(());
        };
        let event: JobEvent = match wire::decode(&msg.payload) {
            Ok(e) => apply::bounded_event(e, snarkflow_bus::now_ms()),
            Err(e) => {
                warn!(error = %e, subject = %msg.subject, "dropping undecodable event");
                let _ = msg.ack_with(AckKind::Term).await;
                continue;
            }
        };
        let parent = extract_context(msg.headers.as_ref());
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        event.job_id.hash(&mut hasher);
        let shard = &shards[(hasher.finish() % SHARDS as u64) as usize];
        if shard.send(Delivered { msg, event, parent }).await.is_err() {
            anyhow::bail!("an event applier stopped");
        }
    }
}

/// Apply one job's events in order; start a verification where one completes a job.
async fn applier(parts: EventParts, mut events: mpsc::Receiver<Delivered>) {
    while let Some(delivered) = events.recv().await {
        apply_one(&parts, delivered).await;
    }
}

async fn apply_one(parts: &EventParts, Delivered { msg, event, parent }: Delivered) {
    let assembling = matches!(event.body, JobEventBody::PartitionProved { .. });
    let span = if assembling {
        info_span!(
            "assemble",
            otel.kind = "consumer",
            job_id = %event.job_id,
            partition = i64::from(event.partition),
            worker = "gateway",
            host = %snarkflow_telemetry::host_name(),
            job.done = tracing::field::Empty,
        )
    } else {
        info_span!("ledger.apply", job_id = %event.job_id, partition = i64::from(event.partition), worker = "gateway")
    };
    span.set_parent(parent);
    let started = Instant::now();
    let applied = async {
        let mut previous = None;
        let updated = parts
            .ledger
            .update(&event.job_id, |record| {
                previous = Some(record.state);
                let changed = apply(record, &event);
                if changed && record.state == JobState::Done {
                    record.assemble_s = Some(started.elapsed().as_secs_f64());
                }
                changed
            })
            .await?;
        Ok::<_, anyhow::Error>((previous, updated))
    }
    .instrument(span.clone())
    .await;
    let (previous, record) = match applied {
        Ok((_, None)) => {
            warn!(job_id = %event.job_id, "event for an unknown job; dropped");
            let _ = msg.ack().await;
            return;
        }
        Ok((previous, Some(record))) => (previous, record),
        Err(e) => return settle(parts, &msg, &event, Err(e)).await,
    };
    let needs_verifying = !record.state.is_terminal()
        && snarkflow_circuits::verified_whole(record.kind())
        && record.proved_count() == record.partitions.len() as u32;
    if !needs_verifying {
        let ended_now = previous != Some(record.state) && record.state.is_terminal();
        conclude(parts, &event, ended_now, &record, &span).await;
        return settle(parts, &msg, &event, Ok(())).await;
    }
    // on a task of its own: the message is held there, kept in progress while the verification
    // runs (a PoRep's can outlive the ack deadline), and acked once its verdict is in the ledger
    let parts = parts.clone();
    parts.tasks.clone().spawn(
        async move {
            let Some(_verifying) = parts.verify.start(&record.id) else {
                // another event completed the job too: the verification running holds its own
                // event until its verdict is in, and is retried through it if it fails
                parts.metrics.observe_event(&event);
                return settle(&parts, &msg, &event, Ok(())).await;
            };
            let _heartbeat = Heartbeat::start(msg.clone(), parts.bus.config().ack_wait / 3);
            let result = async {
                let _slot = parts.verify.acquire(record.priority).await;
                let verified =
                    verify_and_finish(&parts.bus, &parts.ledger, &parts.params_dir, &record, started, event.at_ms)
                        .await?;
                conclude(&parts, &event, verified.ended_now, &verified.record, &tracing::Span::current()).await;
                Ok::<(), anyhow::Error>(())
            }
            .await;
            settle(&parts, &msg, &event, result).await;
        }
        .instrument(span),
    );
}

/// The event is in the ledger: count it, and if it ended its job (`ended_now`: this update made
/// the record terminal, not one before it, e.g. a cancel while the proof was verified), say so
/// and clean up.
async fn conclude(parts: &EventParts, event: &JobEvent, ended_now: bool, record: &JobRecord, span: &tracing::Span) {
    parts.metrics.observe_event(event);
    span.record("job.done", record.state == JobState::Done);
    if ended_now {
        finished(&parts.bus, &parts.metrics, record).await;
    }
}

/// Ack an applied event; an event that could not be applied is retried with growing pauses,
/// and after [`EVENT_ATTEMPTS`] deliveries its job fails with the reason.
async fn settle(parts: &EventParts, msg: &Message, event: &JobEvent, result: anyhow::Result<()>) {
    let e = match result {
        Ok(()) => {
            let _ = msg.ack().await;
            return;
        }
        Err(e) => e,
    };
    let delivered = msg.info().map(|i| i.delivered.max(1) as u64).unwrap_or(1);
    let error = format!("{e:#}");
    if delivered >= EVENT_ATTEMPTS {
        let reason = format!(
            "the gateway could not apply an event of partition {} after {delivered} tries: {error}",
            event.partition
        );
        match fail_job(&parts.bus, &parts.ledger, &parts.metrics, &event.job_id, &reason).await {
            Ok(_) => {
                warn!(job_id = %event.job_id, %reason, "job failed");
                let _ = msg.ack_with(AckKind::Term).await;
                return;
            }
            Err(e) => warn!(job_id = %event.job_id, error = format!("{e:#}"), "failing the job failed too"),
        }
    }
    warn!(job_id = %event.job_id, %error, delivered, "applying event failed; will retry");
    // 0.5 s, 1 s, 2 s, ... up to a minute between tries
    let pause = Duration::from_millis(500u64.saturating_mul(1 << delivered.min(7).saturating_sub(1)))
        .min(Duration::from_secs(60));
    let _ = msg.ack_with(AckKind::Nak(Some(pause))).await;
}

#[cfg(test)]
mod tests;
