//! `snap-update`: SnapDeals (empty sector update) proofs, on `snarkflow_filecoin::snap`.

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{snap, Parsed, SnapInput, VerifyFailure};
use snarkflow_synthesis::CircuitVisitor;
use snarkflow_wire::{CircuitSpec, JobKind, Priority};

use crate::kind::{circuit_spec, input_of, spec_of, KindError, ParsedRequest, ProofKind};
use crate::JobInput;

#[derive(Debug)]
pub struct Snap;

fn snap_input(input: Option<&JobInput>) -> Result<&SnapInput, KindError> {
    input_of::<Snap>(input)
}

fn sector_size(spec: &CircuitSpec) -> Result<u64, KindError> {
    spec_of::<Snap>(spec)
}

impl Snap {
    /// The job a checked request makes (either door: JSON or the cuzk interface).
    pub(crate) fn job(parsed: Parsed<u64, SnapInput>) -> ParsedRequest {
        ParsedRequest {
            spec: circuit_spec::<Snap>(&parsed.spec),
            partitions: parsed.partitions,
            seed: 0,
            input: Some(JobInput::of::<Snap>(parsed.input)),
        }
    }
}

impl ProofKind for Snap {
    const KIND: JobKind = JobKind::new("snap-update");
    type Input = SnapInput;
    const DEFAULT_PRIORITY: Priority = Priority::Normal;
    const DEFAULT_DEADLINE_SECS: u64 = 6 * 3600;
    const TAKES_INPUT: bool = true;
    const FILECOIN: bool = true;
    const VERIFIED_WHOLE: bool = true;

    super::sector_size_spec!();

    fn parse(input: &Map<String, Value>) -> Result<ParsedRequest, KindError> {
        Ok(Snap::job(snap::parse(input)?))
    }

    fn visit_blank<V: CircuitVisitor>(spec: &CircuitSpec, visitor: V) -> Result<V::Output, KindError> {
        Ok(snap::visit_blank(sector_size(spec)?, visitor)?)
    }

    fn visit_partition<V: CircuitVisitor>(
        spec: &CircuitSpec,
        _seed: u64,
        partition: u32,
        input: Option<&JobInput>,
        visitor: V,
    ) -> Result<V::Output, KindError> {
        sector_size(spec)?;
        Ok(snap::visit_partition(snap_input(input)?, partition as usize, visitor)?)
    }

    fn native_witness(
        spec: &CircuitSpec,
        partition: u32,
        input: Option<&JobInput>,
    ) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
        let native = || -> Result<_, KindError> {
            sector_size(spec)?;
            Ok(snap::native_witness(snap_input(input)?, partition as usize, &spec.circuit_id())?)
        };
        Some(native())
    }

    fn param_file_stem(spec: &CircuitSpec) -> Result<String, KindError> {
        Ok(snap::param_file_stem(sector_size(spec)?)?)
    }

    fn verify(
        _spec: &CircuitSpec,
        input: Option<&JobInput>,
        params_dir: &Path,
        partition_proofs: &[Vec<u8>],
    ) -> Option<Result<(), VerifyFailure>> {
        Some(match snap_input(input) {
            Ok(input) => snap::verify(input, params_dir, partition_proofs),
            Err(e) => Err(VerifyFailure::whole(e.to_string())),
        })
    }

    fn public_inputs(
        _spec: &CircuitSpec,
        _seed: u64,
        _partitions: u32,
        input: Option<&JobInput>,
    ) -> Result<Vec<Vec<Fr>>, KindError> {
        Ok(snap::public_inputs(snap_input(input)?)?)
    }
}
