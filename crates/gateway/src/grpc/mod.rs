//! cuzk's gRPC interface (`cuzk.v1.ProvingEngine`), so Curio's `[Cuzk] Address` can point at
//! the gateway unchanged: the same jobs, validation, quotas and errors as the HTTP API
//! ([`crate::jobs`]), behind the messages Curio sends. Curio sends no credentials, so every
//! call acts as one configured tenant; the listener belongs on loopback, a Unix socket or a
//! private network (docs/curio.md).

mod engine;
mod request;
mod status;

use std::path::PathBuf;

use anyhow::Context as _;
use snarkflow_service::tokens::{Principal, Scope};
use snarkflow_wire::Priority;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::auth::Caller;
use crate::{ApiError, AppState};

/// The messages and service generated from `proto/cuzk/v1/proving.proto`.
#[allow(unreachable_pub, clippy::all)]
pub mod pb {
    tonic::include_proto!("cuzk.v1");
}

/// Largest message either way: Curio's client limit (a 32 GiB C1 envelope is ~51 MB).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// Where the gRPC interface listens: `host:port`, or `unix:///path/to.sock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrpcListen {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

impl std::str::FromStr for GrpcListen {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(path) = s.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(format!("{s:?}: a Unix socket is unix:///absolute/path"));
            }
            return Ok(GrpcListen::Unix(PathBuf::from(path)));
        }
        s.parse()
            .map(GrpcListen::Tcp)
            .map_err(|_| format!("{s:?} is neither host:port (an IP address) nor unix:///path"))
    }
}

impl std::fmt::Display for GrpcListen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrpcListen::Tcp(addr) => write!(f, "{addr}"),
            GrpcListen::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

/// The caller every gRPC request acts as: `tenant`, allowed to submit (at any priority: Curio
/// sends WinningPoSt as CRITICAL), read and cancel its own jobs.
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
    state: AppState,
    tenant: String,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let engine = engine::Engine::new(state, grpc_caller(&tenant));
    let service = pb::proving_engine_server::ProvingEngineServer::new(engine)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let router = tonic::transport::Server::builder().add_service(service);
    let stop = shutdown.clone().cancelled_owned();
    match &listen {
        GrpcListen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding the gRPC listener {addr}"))?;
            info!(addr = %listener.local_addr()?, %tenant, "gRPC (cuzk.v1.ProvingEngine) listening, unauthenticated");
            let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
            router.serve_with_incoming_shutdown(incoming, stop).await.context("serving gRPC")?;
        }
        GrpcListen::Unix(path) => {
            // a socket file left by a process that is gone would make bind fail
            if std::fs::symlink_metadata(path).is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt as _;
                m.file_type().is_socket()
            }) {
                std::fs::remove_file(path).with_context(|| format!("removing the stale socket {}", path.display()))?;
            }
            let listener = tokio::net::UnixListener::bind(path)
                .with_context(|| format!("binding the gRPC socket {}", path.display()))?;
            info!(socket = %path.display(), %tenant, "gRPC (cuzk.v1.ProvingEngine) listening, unauthenticated");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_parse() {
        assert_eq!("127.0.0.1:9820".parse::<GrpcListen>().unwrap(), GrpcListen::Tcp("127.0.0.1:9820".parse().unwrap()));
        assert_eq!(
            "unix:///run/curio/cuzk.sock".parse::<GrpcListen>().unwrap(),
            GrpcListen::Unix("/run/curio/cuzk.sock".into())
        );
        assert!("unix://relative.sock".parse::<GrpcListen>().is_err());
        assert!("localhost:9820".parse::<GrpcListen>().unwrap_err().contains("neither"));
    }
}
