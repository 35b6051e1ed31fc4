//! `snap-update`: SnapDeals (empty sector update) proofs, on `snarkflow_filecoin::snap`.

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{snap, JobInput, VerifyFailure};
use snarkflow_synthesis::CircuitVisitor;
use snarkflow_wire::{CircuitSpec, JobKind, Priority};

use crate::kind::{needs_input, not_mine, KindError, ParsedRequest, ProofKind};

#[derive(Debug)]
pub(crate) struct Snap;

fn input_of(input: Option<&JobInput>) -> Result<&snap::SnapInput, KindError> {
    match needs_input(Snap::KIND, input)? {
        JobInput::SnapUpdate(i) => Ok(i),
        other @ (JobInput::PorepC2(_) | JobInput::WindowPost(_) | JobInput::WinningPost(_)) => {
            Err(not_mine(Snap::KIND, other))
        }
    }
}

fn sector_size(spec: &CircuitSpec) -> Result<u64, KindError> {
    match *spec {
        CircuitSpec::SnapUpdate { sector_size } => Ok(sector_size),
        CircuitSpec::Sha256Chain { .. }
        | CircuitSpec::DenseChain { .. }
        | CircuitSpec::PorepC2 { .. }
        | CircuitSpec::WindowPost { .. }
        | CircuitSpec::WinningPost { .. } => Err(not_mine(Snap::KIND, spec)),
    }
}

impl ProofKind for Snap {
    const KIND: JobKind = JobKind::SnapUpdate;
    const DEFAULT_PRIORITY: Priority = Priority::Normal;
    const DEFAULT_DEADLINE_SECS: u64 = 6 * 3600;
    const TAKES_INPUT: bool = true;
    const FILECOIN: bool = true;
    const VERIFIED_WHOLE: bool = true;

    fn parse(input: &Map<String, Value>) -> Result<ParsedRequest, KindError> {
        let parsed = snap::parse(input)?;
        let input = Some(JobInput::SnapUpdate(parsed.input));
        Ok(ParsedRequest { spec: parsed.spec, partitions: parsed.partitions, seed: 0, input })
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
        Ok(snap::visit_partition(input_of(input)?, partition as usize, visitor)?)
    }

    fn native_witness(
        spec: &CircuitSpec,
        partition: u32,
        input: Option<&JobInput>,
    ) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
        let native = || -> Result<_, KindError> {
            sector_size(spec)?;
            Ok(snap::native_witness(input_of(input)?, partition as usize, &spec.circuit_id())?)
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
        Some(match input_of(input) {
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
        Ok(snap::public_inputs(input_of(input)?)?)
    }
}
