//! Each Filecoin kind's partition circuits, blank circuits, public inputs and verification,
//! built with filecoin-proofs' own compound-proof types so the circuits are the ones
//! `seal_commit_phase2`, `generate_single_window_post_with_vanilla`,
//! `generate_winning_post_with_vanilla` and `generate_empty_sector_update_proof_with_vanilla`
//! prove.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{ensure, Context as _};
use bellperson::groth16::{self, prepare_verifying_key, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, setup_params, window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{as_safe_commitment, FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig};
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};
use snarkflow_synthesis::CircuitVisitor;
use snarkflow_wire::CircuitSpec;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector};
use storage_proofs_update::{
    constants::TreeRHasher, EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
};

use crate::input::{JobInput, PorepInput, PostInput, SnapInput};
use crate::params::{param_file_stem, registered_post_proof, registered_seal_proof};
use crate::FilecoinError;

type Porep<'a, Tree> = StackedDrg<'a, Tree, DefaultPieceHasher>;
type PorepCompound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;

// ---------------------------------------------------------------- PoRep C2

fn porep_public_inputs<Tree: 'static + MerkleTreeTrait>(
    input: &PorepInput,
) -> anyhow::Result<stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, <DefaultPieceHasher as Hasher>::Domain>> {
    let c1 = &input.c1;
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

fn porep_partition<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    input: &PorepInput,
    k: usize,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let config = input.c1.registered_proof.as_v1_config();
    let vanilla: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>> = input.c1.vanilla_proofs.clone().try_into()?;
    let proofs = vanilla.get(k).with_context(|| format!("the C1 output has no partition {k}"))?;
    let pub_in = porep_public_inputs::<Tree>(input)?;
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

fn porep_blank<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    spec: &CircuitSpec,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let config = registered_seal_proof(spec)?.as_v1_config();
    let pp = public_params::<Tree>(&config)?;
    Ok(visitor.visit(<PorepCompound<Tree> as CompoundProof<Porep<'_, Tree>, _>>::blank_circuit(&pp)))
}

fn porep_inputs(input: &PorepInput) -> anyhow::Result<Vec<Vec<Fr>>> {
    let c1 = &input.c1;
    filecoin_proofs_api::seal::get_seal_inputs(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        input.prover_id,
        SectorId::from(input.sector_id),
        c1.ticket,
        c1.seed,
    )
}

// ---------------------------------------------------------------- PoSt

fn post_config(input: &PostInput) -> PoStConfig {
    input.registered_proof.as_v1_config()
}

fn post_vanilla<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
) -> anyhow::Result<Vec<FallbackPoStSectorProof<Tree>>> {
    input
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b)
                .with_context(|| format!("vanilla_proofs[{i}] is not a vanilla sector proof of this sector size"))
        })
        .collect()
}

fn post_setup(config: &PoStConfig, window: bool) -> anyhow::Result<fallback::SetupParams> {
    if window {
        Ok(window_post_setup_params(config))
    } else {
        winning_post_setup_params(config)
    }
}

/// The public inputs, the one partition's vanilla proof and the public parameters, as
/// filecoin-proofs derives them for `generate_single_window_post_with_vanilla` (WindowPoSt)
/// and `generate_winning_post_with_vanilla` (WinningPoSt, always one partition).
#[allow(clippy::type_complexity)]
fn post_parts<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    window: bool,
) -> anyhow::Result<(
    fallback::PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    fallback::Proof<Tree::Proof>,
    fallback::PublicParams,
)> {
    let config = post_config(input);
    let vanilla = post_vanilla::<Tree>(input)?;
    if !window {
        ensure!(
            vanilla.len() == config.sector_count,
            "WinningPoSt takes {} vanilla sector proofs, got {}",
            config.sector_count,
            vanilla.len()
        );
    } else {
        ensure!(
            vanilla.len() <= config.sector_count,
            "a WindowPoSt partition holds at most {} sectors, got {}",
            config.sector_count,
            vanilla.len()
        );
    }
    let setup = post_setup(&config, window)?;
    let pub_params =
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::setup(
            &compound_proof::SetupParams { vanilla_params: setup, partitions: None, priority: false },
        )?;
    let pub_in = fallback::PublicInputs {
        randomness: as_safe_commitment(&input.randomness, "randomness")?,
        prover_id: as_safe_commitment(&input.prover_id, "prover_id")?,
        sectors: vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect(),
        k: Some(if window { input.partition_index as usize } else { 0 }),
    };
    let partition = if window {
        filecoin_proofs::single_partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_in, &vanilla)?
    } else {
        let mut all =
            filecoin_proofs::partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_in, 1, &vanilla)?;
        ensure!(all.len() == 1, "WinningPoSt has one partition");
        all.remove(0)
    };
    Ok((pub_in, partition, pub_params.vanilla_params))
}

fn post_partition<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    input: &PostInput,
    window: bool,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let (pub_in, proof, params) = post_parts::<Tree>(input, window)?;
    let circuit =
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::circuit(
            &pub_in,
            Default::default(),
            &proof,
            &params,
            Some(0),
        )?;
    Ok(visitor.visit(circuit))
}

fn post_inputs<Tree: 'static + MerkleTreeTrait>(input: &PostInput, window: bool) -> anyhow::Result<Vec<Vec<Fr>>> {
    let (mut pub_in, _, params) = post_parts::<Tree>(input, window)?;
    if !window {
        // WinningPoSt's parameters count each challenge as a "sector": the verifier lists the
        // sectors once per parameter sector (as `verify_winning_post` does)
        let sectors = std::mem::take(&mut pub_in.sectors);
        pub_in.sectors = (0..params.sector_count).flat_map(|_| sectors.iter().cloned()).collect();
        pub_in.k = None;
    }
    let inputs = <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::generate_public_inputs(
        &pub_in, &params, Some(0),
    )?;
    Ok(vec![inputs])
}

fn post_blank<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    spec: &CircuitSpec,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let registered = registered_post_proof(spec)?;
    let window = matches!(spec, CircuitSpec::WindowPost { .. });
    let setup = post_setup(&registered.as_v1_config(), window)?;
    let pp = <FallbackPoSt<'_, Tree> as storage_proofs_core::proof::ProofScheme<'_>>::setup(&setup)?;
    Ok(visitor.visit(<FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::blank_circuit(&pp)))
}

fn post_check<Tree: 'static + MerkleTreeTrait>(input: &PostInput, window: bool) -> anyhow::Result<()> {
    post_parts::<Tree>(input, window).map(|_| ())
}

// ---------------------------------------------------------------- SnapDeals

type UpdateCompound<Tree> = EmptySectorUpdateCompound<Tree>;

fn snap_parts<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &SnapInput,
) -> anyhow::Result<(
    storage_proofs_update::PublicInputs,
    Vec<storage_proofs_update::vanilla::PartitionProof<Tree>>,
    storage_proofs_update::PublicParams,
)> {
    let porep_config = input.registered_proof.as_v1_config();
    let config = filecoin_proofs::SectorUpdateConfig::from_porep_config(&porep_config);
    let partitions = usize::from(config.update_partitions);
    let pub_in = storage_proofs_update::PublicInputs {
        k: partitions,
        comm_r_old: <TreeRHasher as Hasher>::Domain::try_from_bytes(&input.comm_r_old)?,
        comm_d_new: <DefaultPieceHasher as Hasher>::Domain::try_from_bytes(&input.comm_d_new)?,
        comm_r_new: <TreeRHasher as Hasher>::Domain::try_from_bytes(&input.comm_r_new)?,
        h: config.h,
    };
    let proofs = input
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b)
                .with_context(|| format!("vanilla_proofs[{i}] is not an update partition proof of this sector size"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let params = storage_proofs_update::PublicParams::from_sector_size(u64::from(config.sector_size));
    Ok((pub_in, proofs, params))
}

fn snap_partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, V: CircuitVisitor>(
    input: &SnapInput,
    k: usize,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let (pub_in, proofs, params) = snap_parts::<Tree>(input)?;
    let proof = proofs.get(k).with_context(|| format!("no vanilla proof for partition {k}"))?;
    let circuit =
        <UpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::circuit(
            &pub_in,
            Default::default(),
            proof,
            &params,
            Some(k),
        )?;
    Ok(visitor.visit(circuit))
}

fn snap_inputs<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &SnapInput,
) -> anyhow::Result<Vec<Vec<Fr>>> {
    let (pub_in, proofs, params) = snap_parts::<Tree>(input)?;
    (0..proofs.len())
        .map(|k| {
            <UpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::generate_public_inputs(
                &pub_in, &params, Some(k),
            )
        })
        .collect()
}

fn snap_blank<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, V: CircuitVisitor>(
    spec: &CircuitSpec,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let sector_size = spec.sector_size().context("no sector size")?;
    let params = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    Ok(visitor.visit(<UpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::blank_circuit(&params)))
}

fn snap_check<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &SnapInput) -> anyhow::Result<()> {
    snap_parts::<Tree>(input).map(|_| ())
}

// ---------------------------------------------------------------- dispatch

/// Snap trees need `Hasher = TreeRHasher`, which every published shape has; `with_shape!`
/// cannot express the bound, so this dispatch is written out.
macro_rules! with_snap_shape {
    ($size:expr, $f:ident, $($args:expr),*) => {{
        use filecoin_proofs::constants::*;
        match $size {
            s if s == SECTOR_SIZE_2_KIB => $f::<SectorShape2KiB, _>($($args),*),
            s if s == SECTOR_SIZE_8_MIB => $f::<SectorShape8MiB, _>($($args),*),
            s if s == SECTOR_SIZE_512_MIB => $f::<SectorShape512MiB, _>($($args),*),
            s if s == SECTOR_SIZE_32_GIB => $f::<SectorShape32GiB, _>($($args),*),
            s if s == SECTOR_SIZE_64_GIB => $f::<SectorShape64GiB, _>($($args),*),
            s => anyhow::bail!("unsupported sector size {s}"),
        }
    }};
}

macro_rules! with_snap_shape_no_visitor {
    ($size:expr, $f:ident, $($args:expr),*) => {{
        use filecoin_proofs::constants::*;
        match $size {
            s if s == SECTOR_SIZE_2_KIB => $f::<SectorShape2KiB>($($args),*),
            s if s == SECTOR_SIZE_8_MIB => $f::<SectorShape8MiB>($($args),*),
            s if s == SECTOR_SIZE_512_MIB => $f::<SectorShape512MiB>($($args),*),
            s if s == SECTOR_SIZE_32_GIB => $f::<SectorShape32GiB>($($args),*),
            s if s == SECTOR_SIZE_64_GIB => $f::<SectorShape64GiB>($($args),*),
            s => anyhow::bail!("unsupported sector size {s}"),
        }
    }};
}

fn sector_size(spec: &CircuitSpec) -> anyhow::Result<u64> {
    spec.sector_size().with_context(|| format!("{} is not a Filecoin circuit", spec.circuit_id()))
}

fn check_sector_size(spec: &CircuitSpec) -> anyhow::Result<u64> {
    let size = sector_size(spec)?;
    ensure!(snarkflow_wire::sector_size_name(size).is_some(), "unsupported sector size {size}");
    Ok(size)
}

/// Build partition `k` of a Filecoin job's circuit (with its witness) and hand it to `visitor`.
pub fn visit_partition<V: CircuitVisitor>(
    spec: &CircuitSpec,
    input: &JobInput,
    k: usize,
    visitor: V,
) -> Result<V::Output, FilecoinError> {
    let size = check_sector_size(spec)?;
    let out: anyhow::Result<V::Output> = (|| match (spec, input) {
        (CircuitSpec::PorepC2 { .. }, JobInput::PorepC2(i)) => with_snap_shape!(size, porep_partition, i, k, visitor),
        (CircuitSpec::WindowPost { .. }, JobInput::WindowPost(i)) => {
            ensure!(k == 0, "a WindowPoSt job has one partition");
            with_snap_shape!(size, post_window_partition, i, visitor)
        }
        (CircuitSpec::WinningPost { .. }, JobInput::WinningPost(i)) => {
            ensure!(k == 0, "a WinningPoSt job has one partition");
            with_snap_shape!(size, post_winning_partition, i, visitor)
        }
        (CircuitSpec::SnapUpdate { .. }, JobInput::SnapUpdate(i)) => {
            with_snap_shape!(size, snap_partition, i, k, visitor)
        }
        _ => anyhow::bail!("the job input does not belong to {}", spec.circuit_id()),
    })();
    Ok(out?)
}

fn post_window_partition<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    i: &PostInput,
    v: V,
) -> anyhow::Result<V::Output> {
    post_partition::<Tree, V>(i, true, v)
}

fn post_winning_partition<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    i: &PostInput,
    v: V,
) -> anyhow::Result<V::Output> {
    post_partition::<Tree, V>(i, false, v)
}

/// The circuit of `spec` without a witness (parameter generation, constraint shapes).
pub fn visit_blank<V: CircuitVisitor>(spec: &CircuitSpec, visitor: V) -> Result<V::Output, FilecoinError> {
    let size = check_sector_size(spec)?;
    let out: anyhow::Result<V::Output> = (|| match spec {
        CircuitSpec::PorepC2 { .. } => with_snap_shape!(size, porep_blank, spec, visitor),
        CircuitSpec::WindowPost { .. } | CircuitSpec::WinningPost { .. } => {
            with_snap_shape!(size, post_blank, spec, visitor)
        }
        CircuitSpec::SnapUpdate { .. } => with_snap_shape!(size, snap_blank, spec, visitor),
        _ => anyhow::bail!("{} is not a Filecoin circuit", spec.circuit_id()),
    })();
    Ok(out?)
}

/// Public inputs of every partition, computed by filecoin-proofs from the job input alone
/// (for PoRep: from comm_r, comm_d, ticket, seed, prover and sector id, as `verify_seal` does).
pub fn partition_public_inputs(spec: &CircuitSpec, input: &JobInput) -> Result<Vec<Vec<Fr>>, FilecoinError> {
    let size = check_sector_size(spec)?;
    let out: anyhow::Result<Vec<Vec<Fr>>> = (|| match (spec, input) {
        (CircuitSpec::PorepC2 { .. }, JobInput::PorepC2(i)) => porep_inputs(i),
        (CircuitSpec::WindowPost { .. }, JobInput::WindowPost(i)) => {
            with_snap_shape_no_visitor!(size, post_window_inputs, i)
        }
        (CircuitSpec::WinningPost { .. }, JobInput::WinningPost(i)) => {
            with_snap_shape_no_visitor!(size, post_winning_inputs, i)
        }
        (CircuitSpec::SnapUpdate { .. }, JobInput::SnapUpdate(i)) => with_snap_shape_no_visitor!(size, snap_inputs, i),
        _ => anyhow::bail!("the job input does not belong to {}", spec.circuit_id()),
    })();
    Ok(out?)
}

fn post_window_inputs<Tree: 'static + MerkleTreeTrait>(i: &PostInput) -> anyhow::Result<Vec<Vec<Fr>>> {
    post_inputs::<Tree>(i, true)
}

fn post_winning_inputs<Tree: 'static + MerkleTreeTrait>(i: &PostInput) -> anyhow::Result<Vec<Vec<Fr>>> {
    post_inputs::<Tree>(i, false)
}

fn post_window_check<Tree: 'static + MerkleTreeTrait>(i: &PostInput) -> anyhow::Result<()> {
    post_check::<Tree>(i, true)
}

fn post_winning_check<Tree: 'static + MerkleTreeTrait>(i: &PostInput) -> anyhow::Result<()> {
    post_check::<Tree>(i, false)
}

pub(crate) fn check_post(spec: &CircuitSpec, input: &PostInput) -> Result<(), FilecoinError> {
    let size = check_sector_size(spec)?;
    let out: anyhow::Result<()> = (|| match spec {
        CircuitSpec::WindowPost { .. } => with_snap_shape_no_visitor!(size, post_window_check, input),
        _ => with_snap_shape_no_visitor!(size, post_winning_check, input),
    })();
    Ok(out?)
}

pub(crate) fn check_snap(spec: &CircuitSpec, input: &SnapInput) -> Result<(), FilecoinError> {
    let size = check_sector_size(spec)?;
    let out: anyhow::Result<()> = (|| with_snap_shape_no_visitor!(size, snap_check, input))();
    Ok(out?)
}

// ---------------------------------------------------------------- verification

/// Why an assembled proof was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct VerifyFailure {
    /// Partitions whose proof did not verify (empty when the failure is not a partition's).
    pub partitions: Vec<u32>,
    pub message: String,
}

fn failure(message: impl Into<String>) -> VerifyFailure {
    VerifyFailure { partitions: vec![], message: message.into() }
}

/// Check a job's partition proofs: each against its public inputs as filecoin-proofs computes
/// them from the job input (naming any partition that fails), then the concatenation with
/// filecoin-proofs' whole-proof verifier (`verify_seal`, `verify_winning_post`,
/// `verify_empty_sector_update_proof`). The verifying key is read from `params_dir`;
/// filecoin-proofs' own verifiers read `FIL_PROOFS_PARAMETER_CACHE`, which
/// [`crate::use_parameter_dir`] points at the same directory.
pub fn verify_job(
    spec: &CircuitSpec,
    input: &JobInput,
    params_dir: &Path,
    partition_proofs: &[Vec<u8>],
) -> Result<(), VerifyFailure> {
    let stem = param_file_stem(spec).map_err(|e| failure(e.to_string()))?;
    let vk_path = params_dir.join(format!("{stem}.vk"));
    let vk = std::fs::File::open(&vk_path)
        .and_then(|f| VerifyingKey::<Bls12>::read(std::io::BufReader::new(f)))
        .map_err(|e| failure(format!("verifying key {} unreadable: {e}", vk_path.display())))?;
    let pvk = prepare_verifying_key(&vk);
    let inputs = partition_public_inputs(spec, input).map_err(|e| failure(format!("public inputs: {e}")))?;
    if inputs.len() != partition_proofs.len() {
        return Err(failure(format!("{} partition proofs for {} partitions", partition_proofs.len(), inputs.len())));
    }
    let mut bad = Vec::new();
    for (k, (proof, inputs)) in partition_proofs.iter().zip(&inputs).enumerate() {
        let ok = Proof::<Bls12>::read(&proof[..])
            .ok()
            .and_then(|p| groth16::verify_proof(&pvk, &p, inputs).ok())
            .unwrap_or(false);
        if !ok {
            bad.push(k as u32);
        }
    }
    if !bad.is_empty() {
        let list: Vec<String> = bad.iter().map(u32::to_string).collect();
        return Err(VerifyFailure {
            message: format!("partition proof(s) {} failed verification", list.join(", ")),
            partitions: bad,
        });
    }
    let whole: Vec<u8> = partition_proofs.concat();
    let verdict = match input {
        JobInput::PorepC2(i) => filecoin_proofs_api::seal::verify_seal(
            i.c1.registered_proof,
            i.c1.comm_r,
            i.c1.comm_d,
            i.prover_id,
            SectorId::from(i.sector_id),
            i.c1.ticket,
            i.c1.seed,
            &whole,
        ),
        JobInput::WinningPost(i) => winning_replicas(spec, i).and_then(|replicas| {
            filecoin_proofs_api::post::verify_winning_post(&i.randomness, &whole, &replicas, i.prover_id)
        }),
        JobInput::SnapUpdate(i) => filecoin_proofs_api::update::verify_empty_sector_update_proof(
            i.registered_proof,
            &whole,
            i.comm_r_old,
            i.comm_r_new,
            i.comm_d_new,
        ),
        // A single WindowPoSt partition has no whole-proof verifier in filecoin-proofs: the
        // per-partition check above is its `verify_window_post` for that partition.
        JobInput::WindowPost(_) => Ok(true),
    };
    match verdict {
        Ok(true) => Ok(()),
        Ok(false) => Err(failure("filecoin-proofs rejected the assembled proof")),
        Err(e) => Err(failure(format!("filecoin-proofs could not verify the proof: {e:#}"))),
    }
}

fn winning_replicas(spec: &CircuitSpec, input: &PostInput) -> anyhow::Result<BTreeMap<SectorId, PublicReplicaInfo>> {
    let size = sector_size(spec)?;
    fn replicas<Tree: 'static + MerkleTreeTrait>(
        input: &PostInput,
    ) -> anyhow::Result<BTreeMap<SectorId, PublicReplicaInfo>> {
        Ok(post_vanilla::<Tree>(input)?
            .into_iter()
            .map(|p| {
                let comm_r: [u8; 32] = p.comm_r.into_bytes().try_into().expect("32-byte domain");
                (p.sector_id, PublicReplicaInfo::new(input.registered_proof, comm_r))
            })
            .collect())
    }
    with_snap_shape_no_visitor!(size, replicas, input)
}

fn snap_identifier<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(sector_size: u64) -> anyhow::Result<String> {
    use storage_proofs_core::parameter_cache::CacheableParameters;
    let params = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    Ok(<UpdateCompound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(&params))
}

/// The circuit identifier filecoin-proofs names SnapDeals parameter files after
/// (`empty-sector-update-<tree>-<hash>`). `RegisteredUpdateProof::circuit_identifier` in
/// filecoin-proofs-api 19.1 returns the PoRep identifier instead, so it is computed here the
/// way `get_empty_sector_update_params` does.
pub(crate) fn snap_circuit_identifier(spec: &CircuitSpec) -> Result<String, FilecoinError> {
    let size = check_sector_size(spec)?;
    let out: anyhow::Result<String> = (|| with_snap_shape_no_visitor!(size, snap_identifier, size))();
    Ok(out?)
}
