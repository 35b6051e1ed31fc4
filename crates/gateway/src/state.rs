//! [`AppState`]: what every handler, HTTP and gRPC alike, shares.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use snarkflow_bus::{Bus, Ledger};
use snarkflow_filecoin::manifest::Manifest;

use crate::{ApiError, Auth, Config, LedgerIndex, LedgerRoom, Metrics, Policy, QuotaLimits, Quotas};

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
    /// MB of JSON and seconds of checks): one per core, and one more for critical requests.
    pub validations: ValidationSlots,
}

/// Permits of [`AppState::validations`]'s general slots: the host's cores.
pub fn validation_slots() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

/// A request at most this large whose kind is critical may take the slot kept for critical
/// work: a WinningPoSt (a 32 GiB one's vanilla proofs are ~0.2 MB of JSON) is never validated
/// after a queue of 32 GiB C1 outputs. Larger bodies are not read for their kind before a slot.
pub const SMALL_REQUEST_BYTES: usize = 1 << 20;

/// The validation slots: `general` for any request, one more kept for critical ones (the kinds
/// [`crate::jobs::quota_exempt`] names: WinningPoSt), so that neither large bodies nor a flood
/// of small ones from any tenant hold every slot while a block's proof waits.
#[derive(Clone)]
pub struct ValidationSlots {
    general: Arc<Semaphore>,
    critical: Arc<Semaphore>,
}

impl ValidationSlots {
    pub fn new(general: usize) -> ValidationSlots {
        ValidationSlots { general: Arc::new(Semaphore::new(general.max(1))), critical: Arc::new(Semaphore::new(1)) }
    }

    /// A slot for validating a request: a general one, or for a critical request whichever
    /// comes first of a general one and the critical one.
    pub async fn acquire(&self, critical: bool) -> SemaphorePermit<'_> {
        let general = self.general.acquire();
        let permit = if critical {
            tokio::select! {
                biased;
                p = general => p,
                p = self.critical.acquire() => p,
            }
        } else {
            general.await
        };
        permit.expect("the validation semaphores are never closed")
    }

    /// Run `check` on a blocking thread in a slot (parsing and checking a C1 output is seconds
    /// of CPU, kept off the async executor and bounded).
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        critical: bool,
        check: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let _slot = self.acquire(critical).await;
        tokio::task::spawn_blocking(check)
            .await
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("validation panicked: {e}")))?
    }
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
            validations: ValidationSlots::new(validation_slots()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_critical_request_is_validated_while_others_hold_every_general_slot() {
        let slots = ValidationSlots::new(1);
        let held = slots.acquire(false).await;
        let wait = Duration::from_millis(200);
        assert!(tokio::time::timeout(wait, slots.acquire(false)).await.is_err(), "another request waits");
        let critical = tokio::time::timeout(wait, slots.acquire(true)).await.expect("the critical slot");
        assert!(tokio::time::timeout(wait, slots.acquire(true)).await.is_err(), "one critical slot, taken");
        drop(held);
        let general = tokio::time::timeout(wait, slots.acquire(false)).await.expect("the general slot, freed");
        drop((critical, general));
    }
}
