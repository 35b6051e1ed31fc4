//! The memory budget: a partition is admitted only when its estimated bytes fit in what the
//! worker's budget has left, so concurrency and prefetch are capped by memory, never by a
//! count alone. A partition larger than the whole budget is refused at once (the job fails
//! with a clear error) instead of being admitted into an OOM kill.

use std::sync::Arc;

use tokio::sync::Semaphore;

/// `--memory-budget`, as both workers take it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MemoryBudgetArgs {
    /// Memory the partitions in flight may hold together (bytes, or with a unit: `96GiB`).
    /// A partition is admitted only when its estimate (from its circuit's constraint shape)
    /// fits, so concurrency and prefetch are capped by memory, not by a count alone; one
    /// larger than the whole budget fails its job. Resident parameters and shapes are not
    /// counted. Default: 60% of the host's memory, leaving room for them, the OS and
    /// co-located services.
    #[arg(long, env = "SNARKFLOW_MEMORY_BUDGET", value_parser = snarkflow_service::parse_bytes)]
    pub memory_budget: Option<u64>,
}

/// Share of the host's memory a worker's partitions get when no budget is configured.
const DEFAULT_HOST_FRACTION: f64 = 0.6;

impl MemoryBudgetArgs {
    pub fn budget(&self) -> MemoryBudget {
        self.memory_budget
            .map(MemoryBudget::new)
            .unwrap_or_else(|| MemoryBudget::fraction_of_host(DEFAULT_HOST_FRACTION))
    }
}

/// Budget accounting is in MiB units (a semaphore holds at most `u32::MAX` permits per acquire).
const UNIT: u64 = 1 << 20;

/// Bytes a worker may spend on partitions in flight.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    bytes: u64,
    units: Arc<Semaphore>,
}

/// Memory held by one admitted partition; returned to the budget when dropped.
#[derive(Debug)]
pub struct Admission {
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
    pub bytes: u64,
}

/// A partition that can never fit this worker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the partition needs about {} of memory but this worker's --memory-budget is {}", gib(*.needed), gib(*.budget))]
pub struct TooLarge {
    pub needed: u64,
    pub budget: u64,
}

/// `12.3 GiB`.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

impl MemoryBudget {
    pub fn new(bytes: u64) -> Self {
        let units = bytes.div_ceil(UNIT).min(Semaphore::MAX_PERMITS as u64) as usize;
        MemoryBudget { bytes, units: Arc::new(Semaphore::new(units)) }
    }

    /// A budget of `fraction` of this host's memory (`MemTotal` in `/proc/meminfo`); 16 GiB
    /// where that cannot be read.
    pub fn fraction_of_host(fraction: f64) -> Self {
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| m.lines().find(|l| l.starts_with("MemTotal:")).map(str::to_owned))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|kib| kib.parse::<u64>().ok()))
            .map(|kib| kib * 1024)
            .unwrap_or(16 << 30);
        MemoryBudget::new((total as f64 * fraction) as u64)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes not held by admitted partitions now.
    pub fn available(&self) -> u64 {
        self.units.available_permits() as u64 * UNIT
    }

    /// Wait until `bytes` fit, then hold them; an estimate of 0 is admitted at once.
    pub async fn admit(&self, bytes: u64) -> Result<Admission, TooLarge> {
        if bytes > self.bytes {
            return Err(TooLarge { needed: bytes, budget: self.bytes });
        }
        if bytes == 0 {
            return Ok(Admission { _permit: None, bytes });
        }
        let units = bytes.div_ceil(UNIT).min(u32::MAX as u64) as u32;
        let permit = self.units.clone().acquire_many_owned(units).await.expect("the budget is never closed");
        Ok(Admission { _permit: Some(permit), bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn admissions_wait_for_room_and_give_it_back() {
        let budget = MemoryBudget::new(3 << 30);
        let first = budget.admit(2 << 30).await.unwrap();
        assert_eq!(budget.available(), 1 << 30);
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.admit(2 << 30).await.map(|a| a.bytes) }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a second 2 GiB partition does not fit beside the first");
        drop(first);
        assert_eq!(waiting.await.unwrap(), Ok(2 << 30));
    }

    #[tokio::test]
    async fn a_partition_larger_than_the_budget_is_refused_at_once() {
        let budget = MemoryBudget::new(1 << 30);
        let err = budget.admit(5 << 30).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "the partition needs about 5.0 GiB of memory but this worker's --memory-budget is 1.0 GiB"
        );
    }
}
