//! The snarkflow gateway: HTTP API in front of the proving pipeline.
//!
//! It validates and records jobs in the job ledger (a JetStream KV bucket), publishes one
//! synthesis task per partition, and applies the workers' events to the ledger until a job is
//! done, failed or cancelled. It holds no state of its own: restart it any time.
//!
//! Entry points: [`run`] (what `main` calls), [`serve`] (the same on a bound listener, for
//! tests) and [`app`] (the router, for handler tests without a socket).

mod auth;
mod config;
mod consume;
mod deadletter;
mod error;
mod event_loop;
mod events;
mod fanout;
mod finish;
pub mod grpc;
mod index;
mod jobs;
mod ledger_room;
mod metrics;
mod quota;
mod routes;
mod sweep;
mod validate;
mod view;

use anyhow::Context as _;
pub use auth::{Auth, TokenStore, ANONYMOUS};
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
pub use config::Config;
pub use error::ApiError;
use hyper_util::rt::TokioTimer;
pub use index::{maintain as maintain_index, JobSummary, LedgerIndex};
pub use ledger_room::LedgerRoom;
pub use metrics::Metrics;
pub use quota::{QuotaLimits, Quotas};
use snarkflow_bus::{Bus, Ledger};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
pub use validate::{validate, Policy, ValidJob};
pub use view::JobView;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub bus: Bus,
    pub ledger: Ledger,
    pub metrics: Metrics,
    pub max_body_bytes: usize,
    pub auth: Auth,
    pub quotas: Quotas,
    pub policy: std::sync::Arc<Policy>,
    /// Longest a request may take, body included.
    pub request_timeout: std::time::Duration,
    /// Whether the event loop is applying events (the gateway is not ready while it is not:
    /// no job could finish).
    pub event_loop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Every job in summary, kept current by a ledger watch (empty and not ready: read the
    /// ledger instead).
    pub index: LedgerIndex,
    /// Room in the job ledger: new jobs wait while the jobs in flight need it.
    pub ledger_room: LedgerRoom,
    /// Submits handled at once; more wait, holding no body yet (bounds what bodies in flight
    /// take: this many times `max_body_bytes`).
    pub max_concurrent_submits: usize,
    /// Request bodies parsed and validated at once, on blocking threads (a 32 GiB C1 is tens of
    /// MB of JSON and seconds of checks): one per core.
    pub validations: std::sync::Arc<tokio::sync::Semaphore>,
}

/// Permits of [`AppState::validations`]: the host's cores.
pub fn validation_slots() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

/// Turn the body-limit rejection into our JSON 413 (axum's own is plain text).
async fn json_body_limit(limit: usize, req: Request, next: Next) -> Response {
    let too_large = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > limit);
    if too_large {
        return ApiError::TooLarge(limit).into_response();
    }
    let response = next.run(req).await;
    if response.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE
        && response.headers().get(axum::http::header::CONTENT_TYPE).is_none_or(|v| v != "application/json")
    {
        return ApiError::TooLarge(limit).into_response();
    }
    response
}

/// Answer 408 (JSON) when a request takes longer than `limit`, body upload included.
async fn request_timeout(limit: std::time::Duration, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout(format!("the request took longer than {} s", limit.as_secs())).into_response(),
    }
}

/// The HTTP router.
pub fn app(state: AppState) -> Router {
    let limit = state.max_body_bytes;
    let timeout = state.request_timeout;
    let submits = tower::limit::GlobalConcurrencyLimitLayer::new(state.max_concurrent_submits.max(1));
    Router::new()
        .route("/v1/jobs", get(routes::jobs::list).post(routes::jobs::submit).layer(submits))
        .route("/v1/jobs/{id}", get(routes::jobs::get).delete(routes::jobs::cancel))
        .route("/v1/jobs/{id}/proof", get(routes::jobs::proof))
        .route("/healthz", get(routes::health::healthz))
        .route("/readyz", get(routes::health::readyz))
        .route("/metrics", get(routes::health::metrics))
        .fallback(|| async { ApiError::NotFound("no such endpoint".into()) })
        // one span per request on every route (submit's own span joins the job's trace)
        .layer(tower_http::trace::TraceLayer::new_for_http().make_span_with(|req: &Request| {
            tracing::info_span!(
                "http.request",
                otel.kind = "server",
                http.method = %req.method(),
                http.target = %req.uri().path(),
                tenant = tracing::field::Empty,
                worker = "gateway",
            )
        }))
        .layer(middleware::from_fn(move |req, next| request_timeout(timeout, req, next)))
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(move |req, next| json_body_limit(limit, req, next)))
        .with_state(state)
}

/// Process entry point: parse flags and environment, start telemetry, run until SIGINT or
/// SIGTERM, drain, flush.
pub fn main() -> std::process::ExitCode {
    use clap::Parser as _;
    let config = Config::parse();
    // before any thread exists: filecoin-proofs' verifiers read their directory from the
    // environment, once
    config.params.export_for_filecoin_proofs();
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("gateway", &telemetry, |shutdown| run(config, shutdown))
}

/// A client must send its request headers within this time (slow-loris connections are
/// dropped); the whole request is bounded by `--request-timeout-secs`.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Requests in flight on one HTTP/2 connection: one client cannot open hundreds of uploads
/// on a single connection (h2's own default is 200).
const HTTP2_MAX_STREAMS: u32 = 32;
/// Largest header block a request may send (hyper's HTTP/2 default is 16 MiB).
const MAX_HEADER_BYTES: u32 = 64 * 1024;
/// HTTP/2 pings on an idle connection, and how long one may go unanswered before the
/// connection is closed: a peer that stops reading does not hold its streams for ever.
const HTTP2_KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(30);

/// Limits on every connection, HTTP/1.1 and HTTP/2 alike.
fn connection_limits(builder: &mut hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>) {
    builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(HTTP2_MAX_STREAMS)
        .max_header_list_size(MAX_HEADER_BYTES)
        .keep_alive_interval(Some(HTTP2_KEEPALIVE))
        .keep_alive_timeout(HTTP2_KEEPALIVE / 2);
}

/// Bind `config.listen` and serve until `shutdown`.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.listen).await.with_context(|| format!("binding {}", config.listen))?;
    serve(listener, config, shutdown).await
}

/// Serve on an already bound listener until `shutdown`: connect to NATS, declare the
/// topology, start applying events, then accept requests. On shutdown: stop accepting,
/// finish in-flight requests, stop the event loop (un-acked events are redelivered).
pub async fn serve(listener: TcpListener, config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let bus_config = config.nats.bus_config("gateway")?;
    anyhow::ensure!(
        config.orphan_grace_secs > config.request_timeout_secs,
        "--orphan-grace-secs ({}) must be longer than --request-timeout-secs ({}): a submit still in flight has stored its input but not yet its record",
        config.orphan_grace_secs,
        config.request_timeout_secs
    );
    let auth = if config.insecure_no_auth {
        warn!("AUTHENTICATION IS OFF (--insecure-no-auth): anyone who reaches this gateway can submit, read and cancel every job");
        Auth::Disabled
    } else {
        let path = config.tokens_file.clone().unwrap_or_else(snarkflow_service::tokens::default_tokens_file);
        info!(tokens_file = %path.display(), "API tokens required");
        Auth::Tokens(std::sync::Arc::new(TokenStore::open(path)?))
    };
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => Some(
            axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key)
                .await
                .with_context(|| format!("loading the TLS certificate {} and key {}", cert.display(), key.display()))?,
        ),
        _ => None,
    };
    // Until NATS is reachable (and the credentials accepted) the port answers: /readyz says
    // why the gateway is not ready, every API route 503.
    let listener = listener.into_std()?;
    let early = TcpListener::from_std(listener.try_clone()?)?;
    let listener = TcpListener::from_std(listener)?;
    let why = std::sync::Arc::new(std::sync::Mutex::new("connecting to NATS".to_owned()));
    let connected = shutdown.child_token();
    let early = tokio::spawn({
        let server = axum::serve(early, routes::health::connecting(why.clone()))
            .with_graceful_shutdown(connected.clone().cancelled_owned());
        async move { server.await }
    });
    let waiting = move |reason: &str| *why.lock().expect("connecting reason") = reason.to_owned();
    let bus = tokio::select! {
        _ = shutdown.cancelled() => {
            let _ = early.await;
            return Ok(());
        }
        bus = Bus::connect_reporting(bus_config, &waiting) => bus?,
    };
    connected.cancel();
    early.await.context("the connecting server panicked")?.context("serving http while connecting")?;
    let params_dir = config.params.dir();
    let state = AppState {
        ledger: bus.ledger().clone(),
        bus: bus.clone(),
        metrics: Metrics::new(),
        max_body_bytes: config.max_body_bytes,
        auth,
        quotas: Quotas::new(QuotaLimits {
            max_jobs: config.tenant_max_jobs,
            max_partitions: config.tenant_max_partitions,
            submits_per_minute: config.tenant_submits_per_minute,
        })
        .with_upload_share(match config.max_concurrent_submits_per_tenant {
            0 => (config.max_concurrent_submits / 2).max(1),
            n => n,
        }),
        policy: std::sync::Arc::new(Policy {
            enable_test_kinds: config.enable_test_kinds,
            max_test_job_constraints: config.max_test_job_constraints,
            params_dir: params_dir.clone(),
        }),
        request_timeout: std::time::Duration::from_secs(config.request_timeout_secs.max(1)),
        event_loop: Default::default(),
        index: LedgerIndex::default(),
        ledger_room: LedgerRoom::new(config.ledger_headroom_percent),
        max_concurrent_submits: config.max_concurrent_submits,
        validations: std::sync::Arc::new(tokio::sync::Semaphore::new(validation_slots())),
    };
    tokio::spawn(index::maintain(state.ledger.clone(), state.index.clone(), shutdown.clone()));
    if let Err(e) = snarkflow_filecoin::check_parameter_dir(&params_dir) {
        tracing::warn!(error = %e, "Filecoin proofs will be verified against another parameter directory");
    }
    let verify_slots = match config.verify_slots {
        0 => (validation_slots() / 2).max(1),
        n => n,
    };
    let events = tokio::spawn(event_loop::supervise(
        event_loop::EventParts {
            bus: bus.clone(),
            ledger: state.ledger.clone(),
            metrics: state.metrics.clone(),
            params_dir,
            verify: std::sync::Arc::new(event_loop::VerifySlots::new(verify_slots)),
        },
        state.event_loop.clone(),
        shutdown.clone(),
    ));
    // systemd (`Type=notify`) hears "ready" when /readyz would first answer 200
    tokio::spawn({
        let (bus, applying) = (bus.clone(), state.event_loop.clone());
        async move {
            while !(bus.connection().0 && applying.load(std::sync::atomic::Ordering::SeqCst)) {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            snarkflow_service::systemd::notify_ready();
        }
    });
    tokio::spawn(deadletter::run(bus.clone(), state.ledger.clone(), state.metrics.clone(), shutdown.clone()));
    tokio::spawn(sweep::run(
        sweep::Parts {
            bus,
            ledger: state.ledger.clone(),
            index: state.index.clone(),
            metrics: state.metrics.clone(),
            quotas: state.quotas.clone(),
            room: state.ledger_room.clone(),
        },
        sweep::Pass {
            every: std::time::Duration::from_secs(config.ledger_pass_secs.max(1)),
            orphan_grace: std::time::Duration::from_secs(config.orphan_grace_secs),
        },
        shutdown.clone(),
    ));
    // cuzk's gRPC interface for Curio, beside the HTTP API; a listener that cannot start
    // stops the gateway (exit non-zero), as the HTTP one does
    let grpc = config.grpc.listen.clone().map(|listen| {
        let (state, args, stop) = (state.clone(), config.grpc.clone(), shutdown.clone());
        tokio::spawn(async move {
            let served = grpc::serve(listen, args, state, stop.clone()).await;
            if served.is_err() {
                stop.cancel();
            }
            served
        })
    });
    let listener = listener.into_std()?;
    info!(addr = %listener.local_addr()?, tls = tls.is_some(), "gateway listening");
    let handle = axum_server::Handle::new();
    let http_shutdown = shutdown.clone();
    let stopper = handle.clone();
    tokio::spawn(async move {
        http_shutdown.cancelled().await;
        // in-flight requests finish (a client uploading a C1 gets its answer)
        stopper.graceful_shutdown(None);
    });
    let service = app(state).into_make_service();
    match tls {
        Some(tls) => {
            let mut server = axum_server::from_tcp_rustls(listener, tls).handle(handle);
            connection_limits(server.http_builder());
            server.serve(service).await
        }
        None => {
            let mut server = axum_server::from_tcp(listener).handle(handle);
            connection_limits(server.http_builder());
            server.serve(service).await
        }
    }
    .context("serving http")?;
    shutdown.cancel();
    events.await.context("event loop panicked")?;
    if let Some(grpc) = grpc {
        grpc.await.context("the gRPC server panicked")??;
    }
    info!("gateway stopped");
    Ok(())
}
