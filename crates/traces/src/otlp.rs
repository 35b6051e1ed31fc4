//! OTLP traces: protobuf (what exporters send) and JSON (what files hold; the OTLP/JSON
//! encoding, one `ExportTraceServiceRequest` object per line, as the OpenTelemetry
//! collector's file exporter writes it).

use std::collections::BTreeMap;

use anyhow::{bail, Context as _};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use prost::Message as _;
use serde_json::{json, Value};

use crate::{AttrValue, Span};

fn proto_value(v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> Option<AttrValue> {
    match v.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(AttrValue::Str(s.clone())),
        any_value::Value::IntValue(i) => Some(AttrValue::Int(*i)),
        any_value::Value::DoubleValue(f) => Some(AttrValue::Float(*f)),
        any_value::Value::BoolValue(b) => Some(AttrValue::Bool(*b)),
        _ => None,
    }
}

fn proto_attrs(kvs: &[KeyValue]) -> BTreeMap<String, AttrValue> {
    kvs.iter().filter_map(|kv| Some((kv.key.clone(), proto_value(&kv.value)?))).collect()
}

/// Decode an OTLP/protobuf `ExportTraceServiceRequest` body.
pub fn decode_protobuf(body: &[u8]) -> anyhow::Result<Vec<Span>> {
    let req = ExportTraceServiceRequest::decode(body).context("not an OTLP ExportTraceServiceRequest")?;
    let mut out = Vec::new();
    for rs in &req.resource_spans {
        let resource = rs.resource.as_ref().map(|r| proto_attrs(&r.attributes)).unwrap_or_default();
        let service = resource.get("service.name").map(AttrValue::to_text).unwrap_or_else(|| "unknown".into());
        for ss in &rs.scope_spans {
            for s in &ss.spans {
                out.push(Span {
                    trace_id: hex::encode(&s.trace_id),
                    span_id: hex::encode(&s.span_id),
                    parent_span_id: (!s.parent_span_id.is_empty()).then(|| hex::encode(&s.parent_span_id)),
                    name: s.name.clone(),
                    service: service.clone(),
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                    attrs: proto_attrs(&s.attributes),
                });
            }
        }
    }
    Ok(out)
}

fn json_u64(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str()?.parse().ok())
}

fn json_value(v: &Value) -> Option<AttrValue> {
    if let Some(s) = v.get("stringValue") {
        return Some(AttrValue::Str(s.as_str()?.to_owned()));
    }
    if let Some(i) = v.get("intValue") {
        return Some(AttrValue::Int(i.as_i64().or_else(|| i.as_str()?.parse().ok())?));
    }
    if let Some(f) = v.get("doubleValue") {
        return Some(AttrValue::Float(f.as_f64()?));
    }
    if let Some(b) = v.get("boolValue") {
        return Some(AttrValue::Bool(b.as_bool()?));
    }
    None
}

fn json_attrs(v: Option<&Value>) -> BTreeMap<String, AttrValue> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|kv| Some((kv.get("key")?.as_str()?.to_owned(), json_value(kv.get("value")?)?)))
        .collect()
}

fn parse_request(req: &Value, out: &mut Vec<Span>) -> anyhow::Result<()> {
    let Some(resource_spans) = req.get("resourceSpans").and_then(Value::as_array) else {
        bail!("no resourceSpans: not OTLP/JSON trace data");
    };
    for rs in resource_spans {
        let resource = json_attrs(rs.pointer("/resource/attributes"));
        let service = resource.get("service.name").map(AttrValue::to_text).unwrap_or_else(|| "unknown".into());
        for ss in rs.get("scopeSpans").and_then(Value::as_array).into_iter().flatten() {
            for s in ss.get("spans").and_then(Value::as_array).into_iter().flatten() {
                let id = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_lowercase).filter(|v| !v.is_empty());
                out.push(Span {
                    trace_id: id("traceId").context("span without traceId")?,
                    span_id: id("spanId").context("span without spanId")?,
                    parent_span_id: id("parentSpanId"),
                    name: s.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    service: service.clone(),
                    start_ns: s.get("startTimeUnixNano").and_then(json_u64).context("span without start time")?,
                    end_ns: s.get("endTimeUnixNano").and_then(json_u64).context("span without end time")?,
                    attrs: json_attrs(s.get("attributes")),
                });
            }
        }
    }
    Ok(())
}

/// Parse OTLP/JSON: a single request object, or one per line.
pub fn parse_json(text: &str) -> anyhow::Result<Vec<Span>> {
    let mut out = Vec::new();
    if let Ok(whole) = serde_json::from_str::<Value>(text) {
        parse_request(&whole, &mut out)?;
        return Ok(out);
    }
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let req: Value = serde_json::from_str(line).with_context(|| format!("line {}: not JSON", i + 1))?;
        parse_request(&req, &mut out).with_context(|| format!("line {}", i + 1))?;
    }
    Ok(out)
}

fn attr_json(key: &str, v: &AttrValue) -> Value {
    let value = match v {
        AttrValue::Str(s) => json!({ "stringValue": s }),
        AttrValue::Int(i) => json!({ "intValue": i.to_string() }),
        AttrValue::Float(f) => json!({ "doubleValue": f }),
        AttrValue::Bool(b) => json!({ "boolValue": b }),
    };
    json!({ "key": key, "value": value })
}

/// Encode spans as one OTLP/JSON request (grouped by service), as a single line.
pub fn to_json_line(spans: &[Span]) -> String {
    let mut by_service: BTreeMap<&str, Vec<&Span>> = BTreeMap::new();
    for s in spans {
        by_service.entry(&s.service).or_default().push(s);
    }
    let resource_spans: Vec<Value> = by_service
        .into_iter()
        .map(|(service, spans)| {
            let spans: Vec<Value> = spans
                .into_iter()
                .map(|s| {
                    let mut v = json!({
                        "traceId": s.trace_id, "spanId": s.span_id, "name": s.name,
                        "startTimeUnixNano": s.start_ns.to_string(), "endTimeUnixNano": s.end_ns.to_string(),
                        "attributes": s.attrs.iter().map(|(k, v)| attr_json(k, v)).collect::<Vec<_>>(),
                    });
                    if let Some(p) = &s.parent_span_id {
                        v["parentSpanId"] = p.clone().into();
                    }
                    v
                })
                .collect();
            json!({
                "resource": { "attributes": [attr_json("service.name", &AttrValue::Str(service.to_owned()))] },
                "scopeSpans": [{ "scope": { "name": "snarkflow" }, "spans": spans }],
            })
        })
        .collect();
    json!({ "resourceSpans": resource_spans }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, service: &str) -> Span {
        let mut attrs = BTreeMap::new();
        attrs.insert("partition".into(), AttrValue::Int(3));
        attrs.insert("job_id".into(), AttrValue::Str("j".into()));
        Span {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: "b7ad6b7169203331".into(),
            parent_span_id: Some("00f067aa0ba902b7".into()),
            name: name.into(),
            service: service.into(),
            start_ns: 1_700_000_000_000_000_000,
            end_ns: 1_700_000_000_500_000_000,
            attrs,
        }
    }

    #[test]
    fn json_round_trips() {
        let spans = vec![span("prove", "gpu-worker"), span("synthesize", "synth-worker")];
        let mut back = parse_json(&to_json_line(&spans)).unwrap();
        back.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(back, spans);
    }

    #[test]
    fn protobuf_decodes() {
        use opentelemetry_proto::tonic::common::v1::AnyValue;
        use opentelemetry_proto::tonic::resource::v1::Resource;
        use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as PSpan};
        let kv = |k: &str, v: any_value::Value| KeyValue { key: k.into(), value: Some(AnyValue { value: Some(v) }) };
        let req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", any_value::Value::StringValue("gateway".into()))],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans: vec![PSpan {
                        trace_id: vec![1; 16],
                        span_id: vec![2; 8],
                        name: "http.submit".into(),
                        start_time_unix_nano: 10,
                        end_time_unix_nano: 20,
                        attributes: vec![kv("partition", any_value::Value::IntValue(1))],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let spans = decode_protobuf(&req.encode_to_vec()).unwrap();
        assert_eq!(spans.len(), 1);
        let s = &spans[0];
        assert_eq!(
            (s.service.as_str(), s.name.as_str(), s.trace_id.as_str()),
            ("gateway", "http.submit", "01".repeat(16).as_str())
        );
        assert_eq!(s.parent_span_id, None);
        assert_eq!(s.attr_i64("partition"), Some(1));
        assert!(decode_protobuf(b"\xff\xff garbage").is_err());
    }

    #[test]
    fn not_otlp_is_an_error() {
        assert!(parse_json(r#"{"data": []}"#).is_err());
    }
}
