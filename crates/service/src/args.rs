//! Flags shared by every service; each binary flattens them into its own `Config`.

use std::time::Duration;

use clap::Args;
use snarkflow_bus::BusConfig;
use snarkflow_telemetry::{OtlpProtocol, TelemetryConfig};

/// How to reach NATS and how redelivery behaves.
#[derive(Debug, Clone, Args)]
pub struct NatsArgs {
    /// NATS server URL.
    #[arg(long = "nats-url", env = "SNARKFLOW_NATS_URL", default_value = BusConfig::DEFAULT_URL)]
    pub url: String,
    /// Seconds without an ack or heartbeat after which a work message is redelivered.
    #[arg(long, env = "SNARKFLOW_ACK_WAIT_SECS", default_value_t = BusConfig::DEFAULT_ACK_WAIT.as_secs())]
    pub ack_wait_secs: u64,
    /// Deliveries of one work message before it is given up.
    #[arg(long, env = "SNARKFLOW_MAX_DELIVER", default_value_t = BusConfig::DEFAULT_MAX_DELIVER)]
    pub max_deliver: i64,
    /// Hours a finished job and its proof stay in the ledger (applied when the ledger bucket
    /// is first created).
    #[arg(long, env = "SNARKFLOW_JOB_RETENTION_HOURS", default_value_t = BusConfig::DEFAULT_JOB_RETENTION.as_secs() / 3600)]
    pub job_retention_hours: u64,
}

impl NatsArgs {
    pub fn bus_config(&self) -> BusConfig {
        BusConfig {
            ack_wait: Duration::from_secs(self.ack_wait_secs.max(1)),
            max_deliver: self.max_deliver,
            job_retention: Duration::from_secs(self.job_retention_hours.max(1) * 3600),
            ..BusConfig::new(self.url.clone())
        }
    }
}

/// Logging and trace export.
#[derive(Debug, Clone, Args)]
pub struct TelemetryArgs {
    /// OTLP endpoint for spans (e.g. http://localhost:4318); unset exports nothing.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    /// OTLP transport: http/protobuf or grpc.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_PROTOCOL", default_value = "http/protobuf")]
    pub otlp_protocol: OtlpProtocol,
    /// Log filter (tracing EnvFilter syntax).
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    pub log: String,
}

impl TelemetryArgs {
    pub fn to_config(&self, service: &str) -> TelemetryConfig {
        TelemetryConfig {
            service: service.to_owned(),
            otlp_endpoint: self.otlp_endpoint.clone(),
            otlp_protocol: self.otlp_protocol,
            log_filter: self.log.clone(),
        }
    }
}
