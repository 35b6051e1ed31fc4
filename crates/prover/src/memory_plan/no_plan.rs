//! No memory plan for a circuit on a device ([`NoPlan`]), and the opt-in that lets `auto` take
//! the compact plan.

use super::{MemoryPlan, PlanKind, PlanRequest, GIB};

/// No plan fits: what the smallest needs, what is free; or (`opt_in`) the only plan that fits
/// is one not yet taken unless asked for (the compact plan: [`compact_opt_in`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct NoPlan {
    pub smallest: PlanKind,
    pub needed_gib: f64,
    pub free_gib: f64,
    pub opt_in: bool,
}

impl NoPlan {
    fn describe(&self) -> String {
        if self.opt_in {
            return format!(
                "the resident prover's only memory plan for this circuit on this device is the {} plan ({:.1} GiB needed, {:.1} GiB free), which is taken only when asked for until it has proved at 32 GiB on a device: set SNARKFLOW_COMPACT_PLAN=1 or --memory-plan {}",
                self.smallest, self.needed_gib, self.free_gib, self.smallest
            );
        }
        format!(
            "the resident prover has no memory plan for this circuit on this device: its smallest ({}) needs {:.1} GiB of device memory, {:.1} GiB are free",
            self.smallest, self.needed_gib, self.free_gib
        )
    }

    /// `plan`, unless `request` is `auto`, it is the compact plan and that is not opted into.
    pub fn unless_opt_in(plan: MemoryPlan, request: PlanRequest, opted_in: bool) -> Result<MemoryPlan, NoPlan> {
        if plan.kind != PlanKind::Compact || request != PlanRequest::Auto || opted_in {
            return Ok(plan);
        }
        let gib = |b: u64| b as f64 / GIB;
        Err(NoPlan {
            smallest: plan.kind,
            needed_gib: gib(plan.needs(0)),
            free_gib: gib(plan.free_bytes),
            opt_in: true,
        })
    }
}

/// Whether `auto` may choose the compact plan (`SNARKFLOW_COMPACT_PLAN=1`): opt-in until a
/// 32 GiB partition has proved in it on a 12 GB card (exact at 2 KiB–512 MiB on an H100,
/// docs/benchmarks.md); `--memory-plan compact` takes it regardless.
pub fn compact_opt_in() -> bool {
    std::env::var("SNARKFLOW_COMPACT_PLAN").is_ok_and(|v| v.trim() == "1")
}
