//! `porep-c2`: PoRep commit phase 2 (interactive and Synthetic PoRep, every sector size), on
//! `snarkflow_filecoin::porep`.

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{porep, Parsed, PorepInput, PorepSpec, VerifyFailure};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape};
use snarkflow_wire::{CircuitSpec, JobKind, Priority};

use crate::kind::{circuit_spec, input_of, spec_of, KindError, ParsedRequest, ProofKind};
use crate::JobInput;

#[derive(Debug)]
pub struct Porep;

fn porep_input(input: Option<&JobInput>) -> Result<&PorepInput, KindError> {
    input_of::<Porep>(input)
}

fn shape(spec: &CircuitSpec) -> Result<(u64, bool), KindError> {
    let PorepSpec { sector_size, synthetic } = spec_of::<Porep>(spec)?;
    Ok((sector_size, synthetic))
}

impl Porep {
    /// The job a checked request makes (either door: JSON or the cuzk interface).
    pub(crate) fn job(parsed: Parsed<PorepSpec, PorepInput>) -> ParsedRequest {
        ParsedRequest {
            spec: circuit_spec::<Porep>(&parsed.spec),
            partitions: parsed.partitions,
            seed: 0,
            input: Some(JobInput::of::<Porep>(parsed.input)),
        }
    }
}

impl ProofKind for Porep {
    const KIND: JobKind = JobKind::new("porep-c2");
    type Spec = PorepSpec;
    type Input = PorepInput;
    const DEFAULT_PRIORITY: Priority = Priority::Normal;
    /// Far inside the PreCommit → ProveCommit window; generous for a 32 GiB C2 behind a queue.
    const DEFAULT_DEADLINE_SECS: u64 = 6 * 3600;
    const TAKES_INPUT: bool = true;
    const FILECOIN: bool = true;
    const VERIFIED_WHOLE: bool = true;

    /// `32GiB`, `synthetic-32GiB`.
    fn render_spec(spec: &PorepSpec) -> String {
        let size = snarkflow_wire::sector_size_label(spec.sector_size);
        if spec.synthetic {
            format!("synthetic-{size}")
        } else {
            size
        }
    }

    fn parse_spec(params: &str) -> Option<PorepSpec> {
        let (synthetic, size) = match params.strip_prefix("synthetic-") {
            Some(size) => (true, size),
            None => (false, params),
        };
        Some(PorepSpec { sector_size: snarkflow_wire::parse_sector_size(size)?, synthetic })
    }

    fn sector_size(spec: &PorepSpec) -> Option<u64> {
        Some(spec.sector_size)
    }

    fn parse(input: &Map<String, Value>) -> Result<ParsedRequest, KindError> {
        Ok(Porep::job(porep::parse(input)?))
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
        Ok(porep::visit_partition(porep_input(input)?, partition as usize, visitor)?)
    }

    fn native_witness(
        spec: &CircuitSpec,
        partition: u32,
        input: Option<&JobInput>,
    ) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
        let native = || -> Result<_, KindError> {
            shape(spec)?;
            Ok(porep::native_witness(porep_input(input)?, partition as usize, &spec.circuit_id())?)
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
        Some(match porep_input(input) {
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
        Ok(porep::public_inputs(porep_input(input)?)?)
    }
}
