//! Harness for end-to-end tests: a real nats-server plus the three services running
//! in-process (each with its own shutdown token), and an HTTP client for the gateway.
//!
//! Layout of the package:
//! - `tests/e2e/`: the suite, one test binary with a module per concern.
//! - `src/bin/`: the three service binaries, for tests that run them as child processes (those
//!   that need process-wide state: a failpoint, a tracing exporter).
//! - `build.rs`: a cuzk gRPC client generated from the gateway's `.proto`, apart from the
//!   server's code, so the tests speak the interface as an outside client would.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Parser;
use serde_json::Value;
use snarkflow_prover::ParamStore;
use snarkflow_testkit::NatsServer;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use snarkflow_testkit::params_dir;

/// Redelivery after this much silence; short so failure tests finish quickly.
pub const TEST_ACK_WAIT_SECS: u64 = 3;

/// One service running in-process.
pub struct Service {
    pub shutdown: CancellationToken,
    handle: JoinHandle<anyhow::Result<()>>,
}

impl Service {
    /// Cancel and wait for a clean stop.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        self.handle.await.context("service panicked")?
    }
}

fn nats_flags(url: &str) -> Vec<String> {
    vec!["--nats-url".into(), url.into(), "--ack-wait-secs".into(), TEST_ACK_WAIT_SECS.to_string()]
}

/// The API tokens file every test gateway reads, and an admin token in it: one per test
/// process.
pub struct TestTokens {
    pub path: std::path::PathBuf,
    pub admin: String,
}

/// [`TestTokens`], created on first use.
pub fn test_tokens() -> &'static TestTokens {
    static TOKENS: std::sync::OnceLock<TestTokens> = std::sync::OnceLock::new();
    TOKENS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tokens directory").keep();
        let path = dir.join("tokens.json");
        let mut file = snarkflow_service::tokens::TokenFile::default();
        let (admin, _) = file
            .create("ops", vec![snarkflow_service::tokens::Scope::Admin], snarkflow_wire::Priority::Critical, 0)
            .expect("admin token");
        file.save(&path).expect("tokens file");
        TestTokens { path, admin }
    })
}

/// Add a token for `tenant` to the test tokens file (the gateways notice within a second).
pub fn add_test_token(
    tenant: &str,
    scopes: &[snarkflow_service::tokens::Scope],
    max_priority: snarkflow_wire::Priority,
) -> String {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_writer = LOCK.lock().expect("tokens lock");
    let path = &test_tokens().path;
    let mut file = snarkflow_service::tokens::TokenFile::load(path).expect("tokens file");
    let (token, _) = file.create(tenant, scopes.to_vec(), max_priority, 0).expect("token");
    file.save(path).expect("tokens file");
    token
}

/// The flags every test gateway gets: the test tokens required, the test kinds accepted, the
/// test parameter cache (verifying keys not checked against the published digests), and a
/// WinningPoSt deadline for a slow machine.
pub fn test_gateway_flags() -> Vec<String> {
    vec![
        "--tokens-file".into(),
        test_tokens().path.display().to_string(),
        "--enable-test-kinds".into(),
        // random test parameters under filecoin-proofs' names: not the published verifying keys
        "--test-params".into(),
        // a WinningPoSt's own deadline is its 30 s epoch; a 2-core test machine proving a first
        // one (shape, parameters) beside other tests' jobs is not held to it
        "--default-deadline".into(),
        "winning-post=600".into(),
    ]
}

/// An HTTP client that sends `token` with every request.
pub fn client_with_token(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).expect("token header");
    headers.insert(reqwest::header::AUTHORIZATION, value);
    reqwest::Client::builder().default_headers(headers).build().expect("http client")
}

/// An HTTP client with the test admin token.
pub fn api_client() -> reqwest::Client {
    client_with_token(&test_tokens().admin)
}

/// Log to the test's captured output (shown for failing tests); `RUST_LOG` filters.
pub fn init_test_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_test_writer()
        .try_init();
}

/// Start a gateway on a free port; returns it and its base URL once `/readyz` answers 200.
pub async fn start_gateway(nats_url: &str) -> anyhow::Result<(Service, String)> {
    start_gateway_with(nats_url, &[]).await
}

/// [`start_gateway`] with extra command-line flags.
pub async fn start_gateway_with(nats_url: &str, extra: &[&str]) -> anyhow::Result<(Service, String)> {
    launch_gateway(nats_url, extra, "http", reqwest::Client::new()).await
}

/// A gateway serving HTTPS with `cert`/`key`; `client` must trust their CA. Returns it and
/// its `https://` base URL once `/readyz` answers 200.
pub async fn start_gateway_https(
    nats_url: &str,
    cert: &std::path::Path,
    key: &std::path::Path,
    client: reqwest::Client,
) -> anyhow::Result<(Service, String)> {
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    launch_gateway(nats_url, &["--tls-cert", &cert, "--tls-key", &key], "https", client).await
}

async fn launch_gateway(
    nats_url: &str,
    extra: &[&str],
    scheme: &str,
    client: reqwest::Client,
) -> anyhow::Result<(Service, String)> {
    // every service touches filecoin-proofs, which reads its parameter directory once per
    // process: point it at the test parameters before any of them can
    filecoin_env();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr: SocketAddr = listener.local_addr()?;
    let mut args = vec!["gateway".to_owned(), "--params-dir".into(), params_dir().display().to_string()];
    args.extend(test_gateway_flags());
    args.extend(nats_flags(nats_url));
    args.extend(extra.iter().map(|s| s.to_string()));
    let config = snarkflow_gateway::Config::try_parse_from(args)?;
    let shutdown = CancellationToken::new();
    let handle = tokio::spawn(snarkflow_gateway::serve(listener, config, shutdown.clone()));
    // a certificate for `localhost`, so HTTPS clients check it by that name
    let host = if scheme == "https" { format!("localhost:{}", addr.port()) } else { addr.to_string() };
    let base = format!("{scheme}://{host}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
            if r.status().is_success() {
                break;
            }
        }
        if handle.is_finished() {
            let result = handle.await.context("gateway panicked")?;
            bail!("gateway stopped before it was ready: {result:?}");
        }
        if Instant::now() > deadline {
            bail!("gateway at {base} not ready within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((Service { shutdown, handle }, base))
}

pub fn start_synth_worker(nats_url: &str, worker_id: &str) -> anyhow::Result<Service> {
    start_synth_worker_with(nats_url, worker_id, &[])
}

/// [`start_synth_worker`] with extra command-line flags.
pub fn start_synth_worker_with(nats_url: &str, worker_id: &str, extra: &[&str]) -> anyhow::Result<Service> {
    filecoin_env();
    let mut args = vec!["synth-worker".to_owned(), "--worker-id".into(), worker_id.into()];
    args.extend(nats_flags(nats_url));
    args.extend(extra.iter().map(|s| s.to_string()));
    let config = snarkflow_synth_worker::Config::try_parse_from(args)?;
    let shutdown = CancellationToken::new();
    let handle = tokio::spawn(snarkflow_synth_worker::run(config, shutdown.clone()));
    Ok(Service { shutdown, handle })
}

/// Arguments for a gpu-worker (in-process or as a child process).
pub fn gpu_worker_args(nats_url: &str, worker_id: &str) -> Vec<String> {
    let mut args = vec![
        "--worker-id".to_owned(),
        worker_id.into(),
        "--params-dir".into(),
        params_dir().display().to_string(),
        "--generate-missing-params".into(),
    ];
    args.extend(nats_flags(nats_url));
    args
}

pub fn start_gpu_worker(nats_url: &str, worker_id: &str) -> anyhow::Result<Service> {
    start_gpu_worker_with(nats_url, worker_id, &[])
}

/// [`start_gpu_worker`] with extra command-line flags.
pub fn start_gpu_worker_with(nats_url: &str, worker_id: &str, extra: &[&str]) -> anyhow::Result<Service> {
    spawn_gpu_worker(gpu_worker_args(nats_url, worker_id), extra)
}

/// A gpu-worker in this process with `args` then `extra` on its command line.
fn spawn_gpu_worker(args: Vec<String>, extra: &[&str]) -> anyhow::Result<Service> {
    filecoin_env();
    let line = std::iter::once("gpu-worker".to_owned()).chain(args).chain(extra.iter().map(|s| s.to_string()));
    let config = snarkflow_gpu_worker::Config::try_parse_from(line)?;
    let shutdown = CancellationToken::new();
    let handle = tokio::spawn(snarkflow_gpu_worker::run(config, shutdown.clone()));
    Ok(Service { shutdown, handle })
}

/// A gpu-worker that reads its parameters from `params` and makes none, with extra flags.
pub fn start_gpu_worker_reading(
    nats_url: &str,
    worker_id: &str,
    params: &std::path::Path,
    extra: &[&str],
) -> anyhow::Result<Service> {
    let mut args =
        vec!["--worker-id".to_owned(), worker_id.into(), "--params-dir".into(), params.display().to_string()];
    args.extend(nats_flags(nats_url));
    spawn_gpu_worker(args, extra)
}

/// Point filecoin-proofs at the test parameter directory. Call first in every test that touches
/// Filecoin code: filecoin-proofs reads its settings once per process, at first use.
pub fn filecoin_env() {
    // test processes set it here, before any Filecoin code has read its settings
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params_dir());
    // many workers of a test on one host: none serves a status endpoint unless its test asks
    // (workers' default is a fixed port each), here and in the processes the tests start
    std::env::set_var("SNARKFLOW_STATUS_LISTEN", "off");
    snarkflow_filecoin::check_parameter_dir(&params_dir()).expect("filecoin-proofs parameter directory");
}

/// A client of cuzk's gRPC interface, generated from the `.proto` (crates/proto) as Curio's is
/// from cuzk's: the tests call through it as an outside client would.
pub use snarkflow_proto::cuzk_v1 as cuzk;

/// A `cuzk.v1.ProvingEngine` client with Curio's message limits.
pub type CuzkClient = cuzk::proving_engine_client::ProvingEngineClient<tonic::transport::Channel>;

fn cuzk_client(channel: tonic::transport::Channel) -> CuzkClient {
    const CURIO_LIMIT: usize = 256 * 1024 * 1024;
    CuzkClient::new(channel).max_decoding_message_size(CURIO_LIMIT).max_encoding_message_size(CURIO_LIMIT)
}

/// Connect to the gRPC interface at `host:port`, plaintext as Curio does.
pub async fn cuzk_tcp(addr: &str) -> anyhow::Result<CuzkClient> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?.connect().await?;
    Ok(cuzk_client(channel))
}

/// Connect to the gRPC interface at `localhost:port` over TLS, trusting `ca`, with a client
/// certificate when `identity` (cert, key; PEM files) is given.
pub async fn cuzk_tls(
    port: u16,
    ca: &std::path::Path,
    identity: Option<(&std::path::Path, &std::path::Path)>,
) -> anyhow::Result<CuzkClient> {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    let mut tls =
        ClientTlsConfig::new().ca_certificate(Certificate::from_pem(std::fs::read(ca)?)).domain_name("localhost");
    if let Some((cert, key)) = identity {
        tls = tls.identity(Identity::from_pem(std::fs::read(cert)?, std::fs::read(key)?));
    }
    let channel = tonic::transport::Endpoint::from_shared(format!("https://localhost:{port}"))?
        .tls_config(tls)?
        .connect()
        .await?;
    Ok(cuzk_client(channel))
}

/// Connect to the gRPC interface on a Unix socket.
pub async fn cuzk_unix(path: &std::path::Path) -> anyhow::Result<CuzkClient> {
    Ok(cuzk_client(unix_channel(path).await?))
}

/// A gRPC channel to the Unix socket at `path` (for clients of other services on it).
pub async fn unix_channel(path: &std::path::Path) -> anyhow::Result<tonic::transport::Channel> {
    let path = path.to_owned();
    let channel = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let path = path.clone();
            async move {
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tokio::net::UnixStream::connect(path).await?))
            }
        }))
        .await?;
    Ok(channel)
}

/// A TCP port free right now on 127.0.0.1 (for a listener given by address, like --grpc-listen).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// A nats-server and one of each service.
pub struct Stack {
    pub nats: NatsServer,
    pub gateway: Option<Service>,
    pub base: String,
    pub synth: Vec<Service>,
    pub gpu: Vec<Service>,
    pub http: reqwest::Client,
}

impl Stack {
    pub async fn start() -> anyhow::Result<Stack> {
        Self::start_with(&[]).await
    }

    /// A stack whose synth-worker gets extra flags (e.g. `--wire-format raw`).
    pub async fn start_with(synth_flags: &[&str]) -> anyhow::Result<Stack> {
        Self::start_full(&[], synth_flags).await
    }

    /// A stack whose gateway gets extra flags (e.g. `--grpc-listen ...`).
    pub async fn start_with_gateway(gateway_flags: &[&str]) -> anyhow::Result<Stack> {
        Self::start_full(gateway_flags, &[]).await
    }

    async fn start_full(gateway_flags: &[&str], synth_flags: &[&str]) -> anyhow::Result<Stack> {
        init_test_logging();
        let nats = NatsServer::start();
        let (gateway, base) = start_gateway_with(&nats.url(), gateway_flags).await?;
        let synth = vec![start_synth_worker_with(&nats.url(), "synth-1", synth_flags)?];
        let gpu = vec![start_gpu_worker(&nats.url(), "gpu-1")?];
        Ok(Stack { nats, gateway: Some(gateway), base, synth, gpu, http: api_client() })
    }

    pub async fn post_job(&self, body: &Value) -> anyhow::Result<(u16, Value)> {
        let r = self.http.post(format!("{}/v1/jobs", self.base)).json(body).send().await?;
        Ok((r.status().as_u16(), r.json().await?))
    }

    pub async fn submit(&self, body: &Value) -> anyhow::Result<String> {
        let (status, v) = self.post_job(body).await?;
        if status != 202 {
            bail!("submit answered {status}: {v}");
        }
        Ok(v["id"].as_str().context("no id")?.to_owned())
    }

    pub async fn job(&self, id: &str) -> anyhow::Result<Value> {
        Ok(self.http.get(format!("{}/v1/jobs/{id}", self.base)).send().await?.error_for_status()?.json().await?)
    }

    /// Poll until the job is terminal; returns its view.
    pub async fn wait_finished(&self, id: &str, timeout: Duration) -> anyhow::Result<Value> {
        wait_job(&self.http, &self.base, id, timeout).await
    }

    pub async fn proof(&self, id: &str) -> anyhow::Result<(u16, Vec<u8>)> {
        let r = self.http.get(format!("{}/v1/jobs/{id}/proof", self.base)).send().await?;
        Ok((r.status().as_u16(), r.bytes().await?.to_vec()))
    }
}

/// Poll the gateway at `base` until job `id` is done, failed or cancelled; returns its view.
/// A request that fails meanwhile (the gateway or NATS restarting) is retried.
pub async fn wait_job(http: &reqwest::Client, base: &str, id: &str, timeout: Duration) -> anyhow::Result<Value> {
    let deadline = Instant::now() + timeout;
    let mut last = Value::Null;
    loop {
        if let Ok(r) = http.get(format!("{base}/v1/jobs/{id}")).send().await {
            if let Ok(job) = r.json::<Value>().await {
                if matches!(job["state"].as_str(), Some("done" | "failed" | "cancelled")) {
                    return Ok(job);
                }
                last = job;
            }
        }
        if Instant::now() > deadline {
            bail!("job {id} not finished within {timeout:?}: {last}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Check a job's concatenated proof independently of the services: every 192-byte chunk must
/// verify against the parameter directory's verifying key with public inputs recomputed
/// natively from the job's circuit and seed.
pub fn verify_job_proof(job: &Value, proof: &[u8]) -> anyhow::Result<()> {
    let spec = snarkflow_circuits::parse_circuit_id(job["circuit_id"].as_str().context("circuit_id")?)
        .context("circuit id")?;
    let seed = job["seed"].as_u64().context("seed")?;
    let total = job["partitions"]["total"].as_u64().context("total")? as usize;
    if proof.len() != total * 192 {
        bail!("proof has {} bytes, expected {} partitions × 192", proof.len(), total);
    }
    let params = ParamStore::new(params_dir(), snarkflow_circuits::catalog()).get(&spec, false)?;
    let inputs = snarkflow_circuits::public_inputs(&spec, seed, total as u32, None)?;
    for (i, (chunk, inputs)) in proof.chunks(192).zip(&inputs).enumerate() {
        let p = bellperson::groth16::Proof::<blstrs::Bls12>::read(chunk)?;
        if !snarkflow_prover::verify(&params.pvk, &p, inputs) {
            bail!("partition {i} does not verify");
        }
    }
    Ok(())
}
