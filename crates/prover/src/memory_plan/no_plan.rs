//! No memory plan for a circuit on a device ([`NoPlan`]).

use super::PlanKind;

/// No plan fits: what the smallest needs, what is free.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the resident prover has no memory plan for this circuit on this device: its smallest ({smallest}) needs {needed_gib:.1} GiB of device memory, {free_gib:.1} GiB are free"
)]
pub struct NoPlan {
    pub smallest: PlanKind,
    pub needed_gib: f64,
    pub free_gib: f64,
}
