//! A circuit made of a head and equal blocks records the same shape block by block
//! (`record_repeated`) as whole (`record_shape`); so does one whose blocks are not copies of
//! one another (it is then recorded whole).

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use snarkflow_synthesis::{record_repeated, record_shape};

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
    }
}
