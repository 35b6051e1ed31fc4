//! The gateway's memory under a flood of authenticated uploads: a real nats-server, the real
//! `gateway` binary as its own process (default limits: 32 submits at once, 96 MiB bodies),
//! and `clients` uploads of `mib` MiB each sent at once by four tenants. Every body is read
//! whole and parsed, then refused for its content (an unknown input field), so each takes a
//! submit slot for its whole upload and parse. Prints the answers by status and the gateway's
//! resident memory before and at its peak (sampled every 20 ms, and the kernel's high-water
//! mark), against the bound the limits promise (concurrent submits × body limit).
//!
//! `cargo build --release -p snarkflow-gateway -p snarkflow-e2e --examples &&
//! target/release/examples/upload_flood 128 64`

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use snarkflow_service::tokens::Scope;
use snarkflow_testkit::NatsServer;
use snarkflow_wire::Priority;

/// (current, high-water) resident memory of process `pid`, in MiB.
fn rss_mib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let clients = args.next().transpose()?.unwrap_or(128);
    let mib = args.next().transpose()?.unwrap_or(64);
    let gateway = std::env::current_exe()?
        .parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("gateway"))
        .filter(|p| p.exists())
        .ok_or_else(|| anyhow::anyhow!("no gateway binary beside this example: cargo build -p snarkflow-gateway"))?;
    let nats = NatsServer::start();
    let tokens: Vec<String> = (0..4)
        .map(|t| snarkflow_e2e::add_test_token(&format!("flood-{t}"), &[Scope::Submit], Priority::Normal))
        .collect();
    let params = tempfile::tempdir()?;
    let port = snarkflow_e2e::free_port();
    let mut child = Command::new(&gateway)
        .args(["--listen", &format!("127.0.0.1:{port}"), "--nats-url", &nats.url()])
        .args(["--tokens-file", &snarkflow_e2e::test_tokens().path.display().to_string()])
        .args(["--params-dir", &params.path().display().to_string(), "--test-params", "--enable-test-kinds"])
        .args(["--tenant-submits-per-minute", "1000000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !http.get(format!("{base}/readyz")).send().await.is_ok_and(|r| r.status().is_success()) {
        anyhow::ensure!(Instant::now() < deadline, "the gateway did not become ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (before, _) = rss_mib(pid);

    // the body: a test job whose input carries an unknown field of `mib` MiB
    let pad = "A".repeat(mib << 20);
    let body =
        bytes::Bytes::from(format!(r#"{{"kind": "dense-chain", "input": {{"constraints": 8, "pad": "{pad}"}}}}"#));
    drop(pad);
    let sampling = Arc::new(AtomicBool::new(true));
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let (sampling, peak) = (sampling.clone(), peak.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(rss_mib(pid).0, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let started = Instant::now();
    let sends = (0..clients).map(|i| {
        let (http, body, url) = (http.clone(), body.clone(), format!("{base}/v1/jobs"));
        let token = tokens[i % tokens.len()].clone();
        tokio::spawn(async move {
            match http.post(url).bearer_auth(token).header("content-type", "application/json").body(body).send().await {
                Ok(r) => r.status().as_u16().to_string(),
                // a refusal sent from the headers closes the connection under an upload still sending
                Err(e) => {
                    if e.is_connect() {
                        "connect error".into()
                    } else {
                        "closed while sending".into()
                    }
                }
            }
        })
    });
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    for answer in futures::future::join_all(sends).await {
        *answers.entry(answer?).or_default() += 1;
    }
    let wall = started.elapsed().as_secs_f64();
    sampling.store(false, Ordering::Relaxed);
    sampler.await?;
    let (after, high_water) = rss_mib(pid);
    let _ = child.kill();
    let _ = child.wait();
    let bound = 32 * mib;
    println!(
        "FLOOD {clients} uploads of {mib} MiB from 4 tenants in {wall:.1} s, answers {answers:?}; gateway RSS \
         {before} MiB before, peak {} MiB sampled / {high_water} MiB high-water, {after} MiB after; bodies in \
         flight bounded by 32 submits x {mib} MiB = {bound} MiB",
        peak.load(Ordering::Relaxed)
    );
    Ok(())
}
