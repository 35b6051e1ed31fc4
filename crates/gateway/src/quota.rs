//! Per-tenant limits: jobs and unproved partitions in flight, and a submit rate.
//!
//! In-flight counts come from the periodic ledger pass (the same one the job gauges use)
//! plus what this gateway admitted since that pass began, so a burst of submits between two
//! passes is counted. With several gateways each one also sees the others' jobs at the next
//! pass: a tenant can overshoot by at most what the other gateways admit in one pass.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::JobSummary;

use crate::ApiError;

/// How a submit counts against its tenant's limits (`jobs::quota_lane` decides from its kind
/// and deadline, never from the priority it asks for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Within the tenant's limits.
    Normal,
    /// Work due within one WindowPoSt challenge window (a WindowPoSt with its 30-minute
    /// deadline): it passes limits that other work filled, up to as much again (twice the
    /// jobs and partitions in flight), and no submit rate holds it.
    Urgent,
    /// Work that is critical by its kind (WinningPoSt): counted, never refused.
    Critical,
}

/// The limits every tenant gets (0: no limit).
#[derive(Debug, Clone, Copy)]
pub struct QuotaLimits {
    pub max_jobs: u64,
    pub max_partitions: u64,
    pub submits_per_minute: u32,
}

#[derive(Debug, Default)]
struct Usage {
    /// From the last ledger pass.
    jobs: u64,
    partitions: u64,
    /// Admitted here since the pass that produced the counts above began.
    admitted: Vec<(Instant, u64)>,
    /// Token bucket of submits.
    tokens: f64,
    refilled: Option<Instant>,
}

/// The quota book of one gateway.
#[derive(Clone)]
pub struct Quotas {
    limits: QuotaLimits,
    usage: Arc<Mutex<HashMap<String, Usage>>>,
    /// Submits being read and checked, per tenant, and how many one tenant may have.
    uploads: Arc<Mutex<HashMap<String, usize>>>,
    upload_share: usize,
    /// Submits handled at once over all tenants (0: no limit here).
    upload_total: usize,
}

/// One of a tenant's submit slots (see [`Quotas::upload_slot`]); given back when dropped.
pub struct UploadSlot {
    uploads: Arc<Mutex<HashMap<String, usize>>>,
    tenant: String,
}

impl Drop for UploadSlot {
    fn drop(&mut self) {
        let mut uploads = self.uploads.lock().expect("upload book");
        if let Some(taken) = uploads.get_mut(&self.tenant) {
            *taken -= 1;
            if *taken == 0 {
                uploads.remove(&self.tenant);
            }
        }
    }
}

/// Seconds a client is told to wait when a tenant is at its in-flight limit.
const IN_FLIGHT_RETRY_SECS: u64 = 15;

/// Top up `usage`'s token bucket to `now`; refuse when not one submit is left.
fn refill(usage: &mut Usage, tenant: &str, limits: QuotaLimits, now: Instant) -> Result<(), ApiError> {
    if limits.submits_per_minute == 0 {
        return Ok(());
    }
    let capacity = f64::from(limits.submits_per_minute);
    let per_second = capacity / 60.0;
    let elapsed = usage.refilled.map(|t| now.duration_since(t).as_secs_f64()).unwrap_or(f64::INFINITY);
    usage.tokens = (usage.tokens + elapsed * per_second).min(capacity);
    usage.refilled = Some(now);
    if usage.tokens < 1.0 {
        let wait = ((1.0 - usage.tokens) / per_second).ceil().max(1.0) as u64;
        return Err(ApiError::TooManyRequests {
            message: format!(
                "tenant {tenant:?} is over its rate of {} submits per minute; retry in {wait} s",
                limits.submits_per_minute
            ),
            retry_after_secs: wait,
        });
    }
    Ok(())
}

/// Refuse when `tenant` has as many jobs in flight as it may.
fn jobs_room(usage: &Usage, tenant: &str, limits: QuotaLimits) -> Result<(), ApiError> {
    let in_flight = usage.jobs + usage.admitted.len() as u64;
    if limits.max_jobs > 0 && in_flight >= limits.max_jobs {
        return Err(ApiError::TooManyRequests {
            message: format!(
                "tenant {tenant:?} has {in_flight} jobs queued or running, its limit; retry when some finish"
            ),
            retry_after_secs: IN_FLIGHT_RETRY_SECS,
        });
    }
    Ok(())
}

impl Quotas {
    pub fn new(limits: QuotaLimits) -> Self {
        Quotas { limits, usage: Arc::default(), uploads: Arc::default(), upload_share: 0, upload_total: 0 }
    }

    /// At most `total` submits handled at once over all tenants, the last quarter of them only
    /// for tenants that have none in flight: tenants reading slow uploads cannot, together, hold
    /// every slot, and a tenant with nothing in flight always finds one while any is left.
    pub fn with_upload_slots(mut self, total: usize) -> Self {
        self.upload_total = total;
        self
    }

    /// The slots kept for tenants with no submit in flight.
    fn upload_reserve(&self) -> usize {
        if self.upload_total > 1 {
            (self.upload_total / 4).max(1)
        } else {
            0
        }
    }

    /// At most `share` submits of one tenant handled at once (0: no limit of its own), so one
    /// tenant cannot hold every one of the gateway's submit slots for the request timeout.
    pub fn with_upload_share(mut self, share: usize) -> Self {
        self.upload_share = share;
        self
    }

    /// Take one of `tenant`'s submit slots for as long as the returned guard lives, or say it
    /// has none left (429: its other submits are still being read or checked).
    pub fn upload_slot(&self, tenant: &str) -> Result<UploadSlot, ApiError> {
        let mut uploads = self.uploads.lock().expect("upload book");
        let taken = uploads.get(tenant).copied().unwrap_or(0);
        if self.upload_share > 0 && taken >= self.upload_share {
            return Err(ApiError::TooManyRequests {
                message: format!(
                    "tenant {tenant} already has {taken} submits being read and checked, its share of the gateway's (--max-concurrent-submits-per-tenant); retry when one is answered"
                ),
                retry_after_secs: 1,
            });
        }
        if self.upload_total > 0 {
            let all: usize = uploads.values().sum();
            let limit = if taken == 0 { self.upload_total } else { self.upload_total - self.upload_reserve() };
            if all >= limit {
                return Err(ApiError::TooManyRequests {
                    message: format!(
                        "the gateway is reading and checking {all} submits (--max-concurrent-submits {}, the last {} kept for tenants with none in flight); retry when one is answered",
                        self.upload_total,
                        self.upload_reserve()
                    ),
                    retry_after_secs: 1,
                });
            }
        }
        *uploads.entry(tenant.to_owned()).or_default() += 1;
        Ok(UploadSlot { uploads: self.uploads.clone(), tenant: tenant.to_owned() })
    }

    /// Whether a submit from `tenant` could be admitted at all — its rate and its job count,
    /// nothing taken — checked before the submit's body is read and parsed, so a tenant over
    /// its limits costs no parsing. Partitions are checked by [`Quotas::admit`].
    pub fn precheck(&self, tenant: &str) -> Result<(), ApiError> {
        let mut book = self.usage.lock().expect("quota book");
        let usage = book.entry(tenant.to_owned()).or_default();
        refill(usage, tenant, self.limits, Instant::now())?;
        jobs_room(usage, tenant, self.limits)
    }

    /// Admit one submit of `partitions` partitions for `tenant` in `lane`, or say why not
    /// (429). A critical submit is never refused, only counted; an urgent one gets twice the
    /// in-flight limits and no rate.
    pub fn admit(&self, tenant: &str, partitions: u64, lane: Lane) -> Result<(), ApiError> {
        let limits = match lane {
            Lane::Normal => self.limits,
            Lane::Urgent => QuotaLimits {
                max_jobs: self.limits.max_jobs.saturating_mul(2),
                max_partitions: self.limits.max_partitions.saturating_mul(2),
                submits_per_minute: 0,
            },
            Lane::Critical => QuotaLimits { max_jobs: 0, max_partitions: 0, submits_per_minute: 0 },
        };
        let mut book = self.usage.lock().expect("quota book");
        let usage = book.entry(tenant.to_owned()).or_default();
        let now = Instant::now();
        refill(usage, tenant, limits, now)?;
        jobs_room(usage, tenant, limits)?;
        let admitted_partitions: u64 = usage.admitted.iter().map(|(_, p)| p).sum();
        let partitions_after = usage.partitions + admitted_partitions + partitions;
        if limits.max_partitions > 0 && partitions_after > limits.max_partitions {
            return Err(ApiError::TooManyRequests {
                message: format!(
                    "tenant {tenant:?} has {} partitions in flight; {partitions} more would pass its limit of {}",
                    usage.partitions + admitted_partitions,
                    limits.max_partitions
                ),
                retry_after_secs: IN_FLIGHT_RETRY_SECS,
            });
        }
        if limits.submits_per_minute > 0 {
            usage.tokens -= 1.0;
        }
        usage.admitted.push((now, partitions));
        Ok(())
    }

    /// A submit of `tenant` refused for its content (bad JSON, an invalid request, too
    /// large): it spends one of the tenant's rate like an accepted one, so a tenant cannot
    /// make the gateway read and parse without limit by sending requests that fail.
    pub fn bill_rejected(&self, tenant: &str) {
        if self.limits.submits_per_minute == 0 {
            return;
        }
        let mut book = self.usage.lock().expect("quota book");
        let usage = book.entry(tenant.to_owned()).or_default();
        // topped up to now first; a refill error only means no token was left to take
        let _ = refill(usage, tenant, self.limits, Instant::now());
        usage.tokens = (usage.tokens - 1.0).max(0.0);
    }

    /// An admitted submit that did not create its job after all (it failed later).
    pub fn release(&self, tenant: &str) {
        if let Some(usage) = self.usage.lock().expect("quota book").get_mut(tenant) {
            usage.admitted.pop();
        }
    }

    /// Replace the in-flight counts with a ledger pass that began at `began`.
    pub fn refresh(&self, began: Instant, jobs: &[JobSummary]) {
        let mut counts: HashMap<&str, (u64, u64)> = HashMap::new();
        for j in jobs.iter().filter(|j| !j.state.is_terminal()) {
            let tenant = j.tenant.as_deref().unwrap_or(crate::auth::ANONYMOUS);
            let entry = counts.entry(tenant).or_default();
            entry.0 += 1;
            entry.1 += u64::from(j.partitions.saturating_sub(j.proved));
        }
        let mut book = self.usage.lock().expect("quota book");
        for (tenant, usage) in book.iter_mut() {
            let (jobs, partitions) = counts.remove(tenant.as_str()).unwrap_or_default();
            usage.jobs = jobs;
            usage.partitions = partitions;
            usage.admitted.retain(|(at, _)| *at >= began);
        }
        for (tenant, (jobs, partitions)) in counts {
            book.insert(tenant.to_owned(), Usage { jobs, partitions, ..Default::default() });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quotas(max_jobs: u64, max_partitions: u64, submits_per_minute: u32) -> Quotas {
        Quotas::new(QuotaLimits { max_jobs, max_partitions, submits_per_minute })
    }

    fn retry_after(e: ApiError) -> u64 {
        match e {
            ApiError::TooManyRequests { retry_after_secs, .. } => retry_after_secs,
            other => panic!("expected 429, got {other:?}"),
        }
    }

    #[test]
    fn the_rate_allows_a_burst_then_asks_to_wait() {
        let q = quotas(0, 0, 2);
        q.admit("a", 1, Lane::Normal).unwrap();
        q.admit("a", 1, Lane::Normal).unwrap();
        assert_eq!(retry_after(q.admit("a", 1, Lane::Normal).unwrap_err()), 30, "one submit per 30 s refills");
        q.admit("b", 1, Lane::Normal).unwrap();
    }

    #[test]
    fn in_flight_limits_count_admissions_until_a_ledger_pass_sees_them() {
        let q = quotas(2, 10, 0);
        q.admit("a", 4, Lane::Normal).unwrap();
        assert!(q.admit("a", 7, Lane::Normal).is_err(), "4 + 7 partitions > 10");
        q.admit("a", 6, Lane::Normal).unwrap();
        assert_eq!(
            retry_after(q.admit("a", 1, Lane::Normal).unwrap_err()),
            IN_FLIGHT_RETRY_SECS,
            "two jobs is the limit"
        );
        // a pass that began before the admissions keeps counting them; a later empty pass frees them
        let before = Instant::now() - std::time::Duration::from_secs(60);
        q.refresh(before, &[]);
        assert!(q.admit("a", 1, Lane::Normal).is_err());
        q.refresh(Instant::now(), &[]);
        q.admit("a", 1, Lane::Normal).unwrap();
    }

    #[test]
    fn the_critical_lane_is_counted_but_never_refused() {
        let q = quotas(1, 2, 1);
        q.admit("curio", 2, Lane::Normal).unwrap();
        assert!(q.admit("curio", 1, Lane::Normal).is_err(), "the tenant is at its limits");
        // a WinningPoSt past every limit (jobs, partitions, rate) still goes in
        q.admit("curio", 1, Lane::Critical).unwrap();
        q.admit("curio", 1, Lane::Critical).unwrap();
        // and it counts against the ordinary work that follows
        assert!(q.admit("curio", 1, Lane::Normal).is_err());
    }

    #[test]
    fn the_urgent_lane_passes_a_full_quota_up_to_twice_its_limits() {
        let q = quotas(2, 4, 1);
        q.admit("curio", 2, Lane::Normal).unwrap();
        q.admit("curio", 2, Lane::Normal).unwrap_err();
        // PoRep filled the partitions (and the rate): a WindowPoSt due within its window goes in
        q.admit("curio", 1, Lane::Urgent).unwrap();
        q.admit("curio", 1, Lane::Urgent).unwrap();
        q.admit("curio", 2, Lane::Urgent).unwrap();
        // but not past twice the limits: 4 jobs and 8 partitions in flight
        let e = q.admit("curio", 1, Lane::Urgent).unwrap_err();
        assert_eq!(retry_after(e), IN_FLIGHT_RETRY_SECS);
        let q = quotas(0, 4, 0);
        q.admit("curio", 7, Lane::Urgent).unwrap();
        assert!(q.admit("curio", 2, Lane::Urgent).is_err(), "7 + 2 partitions > 8");
        assert!(q.admit("curio", 1, Lane::Normal).is_err(), "ordinary work still waits");
    }
}
