//! Every proof kind snarkflow proves, one module each, behind one trait ([`ProofKind`]):
//! parsing a request's input, the circuit for partition k (and the blank one), public
//! inputs, verification of the assembled proof, the parameter file name and the default
//! priority. The registry ([`parse_request`], [`visit_blank`], [`visit_with_witness`], ...)
//! is the one place that maps a [`snarkflow_wire::JobKind`] to its module.
//!
//! The synthetic kinds (`sha256-chain`, `dense-chain`) are bellperson circuits defined here;
//! the Filecoin kinds build filecoin-proofs' own circuits through `snarkflow-filecoin`.
//! This crate knows nothing of NATS, HTTP or tokio.

mod catalog;
mod kind;
mod kinds;
mod registry;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
pub use catalog::{catalog, Catalog};
pub use kind::{KindError, ParsedRequest, ProofKind};
pub use kinds::dense_chain::DenseChain;
pub use kinds::sha256_chain::Sha256Chain;
pub use registry::{
    default_deadline_secs, default_priority, is_filecoin, native_witness, param_file_stem, parse_filecoin_request,
    parse_request, public_inputs, record_shape, takes_input, test_constraints, verified_whole, verify_job, visit_blank,
    visit_with_witness,
};
pub use snarkflow_filecoin::{FilecoinRequest, JobInput, VerifyFailure};
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
            other @ (CircuitSpec::PorepC2 { .. }
            | CircuitSpec::SnapUpdate { .. }
            | CircuitSpec::WindowPost { .. }
            | CircuitSpec::WinningPost { .. }) => {
                panic!("{} is built by visit_with_witness, not PartitionCircuit", other.circuit_id())
            }
        }
    }

    /// The circuit's shape without a witness, for parameter generation.
    pub fn blank(spec: CircuitSpec) -> Self {
        match spec {
            CircuitSpec::Sha256Chain { blocks } => PartitionCircuit::Sha256Chain(Sha256Chain::blank(blocks)),
            CircuitSpec::DenseChain { constraints } => PartitionCircuit::DenseChain(DenseChain::blank(constraints)),
            other @ (CircuitSpec::PorepC2 { .. }
            | CircuitSpec::SnapUpdate { .. }
            | CircuitSpec::WindowPost { .. }
            | CircuitSpec::WinningPost { .. }) => {
                panic!("{} is built by visit_blank, not PartitionCircuit", other.circuit_id())
            }
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
