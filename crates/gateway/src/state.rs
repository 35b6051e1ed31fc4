//! [`AppState`]: what every handler, HTTP and gRPC alike, shares.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use snarkflow_bus::{Bus, Ledger};
use snarkflow_filecoin::manifest::Manifest;

use crate::{Auth, Config, LedgerIndex, LedgerRoom, Metrics, Policy, QuotaLimits, Quotas};

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub bus: Bus,
    pub ledger: Ledger,
    pub metrics: Metrics,
    pub max_body_bytes: usize,
    pub auth: Auth,
    pub quotas: Quotas,
    pub policy: Arc<Policy>,
    /// Longest a request may take, body included.
    pub request_timeout: Duration,
    /// Whether the event loop is applying events (the gateway is not ready while it is not:
    /// no job could finish).
    pub event_loop: Arc<AtomicBool>,
    /// Every job in summary, kept current by a ledger watch (empty and not ready: read the
    /// ledger instead).
    pub index: LedgerIndex,
    /// Room in the job ledger: new jobs wait while the jobs in flight need it.
    pub ledger_room: LedgerRoom,
    /// Request bodies parsed and validated at once, on blocking threads (a 32 GiB C1 is tens of
    /// MB of JSON and seconds of checks): one per core.
    pub validations: Arc<tokio::sync::Semaphore>,
}

/// Permits of [`AppState::validations`]: the host's cores.
pub fn validation_slots() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

impl AppState {
    /// The state a gateway configured by `config` serves with.
    pub(crate) fn new(config: &Config, bus: Bus, auth: Auth, published: Option<Manifest>) -> AppState {
        AppState {
            ledger: bus.ledger().clone(),
            bus,
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
            })
            .with_upload_slots(config.max_concurrent_submits.max(1)),
            policy: Arc::new(Policy {
                enable_test_kinds: config.enable_test_kinds,
                max_test_job_constraints: config.max_test_job_constraints,
                params_dir: config.params.dir(),
                published,
                default_deadlines: config.default_deadlines.clone(),
                max_deadline_secs: crate::jobs::validate::max_deadline_for_retention(
                    config.nats.job_retention_hours.max(1) * 3600,
                ),
            }),
            request_timeout: Duration::from_secs(config.request_timeout_secs.max(1)),
            event_loop: Default::default(),
            index: LedgerIndex::default(),
            ledger_room: LedgerRoom::new(config.ledger_headroom_percent),
            validations: Arc::new(tokio::sync::Semaphore::new(validation_slots())),
        }
    }
}
