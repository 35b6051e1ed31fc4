//! `snarkflow params check` and `params fetch`: the production parameter files a node needs,
//! checked against the digests filecoin-proofs publishes (its `parameters.json`), and copied
//! into the node's cache from a directory (a mount, another node's cache) or an HTTP(S) mirror
//! the operator runs (any static file server: `python3 -m http.server` in another node's
//! cache will do; ranges make a fetch resumable). Nothing here generates parameters: random
//! test parameters come only from `params generate`, also here.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context as _};
use clap::Subcommand;
use snarkflow_filecoin::manifest::{digest_file, Manifest};
use snarkflow_prover::ParamStore;
use snarkflow_service::ParamsDir;

use crate::circuit_args::{filecoin_spec_of, spec_of};

mod fetch;
use fetch::{fetch, of_sector_size, Source};

#[derive(Debug, Subcommand)]
pub(crate) enum ParamsCommand {
    /// Generate random (NOT trusted-setup) parameters for a test circuit, ahead of time.
    /// Filecoin kinds get filecoin-proofs' file names (`v28-<circuit id>.params/.vk/.meta`).
    Generate {
        /// Circuit kind: sha256-chain, dense-chain, porep-c2, snap-update, window-post,
        /// winning-post, with its size flags below; or give --circuit instead.
        #[arg(long, alias = "proof", required_unless_present = "circuit")]
        kind: Option<String>,
        /// The circuit by its id (`porep-c2-32GiB`, `dense-chain-c1024`): any kind this build
        /// proves, with no flags of its own.
        #[arg(long, conflicts_with_all = ["kind", "sector_size", "synthetic", "blocks", "constraints"])]
        circuit: Option<String>,
        /// Filecoin kinds: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
        #[arg(long)]
        sector_size: Option<String>,
        /// porep-c2: the Synthetic PoRep circuit.
        #[arg(long)]
        synthetic: bool,
        #[arg(long)]
        blocks: Option<u32>,
        #[arg(long)]
        constraints: Option<u32>,
        /// Regenerate even if the file exists.
        #[arg(long)]
        force: bool,
        /// Where the G1 fixed-base products run: `cpu`, or `gpu` (device 0; builds with
        /// cuda-resident). The file is the same either way.
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Make the parameters from this seed (the same file on every host and device).
        #[arg(long)]
        seed: Option<u64>,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// Check parameter files against the digests filecoin-proofs publishes: the named ones, or
    /// every published file in the directory. Exits non-zero if one is missing or wrong.
    Check {
        #[command(flatten)]
        which: ParamFiles,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// Put the production parameter files a node needs into its directory, the way Curio and
    /// lotus fetch them: by their IPFS CIDs through `IPFS_GATEWAY` (filecoin-proofs' default
    /// gateway when unset), or from a directory (a mount, another node's cache) or an HTTP(S)
    /// mirror. Resumable, one fetcher at a time per directory (its `fetch.lock`, as Curio's),
    /// each file checked against its published digest before it is installed (files already
    /// there too, unless TRUST_PARAMS=1). Never generates parameters.
    Fetch {
        /// A directory, or the base URL of a mirror (`https://mirror/params`: files are
        /// `<base>/<file name>`). Unset: by CID through IPFS_GATEWAY.
        #[arg(long)]
        from: Option<String>,
        /// Every published file of this sector size (`32GiB`): PoRep, SnapDeals, WindowPoSt,
        /// WinningPoSt, as Curio's fetch for a sector size.
        #[arg(long)]
        sector_size: Option<String>,
        #[command(flatten)]
        which: ParamFiles,
        #[command(flatten)]
        params: ParamsDir,
    },
}

/// Which published parameter files a `params` command acts on.
#[derive(Debug, clap::Args)]
pub(crate) struct ParamFiles {
    /// Circuit ids whose .params and .vk files are meant (e.g. porep-c2-32GiB,winning-post-32GiB).
    #[arg(long, value_delimiter = ',')]
    circuit: Vec<String>,
    /// File names from the manifest, as they are published (`v28-….params`).
    #[arg(long)]
    file: Vec<String>,
    /// A parameters.json (filecoin-proofs' format) instead of the one filecoin-proofs 19.1
    /// carries.
    #[arg(long)]
    manifest: Option<std::path::PathBuf>,
}

/// Run a `params` subcommand.
pub(crate) async fn run(command: ParamsCommand) -> anyhow::Result<ExitCode> {
    match command {
        ParamsCommand::Generate {
            kind,
            circuit,
            sector_size,
            synthetic,
            blocks,
            constraints,
            force,
            device,
            seed,
            params,
        } => {
            let spec = match (circuit, kind) {
                (Some(id), _) => snarkflow_circuits::parse_circuit_id(&id)
                    .with_context(|| format!("{id:?} is not a circuit id this build knows"))?,
                (None, Some(kind)) => match snarkflow_circuits::kind_named(&kind) {
                    Some(k) if snarkflow_circuits::kind_info(k).is_some_and(|i| i.filecoin) => {
                        filecoin_spec_of(k, sector_size.as_deref(), synthetic)?
                    }
                    _ => spec_of(&kind, blocks, constraints)?,
                },
                (None, None) => anyhow::bail!("give --kind (with its size) or --circuit"),
            };
            let store =
                ParamStore::new(params.dir(), snarkflow_circuits::catalog()).with_param_device(param_device(&device)?);
            let started = std::time::Instant::now();
            let existed = store.params_path(&spec).exists() && !force;
            let path = tokio::task::spawn_blocking(move || match seed {
                Some(seed) => {
                    use rand::SeedableRng;
                    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
                    store.generate_with(&spec, force, snarkflow_prover::ToxicWaste::random(&mut rng))
                }
                None => store.generate(&spec, force),
            })
            .await??;
            if existed {
                println!("{} already present (--force regenerates)", path.display());
            } else {
                println!(
                    "{} ({:.1} s) — RANDOM parameters, not a trusted setup: tests and benchmarks only",
                    path.display(),
                    started.elapsed().as_secs_f64()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ParamsCommand::Check { which, params } => {
            let manifest = manifest(which.manifest.as_deref())?;
            let names = wanted(&params.dir(), &manifest, &which.circuit, &which.file)?;
            check(&params.dir(), &manifest, names)
        }
        ParamsCommand::Fetch { from, sector_size, which, params } => {
            let manifest = manifest(which.manifest.as_deref())?;
            let mut names = wanted(&params.dir(), &manifest, &which.circuit, &which.file)?;
            if let Some(size) = sector_size {
                names.extend(of_sector_size(&manifest, &size)?);
            }
            let source = Source::new(from);
            fetch(&params.dir(), &manifest, names, &source).await
        }
    }
}

/// `--device cpu|gpu` of `params generate`.
fn param_device(name: &str) -> anyhow::Result<snarkflow_prover::ParamDevice> {
    match name {
        "cpu" => Ok(snarkflow_prover::ParamDevice::Cpu),
        #[cfg(feature = "cuda-resident")]
        "gpu" => Ok(snarkflow_prover::ParamDevice::Gpu(
            snarkflow_prover::resident::device().map_err(|e| anyhow::anyhow!("opening GPU 0: {e}"))?,
        )),
        #[cfg(not(feature = "cuda-resident"))]
        "gpu" => anyhow::bail!("this snarkflow was built without the GPU generator (`just build-gpu`)"),
        other => anyhow::bail!("--device must be cpu or gpu, not {other:?}"),
    }
}

/// The manifest to check against: `path`, or the one filecoin-proofs 19.1 carries.
pub(crate) fn manifest(path: Option<&Path>) -> anyhow::Result<Manifest> {
    match path {
        Some(path) => Ok(Manifest::read(path)?),
        None => Ok(Manifest::builtin()),
    }
}

/// The published file names of `circuits` (circuit ids: `porep-c2-32GiB`, …) and of `files`.
pub(crate) fn wanted(
    dir: &Path,
    manifest: &Manifest,
    circuits: &[String],
    files: &[String],
) -> anyhow::Result<Vec<String>> {
    let store = ParamStore::new(dir, snarkflow_circuits::catalog());
    let mut names = Vec::new();
    for id in circuits {
        let spec = snarkflow_circuits::parse_circuit_id(id).with_context(|| format!("unknown circuit id {id:?}"))?;
        for path in [store.params_path(&spec), store.vk_path(&spec)] {
            names.push(path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned());
        }
    }
    names.extend(files.iter().cloned());
    for name in &names {
        if manifest.get(name).is_none() {
            bail!("{name} is not a file filecoin-proofs publishes (test circuits' parameters come from `snarkflow params generate`)");
        }
    }
    names.dedup();
    Ok(names)
}

/// `params check`: each wanted file (every published file in `dir` when none is named) hashed
/// and compared; non-zero exit when one is missing or wrong.
pub(crate) fn check(dir: &Path, manifest: &Manifest, mut names: Vec<String>) -> anyhow::Result<ExitCode> {
    if names.is_empty() {
        for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if manifest.get(&name).is_some() {
                names.push(name);
            }
        }
        names.sort();
        if names.is_empty() {
            println!("{}: no published parameter files", dir.display());
        }
    }
    let mut bad = 0;
    for name in &names {
        let published = manifest.get(name).expect("wanted names are published");
        let path = dir.join(name);
        if !path.exists() {
            println!("MISSING {name}");
            bad += 1;
            continue;
        }
        let started = Instant::now();
        let found = digest_file(&path).with_context(|| format!("reading {}", path.display()))?;
        let took = started.elapsed().as_secs_f64();
        if found == published.digest {
            println!("ok      {name} ({took:.1} s)");
        } else {
            let random = if random_mark(&path).exists() { " — random test parameters (params generate)" } else { "" };
            println!("WRONG   {name}: digest {found}, published {}{random}", published.digest);
            bad += 1;
        }
    }
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `<stem>.random`, the mark `params generate` leaves beside random Filecoin parameters.
fn random_mark(path: &Path) -> PathBuf {
    path.with_extension("random")
}
