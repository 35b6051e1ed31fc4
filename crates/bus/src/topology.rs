//! Connecting and declaring streams, consumers and buckets.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, kv, object_store, stream};
use async_nats::HeaderMap;
use snarkflow_wire::{self as wire, Priority};
use tracing::info;

use crate::{nats_err, BusError, Lanes};

/// How a service reaches NATS and how redelivery behaves.
#[derive(Debug, Clone)]
pub struct BusConfig {
    pub url: String,
    /// A work message not acked (nor heartbeated) within this time is redelivered.
    pub ack_wait: Duration,
    /// Deliveries of one work message before JetStream gives up on it.
    pub max_deliver: i64,
    /// Object store chunk size; must stay under the server's max_payload (1 MiB default).
    pub chunk_size: usize,
    /// How long a job record (and its proof) stays in the ledger after its last change.
    /// Applied when the ledger bucket is first created.
    pub job_retention: Duration,
}

impl BusConfig {
    pub const DEFAULT_URL: &'static str = "nats://127.0.0.1:4222";
    /// Long enough for a heartbeat (sent every third of it) to survive a busy host.
    pub const DEFAULT_ACK_WAIT: Duration = Duration::from_secs(30);
    /// A partition that crashed five workers is a poison pill, not bad luck.
    pub const DEFAULT_MAX_DELIVER: i64 = 5;
    pub const DEFAULT_CHUNK_SIZE: usize = 512 * 1024;
    /// A week: long past any proving deadline, short enough that the ledger stays small.
    pub const DEFAULT_JOB_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

    pub fn new(url: impl Into<String>) -> Self {
        BusConfig {
            url: url.into(),
            ack_wait: Self::DEFAULT_ACK_WAIT,
            max_deliver: Self::DEFAULT_MAX_DELIVER,
            chunk_size: Self::DEFAULT_CHUNK_SIZE,
            job_retention: Self::DEFAULT_JOB_RETENTION,
        }
    }
}

/// A connection to NATS with snarkflow's streams and buckets in place.
#[derive(Clone)]
pub struct Bus {
    pub client: async_nats::Client,
    pub js: jetstream::Context,
    pub jobs: kv::Store,
    pub idempotency: kv::Store,
    pub(crate) partitions: object_store::ObjectStore,
    pub(crate) config: BusConfig,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus").field("url", &self.config.url).finish_non_exhaustive()
    }
}

const DUPLICATE_WINDOW: Duration = Duration::from_secs(10 * 60);

async fn work_stream(js: &jetstream::Context, name: &str, subjects: &str) -> Result<stream::Stream, BusError> {
    js.get_or_create_stream(stream::Config {
        name: name.to_owned(),
        subjects: vec![subjects.to_owned()],
        retention: stream::RetentionPolicy::WorkQueue,
        storage: stream::StorageType::File,
        duplicate_window: DUPLICATE_WINDOW,
        ..Default::default()
    })
    .await
    .map_err(nats_err(format!("creating stream {name}")))
}

impl Bus {
    /// Connect and declare the topology. Safe to call concurrently from several services.
    pub async fn connect(config: BusConfig) -> Result<Bus, BusError> {
        let client = async_nats::ConnectOptions::new()
            .name("snarkflow")
            .retry_on_initial_connect()
            .connect(&config.url)
            .await
            .map_err(nats_err(format!("connecting to {}", config.url)))?;
        let js = jetstream::new(client.clone());
        let synth = work_stream(&js, wire::SYNTH_STREAM, "snarkflow.synth.>").await?;
        let prove = work_stream(&js, wire::PROVE_STREAM, "snarkflow.prove.>").await?;
        let events = work_stream(&js, wire::EVENTS_STREAM, "snarkflow.events.>").await?;
        for (stream, stage) in [(&synth, "synth"), (&prove, "prove")] {
            for priority in Priority::ALL {
                Self::lane_consumer(stream, stage, priority, &config).await?;
            }
        }
        events
            .get_or_create_consumer(
                wire::EVENTS_CONSUMER,
                consumer::pull::Config {
                    durable_name: Some(wire::EVENTS_CONSUMER.to_owned()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: config.ack_wait,
                    ..Default::default()
                },
            )
            .await
            .map_err(nats_err("creating the events consumer"))?;
        let jobs = Self::kv(&js, wire::JOBS_BUCKET, config.job_retention).await?;
        let idempotency = Self::kv(&js, wire::IDEMPOTENCY_BUCKET, config.job_retention).await?;
        let partitions = match js.get_object_store(wire::PARTITIONS_BUCKET).await {
            Ok(store) => store,
            Err(_) => js
                .create_object_store(object_store::Config {
                    bucket: wire::PARTITIONS_BUCKET.to_owned(),
                    description: Some("synthesized partitions between synth-workers and gpu-workers".into()),
                    // a partition nobody proved within a day is garbage
                    max_age: Duration::from_secs(24 * 3600),
                    ..Default::default()
                })
                .await
                .map_err(nats_err("creating the partition object store"))?,
        };
        info!(url = %config.url, "connected to NATS; streams, consumers and buckets ready");
        Ok(Bus { client, js, jobs, idempotency, partitions, config })
    }

    async fn lane_consumer(
        stream: &stream::Stream,
        stage: &str,
        priority: Priority,
        config: &BusConfig,
    ) -> Result<consumer::PullConsumer, BusError> {
        let name = wire::lane_consumer(stage, priority);
        stream
            .get_or_create_consumer(
                &name,
                consumer::pull::Config {
                    durable_name: Some(name.clone()),
                    filter_subject: format!("snarkflow.{stage}.{}", priority.as_str()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: config.ack_wait,
                    max_deliver: config.max_deliver,
                    ..Default::default()
                },
            )
            .await
            .map_err(nats_err(format!("creating consumer {name}")))
    }

    /// Declare a key-value bucket. The stream is created directly, with the settings the KV
    /// convention requires, because async-nats' `create_key_value` first reads account info
    /// in a shape nats-server 2.9 (Debian 12's) does not send.
    async fn kv(js: &jetstream::Context, bucket: &str, max_age: Duration) -> Result<kv::Store, BusError> {
        if let Ok(store) = js.get_key_value(bucket).await {
            return Ok(store);
        }
        js.get_or_create_stream(stream::Config {
            name: format!("KV_{bucket}"),
            subjects: vec![format!("$KV.{bucket}.>")],
            max_messages_per_subject: 1,
            storage: stream::StorageType::File,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            discard: stream::DiscardPolicy::New,
            num_replicas: 1,
            max_age,
            ..Default::default()
        })
        .await
        .map_err(nats_err(format!("creating key-value bucket {bucket}")))?;
        js.get_key_value(bucket).await.map_err(nats_err(format!("opening key-value bucket {bucket}")))
    }

    pub fn config(&self) -> &BusConfig {
        &self.config
    }

    /// The priority lanes of `stage` ("synth" or "prove"), most urgent first.
    pub async fn lanes(&self, stage: &str) -> Result<Lanes, BusError> {
        let stream_name = match stage {
            "synth" => wire::SYNTH_STREAM,
            "prove" => wire::PROVE_STREAM,
            other => panic!("unknown stage {other}"),
        };
        let stream = self.js.get_stream(stream_name).await.map_err(nats_err(format!("opening {stream_name}")))?;
        let mut lanes = Vec::new();
        for priority in Priority::ALL {
            lanes.push((priority, Self::lane_consumer(&stream, stage, priority, &self.config).await?));
        }
        Ok(Lanes::new(lanes, self.config.ack_wait))
    }

    /// The gateway's durable consumer of job events.
    pub async fn events_consumer(&self) -> Result<consumer::PullConsumer, BusError> {
        let stream = self.js.get_stream(wire::EVENTS_STREAM).await.map_err(nats_err("opening the events stream"))?;
        stream.get_consumer(wire::EVENTS_CONSUMER).await.map_err(nats_err("opening the events consumer"))
    }

    /// Publish to a stream and wait for the broker's ack. The current span's trace context
    /// goes into the headers; `msg_id` makes a repeated publish a no-op within the
    /// duplicate window.
    pub async fn publish(&self, subject: String, payload: Vec<u8>, msg_id: Option<&str>) -> Result<(), BusError> {
        let mut headers = HeaderMap::new();
        crate::inject_current_context(&mut headers);
        if let Some(id) = msg_id {
            headers.insert("Nats-Msg-Id", id);
        }
        let op = format!("publishing to {subject}");
        self.js
            .publish_with_headers(subject, headers, payload.into())
            .await
            .map_err(nats_err(op.clone()))?
            .await
            .map_err(nats_err(op))?;
        Ok(())
    }

    /// Messages waiting in a work stream (all lanes), for queue-depth metrics.
    pub async fn pending(&self, stream_name: &str) -> Result<u64, BusError> {
        let mut stream = self.js.get_stream(stream_name).await.map_err(nats_err(format!("opening {stream_name}")))?;
        Ok(stream.info().await.map_err(nats_err(format!("reading {stream_name} info")))?.state.messages)
    }
}
