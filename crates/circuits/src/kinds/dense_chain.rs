//! `dense-chain`: x_{i+1} = x_i^2 + x_i + k, one constraint per step, every witness value a
//! pseudo-random field element. The worst case for multi-exponentiation (no bits, no zeros).

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

/// Largest chain: 2^26 constraints, above a 32 GiB PoRep partition's domain.
pub const MAX_CONSTRAINTS: u32 = 1 << 26;

/// The chain's constant k. Part of the circuit's shape (it sits in the constraint
/// coefficients), so it is fixed, not per job.
pub(crate) fn chain_constant() -> Fr {
    Fr::from_u128(0x736e_6172_6b66_6c6f_775f_6465_6e73_6521)
}

#[derive(Debug, Clone)]
pub struct DenseChain {
    /// Number of chain constraints (the prover adds one per public input on top).
    pub constraints: u32,
    /// The chain's starting value; `None` when synthesizing for parameter generation.
    pub x0: Option<Fr>,
}

impl DenseChain {
    pub fn with_witness(constraints: u32, seed: u64, partition: u32) -> Self {
        let mut rng = crate::partition_rng(seed, partition);
        DenseChain { constraints, x0: Some(Fr::random(&mut rng)) }
    }

    pub fn blank(constraints: u32) -> Self {
        DenseChain { constraints, x0: None }
    }

    fn step(x: Fr, k: Fr) -> Fr {
        x.square() + x + k
    }

    /// The chain's final value: the one public input.
    pub fn public_inputs(&self) -> Option<Vec<Fr>> {
        let k = chain_constant();
        let mut x = self.x0?;
        for _ in 0..self.constraints {
            x = Self::step(x, k);
        }
        Some(vec![x])
    }
}

impl Circuit<Fr> for DenseChain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let k = chain_constant();
        let mut value = self.x0;
        let mut var = cs.alloc(|| "x0", || value.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.constraints {
            let next_value = value.map(|x| Self::step(x, k));
            let last = i + 1 == self.constraints;
            let get = || next_value.ok_or(SynthesisError::AssignmentMissing);
            let next = if last { cs.alloc_input(|| "x_n", get)? } else { cs.alloc(|| format!("x{}", i + 1), get)? };
            // x_i * (x_i + 1) = x_{i+1} - k
            cs.enforce(
                || format!("step {i}"),
                |lc| lc + var,
                |lc| lc + var + CS::one(),
                |lc| lc + next - (k, CS::one()),
            );
            var = next;
            value = next_value;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::util_cs::test_cs::TestConstraintSystem;

    #[test]
    fn satisfied_with_expected_output_and_size() {
        let circuit = DenseChain::with_witness(100, 7, 1);
        let expected = circuit.public_inputs().unwrap();
        let mut cs = TestConstraintSystem::<Fr>::new();
        circuit.synthesize(&mut cs).unwrap();
        assert!(cs.is_satisfied(), "unsatisfied: {:?}", cs.which_is_unsatisfied());
        assert_eq!(cs.num_constraints(), 100);
        assert_eq!(cs.get_input(1, "x_n"), expected[0]);
    }

    #[test]
    fn partitions_get_different_witnesses() {
        let a = DenseChain::with_witness(4, 7, 0).x0;
        let b = DenseChain::with_witness(4, 7, 1).x0;
        assert_ne!(a, b);
        assert_eq!(a, DenseChain::with_witness(4, 7, 0).x0);
    }
}

super::synthetic_kind! {
    /// The `dense-chain` proof kind: a load-test circuit whose witness derives from the job seed.
    DenseChainKind, DenseChain, "dense-chain", "constraints", "c", MAX_CONSTRAINTS,
    constraints per unit: 1
}
