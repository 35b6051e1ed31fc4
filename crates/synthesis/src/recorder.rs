//! Our `ConstraintSystem` that records a partition's evaluations and assignments.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use crate::{Density, SynthesizedPartition};

/// Records what a Groth16 prover needs while a circuit synthesizes: the three LC evaluations
/// of every constraint, the assignments, and the query densities. Namespaces and annotations
/// are ignored (their closures are never called).
#[derive(Debug, Default)]
pub struct PartitionRecorder {
    a: Vec<Fr>,
    b: Vec<Fr>,
    c: Vec<Fr>,
    input_assignment: Vec<Fr>,
    aux_assignment: Vec<Fr>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

/// Evaluate `lc` under the assignments, marking each variable with a non-zero coefficient
/// in the given density trackers.
fn eval(
    lc: &LinearCombination<Fr>,
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
    inputs: &[Fr],
    aux: &[Fr],
) -> Fr {
    let mut acc = Fr::ZERO;
    for (&index, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += if *coeff == Fr::ONE { inputs[index] } else { inputs[index] * coeff };
        if let Some(d) = input_density.as_deref_mut() {
            d.set(index);
        }
    }
    for (&index, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += if *coeff == Fr::ONE { aux[index] } else { aux[index] * coeff };
        if let Some(d) = aux_density.as_deref_mut() {
            d.set(index);
        }
    }
    acc
}

impl ConstraintSystem<Fr> for PartitionRecorder {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux_assignment.push(f()?);
        self.a_aux_density.push();
        self.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(self.aux_assignment.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(self.input_assignment.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let (inputs, aux) = (&self.input_assignment, &self.aux_assignment);
        // Inputs are fully dense in the A query (every input gets an `input * 0 = 0`
        // constraint), so only the aux side of A is tracked. C has no query of its own.
        let a = eval(&a(LinearCombination::zero()), None, Some(&mut self.a_aux_density), inputs, aux);
        let b = eval(
            &b(LinearCombination::zero()),
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            inputs,
            aux,
        );
        let c = eval(&c(LinearCombination::zero()), None, None, inputs, aux);
        self.a.push(a);
        self.b.push(b);
        self.c.push(c);
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

/// Synthesize `circuit` as partition `partition` of a job, exactly as bellperson's Groth16
/// prover does: allocate the ONE input, run the circuit, then add `input_i * 0 = 0` for every
/// input so the input bases end up in the A query.
pub fn synthesize<C: Circuit<Fr>>(
    circuit: C,
    circuit_id: &str,
    partition: u32,
) -> Result<SynthesizedPartition, SynthesisError> {
    let mut cs = PartitionRecorder::default();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.input_assignment.len() {
        cs.enforce(|| "", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
    }
    Ok(SynthesizedPartition {
        circuit_id: circuit_id.to_owned(),
        partition,
        a: cs.a,
        b: cs.b,
        c: cs.c,
        input_assignment: cs.input_assignment,
        aux_assignment: cs.aux_assignment,
        a_aux_density: cs.a_aux_density,
        b_input_density: cs.b_input_density,
        b_aux_density: cs.b_aux_density,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use snarkflow_circuits::{DenseChain, Sha256Chain};

    #[test]
    fn satisfied_circuit_has_a_times_b_equal_c() {
        let spec = snarkflow_circuits::circuit("sha256-chain-b1");
        let circuit = Sha256Chain::with_witness(1, 1, 0);
        let expected_inputs = circuit.public_inputs().unwrap();
        let p = synthesize(circuit, &spec.circuit_id(), 0).unwrap();
        p.check_shape().unwrap();
        assert!(p.a.iter().zip(&p.b).zip(&p.c).all(|((a, b), c)| *a * b == *c));
        assert_eq!(p.public_inputs(), &expected_inputs[..]);
        // every input gets one extra constraint
        assert!(p.num_constraints() > 25_000);
        // bits dominate a SHA-256 witness
        let bits = p.aux_assignment.iter().filter(|v| **v == Fr::ZERO || **v == Fr::ONE).count();
        assert!(bits * 10 > p.aux_assignment.len() * 9, "{bits} of {}", p.aux_assignment.len());
    }

    #[test]
    fn densities_mark_only_used_variables() {
        let p = synthesize(DenseChain::with_witness(8, 1, 0), "d", 0).unwrap();
        // x0..x7 are aux and each appears in A and B; the ONE input appears in B of every step
        assert_eq!(p.aux_assignment.len(), 8);
        assert_eq!(p.a_aux_density.popcount(), 8);
        assert_eq!(p.b_aux_density.popcount(), 8);
        assert!(p.b_input_density.get(0));
        assert!(!p.b_input_density.get(1), "x_n never occurs in a B term");
        assert_eq!(p.num_constraints(), 8 + 2);
    }
}
