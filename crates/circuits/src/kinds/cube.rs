//! `cube`: an example kind, compiled only with the `example-kind` feature. It exists to show
//! that a kind is this one module plus one line in `registry!`, and nothing else: the
//! in-process stack proves it end to end (crates/e2e/tests/e2e/added_kind.rs) with no other
//! file naming it. Partition p proves knowledge of x_0 = input.x + p with
//! x_{i+1} = x_i^3 + x_i + 5 after `rounds` steps, x_rounds public.
//!
//! Request: `{"kind": "cube", "input": {"rounds": 8, "x": 3, "partitions": 2}}`.

use std::path::Path;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use snarkflow_filecoin::{Parsed, VerifyFailure};
use snarkflow_synthesis::CircuitVisitor;
use snarkflow_wire::{JobKind, Priority};

use crate::kind::{circuit_id, KindError, ProofKind};

/// What a `cube` job carries besides its spec: the chain's start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CubeInput {
    x: u64,
}

#[derive(Debug)]
pub(crate) struct Cube;

/// The circuit: `rounds` steps from `x0` (`None`: blank).
struct CubeChain {
    rounds: u32,
    x0: Option<Fr>,
}

fn step(x: Fr) -> Fr {
    x * x * x + x + Fr::from(5u64)
}

impl Circuit<Fr> for CubeChain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut value = self.x0;
        let mut x = cs.alloc(|| "x0", || value.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.rounds {
            let square = value.map(|v| v * v);
            let sq = cs.alloc(|| format!("x{i} squared"), || square.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| format!("square {i}"), |lc| lc + x, |lc| lc + x, |lc| lc + sq);
            let next_value = value.map(step);
            let get = || next_value.ok_or(SynthesisError::AssignmentMissing);
            let next = if i + 1 == self.rounds {
                cs.alloc_input(|| "x_n", get)?
            } else {
                cs.alloc(|| format!("x{}", i + 1), get)?
            };
            // x² · x = next − x − 5
            cs.enforce(
                || format!("cube {i}"),
                |lc| lc + sq,
                |lc| lc + x,
                |lc| lc + next - x - (Fr::from(5u64), CS::one()),
            );
            (x, value) = (next, next_value);
        }
        Ok(())
    }
}

fn start(input: &CubeInput, partition: u32) -> Fr {
    Fr::from(input.x) + Fr::from(u64::from(partition))
}

impl ProofKind for Cube {
    const KIND: JobKind = JobKind::new("cube");
    /// The number of rounds.
    type Spec = u32;
    type Input = CubeInput;
    const DEFAULT_PRIORITY: Priority = Priority::Low;
    const DEFAULT_DEADLINE_SECS: u64 = 600;
    const TAKES_INPUT: bool = true;
    const FILECOIN: bool = false;
    const VERIFIED_WHOLE: bool = false;
    const DOCUMENTED: bool = false;

    fn render_spec(rounds: &u32) -> String {
        format!("r{rounds}")
    }

    fn parse_spec(params: &str) -> Option<u32> {
        params.strip_prefix('r')?.parse().ok().filter(|r| (1..=1 << 16).contains(r))
    }

    fn parse(input: &Map<String, Value>) -> Result<Parsed<u32, CubeInput>, KindError> {
        if let Some(key) = input.keys().find(|k| !["rounds", "x", "partitions"].contains(&k.as_str())) {
            return Err(KindError(format!("input.{key} is not a field of cube (fields: rounds, x, partitions)")));
        }
        let field = |name: &str| input.get(name).and_then(Value::as_u64);
        let rounds = field("rounds").filter(|r| (1..=1 << 16).contains(r));
        let rounds = rounds.ok_or_else(|| KindError::new("input.rounds must be between 1 and 65536"))? as u32;
        let x = field("x").ok_or_else(|| KindError::new("input.x must be a non-negative integer"))?;
        let partitions = match input.get("partitions") {
            None | Some(Value::Null) => 1,
            Some(_) => field("partitions")
                .filter(|p| (1..=4).contains(p))
                .ok_or_else(|| KindError::new("input.partitions must be between 1 and 4"))?
                as u32,
        };
        Ok(Parsed { spec: rounds, partitions, input: CubeInput { x } })
    }

    fn visit_blank<V: CircuitVisitor>(rounds: &u32, visitor: V) -> Result<V::Output, KindError> {
        Ok(visitor.visit(CubeChain { rounds: *rounds, x0: None }))
    }

    fn visit_partition<V: CircuitVisitor>(
        rounds: &u32,
        partition: u32,
        input: &CubeInput,
        visitor: V,
    ) -> Result<V::Output, KindError> {
        Ok(visitor.visit(CubeChain { rounds: *rounds, x0: Some(start(input, partition)) }))
    }

    fn param_file_stem(rounds: &u32) -> Result<String, KindError> {
        Ok(circuit_id::<Cube>(rounds))
    }

    fn test_constraints(rounds: &u32) -> Option<u64> {
        Some(2 * u64::from(*rounds))
    }

    fn verify(_: &u32, _: &CubeInput, _: &Path, _: &[Vec<u8>]) -> Option<Result<(), VerifyFailure>> {
        None
    }

    fn public_inputs(rounds: &u32, partitions: u32, input: &CubeInput) -> Result<Vec<Vec<Fr>>, KindError> {
        Ok((0..partitions).map(|p| vec![(0..*rounds).fold(start(input, p), |x, _| step(x))]).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::util_cs::test_cs::TestConstraintSystem;

    #[test]
    fn the_chain_is_satisfied_and_its_output_is_the_public_input() {
        let request = serde_json::json!({"rounds": 5, "x": 3, "partitions": 2});
        let job = Cube::parse(request.as_object().unwrap()).unwrap();
        let inputs = Cube::public_inputs(&job.spec, 2, &job.input).unwrap();
        for (p, expected) in inputs.iter().enumerate() {
            let mut cs = TestConstraintSystem::<Fr>::new();
            let x0 = start(&job.input, p as u32);
            CubeChain { rounds: 5, x0: Some(x0) }.synthesize(&mut cs).unwrap();
            assert!(cs.is_satisfied(), "{:?}", cs.which_is_unsatisfied());
            assert_eq!(cs.num_constraints(), 10);
            assert!(cs.verify(expected));
        }
        assert_ne!(inputs[0], inputs[1], "partitions start from different values");
        let e = Cube::parse(serde_json::json!({"rounds": 5, "x": 3, "partitoins": 2}).as_object().unwrap());
        assert!(e.unwrap_err().to_string().contains("input.partitoins is not a field of cube"));
    }
}
