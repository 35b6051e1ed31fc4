//! `snarkflow submit`: build the request, submit it, and with `--wait` follow the job.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use crate::circuit_args::CircuitArgs;
use crate::client::Client;

#[derive(Debug, clap::Args)]
pub(crate) struct SubmitArgs {
    #[command(flatten)]
    circuit: CircuitArgs,
    #[arg(long, default_value_t = 1)]
    partitions: u32,
    /// Witness seed (random if omitted).
    #[arg(long)]
    seed: Option<u64>,
    /// low, normal, high or critical.
    #[arg(long)]
    priority: Option<String>,
    #[arg(long)]
    idempotency_key: Option<String>,
    /// Follow the job until it finishes; exit non-zero unless it is done.
    #[arg(long)]
    wait: bool,
    /// Give up waiting after this many seconds.
    #[arg(long, default_value_t = 3600)]
    timeout_secs: u64,
}

pub(crate) async fn submit(client: &Client, args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let filecoin = snarkflow_circuits::kind_named(&args.circuit.kind).is_some_and(snarkflow_circuits::takes_input);
    let mut input = json!({ "partitions": args.partitions });
    if let Some(request) = args.circuit.filecoin.request_input()? {
        input = request;
    } else if filecoin {
        bail!("{} needs --c1 FILE --miner-id N (porep-c2) or --input FILE", args.circuit.kind);
    }
    if let Some(b) = args.circuit.blocks {
        input["blocks"] = b.into();
    }
    if let Some(c) = args.circuit.constraints {
        input["constraints"] = c.into();
    }
    if let Some(s) = args.seed {
        input["seed"] = s.into();
    }
    let mut body = json!({ "kind": args.circuit.kind, "input": input });
    if let Some(p) = args.priority {
        body["priority"] = p.into();
    }
    if let Some(k) = args.idempotency_key {
        body["idempotency_key"] = k.into();
    }
    let accepted = client.submit(&body).await?;
    let id = accepted["id"].as_str().context("gateway returned no job id")?.to_owned();
    println!("job {id} {}", accepted["state"].as_str().unwrap_or("queued"));
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    let job = wait(client, &id, Duration::from_secs(args.timeout_secs)).await?;
    print_summary(&job);
    Ok(if job["state"] == "done" { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn wait(client: &Client, id: &str, timeout: Duration) -> anyhow::Result<Value> {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} [{bar:30}] {pos}/{len} proved  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let job = client.status(id).await?;
        let p = &job["partitions"];
        bar.set_length(p["total"].as_u64().unwrap_or(0));
        bar.set_position(p["proved"].as_u64().unwrap_or(0));
        bar.set_message(format!("{} (synthesized {})", job["state"].as_str().unwrap_or("?"), p["synthesized"]));
        if matches!(job["state"].as_str(), Some("done" | "failed" | "cancelled")) {
            bar.finish_and_clear();
            return Ok(job);
        }
        if std::time::Instant::now() > deadline {
            bar.abandon();
            bail!("job {id} did not finish within {} s", timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn print_summary(job: &Value) {
    println!("job {} {}", job["id"].as_str().unwrap_or("?"), job["state"].as_str().unwrap_or("?"));
    if let Some(e) = job["error"].as_str() {
        println!("error: {e}");
    }
    println!(
        "circuit {}  partitions {}  trace {}",
        job["circuit_id"].as_str().unwrap_or("?"),
        job["partitions"]["total"],
        job["trace_id"].as_str().unwrap_or("-")
    );
    println!("timings (s, summed over partitions): {}", job["timings"]);
    println!("bytes per hop: {}", job["bytes"]);
}
