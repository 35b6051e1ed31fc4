//! Jaeger's query API (`GET /api/traces/{id}`, `GET /api/traces?service=…`) JSON.

use std::collections::BTreeMap;

use anyhow::Context as _;
use serde_json::Value;

use crate::{AttrValue, Span};

fn tag_value(tag: &Value) -> Option<AttrValue> {
    let v = tag.get("value")?;
    Some(match tag.get("type").and_then(Value::as_str).unwrap_or("string") {
        "int64" => AttrValue::Int(v.as_i64()?),
        "float64" => AttrValue::Float(v.as_f64()?),
        "bool" => AttrValue::Bool(v.as_bool()?),
        _ => AttrValue::Str(v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())),
    })
}

/// Jaeger ids drop leading zeros; OTLP ids do not.
fn pad(id: &str, len: usize) -> String {
    format!("{:0>len$}", id.to_lowercase())
}

/// Parse a Jaeger API response holding one or more traces.
pub fn parse(text: &str) -> anyhow::Result<Vec<Span>> {
    let doc: Value = serde_json::from_str(text).context("Jaeger response is not JSON")?;
    let traces = doc.get("data").and_then(Value::as_array).context("Jaeger response has no data array")?;
    let mut out = Vec::new();
    for trace in traces {
        let processes: BTreeMap<String, String> = trace
            .get("processes")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, p)| (k.clone(), p.get("serviceName").and_then(Value::as_str).unwrap_or("unknown").to_owned()))
            .collect();
        for s in trace.get("spans").and_then(Value::as_array).into_iter().flatten() {
            let start_us = s.get("startTime").and_then(Value::as_u64).context("span without startTime")?;
            let duration_us = s.get("duration").and_then(Value::as_u64).unwrap_or(0);
            let parent = s
                .get("references")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|r| r.get("refType").and_then(Value::as_str) == Some("CHILD_OF"))
                .and_then(|r| r.get("spanID").and_then(Value::as_str))
                .map(|id| pad(id, 16));
            out.push(Span {
                trace_id: pad(s.get("traceID").and_then(Value::as_str).context("span without traceID")?, 32),
                span_id: pad(s.get("spanID").and_then(Value::as_str).context("span without spanID")?, 16),
                parent_span_id: parent,
                name: s.get("operationName").and_then(Value::as_str).unwrap_or_default().to_owned(),
                service: s
                    .get("processID")
                    .and_then(Value::as_str)
                    .and_then(|p| processes.get(p).cloned())
                    .unwrap_or_else(|| "unknown".into()),
                start_ns: start_us * 1000,
                end_ns: (start_us + duration_us) * 1000,
                attrs: s
                    .get("tags")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| Some((t.get("key")?.as_str()?.to_owned(), tag_value(t)?)))
                    .collect(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_jaeger_trace() {
        let text = r#"{"data": [{"traceID": "abc", "spans": [
            {"traceID": "abc", "spanID": "1", "operationName": "prove", "startTime": 1000, "duration": 500,
             "references": [{"refType": "CHILD_OF", "traceID": "abc", "spanID": "2"}], "processID": "p1",
             "tags": [{"key": "partition", "type": "int64", "value": 4}, {"key": "worker", "type": "string", "value": "g"}]}
        ], "processes": {"p1": {"serviceName": "gpu-worker"}}}]}"#;
        let spans = parse(text).unwrap();
        let s = &spans[0];
        assert_eq!(s.trace_id, format!("{:0>32}", "abc"));
        assert_eq!(s.parent_span_id.as_deref(), Some("0000000000000002"));
        assert_eq!((s.start_ns, s.end_ns), (1_000_000, 1_500_000));
        assert_eq!(s.service, "gpu-worker");
        assert_eq!(s.attr_i64("partition"), Some(4));
    }
}
