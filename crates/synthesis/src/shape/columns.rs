//! Mᵀ·v for the shape's matrices: with the Lagrange basis at τ as v, the QAP polynomials of
//! every variable at τ (parameter generation).

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use super::{ConstraintShape, SparseMatrix};

/// Rows per run: the unit in which the QAP evaluation notes which columns rows touch.
const ROWS: usize = 1 << 12;

impl ConstraintShape {
    /// Mᵀ·v for M in {A, B, C}: per variable (inputs first, then aux), the sum over constraints
    /// of the variable's coefficient times `row_values[constraint]`. With the Lagrange basis at
    /// τ as `row_values` these are the QAP polynomials evaluated at τ (parameter generation).
    pub fn column_evaluations(&self, row_values: &[Fr]) -> [Vec<Fr>; 3] {
        let width = self.num_inputs + self.num_aux;
        let threads = rayon::current_num_threads().max(1);
        let runs = self.num_constraints().div_ceil(ROWS);
        self.column_evaluations_in(row_values, width.div_ceil(4 * threads).max(1 << 16), runs.div_ceil(threads))
    }

    /// [`column_evaluations`](Self::column_evaluations) with the columns cut into stretches
    /// of `stretch`, and a stretch's runs of rows split into parts of at most `most_runs`.
    fn column_evaluations_in(&self, row_values: &[Fr], stretch: usize, most_runs: usize) -> [Vec<Fr>; 3] {
        assert!(row_values.len() >= self.num_constraints(), "one value per constraint");
        // most coefficients are ±1: an addition instead of a product
        let sign = signs(&self.coeff_table);
        // The columns are cut into stretches (several per thread); each stretch's task adds
        // only the entries that fall in it, so no two tasks write one value. A first pass
        // notes, per run of ROWS rows, which stretches (up to 64 groups of them) its entries
        // touch, and a task reads only the runs that touch its own: in a circuit made of
        // blocks (PoRep's challenges) a block's rows touch few stretches besides the first
        // (inputs and the head's variables).
        let (width, len) = (self.num_inputs + self.num_aux, stretch.max(1));
        let cut = Cut { width, len, group: width.div_ceil(len).div_ceil(64).max(1) };
        let columns = |m: &SparseMatrix| {
            Transposed { m, row_values, sign: &sign, table: &self.coeff_table }.evaluate(&cut, most_runs.max(1))
        };
        [columns(&self.a), columns(&self.b), columns(&self.c)]
    }
}

/// Per coefficient of the table: 1 or -1 where it is ±1, else 0.
fn signs(table: &[Fr]) -> Vec<i8> {
    let (one, minus_one) = (Fr::ONE, -Fr::ONE);
    table
        .iter()
        .map(|k| {
            if *k == one {
                1
            } else if *k == minus_one {
                -1
            } else {
                0
            }
        })
        .collect()
}

/// The columns cut into stretches of `len`, noted in up to 64 groups of stretches.
struct Cut {
    width: usize,
    len: usize,
    group: usize,
}

impl Cut {
    fn bit(&self, col: u32) -> u64 {
        1u64 << ((col as usize / self.len) / self.group)
    }

    /// Per run of ROWS rows of `m`, the groups of stretches its entries touch.
    fn touched(&self, m: &SparseMatrix) -> Vec<u64> {
        (0..m.rows().div_ceil(ROWS))
            .into_par_iter()
            .map(|run| {
                let rows = run * ROWS..((run + 1) * ROWS).min(m.rows());
                let entries = m.row_starts[rows.start] as usize..m.row_starts[rows.end] as usize;
                m.cols[entries].iter().fold(0, |mask, &c| mask | self.bit(c))
            })
            .collect()
    }
}

/// Mᵀ·v for one matrix M of the shape.
struct Transposed<'a> {
    m: &'a SparseMatrix,
    row_values: &'a [Fr],
    sign: &'a [i8],
    table: &'a [Fr],
}

impl Transposed<'_> {
    /// The entries of `runs` that fall in the stretch starting at column `first`, added into
    /// `out` (that stretch's values).
    fn add(&self, out: &mut [Fr], first: usize, runs: &[usize]) {
        let m = self.m;
        for &run in runs {
            let rows = run * ROWS..((run + 1) * ROWS).min(m.rows());
            for (r, value) in rows.clone().zip(&self.row_values[rows]) {
                for k in m.row_starts[r] as usize..m.row_starts[r + 1] as usize {
                    let Some(slot) = (m.cols[k] as usize).checked_sub(first).and_then(|c| out.get_mut(c)) else {
                        continue;
                    };
                    let coeff = m.coeffs[k] as usize;
                    match self.sign[coeff] {
                        1 => *slot += value,
                        -1 => *slot -= value,
                        _ => *slot += self.table[coeff] * value,
                    }
                }
            }
        }
    }

    /// Every column's value, a task per stretch. A stretch that many runs touch (the first
    /// one: every block uses the inputs) would be one long task: its runs are split into parts
    /// of at most `most` runs, each adding into a vector of its own, summed at the end.
    fn evaluate(&self, cut: &Cut, most: usize) -> Vec<Fr> {
        let touched = cut.touched(self.m);
        let mut out = vec![Fr::ZERO; cut.width];
        out.par_chunks_mut(cut.len).enumerate().for_each(|(s, out)| {
            let (first, mine) = (s * cut.len, 1u64 << (s / cut.group));
            let runs: Vec<usize> =
                touched.iter().enumerate().filter(|(_, &mask)| mask & mine != 0).map(|(run, _)| run).collect();
            if runs.len() <= most {
                return self.add(out, first, &runs);
            }
            let parts: Vec<Vec<Fr>> = runs
                .par_chunks(most)
                .map(|part| {
                    let mut sums = vec![Fr::ZERO; out.len()];
                    self.add(&mut sums, first, part);
                    sums
                })
                .collect();
            for part in parts {
                out.par_iter_mut().zip(part).for_each(|(o, v)| *o += v);
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record_shape;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};

    /// x_{i+1} = x_i² + i over `n` steps, with coefficients other than ±1 on the way.
    struct Chain(usize);

    impl Circuit<Fr> for Chain {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let mut x = cs.alloc_input(|| "x0", || Ok(Fr::ONE))?;
            for i in 0..self.0 {
                let y = cs.alloc(|| format!("y{i}"), || Ok(Fr::ONE))?;
                let k = Fr::from(i as u64 + 2);
                cs.enforce(|| format!("c{i}"), |lc| lc + (k, x), |lc| lc + x - CS::one(), |lc| lc + y + (k, CS::one()));
                x = y;
            }
            Ok(())
        }
    }

    #[test]
    fn every_cut_of_the_columns_gives_the_same_evaluations() {
        let shape = record_shape(Chain(10_000), "chain").unwrap();
        let rows: Vec<Fr> = (0..shape.num_constraints() as u64).map(|i| Fr::from(i * i + 7)).collect();
        let whole = shape.column_evaluations_in(&rows, usize::MAX, usize::MAX);
        assert!(whole.iter().all(|m| m.iter().any(|v| !bool::from(v.is_zero()))));
        // 1, 3, 64: more stretches than the first pass has groups (several per group); three
        // runs of rows, which most stretches skip
        for stretch in [1, 3, 64, 199, 5000] {
            assert_eq!(shape.column_evaluations_in(&rows, stretch, usize::MAX), whole, "stretch {stretch}");
        }
        // the runs of a stretch split into parts summed at the end: one run per part, two
        for (stretch, most) in [(usize::MAX, 1), (5000, 1), (usize::MAX, 2)] {
            assert_eq!(shape.column_evaluations_in(&rows, stretch, most), whole, "stretch {stretch}, parts of {most}");
        }
    }
}
