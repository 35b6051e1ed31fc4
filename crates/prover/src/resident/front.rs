//! The front of H kept on the device (`SNARKFLOW_H_FRONT=1`, opt-in: exact, but at 32 GiB on
//! an H100 it did not shorten a partition, the streamed H MSM being bound by its kernels rather
//! than by PCIe; docs/benchmarks.md, 2026-12-06): in a plan that streams the H points, a copy of as many of the first ones as the
//! device has room for beyond the plan ([`MemoryPlan::with_h_front`]), so that fewer cross PCIe
//! per partition. The room is lent, not promised: a key loaded later that would get a better
//! plan with it (or none without it) gets it, and the copies are given back.

use std::sync::{Arc, Mutex, Weak};

use snarkflow_cuda_resident::{self as dev, Device};

use crate::memory_plan::{self, KeyDims, MemoryPlan, NoPlan, PlanRequest};

/// Whether plans that stream H keep its front on the device.
pub(super) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SNARKFLOW_H_FRONT").is_ok_and(|v| v == "1"))
}

/// `SNARKFLOW_H_FRONT_POINTS`: at most so many points (to check a front that is not the whole
/// of H on a device where small circuits have room for all of it).
fn most_points() -> u64 {
    static MOST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MOST
        .get_or_init(|| std::env::var("SNARKFLOW_H_FRONT_POINTS").ok().and_then(|v| v.parse().ok()).unwrap_or(u64::MAX))
}

/// The keys holding a copy of the front of H, by device ordinal.
static FRONTS: Mutex<Vec<(u32, Weak<dev::Srs>)>> = Mutex::new(Vec::new());

/// The live keys on `ordinal` with a copy (dropped keys pruned).
fn holders(ordinal: u32) -> Vec<Arc<dev::Srs>> {
    let mut fronts = FRONTS.lock().unwrap_or_else(|e| e.into_inner());
    fronts.retain(|(_, srs)| srs.strong_count() > 0);
    fronts.iter().filter(|(o, _)| *o == ordinal).filter_map(|(_, srs)| srs.upgrade()).collect()
}

/// The plan for a key with `dims` on `device` (as [`memory_plan::choose`] with the device's
/// free memory less `lane_reserved`), the room other keys' copies of H take counted as free
/// where it makes the plan better: then they are given back first. With the front on, the
/// plan keeps as much of its own H on the device as the rest of the room holds.
pub(super) fn choose(
    device: &Device,
    dims: &KeyDims,
    request: PlanRequest,
    (main_reserved, lane_reserved): (u64, u64),
) -> Result<Result<MemoryPlan, NoPlan>, dev::Error> {
    let free = || -> Result<u64, dev::Error> { Ok(device.memory()?.0.saturating_sub(lane_reserved)) };
    let pick = |free: u64| memory_plan::choose(dims, free, main_reserved, request);
    let mut plan = pick(free()?);
    let lent = holders(device.ordinal());
    let held: u64 = lent.iter().map(|srs| srs.h_front() as u64 * 96).sum();
    // (no plan even with the room: given back all the same, for the prover the circuit falls
    // back to)
    if held > 0 && (plan.is_err() || memory_plan::is_better(&pick(free()? + held), &plan)) {
        let given: u64 = lent.iter().map(|srs| srs.drop_h_front()).sum();
        tracing::info!(
            given_back_bytes = given,
            "gave back the device's copies of the front of H: the circuit loading needs their room"
        );
        plan = pick(free()?);
    }
    Ok(plan.map(|p| if enabled() { p.with_h_front(dims, main_reserved).with_front_kept(most_points()) } else { p }))
}

/// Copy the front of H that `plan` keeps to the device and lend it; where the copy fails (the
/// estimate was off), the plan without it.
pub(super) fn keep(srs: &Arc<dev::Srs>, ordinal: u32, plan: MemoryPlan) -> MemoryPlan {
    if plan.h_front == 0 {
        return plan;
    }
    match srs.keep_h_front(plan.h_front as usize) {
        Ok(()) => {
            FRONTS.lock().unwrap_or_else(|e| e.into_inner()).push((ordinal, Arc::downgrade(srs)));
            plan
        }
        Err(e) => {
            tracing::warn!(points = plan.h_front, error = %e, "could not keep the front of H on the device: all of H is streamed");
            plan.with_front_kept(0)
        }
    }
}

/// `code` is CUDA's "out of memory".
pub(super) fn out_of_memory(e: &dev::Error) -> bool {
    e.code == 2
}
