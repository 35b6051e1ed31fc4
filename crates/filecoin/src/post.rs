//! WindowPoSt (`window-post`, one partition of a deadline) and WinningPoSt (`winning-post`)
//! from vanilla sector proofs, built with filecoin-proofs' `FallbackPoStCompound` as
//! `generate_single_window_post_with_vanilla` and `generate_winning_post_with_vanilla` do.
//! The two share everything but their setup and sector count, so they live together.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{ensure, Context as _};
use blstrs::Scalar as Fr;
use filecoin_hashers::Domain;
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{as_safe_commitment, FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredPoStProof, SectorId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use snarkflow_synthesis::{CircuitVisitor, ConstraintShape, PartitionWitness};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector};

use crate::fields::{
    base64_list, by_name, bytes32, err, only_fields, prover_id, registered, registered_name, sector_size_of, size_name,
    u64_field,
};
use crate::verify::{verdict, verify_partitions, VerifyFailure};
use crate::{FilecoinError, Parsed};

/// Which PoSt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostKind {
    Window,
    Winning,
}

/// A checked WindowPoSt or WinningPoSt input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PostInput {
    pub miner_id: u64,
    pub prover_id: [u8; 32],
    pub registered_proof: RegisteredPoStProof,
    pub randomness: [u8; 32],
    /// WindowPoSt: which partition of the deadline these sectors are (0 for WinningPoSt).
    pub partition_index: u32,
    /// bincode `FallbackPoStSectorProof`s, as `generate_single_vanilla_proof` returns them.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

type Compound<Tree> = FallbackPoStCompound<Tree>;
type Scheme<'a, Tree> = FallbackPoSt<'a, Tree>;

impl PostKind {
    fn window(self) -> bool {
        match self {
            PostKind::Window => true,
            PostKind::Winning => false,
        }
    }

    fn name(self) -> &'static str {
        match self {
            PostKind::Window => "window-post",
            PostKind::Winning => "winning-post",
        }
    }

    /// The registered proof of this PoSt for `sector_size` bytes.
    pub fn registered_proof(self, sector_size: u64) -> Result<RegisteredPoStProof, FilecoinError> {
        let size = size_name(sector_size)?;
        match self {
            PostKind::Window => by_name(format!("StackedDrgWindow{size}V1_2")),
            PostKind::Winning => by_name(format!("StackedDrgWinning{size}V1")),
        }
    }

    /// The parameter file stem filecoin-proofs uses.
    pub fn param_file_stem(self, sector_size: u64) -> Result<String, FilecoinError> {
        Ok(crate::fields::param_file_stem(&self.registered_proof(sector_size)?.circuit_identifier()?))
    }

    fn setup(self, config: &PoStConfig) -> anyhow::Result<fallback::SetupParams> {
        match self {
            PostKind::Window => Ok(window_post_setup_params(config)),
            PostKind::Winning => winning_post_setup_params(config),
        }
    }

    /// Check a request's `input` completely and turn it into a job.
    pub fn parse(self, input: &Map<String, Value>) -> Result<Parsed<u64, PostInput>, FilecoinError> {
        let fields: &[&str] = match self {
            PostKind::Window => &["registered_proof", "miner_id", "randomness", "partition_index", "vanilla_proofs"],
            PostKind::Winning => &["registered_proof", "miner_id", "randomness", "vanilla_proofs"],
        };
        only_fields(input, self.name(), fields)?;
        let registered_proof: RegisteredPoStProof = registered(input, "input", "PoSt")?;
        let miner_id = u64_field(input, "input", "miner_id")?;
        let partition_index = match (self, input.get("partition_index")) {
            (PostKind::Winning, _) | (PostKind::Window, None | Some(Value::Null)) => 0,
            (PostKind::Window, Some(v)) => v
                .as_u64()
                .filter(|p| *p < 1 << 20)
                .ok_or_else(|| err("input.partition_index must be a small non-negative integer"))?
                as u32,
        };
        self.checked(PostInput {
            miner_id,
            prover_id: prover_id(miner_id),
            registered_proof,
            randomness: bytes32(input, "input", "randomness")?,
            partition_index,
            vanilla_proofs: base64_list(input, "input", "vanilla_proofs")?,
        })
    }

    /// Everything [`PostKind::parse`] checks once the fields are read (the cuzk gRPC
    /// interface's request starts here, its bytes already binary).
    pub fn checked(self, parsed: PostInput) -> Result<Parsed<u64, PostInput>, FilecoinError> {
        let registered_proof = parsed.registered_proof;
        let name = registered_name(registered_proof);
        match self {
            PostKind::Window if !(name.starts_with("StackedDrgWindow") && name.ends_with("V1_2")) => {
                return Err(err(format!(
                    "input.registered_proof {name} is not a current WindowPoSt proof (StackedDrgWindow<size>V1_2)"
                )))
            }
            PostKind::Winning if !name.starts_with("StackedDrgWinning") => {
                return Err(err(format!("input.registered_proof {name} is not a WinningPoSt proof")))
            }
            PostKind::Window | PostKind::Winning => {}
        }
        let sector_size = sector_size_of(u64::from(registered_proof.sector_size()))?;
        if parsed.prover_id != prover_id(parsed.miner_id) {
            return Err(err("the prover id is not the miner's"));
        }
        if parsed.partition_index >= 1 << 20 || (self == PostKind::Winning && parsed.partition_index != 0) {
            return Err(err("input.partition_index must be a small non-negative integer (0 for WinningPoSt)"));
        }
        // the vanilla proofs must deserialize and partition as filecoin-proofs would
        (|| with_sector_shape!(sector_size, check, &parsed, self))()?;
        Ok(Parsed { spec: sector_size, partitions: 1, input: parsed })
    }

    /// Build the one partition's circuit (with its witness) and hand it to `visitor`.
    pub fn visit_partition<V: CircuitVisitor>(
        self,
        input: &PostInput,
        k: usize,
        visitor: V,
    ) -> Result<V::Output, FilecoinError> {
        if k != 0 {
            return Err(err(format!("a {} job has one partition", self.name())));
        }
        let size = u64::from(input.registered_proof.sector_size());
        Ok((|| with_sector_shape!(size, partition_circuit::<V>, input, self, visitor))()?)
    }

    /// The partition's witness computed natively (`crate::native`): the same values, in the
    /// same order, as witness-only synthesis of [`PostKind::visit_partition`]'s circuit.
    pub fn native_witness(
        self,
        input: &PostInput,
        k: usize,
        circuit_id: &str,
    ) -> Result<PartitionWitness, FilecoinError> {
        if k != 0 {
            return Err(err(format!("a {} job has one partition", self.name())));
        }
        let size = u64::from(input.registered_proof.sector_size());
        Ok((|| with_sector_shape!(size, native_partition, input, self, circuit_id))()?)
    }

    /// The circuit without a witness (parameter generation, constraint shapes).
    pub fn visit_blank<V: CircuitVisitor>(self, sector_size: u64, visitor: V) -> Result<V::Output, FilecoinError> {
        let registered = self.registered_proof(sector_size)?;
        Ok((|| with_sector_shape!(sector_size, blank_circuit::<V>, registered, self, visitor))()?)
    }

    /// The blank circuit's shape, the same as recording [`PostKind::visit_blank`]'s, from its
    /// first two sectors: the others are copies ([`snarkflow_synthesis::record_repeated`]).
    pub fn record_blank_shape(self, sector_size: u64, circuit_id: &str) -> Result<ConstraintShape, FilecoinError> {
        let registered = self.registered_proof(sector_size)?;
        Ok((|| with_sector_shape!(sector_size, record_blank, registered, self, circuit_id))()?)
    }

    /// Public inputs of the partition, as filecoin-proofs' verifiers derive them.
    pub fn public_inputs(self, input: &PostInput) -> Result<Vec<Vec<Fr>>, FilecoinError> {
        let size = u64::from(input.registered_proof.sector_size());
        Ok((|| with_sector_shape!(size, public_inputs_of, input, self))()?)
    }

    /// The partition proof against its public inputs; for WinningPoSt then the whole with
    /// `verify_winning_post`. A single WindowPoSt partition has no whole-proof verifier in
    /// filecoin-proofs: the per-partition check is its `verify_window_post` for that partition.
    pub fn verify(
        self,
        input: &PostInput,
        params_dir: &Path,
        partition_proofs: &[Vec<u8>],
    ) -> Result<(), VerifyFailure> {
        let sector_size = u64::from(input.registered_proof.sector_size());
        let stem = self.param_file_stem(sector_size).map_err(|e| VerifyFailure::whole(e.to_string()))?;
        let inputs = self.public_inputs(input).map_err(|e| VerifyFailure::whole(format!("public inputs: {e}")))?;
        verify_partitions(params_dir, &stem, &inputs, partition_proofs)?;
        match self {
            PostKind::Window => Ok(()),
            PostKind::Winning => verdict(winning_replicas(input).and_then(|replicas| {
                filecoin_proofs_api::post::verify_winning_post(
                    &input.randomness,
                    &partition_proofs.concat(),
                    &replicas,
                    input.prover_id,
                )
            })),
        }
    }
}

fn vanilla<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> anyhow::Result<Vec<FallbackPoStSectorProof<Tree>>> {
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

/// What a PoSt circuit is built from, as filecoin-proofs derives it.
struct Parts<Tree: MerkleTreeTrait> {
    pub_in: fallback::PublicInputs<<Tree::Hasher as filecoin_hashers::Hasher>::Domain>,
    proof: fallback::Proof<Tree::Proof>,
    params: fallback::PublicParams,
}

fn parts<Tree: 'static + MerkleTreeTrait>(input: &PostInput, kind: PostKind) -> anyhow::Result<Parts<Tree>> {
    let config = input.registered_proof.as_v1_config();
    let vanilla = vanilla::<Tree>(input)?;
    match kind {
        PostKind::Winning => ensure!(
            vanilla.len() == config.sector_count,
            "WinningPoSt takes {} vanilla sector proofs, got {}",
            config.sector_count,
            vanilla.len()
        ),
        PostKind::Window => ensure!(
            vanilla.len() <= config.sector_count,
            "a WindowPoSt partition holds at most {} sectors, got {}",
            config.sector_count,
            vanilla.len()
        ),
    }
    let setup = kind.setup(&config)?;
    let pub_params = <Compound<Tree> as CompoundProof<Scheme<'_, Tree>, FallbackPoStCircuit<Tree>>>::setup(
        &compound_proof::SetupParams { vanilla_params: setup, partitions: None, priority: false },
    )?;
    let pub_in = fallback::PublicInputs {
        randomness: as_safe_commitment(&input.randomness, "randomness")?,
        prover_id: as_safe_commitment(&input.prover_id, "prover_id")?,
        sectors: vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect(),
        k: Some(if kind.window() { input.partition_index as usize } else { 0 }),
    };
    let proof = match kind {
        PostKind::Window => {
            filecoin_proofs::single_partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_in, &vanilla)?
        }
        PostKind::Winning => {
            let mut all =
                filecoin_proofs::partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_in, 1, &vanilla)?;
            ensure!(all.len() == 1, "WinningPoSt has one partition");
            all.remove(0)
        }
    };
    Ok(Parts { pub_in, proof, params: pub_params.vanilla_params })
}

/// What filecoin-proofs checks of vanilla proofs before proving: WinningPoSt's partitioning
/// verifies them; a WindowPoSt partition is verified here the same way (filecoin-proofs'
/// single-partition path does not), so a proof that cannot verify is refused at submission.
fn check<Tree: 'static + MerkleTreeTrait>(input: &PostInput, kind: PostKind) -> anyhow::Result<()> {
    use storage_proofs_core::proof::ProofScheme as _;
    let Parts { pub_in, proof, params } = parts::<Tree>(input, kind)?;
    match kind {
        PostKind::Window => {
            ensure!(Scheme::<Tree>::verify(&params, &pub_in, &proof)?, "the vanilla sector proofs do not verify")
        }
        PostKind::Winning => {}
    }
    Ok(())
}

fn partition_circuit<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    input: &PostInput,
    kind: PostKind,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let Parts { pub_in, proof, params } = parts::<Tree>(input, kind)?;
    let circuit = <Compound<Tree> as CompoundProof<Scheme<'_, Tree>, FallbackPoStCircuit<Tree>>>::circuit(
        &pub_in,
        Default::default(),
        &proof,
        &params,
        Some(0),
    )?;
    Ok(visitor.visit(circuit))
}

fn native_partition<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    kind: PostKind,
    circuit_id: &str,
) -> anyhow::Result<PartitionWitness> {
    let Parts { pub_in, proof, params } = parts::<Tree>(input, kind)?;
    anyhow::ensure!(
        proof.sectors.len() == params.sector_count,
        "vanilla proofs must equal sector_count: {} != {}",
        params.sector_count,
        proof.sectors.len()
    );
    let public = pub_in.sectors.chunks(params.sector_count).next().context("no public sectors")?;
    // as FallbackPoStCompound::circuit: a partition short of sectors repeats its last one
    let sectors = proof
        .sectors
        .iter()
        .enumerate()
        .map(|(i, sector)| {
            let paths = crate::native::post_paths(sector.as_options())?;
            let leafs = sector.leafs();
            anyhow::ensure!(
                leafs.len() == paths.len(),
                "a sector proof with {} leaves and {} paths",
                leafs.len(),
                paths.len()
            );
            Ok(crate::native::PostSector {
                comm_r: public[i.min(public.len() - 1)].comm_r.into(),
                comm_c: sector.comm_c.into(),
                comm_r_last: sector.comm_r_last.into(),
                challenges: leafs.into_iter().map(Into::into).zip(paths).collect(),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (inputs, aux) = crate::native::post_partition(&sectors)?;
    Ok(PartitionWitness { circuit_id: circuit_id.to_owned(), partition: 0, inputs, aux })
}

fn public_inputs_of<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    kind: PostKind,
) -> anyhow::Result<Vec<Vec<Fr>>> {
    let Parts { mut pub_in, params, .. } = parts::<Tree>(input, kind)?;
    if !kind.window() {
        // WinningPoSt's parameters count each challenge as a "sector": the verifier lists the
        // sectors once per parameter sector (as `verify_winning_post` does)
        let sectors = std::mem::take(&mut pub_in.sectors);
        pub_in.sectors = (0..params.sector_count).flat_map(|_| sectors.iter().cloned()).collect();
        pub_in.k = None;
    }
    let inputs =
        <Compound<Tree> as CompoundProof<Scheme<'_, Tree>, FallbackPoStCircuit<Tree>>>::generate_public_inputs(
            &pub_in,
            &params,
            Some(0),
        )?;
    Ok(vec![inputs])
}

fn blank_circuit<Tree: 'static + MerkleTreeTrait, V: CircuitVisitor>(
    registered: RegisteredPoStProof,
    kind: PostKind,
    visitor: V,
) -> anyhow::Result<V::Output> {
    let setup = kind.setup(&registered.as_v1_config())?;
    let pp = <Scheme<'_, Tree> as storage_proofs_core::proof::ProofScheme<'_>>::setup(&setup)?;
    Ok(visitor
        .visit(<Compound<Tree> as CompoundProof<Scheme<'_, Tree>, FallbackPoStCircuit<Tree>>>::blank_circuit(&pp)))
}

fn record_blank<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    kind: PostKind,
    circuit_id: &str,
) -> anyhow::Result<ConstraintShape> {
    let setup = kind.setup(&registered.as_v1_config())?;
    let pp = <Scheme<'_, Tree> as storage_proofs_core::proof::ProofScheme<'_>>::setup(&setup)?;
    Ok(snarkflow_synthesis::record_repeated(|m| blank_with_sectors::<Tree>(&pp, m), pp.sector_count, circuit_id)?)
}

/// The blank circuit with `sectors` sectors instead of the proof's.
fn blank_with_sectors<Tree: 'static + MerkleTreeTrait>(
    pp: &fallback::PublicParams,
    sectors: usize,
) -> FallbackPoStCircuit<Tree> {
    let pp = fallback::PublicParams { sector_count: sectors, ..pp.clone() };
    <Compound<Tree> as CompoundProof<Scheme<'_, Tree>, FallbackPoStCircuit<Tree>>>::blank_circuit(&pp)
}

fn winning_replicas(input: &PostInput) -> anyhow::Result<BTreeMap<SectorId, PublicReplicaInfo>> {
    fn replicas<Tree: 'static + MerkleTreeTrait>(
        input: &PostInput,
    ) -> anyhow::Result<BTreeMap<SectorId, PublicReplicaInfo>> {
        Ok(vanilla::<Tree>(input)?
            .into_iter()
            .map(|p| {
                let comm_r: [u8; 32] = p.comm_r.into_bytes().try_into().expect("32-byte domain");
                (p.sector_id, PublicReplicaInfo::new(input.registered_proof, comm_r))
            })
            .collect())
    }
    let size = u64::from(input.registered_proof.sector_size());
    with_sector_shape!(size, replicas, input)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 KiB WindowPoSt has two sectors per partition, where nothing is copied: five sectors
    /// copy three.
    #[test]
    fn a_shape_copied_from_two_sectors_is_the_whole_recording() {
        use filecoin_proofs::constants::SectorShape2KiB;
        let setup = PostKind::Window.setup(&RegisteredPoStProof::StackedDrgWindow2KiBV1_2.as_v1_config()).unwrap();
        let pp = <Scheme<'_, SectorShape2KiB> as storage_proofs_core::proof::ProofScheme<'_>>::setup(&setup).unwrap();
        let whole = snarkflow_synthesis::record_shape(blank_with_sectors::<SectorShape2KiB>(&pp, 5), "t").unwrap();
        let copied =
            snarkflow_synthesis::record_repeated(|m| blank_with_sectors::<SectorShape2KiB>(&pp, m), 5, "t").unwrap();
        assert!(whole.num_constraints() > 0);
        assert!(copied == whole, "the copied shape differs from the whole recording");
        // and it keeps its fold: the five sectors, each its own block, for a prover to store one
        let fold = copied.fold().expect("a copied shape is folded");
        assert!(fold.blocks == 5 && fold.holds(&copied) && whole.fold().is_none(), "{fold:?}");
    }

    #[test]
    fn parameter_names_match_filecoin_proofs() {
        let post = PostKind::Winning.param_file_stem(2048).unwrap();
        let theirs = RegisteredPoStProof::StackedDrgWinning2KiBV1.cache_params_path().unwrap();
        assert_eq!(theirs.file_name().unwrap().to_str().unwrap(), format!("{post}.params"));
    }
}
