//! One trace per job across the three services: trace context travels in NATS headers, and
//! every stage's span joins the trace the gateway's HTTP request started.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use serde_json::json;
use snarkflow_e2e::Stack;

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_spans_share_one_trace_across_the_three_services() {
    let exporter = InMemorySpanExporter::default();
    let _guard = snarkflow_telemetry::init_with_exporter("e2e", "info", exporter.clone()).unwrap();
    let stack = Stack::start().await.unwrap();
    let id =
        stack.submit(&json!({"kind": "dense-chain", "input": {"constraints": 256, "partitions": 2}})).await.unwrap();
    let job = stack.wait_finished(&id, Duration::from_secs(300)).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    let trace_id = job["trace_id"].as_str().expect("the job records its trace id").to_owned();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let spans = exporter.get_finished_spans().unwrap();
    let of_job: Vec<&SpanData> =
        spans.iter().filter(|s| attr(s, "job_id").map(|v| v.as_str() == id.as_str()).unwrap_or(false)).collect();
    for s in &of_job {
        assert_eq!(s.span_context.trace_id().to_string(), trace_id, "span {} left the job's trace", s.name);
    }
    let by_id: HashMap<_, _> = spans.iter().map(|s| (s.span_context.span_id(), s)).collect();
    let named = |name: &str| of_job.iter().filter(|s| s.name == name).copied().collect::<Vec<_>>();
    let submit = named("http.submit");
    assert_eq!(submit.len(), 1, "one HTTP request span");
    let handle = named("synth.handle");
    let gpu = named("gpu.handle");
    let waits = named("queue.wait");
    assert_eq!((handle.len(), gpu.len(), waits.len()), (2, 2, 2), "a span per partition and stage");
    assert!(!named("assemble").is_empty(), "an assemble span");
    for s in &handle {
        assert_eq!(s.parent_span_id, submit[0].span_context.span_id(), "synth.handle is a child of the HTTP request");
    }
    for p in gpu.iter().chain(waits.iter()) {
        // gpu.handle and queue.wait hang off the synth-worker's publish span of the same partition
        let parent = by_id.get(&p.parent_span_id).unwrap_or_else(|| panic!("{}'s parent was not exported", p.name));
        assert_eq!(parent.name, "publish");
        let grandparent = by_id[&parent.parent_span_id];
        assert_eq!(grandparent.name, "synth.handle");
        assert_eq!(attr(grandparent, "partition"), attr(p, "partition"));
    }
    for (name, parent) in [
        ("synthesize", "synth.handle"),
        ("serialize", "synth.handle"),
        ("store", "synth.handle"),
        ("fetch", "gpu.handle"),
        ("deserialize", "gpu.handle"),
        ("prove", "gpu.handle"),
        ("verify", "gpu.handle"),
    ] {
        let of = named(name);
        assert_eq!(of.len(), 2, "{name} spans of the job");
        for s in of {
            assert_eq!(by_id[&s.parent_span_id].name, parent, "{name}'s parent");
            for key in ["job.kind", "partition", "partitions", "worker", "host"] {
                assert!(attr(s, key).is_some(), "{name} lacks {key}");
            }
        }
    }
}
