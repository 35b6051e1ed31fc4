//! What WindowPoSt and WinningPoSt share as proof kinds: one construction
//! (`snarkflow_filecoin::PostKind`), told apart by their kind (the tag on their specs and inputs).

/// `impl ProofKind for $Kind` through the [`snarkflow_filecoin::PostKind`] `$post`: its spec is
/// the sector size, its input a `PostInput`.
macro_rules! post_kind {
    ($Kind:ident, $name:literal, $priority:ident, $deadline_secs:expr, $post:expr) => {
        impl crate::ProofKind for $Kind {
            const KIND: snarkflow_wire::JobKind = snarkflow_wire::JobKind::new($name);
            type Input = snarkflow_filecoin::PostInput;
            const DEFAULT_PRIORITY: snarkflow_wire::Priority = snarkflow_wire::Priority::$priority;
            const DEFAULT_DEADLINE_SECS: u64 = $deadline_secs;
            const TAKES_INPUT: bool = true;
            const FILECOIN: bool = true;
            const VERIFIED_WHOLE: bool = true;
            const DENSE_WITNESS: bool = true;

            super::sector_size_spec!();

            fn parse(
                input: &serde_json::Map<String, serde_json::Value>,
            ) -> Result<snarkflow_filecoin::Parsed<u64, snarkflow_filecoin::PostInput>, crate::KindError> {
                Ok($post.parse(input)?)
            }

            fn visit_blank<V: snarkflow_synthesis::CircuitVisitor>(
                sector_size: &u64,
                visitor: V,
            ) -> Result<V::Output, crate::KindError> {
                Ok($post.visit_blank(*sector_size, visitor)?)
            }

            /// From two sectors, copied (`PostKind::record_blank_shape`).
            fn record_shape(
                sector_size: &u64,
                id: &str,
            ) -> Result<snarkflow_synthesis::ConstraintShape, crate::KindError> {
                $post
                    .record_blank_shape(*sector_size, id)
                    .map_err(|e| crate::KindError(format!("recording the shape of {id}: {e}")))
            }

            fn visit_partition<V: snarkflow_synthesis::CircuitVisitor>(
                _: &u64,
                partition: u32,
                input: &snarkflow_filecoin::PostInput,
                visitor: V,
            ) -> Result<V::Output, crate::KindError> {
                Ok($post.visit_partition(input, partition as usize, visitor)?)
            }

            fn native_witness(
                sector_size: &u64,
                partition: u32,
                input: &snarkflow_filecoin::PostInput,
            ) -> Option<Result<snarkflow_synthesis::PartitionWitness, crate::KindError>> {
                let id = crate::circuit_id::<Self>(sector_size);
                Some($post.native_witness(input, partition as usize, &id).map_err(crate::KindError::from))
            }

            fn param_file_stem(sector_size: &u64) -> Result<String, crate::KindError> {
                Ok($post.param_file_stem(*sector_size)?)
            }

            fn verify(
                _: &u64,
                input: &snarkflow_filecoin::PostInput,
                params_dir: &std::path::Path,
                partition_proofs: &[Vec<u8>],
            ) -> Option<Result<(), snarkflow_filecoin::VerifyFailure>> {
                Some($post.verify(input, params_dir, partition_proofs))
            }

            fn public_inputs(
                _: &u64,
                _partitions: u32,
                input: &snarkflow_filecoin::PostInput,
            ) -> Result<Vec<Vec<blstrs::Scalar>>, crate::KindError> {
                Ok($post.public_inputs(input)?)
            }
        }
    };
}
pub(crate) use post_kind;
