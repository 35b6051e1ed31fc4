//! Witness-only synthesis: run a circuit computing only the assignment. `enforce` is a
//! no-op — its linear-combination closures are never even called — which is where full
//! synthesis spends most of its time.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

/// The witness of one partition: what a prover needs besides the circuit's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionWitness {
    pub circuit_id: String,
    pub partition: u32,
    /// Public inputs; element 0 is the constant ONE.
    pub inputs: Vec<Fr>,
    pub aux: Vec<Fr>,
}

impl PartitionWitness {
    /// Where `self` first differs from `reference` (another witness of the same partition),
    /// in words; `None` when the two are equal value for value.
    pub fn difference(&self, reference: &PartitionWitness) -> Option<String> {
        fn first<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
            a.iter().zip(b).position(|(x, y)| x != y).or((a.len() != b.len()).then(|| a.len().min(b.len())))
        }
        if let Some(i) = first(&self.inputs, &reference.inputs) {
            return Some(format!(
                "public input {i}; {} and {} public inputs",
                self.inputs.len(),
                reference.inputs.len()
            ));
        }
        first(&self.aux, &reference.aux).map(|i| {
            format!("auxiliary variable {i}; {} and {} auxiliary variables", self.aux.len(), reference.aux.len())
        })
    }
}

#[derive(Debug, Default)]
pub(crate) struct WitnessRecorder {
    pub(crate) inputs: Vec<Fr>,
    pub(crate) aux: Vec<Fr>,
}

impl ConstraintSystem<Fr> for WitnessRecorder {
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
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
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

/// Compute only the witness of `circuit` (with the leading ONE input).
pub fn synthesize_witness<C: Circuit<Fr>>(
    circuit: C,
    circuit_id: &str,
    partition: u32,
) -> Result<PartitionWitness, SynthesisError> {
    let mut cs = WitnessRecorder::default();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok(PartitionWitness { circuit_id: circuit_id.to_owned(), partition, inputs: cs.inputs, aux: cs.aux })
}
