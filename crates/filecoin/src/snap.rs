//! SnapDeals (`snap-update`): the empty-sector-update proof from its partition vanilla proofs,
//! built with filecoin-proofs' `EmptySectorUpdateCompound` as
//! `generate_empty_sector_update_proof_with_vanilla` does.

use std::path::Path;

use anyhow::Context as _;
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredUpdateProof;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use snarkflow_synthesis::{CircuitVisitor, PartitionWitness};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_update::{
    constants::TreeRHasher, EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
};

use crate::fields::{base64_list, bytes32, err, only_fields, registered, sector_size_of};
use crate::verify::{verdict, verify_partitions, VerifyFailure};
use crate::{FilecoinError, Parsed};

type Compound<Tree> = EmptySectorUpdateCompound<Tree>;

/// A checked SnapDeals input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SnapInput {
    pub registered_proof: RegisteredUpdateProof,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    /// bincode partition proofs, as `generate_partition_proofs` returns them.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// Check a `snap-update` request's `input` completely and turn it into a job.
pub fn parse(input: &Map<String, Value>) -> Result<Parsed<u64, SnapInput>, FilecoinError> {
    only_fields(
        input,
        "snap-update",
        &["registered_proof", "comm_r_old", "comm_r_new", "comm_d_new", "vanilla_proofs"],
    )?;
    let registered_proof: RegisteredUpdateProof = registered(input, "input", "update")?;
    checked(SnapInput {
        registered_proof,
        comm_r_old: bytes32(input, "input", "comm_r_old")?,
        comm_r_new: bytes32(input, "input", "comm_r_new")?,
        comm_d_new: bytes32(input, "input", "comm_d_new")?,
        vanilla_proofs: base64_list(input, "input", "vanilla_proofs")?,
    })
}

/// Everything [`parse`] checks once the fields are read (the cuzk gRPC interface's request
/// starts here, its bytes already binary).
pub fn checked(parsed: SnapInput) -> Result<Parsed<u64, SnapInput>, FilecoinError> {
    let registered_proof = parsed.registered_proof;
    let sector_size = sector_size_of(u64::from(registered_proof.sector_size()))?;
    // an update's partitions (16 from 32 MiB up), not `RegisteredUpdateProof::partitions()`,
    // which in filecoin-proofs-api 19.1 answers the PoRep's (10 at 32 GiB, 1 at 8 MiB):
    // filecoin-proofs proves and verifies with `SectorUpdateConfig`'s
    let config = filecoin_proofs::SectorUpdateConfig::from_porep_config(&registered_proof.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    if parsed.vanilla_proofs.len() != partitions {
        return Err(err(format!(
            "input.vanilla_proofs has {} partition proofs; this sector size has {partitions}",
            parsed.vanilla_proofs.len()
        )));
    }
    // the vanilla proofs must be this sector size's partition proofs, and verify: a tampered
    // request is refused here, not after every partition has cost GPU time
    (|| with_sector_shape!(sector_size, check, &parsed))()?;
    Ok(Parsed { spec: sector_size, partitions: partitions as u32, input: parsed })
}

/// What the update circuits are built from.
struct Parts<Tree: MerkleTreeTrait<Hasher = TreeRHasher>> {
    pub_in: storage_proofs_update::PublicInputs,
    proofs: Vec<storage_proofs_update::vanilla::PartitionProof<Tree>>,
    params: storage_proofs_update::PublicParams,
}

fn parts<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &SnapInput) -> anyhow::Result<Parts<Tree>> {
    let porep_config = input.registered_proof.as_v1_config();
    let config = filecoin_proofs::SectorUpdateConfig::from_porep_config(&porep_config);
    let pub_in = storage_proofs_update::PublicInputs {
        k: usize::from(config.update_partitions),
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
    Ok(Parts { pub_in, proofs, params })
}

/// The partition proofs verify against the request's commitments (what filecoin-proofs'
/// `verify_partition_proofs` checks).
fn check<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &SnapInput) -> anyhow::Result<()> {
    use storage_proofs_core::proof::ProofScheme as _;
    let Parts { pub_in, proofs, params } = parts::<Tree>(input)?;
    anyhow::ensure!(
        EmptySectorUpdate::<Tree>::verify_all_partitions(&params, &pub_in, &proofs)?,
        "the vanilla partition proofs do not verify against comm_r_old, comm_r_new and comm_d_new"
    );
    Ok(())
}

/// Partition `k`'s circuit, witness included, as `EmptySectorUpdateCompound` builds it.
fn circuit_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &SnapInput,
    k: usize,
) -> anyhow::Result<EmptySectorUpdateCircuit<Tree>> {
    let Parts { pub_in, proofs, params } = parts::<Tree>(input)?;
    let proof = proofs.get(k).with_context(|| format!("no vanilla proof for partition {k}"))?;
    <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::circuit(
        &pub_in,
        (),
        proof,
        &params,
        Some(k),
    )
}

fn partition_circuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, V: CircuitVisitor>(
    input: &SnapInput,
    k: usize,
    visitor: V,
) -> anyhow::Result<V::Output> {
    Ok(visitor.visit(circuit_of::<Tree>(input, k)?))
}

fn native_partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &SnapInput,
    k: usize,
    circuit_id: &str,
) -> anyhow::Result<PartitionWitness> {
    let (inputs, aux) = crate::native::snap_partition(&circuit_of::<Tree>(input, k)?)?;
    Ok(PartitionWitness { circuit_id: circuit_id.to_owned(), partition: k as u32, inputs, aux })
}

fn public_inputs_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &SnapInput,
) -> anyhow::Result<Vec<Vec<Fr>>> {
    let Parts { pub_in, proofs, params } = parts::<Tree>(input)?;
    (0..proofs.len())
        .map(|k| {
            <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::generate_public_inputs(
                &pub_in, &params, Some(k),
            )
        })
        .collect()
}

fn blank_circuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, V: CircuitVisitor>(
    sector_size: u64,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let params = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    Ok(visitor.visit(
        <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::blank_circuit(
            &params,
        ),
    ))
}

fn identifier<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(sector_size: u64) -> anyhow::Result<String> {
    use storage_proofs_core::parameter_cache::CacheableParameters;
    let params = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    Ok(<Compound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(&params))
}

/// The parameter file stem filecoin-proofs names SnapDeals parameters after
/// (`v28-empty-sector-update-<tree>-<hash>`). `RegisteredUpdateProof::circuit_identifier` in
/// filecoin-proofs-api 19.1 returns the PoRep identifier instead, so it is computed here the
/// way `get_empty_sector_update_params` does.
pub fn param_file_stem(sector_size: u64) -> Result<String, FilecoinError> {
    sector_size_of(sector_size)?;
    let id = (|| with_sector_shape!(sector_size, identifier, sector_size))()?;
    Ok(crate::fields::param_file_stem(&id))
}

/// Build partition `k`'s circuit (with its witness) and hand it to `visitor`.
pub fn visit_partition<V: CircuitVisitor>(input: &SnapInput, k: usize, visitor: V) -> Result<V::Output, FilecoinError> {
    let size = u64::from(input.registered_proof.sector_size());
    Ok((|| with_sector_shape!(size, partition_circuit::<V>, input, k, visitor))()?)
}

/// Partition `k`'s witness computed natively (`crate::native`): the same values, in the
/// same order, as witness-only synthesis of [`visit_partition`]'s circuit.
pub fn native_witness(input: &SnapInput, k: usize, circuit_id: &str) -> Result<PartitionWitness, FilecoinError> {
    let size = u64::from(input.registered_proof.sector_size());
    Ok((|| with_sector_shape!(size, native_partition, input, k, circuit_id))()?)
}

/// The circuit without a witness (parameter generation, constraint shapes).
pub fn visit_blank<V: CircuitVisitor>(sector_size: u64, visitor: V) -> Result<V::Output, FilecoinError> {
    Ok((|| with_sector_shape!(sector_size, blank_circuit::<V>, sector_size, visitor))()?)
}

/// Public inputs of every partition, as `verify_empty_sector_update_proof` derives them.
pub fn public_inputs(input: &SnapInput) -> Result<Vec<Vec<Fr>>, FilecoinError> {
    let size = u64::from(input.registered_proof.sector_size());
    Ok((|| with_sector_shape!(size, public_inputs_of, input))()?)
}

/// Each partition proof against its public inputs, then the whole with
/// `verify_empty_sector_update_proof`.
pub fn verify(input: &SnapInput, params_dir: &Path, partition_proofs: &[Vec<u8>]) -> Result<(), VerifyFailure> {
    let sector_size = u64::from(input.registered_proof.sector_size());
    let stem = param_file_stem(sector_size).map_err(|e| VerifyFailure::whole(e.to_string()))?;
    let inputs = public_inputs(input).map_err(|e| VerifyFailure::whole(format!("public inputs: {e}")))?;
    verify_partitions(params_dir, &stem, &inputs, partition_proofs)?;
    verdict(filecoin_proofs_api::update::verify_empty_sector_update_proof(
        input.registered_proof,
        &partition_proofs.concat(),
        input.comm_r_old,
        input.comm_r_new,
        input.comm_d_new,
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn parameter_names_are_the_update_circuits() {
        let snap = super::param_file_stem(2048).unwrap();
        assert!(snap.starts_with("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-"), "{snap}");
    }
}
