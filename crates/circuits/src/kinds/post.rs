//! What WindowPoSt and WinningPoSt share as proof kinds: one construction
//! (`snarkflow_filecoin::PostKind`), told apart by the kind's spec and input variants.

use std::path::Path;

use blstrs::Scalar as Fr;
use snarkflow_filecoin::{JobInput, PostInput, PostKind, VerifyFailure};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape};
use snarkflow_wire::{CircuitSpec, JobKind};

use crate::kind::{needs_input, not_mine, KindError, ParsedRequest};

/// The PoSt a kind is, its sector size from a spec, and its input from a job input.
pub(crate) struct Post {
    pub kind: JobKind,
    pub post: PostKind,
    pub sector_size: fn(&CircuitSpec) -> Option<u64>,
    pub input: fn(&JobInput) -> Option<&PostInput>,
    /// The kind's job input holding a PoSt input.
    pub wrap: fn(PostInput) -> JobInput,
}

impl Post {
    fn sector_size(&self, spec: &CircuitSpec) -> Result<u64, KindError> {
        (self.sector_size)(spec).ok_or_else(|| not_mine(self.kind, spec))
    }

    fn input<'a>(&self, input: Option<&'a JobInput>) -> Result<&'a PostInput, KindError> {
        let input = needs_input(self.kind, input)?;
        (self.input)(input).ok_or_else(|| not_mine(self.kind, input))
    }

    pub(super) fn parse(&self, input: &serde_json::Map<String, serde_json::Value>) -> Result<ParsedRequest, KindError> {
        let parsed = self.post.parse(input)?;
        let input = Some((self.wrap)(parsed.input));
        Ok(ParsedRequest { spec: parsed.spec, partitions: parsed.partitions, seed: 0, input })
    }

    pub(super) fn visit_blank<V: CircuitVisitor>(
        &self,
        spec: &CircuitSpec,
        visitor: V,
    ) -> Result<V::Output, KindError> {
        Ok(self.post.visit_blank(self.sector_size(spec)?, visitor)?)
    }

    /// From two sectors, copied ([`PostKind::record_blank_shape`]).
    pub(super) fn record_shape(&self, spec: &CircuitSpec) -> Result<ConstraintShape, KindError> {
        let id = spec.circuit_id();
        self.post
            .record_blank_shape(self.sector_size(spec)?, &id)
            .map_err(|e| KindError(format!("recording the shape of {id}: {e}")))
    }

    pub(super) fn visit_partition<V: CircuitVisitor>(
        &self,
        spec: &CircuitSpec,
        partition: u32,
        input: Option<&JobInput>,
        visitor: V,
    ) -> Result<V::Output, KindError> {
        self.sector_size(spec)?;
        Ok(self.post.visit_partition(self.input(input)?, partition as usize, visitor)?)
    }

    pub(super) fn native_witness(
        &self,
        spec: &CircuitSpec,
        partition: u32,
        input: Option<&JobInput>,
    ) -> Result<snarkflow_synthesis::PartitionWitness, KindError> {
        self.sector_size(spec)?;
        Ok(self.post.native_witness(self.input(input)?, partition as usize, &spec.circuit_id())?)
    }

    pub(super) fn param_file_stem(&self, spec: &CircuitSpec) -> Result<String, KindError> {
        Ok(self.post.param_file_stem(self.sector_size(spec)?)?)
    }

    pub(super) fn verify(
        &self,
        input: Option<&JobInput>,
        params_dir: &Path,
        proofs: &[Vec<u8>],
    ) -> Result<(), VerifyFailure> {
        let input = self.input(input).map_err(|e| VerifyFailure::whole(e.to_string()))?;
        self.post.verify(input, params_dir, proofs)
    }

    pub(super) fn public_inputs(&self, input: Option<&JobInput>) -> Result<Vec<Vec<Fr>>, KindError> {
        Ok(self.post.public_inputs(self.input(input)?)?)
    }
}

/// `impl ProofKind for $Kind` through the [`Post`] constant `$post`.
macro_rules! post_kind {
    ($Kind:ident, $priority:ident, $deadline_secs:expr, $post:ident) => {
        impl crate::ProofKind for $Kind {
            const KIND: snarkflow_wire::JobKind = snarkflow_wire::JobKind::$Kind;
            const DEFAULT_PRIORITY: snarkflow_wire::Priority = snarkflow_wire::Priority::$priority;
            const DEFAULT_DEADLINE_SECS: u64 = $deadline_secs;
            const TAKES_INPUT: bool = true;
            const FILECOIN: bool = true;
            const VERIFIED_WHOLE: bool = true;

            fn parse(
                input: &serde_json::Map<String, serde_json::Value>,
            ) -> Result<crate::ParsedRequest, crate::KindError> {
                $post.parse(input)
            }

            fn visit_blank<V: snarkflow_synthesis::CircuitVisitor>(
                spec: &snarkflow_wire::CircuitSpec,
                visitor: V,
            ) -> Result<V::Output, crate::KindError> {
                $post.visit_blank(spec, visitor)
            }

            fn record_shape(
                spec: &snarkflow_wire::CircuitSpec,
            ) -> Result<snarkflow_synthesis::ConstraintShape, crate::KindError> {
                $post.record_shape(spec)
            }

            fn visit_partition<V: snarkflow_synthesis::CircuitVisitor>(
                spec: &snarkflow_wire::CircuitSpec,
                _seed: u64,
                partition: u32,
                input: Option<&snarkflow_filecoin::JobInput>,
                visitor: V,
            ) -> Result<V::Output, crate::KindError> {
                $post.visit_partition(spec, partition, input, visitor)
            }

            fn native_witness(
                spec: &snarkflow_wire::CircuitSpec,
                partition: u32,
                input: Option<&snarkflow_filecoin::JobInput>,
            ) -> Option<Result<snarkflow_synthesis::PartitionWitness, crate::KindError>> {
                Some($post.native_witness(spec, partition, input))
            }

            fn param_file_stem(spec: &snarkflow_wire::CircuitSpec) -> Result<String, crate::KindError> {
                $post.param_file_stem(spec)
            }

            fn verify(
                _spec: &snarkflow_wire::CircuitSpec,
                input: Option<&snarkflow_filecoin::JobInput>,
                params_dir: &std::path::Path,
                partition_proofs: &[Vec<u8>],
            ) -> Option<Result<(), snarkflow_filecoin::VerifyFailure>> {
                Some($post.verify(input, params_dir, partition_proofs))
            }

            fn public_inputs(
                _spec: &snarkflow_wire::CircuitSpec,
                _seed: u64,
                _partitions: u32,
                input: Option<&snarkflow_filecoin::JobInput>,
            ) -> Result<Vec<Vec<blstrs::Scalar>>, crate::KindError> {
                $post.public_inputs(input)
            }
        }
    };
}
pub(crate) use post_kind;
