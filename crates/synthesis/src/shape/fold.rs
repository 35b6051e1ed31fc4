//! A shape's repeated blocks, folded: a PoRep partition's 18 challenges (or a WindowPoSt
//! partition's 2,349 sectors) are the same rows with their own variables, so a prover that
//! stores one block and shifts its columns per block holds the matrices in a fraction of their
//! size (5.2 GiB of A and B at 32 GiB PoRep become ~0.3 GiB).
//!
//! [`record_repeated`](super::record_repeated) knows the fold of what it records; a shape file
//! stores it, and a file's fold is checked against the matrices on read, like everything else
//! that is not hashed.

use rayon::prelude::*;

use super::{ConstraintShape, SparseMatrix};

/// Rows `[head_rows, head_rows + blocks·rows)` of every matrix are `blocks` copies of the
/// first block's rows: block `k` uses the columns block 0 uses, those in the block's own inputs
/// `[input_start, input_start + inputs)` moved by `k·inputs` and those in its own aux
/// `[aux_start, aux_start + aux)` by `k·aux` (columns are indices into `[inputs | aux]`), with
/// the same coefficients. The rows after the blocks (bellperson's one row per input) are as
/// they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fold {
    pub head_rows: u64,
    pub rows: u64,
    pub blocks: u64,
    pub input_start: u32,
    pub inputs: u32,
    pub aux_start: u32,
    pub aux: u32,
}

/// A matrix as a folded prover stores it: the head's rows, the first block's, and the rows
/// after the blocks, with row starts from 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedMatrix {
    pub row_starts: Vec<u64>,
    pub cols: Vec<u32>,
    pub coeffs: Vec<u32>,
}

impl Fold {
    /// Block `k`'s column for block 0's column `col`.
    pub fn shift(&self, col: u32, k: u64) -> u64 {
        let col64 = u64::from(col);
        if col.wrapping_sub(self.input_start) < self.inputs {
            col64 + k * u64::from(self.inputs)
        } else if col.wrapping_sub(self.aux_start) < self.aux {
            col64 + k * u64::from(self.aux)
        } else {
            col64
        }
    }

    /// Where row `r` of the whole matrix is stored in the folded one, and which block it is in
    /// (0 outside the blocks): its columns are the stored row's [shifted](Self::shift) by it.
    pub fn stored_row(&self, r: u64) -> (u64, u64) {
        let blocks_end = self.head_rows + self.blocks * self.rows;
        if r < self.head_rows {
            (r, 0)
        } else if r < blocks_end {
            let (k, j) = ((r - self.head_rows) / self.rows, (r - self.head_rows) % self.rows);
            (self.head_rows + j, k)
        } else {
            (r - (self.blocks - 1) * self.rows, 0)
        }
    }

    /// Rows a folded matrix stores.
    pub fn stored_rows(&self, rows: usize) -> usize {
        rows - (self.blocks.saturating_sub(1) * self.rows) as usize
    }

    /// Entries a folded `m` stores.
    pub fn stored_nnz(&self, m: &SparseMatrix) -> usize {
        let (head, per) = (self.head_rows as usize, self.rows as usize);
        let block = (m.row_starts[head + per] - m.row_starts[head]) as usize;
        m.nnz() - self.blocks.saturating_sub(1) as usize * block
    }

    /// Whether the fold describes a matrix of `total` rows over a witness of `width` values.
    fn fits(&self, total: usize, width: usize) -> bool {
        let blocks_end = self.rows.checked_mul(self.blocks).and_then(|b| b.checked_add(self.head_rows));
        let columns_end = |start: u32, per: u32| {
            u64::from(per).checked_mul(self.blocks).and_then(|b| b.checked_add(u64::from(start)))
        };
        self.blocks >= 1
            && self.rows >= 1
            && blocks_end.is_some_and(|e| e <= total as u64)
            && columns_end(self.input_start, self.inputs).is_some_and(|e| e <= width as u64)
            && columns_end(self.aux_start, self.aux).is_some_and(|e| e <= width as u64)
    }

    /// Whether every block of `m` is block 0 shifted (`m` has the rows [`fits`](Self::fits) saw).
    fn holds_for(&self, m: &SparseMatrix) -> bool {
        let starts = &m.row_starts;
        let (head, per) = (self.head_rows as usize, self.rows as usize);
        if m.rows() < head + self.blocks as usize * per || m.cols.len() != m.coeffs.len() {
            return false;
        }
        let first = starts[head] as usize..starts[head + per] as usize;
        (1..self.blocks).into_par_iter().all(|k| {
            let at = head + k as usize * per;
            let base = starts[at] as usize;
            starts[at..=at + per]
                .iter()
                .zip(&starts[head..=head + per])
                .all(|(s, s0)| s - base as u64 == s0 - first.start as u64)
                && m.coeffs[base..base + first.len()] == m.coeffs[first.clone()]
                && m.cols[base..base + first.len()]
                    .iter()
                    .zip(&m.cols[first.clone()])
                    .all(|(&c, &c0)| u64::from(c) == self.shift(c0, k))
        })
    }

    /// Whether the fold is true of all three matrices of `shape` (which must have as many rows).
    pub fn holds(&self, shape: &ConstraintShape) -> bool {
        let width = shape.num_inputs + shape.num_aux;
        let rows = shape.num_constraints();
        let same_rows = shape.b.rows() == rows && shape.c.rows() == rows;
        same_rows && self.fits(rows, width) && [&shape.a, &shape.b, &shape.c].iter().all(|m| self.holds_for(m))
    }

    /// `m` as a folded prover stores it.
    pub fn fold(&self, m: &SparseMatrix) -> FoldedMatrix {
        let starts = &m.row_starts;
        let (head, per) = (self.head_rows as usize, self.rows as usize);
        let after = head + self.blocks as usize * per;
        let kept = starts[head + per] as usize;
        let skipped = starts[after] - kept as u64;
        let mut row_starts = starts[..=head + per].to_vec();
        row_starts.extend(starts[after + 1..].iter().map(|s| s - skipped));
        let join = |v: &[u32]| [&v[..kept], &v[starts[after] as usize..]].concat();
        FoldedMatrix { row_starts, cols: join(&m.cols), coeffs: join(&m.coeffs) }
    }
}

/// `18 blocks of 7237665 rows after 571`
impl std::fmt::Display for Fold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} blocks of {} rows after {}", self.blocks, self.rows, self.head_rows)
    }
}

impl ConstraintShape {
    /// The shape's repeated blocks, where it was recorded as copies of one block.
    pub fn fold(&self) -> Option<&Fold> {
        self.fold.as_ref()
    }
}
