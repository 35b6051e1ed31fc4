//! The [`Bus`]: connecting, and declaring the streams, consumers and buckets every service uses.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, kv, object_store, stream};
use async_nats::HeaderMap;
use snarkflow_wire::{self as wire, Priority, Stage};
use tracing::{info, warn};

use crate::security::{redact_url, NatsSecurity};
use crate::{nats_err, BusError, Lanes, Ledger};

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
    /// Credentials, TLS and inbox prefix.
    pub security: NatsSecurity,
    /// An idempotency key that names no job, and whose claim nobody has renewed for this long
    /// (its submit stopped before writing the job), is taken over by the next submit with that
    /// key; measured by each gateway's own clock from when it first saw the key so.
    pub key_orphan_after: Duration,
    /// Copies of every stream and bucket in a JetStream cluster (1 on a single server; 3 in
    /// a three-node cluster survives losing a node). Applied when they are first created.
    pub replicas: usize,
    /// Largest size of each work stream, the events stream and each key-value bucket
    /// (`None`: as large as the server allows). When one is full, writes to it are refused
    /// ([`BusError::Full`]) instead of dropping older messages. Applied at first creation.
    pub max_stream_bytes: Option<u64>,
    /// Largest size of the job ledger bucket (`None`: as large as the server allows). The
    /// gateway refuses new jobs while the ledger has less room than the jobs in flight may
    /// still need, so a full ledger never freezes an accepted job. Applied at first creation.
    pub max_ledger_bytes: Option<u64>,
    /// Largest size of the partition object store (`None`: as large as the server allows);
    /// a put that would not fit is refused with [`BusError::Full`]. Applied at first creation.
    pub max_object_bytes: Option<u64>,
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
    /// Far longer than a submit takes to write its job after claiming the key.
    pub const DEFAULT_KEY_ORPHAN_AFTER: Duration = Duration::from_secs(30);
    /// Tasks and events are a few hundred bytes and job records a few KiB: millions fit. The
    /// server reserves each limit from its JetStream storage (`max_file_store`, by default 75%
    /// of the free disk) when the stream is created, so the [`BOUNDED_STREAMS`](Self::BOUNDED_STREAMS)
    /// of them must fit together: 6 GiB at this default.
    pub const DEFAULT_MAX_STREAM_BYTES: u64 = 1 << 30;
    /// Streams whose size `max_stream_bytes` bounds: the work streams, the events stream, the
    /// dead-letter stream and the idempotency bucket (the ledger has its own limit).
    pub const BOUNDED_STREAMS: u64 = Stage::ALL.len() as u64 + 3;

    pub fn new(url: impl Into<String>) -> Self {
        BusConfig {
            url: url.into(),
            ack_wait: Self::DEFAULT_ACK_WAIT,
            max_deliver: Self::DEFAULT_MAX_DELIVER,
            chunk_size: Self::DEFAULT_CHUNK_SIZE,
            job_retention: Self::DEFAULT_JOB_RETENTION,
            security: NatsSecurity::default(),
            key_orphan_after: Self::DEFAULT_KEY_ORPHAN_AFTER,
            replicas: 1,
            max_stream_bytes: Some(Self::DEFAULT_MAX_STREAM_BYTES),
            max_ledger_bytes: Some(Self::DEFAULT_MAX_STREAM_BYTES),
            max_object_bytes: None,
        }
    }
}

/// A connection to NATS with snarkflow's streams and buckets in place.
#[derive(Clone)]
pub struct Bus {
    client: async_nats::Client,
    js: jetstream::Context,
    ledger: Ledger,
    /// Counts (re)connections to the server, so pulls the server forgot can be made again.
    connections: tokio::sync::watch::Receiver<u64>,
    pub(crate) partitions: object_store::ObjectStore,
    pub(crate) config: BusConfig,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus").field("url", &redact_url(&self.config.url)).finish_non_exhaustive()
    }
}

/// How often the connection state is looked at while connecting, when the first report of
/// a connection that is not coming up is made, and how often it is repeated.
const CONNECT_POLL: Duration = Duration::from_millis(100);
const CONNECT_REPORT_AFTER: Duration = Duration::from_secs(1);
const REPORT_EVERY: Duration = Duration::from_secs(2);

const DUPLICATE_WINDOW: Duration = Duration::from_secs(10 * 60);

/// What to do when the server cannot reserve the streams' limits, or `None` when `message`
/// is another failure.
fn storage_hint(message: &str, config: &BusConfig) -> Option<String> {
    if !message.contains("insufficient storage resources") {
        return None;
    }
    let gib = |bytes: Option<u64>| match bytes {
        Some(bytes) => format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30)),
        None => "unlimited".to_owned(),
    };
    Some(format!(
        "the server's JetStream storage (max_file_store; by default 75% of the free disk) cannot \
         reserve {} streams of {} each (--nats-max-stream-bytes), the job ledger's {} \
         (--nats-max-ledger-bytes) and the object store's limit (--nats-max-object-bytes): lower \
         those, free disk, or raise max_file_store",
        BusConfig::BOUNDED_STREAMS,
        gib(config.max_stream_bytes),
        gib(config.max_ledger_bytes)
    ))
}

/// A size limit as JetStream takes it (-1: none).
pub(crate) fn limit(bytes: Option<u64>) -> i64 {
    bytes.map_or(-1, |b| i64::try_from(b).unwrap_or(i64::MAX))
}

async fn work_stream(
    js: &jetstream::Context,
    name: &str,
    subjects: &str,
    config: &BusConfig,
) -> Result<stream::Stream, BusError> {
    js.get_or_create_stream(stream::Config {
        name: name.to_owned(),
        subjects: vec![subjects.to_owned()],
        retention: stream::RetentionPolicy::WorkQueue,
        storage: stream::StorageType::File,
        duplicate_window: DUPLICATE_WINDOW,
        num_replicas: config.replicas,
        max_bytes: limit(config.max_stream_bytes),
        // full: refuse new work, never drop queued work
        discard: stream::DiscardPolicy::New,
        ..Default::default()
    })
    .await
    .map_err(nats_err(format!("creating stream {name}")))
}

impl Bus {
    /// Connect and declare the topology. Safe to call concurrently from several services.
    /// Waits as long as NATS cannot be reached or the topology cannot be declared yet; see
    /// [`Bus::connect_reporting`].
    pub async fn connect(config: BusConfig) -> Result<Bus, BusError> {
        Self::connect_reporting(config, &|_| {}).await
    }

    /// [`Bus::connect`], telling `waiting` why while it waits: the server does not answer,
    /// refuses the credentials, or denies declaring the topology (a worker role may only look
    /// streams up: it waits until the gateway has declared them). Settings that can never work
    /// (contradictory credentials, an unreadable creds file) fail at once.
    pub async fn connect_reporting(config: BusConfig, waiting: &(dyn Fn(&str) + Send + Sync)) -> Result<Bus, BusError> {
        let url = redact_url(&config.url);
        let (connected, connections) = tokio::sync::watch::channel(0u64);
        let problem = Arc::new(Mutex::new(None::<String>));
        let seen = problem.clone();
        let options = async_nats::ConnectOptions::new().name("snarkflow").retry_on_initial_connect().event_callback(
            move |event| {
                let (connected, seen) = (connected.clone(), seen.clone());
                async move {
                    match event {
                        async_nats::Event::Connected => {
                            connected.send_modify(|n| *n += 1);
                            *seen.lock().expect("problem lock") = None;
                        }
                        async_nats::Event::ServerError(e) => {
                            *seen.lock().expect("problem lock") = Some(format!("the server says: {e}"));
                        }
                        async_nats::Event::ClientError(e) => {
                            *seen.lock().expect("problem lock") = Some(e.to_string());
                        }
                        _ => {}
                    }
                }
            },
        );
        let options = config.security.apply(options).await.map_err(|e| BusError::Config(e.to_string()))?;
        // a cluster is several URLs, comma-separated; the client moves to another on failure
        let servers: Vec<&str> = config.url.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        let client = options.connect(servers).await.map_err(nats_err(format!("connecting to {url}")))?;
        let last_problem = || problem.lock().expect("problem lock").clone();
        let started = tokio::time::Instant::now();
        let mut next_report = started + CONNECT_REPORT_AFTER;
        while !matches!(client.connection_state(), async_nats::connection::State::Connected) {
            if tokio::time::Instant::now() >= next_report {
                next_report += REPORT_EVERY;
                let why = last_problem().unwrap_or_else(|| "no answer yet".into());
                let message = format!("cannot connect to NATS at {url}: {why}");
                warn!(url = %url, problem = %why, "waiting for NATS");
                waiting(&message);
            }
            tokio::time::sleep(CONNECT_POLL).await;
        }
        let js = jetstream::new(client.clone());
        loop {
            match Self::declare(&js, &config).await {
                Ok(parts) => {
                    info!(url = %url, auth = config.security.method(), tls = config.security.tls(), "connected to NATS; streams, consumers and buckets ready");
                    let (jobs, idempotency, partitions) = parts;
                    let ledger = Ledger::new(jobs, idempotency, js.clone(), config.key_orphan_after);
                    return Ok(Bus { client, js, ledger, connections, partitions, config });
                }
                Err(e) => {
                    let mut message = match last_problem() {
                        Some(why) => format!("{e} ({why})"),
                        None => e.to_string(),
                    };
                    if let Some(hint) = storage_hint(&message, &config) {
                        message = format!("{message}; {hint}");
                    }
                    warn!(error = %message, "declaring the NATS topology failed; retrying");
                    waiting(&format!("cannot declare the NATS topology: {message}"));
                    tokio::time::sleep(REPORT_EVERY).await;
                }
            }
        }
    }

    /// Get or create every stream, consumer and bucket.
    async fn declare(
        js: &jetstream::Context,
        config: &BusConfig,
    ) -> Result<(kv::Store, kv::Store, object_store::ObjectStore), BusError> {
        for stage in Stage::ALL {
            let stream = work_stream(js, stage.stream(), &format!("snarkflow.{}.>", stage.lane_name()), config).await?;
            for priority in Priority::ALL {
                Self::lane_consumer(&stream, stage, priority, config).await?;
            }
        }
        let events = work_stream(js, wire::EVENTS_STREAM, "snarkflow.events.>", config).await?;
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
        crate::dead_letters::declare(js, config).await?;
        let jobs = Self::kv(js, wire::JOBS_BUCKET, config.max_ledger_bytes, config).await?;
        let idempotency = Self::kv(js, wire::IDEMPOTENCY_BUCKET, config.max_stream_bytes, config).await?;
        let partitions = match js.get_object_store(wire::PARTITIONS_BUCKET).await {
            Ok(store) => store,
            Err(_) => js
                .create_object_store(object_store::Config {
                    bucket: wire::PARTITIONS_BUCKET.to_owned(),
                    description: Some("synthesized partitions between synth-workers and gpu-workers".into()),
                    // objects live as long as their job (the gateway's ledger pass deletes what a
                    // finished job left); this only backstops a deployment with no gateway, past
                    // the longest deadline a job can have
                    max_age: Duration::from_secs(8 * 24 * 3600),
                    num_replicas: config.replicas,
                    max_bytes: limit(config.max_object_bytes),
                    ..Default::default()
                })
                .await
                .map_err(nats_err("creating the partition object store"))?,
        };
        Ok((jobs, idempotency, partitions))
    }

    async fn lane_consumer(
        stream: &stream::Stream,
        stage: Stage,
        priority: Priority,
        config: &BusConfig,
    ) -> Result<consumer::PullConsumer, BusError> {
        let name = wire::lane_consumer(stage, priority);
        stream
            .get_or_create_consumer(
                &name,
                consumer::pull::Config {
                    durable_name: Some(name.clone()),
                    filter_subject: wire::lane_subject(stage, priority),
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
    async fn kv(
        js: &jetstream::Context,
        bucket: &str,
        max_bytes: Option<u64>,
        config: &BusConfig,
    ) -> Result<kv::Store, BusError> {
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
            num_replicas: config.replicas,
            max_age: config.job_retention,
            max_bytes: limit(max_bytes),
            ..Default::default()
        })
        .await
        .map_err(nats_err(format!("creating key-value bucket {bucket}")))?;
        js.get_key_value(bucket).await.map_err(nats_err(format!("opening key-value bucket {bucket}")))
    }

    pub fn config(&self) -> &BusConfig {
        &self.config
    }

    /// The core NATS client (control requests).
    pub(crate) fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// The JetStream context.
    pub(crate) fn js(&self) -> &jetstream::Context {
        &self.js
    }

    /// The job ledger and idempotency keys.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Whether the connection to NATS is up, and its state in words.
    pub fn connection(&self) -> (bool, String) {
        let state = self.client.connection_state();
        (matches!(state, async_nats::connection::State::Connected), state.to_string())
    }

    /// The priority lanes of `stage`, most urgent first.
    pub async fn lanes(&self, stage: Stage) -> Result<Lanes, BusError> {
        let stream_name = stage.stream();
        let stream = self.js.get_stream(stream_name).await.map_err(nats_err(format!("opening {stream_name}")))?;
        let mut lanes = Vec::new();
        for priority in Priority::ALL {
            lanes.push((priority, Self::lane_consumer(&stream, stage, priority, &self.config).await?));
        }
        Ok(Lanes::new(lanes, self.config.ack_wait, self.connections.clone()))
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
}
