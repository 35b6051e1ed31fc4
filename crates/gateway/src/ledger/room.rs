//! Room in the job ledger. The ledger is a bounded key-value bucket that refuses a write that
//! does not fit (discard new): once full, every update that grows a record fails, so the jobs in
//! flight could never record their proofs and would sit unfinished until their records expire.
//! A new job is therefore accepted only while the ledger keeps room for everything the jobs in
//! flight may still write ([`allowance`] each) plus a headroom; the critical lane (WinningPoSt,
//! a tiny record Curio never retries) may use the headroom. The ledger pass measures the bucket
//! every `--ledger-pass-secs`; jobs accepted since count against it until the next measure.

use std::sync::{Arc, Mutex};

use crate::ApiError;

/// What one finished partition adds to a record at most: the proof (384 hex digits) and the
/// synthesis and proving stats (worker names, a dozen numbers), as JSON. Measured records are
/// ~1 KiB per partition; twice that leaves room for long worker names.
const PARTITION_BYTES: u64 = 2048;
/// The rest of a record at most: ids, circuit, timings, an error message, the input reference.
const RECORD_BYTES: u64 = 4096;
/// The share of the ledger kept for the critical lane and for estimates that fall short.
pub(crate) const DEFAULT_HEADROOM_PERCENT: u8 = 10;

/// The most bytes a job of `partitions` partitions can hold in the ledger once finished.
pub(crate) fn allowance(partitions: u32) -> u64 {
    RECORD_BYTES + PARTITION_BYTES * u64::from(partitions)
}

#[derive(Debug, Default)]
struct Measured {
    used: u64,
    limit: Option<u64>,
    /// Allowances of the jobs not finished at the measure.
    in_flight: u64,
    /// Allowances of the jobs accepted since the measure.
    accepted_since: u64,
}

/// The ledger's room as last measured, shared by every submit.
#[derive(Debug, Clone)]
pub struct LedgerRoom {
    measured: Arc<Mutex<Measured>>,
    headroom_percent: u8,
}

impl LedgerRoom {
    pub fn new(headroom_percent: u8) -> LedgerRoom {
        LedgerRoom { measured: Arc::default(), headroom_percent: headroom_percent.min(90) }
    }

    /// A measure from the ledger pass: `used` bytes of `limit`, and the allowances of the jobs
    /// not yet finished.
    pub(crate) fn measured(&self, used: u64, limit: Option<u64>, in_flight: u64) {
        let mut m = self.measured.lock().expect("ledger room");
        *m = Measured { used, limit, in_flight, accepted_since: 0 };
    }

    /// Take room for a new job of `partitions` partitions, or refuse it (503 storage_full with
    /// Retry-After) while the ledger could not hold what the jobs in flight may still write.
    pub(crate) fn admit(&self, partitions: u32, critical: bool) -> Result<(), ApiError> {
        let mut m = self.measured.lock().expect("ledger room");
        let Some(limit) = m.limit else { return Ok(()) };
        let usable = if critical { limit } else { limit - limit / 100 * u64::from(self.headroom_percent) };
        let needed = allowance(partitions);
        let promised = m.used.saturating_add(m.in_flight).saturating_add(m.accepted_since);
        if promised.saturating_add(needed) > usable {
            return Err(ApiError::StorageFull(format!(
                "the job ledger is nearly full ({} of {} bytes used, {} promised to jobs in flight); \
                 new jobs are accepted again as records expire (--nats-max-ledger-bytes sizes it)",
                m.used,
                limit,
                m.in_flight + m.accepted_since
            )));
        }
        m.accepted_since += needed;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_refused_while_the_jobs_in_flight_need_the_room() {
        let room = LedgerRoom::new(10);
        // no limit: always room
        assert!(room.admit(1000, false).is_ok());
        let limit = 100 * allowance(1);
        room.measured(50 * allowance(1), Some(limit), 30 * allowance(1));
        // 50 used + 30 promised + 10 headroom leaves 10 one-partition jobs
        for i in 0..10 {
            assert!(room.admit(1, false).is_ok(), "job {i}");
        }
        let refused = room.admit(1, false).unwrap_err();
        assert!(matches!(refused, ApiError::StorageFull(ref m) if m.contains("nearly full")), "{refused:?}");
        // the critical lane has the headroom
        assert!(room.admit(1, true).is_ok());
        // a new measure: the jobs finished (their allowance is in `used` now, nothing in flight)
        room.measured(90 * allowance(1), Some(limit), 0);
        assert!(room.admit(1, false).is_err(), "90 used + the headroom leave nothing");
        assert!(room.admit(1, true).is_ok());
    }

    #[test]
    fn an_allowance_grows_with_the_partitions() {
        assert!(allowance(10) > allowance(1));
        assert_eq!(allowance(10) - allowance(9), PARTITION_BYTES);
    }
}
