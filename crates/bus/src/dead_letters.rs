//! Dead letters: work tasks that reached their consumer's `max_deliver` without any worker
//! settling them (each worker holding one died: killed for memory at 32 GiB, a crashed host),
//! so no worker will ever report on them and their job would wait for its deadline.
//!
//! The server announces each with a max-deliveries advisory. Those advisories are captured by
//! a stream of their own, so one sent while no gateway was running (the gateway is often the
//! thing that was killed) waits there for the next gateway instead of being lost.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use snarkflow_wire::{self as wire, Stage};

use crate::{nats_err, Bus, BusConfig, BusError};

/// A work task the server gave up delivering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub stage: Stage,
    pub stream_seq: u64,
    pub deliveries: u64,
}

impl DeadLetter {
    /// A max-deliveries advisory as a dead letter; `None` for anything else.
    pub fn from_advisory(advisory: &[u8]) -> Option<DeadLetter> {
        let advisory: serde_json::Value = serde_json::from_slice(advisory).ok()?;
        let stream = advisory.get("stream")?.as_str()?;
        let stage = Stage::ALL.into_iter().find(|s| s.stream() == stream)?;
        Some(DeadLetter {
            stage,
            stream_seq: advisory.get("stream_seq")?.as_u64()?,
            deliveries: advisory.get("deliveries").and_then(|d| d.as_u64()).unwrap_or(0),
        })
    }
}

/// The advisory subjects of the work streams' consumers.
fn advisory_subjects() -> Vec<String> {
    Stage::ALL.iter().map(|s| format!("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{}.*", s.stream())).collect()
}

/// Get or create the stream that keeps the advisories, and the gateway's consumer of it.
pub(crate) async fn declare(js: &jetstream::Context, config: &BusConfig) -> Result<(), BusError> {
    let stream = js
        .get_or_create_stream(stream::Config {
            name: wire::DEAD_LETTERS_STREAM.to_owned(),
            subjects: advisory_subjects(),
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            num_replicas: config.replicas,
            max_bytes: crate::connect::limit(config.max_stream_bytes),
            discard: stream::DiscardPolicy::New,
            ..Default::default()
        })
        .await
        .map_err(nats_err(format!("creating stream {}", wire::DEAD_LETTERS_STREAM)))?;
    stream
        .get_or_create_consumer(
            wire::DEAD_LETTERS_CONSUMER,
            consumer::pull::Config {
                durable_name: Some(wire::DEAD_LETTERS_CONSUMER.to_owned()),
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: config.ack_wait,
                ..Default::default()
            },
        )
        .await
        .map_err(nats_err("creating the dead-letters consumer"))?;
    Ok(())
}

impl Bus {
    /// The gateway's consumer of dead-letter advisories; ack each once its job is failed.
    pub async fn dead_letters(&self) -> Result<consumer::PullConsumer, BusError> {
        let name = wire::DEAD_LETTERS_STREAM;
        let stream = self.js().get_stream(name).await.map_err(nats_err(format!("opening {name}")))?;
        stream.get_consumer(wire::DEAD_LETTERS_CONSUMER).await.map_err(nats_err("opening the dead-letters consumer"))
    }

    /// A dead task's payload; `None` if it is gone (handled before).
    pub async fn dead_task(&self, letter: &DeadLetter) -> Result<Option<Vec<u8>>, BusError> {
        let name = letter.stage.stream();
        let stream = self.js().get_stream(name).await.map_err(nats_err(format!("opening {name}")))?;
        match stream.get_raw_message(letter.stream_seq).await {
            Ok(msg) => Ok(Some(msg.payload.to_vec())),
            Err(e) if e.kind() == stream::RawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(nats_err(format!("reading message {} of {name}", letter.stream_seq))(e)),
        }
    }

    /// Remove a dead task from its work queue (once its job has been failed).
    pub async fn remove_dead_task(&self, letter: &DeadLetter) -> Result<(), BusError> {
        let name = letter.stage.stream();
        let stream = self.js().get_stream(name).await.map_err(nats_err(format!("opening {name}")))?;
        match stream.delete_message(letter.stream_seq).await {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().to_lowercase().contains("no message found") => Ok(()),
            Err(e) => Err(nats_err(format!("removing message {} of {name}", letter.stream_seq))(e)),
        }
    }
}

/// How long the gateway waits before trying a dead letter again after an error.
pub const DEAD_LETTER_RETRY: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advisories_become_dead_letters() {
        let advisory = br#"{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"SNARKFLOW_PROVE","consumer":"prove-normal","stream_seq":42,"deliveries":5}"#;
        assert_eq!(
            DeadLetter::from_advisory(advisory),
            Some(DeadLetter { stage: Stage::Proving, stream_seq: 42, deliveries: 5 })
        );
        assert_eq!(DeadLetter::from_advisory(br#"{"stream":"OTHER","stream_seq":1}"#), None);
    }
}
