//! The sizes of a circuit's key and what each of the device's buffers takes: the arithmetic
//! the plans in `memory_plan.rs` add up, calibrated on measured peaks at 32 GiB.

/// The sizes of one circuit that decide where its key fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDims {
    /// Points of H, L, A, B-G1, B-G2.
    pub counts: [u64; 5],
    /// Constraints (rows of each matrix).
    pub rows: u64,
    /// Non-zeros of A, B, C.
    pub nnz: [u64; 3],
    /// Entries of the coefficient table.
    pub table_len: u64,
    /// `[inputs | aux]`.
    pub witness_len: u64,
    /// What the device stores of A and B when the shape's repeated blocks are stored once
    /// (`snarkflow_synthesis::Fold`): then the matrices stay on the device in every plan.
    pub folded: Option<FoldDims>,
    /// Most witness values are neither 0 nor 1 (PoSt): the L, A and B queries are full MSMs on
    /// the device (queries.cuh's "not split" path), so their points must be there too.
    pub dense_witness: bool,
}

/// A folded shape's matrices as the device stores them: the head, one block, the rows after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldDims {
    pub rows: u64,
    /// Non-zeros of A, B and C stored.
    pub nnz: [u64; 3],
}

pub(super) const G1: u64 = 96;
pub(super) const G2: u64 = 192;
pub(super) const FR: u64 = 32;
pub(super) const POINT_BYTES: [u64; 5] = [G1, G1, G1, G1, G2];
/// Bytes of a Pippenger bucket in XYZZ form.
pub(super) const BUCKET: u64 = 192;
pub(super) const GIB: f64 = (1u64 << 30) as f64;
/// Non-zeros per streamed chunk of the matrices (the device code's default).
pub const SHAPE_CHUNK: u64 = 1 << 25;
/// The two device slots the 1s' points of host sections pass through (`MAPPED_CHUNK` G2 points
/// each, in the device code).
pub(super) const MAPPED_STAGING: u64 = 2 * (1 << 20) * G2;

/// Left free beyond the estimate: allocator rounding, a denser witness's larger tails. The
/// estimates below are calibrated on measured peaks at 32 GiB (docs/benchmarks.md).
pub(super) fn margin(total: u64) -> u64 {
    (512u64 << 20) + total / 128
}

/// What msm_one_pass.cuh's plan for `n` points keeps on the device with buckets of `bucket`
/// bytes: digits, sort space (the segments' heads live in it too), histogram, buckets, runs.
pub(super) fn one_pass_workspace(n: u64, bucket: u64) -> u64 {
    let n = n.max(1);
    let stride = n.div_ceil(32) * 32;
    let lg = 64 - (n + n / 2).leading_zeros() as u64 - 1;
    let wbits = if n >= 1 << 25 { 21 } else { (lg.max(18) - 8).min(18) };
    let nwins = 254 / wbits + 1;
    let row = 1u64 << (wbits - 1);
    nwins * stride * 4 + 4 * stride * 8 + nwins * row * (4 + bucket) + 2 * nwins * (row >> 9) * bucket
}

impl KeyDims {
    /// The evaluation domain: constraints rounded up to a power of two.
    pub fn domain(&self) -> u64 {
        self.rows.max(1).next_power_of_two()
    }

    pub(super) fn points(&self, section: usize) -> u64 {
        self.counts[section] * POINT_BYTES[section]
    }

    /// The matrices as the device stores them (row starts, columns, coefficient indices): A and
    /// B only, since c = a∘b on the domain for a satisfied system; one block of them if folded.
    pub fn matrix_bytes(&self) -> u64 {
        match self.folded {
            Some(f) => 2 * (f.rows + 1) * 8 + (f.nnz[0] + f.nnz[1]) * 8,
            None => self.whole_matrix_bytes(),
        }
    }

    /// The matrices as the compact plan stores them: A, B and C, folded where the shape is.
    pub fn matrix_bytes_with_c(&self) -> u64 {
        match self.folded {
            Some(f) => 3 * (f.rows + 1) * 8 + (f.nnz[0] + f.nnz[1] + f.nnz[2]) * 8,
            None => self.whole_matrix_bytes() + (self.rows + 1) * 8 + self.nnz[2] * 8,
        }
    }

    /// A and B with every row, as the streamed plans keep them on the host.
    pub fn whole_matrix_bytes(&self) -> u64 {
        2 * (self.rows + 1) * 8 + (self.nnz[0] + self.nnz[1]) * 8
    }

    /// What stays on the device in every plan: the coefficient table and the A/B gather lists.
    pub(super) fn shape_always(&self) -> u64 {
        self.table_len * FR + (self.counts[2] + self.counts[3]) * 4
    }

    /// One witness buffer on the device.
    pub fn witness_bytes(&self) -> u64 {
        self.witness_len * FR
    }

    /// The device staging a witness buffer keeps for its compact form (2 bits and an eighth of
    /// an offset per value, the values that are neither 0 nor 1 — a 64th planned, 1.3 % at
    /// 32 GiB — and an eighth more for partitions that differ): about a byte per value.
    pub(super) fn compact_stage_bytes(&self) -> u64 {
        self.witness_len
    }

    /// The buffers of one prove whatever the plan: a, b, c, the 0/1 split of the L, A, B
    /// scalars (one index list each: the 1s from its front, the others from its back), and the tail MSMs' gathered points and scalars (room for
    /// a 64th of the points: Filecoin witnesses are bits, 1.3 % tails at 32 GiB; a denser
    /// witness grows them on demand).
    pub(super) fn prove_buffers(&self) -> u64 {
        let abc = 3 * self.domain() * FR;
        let split = 4 * (self.counts[1] + self.counts[2] + self.counts[3]);
        let tails =
            (self.counts[1] + self.counts[2] + self.counts[3]) / 64 * (G1 + FR) + self.counts[4] / 64 * (G2 + FR);
        // the tail MSMs' one-pass workspace, kept for the largest (G2 buckets are twice G1's)
        let tail_msm = one_pass_workspace(self.counts[1..].iter().max().copied().unwrap_or(0) / 64, 2 * BUCKET);
        abc + split + tails + tail_msm
    }

    /// What full MSMs of the L, A and B queries add for a dense witness: the gathered scalars of
    /// the larger of A and B, and sppark's MSM workspace for the largest query, counted per
    /// point as [`KeyDims::batched_msm_bytes`] (a G2 point's twice a G1's). Not yet measured.
    pub(super) fn dense_query_bytes(&self) -> u64 {
        if !self.dense_witness {
            return 0;
        }
        let scalars = self.counts[2].max(self.counts[3]) * FR;
        let g1 = self.counts[1].max(self.counts[2]).max(self.counts[3]) * 78;
        scalars + g1.max(self.counts[4] * 2 * 78) + (64 << 20)
    }

    /// The one-pass H MSM's workspace (msm_one_pass.cuh's plan for m − 1 points).
    pub(super) fn one_pass_bytes(&self) -> u64 {
        one_pass_workspace(self.counts[0], BUCKET)
    }

    /// sppark's batched MSM over the H points (its digits, sort space, histogram and buckets,
    /// and its memory pool): 9.8 GiB at 2^27 points, measured (peak device use of the resident
    /// plan with it on a simulated 80 GB card: 78.6 GiB where 74.5 were planned with 5.8 GiB
    /// here, 2026-12-05; the partly resident plan was under by as much on 2026-12-04).
    pub(super) fn batched_msm_bytes(&self) -> u64 {
        self.counts[0] * 78 + (64 << 20)
    }

    /// sppark's MSM over one batch of `batch` H points streamed from the host: 1.7 GiB for a
    /// third of the domain at 2^27 points (the streamed plan's batches, in b or c), measured the
    /// same way; taken as proportional to the batch.
    pub(super) fn streamed_msm_bytes(&self, batch: u64) -> u64 {
        batch * 42 + (64 << 20)
    }

    /// H points per batch in the streamed plan: as many as b or c hold.
    pub(super) fn streamed_h_batch(&self) -> u64 {
        (self.domain() * FR / G1).min(self.counts[0])
    }

    /// H points per batch in the lean plan: an eighth of the domain (its MSM's workspace is
    /// the lean plan's largest after the three vectors).
    pub fn lean_h_batch(&self) -> u64 {
        (self.domain() / 8).clamp(1, self.counts[0].max(1))
    }

    /// H points per batch in the compact plan: a sixteenth of the domain (two batches are in
    /// b's halves; the MSM's workspace is what the plan holds beyond its two vectors).
    pub fn compact_h_batch(&self) -> u64 {
        (self.domain() / 16).clamp(1, self.counts[0].max(1))
    }

    /// The two staging slots of streamed matrices, `chunk` non-zeros each.
    pub(super) fn shape_staging(&self, chunk: u64) -> u64 {
        2 * ((chunk / 2 + 1) * 8 + chunk * 8)
    }

    /// Non-zeros per streamed chunk: the default, or the larger of A and B when smaller.
    pub fn shape_chunk(&self) -> u64 {
        SHAPE_CHUNK.min(self.nnz[0].max(self.nnz[1]).max(1024))
    }

    /// Non-zeros per streamed chunk in the lean plan: half the default.
    pub fn lean_shape_chunk(&self) -> u64 {
        (SHAPE_CHUNK / 2).min(self.shape_chunk())
    }

    /// Bytes of the key: all five sections.
    pub fn key_bytes(&self) -> u64 {
        (0..5).map(|s| self.points(s)).sum()
    }
}
