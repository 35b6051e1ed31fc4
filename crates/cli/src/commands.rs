//! Subcommands.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::{Parser, Subcommand};
use serde_json::Value;
use snarkflow_prover::ParamStore;
use snarkflow_service::ParamsDir;

use crate::params::ParamsCommand;

use crate::circuit_args::{porep_input, CircuitArgs};
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
    /// What on this host would fail a job (NATS, parameter files, the device), each with what
    /// to do about it; exits non-zero when anything would.
    Doctor(crate::doctor::DoctorArgs),
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
    /// A circuit's constraint shape recorded the kind's way (PoRep: two challenges, copied)
    /// and recorded whole from its blank circuit: both times and hashes; exit code 1 if they
    /// differ.
    Shape {
        /// The circuit id (`porep-c2-32GiB`, `window-post-32GiB`, `sha256-chain-b64`, …).
        #[arg(long)]
        circuit: String,
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
        /// Memory plans to prove in, each in turn on the same partitions (their proofs must be
        /// equal): `auto` (the fastest that fits the device), `resident`, `partly-resident`,
        /// `streamed`; comma-separated.
        #[arg(long, default_value = "auto", value_delimiter = ',', value_parser = snarkflow_prover::memory_plan::PlanRequest::parse)]
        memory_plan: Vec<snarkflow_prover::memory_plan::PlanRequest>,
        /// Then simulate cards of these sizes (GiB, comma-separated): the plan `auto` chooses
        /// with only that much device memory free, the rest held by `--ballast`.
        #[arg(long, value_delimiter = ',')]
        cards: Vec<u64>,
        /// A program that holds all but argv[1] MiB of the device's memory until killed, and
        /// prints one line once it does (deploy/scripts/ballast.cu, which `device.sh memory-plans` builds).
        #[arg(long)]
        ballast: Option<std::path::PathBuf>,
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
        snarkflow_prover::backend::select(backend)?;
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
        Command::Bench { command: BenchCommand::Shape { circuit } } => {
            let spec = snarkflow_circuits::parse_circuit_id(&circuit)
                .with_context(|| format!("unknown circuit id {circuit:?}"))?;
            let same = tokio::task::spawn_blocking(move || crate::bench::shape(spec)).await??;
            Ok(if same { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Bench { command: BenchCommand::Hammer { circuit, proofs, partitions, threads, unlocked, params } } => {
            let (spec, input, available) = circuit.resolve()?;
            let params_dir = params.dir();
            let summary = tokio::task::spawn_blocking(move || -> anyhow::Result<crate::bench::HammerSummary> {
                let report = snarkflow_prover::device::probe()?;
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
            command:
                BenchCommand::Resident {
                    circuit,
                    partitions,
                    runs,
                    no_cpu,
                    supraseal,
                    params_seed,
                    memory_plan,
                    cards,
                    ballast,
                    params,
                },
        } => {
            let circuit = circuit.resolve()?;
            let params_dir = params.dir();
            #[cfg(feature = "cuda-resident")]
            {
                let compare = crate::bench_resident::Compare { cpu: !no_cpu, supraseal };
                let runs = crate::bench_resident::Runs {
                    partitions,
                    runs,
                    params_seed,
                    memory_plans: memory_plan,
                    cards,
                    ballast,
                };
                let good = tokio::task::spawn_blocking(move || {
                    crate::bench_resident::run(circuit, runs, compare, &params_dir)
                })
                .await??;
                Ok(if good { ExitCode::SUCCESS } else { ExitCode::FAILURE })
            }
            #[cfg(not(feature = "cuda-resident"))]
            {
                let _ = (
                    circuit,
                    partitions,
                    runs,
                    no_cpu,
                    supraseal,
                    params_seed,
                    memory_plan,
                    cards,
                    ballast,
                    params_dir,
                );
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
        Command::Params { command } => crate::params::run(command).await,
        Command::Doctor(args) => crate::doctor::run(args).await,
    }
}

fn verify_locally(job: &Value, bytes: &[u8], params_dir: PathBuf) -> anyhow::Result<()> {
    let spec = snarkflow_circuits::parse_circuit_id(job["circuit_id"].as_str().context("job has no circuit id")?)
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
