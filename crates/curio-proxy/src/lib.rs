//! `snarkflow curio-proxy`: Curio's cuzk interface on the Curio host, forwarded to snarkflow
//! gateways across the network.
//!
//! Curio dials one address in plaintext with no credentials (its `[Cuzk] Address`). The proxy
//! listens there — a Unix socket whose file mode says who may connect, or a loopback port —
//! and serves `cuzk.v1.ProvingEngine` as cuzk does; each call goes on to a gateway over mutual
//! TLS (the proxy's client certificate) with the proxy's API token, so the gateways' gRPC ports
//! never take an unauthenticated call.
//!
//! Several gateways: a call goes to the one that answered last, and on to the next when that
//! one cannot be reached or says it is unavailable, as long as the call is safe to send again:
//! reads (`AwaitProof`, `GetStatus`, `GetMetrics`), cancels, parameter loads and drops, and a
//! `SubmitProof` or `Prove` that carries a `request_id` (the gateways take it as the job's
//! idempotency key, so a second gateway finds the job the first one recorded instead of
//! proving it twice). A `Prove` whose gateway dies while it waits for the proof is sent to the
//! next gateway and waits there for the same job. A submit without a `request_id` is never
//! sent twice: its error goes back to Curio.
//!
//! Module map: `lib.rs` the flags, [`run`] and the forwarding; the generated messages and
//! services in [`pb`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use snarkflow_service::{parse_mode, Listen};
use tokio_util::sync::CancellationToken;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Request, Response, Status};
use tracing::{info, warn};

/// The messages and services generated from `crates/proto/proto/cuzk/v1/proving.proto`.
pub use snarkflow_proto::cuzk_v1 as pb;

use pb::proving_engine_client::ProvingEngineClient;
use pb::proving_engine_server::{ProvingEngine, ProvingEngineServer};

/// Largest message either way: Curio's own limit (a 32 GiB C1 envelope is ~51 MB).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// `snarkflow curio-proxy`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ProxyArgs {
    /// Where Curio connects (its `[Cuzk] Address`): `unix:///path` or a loopback `host:port`.
    #[arg(long, env = "SNARKFLOW_PROXY_LISTEN", default_value = "unix:///run/snarkflow/cuzk.sock")]
    pub listen: Listen,
    /// File mode of the Unix socket, octal: 660 lets the proxy's user and group (put Curio's
    /// user in it) connect, and nobody else.
    #[arg(long, env = "SNARKFLOW_PROXY_SOCKET_MODE", default_value = "660", value_parser = parse_mode)]
    pub socket_mode: u32,
    /// The gateways' gRPC addresses, comma-separated, most preferred first
    /// (`https://gw-a.internal:9820,https://gw-b.internal:9820`; `http://` only for a test).
    #[arg(long, env = "SNARKFLOW_PROXY_GATEWAYS", value_delimiter = ',', required = true)]
    pub gateways: Vec<String>,
    /// The CA (PEM) that signed the gateways' certificates (required for `https://` gateways).
    #[arg(long, env = "SNARKFLOW_PROXY_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// The proxy's client certificate (PEM), for gateways that require mutual TLS.
    #[arg(long, env = "SNARKFLOW_PROXY_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, env = "SNARKFLOW_PROXY_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// A file holding the API token every call carries (`snarkflow admin token create
    /// --scopes submit,read,cancel --max-priority critical`).
    #[arg(long, env = "SNARKFLOW_PROXY_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// Seconds to wait for a gateway's connection before trying the next.
    #[arg(long, env = "SNARKFLOW_PROXY_CONNECT_TIMEOUT_SECS", default_value_t = 5)]
    pub connect_timeout_secs: u64,
    /// Largest gRPC message either way, in bytes.
    #[arg(long, env = "SNARKFLOW_PROXY_MAX_MESSAGE_BYTES", default_value_t = MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
}

/// Serve Curio on `args.listen` until `shutdown`, forwarding to the gateways.
pub async fn run(args: ProxyArgs, shutdown: CancellationToken) -> anyhow::Result<()> {
    let proxy = Proxy::new(&args)?;
    let service = ProvingEngineServer::new(proxy)
        .max_decoding_message_size(args.max_message_bytes)
        .max_encoding_message_size(args.max_message_bytes);
    let router = tonic::transport::Server::builder().add_service(service);
    let stop = shutdown.cancelled_owned();
    match &args.listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
            info!(addr = %listener.local_addr()?, gateways = %args.gateways.join(","), "curio-proxy listening");
            let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
            router.serve_with_incoming_shutdown(incoming, stop).await.context("serving gRPC")?;
        }
        Listen::Unix(path) => {
            let listener = snarkflow_service::bind_socket(path, args.socket_mode)?;
            info!(socket = %path.display(), mode = format!("{:o}", args.socket_mode), gateways = %args.gateways.join(","), "curio-proxy listening");
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
            let served = router.serve_with_incoming_shutdown(incoming, stop).await;
            let _ = std::fs::remove_file(path);
            served.context("serving gRPC")?;
        }
    }
    Ok(())
}

/// [`run`] until SIGINT or SIGTERM (what `snarkflow curio-proxy` does).
pub async fn run_until_signal(args: ProxyArgs) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let stop = shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        stop.cancel();
    });
    run(args, shutdown).await
}

/// The forwarding service.
#[derive(Clone)]
struct Proxy {
    upstreams: Arc<Vec<Upstream>>,
    /// The upstream that answered last: calls start there.
    preferred: Arc<AtomicUsize>,
    /// `Bearer <token>`, when a token file is configured.
    authorization: Option<Arc<TokenFile>>,
}

struct Upstream {
    address: String,
    client: ProvingEngineClient<Channel>,
}

impl Proxy {
    fn new(args: &ProxyArgs) -> anyhow::Result<Proxy> {
        anyhow::ensure!(!args.gateways.is_empty(), "--gateways names no gateway");
        let read = |p: &PathBuf| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        let mut tls = ClientTlsConfig::new();
        if let Some(ca) = &args.tls_ca {
            tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
        } else if args.gateways.iter().any(|g| g.starts_with("https://")) {
            anyhow::bail!("--tls-ca is required: the CA that signed the gateways' certificates");
        }
        if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        let mut upstreams = Vec::new();
        for address in &args.gateways {
            let mut endpoint = Endpoint::from_shared(address.clone())
                .with_context(|| format!("{address:?} is not a gateway address such as https://gw-a.internal:9820"))?
                .connect_timeout(Duration::from_secs(args.connect_timeout_secs.max(1)))
                .http2_keep_alive_interval(Duration::from_secs(60))
                .keep_alive_while_idle(true);
            if address.starts_with("https://") {
                endpoint = endpoint.tls_config(tls.clone()).context("the TLS settings")?;
            } else {
                warn!(gateway = %address, "a gateway without TLS: for tests only");
            }
            let client = ProvingEngineClient::new(endpoint.connect_lazy())
                .max_decoding_message_size(args.max_message_bytes)
                .max_encoding_message_size(args.max_message_bytes);
            upstreams.push(Upstream { address: address.clone(), client });
        }
        let authorization = match &args.token_file {
            Some(path) => Some(Arc::new(TokenFile::open(path.clone())?)),
            None => None,
        };
        Ok(Proxy { upstreams: Arc::new(upstreams), preferred: Arc::new(AtomicUsize::new(0)), authorization })
    }

    /// Send `message` with `call` to the preferred gateway, and on to the others while the
    /// failure is the gateway's unavailability and `retry` allows sending it again.
    async fn forward<M, R, F, Fut>(
        &self,
        method: &'static str,
        message: M,
        retry: bool,
        call: F,
    ) -> Result<Response<R>, Status>
    where
        M: Clone,
        F: Fn(ProvingEngineClient<Channel>, Request<M>) -> Fut,
        Fut: std::future::Future<Output = Result<Response<R>, Status>>,
    {
        let n = self.upstreams.len();
        let first = self.preferred.load(Ordering::Relaxed) % n;
        let mut last = Status::unavailable("no gateway");
        for i in 0..n {
            let at = (first + i) % n;
            let upstream = &self.upstreams[at];
            let mut request = Request::new(message.clone());
            if let Some(token) = &self.authorization {
                request.metadata_mut().insert("authorization", token.header());
            }
            match call(upstream.client.clone(), request).await {
                Ok(response) => {
                    self.preferred.store(at, Ordering::Relaxed);
                    return Ok(response);
                }
                Err(status) if unavailable(&status) && retry && i + 1 < n => {
                    warn!(method, gateway = %upstream.address, error = %status.message(), "gateway unavailable; trying the next");
                    last = status;
                }
                Err(status) => return Err(status),
            }
        }
        Err(last)
    }
}

/// The token file, read again whenever it changes: a token rotated on disk (`snarkflow admin
/// token create`, the new one written over the file, then the old one revoked) is sent from the
/// next call on, without a restart that would cut Curio's calls in flight.
struct TokenFile {
    path: PathBuf,
    current: std::sync::Mutex<ReadToken>,
}

/// A file's modification time and length: it changed when they do.
type Stamp = Option<(std::time::SystemTime, u64)>;

/// The token file's stamp when last read, and the header made from it.
type ReadToken = (Stamp, MetadataValue<Ascii>);

impl TokenFile {
    fn open(path: PathBuf) -> anyhow::Result<TokenFile> {
        let (stamp, header) = read_token(&path)?;
        Ok(TokenFile { path, current: std::sync::Mutex::new((stamp, header)) })
    }

    /// `Bearer <token>` as the file says now; the last good one while the file is unreadable
    /// or being rewritten (a warning says so).
    fn header(&self) -> MetadataValue<Ascii> {
        let mut current = self.current.lock().expect("token lock");
        if stamp_of(&self.path) != current.0 {
            match read_token(&self.path) {
                Ok(fresh) => {
                    info!(path = %self.path.display(), "API token file changed: sending the new token");
                    *current = fresh;
                }
                Err(e) => {
                    warn!(path = %self.path.display(), error = %format!("{e:#}"), "token file unreadable; sending the last token read")
                }
            }
        }
        current.1.clone()
    }
}

fn stamp_of(path: &std::path::Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn read_token(path: &std::path::Path) -> anyhow::Result<ReadToken> {
    let stamp = stamp_of(path);
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let token = text.lines().map(str::trim).find(|l| !l.is_empty()).context("the token file is empty")?;
    let header = format!("Bearer {token}").parse().context("the token is not a valid header value")?;
    Ok((stamp, header))
}

/// Whether a call failed because its gateway could not take it (not reached, gone mid-call,
/// shutting down): another gateway may.
fn unavailable(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable => true,
        // a connection reset mid-call surfaces as an h2 or transport error
        Code::Unknown | Code::Internal => {
            let m = status.message();
            m.contains("transport error") || m.contains("h2 protocol error") || m.contains("connection")
        }
        _ => false,
    }
}

/// A submit may go to a second gateway only when the gateways can tell it is the same job.
fn has_request_id(submit: Option<&pb::SubmitProofRequest>) -> bool {
    submit.is_some_and(|s| !s.request_id.is_empty())
}

#[tonic::async_trait]
impl ProvingEngine for Proxy {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let message = request.into_inner();
        let retry = has_request_id(Some(&message));
        self.forward("SubmitProof", message, retry, |mut c, r| async move { c.submit_proof(r).await }).await
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        self.forward("AwaitProof", request.into_inner(), true, |mut c, r| async move { c.await_proof(r).await }).await
    }

    async fn prove(&self, request: Request<pb::ProveRequest>) -> Result<Response<pb::ProveResponse>, Status> {
        let message = request.into_inner();
        let retry = has_request_id(message.submit.as_ref());
        self.forward("Prove", message, retry, |mut c, r| async move { c.prove(r).await }).await
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        self.forward("CancelProof", request.into_inner(), true, |mut c, r| async move { c.cancel_proof(r).await }).await
    }

    async fn get_status(
        &self,
        request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        self.forward("GetStatus", request.into_inner(), true, |mut c, r| async move { c.get_status(r).await }).await
    }

    async fn get_metrics(
        &self,
        request: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        self.forward("GetMetrics", request.into_inner(), true, |mut c, r| async move { c.get_metrics(r).await }).await
    }

    async fn preload_srs(
        &self,
        request: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        self.forward("PreloadSRS", request.into_inner(), true, |mut c, r| async move { c.preload_srs(r).await }).await
    }

    async fn evict_srs(&self, request: Request<pb::EvictSrsRequest>) -> Result<Response<pb::EvictSrsResponse>, Status> {
        self.forward("EvictSRS", request.into_inner(), true, |mut c, r| async move { c.evict_srs(r).await }).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unavailability_moves_a_call_to_the_next_gateway() {
        assert!(unavailable(&Status::unavailable("connection refused")));
        assert!(unavailable(&Status::unknown("transport error")));
        assert!(!unavailable(&Status::invalid_argument("bad request")));
        assert!(!unavailable(&Status::unauthenticated("no token")));
        assert!(!unavailable(&Status::deadline_exceeded("slow")));
    }

    #[test]
    fn a_token_rewritten_on_disk_is_sent_from_the_next_call_and_a_broken_file_keeps_the_last() {
        let dir = std::env::temp_dir().join(format!("sf-proxy-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "\nold-token\n").unwrap();
        let file = TokenFile::open(path.clone()).unwrap();
        assert_eq!(file.header(), "Bearer old-token");
        // a different length: changed even within the file system's timestamp granularity
        std::fs::write(&path, "the-new-token\n").unwrap();
        assert_eq!(file.header(), "Bearer the-new-token");
        std::fs::write(&path, "\n").unwrap();
        assert_eq!(file.header(), "Bearer the-new-token", "an empty file keeps the last token");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_submit_goes_to_a_second_gateway_only_with_a_request_id() {
        let mut submit = pb::SubmitProofRequest::default();
        assert!(!has_request_id(Some(&submit)));
        submit.request_id = "porep-1000-7".into();
        assert!(has_request_id(Some(&submit)));
        assert!(!has_request_id(None));
    }
}
