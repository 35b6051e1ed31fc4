//! Settling a work message once its handling ended: one classification of failures and one
//! ack rule for every worker.
//!
//! - success → `Ack`;
//! - transient failure (a device error, a full store) → `Nak` with a delay, so the message
//!   comes back — except on its last allowed delivery, where it becomes permanent (the broker
//!   would drop it and the job would hang);
//! - the broker unavailable ([`Failure::Unavailable`]): the worker first retries the task in
//!   place, holding the message (see the runtime's slots), so an election or a node restart
//!   does not spend one of the task's deliveries; only if that lasts does it settle as a
//!   transient failure;
//! - permanent failure → a `PartitionFailed` event for the job, then `Term`; if the event
//!   cannot be published the message is `Nak`ed instead, because without the event the job
//!   would never finish.

use std::time::Duration;

use async_nats::jetstream::{AckKind, Message};
use snarkflow_wire::{self as wire, JobEvent, JobEventBody, Stage};
use tracing::warn;

use crate::{now_ms, Bus, BusError, Lanes};

/// Delay before a transient failure's message is offered again.
pub const RETRY_DELAY: Duration = Duration::from_secs(2);

/// What went wrong, classified once; the class decides the ack.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Bad input or a wrong result: retrying cannot help.
    Permanent(String),
    /// A device hiccuped or the store is full: retry later, on any worker.
    Transient(String),
    /// The broker did not answer (no quorum, a leader election, a node restarting, a lost
    /// compare-and-set race): nothing is wrong with the task or this worker, so the worker
    /// retries in place for a while before handing the task back.
    Unavailable(String),
}

/// The bus's errors, classified by source: an object that is missing or fails its digest, or
/// bytes that do not decode, cannot be repaired by waiting; the broker being unreachable or a
/// lost compare-and-set can, in place; a full store needs others to finish first.
impl From<BusError> for Failure {
    fn from(e: BusError) -> Self {
        match e {
            BusError::Corrupt { .. } | BusError::NotFound(_) | BusError::Undecodable { .. } | BusError::Config(_) => {
                Failure::Permanent(e.to_string())
            }
            BusError::Nats { .. } | BusError::Conflict(_) => Failure::Unavailable(e.to_string()),
            BusError::Full(_) => Failure::Transient(e.to_string()),
        }
    }
}

/// How a settled message ended, for the workers' outcome metrics: `retried`, `failed`, or
/// the success label the worker gave.
pub type Outcome = &'static str;

/// The part of a task settling needs.
#[derive(Debug, Clone, Copy)]
pub struct TaskRef<'a> {
    pub job_id: &'a str,
    pub partition: u32,
    pub stage: Stage,
    /// An object to delete when the task fails permanently (the synthesized partition).
    pub object: Option<&'a str>,
}

/// Whether `msg` is on its last allowed delivery: `max_deliver` of its consumer as the broker
/// has it, else this process's setting; never with unlimited deliveries (≤ 0).
pub fn is_last_delivery(bus: &Bus, lanes: &Lanes, msg: &Message) -> (bool, i64) {
    let max = lanes.max_deliver(msg).unwrap_or(bus.config().max_deliver);
    (max > 0 && msg.info().map(|i| i.delivered >= max).unwrap_or(false), max)
}

/// Attempts to publish the failed-partition event on the last delivery, where a `Nak` would
/// be ignored (the broker has no delivery left): 1 + 2 + 4 + … seconds, about two minutes.
const LAST_DELIVERY_PUBLISH_ATTEMPTS: u32 = 7;

/// Turn a transient failure (or a lasting unavailability) on the last allowed delivery into a
/// permanent one.
pub fn final_delivery_rule(
    result: Result<Outcome, Failure>,
    last_delivery: bool,
    max_deliver: i64,
) -> Result<Outcome, Failure> {
    match result {
        Err(Failure::Transient(reason) | Failure::Unavailable(reason)) if last_delivery => {
            Err(Failure::Permanent(format!("gave up after {max_deliver} deliveries: {reason}")))
        }
        other => other,
    }
}

/// Ack, nak or terminate `msg` for `result` (see the module docs); returns the outcome label.
pub async fn settle(
    bus: &Bus,
    lanes: &Lanes,
    msg: &Message,
    task: TaskRef<'_>,
    result: Result<Outcome, Failure>,
) -> Outcome {
    let (last_delivery, max_deliver) = is_last_delivery(bus, lanes, msg);
    let result = final_delivery_rule(result, last_delivery, max_deliver);
    let what = task.stage.as_str();
    match result {
        Ok(outcome) => {
            let _ = msg.ack().await;
            outcome
        }
        Err(Failure::Transient(reason) | Failure::Unavailable(reason)) => {
            warn!(job_id = %task.job_id, partition = task.partition, %reason, "{what} will be retried");
            let _ = msg.ack_with(AckKind::Nak(Some(RETRY_DELAY))).await;
            "retried"
        }
        Err(Failure::Permanent(reason)) => {
            warn!(job_id = %task.job_id, partition = task.partition, %reason, "{what} failed permanently");
            let event = JobEvent::new(
                task.job_id,
                task.partition,
                now_ms(),
                JobEventBody::PartitionFailed { stage: task.stage, message: reason },
            );
            // on the last delivery the event is the job's only way to finish: keep trying (the
            // caller's in-progress heartbeat holds the message meanwhile)
            let attempts = if last_delivery { LAST_DELIVERY_PUBLISH_ATTEMPTS } else { 1 };
            let mut attempt = 0;
            let published = loop {
                let published = bus.publish(wire::events_subject(task.job_id), wire::encode(&event), None).await;
                attempt += 1;
                if published.is_ok() || attempt >= attempts {
                    break published;
                }
                tokio::time::sleep(Duration::from_secs(1 << (attempt - 1))).await;
            };
            match published {
                Ok(()) => {
                    if let Some(object) = task.object {
                        let _ = bus.delete_object(object).await;
                    }
                    let _ = msg.ack_with(AckKind::Term).await;
                }
                Err(e) => {
                    warn!(job_id = %task.job_id, partition = task.partition, error = %e, "could not report the failure; handing the task back");
                    let _ = msg.ack_with(AckKind::Nak(Some(RETRY_DELAY))).await;
                }
            }
            "failed"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transient_failure_on_the_last_delivery_becomes_permanent() {
        let transient = || Err(Failure::Transient("nats down".into()));
        assert_eq!(final_delivery_rule(transient(), false, 5), transient());
        assert_eq!(
            final_delivery_rule(transient(), true, 5),
            Err(Failure::Permanent("gave up after 5 deliveries: nats down".into()))
        );
        assert_eq!(final_delivery_rule(Ok("proved"), true, 5), Ok("proved"));
        let permanent = Err(Failure::Permanent("bad input".into()));
        assert_eq!(final_delivery_rule(permanent.clone(), true, 5), permanent);
        let unavailable = Err(Failure::Unavailable("no quorum".into()));
        assert_eq!(final_delivery_rule(unavailable.clone(), false, 5), unavailable);
        assert_eq!(
            final_delivery_rule(unavailable, true, 5),
            Err(Failure::Permanent("gave up after 5 deliveries: no quorum".into()))
        );
    }

    #[test]
    fn broker_errors_are_unavailability_and_missing_objects_are_permanent() {
        let nats = BusError::Nats { op: "publishing an event".into(), source: "no responders".into() };
        assert!(matches!(Failure::from(nats), Failure::Unavailable(_)));
        assert!(matches!(Failure::from(BusError::Conflict("job-1".into())), Failure::Unavailable(_)));
        assert!(matches!(Failure::from(BusError::Full("objects".into())), Failure::Transient(_)));
        assert!(matches!(Failure::from(BusError::NotFound("job-1/0".into())), Failure::Permanent(_)));
    }
}
