//! The registry: every proof kind, one line each, and the only place that joins the kinds.
//! Adding a kind is a module in `crate::kinds` and a line in `registry!` below; nothing else in
//! the pipeline names a kind (the wire carries a kind's name and its rendered spec, a job's
//! input is the kind's own type behind [`JobInput`]) except the adapters to other software's
//! names that docs/ARCHITECTURE.md lists (cuzk's gRPC mapping, the CLI's Filecoin tools).

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{FilecoinRequest, VerifyFailure};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape};
use snarkflow_wire::{CircuitSpec, JobKind, Priority};

use crate::input::{self, JobInput};
use crate::kind::{input_of, request, spec_of, KindError, ParsedRequest, ProofKind};
use crate::kinds;

/// `KINDS`, and `with_kind!(kind, K => body, unknown => other)`: `body` with `K` the
/// [`ProofKind`] named `kind`, or `other` when this build has no such kind. (`$d` is a `$`, for
/// the inner macro's own variables.)
macro_rules! registry {
    ($d:tt $($(#[$attr:meta])* $K:path,)+) => {
        /// Every kind this build proves, in the registry's order.
        pub const KINDS: &[JobKind] = &[$($(#[$attr])* <$K as ProofKind>::KIND,)+];

        macro_rules! with_kind {
            ($d kind:expr, $d T:ident => $d body:expr, unknown => $d unknown:expr) => {
                'dispatch: {
                    let kind: JobKind = $d kind;
                    $(
                        $(#[$attr])*
                        if kind == <$K as ProofKind>::KIND {
                            type $d T = $K;
                            break 'dispatch ($d body);
                        }
                    )+
                    $d unknown
                }
            };
        }
    };
}

registry! { $
    kinds::sha256_chain::Sha256ChainKind,
    kinds::dense_chain::DenseChainKind,
    kinds::porep::Porep,
    kinds::snap::Snap,
    kinds::window_post::WindowPost,
    kinds::winning_post::WinningPost,
    // the proof that a kind is one module and this line: crates/e2e/tests/e2e/added_kind.rs
    #[cfg(feature = "example-kind")] kinds::cube::Cube,
}

fn unknown(kind: JobKind) -> KindError {
    let known: Vec<&str> = KINDS.iter().map(JobKind::as_str).collect();
    KindError(format!("unknown kind {kind:?} (this build proves {})", known.join(", ")))
}

/// The kind this build knows by `name`.
pub fn kind_named(name: &str) -> Option<JobKind> {
    KINDS.iter().copied().find(|k| k.as_str() == name)
}

/// The kinds the API description lists ([`ProofKind::DOCUMENTED`]).
pub fn documented_kinds() -> Vec<JobKind> {
    KINDS.iter().copied().filter(|&k| with_kind!(k, K => K::DOCUMENTED, unknown => false)).collect()
}

/// What a kind is, as constants ([`ProofKind`]'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindInfo {
    pub kind: JobKind,
    /// The priority of a job whose request names none.
    pub default_priority: Priority,
    /// Seconds after submission by which a job that names no deadline must finish.
    pub default_deadline_secs: u64,
    /// Whether jobs carry an input object (C1 output, vanilla proofs).
    pub takes_input: bool,
    /// Whether it is one of filecoin-proofs' circuits.
    pub filecoin: bool,
    /// Whether the gateway verifies a job's assembled proof before it is `done`.
    pub verified_whole: bool,
}

/// The constants of `kind`; `None` when this build has no such kind.
pub fn kind_info(kind: JobKind) -> Option<KindInfo> {
    with_kind!(kind, K => Some(KindInfo {
        kind,
        default_priority: K::DEFAULT_PRIORITY,
        default_deadline_secs: K::DEFAULT_DEADLINE_SECS,
        takes_input: K::TAKES_INPUT,
        filecoin: K::FILECOIN,
        verified_whole: K::VERIFIED_WHOLE,
    }), unknown => None)
}

/// [`kind_info`], or an error naming the kinds this build has.
pub fn known_kind(kind: JobKind) -> Result<KindInfo, KindError> {
    kind_info(kind).ok_or_else(|| unknown(kind))
}

/// Whether the gateway verifies a `kind` job's assembled proof before it is `done` (an unknown
/// kind's is: the check then fails the job rather than pass a proof nothing checked).
pub fn verified_whole(kind: JobKind) -> bool {
    kind_info(kind).is_none_or(|k| k.verified_whole)
}

/// [`ProofKind::TEXT_FIELDS`] of `kind` (none for a kind this build does not have).
pub fn text_fields(kind: JobKind) -> &'static [&'static str] {
    with_kind!(kind, K => K::TEXT_FIELDS, unknown => &[])
}

/// Whether jobs of `kind` carry an input (false for a kind this build does not have).
pub fn takes_input(kind: JobKind) -> bool {
    kind_info(kind).is_some_and(|k| k.takes_input)
}

/// The spec a circuit id names (`porep-c2-32GiB`): the kind whose name starts it, and that
/// kind's reading of the rest.
pub fn parse_circuit_id(id: &str) -> Option<CircuitSpec> {
    KINDS.iter().find_map(|&kind| {
        let params = id.strip_prefix(kind.as_str())?.strip_prefix('-')?;
        let spec = CircuitSpec::new(kind, params).ok()?;
        check_spec(&spec).ok()
    })
}

/// The spec a circuit id names, for constants and tests: panics when this build has no such
/// circuit ([`parse_circuit_id`] is the fallible form).
pub fn circuit(id: &str) -> CircuitSpec {
    parse_circuit_id(id).unwrap_or_else(|| panic!("{id:?} is not a circuit id this build knows"))
}

/// `spec` if its kind reads it, in the kind's own rendering (a spec from outside, e.g. one that
/// names a sector size by its byte count, becomes the one the kind's ids use).
pub fn check_spec(spec: &CircuitSpec) -> Result<CircuitSpec, KindError> {
    with_kind!(spec.kind(), K => {
        Ok(crate::kind::circuit_spec::<K>(&crate::kind::read_spec::<K>(spec, false)?))
    }, unknown => Err(unknown(spec.kind())))
}

/// [`ProofKind::DENSE_WITNESS`] of `spec`'s kind (false for a kind this build does not have).
pub fn dense_witness(spec: &CircuitSpec) -> bool {
    with_kind!(spec.kind(), K => K::DENSE_WITNESS, unknown => false)
}

/// The sector size of a Filecoin circuit; `None` for the others.
pub fn filecoin_sector_size(spec: &CircuitSpec) -> Option<u64> {
    with_kind!(spec.kind(), K => {
        if !K::FILECOIN {
            return None;
        }
        K::sector_size(&spec_of::<K>(spec).ok()?)
    }, unknown => None)
}

impl JobInput {
    /// Read a stored `kind` input ([`JobInput::to_bytes`]'s form).
    pub fn from_bytes(kind: JobKind, bytes: &[u8]) -> Result<JobInput, KindError> {
        with_kind!(kind, K => input::decode::<K>(bytes), unknown => Err(unknown(kind)))
    }
}

/// `f` of `K`'s input for a job: the one its seed makes, or its stored `input`.
fn with_input<K: ProofKind, R>(
    seed: u64,
    input: Option<&JobInput>,
    f: impl FnOnce(&K::Input) -> Result<R, KindError>,
) -> Result<R, KindError> {
    match K::from_seed(seed) {
        Some(seeded) => f(&seeded),
        None => f(input_of::<K>(input)?),
    }
}

/// For a test kind's `spec`, about how many constraints one partition has; `None` for the
/// Filecoin kinds.
pub fn test_constraints(spec: &CircuitSpec) -> Option<u64> {
    with_kind!(spec.kind(), K => K::test_constraints(&spec_of::<K>(spec).ok()?), unknown => None)
}

/// Check a request's `input` for a job of `kind`.
pub fn parse_request(kind: JobKind, input: &Map<String, Value>) -> Result<ParsedRequest, KindError> {
    with_kind!(kind, K => K::parse(input).map(request::<K>), unknown => Err(unknown(kind)))
}

/// Check a Filecoin job's input whose fields are already binary (the cuzk gRPC interface's
/// request): the same checks as [`parse_request`] after its JSON is read.
pub fn parse_filecoin_request(filecoin: FilecoinRequest) -> Result<ParsedRequest, KindError> {
    use snarkflow_filecoin::CheckedRequest as Checked;
    Ok(match filecoin.into_checked()? {
        Checked::PorepC2(parsed) => request::<kinds::porep::Porep>(parsed),
        Checked::SnapUpdate(parsed) => request::<kinds::snap::Snap>(parsed),
        Checked::WindowPost(parsed) => request::<kinds::window_post::WindowPost>(parsed),
        Checked::WinningPost(parsed) => request::<kinds::winning_post::WinningPost>(parsed),
    })
}

/// The kind a Filecoin request (cuzk's interface) asks for.
pub fn filecoin_request_kind(request: &FilecoinRequest) -> JobKind {
    match request {
        FilecoinRequest::PorepC2 { .. } => kinds::porep::Porep::KIND,
        FilecoinRequest::SnapUpdate { .. } => kinds::snap::Snap::KIND,
        FilecoinRequest::WindowPost { .. } => kinds::window_post::WindowPost::KIND,
        FilecoinRequest::WinningPost { .. } => kinds::winning_post::WinningPost::KIND,
    }
}

/// The blank (witness-free) circuit of `spec`.
pub fn visit_blank<V: CircuitVisitor>(spec: &CircuitSpec, visitor: V) -> Result<V::Output, KindError> {
    with_kind!(spec.kind(), K => K::visit_blank(&spec_of::<K>(spec)?, visitor), unknown => Err(unknown(spec.kind())))
}

/// The constraint shape of `spec`'s circuit ([`ProofKind::record_shape`]).
pub fn record_shape(spec: &CircuitSpec) -> Result<ConstraintShape, KindError> {
    with_kind!(spec.kind(), K => K::record_shape(&spec_of::<K>(spec)?, &spec.circuit_id()), unknown => Err(unknown(spec.kind())))
}

/// Partition `partition` of a job with its witness: from the job's seed for the kinds whose
/// input it is, from the job's stored input for the others.
pub fn visit_with_witness<V: CircuitVisitor>(
    spec: &CircuitSpec,
    seed: u64,
    partition: u32,
    input: Option<&JobInput>,
    visitor: V,
) -> Result<V::Output, KindError> {
    with_kind!(spec.kind(), K => {
        let spec = spec_of::<K>(spec)?;
        with_input::<K, _>(seed, input, |input| K::visit_partition(&spec, partition, input, visitor))
    }, unknown => Err(unknown(spec.kind())))
}

/// Partition `partition`'s witness from the kind's native generator, or `None` when the kind
/// has none (see [`ProofKind::native_witness`]).
pub fn native_witness(
    spec: &CircuitSpec,
    seed: u64,
    partition: u32,
    input: Option<&JobInput>,
) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
    with_kind!(spec.kind(), K => {
        let spec = match spec_of::<K>(spec) {
            Ok(spec) => spec,
            Err(e) => return Some(Err(e)),
        };
        with_input::<K, _>(seed, input, |input| Ok(K::native_witness(&spec, partition, input))).unwrap_or_else(|e| Some(Err(e)))
    }, unknown => Some(Err(unknown(spec.kind()))))
}

/// File name (without extension) of a circuit's Groth16 parameters: the circuit id for the
/// synthetic kinds, filecoin-proofs' `v28-<circuit identifier>` for the Filecoin kinds.
pub fn param_file_stem(spec: &CircuitSpec) -> Result<String, KindError> {
    with_kind!(spec.kind(), K => K::param_file_stem(&spec_of::<K>(spec)?), unknown => Err(unknown(spec.kind())))
}

/// Check an assembled job proof from the job alone (see [`ProofKind::verify`]); `None` when
/// the kind is not verified whole.
pub fn verify_job(
    spec: &CircuitSpec,
    seed: u64,
    input: Option<&JobInput>,
    params_dir: &Path,
    partition_proofs: &[Vec<u8>],
) -> Option<Result<(), VerifyFailure>> {
    with_kind!(spec.kind(), K => {
        if !K::VERIFIED_WHOLE {
            return None;
        }
        let verdict = spec_of::<K>(spec).and_then(|spec| {
            with_input::<K, _>(seed, input, |input| Ok(K::verify(&spec, input, params_dir, partition_proofs)))
        });
        match verdict {
            Ok(verdict) => {
                debug_assert!(verdict.is_some(), "a kind verifies whole exactly when it says so");
                verdict
            }
            Err(e) => Some(Err(VerifyFailure::whole(e.to_string()))),
        }
    }, unknown => Some(Err(VerifyFailure::whole(unknown(spec.kind()).to_string()))))
}

/// Public inputs of every partition of a job, from the job alone.
pub fn public_inputs(
    spec: &CircuitSpec,
    seed: u64,
    partitions: u32,
    input: Option<&JobInput>,
) -> Result<Vec<Vec<Fr>>, KindError> {
    with_kind!(spec.kind(), K => {
        let spec = spec_of::<K>(spec)?;
        with_input::<K, _>(seed, input, |input| K::public_inputs(&spec, partitions, input))
    }, unknown => Err(unknown(spec.kind())))
}
