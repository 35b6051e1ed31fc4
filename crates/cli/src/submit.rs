//! `snarkflow submit`: build the request, submit it, and with `--wait` follow the job.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use crate::circuit_args::CircuitArgs;
use crate::client::{is_transient, Client};

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
    /// The job's idempotency key: a second submit with it returns the first job. Without one,
    /// this command makes one, so its own retries never queue a job twice.
    #[arg(long)]
    idempotency_key: Option<String>,
    /// Follow the job until it finishes; exit non-zero unless it is done.
    #[arg(long)]
    wait: bool,
    /// Give up waiting after this many seconds (exit code 3).
    #[arg(long, default_value_t = 3600)]
    timeout_secs: u64,
    /// Keep retrying a submit the gateway could not take (unreachable, 429, 5xx) for this many
    /// seconds; with --wait, a status poll that fails so is retried until --timeout-secs.
    #[arg(long, default_value_t = 60)]
    retry_secs: u64,
}

/// Exit codes of `submit` (docs/configuration.md): the job ended failed or cancelled, and
/// `--wait` gave up before it ended. 0 is done (or accepted, without `--wait`); 1 any error,
/// such as a refused request or a gateway out of reach past `--retry-secs`; 2 bad arguments.
pub(crate) const EXIT_JOB_FAILED: u8 = 1;
pub(crate) const EXIT_TIMED_OUT: u8 = 3;

/// Pause before the `attempt`-th retry of a transient failure: 0.5 s doubling to 8 s.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500 << attempt.min(4))
}

/// `call` until it succeeds, fails for good, or `deadline` passes; transient failures are
/// noted on stderr, once per kind of error.
async fn retrying<T, F, Fut>(what: &str, deadline: Instant, mut call: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let mut attempt = 0;
    let mut noted = String::new();
    loop {
        match call().await {
            Err(e) if is_transient(&e) && Instant::now() + backoff(attempt) < deadline => {
                let text = format!("{e:#}");
                if text != noted {
                    eprintln!("snarkflow: {what}: {text}; retrying");
                    noted = text;
                }
                tokio::time::sleep(backoff(attempt)).await;
                attempt += 1;
            }
            other => return other,
        }
    }
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
    // a retried submit must not queue a second job: it always carries a key
    let key = args.idempotency_key.unwrap_or_else(|| format!("cli-{}", hex::encode(rand::random::<[u8; 16]>())));
    body["idempotency_key"] = key.into();
    let started = Instant::now();
    let accepted =
        retrying("submitting", started + Duration::from_secs(args.retry_secs), || client.submit(&body)).await?;
    let id = accepted["id"].as_str().context("gateway returned no job id")?.to_owned();
    println!("job {id} {}", accepted["state"].as_str().unwrap_or("queued"));
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    let Some(job) = wait(client, &id, started + Duration::from_secs(args.timeout_secs)).await? else {
        eprintln!(
            "snarkflow: job {id} did not finish within {} s; it goes on (`snarkflow status {id}`)",
            args.timeout_secs
        );
        return Ok(ExitCode::from(EXIT_TIMED_OUT));
    };
    print_summary(&job);
    Ok(if job["state"] == "done" { ExitCode::SUCCESS } else { ExitCode::from(EXIT_JOB_FAILED) })
}

/// Poll job `id` until it ends (`Some`) or `deadline` passes (`None`); a poll the gateway
/// could not answer is retried until the deadline.
async fn wait(client: &Client, id: &str, deadline: Instant) -> anyhow::Result<Option<Value>> {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} [{bar:30}] {pos}/{len} proved  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    loop {
        let job = match retrying("following the job", deadline, || client.status(id)).await {
            Ok(job) => job,
            Err(e) if is_transient(&e) => {
                bar.abandon();
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let p = &job["partitions"];
        bar.set_length(p["total"].as_u64().unwrap_or(0));
        bar.set_position(p["proved"].as_u64().unwrap_or(0));
        bar.set_message(format!("{} (synthesized {})", job["state"].as_str().unwrap_or("?"), p["synthesized"]));
        if matches!(job["state"].as_str(), Some("done" | "failed" | "cancelled")) {
            bar.finish_and_clear();
            return Ok(Some(job));
        }
        if Instant::now() > deadline {
            bar.abandon();
            return Ok(None);
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::routing::{get, post};
    use axum::{Json, Router};
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Line {
        #[command(flatten)]
        args: SubmitArgs,
    }

    /// What the test gateway answers: `unavailable` 503s before each route works, and the job's
    /// state once it does; what it saw.
    #[derive(Default)]
    struct Script {
        submit_503s: u32,
        status_503s: u32,
        status_400: bool,
        state: &'static str,
        keys: Vec<String>,
        polls: u32,
    }

    type Shared = Arc<Mutex<Script>>;

    async fn gateway(script: Script) -> (String, Shared) {
        let shared: Shared = Arc::new(Mutex::new(script));
        let app = Router::new()
            .route(
                "/v1/jobs",
                post(|State(s): State<Shared>, Json(body): Json<Value>| async move {
                    let mut s = s.lock().unwrap();
                    s.keys.push(body["idempotency_key"].as_str().unwrap_or_default().to_owned());
                    if s.submit_503s > 0 {
                        s.submit_503s -= 1;
                        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": {"message": "not ready"}})));
                    }
                    (StatusCode::ACCEPTED, Json(json!({"id": "job-1", "state": "queued"})))
                }),
            )
            .route(
                "/v1/jobs/{id}",
                get(|State(s): State<Shared>| async move {
                    let mut s = s.lock().unwrap();
                    s.polls += 1;
                    if s.status_400 {
                        return (StatusCode::NOT_FOUND, Json(json!({"error": {"message": "no such job"}})));
                    }
                    if s.status_503s > 0 {
                        s.status_503s -= 1;
                        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": {"message": "restarting"}})));
                    }
                    (StatusCode::OK, Json(json!({"id": "job-1", "state": s.state, "partitions": {"total": 1}})))
                }),
            )
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, shared)
    }

    fn args(extra: &[&str]) -> SubmitArgs {
        let mut line = vec!["submit", "--kind", "dense-chain", "--constraints", "8"];
        line.extend(extra);
        Line::try_parse_from(line).unwrap().args
    }

    #[tokio::test]
    async fn a_submit_and_its_wait_ride_out_a_briefly_unavailable_gateway_without_a_second_job() {
        let (url, seen) = gateway(Script { submit_503s: 2, status_503s: 2, state: "done", ..Default::default() }).await;
        let client = Client::new(&url, None, None).unwrap();
        let code = submit(&client, args(&["--wait", "--retry-secs", "30"])).await.unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.keys.len(), 3, "two 503s, then accepted");
        assert!(seen.keys.iter().all(|k| k == &seen.keys[0] && k.starts_with("cli-")), "{:?}", seen.keys);
        assert_eq!(seen.polls, 3, "two 503s, then done");
    }

    #[tokio::test]
    async fn a_refused_poll_is_not_retried_and_a_failed_job_exits_1() {
        let (url, seen) = gateway(Script { status_400: true, state: "done", ..Default::default() }).await;
        let client = Client::new(&url, None, None).unwrap();
        let err = submit(&client, args(&["--wait"])).await.unwrap_err();
        assert!(format!("{err:#}").contains("404"), "{err:#}");
        assert_eq!(seen.lock().unwrap().polls, 1);
        let (url, _) = gateway(Script { state: "failed", ..Default::default() }).await;
        let client = Client::new(&url, None, None).unwrap();
        let code = submit(&client, args(&["--wait", "--idempotency-key", "mine"])).await.unwrap();
        assert_eq!(code, ExitCode::from(EXIT_JOB_FAILED));
    }

    #[tokio::test]
    async fn waiting_past_the_timeout_exits_3_and_an_unreachable_gateway_gives_up_after_the_retry_time() {
        let (url, _) = gateway(Script { state: "proving", ..Default::default() }).await;
        let client = Client::new(&url, None, None).unwrap();
        let code = submit(&client, args(&["--wait", "--timeout-secs", "1"])).await.unwrap();
        assert_eq!(code, ExitCode::from(EXIT_TIMED_OUT));
        // nothing listens there: retried for --retry-secs, then the error
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let client = Client::new(&format!("http://127.0.0.1:{port}"), None, None).unwrap();
        let started = Instant::now();
        let err = submit(&client, args(&["--retry-secs", "2"])).await.unwrap_err();
        assert!(format!("{err:#}").contains("reaching the gateway"), "{err:#}");
        assert!(started.elapsed() >= Duration::from_millis(1400), "it retried: {:?}", started.elapsed());
    }
}
