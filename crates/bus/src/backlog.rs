//! What is waiting in the work streams: per lane and per stage, for the metrics, the ledger
//! pass and `snarkflow cluster status`.

use async_nats::jetstream::{consumer, stream};
use snarkflow_wire::{self as wire, Priority, Stage};

use crate::{nats_err, Bus, BusError};

/// One priority lane of one stage, as [`Bus::stage_backlog`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LaneBacklog {
    /// Tasks no worker has taken yet.
    pub waiting: u64,
    /// Tasks a worker holds (delivered, not yet settled).
    pub in_progress: u64,
    /// When the oldest unsettled task was published (Unix ms, the server's clock); `None`
    /// when the lane is empty.
    pub oldest_ms: Option<u64>,
}

impl Bus {
    /// Messages of one lane delivered to a worker and not yet acked (work in progress).
    pub async fn lane_ack_pending(&self, stage: Stage, priority: Priority) -> Result<u64, BusError> {
        let name = wire::lane_consumer(stage, priority);
        let stream =
            self.js().get_stream(stage.stream()).await.map_err(nats_err(format!("opening {}", stage.stream())))?;
        let mut consumer: consumer::PullConsumer =
            stream.get_consumer(&name).await.map_err(nats_err(format!("opening consumer {name}")))?;
        Ok(consumer.info().await.map_err(nats_err(format!("reading consumer {name}")))?.num_ack_pending as u64)
    }

    /// Each lane of `stage`, most urgent first: tasks waiting for a worker, tasks a worker
    /// holds, and when the oldest of either was published (a task stays in its work stream until
    /// it is settled). Two requests a lane: the consumer's info (which opening it fetches) and
    /// the lane's first message.
    pub async fn stage_backlog(&self, stage: Stage) -> Result<Vec<(Priority, LaneBacklog)>, BusError> {
        let stream =
            self.js().get_stream(stage.stream()).await.map_err(nats_err(format!("opening {}", stage.stream())))?;
        let mut lanes = Vec::with_capacity(Priority::ALL.len());
        for priority in Priority::ALL {
            let name = wire::lane_consumer(stage, priority);
            let consumer: consumer::PullConsumer =
                stream.get_consumer(&name).await.map_err(nats_err(format!("opening consumer {name}")))?;
            let info = consumer.cached_info();
            let (waiting, in_progress) = (info.num_pending, info.num_ack_pending as u64);
            let subject = wire::lane_subject(stage, priority);
            let oldest_ms = match stream.get_next_raw_message_by_subject(&subject).await {
                Ok(message) => Some((message.time.unix_timestamp_nanos() / 1_000_000) as u64),
                Err(e) if matches!(e.kind(), stream::RawMessageErrorKind::NoMessageFound) => None,
                Err(e) => return Err(nats_err(format!("reading the oldest task on {subject}"))(e)),
            };
            lanes.push((priority, LaneBacklog { waiting, in_progress, oldest_ms }));
        }
        Ok(lanes)
    }

    /// Messages waiting in a work stream (all lanes), for queue-depth metrics.
    pub async fn pending(&self, stream_name: &str) -> Result<u64, BusError> {
        let mut stream = self.js().get_stream(stream_name).await.map_err(nats_err(format!("opening {stream_name}")))?;
        Ok(stream.info().await.map_err(nats_err(format!("reading {stream_name} info")))?.state.messages)
    }
}
