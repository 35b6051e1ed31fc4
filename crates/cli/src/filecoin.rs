//! `snarkflow filecoin`: Filecoin inputs for tests and benchmarks, made without lotus.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::Subcommand;
use serde_json::{json, Value};

#[derive(Debug, Subcommand)]
pub(crate) enum FilecoinCommand {
    /// Seal sectors of random data (add piece, PC1, PC2, C1) and write, per sector, the C1
    /// envelope as Curio/lotus-bench write it (`c1.json`) and request inputs for
    /// `window-post`, `winning-post` and `snap-update` jobs on it.
    Seal {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        #[arg(long, default_value_t = 1000)]
        miner_id: u64,
        /// First sector number; sector i gets first + i.
        #[arg(long, default_value_t = 1)]
        sector_num: u64,
        /// Sectors to seal (distinct data, tickets and seeds).
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Skip the PoSt and SnapDeals inputs.
        #[arg(long)]
        c1_only: bool,
    },
    /// A TEST FIXTURE for a committed-capacity sector of any size (32 GiB and 64 GiB
    /// included) without sealing it, from sparse trees: a PoRep C1 output (SDR labels wherever
    /// a challenge looks) as the Curio/lotus-bench envelope `DIR/c1.json`, a PoSt job input, or
    /// a SnapDeals job input (an empty replica updated with one value repeated as its data).
    /// It passes filecoin-proofs' vanilla verification and proves with the real circuit.
    Fixture {
        /// `porep-c2` (interactive PoRep; writes `c1.json`, the envelope), `window-post`,
        /// `winning-post` or `snap-update` (write `<kind>.json`, a job's `input` with vanilla
        /// proofs).
        #[arg(long, default_value = "porep-c2")]
        proof: String,
        #[arg(long, default_value = "32GiB")]
        sector_size: String,
        #[arg(long, default_value_t = 1000)]
        miner_id: u64,
        #[arg(long, default_value_t = 1)]
        sector_num: u64,
        /// Make the same fixture every time (the sector's random data and replica id come
        /// from this seed); without it, from the system's randomness.
        #[arg(long)]
        seed: Option<u64>,
        /// What the sector holds: `zeros` (a CC sector, every subtree no challenge opens
        /// empty) or `random` (random data (porep-c2) and random unopened subtrees: values
        /// repeat in the witness as in a sealed sector).
        #[arg(long, default_value = "zeros")]
        data: String,
        /// PoSt: sectors `sector-num`, `sector-num` + 1, … (a 32 GiB WindowPoSt partition holds
        /// 2,349; fewer are padded with the last, as filecoin-proofs pads them).
        #[arg(long, default_value_t = 1)]
        sectors: u64,
        #[arg(long)]
        out: PathBuf,
    },
}

/// The fixture's randomness: reproducible from `seed`, else the system's.
fn fixture_rng(seed: Option<u64>) -> rand_chacha::ChaCha20Rng {
    use rand::SeedableRng;
    match seed {
        Some(seed) => rand_chacha::ChaCha20Rng::seed_from_u64(seed),
        None => rand_chacha::ChaCha20Rng::from_entropy(),
    }
}

pub(crate) async fn run(command: FilecoinCommand) -> anyhow::Result<ExitCode> {
    match command {
        FilecoinCommand::Seal { out, sector_size, miner_id, sector_num, count, c1_only } => {
            seal(out, &sector_size, miner_id, sector_num, count, c1_only).await
        }
        FilecoinCommand::Fixture { proof, sector_size, miner_id, sector_num, seed, data, sectors, out } => {
            let data = match data.as_str() {
                "zeros" => snarkflow_filecoin::sparse::SectorData::Zeros,
                "random" => snarkflow_filecoin::sparse::SectorData::Random,
                other => bail!("--data {other}: zeros or random"),
            };
            if sectors == 0 || (sectors > 1 && proof == "porep-c2") {
                bail!("--sectors {sectors}: a PoRep fixture is one sector, a PoSt one at least one");
            }
            let sectors: Vec<u64> = (sector_num..sector_num + sectors).collect();
            fixture(&proof, &sector_size, miner_id, &sectors, seed, data, out).await
        }
    }
}

/// `snarkflow filecoin seal`: `count` real sectors sealed from `sector_num` on, each with its C1
/// envelope (and, unless `c1_only`, PoSt and SnapDeals inputs) in `out/sector-<n>/`.
async fn seal(
    out: PathBuf,
    sector_size: &str,
    miner_id: u64,
    sector_num: u64,
    count: u64,
    c1_only: bool,
) -> anyhow::Result<ExitCode> {
    let size = snarkflow_wire::parse_sector_size(sector_size)
        .with_context(|| format!("unknown sector size {sector_size:?}"))?;
    let name = snarkflow_wire::sector_size_name(size).context("sector size")?;
    let proof: filecoin_proofs_api::RegisteredSealProof =
        serde_json::from_value(json!(format!("StackedDrg{name}V1_1")))?;
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        for i in 0..count {
            let num = sector_num + i;
            let dir = out.join(format!("sector-{num}"));
            let started = std::time::Instant::now();
            let sealed = snarkflow_filecoin::fixtures::seal_sector(&dir, proof, miner_id, num, num)?;
            std::fs::write(dir.join("c1.json"), serde_json::to_vec(&sealed.envelope())?)?;
            if !c1_only {
                let randomness = [num as u8 & 0x3f; 32];
                std::fs::write(
                    dir.join("window-post.json"),
                    serde_json::to_vec(&sealed.post_request_input(true, randomness)?)?,
                )?;
                std::fs::write(
                    dir.join("winning-post.json"),
                    serde_json::to_vec(&sealed.post_request_input(false, randomness)?)?,
                )?;
                std::fs::write(
                    dir.join("snap-update.json"),
                    serde_json::to_vec(&sealed.snap_request_input(&dir.join("snap"), num + 1_000_000)?)?,
                )?;
            }
            println!("{} sealed in {:.1} s", dir.display(), started.elapsed().as_secs_f64());
        }
        Ok(())
    })
    .await??;
    Ok(ExitCode::SUCCESS)
}

/// `snarkflow filecoin fixture`: a sparse CC-sector input of `proof` (no sealing), vanilla-verified.
async fn fixture(
    proof: &str,
    sector_size: &str,
    miner_id: u64,
    sectors: &[u64],
    seed: Option<u64>,
    data: snarkflow_filecoin::sparse::SectorData,
    out: PathBuf,
) -> anyhow::Result<ExitCode> {
    let sector_num = sectors[0];
    let size = snarkflow_wire::parse_sector_size(sector_size)
        .with_context(|| format!("unknown sector size {sector_size:?}"))?;
    let name = snarkflow_wire::sector_size_name(size).context("sector size")?;
    let started = std::time::Instant::now();
    let (file, document) = match proof {
        "porep-c2" => {
            let registered: filecoin_proofs_api::RegisteredSealProof =
                serde_json::from_value(json!(format!("StackedDrg{name}V1_1")))?;
            let envelope = tokio::task::spawn_blocking(move || -> anyhow::Result<Value> {
                let prover_id = snarkflow_filecoin::prover_id(miner_id);
                let c1 = snarkflow_filecoin::sparse::porep_c1_of(
                    registered,
                    prover_id,
                    sector_num,
                    data,
                    &mut fixture_rng(seed),
                )?;
                Ok(snarkflow_filecoin::porep::c1_envelope(&c1, sector_num))
            })
            .await??;
            ("c1.json", envelope)
        }
        "window-post" | "winning-post" => {
            let kind = if proof == "window-post" {
                snarkflow_filecoin::PostKind::Window
            } else {
                snarkflow_filecoin::PostKind::Winning
            };
            let sectors = sectors.to_vec();
            let input = tokio::task::spawn_blocking(move || {
                let rng = &mut fixture_rng(seed);
                snarkflow_filecoin::sparse_post::post_request_of(kind, size, miner_id, &sectors, data, rng)
            })
            .await??;
            (if proof == "window-post" { "window-post.json" } else { "winning-post.json" }, input)
        }
        "snap-update" => {
            if data != snarkflow_filecoin::sparse::SectorData::Zeros {
                bail!("--proof snap-update: the fixture updates an empty replica with constant data; --data random is not made");
            }
            let input = tokio::task::spawn_blocking(move || -> anyhow::Result<Value> {
                let input = snarkflow_filecoin::sparse_snap::snap_request(size, &mut fixture_rng(seed))?;
                // filecoin-proofs' vanilla verification of every partition, as a job's submission runs it
                snarkflow_filecoin::snap::parse(input.as_object().context("a JSON object")?)?;
                Ok(input)
            })
            .await??;
            ("snap-update.json", input)
        }
        other => bail!("--proof {other}: fixtures are made for porep-c2, window-post, winning-post and snap-update"),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let path = out.join(file);
    let bytes = serde_json::to_vec(&document)?;
    std::fs::write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
    println!(
            "{} ({} bytes, {:.1} s): {proof} for {name} sector{} {sector_num}{} of miner {miner_id} ({}), vanilla-verified; TEST FIXTURE",
            path.display(),
            bytes.len(),
            started.elapsed().as_secs_f64(),
            if sectors.len() > 1 { "s" } else { "" },
            if sectors.len() > 1 { format!("–{}", sectors[sectors.len() - 1]) } else { String::new() },
            match data {
                _ if proof == "snap-update" => "an empty replica updated with constant data",
                snarkflow_filecoin::sparse::SectorData::Zeros => "CC: zeros, sparse trees",
                snarkflow_filecoin::sparse::SectorData::Random => "random data and subtrees",
            }
        );
    Ok(ExitCode::SUCCESS)
}
