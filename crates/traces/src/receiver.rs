//! A minimal OTLP/HTTP trace receiver: `POST /v1/traces` with protobuf or JSON bodies.
//! Received spans are kept in memory and, optionally, appended to a file as OTLP/JSON lines
//! (readable by `snarkflow waterfall --otlp-file`).

use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;

use crate::{otlp, Span};

/// Spans received so far.
#[derive(Debug, Clone, Default)]
pub struct Collected(Arc<Mutex<Vec<Span>>>);

impl Collected {
    pub fn spans(&self) -> Vec<Span> {
        self.0.lock().expect("collected spans lock").clone()
    }
}

#[derive(Clone)]
struct ReceiverState {
    collected: Collected,
    out: Option<Arc<Mutex<std::fs::File>>>,
}

async fn traces(State(state): State<ReceiverState>, headers: HeaderMap, body: Bytes) -> (StatusCode, &'static str) {
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let spans = if json {
        std::str::from_utf8(&body).map_err(anyhow::Error::from).and_then(otlp::parse_json)
    } else {
        otlp::decode_protobuf(&body)
    };
    match spans {
        Ok(spans) => {
            if let Some(out) = &state.out {
                let mut file = out.lock().expect("trace file lock");
                if let Err(e) = writeln!(file, "{}", otlp::to_json_line(&spans)) {
                    tracing::warn!(error = %e, "writing received spans failed");
                }
            }
            state.collected.0.lock().expect("collected spans lock").extend(spans);
            (StatusCode::OK, "")
        }
        Err(e) => {
            tracing::warn!(error = %e, "rejecting an undecodable OTLP request");
            (StatusCode::BAD_REQUEST, "undecodable OTLP trace request")
        }
    }
}

/// The OTLP/gRPC trace service.
struct GrpcTraces(Collected);

#[tonic::async_trait]
impl opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceService for GrpcTraces {
    async fn export(
        &self,
        request: tonic::Request<opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest>,
    ) -> Result<
        tonic::Response<opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse>,
        tonic::Status,
    > {
        use prost::Message as _;
        let spans = otlp::decode_protobuf(&request.into_inner().encode_to_vec())
            .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?;
        self.0 .0.lock().expect("collected spans lock").extend(spans);
        Ok(tonic::Response::new(Default::default()))
    }
}

/// Serve an OTLP/gRPC receiver on `listener` until `shutdown` resolves.
pub async fn serve_grpc(
    listener: tokio::net::TcpListener,
    collected: Collected,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceServiceServer;
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(GrpcTraces(collected)))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}

/// Serve the receiver on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    collected: Collected,
    out: Option<PathBuf>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let out = match out {
        Some(path) => Some(Arc::new(Mutex::new(std::fs::OpenOptions::new().create(true).append(true).open(path)?))),
        None => None,
    };
    let app = Router::new().route("/v1/traces", post(traces)).with_state(ReceiverState { collected, out });
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    Ok(())
}
