//! The registry: every proof kind, one line each. `with_kind!` is the only match over
//! [`JobKind`] that decides what a kind does; adding a kind is a module in `crate::kinds` and a
//! line here (the compiler then names every other place that must decide something).

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{JobInput, VerifyFailure};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape};
use snarkflow_wire::{CircuitSpec, JobKind, Priority};

use crate::kind::{KindError, ParsedRequest, ProofKind};
use crate::kinds;

/// Run `$body` with `$K` bound to the [`ProofKind`] of `$kind`.
macro_rules! with_kind {
    ($kind:expr, $K:ident => $body:expr) => {
        match $kind {
            JobKind::Sha256Chain => {
                type $K = kinds::sha256_chain::Sha256ChainKind;
                $body
            }
            JobKind::DenseChain => {
                type $K = kinds::dense_chain::DenseChainKind;
                $body
            }
            JobKind::PorepC2 => {
                type $K = kinds::porep::Porep;
                $body
            }
            JobKind::SnapUpdate => {
                type $K = kinds::snap::Snap;
                $body
            }
            JobKind::WindowPost => {
                type $K = kinds::window_post::WindowPost;
                $body
            }
            JobKind::WinningPost => {
                type $K = kinds::winning_post::WinningPost;
                $body
            }
        }
    };
}

/// The priority of a job of `kind` whose request names none.
pub fn default_priority(kind: JobKind) -> Priority {
    with_kind!(kind, K => K::DEFAULT_PRIORITY)
}

/// Seconds after submission by which a job of `kind` that names no deadline must finish.
pub fn default_deadline_secs(kind: JobKind) -> u64 {
    with_kind!(kind, K => K::DEFAULT_DEADLINE_SECS)
}

/// Whether jobs of `kind` carry an input object (C1 output, vanilla proofs).
pub fn takes_input(kind: JobKind) -> bool {
    with_kind!(kind, K => K::TAKES_INPUT)
}

/// Whether `kind` is one of filecoin-proofs' circuits ([`ProofKind::FILECOIN`]).
pub fn is_filecoin(kind: JobKind) -> bool {
    with_kind!(kind, K => K::FILECOIN)
}

/// Whether the gateway verifies a `kind` job's assembled proof before it is `done`.
pub fn verified_whole(kind: JobKind) -> bool {
    with_kind!(kind, K => K::VERIFIED_WHOLE)
}

/// For a test kind's `spec`, about how many constraints one partition has; `None` for the
/// Filecoin kinds.
pub fn test_constraints(spec: &CircuitSpec) -> Option<u64> {
    with_kind!(spec.kind(), K => K::test_constraints(spec))
}

/// Check a request's `input` for a job of `kind`.
pub fn parse_request(kind: JobKind, input: &Map<String, Value>) -> Result<ParsedRequest, KindError> {
    with_kind!(kind, K => K::parse(input))
}

/// Check a Filecoin job's input whose fields are already binary (the cuzk gRPC interface's
/// request): the same checks as [`parse_request`] after its JSON is read.
pub fn parse_filecoin_request(request: snarkflow_filecoin::FilecoinRequest) -> Result<ParsedRequest, KindError> {
    let parsed = request.check()?;
    Ok(ParsedRequest { spec: parsed.spec, partitions: parsed.partitions, seed: 0, input: Some(parsed.input) })
}

/// The blank (witness-free) circuit of `spec`.
pub fn visit_blank<V: CircuitVisitor>(spec: &CircuitSpec, visitor: V) -> Result<V::Output, KindError> {
    with_kind!(spec.kind(), K => K::visit_blank(spec, visitor))
}

/// The constraint shape of `spec`'s circuit ([`ProofKind::record_shape`]).
pub fn record_shape(spec: &CircuitSpec) -> Result<ConstraintShape, KindError> {
    with_kind!(spec.kind(), K => K::record_shape(spec))
}

/// Partition `partition` of a job with its witness: from the job seed for the synthetic
/// kinds, from the job input for the Filecoin kinds.
pub fn visit_with_witness<V: CircuitVisitor>(
    spec: &CircuitSpec,
    seed: u64,
    partition: u32,
    input: Option<&JobInput>,
    visitor: V,
) -> Result<V::Output, KindError> {
    with_kind!(spec.kind(), K => K::visit_partition(spec, seed, partition, input, visitor))
}

/// Partition `partition`'s witness from the kind's native generator, or `None` when the kind
/// has none (see [`ProofKind::native_witness`]).
pub fn native_witness(
    spec: &CircuitSpec,
    partition: u32,
    input: Option<&JobInput>,
) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
    with_kind!(spec.kind(), K => K::native_witness(spec, partition, input))
}

/// File name (without extension) of a circuit's Groth16 parameters: the circuit id for the
/// synthetic kinds, filecoin-proofs' `v28-<circuit identifier>` for the Filecoin kinds.
pub fn param_file_stem(spec: &CircuitSpec) -> Result<String, KindError> {
    with_kind!(spec.kind(), K => K::param_file_stem(spec))
}

/// Check an assembled job proof from the job alone (see [`ProofKind::verify`]).
pub fn verify_job(
    spec: &CircuitSpec,
    input: Option<&JobInput>,
    params_dir: &Path,
    partition_proofs: &[Vec<u8>],
) -> Option<Result<(), VerifyFailure>> {
    with_kind!(spec.kind(), K => {
        let verdict = K::verify(spec, input, params_dir, partition_proofs);
        debug_assert_eq!(verdict.is_some(), K::VERIFIED_WHOLE, "a kind verifies whole exactly when it says so");
        verdict
    })
}

/// Public inputs of every partition of a job, from the job alone.
pub fn public_inputs(
    spec: &CircuitSpec,
    seed: u64,
    partitions: u32,
    input: Option<&JobInput>,
) -> Result<Vec<Vec<Fr>>, KindError> {
    with_kind!(spec.kind(), K => K::public_inputs(spec, seed, partitions, input))
}
