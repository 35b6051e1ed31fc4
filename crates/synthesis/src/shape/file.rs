//! The shape's file form, for a cache next to the parameters: magic `SFCS`, version (u16 LE),
//! bincode of the shape, then (version 2) of its fold. Everything stored is either covered by
//! the shape hash (re-checked on read), range-checked or checked against the matrices (the
//! fold); the densities are re-derived from the matrices rather than stored. A version 1 file
//! (from before the fold was kept) is refused as outdated, so that its shape is recorded again
//! and the prover learns its fold.

use blstrs::Scalar as Fr;
use ff::PrimeField;

use super::{shape_hash, ConstraintShape, Fold, SparseMatrix};
use crate::Density;

/// Why a shape file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ShapeFileError {
    #[error("shape file i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a shape file, or an unsupported version")]
    Format,
    #[error("shape file version {0} is from before the fold was kept: recorded again")]
    Outdated(u16),
    #[error("malformed shape file: {0}")]
    Malformed(String),
    #[error("shape file content does not match its hash (corrupt)")]
    Hash,
}

const SHAPE_MAGIC: [u8; 4] = *b"SFCS";
const SHAPE_VERSION: u16 = 2;

#[derive(serde::Serialize, serde::Deserialize)]
struct ShapeFile {
    circuit_id: String,
    num_inputs: u64,
    num_aux: u64,
    a: SparseMatrix,
    b: SparseMatrix,
    c: SparseMatrix,
    coeff_table: Vec<[u8; 32]>,
    hash: [u8; 32],
}

/// [`ShapeFile`] borrowing the matrices, for writing without copying them (several GB at
/// 32 GiB PoRep); bincode writes both the same.
#[derive(serde::Serialize)]
struct ShapeFileRef<'a> {
    circuit_id: &'a str,
    num_inputs: u64,
    num_aux: u64,
    a: &'a SparseMatrix,
    b: &'a SparseMatrix,
    c: &'a SparseMatrix,
    coeff_table: Vec<[u8; 32]>,
    hash: [u8; 32],
}

impl ConstraintShape {
    /// Write the shape (for a cache next to the parameters): magic, version, bincode.
    pub fn write_to<W: std::io::Write>(&self, mut w: W) -> Result<(), ShapeFileError> {
        w.write_all(&SHAPE_MAGIC)?;
        w.write_all(&SHAPE_VERSION.to_le_bytes())?;
        let file = ShapeFileRef {
            circuit_id: &self.circuit_id,
            num_inputs: self.num_inputs as u64,
            num_aux: self.num_aux as u64,
            a: &self.a,
            b: &self.b,
            c: &self.c,
            coeff_table: self.coeff_table.iter().map(|k| k.to_repr()).collect(),
            hash: self.hash,
        };
        bincode::serialize_into(&mut w, &file).map_err(|e| ShapeFileError::Malformed(e.to_string()))?;
        bincode::serialize_into(w, &self.fold).map_err(|e| ShapeFileError::Malformed(e.to_string()))
    }

    /// Write the shape to `path` atomically: to a temporary name of this process, then renamed,
    /// so processes writing the same shape at once leave one whole file.
    pub fn write_file(&self, path: &std::path::Path) -> Result<(), ShapeFileError> {
        let unique =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let tmp = path.with_extension(format!("shape.tmp.{}.{unique}", std::process::id()));
        let written = std::fs::File::create(&tmp).map_err(ShapeFileError::from).and_then(|f| {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
            self.write_to(&mut w)?;
            std::io::Write::flush(&mut w)?;
            Ok(w.into_inner().map_err(|e| e.into_error())?.sync_all()?)
        });
        match written.and_then(|()| Ok(std::fs::rename(&tmp, path)?)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Read a shape written by [`ConstraintShape::write_to`], recomputing its hash: a file
    /// whose content does not match is refused.
    pub fn read_from<R: std::io::Read>(mut r: R) -> Result<ConstraintShape, ShapeFileError> {
        let mut header = [0u8; 6];
        r.read_exact(&mut header)?;
        let version = u16::from_le_bytes([header[4], header[5]]);
        if header[..4] != SHAPE_MAGIC || version > SHAPE_VERSION || version == 0 {
            return Err(ShapeFileError::Format);
        }
        if version < SHAPE_VERSION {
            return Err(ShapeFileError::Outdated(version));
        }
        let malformed = |e: bincode::Error| ShapeFileError::Malformed(e.to_string());
        let f: ShapeFile = bincode::deserialize_from(&mut r).map_err(malformed)?;
        let fold: Option<Fold> = bincode::deserialize_from(r).map_err(malformed)?;
        let coeff_table = f
            .coeff_table
            .iter()
            .map(|b| {
                Option::<Fr>::from(Fr::from_repr(*b))
                    .ok_or_else(|| ShapeFileError::Malformed("non-canonical coefficient".into()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (num_inputs, num_aux) = (f.num_inputs as usize, f.num_aux as usize);
        for m in [&f.a, &f.b, &f.c] {
            let in_range = m.cols.iter().all(|&c| (c as usize) < num_inputs + num_aux)
                && m.coeffs.iter().all(|&k| (k as usize) < coeff_table.len())
                && m.row_starts.windows(2).all(|w| w[0] <= w[1])
                && m.row_starts.last().is_some_and(|&n| n as usize == m.cols.len())
                && m.cols.len() == m.coeffs.len();
            if !in_range {
                return Err(ShapeFileError::Malformed("matrix indices out of range".into()));
            }
        }
        if shape_hash(&f.circuit_id, num_inputs, num_aux, [&f.a, &f.b, &f.c], &coeff_table) != f.hash {
            return Err(ShapeFileError::Hash);
        }
        // The densities follow from the matrices (which hold non-zero terms only), so they are
        // recomputed rather than stored: nothing unhashed is trusted.
        let density = |len: usize, m: &SparseMatrix, keep: &dyn Fn(usize) -> Option<usize>| {
            let mut d = Density::new();
            (0..len).for_each(|_| d.push());
            m.cols.iter().filter_map(|&c| keep(c as usize)).for_each(|i| d.set(i));
            d
        };
        let aux_of = |c: usize| c.checked_sub(num_inputs);
        let input_of = |c: usize| (c < num_inputs).then_some(c);
        let (a_aux_density, b_input_density, b_aux_density) =
            (density(num_aux, &f.a, &aux_of), density(num_inputs, &f.b, &input_of), density(num_aux, &f.b, &aux_of));
        let shape = ConstraintShape {
            circuit_id: f.circuit_id,
            num_inputs,
            num_aux,
            a: f.a,
            b: f.b,
            c: f.c,
            coeff_table,
            a_aux_density,
            b_input_density,
            b_aux_density,
            hash: f.hash,
            fold,
        };
        if shape.fold.as_ref().is_some_and(|fold| !fold.holds(&shape)) {
            return Err(ShapeFileError::Malformed("the fold does not describe the matrices".into()));
        }
        Ok(shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(rows: &[&[u32]]) -> SparseMatrix {
        let mut m = SparseMatrix { row_starts: vec![0], ..Default::default() };
        for row in rows {
            m.cols.extend_from_slice(row);
            m.coeffs.extend(row.iter().map(|_| 0));
            m.row_starts.push(m.cols.len() as u64);
        }
        m
    }

    /// A file is written by whoever can write the directory, hash and all: a fold that names
    /// rows one of its matrices lacks is refused, not a panic.
    #[test]
    fn a_fold_past_a_matrix_s_rows_is_refused_not_a_panic() {
        // a head row on the input, then three one-row blocks, each on its own aux variable
        let (a, b) = (matrix(&[&[0], &[1], &[2], &[3]]), matrix(&[&[], &[], &[], &[]]));
        let fold = Fold { head_rows: 1, rows: 1, blocks: 3, input_start: 1, inputs: 0, aux_start: 1, aux: 1 };
        let shape = |c: SparseMatrix| {
            let table = vec![Fr::from(1u64)];
            let hash = shape_hash("t", 1, 3, [&a, &b, &c], &table);
            let mut s = ConstraintShape {
                circuit_id: "t".into(),
                num_inputs: 1,
                num_aux: 3,
                a: a.clone(),
                b: b.clone(),
                c,
                coeff_table: table,
                a_aux_density: Density::new(),
                b_input_density: Density::new(),
                b_aux_density: Density::new(),
                hash,
                fold: Some(fold),
            };
            let mut bytes = Vec::new();
            s.write_to(&mut bytes).unwrap();
            s.fold = None;
            ConstraintShape::read_from(&bytes[..])
        };
        assert!(shape(b.clone()).is_ok_and(|s| s.fold() == Some(&fold)), "the fold holds with every row there");
        let short = shape(matrix(&[&[], &[]]));
        assert!(matches!(short, Err(ShapeFileError::Malformed(_))), "{:?}", short.map(|s| s.num_constraints()));
    }
}
