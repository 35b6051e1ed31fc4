//! Subcommands.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::{Parser, Subcommand};
use serde_json::Value;
use snarkflow_prover::ParamStore;
use snarkflow_service::ParamsDir;
use snarkflow_wire::{CircuitSpec, JobKind};

use crate::circuit_args::{filecoin_spec_of, porep_input, spec_of, CircuitArgs};
use crate::client::Client;

/// snarkflow: distributed Groth16 proving.
#[derive(Debug, Parser)]
#[command(name = "snarkflow", version)]
pub(crate) struct Cli {
    /// Gateway base URL.
    #[arg(long, global = true, env = "SNARKFLOW_GATEWAY_URL", default_value = "http://127.0.0.1:8080")]
    gateway: String,
    /// File holding the API token to send (default: `.state/api-token` here if it exists,
    /// else `~/.config/snarkflow/api-token`); `SNARKFLOW_API_TOKEN` wins over any file.
    #[arg(long, global = true, env = "SNARKFLOW_API_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// PEM CA certificate to trust for an HTTPS gateway (besides the system's).
    #[arg(long, global = true, env = "SNARKFLOW_CA_CERT")]
    ca_cert: Option<PathBuf>,
    /// The prover for local proving commands (benchmarks, `proof --verify` aside): one this
    /// build has (`cuda-resident`, `cuda-supraseal`, `cuda`, `cpu`); default the first of those.
    #[arg(long, global = true, env = "SNARKFLOW_BACKEND")]
    backend: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Submit a job; with --wait, follow it to the end.
    Submit(crate::submit::SubmitArgs),
    /// Show a job's state, progress, timings and bytes.
    Status { id: String },
    /// List jobs, newest first.
    List {
        #[arg(long)]
        state: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Download a finished job's proof (192 bytes per partition, in partition order).
    Proof {
        id: String,
        #[arg(short, long)]
        output: PathBuf,
        /// Also verify every partition proof locally against the parameter directory's
        /// verifying key and the natively recomputed public inputs.
        #[arg(long)]
        verify: bool,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// Cancel a job that has not finished.
    Cancel { id: String },
    /// The seed-style waterfall and GPU-utilization report of one job or a time window.
    Waterfall(crate::waterfall::WaterfallArgs),
    /// Trace tools.
    Traces {
        #[command(subcommand)]
        command: TracesCommand,
    },
    /// Benchmarks that print numbers.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Filecoin test inputs made with filecoin-proofs (no lotus needed).
    Filecoin {
        #[command(subcommand)]
        command: crate::filecoin::FilecoinCommand,
    },
    /// Groth16 parameter files.
    Params {
        #[command(subcommand)]
        command: ParamsCommand,
    },
    /// Operator tasks: the gateway's API tokens.
    Admin {
        #[command(subcommand)]
        command: crate::admin::AdminCommand,
    },
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// The synth → prove hop in raw and compact form on one partition: bytes, synthesis vs
    /// witness-only synthesis, encode/decode, rebuild, and (with --prove) proving.
    Hop {
        #[command(flatten)]
        circuit: CircuitArgs,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Also prove the rebuilt partition (generates parameters if missing).
        #[arg(long)]
        prove: bool,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// Hammer this process's device: many proofs of a few distinct partitions from several
    /// threads at once, every proof verified; exits non-zero if any proof is invalid. By
    /// default the threads take turns on the device as a gpu-worker's slots do; --unlocked
    /// lets them prove concurrently (what several stock processes on one GPU do).
    Hammer {
        #[command(flatten)]
        circuit: CircuitArgs,
        /// Proofs in all.
        #[arg(long, default_value_t = 64)]
        proofs: usize,
        /// Distinct partitions (synthesized once, proved in turn).
        #[arg(long, default_value_t = 4)]
        partitions: usize,
        /// Threads proving at once.
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// No device lock: the threads' proofs run on the device concurrently.
        #[arg(long)]
        unlocked: bool,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// The GPU-resident prover (`cuda-resident` builds) on a few partitions, with the same r
    /// and s as the CPU prover (and supraseal, with --supraseal): per-phase device times, and
    /// whether every proof is byte-identical and verifies (exit code 1 if not). Generates
    /// random parameters when missing.
    Resident {
        #[command(flatten)]
        circuit: CircuitArgs,
        /// Distinct partitions (synthesized once each).
        #[arg(long, default_value_t = 2)]
        partitions: usize,
        /// Resident proves per partition (the median's phases are printed).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Skip the CPU prover (its proofs take minutes past a few million constraints).
        #[arg(long)]
        no_cpu: bool,
        /// Compare with supraseal-c2 too (builds with cuda-supraseal).
        #[arg(long)]
        supraseal: bool,
        /// Generate the (random) parameters from this seed, overwriting any file: the same
        /// seed makes the same parameters on any host, so proofs can be compared across hosts.
        #[arg(long)]
        params_seed: Option<u64>,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// The stock path: filecoin-proofs' own `seal_commit_phase2` in-process on a C1 output
    /// (Curio/lotus-bench envelope or bare C1 JSON), timed, for comparison with snarkflow.
    StockC2 {
        /// C1 files (`{"SectorNum", "Phase1Out", "SectorSize"}` or bare C1 JSON); repeat or
        /// list several for a stream of distinct proofs.
        #[arg(long, num_args = 1.., required = true)]
        c1: Vec<PathBuf>,
        #[arg(long)]
        miner_id: u64,
        /// Sector number, for a bare C1 JSON (the envelope carries it).
        #[arg(long)]
        sector_num: Option<u64>,
        /// Proofs to run back to back.
        #[arg(long, default_value_t = 1)]
        runs: usize,
        #[command(flatten)]
        params: ParamsDir,
    },
}

#[derive(Debug, Subcommand)]
enum TracesCommand {
    /// Receive OTLP/HTTP spans (point OTEL_EXPORTER_OTLP_ENDPOINT here) and append them to a
    /// file as OTLP/JSON, for `snarkflow waterfall --otlp-file` without Jaeger.
    Collect {
        #[arg(long, default_value = "127.0.0.1:4318")]
        listen: std::net::SocketAddr,
        #[arg(long, short)]
        out: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum ParamsCommand {
    /// Generate random (NOT trusted-setup) parameters for a test circuit, ahead of time.
    /// Filecoin kinds get filecoin-proofs' file names (`v28-<circuit id>.params/.vk/.meta`).
    Generate {
        /// Circuit kind: sha256-chain, dense-chain, porep-c2, snap-update, window-post,
        /// winning-post.
        #[arg(long, alias = "proof")]
        kind: String,
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
    /// Put the production parameter files a node needs into its directory from a directory
    /// (a mount, another node's cache) or an HTTP(S) mirror: resumable, each file checked
    /// against its published digest before it is installed. Never generates parameters.
    Fetch {
        /// A directory, or the base URL of a mirror (`https://mirror/params`: files are
        /// `<base>/<file name>`).
        #[arg(long)]
        from: String,
        #[command(flatten)]
        which: ParamFiles,
        #[command(flatten)]
        params: ParamsDir,
    },
}

/// Which published parameter files a `params` command acts on.
#[derive(Debug, clap::Args)]
struct ParamFiles {
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

impl Cli {
    /// The parameter directory the command uses, if it uses one (`main` points
    /// filecoin-proofs at it before any thread exists).
    pub(crate) fn params_dir(&self) -> Option<&ParamsDir> {
        match &self.command {
            Command::Proof { params, .. }
            | Command::Bench { command: BenchCommand::Hop { params, .. } }
            | Command::Bench { command: BenchCommand::Hammer { params, .. } }
            | Command::Bench { command: BenchCommand::Resident { params, .. } }
            | Command::Bench { command: BenchCommand::StockC2 { params, .. } }
            | Command::Params { command: ParamsCommand::Generate { params, .. } } => Some(params),
            _ => None,
        }
    }
}

pub(crate) async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(name) = &cli.backend {
        let backend =
            snarkflow_prover::Backend::parse(name).ok_or_else(|| anyhow::anyhow!("unknown --backend {name:?}"))?;
        snarkflow_prover::backend::select(backend).map_err(anyhow::Error::msg)?;
    }
    let client = Client::new(&cli.gateway, crate::client::api_token(cli.token_file.as_ref())?, cli.ca_cert.as_deref())?;
    match cli.command {
        Command::Admin { command } => crate::admin::run(command),
        Command::Submit(args) => crate::submit::submit(&client, args).await,
        Command::Status { id } => {
            println!("{}", serde_json::to_string_pretty(&client.status(&id).await?)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::List { state, limit } => {
            let jobs = client.list(state.as_deref(), limit).await?;
            for job in jobs["jobs"].as_array().into_iter().flatten() {
                println!(
                    "{}  {:<12} {:<22} {}",
                    job["id"].as_str().unwrap_or("?"),
                    job["state"].as_str().unwrap_or("?"),
                    job["circuit_id"].as_str().unwrap_or("?"),
                    job["priority"].as_str().unwrap_or("?")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Proof { id, output, verify, params } => {
            let bytes = client.proof(&id).await?;
            std::fs::write(&output, &bytes).with_context(|| format!("writing {}", output.display()))?;
            println!("wrote {} bytes ({} partition proofs) to {}", bytes.len(), bytes.len() / 192, output.display());
            if verify {
                let job = client.status(&id).await?;
                verify_locally(&job, &bytes, params.dir())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Cancel { id } => {
            let job = client.cancel(&id).await?;
            println!("job {} is {}", id, job["state"].as_str().unwrap_or("?"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Waterfall(args) => {
            crate::waterfall::waterfall(args, &client).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { command: BenchCommand::Hop { circuit, runs, prove, params } } => {
            let (spec, input, _) = circuit.resolve()?;
            let params_dir = params.dir();
            tokio::task::spawn_blocking(move || crate::bench::hop(spec, input, runs, prove, params_dir)).await??;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { command: BenchCommand::Hammer { circuit, proofs, partitions, threads, unlocked, params } } => {
            let (spec, input, available) = circuit.resolve()?;
            let params_dir = params.dir();
            let summary = tokio::task::spawn_blocking(move || -> anyhow::Result<crate::bench::HammerSummary> {
                let report = snarkflow_prover::device::probe().map_err(anyhow::Error::msg)?;
                println!(
                    "device: {} backend, {} ({}), self-test {:.2} s",
                    report.backend,
                    report.label(),
                    report.names(),
                    report.self_test_seconds
                );
                let params = ParamStore::new(&params_dir, snarkflow_circuits::catalog()).get(&spec, false)?;
                let parts = crate::bench::hammer_partitions(&spec, input.as_ref(), available, partitions)?;
                println!(
                    "hammer: {} x {proofs} proofs of {} distinct partitions, {threads} threads, {}",
                    spec.circuit_id(),
                    parts.len(),
                    if unlocked {
                        "UNLOCKED (concurrent device use)"
                    } else {
                        "locked (one partition on the device at a time)"
                    }
                );
                Ok(crate::bench::hammer(&params, &parts, proofs, threads, !unlocked))
            })
            .await??;
            println!(
                "HAMMER backend {} threads {threads} {} proofs {} invalid {} errors {} wall {:.2} s => {:.1} valid proofs/min; median prove {:.3} s",
                snarkflow_prover::backend_name(),
                if unlocked { "unlocked" } else { "locked" },
                summary.proofs,
                summary.invalid,
                summary.errors,
                summary.wall_s,
                60.0 * (summary.proofs - summary.invalid - summary.errors) as f64 / summary.wall_s,
                summary.median_prove_s
            );
            if summary.invalid + summary.errors > 0 {
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            command: BenchCommand::Resident { circuit, partitions, runs, no_cpu, supraseal, params_seed, params },
        } => {
            let circuit = circuit.resolve()?;
            let params_dir = params.dir();
            #[cfg(feature = "cuda-resident")]
            {
                let compare = crate::bench_resident::Compare { cpu: !no_cpu, supraseal };
                let runs = crate::bench_resident::Runs { partitions, runs, params_seed };
                let good = tokio::task::spawn_blocking(move || {
                    crate::bench_resident::run(circuit, runs, compare, &params_dir)
                })
                .await??;
                Ok(if good { ExitCode::SUCCESS } else { ExitCode::FAILURE })
            }
            #[cfg(not(feature = "cuda-resident"))]
            {
                let _ = (circuit, partitions, runs, no_cpu, supraseal, params_seed, params_dir);
                anyhow::bail!("this snarkflow was built without the cuda-resident backend (`just build-gpu`)")
            }
        }
        Command::Filecoin { command } => crate::filecoin::run(command).await,
        Command::Traces { command: TracesCommand::Collect { listen, out } } => {
            crate::waterfall::collect(listen, out).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { command: BenchCommand::StockC2 { c1, miner_id, sector_num, runs, params } } => {
            let inputs =
                c1.iter().map(|f| porep_input(f, Some(miner_id), sector_num)).collect::<anyhow::Result<Vec<_>>>()?;
            let params_dir = params.dir();
            let failed =
                tokio::task::spawn_blocking(move || crate::bench::stock_c2(&inputs, runs, &params_dir)).await??;
            if failed > 0 {
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Params {
            command:
                ParamsCommand::Generate { kind, sector_size, synthetic, blocks, constraints, force, device, seed, params },
        } => {
            let spec = match JobKind::parse(&kind) {
                Some(k) if snarkflow_circuits::takes_input(k) => {
                    filecoin_spec_of(k, sector_size.as_deref(), synthetic)?
                }
                _ => spec_of(&kind, blocks, constraints)?,
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
        Command::Params { command: ParamsCommand::Check { which, params } } => {
            let manifest = crate::params::manifest(which.manifest.as_deref())?;
            let names = crate::params::wanted(&params.dir(), &manifest, &which.circuit, &which.file)?;
            crate::params::check(&params.dir(), &manifest, names)
        }
        Command::Params { command: ParamsCommand::Fetch { from, which, params } } => {
            let manifest = crate::params::manifest(which.manifest.as_deref())?;
            let names = crate::params::wanted(&params.dir(), &manifest, &which.circuit, &which.file)?;
            crate::params::fetch(&params.dir(), &manifest, names, &from).await
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

fn verify_locally(job: &Value, bytes: &[u8], params_dir: PathBuf) -> anyhow::Result<()> {
    let spec = CircuitSpec::parse_circuit_id(job["circuit_id"].as_str().context("job has no circuit id")?)
        .context("unknown circuit id")?;
    if snarkflow_circuits::verified_whole(spec.kind()) {
        bail!(
            "local --verify covers the synthetic kinds; the gateway verified this {} proof with filecoin-proofs \
             before marking the job done",
            spec.kind().as_str()
        );
    }
    let seed = job["seed"].as_u64().context("job has no seed")?;
    let store = ParamStore::new(params_dir, snarkflow_circuits::catalog());
    let params = store.get(&spec, false)?;
    let partitions = (bytes.len() / 192) as u32;
    let inputs = snarkflow_circuits::public_inputs(&spec, seed, partitions, None)?;
    for (i, (chunk, inputs)) in bytes.chunks(192).zip(&inputs).enumerate() {
        let proof = bellperson::groth16::Proof::<blstrs::Bls12>::read(chunk).context("malformed proof")?;
        if !snarkflow_prover::verify(&params.pvk, &proof, inputs) {
            bail!("partition {i} proof does NOT verify");
        }
    }
    println!("verified {} partition proofs locally", bytes.len() / 192);
    Ok(())
}
