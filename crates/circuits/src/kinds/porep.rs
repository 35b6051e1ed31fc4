//! `porep-c2`: PoRep commit phase 2 (interactive and Synthetic PoRep, every sector size), on
//! `snarkflow_filecoin::porep`.

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{porep, JobInput, VerifyFailure};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape};
use snarkflow_wire::{CircuitSpec, JobKind, Priority};

use crate::kind::{needs_input, not_mine, KindError, ParsedRequest, ProofKind};

#[derive(Debug)]
pub(crate) struct Porep;

fn input_of(input: Option<&JobInput>) -> Result<&porep::PorepInput, KindError> {
    match needs_input(Porep::KIND, input)? {
        JobInput::PorepC2(i) => Ok(i),
        other @ (JobInput::SnapUpdate(_) | JobInput::WindowPost(_) | JobInput::WinningPost(_)) => {
            Err(not_mine(Porep::KIND, other))
        }
    }
}

fn shape(spec: &CircuitSpec) -> Result<(u64, bool), KindError> {
    match *spec {
        CircuitSpec::PorepC2 { sector_size, synthetic } => Ok((sector_size, synthetic)),
        CircuitSpec::Sha256Chain { .. }
        | CircuitSpec::DenseChain { .. }
        | CircuitSpec::SnapUpdate { .. }
        | CircuitSpec::WindowPost { .. }
        | CircuitSpec::WinningPost { .. } => Err(not_mine(Porep::KIND, spec)),
    }
}

impl ProofKind for Porep {
    const KIND: JobKind = JobKind::PorepC2;
    const DEFAULT_PRIORITY: Priority = Priority::Normal;
    /// Far inside the PreCommit → ProveCommit window; generous for a 32 GiB C2 behind a queue.
    const DEFAULT_DEADLINE_SECS: u64 = 6 * 3600;
    const TAKES_INPUT: bool = true;
    const FILECOIN: bool = true;
    const VERIFIED_WHOLE: bool = true;

    fn parse(input: &Map<String, Value>) -> Result<ParsedRequest, KindError> {
        let parsed = porep::parse(input)?;
        let input = Some(JobInput::PorepC2(parsed.input));
        Ok(ParsedRequest { spec: parsed.spec, partitions: parsed.partitions, seed: 0, input })
    }

    fn visit_blank<V: CircuitVisitor>(spec: &CircuitSpec, visitor: V) -> Result<V::Output, KindError> {
        let (sector_size, synthetic) = shape(spec)?;
        Ok(porep::visit_blank(sector_size, synthetic, visitor)?)
    }

    /// Recorded from two challenges and copied: 32 GiB's 18 challenges took 135 s whole.
    fn record_shape(spec: &CircuitSpec) -> Result<ConstraintShape, KindError> {
        let (sector_size, synthetic) = shape(spec)?;
        let id = spec.circuit_id();
        porep::record_blank_shape(sector_size, synthetic, &id)
            .map_err(|e| KindError(format!("recording the shape of {id}: {e}")))
    }

    fn visit_partition<V: CircuitVisitor>(
        spec: &CircuitSpec,
        _seed: u64,
        partition: u32,
        input: Option<&JobInput>,
        visitor: V,
    ) -> Result<V::Output, KindError> {
        shape(spec)?;
        Ok(porep::visit_partition(input_of(input)?, partition as usize, visitor)?)
    }

    fn native_witness(
        spec: &CircuitSpec,
        partition: u32,
        input: Option<&JobInput>,
    ) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
        let native = || -> Result<_, KindError> {
            shape(spec)?;
            Ok(porep::native_witness(input_of(input)?, partition as usize, &spec.circuit_id())?)
        };
        Some(native())
    }

    fn param_file_stem(spec: &CircuitSpec) -> Result<String, KindError> {
        let (sector_size, synthetic) = shape(spec)?;
        Ok(porep::param_file_stem(sector_size, synthetic)?)
    }

    fn verify(
        _spec: &CircuitSpec,
        input: Option<&JobInput>,
        params_dir: &Path,
        partition_proofs: &[Vec<u8>],
    ) -> Option<Result<(), VerifyFailure>> {
        Some(match input_of(input) {
            Ok(input) => porep::verify(input, params_dir, partition_proofs),
            Err(e) => Err(VerifyFailure::whole(e.to_string())),
        })
    }

    fn public_inputs(
        _spec: &CircuitSpec,
        _seed: u64,
        _partitions: u32,
        input: Option<&JobInput>,
    ) -> Result<Vec<Vec<Fr>>, KindError> {
        Ok(porep::public_inputs(input_of(input)?)?)
    }
}
