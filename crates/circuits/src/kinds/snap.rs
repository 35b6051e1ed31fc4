//! `snap-update`: SnapDeals (empty sector update) proofs, on `snarkflow_filecoin::snap`.

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{snap, Parsed, SnapInput, VerifyFailure};
use snarkflow_synthesis::CircuitVisitor;
use snarkflow_wire::{JobKind, Priority};

use crate::kind::{circuit_id, KindError, ProofKind};

#[derive(Debug)]
pub struct Snap;

impl ProofKind for Snap {
    const KIND: JobKind = JobKind::new("snap-update");
    type Input = SnapInput;
    const DEFAULT_PRIORITY: Priority = Priority::Normal;
    const DEFAULT_DEADLINE_SECS: u64 = 6 * 3600;
    const TAKES_INPUT: bool = true;
    const FILECOIN: bool = true;
    const VERIFIED_WHOLE: bool = true;

    super::sector_size_spec!();

    fn parse(input: &Map<String, Value>) -> Result<Parsed<u64, SnapInput>, KindError> {
        Ok(snap::parse(input)?)
    }

    fn visit_blank<V: CircuitVisitor>(sector_size: &u64, visitor: V) -> Result<V::Output, KindError> {
        Ok(snap::visit_blank(*sector_size, visitor)?)
    }

    fn visit_partition<V: CircuitVisitor>(
        _: &u64,
        partition: u32,
        input: &SnapInput,
        visitor: V,
    ) -> Result<V::Output, KindError> {
        Ok(snap::visit_partition(input, partition as usize, visitor)?)
    }

    fn native_witness(
        sector_size: &u64,
        partition: u32,
        input: &SnapInput,
    ) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
        let id = circuit_id::<Snap>(sector_size);
        Some(snap::native_witness(input, partition as usize, &id).map_err(KindError::from))
    }

    fn param_file_stem(sector_size: &u64) -> Result<String, KindError> {
        Ok(snap::param_file_stem(*sector_size)?)
    }

    fn verify(
        _: &u64,
        input: &SnapInput,
        params_dir: &Path,
        partition_proofs: &[Vec<u8>],
    ) -> Option<Result<(), VerifyFailure>> {
        Some(snap::verify(input, params_dir, partition_proofs))
    }

    fn public_inputs(_: &u64, _partitions: u32, input: &SnapInput) -> Result<Vec<Vec<Fr>>, KindError> {
        Ok(snap::public_inputs(input)?)
    }
}
