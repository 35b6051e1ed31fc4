//! Pulling work by priority, and keeping long work from being redelivered.

use std::time::Duration;

use async_nats::jetstream::{consumer::PullConsumer, AckKind, Message};
use futures::StreamExt;
use snarkflow_wire::Priority;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::{nats_err, BusError};

/// The consumers of one stage, most urgent lane first.
pub struct Lanes {
    lanes: Vec<(Priority, PullConsumer)>,
    ack_wait: Duration,
    /// Changes on every (re)connection to the server.
    connections: watch::Receiver<u64>,
}

/// Idle polling starts fast and backs off to this, bounding pickup latency on an idle system.
const MAX_IDLE_BACKOFF: Duration = Duration::from_millis(200);

/// How often a pull still unanswered is checked against the consumer's waiting requests.
const PULL_CHECK: Duration = Duration::from_secs(15);

/// How long a pull already sent may still deliver once shutdown begins.
const SHUTDOWN_PULL_GRACE: Duration = Duration::from_millis(300);

impl Lanes {
    pub(crate) fn new(
        lanes: Vec<(Priority, PullConsumer)>,
        ack_wait: Duration,
        connections: watch::Receiver<u64>,
    ) -> Self {
        Lanes { lanes, ack_wait, connections }
    }

    /// The `max_deliver` of the consumer `msg` came from, as the broker has it (consumer
    /// settings are fixed when first created and may differ from this process's flags);
    /// `None` when the message is not from these lanes.
    pub fn max_deliver(&self, msg: &Message) -> Option<i64> {
        let info = msg.info().ok()?;
        self.lanes
            .iter()
            .map(|(_, consumer)| consumer.cached_info())
            .find(|c| c.name == info.consumer)
            .map(|c| c.config.max_deliver)
    }

    /// The next message, always from the most urgent non-empty lane; `None` once `shutdown`
    /// is cancelled. No pull is sent after cancellation, and a message answering a pull sent
    /// just before it is still returned (to be finished by the drain), so nothing is left
    /// un-acked.
    pub async fn next(&self, shutdown: &CancellationToken) -> Result<Option<(Priority, Message)>, BusError> {
        let mut idle = Duration::from_millis(10);
        loop {
            if shutdown.is_cancelled() {
                return Ok(None);
            }
            for (priority, consumer) in &self.lanes {
                // A no-wait pull can still be held by the server while other messages of the
                // consumer await their ack (seen with two slots on one consumer). Bounding it with
                // an expiry made every empty lane cost the full expiry (the H200 benchmark fell
                // from 192 to 72 proofs/min), so the pull stays a long poll that shutdown
                // interrupts. A server that restarts forgets the pulls it held and never answers
                // them, so a reconnection abandons the pull and the loop makes it again.
                let mut connections = self.connections.clone();
                connections.borrow_and_update();
                let pull = async {
                    let mut batch = consumer
                        .fetch()
                        .max_messages(1)
                        .messages()
                        .await
                        .map_err(nats_err(format!("pulling from lane {}", priority.as_str())))?;
                    match batch.next().await {
                        Some(msg) => {
                            msg.map(Some).map_err(nats_err(format!("receiving from lane {}", priority.as_str())))
                        }
                        None => Ok(None),
                    }
                };
                tokio::pin!(pull);
                let pulled = tokio::select! {
                    _ = shutdown.cancelled() => {
                        // The server may have answered this pull just now (the message is on
                        // its way and counts as delivered): take what arrives within a moment,
                        // for the drain to finish, rather than leave it to the ack wait.
                        return match tokio::time::timeout(SHUTDOWN_PULL_GRACE, &mut pull).await {
                            Ok(Ok(Some(msg))) => Ok(Some((*priority, msg))),
                            _ => Ok(None),
                        };
                    }
                    // (a closed channel means the client is gone: nothing to wait for)
                    Ok(()) = connections.changed() => {
                        warn!(lane = priority.as_str(), "reconnected to NATS; pulling again");
                        Ok(None)
                    }
                    pulled = held(&mut pull, consumer, *priority) => pulled,
                };
                match pulled {
                    Ok(Some(msg)) => return Ok(Some((*priority, msg))),
                    Ok(None) => {}
                    Err(e) => return Err(e),
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(None),
                _ = tokio::time::sleep(idle) => {}
            }
            idle = (idle * 2).min(MAX_IDLE_BACKOFF);
        }
    }

    /// Only the lanes of `priorities` (a pool that serves, say, PoSt alone), in urgency order.
    pub fn only(&self, priorities: &[Priority]) -> Lanes {
        Lanes {
            lanes: self.lanes.iter().filter(|(p, _)| priorities.contains(p)).cloned().collect(),
            ack_wait: self.ack_wait,
            connections: self.connections.clone(),
        }
    }

    /// The priorities of these lanes, most urgent first.
    pub fn priorities(&self) -> Vec<Priority> {
        self.lanes.iter().map(|(p, _)| *p).collect()
    }

    /// The most urgent lane alone: what a worker's urgent slots pull from.
    pub fn most_urgent(&self) -> Lanes {
        Lanes {
            lanes: self.lanes.iter().take(1).cloned().collect(),
            ack_wait: self.ack_wait,
            connections: self.connections.clone(),
        }
    }

    /// Start heartbeats for `msg` at a third of the ack wait.
    pub fn heartbeat(&self, msg: &Message) -> Heartbeat {
        Heartbeat::start(msg.clone(), self.ack_wait / 3)
    }
}

/// Sends `+WPI` (in progress) for a message from its own tokio task until dropped, so a
/// long synthesis or proof is not redelivered to another worker. The compute runs on blocking
/// threads, so it cannot starve this task.
pub struct Heartbeat {
    stop: CancellationToken,
}

impl Heartbeat {
    pub fn start(msg: Message, every: Duration) -> Self {
        let stop = CancellationToken::new();
        let token = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every.max(Duration::from_millis(100)));
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = token.cancelled() => break,
                    _ = tick.tick() => {
                        if let Err(e) = msg.ack_with(AckKind::Progress).await {
                            warn!(error = %e, "in-progress heartbeat failed");
                        }
                    }
                }
            }
        });
        Heartbeat { stop }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Wait for `pull` on `consumer`'s lane. The server may hold a pull while other messages of
/// the consumer await their ack, which is fine; but a pull held by a consumer leader that then
/// moves (a cluster node restarted, the connection itself untouched) is forgotten and never
/// answered: seen in a chaos run, every slot of a gpu-worker waited forever with the tasks
/// ack-pending and the consumer holding no waiting request. So every [`PULL_CHECK`] an
/// unanswered pull asks the consumer how many requests it holds; none means ours is lost, and
/// it counts as an empty pull (the caller pulls again).
async fn held<F, T>(
    pull: &mut std::pin::Pin<&mut F>,
    consumer: &PullConsumer,
    priority: Priority,
) -> Result<Option<T>, BusError>
where
    F: std::future::Future<Output = Result<Option<T>, BusError>>,
{
    loop {
        tokio::select! {
            pulled = pull.as_mut() => return pulled,
            _ = tokio::time::sleep(PULL_CHECK) => {
                let mut consumer = consumer.clone();
                if let Ok(info) = consumer.info().await {
                    if info.num_waiting == 0 {
                        warn!(lane = priority.as_str(), "a pull the broker no longer holds (its consumer's leader moved?); pulling again");
                        return Ok(None);
                    }
                }
            }
        }
    }
}
