//! PoRep commit phase 2 (`porep-c2`): the C1 output in, the sector's seal proof out, built
//! with filecoin-proofs' own `StackedCompound` so the circuits are the ones
//! `seal_commit_phase2` proves. Interactive (`V1_1`) and Synthetic PoRep, every sector size.

use std::path::Path;

use anyhow::Context as _;
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, setup_params};
use filecoin_proofs::{as_safe_commitment, MerkleTreeTrait};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape, PartitionWitness};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

use crate::fields::{by_name, err, only_fields, prover_id, registered_name, sector_size_of, size_name, u64_field};

mod c1;
use crate::verify::{verdict, verify_partitions, VerifyFailure};
use crate::{FilecoinError, Parsed};
pub use c1::c1_envelope;

type Porep<'a, Tree> = StackedDrg<'a, Tree, DefaultPieceHasher>;
type PorepCompound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;

/// A checked PoRep input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PorepInput {
    pub miner_id: u64,
    pub sector_id: u64,
    pub prover_id: [u8; 32],
    /// The C1 output exactly as filecoin-proofs-api's `seal_commit_phase1` returned it.
    pub c1: SealCommitPhase1Output,
}

/// The registered proof of a PoRep circuit of `sector_size` bytes.
pub fn registered_proof(sector_size: u64, synthetic: bool) -> Result<RegisteredSealProof, FilecoinError> {
    let size = size_name(sector_size)?;
    if synthetic {
        by_name(format!("StackedDrg{size}V1_1_Feat_SyntheticPoRep"))
    } else {
        by_name(format!("StackedDrg{size}V1_1"))
    }
}

/// `v28-stacked-proof-of-replication-…`: the parameter file stem filecoin-proofs uses.
pub fn param_file_stem(sector_size: u64, synthetic: bool) -> Result<String, FilecoinError> {
    Ok(crate::fields::param_file_stem(&registered_proof(sector_size, synthetic)?.circuit_identifier()?))
}

/// Interactive (false) or Synthetic (true) PoRep; older and newer variants are refused.
fn synthetic(name: &str) -> Result<bool, FilecoinError> {
    match name {
        n if n.ends_with("V1_1") => Ok(false),
        n if n.ends_with("V1_1_Feat_SyntheticPoRep") => Ok(true),
        n if n.ends_with("NonInteractivePoRep") => Err(err(format!("{n}: non-interactive PoRep is not supported yet"))),
        n => Err(err(format!("{n}: PoRep V1 is retired on mainnet; reseal with V1_1"))),
    }
}

/// Partitions of vanilla proofs in a C1 output, and the sector size they are for.
fn vanilla_shape(proofs: &VanillaSealProof) -> (usize, u64) {
    match proofs {
        VanillaSealProof::StackedDrg2KiBV1(p) => (p.len(), 2 << 10),
        VanillaSealProof::StackedDrg8MiBV1(p) => (p.len(), 8 << 20),
        VanillaSealProof::StackedDrg512MiBV1(p) => (p.len(), 512 << 20),
        VanillaSealProof::StackedDrg32GiBV1(p) => (p.len(), 32 << 30),
        VanillaSealProof::StackedDrg64GiBV1(p) => (p.len(), 64 << 30),
    }
}

/// What tells PoRep circuits apart: the sector size, and interactive or Synthetic PoRep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PorepSpec {
    pub sector_size: u64,
    pub synthetic: bool,
}

/// Check a `porep-c2` request's `input` completely and turn it into a job.
pub fn parse(input: &Map<String, Value>) -> Result<Parsed<PorepSpec, PorepInput>, FilecoinError> {
    only_fields(input, "porep-c2", &["miner_id", "c1", "c1_raw", "sector_num"])?;
    let miner_id = u64_field(input, "input", "miner_id")?;
    checked(miner_id, c1::c1_data(input)?)
}

/// [`parse`] for the envelope's bytes as the cuzk gRPC interface carries them
/// (`vanilla_proof`), read straight into its fields.
pub fn parse_envelope(miner_id: u64, envelope: &[u8]) -> Result<Parsed<PorepSpec, PorepInput>, FilecoinError> {
    checked(miner_id, c1::envelope_data(envelope)?)
}

/// Everything [`parse`] checks once the C1 data is out of its wrapping.
fn checked(miner_id: u64, data: c1::C1Data) -> Result<Parsed<PorepSpec, PorepInput>, FilecoinError> {
    let c1::C1Data { json, sector_id, envelope_size } = data;
    let c1: SealCommitPhase1Output = serde_json::from_slice(&json)
        .map_err(|e| err(format!("the C1 data is not a C1 output (SealCommitPhase1Output JSON): {e}")))?;
    let proof = c1.registered_proof;
    let sector_size = sector_size_of(u64::from(proof.sector_size()))?;
    let name = registered_name(proof);
    let synthetic = synthetic(&name)?;
    if let Some(size) = envelope_size.filter(|s| *s != sector_size) {
        return Err(err(format!(
            "input.c1.SectorSize is {size} but the C1 output is a {name} proof, for {sector_size}-byte sectors"
        )));
    }
    if c1.comm_r == [0; 32] || c1.comm_d == [0; 32] || c1.seed == [0; 32] {
        return Err(err("the C1 output has an all-zero comm_r, comm_d or seed"));
    }
    let partitions = usize::from(proof.partitions());
    let (found, found_size) = vanilla_shape(&c1.vanilla_proofs);
    if found_size != sector_size {
        return Err(err(format!(
            "the C1 output's vanilla proofs are for {found_size}-byte sectors, its proof type {name} is not"
        )));
    }
    if found != partitions {
        return Err(err(format!("the C1 output has {found} partitions of vanilla proofs; {name} has {partitions}")));
    }
    let prover_id = prover_id(miner_id);
    check_replica_id(proof, &c1, &prover_id, sector_id).map_err(|e| {
        err(format!(
            "{e}: the C1 output was not made by miner {miner_id} for sector {sector_id} (wrong miner_id or SectorNum?)"
        ))
    })?;
    // what seal_commit_phase1 checks of its own output: a C1 that fails it can never prove,
    // and finding out here costs milliseconds instead of a GPU's minutes
    (|| with_sector_shape!(sector_size, vanilla_check, &c1))().map_err(|e: anyhow::Error| {
        err(format!("the C1 output's vanilla proofs do not verify (filecoin-proofs' C1 check): {e:#}"))
    })?;
    Ok(Parsed {
        spec: PorepSpec { sector_size, synthetic },
        partitions: partitions as u32,
        input: PorepInput { miner_id, sector_id, prover_id, c1 },
    })
}

/// The replica id in a C1 output commits to the prover id and sector number: recompute it.
fn check_replica_id(
    proof: RegisteredSealProof,
    c1: &SealCommitPhase1Output,
    prover_id: &[u8; 32],
    sector_id: u64,
) -> Result<(), FilecoinError> {
    use filecoin_proofs::constants::DefaultTreeHasher;
    let config = proof.as_v1_config();
    let expected = storage_proofs_porep::stacked::generate_replica_id::<DefaultTreeHasher, _>(
        prover_id,
        sector_id,
        &c1.ticket,
        c1.comm_d,
        &config.porep_id,
    );
    if expected != c1.replica_id {
        return Err(err("replica id mismatch"));
    }
    Ok(())
}

/// filecoin-proofs' vanilla verification of a C1 output's partition proofs.
fn vanilla_check<Tree: 'static + MerkleTreeTrait>(c1: &SealCommitPhase1Output) -> anyhow::Result<()> {
    use storage_proofs_core::proof::ProofScheme as _;
    let config = c1.registered_proof.as_v1_config();
    let pp = public_params::<Tree>(&config)?;
    let vanilla: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>> = c1.vanilla_proofs.clone().try_into()?;
    let pub_in = public_inputs_of::<Tree>(c1)?;
    anyhow::ensure!(Porep::<Tree>::verify_all_partitions(&pp, &pub_in, &vanilla)?, "rejected");
    Ok(())
}

/// The stacked-DRG public inputs of a C1 output (all partitions: `k` unset).
fn public_inputs_of<Tree: 'static + MerkleTreeTrait>(
    c1: &SealCommitPhase1Output,
) -> anyhow::Result<stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, <DefaultPieceHasher as Hasher>::Domain>> {
    let replica_id: Fr = c1.replica_id.into();
    Ok(stacked::PublicInputs {
        replica_id: replica_id.into(),
        tau: Some(stacked::Tau {
            comm_d: <DefaultPieceHasher as Hasher>::Domain::try_from_bytes(&c1.comm_d)?,
            comm_r: as_safe_commitment(&c1.comm_r, "comm_r")?,
        }),
        k: None,
        seed: Some(c1.seed),
    })
}

fn partition_circuit<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    input: &PorepInput,
    k: usize,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let config = input.c1.registered_proof.as_v1_config();
    let vanilla: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>> = input.c1.vanilla_proofs.clone().try_into()?;
    let proofs = vanilla.get(k).with_context(|| format!("the C1 output has no partition {k}"))?;
    let pub_in = public_inputs_of::<Tree>(&input.c1)?;
    let compound = <PorepCompound<Tree> as CompoundProof<Porep<'_, Tree>, _>>::setup(&compound_proof::SetupParams {
        vanilla_params: setup_params(&config)?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    })?;
    let circuit = <PorepCompound<Tree> as CompoundProof<Porep<'_, Tree>, _>>::circuit(
        &pub_in,
        Default::default(),
        proofs,
        &compound.vanilla_params,
        Some(k),
    )?;
    Ok(visitor.visit(circuit))
}

fn blank_circuit<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    proof: RegisteredSealProof,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let pp = public_params::<Tree>(&proof.as_v1_config())?;
    Ok(visitor.visit(<PorepCompound<Tree> as CompoundProof<Porep<'_, Tree>, _>>::blank_circuit(&pp)))
}

/// The blank circuit with `challenges` challenges instead of the sector size's.
fn blank_with_challenges<Tree: 'static + MerkleTreeTrait>(
    pp: &stacked::PublicParams<Tree>,
    challenges: usize,
) -> stacked::StackedCircuit<Tree, DefaultPieceHasher> {
    let mut pp = pp.clone();
    pp.challenges = match pp.challenges {
        stacked::Challenges::Interactive(_) => stacked::Challenges::new_interactive(challenges),
        stacked::Challenges::Synth(_) => stacked::Challenges::new_synthetic(challenges),
        stacked::Challenges::Ni(_) => stacked::Challenges::new_non_interactive(challenges),
    };
    <PorepCompound<Tree> as CompoundProof<Porep<'_, Tree>, _>>::blank_circuit(&pp)
}

/// The blank circuit's shape, recorded from its first two challenges
/// ([`snarkflow_synthesis::record_repeated`]): the partition's commitments come first, then one
/// block per challenge that uses them and its own variables only.
fn record_blank<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    circuit_id: &str,
) -> anyhow::Result<ConstraintShape> {
    let pp = public_params::<Tree>(&proof.as_v1_config())?;
    let challenges = pp.challenges.num_challenges_per_partition();
    Ok(snarkflow_synthesis::record_repeated(|m| blank_with_challenges(&pp, m), challenges, circuit_id)?)
}

/// The shape of a partition's circuit, the same as recording [`visit_blank`]'s circuit
/// (135 s on one core at 32 GiB) in the time of its first two challenges and a copy.
pub fn record_blank_shape(
    sector_size: u64,
    synthetic: bool,
    circuit_id: &str,
) -> Result<ConstraintShape, FilecoinError> {
    let proof = registered_proof(sector_size, synthetic)?;
    Ok((|| with_sector_shape!(sector_size, record_blank, proof, circuit_id))()?)
}

/// Build partition `k`'s circuit (with its witness) and hand it to `visitor`.
pub fn visit_partition<V: CircuitVisitor>(
    input: &PorepInput,
    k: usize,
    visitor: V,
) -> Result<V::Output, FilecoinError> {
    let size = u64::from(input.c1.registered_proof.sector_size());
    Ok((|| with_sector_shape!(size, partition_circuit::<V>, input, k, visitor))()?)
}

fn native_partition<Tree: 'static + MerkleTreeTrait>(
    input: &PorepInput,
    k: usize,
    circuit_id: &str,
) -> anyhow::Result<PartitionWitness> {
    let vanilla: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>> = input.c1.vanilla_proofs.clone().try_into()?;
    let proofs = vanilla.get(k).with_context(|| format!("the C1 output has no partition {k}"))?;
    let pub_in = public_inputs_of::<Tree>(&input.c1)?;
    let tau = pub_in.tau.as_ref().expect("public_inputs_of sets tau");
    let (inputs, aux) =
        crate::native::partition::<Tree>(pub_in.replica_id.into(), tau.comm_d.into(), tau.comm_r.into(), proofs)?;
    Ok(PartitionWitness { circuit_id: circuit_id.to_owned(), partition: k as u32, inputs, aux })
}

/// Partition `k`'s witness computed natively (`crate::native`): the same values, in the
/// same order, as witness-only synthesis of [`visit_partition`]'s circuit, at a fraction of
/// the cost.
pub fn native_witness(input: &PorepInput, k: usize, circuit_id: &str) -> Result<PartitionWitness, FilecoinError> {
    let size = u64::from(input.c1.registered_proof.sector_size());
    Ok((|| with_sector_shape!(size, native_partition, input, k, circuit_id))()?)
}

/// The circuit without a witness (parameter generation, constraint shapes).
pub fn visit_blank<V: CircuitVisitor>(
    sector_size: u64,
    synthetic: bool,
    visitor: V,
) -> Result<V::Output, FilecoinError> {
    let proof = registered_proof(sector_size, synthetic)?;
    Ok((|| with_sector_shape!(sector_size, blank_circuit::<V>, proof, visitor))()?)
}

/// Public inputs of every partition, as `verify_seal` derives them from comm_r, comm_d,
/// ticket, seed, prover and sector id.
pub fn public_inputs(input: &PorepInput) -> Result<Vec<Vec<Fr>>, FilecoinError> {
    let c1 = &input.c1;
    Ok(filecoin_proofs_api::seal::get_seal_inputs(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        input.prover_id,
        SectorId::from(input.sector_id),
        c1.ticket,
        c1.seed,
    )?)
}

/// Each partition proof against its public inputs, then the whole with `verify_seal`.
pub fn verify(input: &PorepInput, params_dir: &Path, partition_proofs: &[Vec<u8>]) -> Result<(), VerifyFailure> {
    let c1 = &input.c1;
    let stem = crate::fields::param_file_stem(
        &c1.registered_proof.circuit_identifier().map_err(|e| VerifyFailure::whole(format!("{e:#}")))?,
    );
    let inputs = public_inputs(input).map_err(|e| VerifyFailure::whole(format!("public inputs: {e}")))?;
    verify_partitions(params_dir, &stem, &inputs, partition_proofs)?;
    verdict(filecoin_proofs_api::seal::verify_seal(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        input.prover_id,
        SectorId::from(input.sector_id),
        c1.ticket,
        c1.seed,
        &partition_proofs.concat(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn porep_err(v: Value) -> String {
        parse(v.as_object().unwrap()).unwrap_err().to_string()
    }

    #[test]
    fn porep_requests_name_what_is_wrong() {
        use serde_json::json;
        assert!(porep_err(json!({"c1": {}})).contains("input.miner_id is required"));
        assert!(porep_err(json!({"miner_id": 1})).contains("input.c1 is required"));
        assert!(porep_err(json!({"miner_id": 1, "c1": {"SectorNum": 1, "SectorSize": 2048, "Phase1Out": "!!"}}))
            .contains("not base64"));
        assert!(porep_err(json!({"miner_id": 1, "c1": {"SectorNum": 1, "SectorSize": 2048, "Phase1Out": "e30="}}))
            .contains("not a C1 output"));
        assert!(porep_err(json!({"miner_id": 1, "c1": {"SectorNum": 1, "Phase1Out": "e30="}}))
            .contains("input.c1.SectorSize is required"));
        assert!(porep_err(json!({"miner_id": 1, "c1_raw": {}})).contains("input.sector_num is required"));
        assert!(porep_err(json!({"miner_id": 1, "c1": {}, "c1_raw": {}})).contains("not both"));
        assert!(porep_err(json!({"miner_id": 1, "colour": 2})).contains("input.colour is not a field"));
    }

    /// The published sizes below 32 GiB have two challenges per partition, where nothing is
    /// copied: five challenges on the 2 KiB graph copy three.
    #[test]
    fn a_shape_copied_from_two_challenges_is_the_whole_recording() {
        use filecoin_proofs::constants::SectorShape2KiB;
        let pp = public_params::<SectorShape2KiB>(&RegisteredSealProof::StackedDrg2KiBV1_1.as_v1_config()).unwrap();
        let whole = snarkflow_synthesis::record_shape(blank_with_challenges(&pp, 5), "t").unwrap();
        let copied = snarkflow_synthesis::record_repeated(|m| blank_with_challenges(&pp, m), 5, "t").unwrap();
        assert!(whole.num_constraints() > 0);
        assert!(copied == whole, "the copied shape differs from the whole recording");
        // and it keeps its fold: the five challenges, each its own block, for a prover to store one
        let fold = copied.fold().expect("a copied shape is folded");
        assert!(fold.blocks == 5 && fold.holds(&copied) && whole.fold().is_none(), "{fold:?}");
        // and what the kind records is the sector size's circuit
        let id = "porep-c2-2KiB";
        let ours = record_blank_shape(2048, false, id).unwrap();
        let theirs = visit_blank(2048, false, snarkflow_synthesis::RecordShape(id)).unwrap().unwrap();
        assert!(ours == theirs, "the kind's shape differs from its blank circuit's");
    }

    #[test]
    fn parameter_names_match_filecoin_proofs() {
        let stem = param_file_stem(2048, false).unwrap();
        let theirs = RegisteredSealProof::StackedDrg2KiBV1_1.cache_params_path().unwrap();
        assert_eq!(theirs.file_name().unwrap().to_str().unwrap(), format!("{stem}.params"));
        assert!(stem.starts_with("v28-stacked-proof-of-replication-"), "{stem}");
    }
}
