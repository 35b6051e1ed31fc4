//! Where the resident prover keeps a circuit's key: the memory plan, chosen per circuit when its
//! key is loaded, from the device's free memory and the circuit's sizes.
//!
//! - **Resident**: every parameter point and the constraint matrices on the device; a partition
//!   costs its witness upload only (83–87 GiB at 32 GiB: large cards).
//! - **Partly resident**: the H points and the matrices (read densely by every partition) on the
//!   device; the L, A and B points in page-locked host memory, which the kernels read in place:
//!   only the points whose scalar is not 0 cross PCIe.
//! - **Streamed**: all points and the matrices in page-locked host memory, the matrices on the
//!   device instead when the shape is folded (one block of them: [`FoldDims`]). Matrices on the
//!   host are copied over in chunks of rows as a, b, c are made, the H points in batches into buffers that
//!   h no longer needs, each batch's MSM running while the next is copied; L, A and B as in the
//!   partly resident plan. Where the device has room beyond the plan, a copy of the first H
//!   points stays on it (`MemoryPlan::with_h_front`; opt-in with `SNARKFLOW_H_FRONT=1`: it
//!   did not pay at 32 GiB on an H100), and only the rest of H is streamed.
//! - **Lean**: the streamed plan with a prove's phases one after another, so that they share
//!   device memory: the 0/1 sums and the tail MSMs first, in the room a and b take later; then
//!   a, b and c = a∘b written over the witness; smaller H batches and shape chunks (~14 GiB at
//!   32 GiB: 16 GB cards; crates/cuda-resident/cuda/lean.cuh).
//! - **Compact**: the lean plan in two domain vectors instead of three: the
//!   witness stays compact on the device (about a byte a value) and the products read it there,
//!   c = C·w is made after a and b have gone to the coset (the C matrix stays on the device:
//!   seven NTTs instead of six), and the H batches go into b's halves (~10 GiB at 32 GiB with
//!   its folded shape: 12 GB cards; crates/cuda-resident/cuda/compact.cuh).
//!
//! Each plan has the one-pass H MSM (its ~13.6 GiB workspace at 2^27 points) or sppark's batched
//! one; the best plan that fits wins, in `PlanKind::PREFERENCE` order. This module is
//! arithmetic only (no CUDA), so the choice is tested on any machine.

use std::fmt;

use serde::Serialize;

/// A memory plan's kind (what an operator can force with `--memory-plan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanKind {
    Resident,
    PartlyResident,
    Streamed,
    Lean,
    Compact,
}

impl PlanKind {
    pub const ALL: [PlanKind; 5] =
        [PlanKind::Resident, PlanKind::PartlyResident, PlanKind::Streamed, PlanKind::Lean, PlanKind::Compact];

    pub fn name(self) -> &'static str {
        match self {
            PlanKind::Resident => "resident",
            PlanKind::PartlyResident => "partly-resident",
            PlanKind::Streamed => "streamed",
            PlanKind::Lean => "lean",
            PlanKind::Compact => "compact",
        }
    }

    pub fn parse(name: &str) -> Option<PlanKind> {
        PlanKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The metric's value for the plan (`snarkflow_gpu_memory_plan`): 3 resident, 2 partly
    /// resident, 1 streamed, lean or compact (all stream the key from host memory; the label
    /// names which), 0 is "not the resident prover".
    pub fn level(self) -> i64 {
        match self {
            PlanKind::Resident => 3,
            PlanKind::PartlyResident => 2,
            PlanKind::Streamed | PlanKind::Lean | PlanKind::Compact => 1,
        }
    }

    /// The plans whose prove runs in phases that share device memory (no second lane, no
    /// overlap of the tails with a, b and the NTTs).
    pub fn phased(self) -> bool {
        matches!(self, PlanKind::Lean | PlanKind::Compact)
    }
}

impl fmt::Display for PlanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the operator asked for: the best plan that fits, or one plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlanRequest {
    #[default]
    Auto,
    Only(PlanKind),
}

impl PlanRequest {
    /// `auto` or a plan's name.
    pub fn parse(s: &str) -> Result<PlanRequest, UnknownPlan> {
        if s == "auto" {
            return Ok(PlanRequest::Auto);
        }
        PlanKind::parse(s).map(PlanRequest::Only).ok_or_else(|| UnknownPlan(s.to_owned()))
    }
}

/// A `--memory-plan` that names no plan.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown memory plan {0:?} (auto, {all})", all = PlanKind::ALL.map(PlanKind::name).join(", "))]
pub struct UnknownPlan(String);

mod dims;
use dims::{margin, FR, GIB, MAPPED_STAGING, POINT_BYTES};

/// Device memory [`MemoryPlan::with_h_front`] leaves free beyond the plan's own margin (for a
/// small circuit loaded later without giving the copy back, and the allocator's rounding).
pub const FRONT_SLACK: u64 = 512 << 20;
/// H points the front of H is kept in multiples of (96 MiB).
pub const FRONT_UNIT: u64 = 1 << 20;
pub use dims::{FoldDims, KeyDims, SHAPE_CHUNK};

/// A plan for one circuit on one device, with what it costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryPlan {
    pub kind: PlanKind,
    /// The H MSM in one pass (else sppark's batched MSM, or batches streamed from the host).
    pub one_pass_h: bool,
    /// Sections H, L, A, B-G1, B-G2 in page-locked host memory.
    pub host_sections: [bool; 5],
    pub shape_on_host: bool,
    /// A and B stored with one block of their repeated rows ([`FoldDims`]).
    pub shape_folded: bool,
    /// Witness buffers on the device: 2 lets the next partition's witness upload while one
    /// proves; 1 when there is no room for two.
    pub witness_buffers: usize,
    /// Values each witness buffer holds: the witness, or (lean plan, which makes c in it) the
    /// domain when that is larger; 0 in the compact plan, whose buffers hold the compact form.
    pub witness_capacity: u64,
    /// H points per batch when H is streamed (0: as many as the prove's buffers hold).
    pub h_batch: u64,
    /// Non-zeros per chunk of streamed matrices.
    pub shape_chunk: u64,
    /// H points (the first ones) of which the device keeps a copy where H is streamed and the
    /// device has room to spare ([`MemoryPlan::with_h_front`]): they are not streamed.
    pub h_front: u64,
    /// Device bytes this key needs, its prove buffers included.
    pub device_bytes: u64,
    /// Of those, the buffers every prove shares (a, b, c, splits, MSM workspace): one set per
    /// device, sized by the largest circuit loaded.
    pub prove_bytes: u64,
    /// Page-locked host bytes.
    pub host_bytes: u64,
    /// Bytes that cross PCIe per partition at most: the witness, what is streamed, and every
    /// point of the host sections (only those whose scalar is not 0 cross; the prove reports
    /// the real figure).
    pub pcie_bytes_max: u64,
    /// Device bytes free when it was chosen.
    pub free_bytes: u64,
    /// Why this plan: a sentence for the log.
    pub why: String,
}

impl MemoryPlan {
    fn of(kind: PlanKind, one_pass_h: bool, witness_buffers: usize, dims: &KeyDims) -> MemoryPlan {
        let host_sections = match kind {
            PlanKind::Resident => [false; 5],
            PlanKind::PartlyResident => [false, true, true, true, true],
            PlanKind::Streamed | PlanKind::Lean | PlanKind::Compact => [true; 5],
        };
        let lean = kind == PlanKind::Lean;
        let compact = kind == PlanKind::Compact;
        let shape_chunk = if lean { dims.lean_shape_chunk() } else { dims.shape_chunk() };
        // folded matrices stay on the device where they take no more than the two chunks
        // streaming them would (at 32 GiB PoRep ~0.3 GiB against 0.4–0.8 GiB); the compact
        // plan keeps them, C too, folded or not
        let folded_fits = dims.folded.is_some() && dims.matrix_bytes() <= dims.shape_staging(shape_chunk);
        let shape_on_host = matches!(kind, PlanKind::Streamed | PlanKind::Lean) && !folded_fits;
        let points_on_device: u64 = (0..5).filter(|&s| !host_sections[s]).map(|s| dims.points(s)).sum();
        let points_on_host: u64 = (0..5).filter(|&s| host_sections[s]).map(|s| dims.points(s)).sum();
        let matrices = if shape_on_host {
            dims.whole_matrix_bytes()
        } else if compact {
            dims.matrix_bytes_with_c()
        } else {
            dims.matrix_bytes()
        };
        let h_batch = if lean {
            dims.lean_h_batch()
        } else if compact {
            dims.compact_h_batch()
        } else {
            0
        };
        let witness_capacity = if lean {
            dims.witness_len.max(dims.domain())
        } else if compact {
            0
        } else {
            dims.witness_len
        };
        let staging = if shape_on_host { dims.shape_staging(shape_chunk) } else { 0 };
        let prove_bytes = if compact {
            // a (the whole witness in phase 1) and b (phase 1's lists, tails and staging, then
            // phase 4's H batches in its halves), the H batch's MSM, the sums of the ones and
            // the chunk bookkeeping
            (dims.domain().max(dims.witness_len) + dims.domain()) * FR + dims.streamed_msm_bytes(h_batch) + (64 << 20)
        } else if lean {
            // a and b (phase 1's lists, tails and staging live in them), then the larger of what
            // phase 2 (the shape's staging) and phase 4 (the H batch's MSM) add; the sums of
            // the ones and the chunk bookkeeping (a few MiB)
            2 * dims.domain() * FR + staging.max(dims.streamed_msm_bytes(h_batch)) + (64 << 20)
        } else {
            let h_msm = if host_sections[0] {
                // batches go into b and c
                dims.streamed_msm_bytes(dims.streamed_h_batch())
            } else if one_pass_h {
                dims.one_pass_bytes()
            } else {
                dims.batched_msm_bytes()
            };
            let mapped = if host_sections[1..].iter().any(|&h| h) { MAPPED_STAGING } else { 0 };
            dims.prove_buffers() + h_msm + staging + mapped + dims.dense_query_bytes()
        };
        let device_bytes = points_on_device
            + dims.shape_always()
            + if shape_on_host { 0 } else { matrices }
            + witness_buffers as u64 * (witness_capacity * FR + dims.compact_stage_bytes())
            + prove_bytes;
        let host_bytes = points_on_host + if shape_on_host { matrices } else { 0 };
        let streamed = if shape_on_host { matrices } else { 0 } + if host_sections[0] { dims.points(0) } else { 0 };
        let mapped: u64 = (1..5).filter(|&s| host_sections[s]).map(|s| dims.points(s)).sum();
        MemoryPlan {
            kind,
            one_pass_h: one_pass_h && !host_sections[0],
            host_sections,
            shape_on_host,
            shape_folded: dims.folded.is_some() && !shape_on_host,
            witness_buffers,
            witness_capacity,
            h_batch,
            shape_chunk,
            h_front: 0,
            device_bytes,
            prove_bytes,
            host_bytes,
            pcie_bytes_max: dims.witness_bytes() + streamed + mapped,
            free_bytes: 0,
            why: String::new(),
        }
    }

    /// Every plan, fastest first (measured at 32 GiB on an H200, docs/benchmarks.md): all on the
    /// device, with the one-pass H MSM (1.80 s a partition), then with sppark's batched one
    /// (2.00 s); then partly resident; two witness buffers before one (the next partition's
    /// upload overlaps the prove); the streamed plan, then the lean one, the compact one last.
    fn candidates(dims: &KeyDims) -> Vec<MemoryPlan> {
        let mut out = Vec::new();
        for kind in [PlanKind::Resident, PlanKind::PartlyResident] {
            for one_pass in [true, false] {
                for buffers in [2, 1] {
                    out.push(MemoryPlan::of(kind, one_pass, buffers, dims));
                }
            }
        }
        for buffers in [2, 1] {
            out.push(MemoryPlan::of(PlanKind::Streamed, false, buffers, dims));
        }
        out.push(MemoryPlan::of(PlanKind::Lean, false, 1, dims));
        // the compact plan keeps the three matrices on the device (folded, a large circuit's
        // fit; whole, a small one's) and its witness buffers hold only the compact form
        for buffers in [2, 1] {
            out.push(MemoryPlan::of(PlanKind::Compact, false, buffers, dims));
        }
        // a dense witness's queries are full MSMs over their points: on the device, never read
        // from the host (the split that reads host points would gather every one)
        if dims.dense_witness {
            out.retain(|p| p.kind == PlanKind::Resident);
        }
        out
    }

    /// Bytes the plan needs free on the device, counted with no prove buffers allocated (the
    /// loader frees them first), given those promised to circuits loaded before: one set serves
    /// them all, sized by the largest.
    fn needs(&self, prove_reserved: u64) -> u64 {
        let total = self.device_bytes - self.prove_bytes + self.prove_bytes.max(prove_reserved);
        total + margin(total)
    }

    /// This plan (chosen with `prove_reserved` promised, as [`choose`] was told) with a device
    /// copy of as much of the front of H as the device has room for beyond what the plan needs
    /// and [`FRONT_SLACK`], in whole [`FRONT_UNIT`]s (or all of H): so many points fewer cross PCIe per
    /// partition. Unchanged where H is on the device or the room is less than a unit. The copy
    /// is given back when another key needs the room (`resident.rs`).
    pub fn with_h_front(mut self, dims: &KeyDims, prove_reserved: u64) -> MemoryPlan {
        if !self.host_sections[0] {
            return self;
        }
        let spare = self.free_bytes.saturating_sub(self.needs(prove_reserved) + FRONT_SLACK);
        // the plan's margin grows by a 128th of what the front adds
        let room = spare / 129 * 128 / POINT_BYTES[0];
        let points = if room >= dims.counts[0] { dims.counts[0] } else { room / FRONT_UNIT * FRONT_UNIT };
        let bytes = points * POINT_BYTES[0];
        self.h_front = points;
        self.device_bytes += bytes;
        self.pcie_bytes_max -= bytes;
        self
    }

    /// This plan with `kept` of its [`MemoryPlan::h_front`] points still on the device (the
    /// rest given back for another key).
    pub fn with_front_kept(mut self, kept: u64) -> MemoryPlan {
        let given_back = self.h_front.saturating_sub(kept) * POINT_BYTES[0];
        self.h_front = self.h_front.min(kept);
        self.device_bytes -= given_back;
        self.pcie_bytes_max += given_back;
        self
    }

    /// One line: which plan, its device and host bytes, the most it moves over PCIe.
    pub fn summary(&self) -> String {
        format!(
            "{} plan ({} H MSM{}, {} witness buffer{}{}): {:.1} GiB on the device, {:.1} GiB pinned on the host, ≤ {:.1} GB over PCIe per partition",
            self.kind,
            if self.host_sections[0] {
                "streamed"
            } else if self.one_pass_h {
                "one-pass"
            } else {
                "batched"
            },
            if self.h_front > 0 {
                format!(" ({:.1} GiB of H kept on the device)", (self.h_front * POINT_BYTES[0]) as f64 / GIB)
            } else {
                String::new()
            },
            self.witness_buffers,
            if self.witness_buffers == 1 { "" } else { "s" },
            if self.shape_folded { ", folded shape" } else { "" },
            self.device_bytes as f64 / GIB,
            self.host_bytes as f64 / GIB,
            self.pcie_bytes_max as f64 / 1e9,
        )
    }
}

mod no_plan;
pub use no_plan::NoPlan;

/// The best plan for `dims` with `free` device bytes, of which `prove_reserved` are promised to
/// the prove buffers of circuits already loaded (they are shared); `request` may force a kind,
/// which is then taken even if the estimate says it does not fit (the operator knows better,
/// and the log says so).
pub fn choose(dims: &KeyDims, free: u64, prove_reserved: u64, request: PlanRequest) -> Result<MemoryPlan, NoPlan> {
    let all = MemoryPlan::candidates(dims);
    let candidates: Vec<MemoryPlan> = all
        .iter()
        .filter(|p| match request {
            PlanRequest::Auto => true,
            PlanRequest::Only(kind) => p.kind == kind,
        })
        .cloned()
        .collect();
    if candidates.is_empty() {
        // a plan forced that a dense witness cannot have: what the one it can have needs
        let smallest = all.iter().min_by_key(|p| p.needs(prove_reserved)).expect("the resident plans");
        let needs = smallest.needs(prove_reserved) as f64 / GIB;
        return Err(NoPlan { smallest: smallest.kind, needed_gib: needs, free_gib: free as f64 / GIB });
    }
    let mut smallest: Option<(usize, u64)> = None;
    for (i, plan) in candidates.iter().enumerate() {
        let needs = plan.needs(prove_reserved);
        if smallest.is_none_or(|(_, n)| needs < n) {
            smallest = Some((i, needs));
        }
        if needs <= free {
            let mut plan = plan.clone();
            plan.free_bytes = free;
            plan.why = match request {
                PlanRequest::Auto => format!(
                    "the fastest plan that fits: {:.1} GiB needed of {:.1} GiB free",
                    needs as f64 / GIB,
                    free as f64 / GIB
                ),
                PlanRequest::Only(_) => "chosen with --memory-plan".into(),
            };
            return Ok(plan);
        }
    }
    let (i, needs) = smallest.expect("every kind has a candidate");
    let kind = candidates[i].kind;
    if let PlanRequest::Only(_) = request {
        let mut plan = candidates[i].clone();
        plan.free_bytes = free;
        plan.why = format!(
            "chosen with --memory-plan although it needs about {:.1} GiB of {:.1} GiB free",
            needs as f64 / GIB,
            free as f64 / GIB
        );
        return Ok(plan);
    }
    Err(NoPlan { smallest: kind, needed_gib: needs as f64 / GIB, free_gib: free as f64 / GIB })
}

/// Whether `with_room` (chosen with more free memory) is a better plan than `now`: one where
/// there was none, or one before it in [`MemoryPlan::candidates`]' order (the faster).
pub fn is_better(with_room: &Result<MemoryPlan, NoPlan>, now: &Result<MemoryPlan, NoPlan>) -> bool {
    let rank = |p: &MemoryPlan| {
        let kind = PlanKind::ALL.iter().position(|&k| k == p.kind);
        (kind, !p.one_pass_h, std::cmp::Reverse(p.witness_buffers))
    };
    match (with_room, now) {
        (Ok(_), Err(_)) => true,
        (Ok(a), Ok(b)) => rank(a) < rank(b),
        (Err(_), _) => false,
    }
}

mod lanes;
pub use lanes::second_lane_bytes;

#[cfg(test)]
mod tests;
