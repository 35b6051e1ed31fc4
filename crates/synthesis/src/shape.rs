//! The constraint system's shape: the sparse matrices A, B, C and the query densities of one
//! circuit shape, recorded once. With it, a partition needs only its witness w: a = A·w,
//! b = B·w, c = C·w are rebuilt next to the prover ([`ConstraintShape::rebuild`]).

use std::collections::HashMap;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::{Density, PartitionWitness, SynthesizedPartition};

mod columns;
mod file;
mod fold;
mod repeat;
pub use file::ShapeFileError;
pub use fold::{Fold, FoldedMatrix};
pub use repeat::record_repeated;

/// Rows of a sparse matrix over the witness `[inputs | aux]`, in compressed-row form.
/// Coefficients are indices into a table of distinct values (most circuits use a handful:
/// ±1 and powers of two), so an entry costs 8 bytes whatever the field size.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SparseMatrix {
    row_starts: Vec<u64>,
    cols: Vec<u32>,
    coeffs: Vec<u32>,
}

impl SparseMatrix {
    pub fn rows(&self) -> usize {
        self.row_starts.len().saturating_sub(1)
    }

    /// Number of stored (non-zero) entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// Where each row's entries start in [`cols`](Self::cols) (one more than the rows).
    pub fn row_starts(&self) -> &[u64] {
        &self.row_starts
    }

    /// Column of each entry: an index into the witness `[inputs | aux]`.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// Coefficient of each entry: an index into [`ConstraintShape::coeff_table`].
    pub fn coeffs(&self) -> &[u32] {
        &self.coeffs
    }
}

/// A circuit shape: everything about its constraints that does not depend on the witness.
/// Two shapes are equal when their constraints are; how they were recorded (`fold`) aside.
#[derive(Debug, Clone)]
pub struct ConstraintShape {
    pub circuit_id: String,
    pub num_inputs: usize,
    pub num_aux: usize,
    pub a: SparseMatrix,
    pub b: SparseMatrix,
    pub c: SparseMatrix,
    coeff_table: Vec<Fr>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
    /// SHA-256 over the whole shape: two shapes with equal hashes are the same constraints.
    pub hash: [u8; 32],
    /// Its repeated blocks, where it was recorded as copies of one block.
    fold: Option<Fold>,
}

impl PartialEq for ConstraintShape {
    fn eq(&self, other: &Self) -> bool {
        self.circuit_id == other.circuit_id
            && self.num_inputs == other.num_inputs
            && self.num_aux == other.num_aux
            && (&self.a, &self.b, &self.c) == (&other.a, &other.b, &other.c)
            && self.coeff_table == other.coeff_table
            && (&self.a_aux_density, &self.b_input_density, &self.b_aux_density)
                == (&other.a_aux_density, &other.b_input_density, &other.b_aux_density)
            && self.hash == other.hash
    }
}

impl Eq for ConstraintShape {}

/// Aux columns sit after the inputs, whose number is only final once synthesis ends (inputs
/// may be allocated late); until then aux columns carry this flag and are shifted in `finish`.
const AUX_FLAG: u32 = 1 << 31;

/// Records a circuit's shape. Witness closures are never called, so a blank circuit (no
/// witness) records the same shape as a full one.
#[derive(Debug, Default)]
struct ShapeRecorder {
    num_inputs: usize,
    num_aux: usize,
    a: SparseMatrix,
    b: SparseMatrix,
    c: SparseMatrix,
    coeff_table: Vec<Fr>,
    coeff_index: HashMap<[u8; 32], u32>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

impl ShapeRecorder {
    fn coeff(&mut self, v: &Fr) -> u32 {
        let key = v.to_repr();
        if let Some(&i) = self.coeff_index.get(&key) {
            return i;
        }
        let i = self.coeff_table.len() as u32;
        self.coeff_table.push(*v);
        self.coeff_index.insert(key, i);
        i
    }

    /// Append one row; mark densities like bellperson's prover (non-zero terms only).
    fn row(&mut self, which: u8, lc: &LinearCombination<Fr>) {
        let mut entries = Vec::new();
        for (&i, coeff) in lc.iter_inputs() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            if which == 1 {
                self.b_input_density.set(i);
            }
            entries.push((i as u32, self.coeff(coeff)));
        }
        for (&i, coeff) in lc.iter_aux() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            match which {
                0 => self.a_aux_density.set(i),
                1 => self.b_aux_density.set(i),
                _ => {}
            }
            assert!(i < AUX_FLAG as usize, "more than 2^31 aux variables");
            entries.push((AUX_FLAG | i as u32, self.coeff(coeff)));
        }
        let m = match which {
            0 => &mut self.a,
            1 => &mut self.b,
            _ => &mut self.c,
        };
        if m.row_starts.is_empty() {
            m.row_starts.push(0);
        }
        for (col, coeff) in entries {
            m.cols.push(col);
            m.coeffs.push(coeff);
        }
        m.row_starts.push(m.cols.len() as u64);
    }

    fn finish(mut self, circuit_id: &str) -> ConstraintShape {
        let offset = self.num_inputs as u32;
        for m in [&mut self.a, &mut self.b, &mut self.c] {
            if m.row_starts.is_empty() {
                m.row_starts.push(0);
            }
            for col in m.cols.iter_mut() {
                if *col & AUX_FLAG != 0 {
                    *col = (*col & !AUX_FLAG) + offset;
                }
            }
        }
        let hash =
            shape_hash(circuit_id, self.num_inputs, self.num_aux, [&self.a, &self.b, &self.c], &self.coeff_table);
        ConstraintShape {
            circuit_id: circuit_id.to_owned(),
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            a: self.a,
            b: self.b,
            c: self.c,
            coeff_table: self.coeff_table,
            a_aux_density: self.a_aux_density,
            b_input_density: self.b_input_density,
            b_aux_density: self.b_aux_density,
            hash,
            fold: None,
        }
    }
}

/// Bytes hashed per `update` call.
const HASH_BUFFER: usize = 1 << 16;

fn shape_hash(
    circuit_id: &str,
    num_inputs: usize,
    num_aux: usize,
    matrices: [&SparseMatrix; 3],
    table: &[Fr],
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(circuit_id.as_bytes());
    h.update((num_inputs as u64).to_le_bytes());
    h.update((num_aux as u64).to_le_bytes());
    // the same bytes as one `update` per value, a buffer at a time (a call per value made the
    // hash of a 32 GiB PoRep shape, ~9 GB, take tens of seconds)
    let mut buf = Vec::with_capacity(HASH_BUFFER);
    for m in matrices {
        for chunk in m.row_starts.chunks(HASH_BUFFER / 8) {
            buf.clear();
            chunk.iter().for_each(|v| buf.extend_from_slice(&v.to_le_bytes()));
            h.update(&buf);
        }
        for (cols, coeffs) in m.cols.chunks(HASH_BUFFER / 8).zip(m.coeffs.chunks(HASH_BUFFER / 8)) {
            buf.clear();
            for (c, k) in cols.iter().zip(coeffs) {
                buf.extend_from_slice(&c.to_le_bytes());
                buf.extend_from_slice(&k.to_le_bytes());
            }
            h.update(&buf);
        }
    }
    for k in table {
        h.update(k.to_repr());
    }
    h.finalize().into()
}

impl ConstraintSystem<Fr> for ShapeRecorder {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_aux += 1;
        self.a_aux_density.push();
        self.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_inputs += 1;
        self.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.row(0, &a(LinearCombination::zero()));
        self.row(1, &b(LinearCombination::zero()));
        self.row(2, &c(LinearCombination::zero()));
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Record the shape of `circuit` (usually its blank, witness-free form), including the
/// `input_i * 0 = 0` constraints the prover appends.
pub fn record_shape<C: Circuit<Fr>>(circuit: C, circuit_id: &str) -> Result<ConstraintShape, SynthesisError> {
    Ok(record_body(circuit)?.finish_with_input_rows(circuit_id))
}

/// The circuit's own constraints, after the `one` input, before the prover's input rows.
fn record_body<C: Circuit<Fr>>(circuit: C) -> Result<ShapeRecorder, SynthesisError> {
    let mut cs = ShapeRecorder::default();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok(cs)
}

impl ShapeRecorder {
    /// The shape: the recording plus the prover's `input_i * 0 = 0` rows.
    fn finish_with_input_rows(mut self, circuit_id: &str) -> ConstraintShape {
        for i in 0..self.num_inputs {
            self.enforce(|| "", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
        }
        self.finish(circuit_id)
    }
}

/// Why a witness does not fit a shape.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error("witness is for {witness}, shape is {shape}")]
    Circuit { witness: String, shape: String },
    #[error("witness has {inputs} inputs and {aux} aux values, the shape needs {want_inputs} and {want_aux}")]
    Size { inputs: usize, aux: usize, want_inputs: usize, want_aux: usize },
}

impl ConstraintShape {
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// The distinct coefficient values the matrices' entries index.
    pub fn coeff_table(&self) -> &[Fr] {
        &self.coeff_table
    }

    pub fn hash_hex(&self) -> String {
        self.hash.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn mul(&self, m: &SparseMatrix, inputs: &[Fr], aux: &[Fr]) -> Vec<Fr> {
        let (one, minus_one) = (Fr::ONE, -Fr::ONE);
        (0..m.rows())
            .into_par_iter()
            .with_min_len(4096)
            .map(|r| {
                let mut acc = Fr::ZERO;
                for k in m.row_starts[r] as usize..m.row_starts[r + 1] as usize {
                    let col = m.cols[k] as usize;
                    let v = if col < self.num_inputs { &inputs[col] } else { &aux[col - self.num_inputs] };
                    let coeff = &self.coeff_table[m.coeffs[k] as usize];
                    if *coeff == one {
                        acc += v;
                    } else if *coeff == minus_one {
                        acc -= v;
                    } else {
                        acc += *v * coeff;
                    }
                }
                acc
            })
            .collect()
    }

    /// a = A·w, b = B·w, c = C·w: the synthesized partition, without re-running the circuit.
    pub fn rebuild(&self, witness: PartitionWitness) -> Result<SynthesizedPartition, ShapeError> {
        if witness.circuit_id != self.circuit_id {
            return Err(ShapeError::Circuit { witness: witness.circuit_id, shape: self.circuit_id.clone() });
        }
        if witness.inputs.len() != self.num_inputs || witness.aux.len() != self.num_aux {
            return Err(ShapeError::Size {
                inputs: witness.inputs.len(),
                aux: witness.aux.len(),
                want_inputs: self.num_inputs,
                want_aux: self.num_aux,
            });
        }
        let (a, (b, c)) = rayon::join(
            || self.mul(&self.a, &witness.inputs, &witness.aux),
            || {
                rayon::join(
                    || self.mul(&self.b, &witness.inputs, &witness.aux),
                    || self.mul(&self.c, &witness.inputs, &witness.aux),
                )
            },
        );
        Ok(SynthesizedPartition {
            circuit_id: witness.circuit_id,
            partition: witness.partition,
            a,
            b,
            c,
            input_assignment: witness.inputs,
            aux_assignment: witness.aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        })
    }
}
