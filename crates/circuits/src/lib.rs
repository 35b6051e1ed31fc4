//! Circuits snarkflow proves, as plain bellperson [`Circuit`]s.
//!
//! Every circuit here is built from a [`CircuitSpec`] (its shape) plus a job seed and partition
//! index (its witness). The same spec with no witness is what parameter generation synthesizes.
//! The Filecoin kinds live in `snarkflow-filecoin`; [`visit_blank`] and [`visit_with_witness`]
//! build any kind's circuit and hand it to a [`CircuitVisitor`].
//! This crate knows nothing of NATS, HTTP or tokio.

mod dense_chain;
mod sha256_chain;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
pub use dense_chain::DenseChain;
pub use sha256_chain::Sha256Chain;
pub use snarkflow_filecoin::JobInput;
use snarkflow_synthesis::CircuitVisitor;
use snarkflow_wire::CircuitSpec;

/// A circuit that cannot be built: a Filecoin kind without its input, an input that does
/// not fit the spec.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CircuitError(pub String);

/// The blank (witness-free) circuit of any kind.
pub fn visit_blank<V: CircuitVisitor>(spec: &CircuitSpec, visitor: V) -> Result<V::Output, CircuitError> {
    if spec.kind().is_filecoin() {
        return snarkflow_filecoin::visit_blank(spec, visitor).map_err(|e| CircuitError(e.to_string()));
    }
    Ok(visitor.visit(PartitionCircuit::blank(*spec)))
}

/// Partition `partition` of a job with its witness: from the job seed for the synthetic
/// kinds, from the job input for the Filecoin kinds.
pub fn visit_with_witness<V: CircuitVisitor>(
    spec: &CircuitSpec,
    seed: u64,
    partition: u32,
    input: Option<&JobInput>,
    visitor: V,
) -> Result<V::Output, CircuitError> {
    if spec.kind().is_filecoin() {
        let input = input.ok_or_else(|| CircuitError(format!("a {} job needs its input", spec.kind().as_str())))?;
        return snarkflow_filecoin::visit_partition(spec, input, partition as usize, visitor)
            .map_err(|e| CircuitError(e.to_string()));
    }
    Ok(visitor.visit(PartitionCircuit::with_witness(*spec, seed, partition)))
}

/// File name (without extension) of a circuit's Groth16 parameters: the circuit id for the
/// synthetic kinds, filecoin-proofs' `v28-<circuit identifier>` for the Filecoin kinds.
pub fn param_file_stem(spec: &CircuitSpec) -> Result<String, CircuitError> {
    if spec.kind().is_filecoin() {
        return snarkflow_filecoin::param_file_stem(spec).map_err(|e| CircuitError(e.to_string()));
    }
    Ok(spec.circuit_id())
}

/// A buildable partition circuit: one of the kinds snarkflow knows.
#[derive(Debug, Clone)]
pub enum PartitionCircuit {
    Sha256Chain(Sha256Chain),
    DenseChain(DenseChain),
}

impl PartitionCircuit {
    /// The circuit for partition `partition` of a job with `seed`, witness included.
    pub fn with_witness(spec: CircuitSpec, seed: u64, partition: u32) -> Self {
        match spec {
            CircuitSpec::Sha256Chain { blocks } => {
                PartitionCircuit::Sha256Chain(Sha256Chain::with_witness(blocks, seed, partition))
            }
            CircuitSpec::DenseChain { constraints } => {
                PartitionCircuit::DenseChain(DenseChain::with_witness(constraints, seed, partition))
            }
            other => panic!("{} is built by visit_with_witness, not PartitionCircuit", other.circuit_id()),
        }
    }

    /// The circuit's shape without a witness, for parameter generation.
    pub fn blank(spec: CircuitSpec) -> Self {
        match spec {
            CircuitSpec::Sha256Chain { blocks } => PartitionCircuit::Sha256Chain(Sha256Chain::blank(blocks)),
            CircuitSpec::DenseChain { constraints } => PartitionCircuit::DenseChain(DenseChain::blank(constraints)),
            other => panic!("{} is built by visit_blank, not PartitionCircuit", other.circuit_id()),
        }
    }

    /// Public inputs (without the leading ONE) computed natively, outside any constraint
    /// system; `None` for a blank circuit. Lets a verifier check a proof without trusting
    /// the prover's copy of the inputs.
    pub fn public_inputs(&self) -> Option<Vec<Fr>> {
        match self {
            PartitionCircuit::Sha256Chain(c) => c.public_inputs(),
            PartitionCircuit::DenseChain(c) => c.public_inputs(),
        }
    }
}

impl Circuit<Fr> for PartitionCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            PartitionCircuit::Sha256Chain(c) => c.synthesize(cs),
            PartitionCircuit::DenseChain(c) => c.synthesize(cs),
        }
    }
}

/// Deterministic per-partition randomness: the witness of partition `p` of job seed `s` is the
/// same on every synth-worker, so a redelivered partition re-synthesizes identically.
pub(crate) fn partition_rng(seed: u64, partition: u32) -> rand_chacha::ChaCha20Rng {
    use rand::SeedableRng;
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..12].copy_from_slice(&partition.to_le_bytes());
    key[12..].copy_from_slice(b"snarkflow-partition-");
    rand_chacha::ChaCha20Rng::from_seed(key)
}
