//! Telemetry for snarkflow binaries: one [`init`] per process that installs `tracing` with an
//! OpenTelemetry layer (W3C trace-context propagation; OTLP export when an endpoint is
//! configured) and returns a guard that flushes spans on shutdown.
//!
//! Spans always get real trace and span ids, even with no collector, so trace context still
//! travels between services and every job record names its trace.

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter};
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer as _};

/// OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtlpProtocol {
    Grpc,
    /// The default: exported from the batch processor's own thread with a blocking HTTP
    /// client, so export never depends on the service's async runtime.
    #[default]
    HttpProtobuf,
}

impl std::str::FromStr for OtlpProtocol {
    type Err = UnknownProtocol;
    fn from_str(s: &str) -> Result<Self, UnknownProtocol> {
        match s {
            "grpc" => Ok(OtlpProtocol::Grpc),
            "http/protobuf" | "http" => Ok(OtlpProtocol::HttpProtobuf),
            other => Err(UnknownProtocol(other.to_owned())),
        }
    }
}

/// An OTLP protocol this build does not export with.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unsupported OTLP protocol {0:?} (use grpc or http/protobuf)")]
pub struct UnknownProtocol(String);

/// What a binary tells [`init`]; each binary fills it from its own `Config`.
#[derive(Debug, Clone, Default)]
pub struct TelemetryConfig {
    /// `service.name` resource attribute.
    pub service: String,
    /// OTLP endpoint (e.g. `http://localhost:4317`); `None` exports nothing.
    pub otlp_endpoint: Option<String>,
    pub otlp_protocol: OtlpProtocol,
    /// `tracing` filter directives, e.g. `info,snarkflow=debug`.
    pub log_filter: String,
}

/// Flushes and shuts the tracer provider down when dropped (or on [`TelemetryGuard::shutdown`]).
#[must_use = "dropping the guard flushes and stops span export"]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl TelemetryGuard {
    pub fn shutdown(mut self) {
        self.flush_and_stop();
    }

    fn flush_and_stop(&mut self) {
        if let Some(provider) = self.provider.take() {
            let _ = provider.force_flush();
            let _ = provider.shutdown();
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        self.flush_and_stop();
    }
}

fn resource(service: &str) -> Resource {
    Resource::builder()
        .with_service_name(service.to_owned())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .with_attribute(KeyValue::new("host.name", host_name()))
        .build()
}

/// This machine's host name (the `host` attribute on every stage span).
pub fn host_name() -> String {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown".into())
    })
    .clone()
}

fn install(service: &str, log_filter: &str, provider: SdkTracerProvider) -> anyhow::Result<TelemetryGuard> {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    opentelemetry::global::set_tracer_provider(provider.clone());
    let tracer = provider.tracer(service.to_owned());
    let filter =
        EnvFilter::try_new(log_filter).map_err(|e| anyhow::anyhow!("invalid log filter {log_filter:?}: {e}"))?;
    // The log filter applies to log output only: spans reach OpenTelemetry at info level
    // whatever RUST_LOG says, so quieting the logs never breaks traces.
    let spans = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::INFO)
        .with_target("h2", tracing::Level::WARN)
        .with_target("hyper", tracing::Level::WARN)
        .with_target("tonic", tracing::Level::WARN)
        .with_target("reqwest", tracing::Level::WARN)
        .with_target("async_nats", tracing::Level::WARN);
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_target(false).with_filter(filter))
        .with(tracing_opentelemetry::layer().with_tracer(tracer).with_filter(spans))
        .try_init()
        .map_err(|e| anyhow::anyhow!("telemetry already initialized: {e}"))?;
    Ok(TelemetryGuard { provider: Some(provider) })
}

/// Install tracing for a binary. Call once, early in `main`, inside the tokio runtime.
pub fn init(config: &TelemetryConfig) -> anyhow::Result<TelemetryGuard> {
    let mut builder = SdkTracerProvider::builder().with_resource(resource(&config.service));
    if let Some(endpoint) = config.otlp_endpoint.as_deref().filter(|e| !e.is_empty()) {
        use opentelemetry_otlp::WithExportConfig;
        let exporter = match config.otlp_protocol {
            OtlpProtocol::Grpc => {
                opentelemetry_otlp::SpanExporter::builder().with_tonic().with_endpoint(endpoint).build()?
            }
            OtlpProtocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
                .build()?,
        };
        builder = builder.with_batch_exporter(exporter);
    }
    let guard = install(&config.service, &config.log_filter, builder.build())?;
    tracing::info!(
        service = %config.service,
        otlp = config.otlp_endpoint.as_deref().unwrap_or("off"),
        "telemetry initialized"
    );
    Ok(guard)
}

/// Install tracing with a caller-supplied exporter, spans exported as they end (tests use an
/// in-memory exporter to check span structure across services in one process).
pub fn init_with_exporter<E: SpanExporter + 'static>(
    service: &str,
    log_filter: &str,
    exporter: E,
) -> anyhow::Result<TelemetryGuard> {
    let provider = SdkTracerProvider::builder().with_resource(resource(service)).with_simple_exporter(exporter).build();
    install(service, log_filter, provider)
}

/// Hex trace id of the current span, if it has one.
pub fn current_trace_id() -> Option<String> {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

/// Render a Prometheus registry in the text exposition format.
pub fn render_metrics(registry: &prometheus::Registry) -> String {
    use prometheus::Encoder;
    let mut out = Vec::new();
    prometheus::TextEncoder::new()
        .encode(&registry.gather(), &mut out)
        .expect("text encoding of gathered metrics cannot fail");
    String::from_utf8(out).expect("prometheus text is utf-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_parses_otel_names() {
        assert_eq!("grpc".parse::<OtlpProtocol>().unwrap(), OtlpProtocol::Grpc);
        assert_eq!("http/protobuf".parse::<OtlpProtocol>().unwrap(), OtlpProtocol::HttpProtobuf);
        assert!("carrier-pigeon".parse::<OtlpProtocol>().is_err());
    }

    #[test]
    fn metrics_render_as_prometheus_text() {
        let registry = prometheus::Registry::new();
        let c = prometheus::IntCounter::new("snarkflow_test_total", "a test counter").unwrap();
        registry.register(Box::new(c.clone())).unwrap();
        c.inc_by(3);
        let text = render_metrics(&registry);
        assert!(text.contains("snarkflow_test_total 3"), "{text}");
    }
}
