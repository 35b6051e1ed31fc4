//! Chaos: jobs of every kind in flight while a driver SIGKILLs and restarts, at random, the
//! synth-workers, the gpu-worker, the gateway (mid fan-out included) and nodes of a three-node
//! NATS cluster, plus one outage of the cluster's quorum while jobs are being submitted.
//! Clients retry with their idempotency key, as Curio does. At the end it prints and asserts:
//! jobs submitted, done (most of them), failed (with reasons), lost (0), done proofs verified (all), objects
//! left (0), duplicate jobs for one key (0).
//!
//! Size from the environment: `SNARKFLOW_CHAOS_JOBS` (default 5) and `SNARKFLOW_CHAOS_SECS`
//! (default 20), the size the test suite and CI run — `just chaos` runs a longer one. The
//! services are this package's binaries unless `SNARKFLOW_CHAOS_BIN_DIR` names a folder holding
//! `e2e-gateway`, `e2e-synth-worker` and `e2e-gpu-worker` (a soak on another host), and
//! `SNARKFLOW_CHAOS_GPU_WORKER` a gpu-worker of a GPU build.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use filecoin_proofs_api::RegisteredSealProof;
use rand::Rng as _;
use serde_json::{json, Value};
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_e2e::{api_client, filecoin_env, gpu_worker_args, params_dir, test_gateway_flags, verify_job_proof};
use snarkflow_prover::ParamStore;
use snarkflow_testkit::NatsCluster;

const MINER: u64 = 1000;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A service run as a child process that the driver kills and restarts; its output (info
/// level, every life of it) goes to `<logs>/<name>.log`, read back for a job that is lost.
struct Service {
    name: String,
    bin: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Service {
    fn new(name: &str, bin: PathBuf, args: Vec<String>, logs: &Path) -> Service {
        let log = logs.join(format!("{name}.log"));
        let mut service = Service { name: name.into(), bin, args, log, child: None };
        service.start();
        service
    }

    fn start(&mut self) {
        if self.child.is_none() {
            let log = || std::fs::OpenOptions::new().create(true).append(true).open(&self.log).expect("service log");
            let child = Command::new(&self.bin)
                .args(&self.args)
                .env("RUST_LOG", "info")
                .env("NO_COLOR", "1")
                .stdout(log())
                .stderr(log())
                .spawn()
                .unwrap_or_else(|e| panic!("start {}: {e}", self.bin.display()));
            self.child = Some(child);
        }
    }

    /// If the process ended by itself (a worker stops on a fatal condition and leaves the
    /// restart to its supervisor), start it again as the supervisor would; true if it had.
    fn supervise(&mut self) -> bool {
        let exited = self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_some());
        if exited {
            self.child = None;
            self.start();
        }
        exited
    }

    /// SIGKILL: no drain, no goodbye.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A service binary: `SNARKFLOW_CHAOS_BIN_DIR/<name>` when set, else the one cargo built.
fn service_bin(name: &str, built: &str) -> PathBuf {
    match std::env::var_os("SNARKFLOW_CHAOS_BIN_DIR") {
        Some(dir) => Path::new(&dir).join(name),
        None => PathBuf::from(built),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The requests: every kind, Filecoin ones at 2 KiB from sparse fixtures (made on every core:
/// a soak's hundred PoRep fixtures took minutes one by one).
fn requests(count: usize) -> Vec<Value> {
    use rayon::prelude::*;
    (0..count)
        .into_par_iter()
        .map(|n| {
            let mut r = request(n);
            r["idempotency_key"] = format!("chaos-{n}").into();
            r
        })
        .collect()
}

/// Request `n` of the mix.
fn request(n: usize) -> Value {
    let mut rng = rand::thread_rng();
    let prover_id = snarkflow_filecoin::prover_id(MINER);
    match n % 5 {
        0 => json!({"kind": "dense-chain", "input": {"constraints": 512, "partitions": 3, "seed": n}}),
        1 => json!({"kind": "sha256-chain", "input": {"blocks": 1, "partitions": 2, "seed": n}}),
        2 => {
            let sector = 100 + n as u64;
            let c1 = snarkflow_filecoin::sparse::porep_c1(
                RegisteredSealProof::StackedDrg2KiBV1_1,
                prover_id,
                sector,
                &mut rng,
            )
            .unwrap();
            json!({"kind": "porep-c2", "input": {"miner_id": MINER, "c1": snarkflow_filecoin::porep::c1_envelope(&c1, sector)}})
        }
        3 => json!({"kind": "window-post", "input": snarkflow_filecoin::sparse_post::post_request(
            snarkflow_filecoin::PostKind::Window, 2048, MINER, &[1, 2], &mut rng).unwrap()}),
        _ => json!({"kind": "winning-post", "input": snarkflow_filecoin::sparse_post::post_request(
            snarkflow_filecoin::PostKind::Winning, 2048, MINER, &[3], &mut rng).unwrap()}),
    }
}

/// Submit until the gateway answers with an id (retrying, same key, through kills and
/// outages); `None` if it never does within `patience`.
async fn submit(http: &reqwest::Client, base: &str, request: &Value, patience: Duration) -> Option<String> {
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        if let Ok(r) = http.post(format!("{base}/v1/jobs")).json(request).send().await {
            if r.status().is_success() {
                if let Ok(v) = r.json::<Value>().await {
                    return v["id"].as_str().map(str::to_owned);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    None
}

/// Check a done job's proof independently: synthetic kinds against their recomputed public
/// inputs, Filecoin kinds with filecoin-proofs' verifiers on the job's own input.
fn verify(job: &Value, request: &Value, proof: &[u8]) -> anyhow::Result<()> {
    let kind = snarkflow_circuits::kind_named(request["kind"].as_str().unwrap()).unwrap();
    if snarkflow_circuits::test_constraints(
        &snarkflow_circuits::parse_circuit_id(job["circuit_id"].as_str().unwrap()).unwrap(),
    )
    .is_some()
    {
        return verify_job_proof(job, proof);
    }
    let parsed = snarkflow_circuits::parse_request(kind, request["input"].as_object().unwrap())?;
    let proofs: Vec<Vec<u8>> = proof.chunks(192).map(<[u8]>::to_vec).collect();
    snarkflow_circuits::verify_job(&parsed.spec, parsed.seed, parsed.input.as_ref(), &params_dir(), &proofs)
        .ok_or_else(|| anyhow::anyhow!("{} is not verified whole", kind.as_str()))?
        .map_err(|e| anyhow::anyhow!("{e}"))
}

// In the default run (and so in CI) at 5 jobs and 20 s of kills: ~3-4 min on the 2-core VM.
// `just chaos` runs a longer one.
#[ignore = "slow tier: minutes of SIGKILLs and restarts (`just test-slow`, `just chaos`)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos() {
    snarkflow_e2e::init_test_logging();
    filecoin_env();
    let jobs = env_or("SNARKFLOW_CHAOS_JOBS", 5) as usize;
    let chaos_for = Duration::from_secs(env_or("SNARKFLOW_CHAOS_SECS", 20));
    let t0 = Instant::now();
    let phase = |what: &str| println!("chaos: {what} at {:.0} s", t0.elapsed().as_secs_f64());
    for spec in [
        snarkflow_circuits::circuit("porep-c2-2KiB"),
        snarkflow_circuits::circuit("window-post-2KiB"),
        snarkflow_circuits::circuit("winning-post-2KiB"),
    ] {
        tokio::task::spawn_blocking(move || {
            ParamStore::new(params_dir(), snarkflow_circuits::catalog()).generate(&spec, false)
        })
        .await
        .unwrap()
        .unwrap();
    }
    let requests = tokio::task::spawn_blocking(move || requests(jobs)).await.unwrap();

    phase("parameters and inputs ready");
    let cluster = Arc::new(Mutex::new(NatsCluster::start(3)));
    let url = cluster.lock().unwrap().url();
    let nats = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["--nats-url", &url, "--nats-replicas", "3", "--ack-wait-secs", "3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let listen = format!("127.0.0.1:{}", free_port());
    let base = format!("http://{listen}");
    let params = params_dir().display().to_string();
    // a short orphan grace (and so request timeout), so that the input of a submit that failed
    // after storing it is collected within the run
    let mut gateway_args = nats(&[
        "--listen",
        &listen,
        "--params-dir",
        &params,
        "--ledger-pass-secs",
        "2",
        "--request-timeout-secs",
        "30",
        "--orphan-grace-secs",
        "40",
    ]);
    gateway_args.extend(test_gateway_flags());
    let mut gpu_args = gpu_worker_args(&url, "gpu-chaos");
    gpu_args.extend(["--nats-replicas", "3"].map(String::from));
    let logs = tempfile::tempdir().unwrap();
    let gateway = service_bin("e2e-gateway", env!("CARGO_BIN_EXE_e2e-gateway"));
    let synth = service_bin("e2e-synth-worker", env!("CARGO_BIN_EXE_e2e-synth-worker"));
    let gpu = std::env::var_os("SNARKFLOW_CHAOS_GPU_WORKER")
        .map(PathBuf::from)
        .unwrap_or_else(|| service_bin("e2e-gpu-worker", env!("CARGO_BIN_EXE_e2e-gpu-worker")));
    let services = Arc::new(Mutex::new(vec![
        Service::new("gateway", gateway, gateway_args, logs.path()),
        Service::new("synth-1", synth.clone(), nats(&["--worker-id", "synth-1"]), logs.path()),
        Service::new("synth-2", synth, nats(&["--worker-id", "synth-2"]), logs.path()),
        Service::new("gpu-1", gpu, gpu_args, logs.path()),
    ]));
    let http = api_client();

    // the driver: kill something every 1-3 s, bring it back 0.2-1.5 s later
    let stop = tokio_util::sync::CancellationToken::new();
    let driver = {
        let (services, cluster, stop) = (services.clone(), cluster.clone(), stop.clone());
        tokio::spawn(async move {
            let mut kills: HashMap<String, u32> = HashMap::new();
            let mut outage_done = false;
            let started = Instant::now();
            while !stop.is_cancelled() {
                let (pause, victim, down) = {
                    let mut rng = rand::thread_rng();
                    (rng.gen_range(1000..3000), rng.gen_range(0..7), rng.gen_range(200..1500))
                };
                tokio::time::sleep(Duration::from_millis(pause)).await;
                for service in services.lock().unwrap().iter_mut() {
                    if service.supervise() {
                        *kills.entry(format!("{} exited by itself", service.name)).or_default() += 1;
                    }
                }
                if !outage_done && started.elapsed() > Duration::from_secs(8) {
                    // the cluster loses its quorum for a few seconds while submits go on
                    outage_done = true;
                    *kills.entry("nats quorum".into()).or_default() += 1;
                    {
                        let mut c = cluster.lock().unwrap();
                        c.nodes[0].stop();
                        c.nodes[1].stop();
                    }
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    let mut c = cluster.lock().unwrap();
                    c.nodes[0].restart();
                    c.nodes[1].restart();
                    continue;
                }
                if victim < 4 {
                    let name = {
                        let mut s = services.lock().unwrap();
                        s[victim].kill();
                        s[victim].name.clone()
                    };
                    *kills.entry(name).or_default() += 1;
                    tokio::time::sleep(Duration::from_millis(down)).await;
                    services.lock().unwrap()[victim].start();
                } else {
                    let node = victim - 4;
                    cluster.lock().unwrap().nodes[node].stop();
                    *kills.entry(format!("nats node {node}")).or_default() += 1;
                    tokio::time::sleep(Duration::from_millis(down)).await;
                    cluster.lock().unwrap().nodes[node].restart();
                }
            }
            kills
        })
    };

    // the clients: submissions spread over the chaos window (on a schedule: a submit that
    // waited out an outage makes the next ones come sooner). A client retries until the window
    // closes — the chaos lasts `chaos_for`, however long an outage is — and one not accepted by
    // then retries, same key, once every service is back (below).
    let spacing = chaos_for / (jobs as u32).max(1);
    let began = tokio::time::Instant::now();
    let mut submitted: Vec<(usize, Option<String>)> = Vec::new();
    for (n, request) in requests.iter().enumerate() {
        tokio::time::sleep_until(began + spacing * n as u32).await;
        let window_left = (began + chaos_for).saturating_duration_since(tokio::time::Instant::now());
        submitted.push((n, submit(&http, &base, request, window_left.max(Duration::from_secs(2))).await));
    }
    tokio::time::sleep_until(began + chaos_for).await;
    stop.cancel();
    let kills = driver.await.unwrap();
    {
        let mut s = services.lock().unwrap();
        s.iter_mut().for_each(Service::start);
    }
    // the supervisor goes on while the jobs finish
    let supervisor = {
        let services = services.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                for service in services.lock().unwrap().iter_mut() {
                    if service.supervise() {
                        println!("chaos: {} exited by itself after the chaos; restarted", service.name);
                    }
                }
            }
        })
    };

    phase("chaos over, every service back");
    // the clients whose requests the chaos never let in try again (a request that was created
    // but never answered is found by its key: no duplicate)
    for (n, id) in submitted.iter_mut().filter(|(_, id)| id.is_none()) {
        *id = submit(&http, &base, &requests[*n], Duration::from_secs(180)).await;
        println!("chaos: request {n} retried after the chaos: {}", if id.is_some() { "accepted" } else { "refused" });
    }
    // every job ends
    let mut done = 0;
    let mut failed = Vec::new();
    let mut verified = 0;
    let mut lost = Vec::new();
    for (n, id) in &submitted {
        let Some(id) = id else {
            lost.push(format!("request {n}: never accepted"));
            continue;
        };
        // every job should end; 900 s after the chaos is the limit given here
        let job = snarkflow_e2e::wait_job(&http, &base, id, Duration::from_secs(900)).await.ok();
        let Some(job) = job else {
            lost.push(format!("job {id} never finished"));
            print_job_story(logs.path(), id);
            continue;
        };
        match job["state"].as_str() {
            Some("done") => {
                done += 1;
                let proof = http.get(format!("{base}/v1/jobs/{id}/proof")).send().await.unwrap().bytes().await.unwrap();
                match verify(&job, &requests[*n], &proof) {
                    Ok(()) => verified += 1,
                    Err(e) => panic!("job {id} is done but its proof does not verify: {e}"),
                }
            }
            _ => failed.push(format!("{} {id}: {}", job["kind"], job["error"].as_str().unwrap_or("cancelled"))),
        }
    }
    phase("every job ended");
    // a retry with the same key names the same done job: no duplicates (a failed job's key
    // starts a new job by design, so those are not retried here)
    let mut duplicates = 0;
    for (n, id) in &submitted {
        let Some(id) = id else { continue };
        let job = snarkflow_e2e::wait_job(&http, &base, id, Duration::from_secs(60)).await.ok();
        if job.is_some_and(|job| job["state"] == "done") {
            let again = submit(&http, &base, &requests[*n], Duration::from_secs(60)).await;
            if again.as_deref() != Some(id.as_str()) {
                duplicates += 1;
            }
        }
    }
    phase("duplicates checked");
    // nothing of a finished job stays in the object store (the ledger pass collects leftovers)
    let bus = Bus::connect(BusConfig { replicas: 3, ..BusConfig::new(url.clone()) }).await.unwrap();
    // the orphan grace (40 s) and two ledger passes, with room to spare
    let leak_deadline = Instant::now() + Duration::from_secs(90);
    let mut left = bus.object_names().await.unwrap();
    while !left.is_empty() && Instant::now() < leak_deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        left = bus.object_names().await.unwrap();
    }

    phase("object store checked");
    println!("chaos: {jobs} jobs over {} s; kills: {kills:?}", chaos_for.as_secs());
    println!(
        "submitted {} | done {done} | failed {} | lost {} | done proofs verified {verified} | objects left {} | duplicate jobs {duplicates}",
        submitted.len(),
        failed.len(),
        lost.len(),
        left.len()
    );
    for f in &failed {
        println!("  failed: {f}");
    }
    if !lost.is_empty() || !left.is_empty() || !failed.is_empty() {
        println!("service logs kept in {}", logs.keep().display());
    }
    assert!(lost.is_empty(), "lost jobs: {lost:?}");
    // "nothing lost" also holds if every job failed: the chaos may fail a job (a partition whose
    // deliveries the kills used up), but most must prove
    let accepted = submitted.iter().filter(|(_, id)| id.is_some()).count();
    assert!(done > 0 && done * 2 >= accepted, "only {done} of {accepted} accepted jobs were proved: {failed:?}");
    assert_eq!(verified, done, "every done proof verifies");
    assert!(left.is_empty(), "objects left behind: {left:?}");
    assert_eq!(duplicates, 0, "a retried key made another job");
    supervisor.abort();
    drop(services);
}

/// What every service's log says about job `id`, for a job that did not end: the lines naming
/// it, in each log's order, with the last lines around each service's deaths.
fn print_job_story(logs: &Path, id: &str) {
    println!("--- the story of job {id}, from the service logs ---");
    let Ok(entries) = std::fs::read_dir(logs) else { return };
    for entry in entries.flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let name = entry.file_name().to_string_lossy().into_owned();
        for line in text.lines().filter(|l| l.contains(id) || l.contains("ERROR")) {
            println!("{name}: {}", line.chars().take(400).collect::<String>());
        }
    }
    println!("--- end of the story of job {id} ---");
}
