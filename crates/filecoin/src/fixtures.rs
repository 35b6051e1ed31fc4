//! Real Filecoin inputs for tests and benchmarks, made with filecoin-proofs' own API: a sector
//! sealed from random data (add piece, PC1, PC2, C1) and what a storage node would send for
//! it — the C1 envelope, WindowPoSt/WinningPoSt vanilla proofs, SnapDeals partition proofs.
//! None of this needs Groth16 parameters; it takes about a second at 2 KiB.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use base64::Engine as _;
use filecoin_proofs_api::seal::{self, SealCommitPhase1Output, SealPreCommitPhase2Output};
use filecoin_proofs_api::{
    post, update, PieceInfo, PrivateReplicaInfo, RegisteredSealProof, RegisteredUpdateProof, SectorId,
    UnpaddedBytesAmount,
};
use serde_json::{json, Value};

use crate::prover_id;

/// A sealed sector and everything made while sealing it.
#[derive(Debug, Clone)]
pub struct SealedSector {
    pub registered_proof: RegisteredSealProof,
    pub miner_id: u64,
    pub sector_num: u64,
    pub prover_id: [u8; 32],
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub cache_dir: PathBuf,
    pub replica_path: PathBuf,
    pub c1: SealCommitPhase1Output,
}

impl SealedSector {
    /// The C1 output as Curio and lotus-bench wrap it: `{"SectorNum", "Phase1Out", "SectorSize"}`.
    pub fn envelope(&self) -> Value {
        crate::porep::c1_envelope(&self.c1, self.sector_num)
    }

    /// The `input` of a `porep-c2` job for this sector.
    pub fn porep_request_input(&self) -> Value {
        json!({ "miner_id": self.miner_id, "c1": self.envelope() })
    }

    /// The `input` of a `window-post` (or `winning-post`) job proving this sector.
    pub fn post_request_input(&self, window: bool, randomness: [u8; 32]) -> anyhow::Result<Value> {
        let size =
            snarkflow_wire::sector_size_name(u64::from(self.registered_proof.sector_size())).context("sector size")?;
        let name = if window { format!("StackedDrgWindow{size}V1_2") } else { format!("StackedDrgWinning{size}V1") };
        let registered: filecoin_proofs_api::RegisteredPoStProof = serde_json::from_value(json!(name))?;
        let sector = SectorId::from(self.sector_num);
        let challenges = post::generate_fallback_sector_challenges(registered, &randomness, &[sector], self.prover_id)?;
        let replica =
            PrivateReplicaInfo::new(registered, self.comm_r, self.cache_dir.clone(), self.replica_path.clone());
        let vanilla = post::generate_single_vanilla_proof(
            registered,
            sector,
            &replica,
            challenges.get(&sector).context("no challenges for the sector")?,
        )?;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut input = json!({
            "registered_proof": serde_json::to_value(registered)?,
            "miner_id": self.miner_id,
            "randomness": hex::encode(randomness),
            "vanilla_proofs": [b64.encode(vanilla)],
        });
        if window {
            input["partition_index"] = 0.into();
        }
        Ok(input)
    }

    /// Encode new random data into this sector (it plays the CC sector key) and return the
    /// `input` of a `snap-update` job for the update.
    pub fn snap_request_input(&self, dir: &Path, seed: u64) -> anyhow::Result<Value> {
        let registered: RegisteredUpdateProof = serde_json::from_value(json!(format!(
            "StackedDrg{}V1",
            snarkflow_wire::sector_size_name(u64::from(self.registered_proof.sector_size())).context("sector size")?
        )))?;
        fs::create_dir_all(dir)?;
        let (staged, pieces) = staged_piece(dir, self.registered_proof, seed)?;
        let new_replica = dir.join("update-replica");
        let new_cache = dir.join("update-cache");
        fs::create_dir_all(&new_cache)?;
        File::create(&new_replica)?.set_len(fs::metadata(&self.replica_path)?.len())?;
        let encoded = update::empty_sector_update_encode_into(
            registered,
            &new_replica,
            &new_cache,
            &self.replica_path,
            &self.cache_dir,
            &staged,
            &pieces,
        )?;
        let proofs = update::generate_partition_proofs(
            registered,
            self.comm_r,
            encoded.comm_r_new,
            encoded.comm_d_new,
            &self.replica_path,
            &self.cache_dir,
            &new_replica,
            &new_cache,
        )?;
        let b64 = base64::engine::general_purpose::STANDARD;
        Ok(json!({
            "registered_proof": serde_json::to_value(registered)?,
            "comm_r_old": hex::encode(self.comm_r),
            "comm_r_new": hex::encode(encoded.comm_r_new),
            "comm_d_new": hex::encode(encoded.comm_d_new),
            "vanilla_proofs": proofs.iter().map(|p| b64.encode(&p.0)).collect::<Vec<_>>(),
        }))
    }
}

fn bytes32(seed: u64, tag: u8) -> [u8; 32] {
    use rand::{RngCore, SeedableRng};
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(u64::from(tag)));
    let mut out = [0u8; 32];
    rng.fill_bytes(&mut out);
    out[31] &= 0x3f; // keep it a canonical field element, as the chain's randomness is
    out
}

/// A staged sector file holding one piece of random data filling the sector.
fn staged_piece(dir: &Path, proof: RegisteredSealProof, seed: u64) -> anyhow::Result<(PathBuf, Vec<PieceInfo>)> {
    use rand::{RngCore, SeedableRng};
    let sector_size = u64::from(proof.sector_size());
    let unpadded = UnpaddedBytesAmount(sector_size * 127 / 128);
    let mut data = vec![0u8; unpadded.0 as usize];
    rand_chacha::ChaCha20Rng::seed_from_u64(seed).fill_bytes(&mut data);
    let staged = dir.join(format!("staged-{seed}"));
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&staged)?;
    let (piece, _) = seal::add_piece(proof, &data[..], file, unpadded, &[])?;
    Ok((staged, vec![piece]))
}

/// Seal a sector of random data (derived from `seed`) under `dir` and run C1 on it. One seal
/// at a time per process: filecoin-proofs' sealing shares process-wide state (its thread pool,
/// the parent cache), and with several tests sealing at once one seal stopped making progress
/// (every thread idle) in a suite run on 2026-12-04.
pub fn seal_sector(
    dir: &Path,
    registered_proof: RegisteredSealProof,
    miner_id: u64,
    sector_num: u64,
    seed: u64,
) -> anyhow::Result<SealedSector> {
    static ONE_SEAL_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _sealing = ONE_SEAL_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (staged, pieces) = staged_piece(dir, registered_proof, seed)?;
    let cache_dir = dir.join("cache");
    fs::create_dir_all(&cache_dir)?;
    let replica_path = dir.join("sealed");
    File::create(&replica_path)?;
    let prover_id = prover_id(miner_id);
    let sector = SectorId::from(sector_num);
    let (ticket, challenge_seed) = (bytes32(seed, 1), bytes32(seed, 2));
    let pc1 = seal::seal_pre_commit_phase1(
        registered_proof,
        &cache_dir,
        &staged,
        &replica_path,
        prover_id,
        sector,
        ticket,
        &pieces,
    )?;
    let pc2: SealPreCommitPhase2Output = seal::seal_pre_commit_phase2(pc1, &cache_dir, &replica_path)?;
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);
    let c1 =
        seal::seal_commit_phase1(&cache_dir, &replica_path, prover_id, sector, ticket, challenge_seed, pc2, &pieces)?;
    Ok(SealedSector { registered_proof, miner_id, sector_num, prover_id, comm_r, comm_d, cache_dir, replica_path, c1 })
}
