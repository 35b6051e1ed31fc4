//! Circuits snarkflow proves, as plain bellperson [`Circuit`]s.
//!
//! Every circuit here is built from a [`CircuitSpec`] (its shape) plus a job seed and partition
//! index (its witness). The same spec with no witness is what parameter generation synthesizes.
//! This crate knows nothing of NATS, HTTP or tokio.

mod dense_chain;
mod sha256_chain;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
pub use dense_chain::DenseChain;
pub use sha256_chain::Sha256Chain;
use snarkflow_wire::CircuitSpec;

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
        }
    }

    /// The circuit's shape without a witness, for parameter generation.
    pub fn blank(spec: CircuitSpec) -> Self {
        match spec {
            CircuitSpec::Sha256Chain { blocks } => PartitionCircuit::Sha256Chain(Sha256Chain::blank(blocks)),
            CircuitSpec::DenseChain { constraints } => PartitionCircuit::DenseChain(DenseChain::blank(constraints)),
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
