//! `snarkflow cluster status`: the gpu-workers with their devices and memory plans, each
//! stage's lanes (waiting, held, the oldest task's age) and the jobs per state, from the
//! gateway's `GET /v1/cluster`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use serde::Deserialize;
use snarkflow_wire::GpuWorkerStatus;

use crate::client::Client;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ClusterCommand {
    /// Workers, GPUs and their memory plans, lanes with queue depth and age, jobs per state.
    Status {
        /// The gateway's JSON as it is.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Deserialize)]
struct ClusterView {
    gpu_workers: Vec<GpuWorkerStatus>,
    lanes: Vec<LaneView>,
    jobs: BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
struct LaneView {
    stage: String,
    lane: String,
    waiting: u64,
    in_progress: u64,
    oldest_secs: Option<f64>,
}

pub(crate) async fn run(client: &Client, command: ClusterCommand) -> anyhow::Result<ExitCode> {
    let ClusterCommand::Status { json } = command;
    let value = client.cluster().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", render(&serde_json::from_value(value)?));
    }
    Ok(ExitCode::SUCCESS)
}

fn gib(bytes: u64) -> String {
    format!("{:.0} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// The view as an operator reads it.
fn render(view: &ClusterView) -> String {
    let mut out = String::new();
    let ready = view.gpu_workers.iter().filter(|w| w.ready).count();
    let _ = writeln!(out, "gpu-workers: {} ({ready} ready)", view.gpu_workers.len());
    for w in &view.gpu_workers {
        let devices: Vec<String> = w
            .devices
            .iter()
            .map(|d| match d.memory_bytes {
                0 => d.name.clone(),
                bytes => format!("GPU {} {} {}", d.index, d.name, gib(bytes)),
            })
            .collect();
        let _ = writeln!(out, "  {} on {}: {} ({}), {}", w.worker, w.host, w.state, w.backend, devices.join(", "));
        for l in &w.loaded {
            let plan = l.memory_plan.as_deref().unwrap_or(&l.prover);
            let host =
                if l.host_bytes > 0 { format!(", {} pinned on the host", gib(l.host_bytes)) } else { String::new() };
            let _ = writeln!(out, "    {} {plan}{host}", l.circuit_id);
        }
        if let Some(c) = &w.current {
            let job = if c.job_id.is_empty() { "another tenant's job" } else { &c.job_id };
            let _ = writeln!(out, "    proving {} partition {} of {job}", c.kind, c.partition);
        }
    }
    let _ = writeln!(out, "lanes:                waiting     held   oldest");
    for l in &view.lanes {
        let oldest = l.oldest_secs.map(|s| format!("{s:.1} s")).unwrap_or_else(|| "-".into());
        let _ = writeln!(out, "  {:<9} {:<8} {:>9} {:>8} {:>8}", l.stage, l.lane, l.waiting, l.in_progress, oldest);
    }
    let jobs: Vec<String> = view.jobs.iter().map(|(state, n)| format!("{state} {n}")).collect();
    let _ = writeln!(out, "jobs: {}", jobs.join(", "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_names_each_worker_its_plans_each_lane_and_every_state() {
        let view: ClusterView = serde_json::from_value(serde_json::json!({
            "at_ms": 1,
            "gpu_workers": [{
                "worker": "gpu-a-0", "host": "a", "backend": "cuda-resident", "ready": true, "state": "ready",
                "devices": [{"index": 0, "name": "NVIDIA H200", "memory_bytes": 150_000_000_000u64}],
                "loaded": [{"circuit_id": "porep-c2-32GiB", "bytes": 1, "prover": "cuda-resident",
                            "memory_plan": "streamed", "host_bytes": 60_000_000_000u64}],
                "current": {"job_id": "", "kind": "porep-c2", "partition": 3}
            }],
            "lanes": [{"stage": "proving", "lane": "normal", "waiting": 4, "in_progress": 2, "oldest_secs": 12.5},
                      {"stage": "proving", "lane": "low", "waiting": 0, "in_progress": 0, "oldest_secs": null}],
            "jobs": {"done": 7, "queued": 1}
        }))
        .unwrap();
        let text = render(&view);
        assert!(text.contains("gpu-workers: 1 (1 ready)"), "{text}");
        assert!(text.contains("gpu-a-0 on a: ready (cuda-resident), GPU 0 NVIDIA H200 140 GiB"), "{text}");
        assert!(text.contains("porep-c2-32GiB streamed, 56 GiB pinned on the host"), "{text}");
        assert!(text.contains("proving porep-c2 partition 3 of another tenant's job"), "{text}");
        assert!(text.contains("proving   normal           4        2   12.5 s"), "{text}");
        assert!(text.contains("proving   low              0        0        -"), "{text}");
        assert!(text.contains("jobs: done 7, queued 1"), "{text}");
    }
}
