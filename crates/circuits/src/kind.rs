//! What a proof kind is: everything snarkflow needs to know about one kind, in one place.

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{Parsed, VerifyFailure};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape, RecordShape};
use snarkflow_wire::{CircuitSpec, JobKind, Priority};

use crate::JobInput;

/// A problem with a job of some kind, in words meant for whoever sent it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KindError(pub String);

impl KindError {
    pub fn new(msg: impl Into<String>) -> Self {
        KindError(msg.into())
    }
}

impl From<snarkflow_filecoin::FilecoinError> for KindError {
    fn from(e: snarkflow_filecoin::FilecoinError) -> Self {
        KindError(e.0)
    }
}

/// A request's `input` that passed every check of its kind, as the pipeline carries it: the
/// kind's name and rendered spec, and its input behind one type.
#[derive(Debug, Clone)]
pub struct ParsedRequest {
    pub spec: CircuitSpec,
    pub partitions: u32,
    /// Witness seed of the kinds whose input is a seed ([`ProofKind::from_seed`]); 0 for the others.
    pub seed: u64,
    /// The input object of the kinds that take one ([`ProofKind::TAKES_INPUT`]).
    pub input: Option<JobInput>,
}

/// A synthetic kind's input: the seed its witnesses are drawn from. It travels in the job
/// record (`seed`), not as a stored object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Seed(pub u64);

/// One proof kind. Each is a module of `crate::kinds`, registered by one line in
/// `crate::registry`; nothing else names kinds. The kind owns its spec's type and rendering and
/// its input's type, and its methods see only those: the registry reads the [`CircuitSpec`]
/// (the kind's name and its rendered spec) and the [`JobInput`] (its input behind one type)
/// once, and refuses what is not this kind's.
pub trait ProofKind {
    /// The kind's name: in requests, on the wire, first in its circuit ids.
    const KIND: JobKind;
    /// What tells two circuits of this kind apart (a size, a sector size).
    type Spec: std::fmt::Debug + Clone + PartialEq;
    /// What its jobs carry besides the spec: a C1 output, vanilla proofs (stored with the job in
    /// bincode, [`JobInput::to_bytes`]), or a [`Seed`] (carried in the job record).
    type Input: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static;
    /// The priority of a job whose request names none.
    const DEFAULT_PRIORITY: Priority;
    /// Seconds after submission by which a job whose request names no deadline must finish;
    /// past it the gateway fails the job (a proof that late is worth nothing to its owner, and
    /// a job never stays open forever).
    const DEFAULT_DEADLINE_SECS: u64;
    /// Whether jobs carry an input object (C1 output, vanilla proofs) that workers fetch;
    /// false for a kind whose input is its job's seed ([`ProofKind::from_seed`]).
    const TAKES_INPUT: bool;
    /// Whether the kind is one of filecoin-proofs' circuits: its parameter files carry
    /// filecoin-proofs' names and a `.meta`, random ones are marked as such, and none is ever
    /// generated beside trusted-setup files. snarkflow's own test circuits are not.
    const FILECOIN: bool;
    /// Whether the gateway checks the assembled proof ([`ProofKind::verify`]) before a job is
    /// `done`; the gpu-workers verify every partition proof of every kind regardless.
    const VERIFIED_WHOLE: bool;
    /// Whether most of a partition's witness values are neither 0 nor 1 (PoSt: Poseidon's
    /// field elements, 99 % at 32 GiB; PoRep and SnapDeals ~1.3 %): the GPU prover then makes
    /// full MSMs of the L, A and B queries and plans its memory for them.
    const DENSE_WITNESS: bool = false;

    /// Whether the API description (docs/openapi.json) lists the kind: false for a kind compiled
    /// into test builds only.
    const DOCUMENTED: bool = true;

    /// Input fields whose value [`ProofKind::parse`] also takes as its JSON text in a string
    /// (PoRep's `c1_raw`): the gateway hands such a field over as text when it arrives as an
    /// object, never building the JSON tree of a C1 output (16-32x its size in memory).
    const TEXT_FIELDS: &'static [&'static str] = &[];

    /// `spec` as the tail of a circuit id (`32GiB`, `c1024`): letters, digits, `-` and `_`, one
    /// rendering per spec, read back by [`ProofKind::parse_spec`].
    fn render_spec(spec: &Self::Spec) -> String;

    /// Inverse of [`ProofKind::render_spec`]; `None` for what it never renders.
    fn parse_spec(params: &str) -> Option<Self::Spec>;

    /// The sector size of a Filecoin kind's circuit; `None` for the others.
    fn sector_size(_spec: &Self::Spec) -> Option<u64> {
        None
    }

    /// The input of a job whose kind takes no input object: made from the job's seed. `None`
    /// for the kinds that take one ([`ProofKind::TAKES_INPUT`]).
    fn from_seed(_seed: u64) -> Option<Self::Input> {
        None
    }

    /// The seed a job of this kind carries for `input` (0 for kinds that take an input object).
    fn seed(_input: &Self::Input) -> u64 {
        0
    }

    /// Check a request's `input` object completely and turn it into a job.
    fn parse(input: &Map<String, Value>) -> Result<Parsed<Self::Spec, Self::Input>, KindError>;

    /// The circuit of `spec` without a witness (parameter generation, constraint shapes).
    fn visit_blank<V: CircuitVisitor>(spec: &Self::Spec, visitor: V) -> Result<V::Output, KindError>;

    /// The constraint shape of `spec`'s circuit (whose id is `id`): what recording
    /// [`ProofKind::visit_blank`]'s circuit gives, made the fastest way the kind knows.
    fn record_shape(spec: &Self::Spec, id: &str) -> Result<ConstraintShape, KindError> {
        Self::visit_blank(spec, RecordShape(id))
            .map_err(|e| KindError(format!("building the {id} circuit: {e}")))?
            .map_err(|e| KindError(format!("recording the shape of {id}: {e}")))
    }

    /// Partition `partition` of a job, witness included.
    fn visit_partition<V: CircuitVisitor>(
        spec: &Self::Spec,
        partition: u32,
        input: &Self::Input,
        visitor: V,
    ) -> Result<V::Output, KindError>;

    /// File name (without extension) of the circuit's Groth16 parameters and verifying key.
    fn param_file_stem(spec: &Self::Spec) -> Result<String, KindError>;

    /// The assembled proof checked from the job alone, before the job is `done`; `None` when
    /// not [`ProofKind::VERIFIED_WHOLE`].
    fn verify(
        spec: &Self::Spec,
        input: &Self::Input,
        params_dir: &Path,
        partition_proofs: &[Vec<u8>],
    ) -> Option<Result<(), VerifyFailure>>;

    /// For a test kind (a synthetic load circuit, not a Filecoin proof), about how many
    /// constraints one partition of `spec` has; `None` for the real kinds. Gateways accept
    /// test kinds only when told to, and bound their size.
    fn test_constraints(_spec: &Self::Spec) -> Option<u64> {
        None
    }

    /// Partition `partition`'s witness computed natively, without the gadgets:
    /// `None` when this kind has no native generator (its gadgets are the only path). Equal
    /// to witness-only synthesis of [`ProofKind::visit_partition`]'s circuit, value for value.
    fn native_witness(
        _spec: &Self::Spec,
        _partition: u32,
        _input: &Self::Input,
    ) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
        None
    }

    /// Public inputs of every partition, computed from the job alone.
    fn public_inputs(spec: &Self::Spec, partitions: u32, input: &Self::Input) -> Result<Vec<Vec<Fr>>, KindError>;
}

/// `spec` as `K` reads it: an error when it is another kind's, or not a rendering `K` makes.
pub fn spec_of<K: ProofKind>(spec: &CircuitSpec) -> Result<K::Spec, KindError> {
    if spec.kind() != K::KIND {
        return Err(KindError(format!("{spec:?} does not belong to a {} job", K::KIND)));
    }
    // only the kind's own rendering: one circuit, one id (its files, shapes and caches are
    // keyed by it); `check_spec` turns other spellings into that rendering
    read_spec::<K>(spec, true)
}

/// `spec`'s parameters as `K` reads them; with `rendered_only`, only in `K`'s own rendering.
pub(crate) fn read_spec<K: ProofKind>(spec: &CircuitSpec, rendered_only: bool) -> Result<K::Spec, KindError> {
    K::parse_spec(spec.params())
        .filter(|parsed| !rendered_only || K::render_spec(parsed) == spec.params())
        .ok_or_else(|| KindError(format!("{spec:?} is not a {} circuit this build knows", K::KIND)))
}

/// The circuit spec of `K`'s `spec`.
pub fn circuit_spec<K: ProofKind>(spec: &K::Spec) -> CircuitSpec {
    CircuitSpec::new(K::KIND, &K::render_spec(spec)).expect("a kind renders its specs as the wire takes them")
}

/// The circuit id of `K`'s `spec` (`porep-c2-32GiB`).
pub fn circuit_id<K: ProofKind>(spec: &K::Spec) -> String {
    circuit_spec::<K>(spec).circuit_id()
}

/// `K`'s input in `input`: an error when there is none or it is another kind's.
pub fn input_of<K: ProofKind>(input: Option<&JobInput>) -> Result<&K::Input, KindError> {
    let input = input.ok_or_else(|| KindError(format!("a {} job needs its input", K::KIND)))?;
    input.get::<K>().ok_or_else(|| KindError(format!("{input:?} does not belong to a {} job", K::KIND)))
}

/// The job `K`'s checked request makes, as the pipeline carries it.
pub(crate) fn request<K: ProofKind>(parsed: Parsed<K::Spec, K::Input>) -> ParsedRequest {
    ParsedRequest {
        spec: circuit_spec::<K>(&parsed.spec),
        partitions: parsed.partitions,
        seed: K::seed(&parsed.input),
        input: K::TAKES_INPUT.then(|| JobInput::of::<K>(parsed.input)),
    }
}
