//! W3C trace context (`traceparent`, `tracestate`) in NATS message headers, so a job's spans
//! in every service join the trace started by the gateway's HTTP request.

use async_nats::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector};
use tracing_opentelemetry::OpenTelemetrySpanExt;

struct HeaderInjector<'a>(&'a mut HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key, value.as_str());
    }
}

struct HeaderExtractor<'a>(&'a HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| k.as_ref()).collect()
    }
}

/// Write the current span's context into `headers`.
pub fn inject_current_context(headers: &mut HeaderMap) {
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut HeaderInjector(headers)));
}

/// Read a trace context from message headers (an empty context when there is none).
pub fn extract_context(headers: Option<&HeaderMap>) -> opentelemetry::Context {
    match headers {
        Some(h) => opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(h))),
        None => opentelemetry::Context::new(),
    }
}
