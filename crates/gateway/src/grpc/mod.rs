//! cuzk's gRPC interface (`cuzk.v1.ProvingEngine`), so Curio's `[Cuzk] Address` can point at
//! the gateway unchanged: the same jobs, validation, quotas and errors as the HTTP API
//! (`crate::jobs`), behind the messages Curio sends. Curio sends no credentials, so a call
//! without a token acts as one configured tenant, and the listener is private by construction:
//! a Unix socket whose file mode says who may connect, or loopback / a private network; a
//! token in the call's metadata (`authorization: Bearer …`, the HTTP API's tokens) acts as its
//! own tenant, and `--grpc-require-token` makes one mandatory. The control RPCs (PreloadSRS,
//! EvictSRS: every gpu-worker loads or drops parameters) are off unless enabled, and only take
//! circuits this gateway serves. Callers are known, and room made for their messages, before a
//! message is read (`door.rs`); streams per connection and message sizes are bounded
//! (docs/curio.md, docs/security.md).

mod door;
mod engine;
mod request;
mod status;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::builder::BoolishValueParser;
use snarkflow_service::tokens::{Principal, Scope};
use snarkflow_wire::Priority;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};
use tracing::info;

use crate::auth::Caller;
use crate::{ApiError, AppState};

/// The messages and service generated from `crates/proto/proto/cuzk/v1/proving.proto`.
pub use snarkflow_proto::cuzk_v1 as pb;
use snarkflow_proto::FILE_DESCRIPTOR_SET;

/// Largest message either way: Curio's client limit (a 32 GiB C1 envelope is ~51 MB).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
/// Calls in flight on one connection (HTTP/2 streams): Curio's `MaxPending` is ~10 per node.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 32;
/// Bytes of request messages read at once over all connections, one caller at most half of it
/// (the door, `door.rs`): sixteen 256 MiB messages, or ~80 32 GiB C1 envelopes.
pub const MAX_BODY_MEMORY: u64 = 4 << 30;
/// Longest a request's message may take to arrive, from the call's start: a 256 MiB message
/// at 10 Mbit/s.
pub const BODY_TIMEOUT_SECS: u64 = 300;
/// HTTP/2 pings on an idle connection, so a load balancer does not drop a `Prove` waiting
/// out a 32 GiB job (Curio's ProveTimeout is 30 minutes).
const KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(60);

/// The gRPC listener's flags.
#[derive(Debug, Clone, clap::Args)]
pub struct GrpcArgs {
    /// Serve cuzk's gRPC interface (`cuzk.v1.ProvingEngine`, what Curio's `[Cuzk] Address`
    /// points at) on `unix:///path` (a local Curio: the socket's file mode decides who may
    /// connect) or `host:port` (loopback or a private network: a call without a token is
    /// not authenticated). Off when unset.
    #[arg(id = "grpc_listen", long = "grpc-listen", env = "SNARKFLOW_GRPC_LISTEN")]
    pub listen: Option<GrpcListen>,
    /// The tenant a call without a token acts as (its jobs, its quotas).
    #[arg(id = "grpc_tenant", long = "grpc-tenant", env = "SNARKFLOW_GRPC_TENANT", default_value = "curio")]
    pub tenant: String,
    /// File mode of the Unix socket, octal: 660 lets the gateway's user and group (put
    /// Curio's user in it) connect, and nobody else.
    #[arg(id = "grpc_socket_mode", long = "grpc-socket-mode", env = "SNARKFLOW_GRPC_SOCKET_MODE", default_value = "660", value_parser = parse_mode)]
    pub socket_mode: u32,
    /// Refuse calls without `authorization: Bearer <token>` metadata (a token of the HTTP
    /// API's tokens file; the call acts as its tenant and scopes).
    #[arg(id = "grpc_require_token", long = "grpc-require-token", env = "SNARKFLOW_GRPC_REQUIRE_TOKEN", value_parser = BoolishValueParser::new())]
    pub require_token: bool,
    /// Serve PreloadSRS and EvictSRS (every gpu-worker loads or drops a circuit's
    /// parameters). Curio never calls them; a call with a token also needs the admin scope.
    #[arg(id = "grpc_enable_control", long = "grpc-enable-control", env = "SNARKFLOW_GRPC_ENABLE_CONTROL", value_parser = BoolishValueParser::new())]
    pub enable_control: bool,
    /// Serve the TCP listener over TLS with this certificate (PEM; with --grpc-tls-key).
    #[arg(id = "grpc_tls_cert", long = "grpc-tls-cert", env = "SNARKFLOW_GRPC_TLS_CERT", requires = "grpc_tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --grpc-tls-cert (PEM).
    #[arg(id = "grpc_tls_key", long = "grpc-tls-key", env = "SNARKFLOW_GRPC_TLS_KEY", requires = "grpc_tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// With TLS, accept only clients whose certificate this CA (PEM) signed (mutual TLS).
    #[arg(
        id = "grpc_tls_client_ca",
        long = "grpc-tls-client-ca",
        env = "SNARKFLOW_GRPC_TLS_CLIENT_CA",
        requires = "grpc_tls_cert"
    )]
    pub tls_client_ca: Option<PathBuf>,
    /// Largest gRPC message either way, in bytes; larger ones are RESOURCE_EXHAUSTED.
    #[arg(id = "grpc_max_message_bytes", long = "grpc-max-message-bytes", env = "SNARKFLOW_GRPC_MAX_MESSAGE_BYTES", default_value_t = MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// Calls in flight on one connection (HTTP/2 concurrent streams).
    #[arg(id = "grpc_max_streams_per_connection", long = "grpc-max-streams-per-connection", env = "SNARKFLOW_GRPC_MAX_STREAMS_PER_CONNECTION", default_value_t = MAX_STREAMS_PER_CONNECTION)]
    pub max_streams_per_connection: u32,
    /// Bytes of request messages being read at once over all connections; one caller (a
    /// token, or the listener's tenant) at most half. A message waits for room before it is
    /// read; the room is given back once it is (a `Prove` waiting for its job holds none).
    #[arg(id = "grpc_max_body_memory", long = "grpc-max-body-memory", env = "SNARKFLOW_GRPC_MAX_BODY_MEMORY", default_value_t = MAX_BODY_MEMORY)]
    pub max_body_memory: u64,
    /// Seconds a call's request message may take to arrive whole, from the call's start;
    /// slower ones are refused (DEADLINE_EXCEEDED) and their room given back.
    #[arg(id = "grpc_body_timeout_secs", long = "grpc-body-timeout-secs", env = "SNARKFLOW_GRPC_BODY_TIMEOUT_SECS", default_value_t = BODY_TIMEOUT_SECS)]
    pub body_timeout_secs: u64,
}

/// Where the gRPC interface listens: `host:port`, or `unix:///path/to.sock`.
pub type GrpcListen = snarkflow_service::Listen;
use snarkflow_service::parse_mode;
pub use snarkflow_service::BadListen;

/// The caller a call without a token acts as: `tenant`, allowed to submit (at any priority:
/// Curio sends WinningPoSt as CRITICAL), read and cancel its own jobs.
fn grpc_caller(tenant: &str) -> Caller {
    Caller(Principal {
        token_id: "grpc".into(),
        tenant: tenant.to_owned(),
        scopes: vec![Scope::Submit, Scope::Read, Scope::Cancel],
        max_priority: Priority::Critical,
    })
}

/// Serve `cuzk.v1.ProvingEngine` on `listen` until `shutdown`.
pub(crate) async fn serve(
    listen: GrpcListen,
    args: GrpcArgs,
    state: AppState,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let door = door::Door::new(
        state.auth.clone(),
        (!args.require_token).then(|| grpc_caller(&args.tenant)),
        args.max_message_bytes,
        args.max_body_memory,
        std::time::Duration::from_secs(args.body_timeout_secs.max(1)),
    );
    let engine = engine::Engine::new(state, &args);
    let service = pb::proving_engine_server::ProvingEngineServer::new(engine)
        .max_decoding_message_size(args.max_message_bytes)
        .max_encoding_message_size(args.max_message_bytes);
    // both reflection versions: v1alpha is what Python's grpcio-reflection and older tools ask
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()
        .context("gRPC server reflection")?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .context("gRPC server reflection (v1alpha)")?;
    let mut builder = tonic::transport::Server::builder();
    let tls = match (&args.tls_cert, &args.tls_key, &listen) {
        (Some(cert), Some(key), GrpcListen::Tcp(_)) => {
            let read = |p: &PathBuf| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
            let mut config = ServerTlsConfig::new().identity(Identity::from_pem(read(cert)?, read(key)?));
            if let Some(ca) = &args.tls_client_ca {
                config = config.client_ca_root(Certificate::from_pem(read(ca)?));
            }
            builder = builder.tls_config(config).context("the gRPC TLS settings")?;
            if args.tls_client_ca.is_some() {
                "mutual TLS"
            } else {
                "TLS"
            }
        }
        (Some(_), _, GrpcListen::Unix(_)) => {
            anyhow::bail!("--grpc-tls-cert is for a TCP listener; a Unix socket is protected by its file mode")
        }
        _ => "plaintext",
    };
    let router = builder
        .max_concurrent_streams(Some(args.max_streams_per_connection.max(1)))
        .concurrency_limit_per_connection(args.max_streams_per_connection.max(1) as usize)
        .http2_keepalive_interval(Some(KEEPALIVE))
        .http2_keepalive_timeout(Some(KEEPALIVE / 3))
        .tcp_keepalive(Some(KEEPALIVE))
        // before every service, reflection included: who calls, and room for the message
        .layer(door::DoorLayer(std::sync::Arc::new(door)))
        .add_service(service)
        .add_service(reflection)
        .add_service(reflection_v1alpha);
    let stop = shutdown.clone().cancelled_owned();
    let (tenant, require_token, control) = (&args.tenant, args.require_token, args.enable_control);
    match &listen {
        GrpcListen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding the gRPC listener {addr}"))?;
            info!(addr = %listener.local_addr()?, %tenant, require_token, control, tls, "gRPC (cuzk.v1.ProvingEngine) listening");
            let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
            router.serve_with_incoming_shutdown(incoming, stop).await.context("serving gRPC")?;
        }
        GrpcListen::Unix(path) => {
            let listener = snarkflow_service::bind_socket(path, args.socket_mode)?;
            info!(socket = %path.display(), mode = format!("{:o}", args.socket_mode), %tenant, require_token, control, "gRPC (cuzk.v1.ProvingEngine) listening");
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
            let served = router.serve_with_incoming_shutdown(incoming, stop).await;
            let _ = std::fs::remove_file(path);
            served.context("serving gRPC")?;
        }
    }
    Ok(())
}

/// The HTTP API's error as a gRPC status, with the message the HTTP API gives.
impl From<ApiError> for tonic::Status {
    fn from(e: ApiError) -> Self {
        use tonic::Code;
        let code = match &e {
            ApiError::BadRequest(_) | ApiError::Invalid(_) => Code::InvalidArgument,
            ApiError::TooLarge(_) | ApiError::TooManyRequests { .. } | ApiError::StorageFull(_) => {
                Code::ResourceExhausted
            }
            ApiError::NotFound(_) => Code::NotFound,
            ApiError::Unauthorized(_) => Code::Unauthenticated,
            ApiError::Forbidden(_) => Code::PermissionDenied,
            ApiError::Timeout(_) => Code::DeadlineExceeded,
            ApiError::NotServed(_) | ApiError::Conflict(_) => Code::FailedPrecondition,
            ApiError::KeyReused(_) => Code::AlreadyExists,
            ApiError::Unavailable(_) => Code::Unavailable,
            ApiError::Internal(_) => Code::Internal,
        };
        tonic::Status::new(code, e.public_message())
    }
}
