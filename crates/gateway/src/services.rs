//! The gateway as a small supervisor: [`serve`] connects (answering /readyz with the reason
//! while it cannot), builds the shared state, starts the background services into one
//! [`JoinSet`], serves HTTP until `shutdown`, then stops in order — HTTP drains first (a client
//! uploading a C1 gets its answer), then the event loop applies the events it holds and waits
//! for the verifications under way (each acks its event once its verdict is in the ledger), then
//! the rest; a background service that panicked makes the gateway exit non-zero.

use snarkflow_filecoin::manifest::Manifest;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use axum_server::tls_rustls::RustlsConfig;
use snarkflow_bus::Bus;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::events::{self as event_loop, deadletter};
use crate::ledger::{index, sweep};
use crate::{grpc, http, validation_slots, AppState, Auth, Config, TokenStore};

/// How long the ledger index, the ledger pass and the dead-letter consumer get to stop once
/// `shutdown` is cancelled (each stops at its next await; a pass reading a large ledger is
/// abandoned, and the next gateway's pass does it again).
const REST_STOP: Duration = Duration::from_secs(10);

/// Serve on an already bound listener until `shutdown` (see the module doc).
pub async fn serve(listener: TcpListener, config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    anyhow::ensure!(
        config.orphan_grace_secs > config.request_timeout_secs,
        "--orphan-grace-secs ({}) must be longer than --request-timeout-secs ({}): a submit still in flight has stored its input but not yet its record",
        config.orphan_grace_secs,
        config.request_timeout_secs
    );
    let auth = auth(&config)?;
    let tls = tls(&config).await?;
    let published = published_keys(&config)?;
    let Some((bus, listener)) = connect(listener, &config, &shutdown).await? else {
        return Ok(());
    };
    let state = AppState::new(&config, bus, auth, published);
    if let Err(e) = snarkflow_filecoin::check_parameter_dir(&state.policy.params_dir) {
        warn!(error = %e, "Filecoin proofs will be verified against another parameter directory");
    }
    let services = Services::start(&state, &config, &shutdown);
    let served = http::serve(listener, tls, state, &shutdown).await;
    shutdown.cancel();
    let stopped = services.stop().await;
    served?;
    stopped?;
    info!("gateway stopped");
    Ok(())
}

fn auth(config: &Config) -> anyhow::Result<Auth> {
    if config.insecure_no_auth {
        warn!("AUTHENTICATION IS OFF (--insecure-no-auth): anyone who reaches this gateway can submit, read and cancel every job");
        return Ok(Auth::Disabled);
    }
    let path = config.tokens_file.clone().unwrap_or_else(snarkflow_service::tokens::default_tokens_file);
    info!(tokens_file = %path.display(), "API tokens required");
    Ok(Auth::Tokens(Arc::new(TokenStore::open(path)?)))
}

async fn tls(config: &Config) -> anyhow::Result<Option<RustlsConfig>> {
    let (Some(cert), Some(key)) = (&config.tls_cert, &config.tls_key) else {
        return Ok(None);
    };
    let tls = RustlsConfig::from_pem_file(cert, key)
        .await
        .with_context(|| format!("loading the TLS certificate {} and key {}", cert.display(), key.display()))?;
    Ok(Some(tls))
}

/// Connect to NATS. Until it is reachable (and the credentials accepted) the port answers:
/// /readyz says why the gateway is not ready, every API route 503. `None` when `shutdown`
/// came first.
async fn connect(
    listener: TcpListener,
    config: &Config,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<(Bus, TcpListener)>> {
    let bus_config = config.nats.bus_config("gateway")?;
    let listener = listener.into_std()?;
    let early = TcpListener::from_std(listener.try_clone()?)?;
    let listener = TcpListener::from_std(listener)?;
    let why = Arc::new(Mutex::new("connecting to NATS".to_owned()));
    let connected = shutdown.child_token();
    let early = tokio::spawn({
        let server = axum::serve(early, http::health::connecting(why.clone()))
            .with_graceful_shutdown(connected.clone().cancelled_owned());
        async move { server.await }
    });
    let waiting = move |reason: &str| *why.lock().expect("connecting reason") = reason.to_owned();
    let bus = tokio::select! {
        _ = shutdown.cancelled() => {
            let _ = early.await;
            return Ok(None);
        }
        bus = Bus::connect_reporting(bus_config, &waiting) => bus?,
    };
    connected.cancel();
    early.await.context("the connecting server panicked")?.context("serving http while connecting")?;
    Ok(Some((bus, listener)))
}

/// What the verifying keys must be: the published files, unless this is a test cache.
fn published_keys(config: &Config) -> anyhow::Result<Option<Manifest>> {
    if config.test_params {
        warn!(dir = %config.params.dir().display(), "test parameter cache: verifying keys are not checked against the digests filecoin-proofs publishes");
        return Ok(None);
    }
    Ok(Some(Manifest::named_or_builtin(config.params_manifest.as_deref())?))
}

/// The background services, each a task that runs until `shutdown`.
struct Services {
    /// The event loop, stopped (and waited for) before the others.
    events: tokio::task::JoinHandle<()>,
    /// cuzk's gRPC listener, when configured: its error stops the gateway.
    grpc: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    /// The ledger index, the ledger pass, the dead-letter consumer, the readiness notice.
    rest: JoinSet<&'static str>,
}

/// The gateway's background tasks besides the event loop and gRPC, each naming itself when it
/// ends: the ledger index, the ledger pass, the dead-letter consumer, the readiness notice.
fn background(state: &AppState, config: &Config, shutdown: &CancellationToken) -> JoinSet<&'static str> {
    let bus = state.bus.clone();
    let mut rest = JoinSet::new();
    rest.spawn({
        let (ledger, index, stop) = (state.ledger.clone(), state.index.clone(), shutdown.clone());
        async move {
            index::maintain(ledger, index, stop).await;
            "the ledger index"
        }
    });
    rest.spawn({
        let parts = sweep::Parts {
            bus: bus.clone(),
            ledger: state.ledger.clone(),
            index: state.index.clone(),
            metrics: state.metrics.clone(),
            quotas: state.quotas.clone(),
            room: state.ledger_room.clone(),
        };
        let pass = sweep::Pass {
            every: Duration::from_secs(config.ledger_pass_secs.max(1)),
            orphan_grace: Duration::from_secs(config.orphan_grace_secs),
            gpu_constraints_per_second: config.gpu_constraints_per_second,
        };
        let stop = shutdown.clone();
        async move {
            sweep::run(parts, pass, stop).await;
            "the ledger pass"
        }
    });
    rest.spawn({
        let (bus, ledger, metrics, stop) = (bus.clone(), state.ledger.clone(), state.metrics.clone(), shutdown.clone());
        async move {
            deadletter::run(bus, ledger, metrics, stop).await;
            "the dead-letter consumer"
        }
    });
    // systemd (`Type=notify`) hears "ready" when /readyz would first answer 200
    rest.spawn({
        let (applying, stop) = (state.event_loop.clone(), shutdown.clone());
        async move {
            while !(bus.connection().0 && applying.load(Ordering::SeqCst)) {
                tokio::select! {
                    _ = stop.cancelled() => return "the readiness notice",
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                }
            }
            snarkflow_service::systemd::notify_ready();
            "the readiness notice"
        }
    });
    rest
}

impl Services {
    fn start(state: &AppState, config: &Config, shutdown: &CancellationToken) -> Services {
        let bus = state.bus.clone();
        let verify_slots = match config.verify_slots {
            0 => (validation_slots() / 2).max(1),
            n => n,
        };
        let events = tokio::spawn(event_loop::supervise(
            event_loop::EventParts {
                bus: bus.clone(),
                ledger: state.ledger.clone(),
                metrics: state.metrics.clone(),
                params_dir: state.policy.params_dir.clone(),
                verify: Arc::new(event_loop::VerifySlots::new(verify_slots)),
                tasks: Default::default(),
            },
            state.event_loop.clone(),
            shutdown.clone(),
        ));
        let rest = background(state, config, shutdown);
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
        Services { events, grpc, rest }
    }

    /// Once `shutdown` is cancelled: the event loop first, then gRPC, then the rest.
    async fn stop(mut self) -> anyhow::Result<()> {
        self.events.await.context("the event loop panicked")?;
        if let Some(grpc) = self.grpc {
            grpc.await.context("the gRPC server panicked")??;
        }
        let deadline = tokio::time::Instant::now() + REST_STOP;
        loop {
            match tokio::time::timeout_at(deadline, self.rest.join_next()).await {
                Ok(Some(stopped)) => {
                    let name = stopped.context("a background service of the gateway panicked")?;
                    tracing::debug!(service = name, "stopped");
                }
                Ok(None) => return Ok(()),
                Err(_) => {
                    warn!(
                        left = self.rest.len(),
                        "background services still busy {} s after shutdown: aborted",
                        REST_STOP.as_secs()
                    );
                    self.rest.abort_all();
                    return Ok(());
                }
            }
        }
    }
}
