//! `porep-c2`: PoRep commit phase 2 (interactive and Synthetic PoRep, every sector size), on
//! `snarkflow_filecoin::porep`.

use std::path::Path;

use blstrs::Scalar as Fr;
use serde_json::{Map, Value};
use snarkflow_filecoin::{porep, Parsed, PorepInput, PorepSpec, VerifyFailure};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape};
use snarkflow_wire::{JobKind, Priority};

use crate::kind::{circuit_id, KindError, ProofKind};

#[derive(Debug)]
pub struct Porep;

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
    const TEXT_FIELDS: &'static [&'static str] = &["c1_raw"];

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

    fn parse(input: &Map<String, Value>) -> Result<Parsed<PorepSpec, PorepInput>, KindError> {
        Ok(porep::parse(input)?)
    }

    fn visit_blank<V: CircuitVisitor>(spec: &PorepSpec, visitor: V) -> Result<V::Output, KindError> {
        Ok(porep::visit_blank(spec.sector_size, spec.synthetic, visitor)?)
    }

    /// Recorded from two challenges and copied: 32 GiB's 18 challenges took 135 s whole.
    fn record_shape(spec: &PorepSpec, id: &str) -> Result<ConstraintShape, KindError> {
        porep::record_blank_shape(spec.sector_size, spec.synthetic, id)
            .map_err(|e| KindError(format!("recording the shape of {id}: {e}")))
    }

    fn visit_partition<V: CircuitVisitor>(
        _spec: &PorepSpec,
        partition: u32,
        input: &PorepInput,
        visitor: V,
    ) -> Result<V::Output, KindError> {
        Ok(porep::visit_partition(input, partition as usize, visitor)?)
    }

    fn native_witness(
        spec: &PorepSpec,
        partition: u32,
        input: &PorepInput,
    ) -> Option<Result<snarkflow_synthesis::PartitionWitness, KindError>> {
        let id = circuit_id::<Porep>(spec);
        Some(porep::native_witness(input, partition as usize, &id).map_err(KindError::from))
    }

    fn param_file_stem(spec: &PorepSpec) -> Result<String, KindError> {
        Ok(porep::param_file_stem(spec.sector_size, spec.synthetic)?)
    }

    fn verify(
        _spec: &PorepSpec,
        input: &PorepInput,
        params_dir: &Path,
        partition_proofs: &[Vec<u8>],
    ) -> Option<Result<(), VerifyFailure>> {
        Some(porep::verify(input, params_dir, partition_proofs))
    }

    fn public_inputs(_spec: &PorepSpec, _partitions: u32, input: &PorepInput) -> Result<Vec<Vec<Fr>>, KindError> {
        Ok(porep::public_inputs(input)?)
    }
}
