//! The three services as separate processes export their spans over OTLP/HTTP to a real
//! receiver started by this test (which decodes the OTLP protobuf): one trace per job, the
//! stage spans of every partition with the right parents across services, the attributes,
//! and one `service.name` per binary. Then the waterfall of that run.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_e2e::{gpu_worker_args, init_test_logging, TEST_ACK_WAIT_SECS};
use snarkflow_testkit::NatsServer;
use snarkflow_traces::{receiver, waterfall, Span};

struct Proc(Child);

impl Proc {
    fn spawn(bin: &str, args: &[String], otlp: &str, protocol: &str) -> Proc {
        let child = Command::new(bin)
            .args(args)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {bin}: {e}"));
        Proc(child)
    }

    /// SIGTERM and wait: the service drains and flushes its spans.
    fn terminate(mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        panic!("service did not stop on SIGTERM within 30 s");
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

/// Run nats-server, the three services as processes exporting to a receiver of `protocol`,
/// and `jobs` jobs of `partitions` partitions; returns the spans and each job's trace id.
async fn run_jobs(protocol: &str, jobs: u64, partitions: u64) -> (Vec<Span>, HashMap<String, String>) {
    init_test_logging();
    let nats = NatsServer::start();
    let collected = receiver::Collected::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let otlp = format!("http://{}", listener.local_addr().unwrap());
    let stop_receiver = tokio_util::sync::CancellationToken::new();
    let stopped = stop_receiver.clone();
    let shutdown = async move { stopped.cancelled().await };
    let receiver_task = if protocol == "grpc" {
        tokio::spawn(receiver::serve_grpc(listener, collected.clone(), shutdown))
    } else {
        tokio::spawn(receiver::serve(listener, collected.clone(), None, shutdown))
    };

    let gateway_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let nats_args = vec!["--nats-url".to_owned(), nats.url(), "--ack-wait-secs".into(), TEST_ACK_WAIT_SECS.to_string()];
    let mut gateway_args = vec!["--listen".to_owned(), format!("127.0.0.1:{gateway_port}")];
    gateway_args.extend(nats_args.clone());
    gateway_args.extend(snarkflow_e2e::test_gateway_flags());
    let mut synth_args = vec!["--worker-id".to_owned(), "synth-otlp".into()];
    synth_args.extend(nats_args.clone());
    let gateway = Proc::spawn(env!("CARGO_BIN_EXE_e2e-gateway"), &gateway_args, &otlp, protocol);
    let synth = Proc::spawn(env!("CARGO_BIN_EXE_e2e-synth-worker"), &synth_args, &otlp, protocol);
    let gpu =
        Proc::spawn(env!("CARGO_BIN_EXE_e2e-gpu-worker"), &gpu_worker_args(&nats.url(), "gpu-otlp"), &otlp, protocol);

    let http = snarkflow_e2e::api_client();
    let base = format!("http://127.0.0.1:{gateway_port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !http.get(format!("{base}/readyz")).send().await.map(|r| r.status().is_success()).unwrap_or(false) {
        assert!(Instant::now() < deadline, "gateway never became ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut ids = Vec::new();
    for seed in 1..=jobs {
        let body =
            json!({"kind": "dense-chain", "input": {"constraints": 512, "partitions": partitions, "seed": seed}});
        let v: serde_json::Value =
            http.post(format!("{base}/v1/jobs")).json(&body).send().await.unwrap().json().await.unwrap();
        ids.push(v["id"].as_str().unwrap_or_else(|| panic!("submit answered {v}")).to_owned());
    }
    let mut trace_ids = HashMap::new();
    for id in &ids {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let v: serde_json::Value =
                http.get(format!("{base}/v1/jobs/{id}")).send().await.unwrap().json().await.unwrap();
            if v["state"] == "done" {
                trace_ids.insert(id.clone(), v["trace_id"].as_str().expect("job records its trace id").to_owned());
                break;
            }
            assert!(Instant::now() < deadline && v["state"] != "failed", "job {id}: {v}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    for p in [gpu, synth, gateway] {
        p.terminate();
    }
    stop_receiver.cancel();
    receiver_task.await.unwrap().unwrap();
    (collected.spans(), trace_ids)
}

/// The spans every job has, with the service that makes them.
const EXPECTED: [(&str, &str); 13] = [
    ("http.submit", "gateway"),
    ("synth.handle", "synth-worker"),
    ("synthesize", "synth-worker"),
    ("serialize", "synth-worker"),
    ("store", "synth-worker"),
    ("publish", "synth-worker"),
    ("queue.wait", "gpu-worker"),
    ("gpu.handle", "gpu-worker"),
    ("fetch", "gpu-worker"),
    ("deserialize", "gpu-worker"),
    ("prove", "gpu-worker"),
    ("verify", "gpu-worker"),
    ("assemble", "gateway"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn services_export_over_otlp_grpc_too() {
    let (spans, trace_ids) = run_jobs("grpc", 1, 1).await;
    let (id, trace_id) = trace_ids.iter().next().unwrap();
    for (name, service) in EXPECTED {
        let found = spans.iter().filter(|s| s.name == name && &s.trace_id == trace_id && s.service == service).count();
        assert_eq!(found, 1, "job {id}: {name} from {service} over gRPC");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn services_export_one_trace_per_job_over_otlp() {
    let (spans, trace_ids) = run_jobs("http/protobuf", 2, 2).await;
    let by_id: HashMap<&str, &Span> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let parent = |s: &Span| -> &Span {
        let p = s.parent_span_id.as_deref().unwrap_or_else(|| panic!("{} has no parent", s.name));
        by_id.get(p).unwrap_or_else(|| panic!("{}'s parent {p} was not exported", s.name))
    };
    for (id, trace_id) in &trace_ids {
        let of_job: Vec<&Span> =
            spans.iter().filter(|s| s.attr_text("job_id").as_deref() == Some(id.as_str())).collect();
        let traces: std::collections::BTreeSet<&str> = of_job.iter().map(|s| s.trace_id.as_str()).collect();
        assert_eq!(
            traces.into_iter().collect::<Vec<_>>(),
            vec![trace_id.as_str()],
            "job {id}: one trace, the one it records"
        );
        for (name, service) in EXPECTED {
            let named: Vec<&&Span> = of_job.iter().filter(|s| s.name == name).collect();
            let want = if name == "http.submit" { 1 } else { 2 };
            assert_eq!(named.len(), want, "job {id}: {name} spans");
            for s in named {
                assert_eq!(s.service, service, "{name} comes from {service}");
                for key in ["worker", "host"] {
                    assert!(s.attr(key).is_some(), "{name} lacks {key}");
                }
                if name != "http.submit" {
                    assert!(s.attr("partition").is_some(), "{name} lacks partition");
                }
                let p = if name == "http.submit" { None } else { Some(parent(s)) };
                match name {
                    "synth.handle" => assert_eq!(p.unwrap().name, "http.submit"),
                    "synthesize" | "serialize" | "store" | "publish" => assert_eq!(p.unwrap().name, "synth.handle"),
                    "queue.wait" | "gpu.handle" => {
                        // hanging off the synth-worker's publish span of the same partition
                        let publish = p.unwrap();
                        assert_eq!(publish.name, "publish");
                        let handle = parent(publish);
                        assert_eq!(handle.name, "synth.handle");
                        assert_eq!(handle.attr("partition"), s.attr("partition"), "{name} under another partition");
                    }
                    "fetch" | "deserialize" | "prove" | "verify" => assert_eq!(p.unwrap().name, "gpu.handle"),
                    "assemble" => assert_eq!(p.unwrap().name, "gpu.handle"),
                    _ => {}
                }
                if name == "prove" {
                    assert!(
                        s.attr("backend").is_some() && s.attr("gpu.device").is_some() && s.attr("gpu.name").is_some(),
                        "prove lacks device attributes"
                    );
                }
                if matches!(name, "store" | "fetch" | "publish" | "serialize" | "deserialize") {
                    assert!(s.attr_i64("bytes").unwrap_or(0) > 0, "{name} lacks its byte count");
                }
            }
        }
    }

    let report = waterfall::analyze(&spans);
    assert_eq!(report.rows.len(), 4, "a waterfall row per partition");
    assert_eq!(report.devices.len(), 1);
    let busy = report.devices[0].busy_fraction;
    assert!(busy > 0.0 && busy <= 1.0, "{busy}");
    println!("{}", waterfall::render_text(&report, 80));
}
