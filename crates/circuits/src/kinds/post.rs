//! What WindowPoSt and WinningPoSt share as proof kinds: one construction
//! (`snarkflow_filecoin::PostKind`), told apart by their kind (the tag on their specs and inputs).

use std::path::Path;

use blstrs::Scalar as Fr;
use snarkflow_filecoin::{Parsed, PostInput, PostKind, VerifyFailure};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape};
use snarkflow_wire::CircuitSpec;

use crate::kind::{circuit_spec, input_of, spec_of, KindError, ParsedRequest, ProofKind};
use crate::JobInput;

/// A PoSt proof kind: its spec is the sector size, its input a [`PostInput`].
pub(crate) trait PostProofKind: ProofKind<Spec = u64, Input = PostInput> {
    const POST: PostKind;
}

/// The PoSt a kind `K` is, as the functions its `ProofKind` impl calls.
pub(crate) struct Post<K>(std::marker::PhantomData<K>);

impl<K: PostProofKind> Post<K> {
    fn input(input: Option<&JobInput>) -> Result<&PostInput, KindError> {
        input_of::<K>(input)
    }

    /// The job a checked request makes (either door: JSON or the cuzk interface).
    pub(crate) fn job(parsed: Parsed<u64, PostInput>) -> ParsedRequest {
        ParsedRequest {
            spec: circuit_spec::<K>(&parsed.spec),
            partitions: parsed.partitions,
            seed: 0,
            input: Some(JobInput::of::<K>(parsed.input)),
        }
    }

    pub(super) fn parse(input: &serde_json::Map<String, serde_json::Value>) -> Result<ParsedRequest, KindError> {
        Ok(Self::job(K::POST.parse(input)?))
    }

    pub(super) fn visit_blank<V: CircuitVisitor>(spec: &CircuitSpec, visitor: V) -> Result<V::Output, KindError> {
        Ok(K::POST.visit_blank(spec_of::<K>(spec)?, visitor)?)
    }

    /// From two sectors, copied ([`PostKind::record_blank_shape`]).
    pub(super) fn record_shape(spec: &CircuitSpec) -> Result<ConstraintShape, KindError> {
        let id = spec.circuit_id();
        K::POST
            .record_blank_shape(spec_of::<K>(spec)?, &id)
            .map_err(|e| KindError(format!("recording the shape of {id}: {e}")))
    }

    pub(super) fn visit_partition<V: CircuitVisitor>(
        spec: &CircuitSpec,
        partition: u32,
        input: Option<&JobInput>,
        visitor: V,
    ) -> Result<V::Output, KindError> {
        spec_of::<K>(spec)?;
        Ok(K::POST.visit_partition(Self::input(input)?, partition as usize, visitor)?)
    }

    pub(super) fn native_witness(
        spec: &CircuitSpec,
        partition: u32,
        input: Option<&JobInput>,
    ) -> Result<snarkflow_synthesis::PartitionWitness, KindError> {
        spec_of::<K>(spec)?;
        Ok(K::POST.native_witness(Self::input(input)?, partition as usize, &spec.circuit_id())?)
    }

    pub(super) fn param_file_stem(spec: &CircuitSpec) -> Result<String, KindError> {
        Ok(K::POST.param_file_stem(spec_of::<K>(spec)?)?)
    }

    pub(super) fn verify(input: Option<&JobInput>, params_dir: &Path, proofs: &[Vec<u8>]) -> Result<(), VerifyFailure> {
        let input = Self::input(input).map_err(|e| VerifyFailure::whole(e.to_string()))?;
        K::POST.verify(input, params_dir, proofs)
    }

    pub(super) fn public_inputs(input: Option<&JobInput>) -> Result<Vec<Vec<Fr>>, KindError> {
        Ok(K::POST.public_inputs(Self::input(input)?)?)
    }
}

/// `impl ProofKind for $Kind` through the [`Post`] constant `$post`.
macro_rules! post_kind {
    ($Kind:ident, $name:literal, $priority:ident, $deadline_secs:expr, $post:expr) => {
        impl super::post::PostProofKind for $Kind {
            const POST: snarkflow_filecoin::PostKind = $post;
        }

        impl crate::ProofKind for $Kind {
            const KIND: snarkflow_wire::JobKind = snarkflow_wire::JobKind::new($name);
            type Input = snarkflow_filecoin::PostInput;
            const DEFAULT_PRIORITY: snarkflow_wire::Priority = snarkflow_wire::Priority::$priority;
            const DEFAULT_DEADLINE_SECS: u64 = $deadline_secs;
            const TAKES_INPUT: bool = true;
            const FILECOIN: bool = true;
            const VERIFIED_WHOLE: bool = true;

            super::sector_size_spec!();

            fn parse(
                input: &serde_json::Map<String, serde_json::Value>,
            ) -> Result<crate::ParsedRequest, crate::KindError> {
                super::post::Post::<Self>::parse(input)
            }

            fn visit_blank<V: snarkflow_synthesis::CircuitVisitor>(
                spec: &snarkflow_wire::CircuitSpec,
                visitor: V,
            ) -> Result<V::Output, crate::KindError> {
                super::post::Post::<Self>::visit_blank(spec, visitor)
            }

            fn record_shape(
                spec: &snarkflow_wire::CircuitSpec,
            ) -> Result<snarkflow_synthesis::ConstraintShape, crate::KindError> {
                super::post::Post::<Self>::record_shape(spec)
            }

            fn visit_partition<V: snarkflow_synthesis::CircuitVisitor>(
                spec: &snarkflow_wire::CircuitSpec,
                _seed: u64,
                partition: u32,
                input: Option<&crate::JobInput>,
                visitor: V,
            ) -> Result<V::Output, crate::KindError> {
                super::post::Post::<Self>::visit_partition(spec, partition, input, visitor)
            }

            fn native_witness(
                spec: &snarkflow_wire::CircuitSpec,
                partition: u32,
                input: Option<&crate::JobInput>,
            ) -> Option<Result<snarkflow_synthesis::PartitionWitness, crate::KindError>> {
                Some(super::post::Post::<Self>::native_witness(spec, partition, input))
            }

            fn param_file_stem(spec: &snarkflow_wire::CircuitSpec) -> Result<String, crate::KindError> {
                super::post::Post::<Self>::param_file_stem(spec)
            }

            fn verify(
                _spec: &snarkflow_wire::CircuitSpec,
                input: Option<&crate::JobInput>,
                params_dir: &std::path::Path,
                partition_proofs: &[Vec<u8>],
            ) -> Option<Result<(), snarkflow_filecoin::VerifyFailure>> {
                Some(super::post::Post::<Self>::verify(input, params_dir, partition_proofs))
            }

            fn public_inputs(
                _spec: &snarkflow_wire::CircuitSpec,
                _seed: u64,
                _partitions: u32,
                input: Option<&crate::JobInput>,
            ) -> Result<Vec<Vec<blstrs::Scalar>>, crate::KindError> {
                super::post::Post::<Self>::public_inputs(input)
            }
        }
    };
}
pub(crate) use post_kind;
