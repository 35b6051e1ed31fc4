//! Room for a second prove lane (`SNARKFLOW_PROVE_LANES=2`, the resident prover's
//! `resident/lanes.rs`): what it adds to a key's plan, and whether the device has it.

use super::MemoryPlan;

/// Device bytes a second lane adds to `plan` (chosen for a device with `plan.free_bytes` free
/// once the lane buffers other keys hold, `lane_reserved`, are set aside): its own set of prove
/// buffers where this key's are larger than those, and one more witness buffer (with its
/// compact staging, about a byte a value), so that a third partition can be staged while two
/// prove. An error saying why where the plan has no room for it (`main_reserved`: the prove
/// buffers other loaded keys promised on the first lane, as `memory_plan::choose` counts them)
/// or is the lean or compact plan, whose phases share the memory of one prove.
pub fn second_lane_bytes(
    plan: &MemoryPlan,
    witness_len: u64,
    main_reserved: u64,
    lane_reserved: u64,
) -> Result<u64, String> {
    if plan.kind.phased() {
        return Err(format!("the {} plan proves one partition at a time", plan.kind));
    }
    let lane = plan.prove_bytes.saturating_sub(lane_reserved) + plan.witness_capacity * 32 + witness_len;
    let one_lane = plan.device_bytes - plan.prove_bytes + plan.prove_bytes.max(main_reserved);
    let needed = one_lane + lane;
    // the planner's margin on the whole, and a GiB for what the estimates miss
    let needed = needed + needed / 128 + (1 << 30);
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    if needed > plan.free_bytes {
        return Err(format!("two lanes need ~{:.1} GiB, {:.1} GiB are free", gib(needed), gib(plan.free_bytes)));
    }
    Ok(lane)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory_plan::tests::porep_32gib;
    use crate::memory_plan::{self, PlanKind, PlanRequest};

    #[test]
    fn a_second_lane_fits_an_h200_and_not_an_80_gb_card_at_32_gib() {
        const GIB: u64 = 1 << 30;
        let dims = porep_32gib();
        let h200 = memory_plan::choose(&dims, 139 * GIB, 0, PlanRequest::Auto).unwrap();
        assert_eq!(h200.kind, PlanKind::Resident);
        let lane = second_lane_bytes(&h200, dims.witness_len, 0, 0).expect("room on an H200");
        // another a, b, c (12 GiB at 2^27) and MSM workspace, and one more witness buffer
        assert!(lane > h200.prove_bytes && lane < h200.prove_bytes + 5 * GIB, "{lane}");
        let card = memory_plan::choose(&dims, 79 * GIB, 0, PlanRequest::Auto).unwrap();
        let why = second_lane_bytes(&card, dims.witness_len, 0, 0).unwrap_err();
        assert!(why.starts_with("two lanes need"), "{why}");
        // the prove buffers another key promised count as well
        let nearly = second_lane_bytes(&h200, dims.witness_len, 60 * GIB, 0);
        assert!(nearly.is_err(), "{nearly:?}");
        // lane buffers another key already holds are only grown, not made again
        let held = second_lane_bytes(&h200, dims.witness_len, 0, h200.prove_bytes).unwrap();
        assert_eq!(held, lane - h200.prove_bytes);
        let lean = memory_plan::choose(&dims, 139 * GIB, 0, PlanRequest::Only(PlanKind::Lean)).unwrap();
        assert!(second_lane_bytes(&lean, dims.witness_len, 0, 0).is_err());
    }
}
