//! Recording the shape of a circuit made of a head and `n` equal blocks (a PoRep partition: its
//! public commitments, then one block per challenge) from its first two blocks.
//!
//! Recording runs the gadgets one constraint at a time on one core: 135 s for a 32 GiB PoRep
//! partition, 18 challenges. The blocks differ only in which of their own variables they use,
//! so the shape with one block and the shape with two give the head, the block and how far
//! apart the blocks' variables lie; the other blocks are the second one shifted again, written
//! in parallel. The shape with two blocks must equal the one built that way, else the circuit
//! is recorded whole.

use bellperson::{Circuit, SynthesisError};
use blstrs::Scalar as Fr;
use rayon::prelude::*;

use super::{record_body, ConstraintShape, Fold, ShapeRecorder, SparseMatrix, AUX_FLAG};
use crate::Density;

/// The shape of the circuit `with_blocks(blocks)`, where `with_blocks(m)` is the same circuit
/// with `m` blocks: its head, then `m` blocks that allocate the same variables and constraints
/// in the same order, each using the head's variables and its own only. Equal to
/// [`record_shape`](super::record_shape)`(with_blocks(blocks))`; when the one- and two-block
/// circuits show that the circuit is not made that way, it is what that records.
pub fn record_repeated<C: Circuit<Fr> + Send>(
    with_blocks: impl Fn(usize) -> C + Sync,
    blocks: usize,
    circuit_id: &str,
) -> Result<ConstraintShape, SynthesisError> {
    if blocks < 3 {
        return super::record_shape(with_blocks(blocks), circuit_id);
    }
    // the two recordings at once: the wall time of the longer one
    let (one, two) = rayon::join(|| record_body(with_blocks(1)), || record_body(with_blocks(2)));
    let (one, two) = (one?, two?);
    match Block::between(&one, &two) {
        Some(block) if block.repeat(&one, 2).same_as(&two) => {
            let mut shape = block.repeat(&one, blocks).finish_with_input_rows(circuit_id);
            shape.fold = Some(block.fold(blocks, shape.num_inputs));
            debug_assert!(shape.fold.as_ref().is_some_and(|f| f.holds(&shape)));
            Ok(shape)
        }
        _ => {
            tracing::warn!(circuit_id, "the circuit's blocks are not copies of one another: recording it whole");
            super::record_shape(with_blocks(blocks), circuit_id)
        }
    }
}

/// Where the one-block recording's block starts, and how much one block adds.
#[derive(Debug, Clone, Copy)]
struct Block {
    head_inputs: usize,
    head_aux: usize,
    head_rows: usize,
    inputs: usize,
    aux: usize,
    rows: usize,
    /// Entries of one block in A, B, C, and of the head before it.
    entries: [usize; 3],
    head_entries: [usize; 3],
}

impl Block {
    /// The block, from the recordings with one and with two blocks.
    fn between(one: &ShapeRecorder, two: &ShapeRecorder) -> Option<Block> {
        let rows = two.a.rows().checked_sub(one.a.rows()).filter(|r| *r > 0)?;
        let inputs = two.num_inputs.checked_sub(one.num_inputs)?;
        let aux = two.num_aux.checked_sub(one.num_aux)?;
        let mut entries = [0; 3];
        let mut head_entries = [0; 3];
        let head_rows = one.a.rows().checked_sub(rows)?;
        for (i, (m1, m2)) in one.matrices().into_iter().zip(two.matrices()).enumerate() {
            if m1.rows() != one.a.rows() || m2.rows() != two.a.rows() {
                return None;
            }
            entries[i] = m2.nnz().checked_sub(m1.nnz())?;
            head_entries[i] = m1.nnz().checked_sub(entries[i])?;
            if m1.row_starts[head_rows] as usize != head_entries[i] {
                return None;
            }
        }
        Some(Block {
            head_inputs: one.num_inputs.checked_sub(inputs)?,
            head_aux: one.num_aux.checked_sub(aux)?,
            head_rows,
            inputs,
            aux,
            rows,
            entries,
            head_entries,
        })
    }

    /// The fold of the shape with `blocks` blocks and `num_inputs` inputs in all.
    fn fold(&self, blocks: usize, num_inputs: usize) -> Fold {
        let u32_of = |v: usize| u32::try_from(v).expect("the witness has fewer than 2^32 values");
        Fold {
            head_rows: self.head_rows as u64,
            rows: self.rows as u64,
            blocks: blocks as u64,
            input_start: u32_of(self.head_inputs),
            inputs: u32_of(self.inputs),
            aux_start: u32_of(num_inputs + self.head_aux),
            aux: u32_of(self.aux),
        }
    }

    /// A column of the block as block `k` uses it: its own variables shifted, the head's not.
    fn shift(&self, col: u32, k: usize) -> u32 {
        if col & AUX_FLAG != 0 {
            let j = (col & !AUX_FLAG) as usize;
            if j < self.head_aux {
                return col;
            }
            let shifted = j + k * self.aux;
            assert!(shifted < AUX_FLAG as usize, "more than 2^31 aux variables");
            AUX_FLAG | shifted as u32
        } else if (col as usize) < self.head_inputs {
            col
        } else {
            u32::try_from(col as usize + k * self.inputs).expect("more than 2^32 inputs")
        }
    }

    /// The recording with `n` blocks, built from the one with one block.
    fn repeat(&self, one: &ShapeRecorder, n: usize) -> ShapeRecorder {
        let [a, b, c] = one.matrices();
        let (a, (b, c)) = rayon::join(
            || self.repeat_matrix(a, 0, n),
            || rayon::join(|| self.repeat_matrix(b, 1, n), || self.repeat_matrix(c, 2, n)),
        );
        let (a_aux_density, b_aux_density) = rayon::join(
            || repeat_density(&one.a_aux_density, self.head_aux, self.aux, n),
            || repeat_density(&one.b_aux_density, self.head_aux, self.aux, n),
        );
        ShapeRecorder {
            num_inputs: self.head_inputs + n * self.inputs,
            num_aux: self.head_aux + n * self.aux,
            a,
            b,
            c,
            coeff_table: one.coeff_table.clone(),
            coeff_index: one.coeff_index.clone(),
            a_aux_density,
            b_input_density: repeat_density(&one.b_input_density, self.head_inputs, self.inputs, n),
            b_aux_density,
        }
    }

    fn repeat_matrix(&self, m: &SparseMatrix, which: usize, n: usize) -> SparseMatrix {
        let (head, per) = (self.head_entries[which], self.entries[which]);
        let mut row_starts = Vec::with_capacity(self.head_rows + n * self.rows + 1);
        row_starts.extend_from_slice(&m.row_starts[..=self.head_rows]);
        let block_starts = &m.row_starts[self.head_rows + 1..];
        row_starts.resize(self.head_rows + n * self.rows + 1, 0);
        row_starts[self.head_rows + 1..].par_chunks_mut(self.rows).enumerate().for_each(|(k, out)| {
            for (o, s) in out.iter_mut().zip(block_starts) {
                *o = s + (k * per) as u64;
            }
        });
        let mut cols = vec![0u32; head + n * per];
        cols[..head].copy_from_slice(&m.cols[..head]);
        let block_cols = &m.cols[head..];
        cols[head..].par_chunks_mut(per.max(1)).enumerate().for_each(|(k, out)| {
            for (o, col) in out.iter_mut().zip(block_cols) {
                *o = self.shift(*col, k);
            }
        });
        let mut coeffs = Vec::with_capacity(head + n * per);
        coeffs.extend_from_slice(&m.coeffs[..head]);
        for _ in 0..n {
            coeffs.extend_from_slice(&m.coeffs[head..]);
        }
        SparseMatrix { row_starts, cols, coeffs }
    }
}

/// A density over `head` variables and one block of `per`, for `n` blocks.
fn repeat_density(one: &Density, head: usize, per: usize, n: usize) -> Density {
    let mut out = Density::new();
    for i in 0..head {
        out.push();
        if one.get(i) {
            out.set(i);
        }
    }
    let marked: Vec<usize> = (0..per).filter(|i| one.get(head + i)).collect();
    for _ in 0..n {
        let start = out.len();
        for _ in 0..per {
            out.push();
        }
        for i in &marked {
            out.set(start + i);
        }
    }
    out
}

impl ShapeRecorder {
    fn matrices(&self) -> [&SparseMatrix; 3] {
        [&self.a, &self.b, &self.c]
    }

    /// The same constraints, variables and densities (the coefficient lookup aside).
    fn same_as(&self, other: &ShapeRecorder) -> bool {
        self.num_inputs == other.num_inputs
            && self.num_aux == other.num_aux
            && self.matrices() == other.matrices()
            && self.coeff_table == other.coeff_table
            && self.a_aux_density == other.a_aux_density
            && self.b_input_density == other.b_input_density
            && self.b_aux_density == other.b_aux_density
    }
}
