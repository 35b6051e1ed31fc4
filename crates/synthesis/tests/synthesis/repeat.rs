//! A circuit made of a head and equal blocks records the same shape block by block
//! (`record_repeated`) as whole (`record_shape`); so does one whose blocks are not copies of
//! one another (it is then recorded whole).

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use snarkflow_synthesis::{record_repeated, record_shape, ConstraintShape, ShapeFileError};

/// How the blocks of [`Blocks`] relate.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Every block the same, on the head's variables and its own.
    Equal,
    /// Block k's last constraint has coefficient k + 2: not copies.
    Varying,
    /// Block k also uses a variable of block k − 1: not independent.
    Linked,
}

/// A head (inputs, aux, constraints from `seed`) and `blocks` blocks of the same structure.
#[derive(Clone, Debug)]
struct Blocks {
    seed: u64,
    blocks: usize,
    kind: Kind,
}

/// Random constraints over `vars`, as `st` decides.
fn constraints<CS: ConstraintSystem<Fr>>(cs: &mut CS, st: &mut rand_chacha::ChaCha8Rng, vars: &[Variable], n: usize) {
    for _ in 0..n {
        let mut lcs: Vec<LinearCombination<Fr>> = Vec::new();
        for _ in 0..3 {
            let mut lc = LinearCombination::zero();
            for _ in 0..st.gen_range(0..4) {
                let v = vars[st.gen_range(0..vars.len())];
                let coeff = match st.gen_range(0..4) {
                    0 => Fr::ONE,
                    1 => -Fr::ONE,
                    2 => Fr::from(st.gen_range(2..1000u64)),
                    _ => Fr::random(&mut *st),
                };
                lc = lc + (coeff, v);
            }
            lcs.push(lc);
        }
        let (a, b, c) = (lcs[0].clone(), lcs[1].clone(), lcs[2].clone());
        cs.enforce(|| "c", |_| a, |_| b, |_| c);
    }
}

impl Circuit<Fr> for Blocks {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut st = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        let mut head = vec![CS::one()];
        for _ in 0..st.gen_range(0..4) {
            head.push(cs.alloc_input(|| "i", || Ok(Fr::ONE))?);
        }
        for _ in 0..st.gen_range(1..6) {
            head.push(cs.alloc(|| "a", || Ok(Fr::ONE))?);
        }
        let head_constraints = st.gen_range(0..6);
        constraints(cs, &mut st, &head, head_constraints);
        let block_seed: u64 = st.gen();
        let mut previous: Option<Variable> = None;
        for k in 0..self.blocks {
            let mut st = rand_chacha::ChaCha8Rng::seed_from_u64(block_seed);
            let mut vars = head.clone();
            for _ in 0..st.gen_range(0..3) {
                vars.push(cs.alloc_input(|| "bi", || Ok(Fr::ONE))?);
            }
            for _ in 0..st.gen_range(1..6) {
                vars.push(cs.alloc(|| "ba", || Ok(Fr::ONE))?);
            }
            let n = st.gen_range(1..8);
            constraints(cs, &mut st, &vars, n);
            let own = *vars.last().expect("a block allocates");
            match (self.kind, previous) {
                (Kind::Varying, _) => cs.enforce(|| "v", |lc| lc + (Fr::from(k as u64 + 2), own), |lc| lc, |lc| lc),
                (Kind::Linked, Some(p)) => cs.enforce(|| "l", |lc| lc + own, |lc| lc + p, |lc| lc),
                (Kind::Linked, None) => cs.enforce(|| "l", |lc| lc + own, |lc| lc + CS::one(), |lc| lc),
                (Kind::Equal, _) => {}
            }
            previous = Some(own);
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn block_by_block_equals_whole(seed in any::<u64>(), blocks in 0usize..9, kind in 0u8..3) {
        let kind = [Kind::Equal, Kind::Varying, Kind::Linked][kind as usize];
        let whole = record_shape(Blocks { seed, blocks, kind }, "blocks").unwrap();
        let repeated = record_repeated(|m| Blocks { seed, blocks: m, kind }, blocks, "blocks").unwrap();
        prop_assert!(repeated == whole, "{kind:?} with {blocks} blocks: the shapes differ");
        // copies of one block are folded; a circuit recorded whole is not
        prop_assert_eq!(repeated.fold().is_some(), matches!(kind, Kind::Equal) && blocks >= 3 && repeated.num_constraints() > 0);
        if repeated.fold().is_some() {
            folded_rows_are_the_whole_rows(&repeated);
            file_keeps_the_fold(&repeated);
        }
    }
}

/// Every row of every matrix, made from the folded matrix as a folded prover makes it (the
/// stored row, its columns shifted to the row's block), is the row of the whole matrix.
fn folded_rows_are_the_whole_rows(shape: &ConstraintShape) {
    let fold = *shape.fold().unwrap();
    assert!(fold.holds(shape));
    for m in [&shape.a, &shape.b, &shape.c] {
        let folded = fold.fold(m);
        assert_eq!(folded.row_starts.len() - 1, fold.stored_rows(m.rows()));
        // one block's entries stored, not `blocks`
        let block = m.row_starts()[(fold.head_rows + fold.rows) as usize] - m.row_starts()[fold.head_rows as usize];
        assert_eq!(folded.cols.len() as u64, m.nnz() as u64 - (fold.blocks - 1) * block);
        for r in 0..m.rows() {
            let (stored, k) = fold.stored_row(r as u64);
            let span = |starts: &[u64], i: usize| starts[i] as usize..starts[i + 1] as usize;
            let (at, whole) = (span(&folded.row_starts, stored as usize), span(m.row_starts(), r));
            let cols: Vec<u64> = folded.cols[at.clone()].iter().map(|&c| fold.shift(c, k)).collect();
            let want: Vec<u64> = m.cols()[whole.clone()].iter().map(|&c| u64::from(c)).collect();
            assert_eq!(cols, want, "row {r}: columns");
            assert_eq!(folded.coeffs[at], m.coeffs()[whole], "row {r}: coefficients");
        }
    }
}

/// A shape file keeps the fold; a file whose fold does not describe its matrices is refused.
fn file_keeps_the_fold(shape: &ConstraintShape) {
    let mut bytes = Vec::new();
    shape.write_to(&mut bytes).unwrap();
    let read = ConstraintShape::read_from(&bytes[..]).unwrap();
    assert_eq!(read.fold(), shape.fold());
    // the fold is last: its `aux` (u32) one more than it is
    let n = bytes.len();
    let aux = u32::from_le_bytes(bytes[n - 4..].try_into().unwrap());
    bytes[n - 4..].copy_from_slice(&(aux + 1).to_le_bytes());
    let wrong = ConstraintShape::read_from(&bytes[..]);
    assert!(matches!(wrong, Err(ShapeFileError::Malformed(_))), "{:?}", wrong.map(|s| s.fold().copied()));
}

#[test]
fn a_version_1_shape_file_is_refused_as_outdated() {
    let shape = record_repeated(|m| Blocks { seed: 7, blocks: m, kind: Kind::Equal }, 5, "blocks").unwrap();
    assert!(shape.fold().is_some());
    let mut bytes = Vec::new();
    shape.write_to(&mut bytes).unwrap();
    // version 1: the same bytes without the fold (an Option's tag, then the fold's 40 bytes)
    bytes.truncate(bytes.len() - 41);
    bytes[4..6].copy_from_slice(&1u16.to_le_bytes());
    // its readers record the shape again, and so learn its fold
    assert!(matches!(ConstraintShape::read_from(&bytes[..]), Err(ShapeFileError::Outdated(1))));
}
