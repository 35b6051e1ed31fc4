//! Subcommands.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::{Parser, Subcommand};
use serde_json::{json, Value};
use snarkflow_circuits::PartitionCircuit;
use snarkflow_prover::ParamStore;
use snarkflow_wire::{CircuitSpec, JobKind};

use crate::client::Client;

/// snarkflow: distributed Groth16 proving.
#[derive(Debug, Parser)]
#[command(name = "snarkflow", version)]
pub struct Cli {
    /// Gateway base URL.
    #[arg(long, global = true, env = "SNARKFLOW_GATEWAY_URL", default_value = "http://127.0.0.1:8080")]
    gateway: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Submit a job; with --wait, follow it to the end.
    Submit(SubmitArgs),
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
        #[arg(long, env = "SNARKFLOW_PARAMS_DIR")]
        params_dir: Option<PathBuf>,
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
        command: FilecoinCommand,
    },
    /// Groth16 parameter files.
    Params {
        #[command(subcommand)]
        command: ParamsCommand,
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
        #[arg(long, env = "SNARKFLOW_PARAMS_DIR")]
        params_dir: Option<PathBuf>,
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
        #[arg(long, env = "SNARKFLOW_PARAMS_DIR")]
        params_dir: Option<PathBuf>,
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
        #[arg(long, env = "SNARKFLOW_PARAMS_DIR")]
        params_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum FilecoinCommand {
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
        #[arg(long, env = "SNARKFLOW_PARAMS_DIR")]
        params_dir: Option<PathBuf>,
    },
}

/// Where a Filecoin job's `input` comes from (submit, bench hop).
#[derive(Debug, clap::Args)]
struct FilecoinInputArgs {
    /// porep-c2: the C1 file as Curio/lotus-bench write it (`{"SectorNum", "Phase1Out",
    /// "SectorSize"}`), or the bare C1 JSON (then give --sector-num).
    #[arg(long)]
    c1: Option<PathBuf>,
    /// porep-c2: the storage provider's actor id (1000 for f01000).
    #[arg(long)]
    miner_id: Option<u64>,
    #[arg(long)]
    sector_num: Option<u64>,
    /// Other Filecoin kinds: a JSON file holding the request's whole `input` object.
    #[arg(long, conflicts_with = "c1")]
    input: Option<PathBuf>,
}

impl FilecoinInputArgs {
    /// The request `input`, or `None` when neither --c1 nor --input was given.
    fn request_input(&self) -> anyhow::Result<Option<Value>> {
        if let Some(c1) = &self.c1 {
            return porep_input(c1, self.miner_id, self.sector_num).map(Some);
        }
        match &self.input {
            Some(path) => {
                let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
                Ok(Some(serde_json::from_slice(&text).with_context(|| format!("{} is not JSON", path.display()))?))
            }
            None => Ok(None),
        }
    }
}

/// The circuit of a job or benchmark: a synthetic kind and its size, or a Filecoin kind and its input.
#[derive(Debug, clap::Args)]
struct CircuitArgs {
    /// sha256-chain, dense-chain, porep-c2, snap-update, window-post, winning-post.
    #[arg(long)]
    kind: String,
    #[command(flatten)]
    filecoin: FilecoinInputArgs,
    /// sha256-chain: SHA-256 compressions per partition.
    #[arg(long)]
    blocks: Option<u32>,
    /// dense-chain: constraints per partition.
    #[arg(long)]
    constraints: Option<u32>,
}

impl CircuitArgs {
    /// The circuit, the parsed Filecoin input (checked as the gateway checks it) and how many
    /// partitions that input has (`u32::MAX` for the synthetic kinds: any seed is one).
    fn resolve(&self) -> anyhow::Result<(CircuitSpec, Option<snarkflow_circuits::JobInput>, u32)> {
        match JobKind::parse(&self.kind) {
            Some(k) if k.is_filecoin() => {
                let request = self
                    .filecoin
                    .request_input()?
                    .with_context(|| format!("{} needs --c1 FILE --miner-id N or --input FILE", self.kind))?;
                let obj = request.as_object().context("the input is not a JSON object")?;
                let parsed = snarkflow_filecoin::parse_request(k, obj)?;
                Ok((parsed.spec, Some(parsed.input), parsed.partitions))
            }
            _ => Ok((spec_of(&self.kind, self.blocks, self.constraints)?, None, u32::MAX)),
        }
    }
}

#[derive(Debug, clap::Args)]
struct SubmitArgs {
    #[command(flatten)]
    circuit: CircuitArgs,
    #[arg(long, default_value_t = 1)]
    partitions: u32,
    /// Witness seed (random if omitted).
    #[arg(long)]
    seed: Option<u64>,
    /// low, normal, high or critical.
    #[arg(long)]
    priority: Option<String>,
    #[arg(long)]
    idempotency_key: Option<String>,
    /// Follow the job until it finishes; exit non-zero unless it is done.
    #[arg(long)]
    wait: bool,
    /// Give up waiting after this many seconds.
    #[arg(long, default_value_t = 3600)]
    timeout_secs: u64,
}

fn filecoin_spec_of(kind: JobKind, sector_size: Option<&str>, synthetic: bool) -> anyhow::Result<CircuitSpec> {
    let size = sector_size.with_context(|| format!("--sector-size is required for {}", kind.as_str()))?;
    let sector_size = snarkflow_wire::parse_sector_size(size)
        .with_context(|| format!("unknown sector size {size:?} (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"))?;
    Ok(match kind {
        JobKind::PorepC2 => CircuitSpec::PorepC2 { sector_size, synthetic },
        JobKind::SnapUpdate => CircuitSpec::SnapUpdate { sector_size },
        JobKind::WindowPost => CircuitSpec::WindowPost { sector_size },
        _ => CircuitSpec::WinningPost { sector_size },
    })
}

/// The request `input` for `porep-c2` from a C1 file: the envelope is passed through
/// unchanged; a bare C1 JSON goes as `c1_raw` with its sector number.
fn porep_input(c1: &std::path::Path, miner_id: Option<u64>, sector_num: Option<u64>) -> anyhow::Result<Value> {
    let text = std::fs::read(c1).with_context(|| format!("reading {}", c1.display()))?;
    let file: Value = serde_json::from_slice(&text).with_context(|| format!("{} is not JSON", c1.display()))?;
    let miner_id = miner_id.context("--miner-id is required with --c1")?;
    if file.get("Phase1Out").is_some() {
        Ok(json!({ "miner_id": miner_id, "c1": file }))
    } else {
        let sector_num = sector_num.context("--sector-num is required for a bare C1 JSON (no envelope)")?;
        Ok(json!({ "miner_id": miner_id, "sector_num": sector_num, "c1_raw": file }))
    }
}

fn spec_of(kind: &str, blocks: Option<u32>, constraints: Option<u32>) -> anyhow::Result<CircuitSpec> {
    match JobKind::parse(kind) {
        Some(JobKind::Sha256Chain) => {
            Ok(CircuitSpec::Sha256Chain { blocks: blocks.context("--blocks is required for sha256-chain")? })
        }
        Some(JobKind::DenseChain) => Ok(CircuitSpec::DenseChain {
            constraints: constraints.context("--constraints is required for dense-chain")?,
        }),
        Some(k) => bail!("{} needs --sector-size", k.as_str()),
        None => {
            bail!("unknown kind {kind:?} (sha256-chain, dense-chain, porep-c2, snap-update, window-post, winning-post)")
        }
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let client = Client::new(&cli.gateway);
    match cli.command {
        Command::Submit(args) => submit(&client, args).await,
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
        Command::Proof { id, output, verify, params_dir } => {
            let bytes = client.proof(&id).await?;
            std::fs::write(&output, &bytes).with_context(|| format!("writing {}", output.display()))?;
            println!("wrote {} bytes ({} partition proofs) to {}", bytes.len(), bytes.len() / 192, output.display());
            if verify {
                let job = client.status(&id).await?;
                verify_locally(&job, &bytes, params_dir)?;
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
        Command::Bench { command: BenchCommand::Hop { circuit, runs, prove, params_dir } } => {
            let (spec, input, _) = circuit.resolve()?;
            if let Some(dir) = &params_dir {
                snarkflow_filecoin::use_parameter_dir(dir)?;
            }
            tokio::task::spawn_blocking(move || crate::bench::hop(spec, input, runs, prove, params_dir)).await??;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            command: BenchCommand::Hammer { circuit, proofs, partitions, threads, unlocked, params_dir },
        } => {
            let (spec, input, available) = circuit.resolve()?;
            let params_dir = params_dir.unwrap_or_else(ParamStore::default_dir);
            snarkflow_filecoin::use_parameter_dir(&params_dir)?;
            let summary = tokio::task::spawn_blocking(move || -> anyhow::Result<crate::bench::HammerSummary> {
                let report = snarkflow_prover::device::probe().map_err(anyhow::Error::msg)?;
                println!(
                    "device: {} backend, {} ({}), self-test {:.2} s",
                    report.backend,
                    report.label(),
                    report.names(),
                    report.self_test_seconds
                );
                let params = ParamStore::new(&params_dir).get(&spec, false)?;
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
                snarkflow_prover::BACKEND,
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
        Command::Filecoin {
            command: FilecoinCommand::Seal { out, sector_size, miner_id, sector_num, count, c1_only },
        } => {
            let size = snarkflow_wire::parse_sector_size(&sector_size)
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
        Command::Traces { command: TracesCommand::Collect { listen, out } } => {
            crate::waterfall::collect(listen, out).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { command: BenchCommand::StockC2 { c1, miner_id, sector_num, runs, params_dir } } => {
            let inputs =
                c1.iter().map(|f| porep_input(f, Some(miner_id), sector_num)).collect::<anyhow::Result<Vec<_>>>()?;
            let params_dir = params_dir.unwrap_or_else(ParamStore::default_dir);
            let failed =
                tokio::task::spawn_blocking(move || crate::bench::stock_c2(&inputs, runs, &params_dir)).await??;
            if failed > 0 {
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Params {
            command: ParamsCommand::Generate { kind, sector_size, synthetic, blocks, constraints, force, params_dir },
        } => {
            let spec = match JobKind::parse(&kind) {
                Some(k) if k.is_filecoin() => filecoin_spec_of(k, sector_size.as_deref(), synthetic)?,
                _ => spec_of(&kind, blocks, constraints)?,
            };
            let store = ParamStore::new(params_dir.unwrap_or_else(ParamStore::default_dir));
            let started = std::time::Instant::now();
            let existed = store.params_path(&spec).exists() && !force;
            let path = tokio::task::spawn_blocking(move || store.generate(&spec, force)).await??;
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
    }
}

async fn submit(client: &Client, args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let filecoin = JobKind::parse(&args.circuit.kind).is_some_and(JobKind::is_filecoin);
    let mut input = json!({ "partitions": args.partitions });
    if let Some(request) = args.circuit.filecoin.request_input()? {
        input = request;
    } else if filecoin {
        bail!("{} needs --c1 FILE --miner-id N (porep-c2) or --input FILE", args.circuit.kind);
    }
    if let Some(b) = args.circuit.blocks {
        input["blocks"] = b.into();
    }
    if let Some(c) = args.circuit.constraints {
        input["constraints"] = c.into();
    }
    if let Some(s) = args.seed {
        input["seed"] = s.into();
    }
    let mut body = json!({ "kind": args.circuit.kind, "input": input });
    if let Some(p) = args.priority {
        body["priority"] = p.into();
    }
    if let Some(k) = args.idempotency_key {
        body["idempotency_key"] = k.into();
    }
    let accepted = client.submit(&body).await?;
    let id = accepted["id"].as_str().context("gateway returned no job id")?.to_owned();
    println!("job {id} {}", accepted["state"].as_str().unwrap_or("queued"));
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    let job = wait(client, &id, Duration::from_secs(args.timeout_secs)).await?;
    print_summary(&job);
    Ok(if job["state"] == "done" { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn wait(client: &Client, id: &str, timeout: Duration) -> anyhow::Result<Value> {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} [{bar:30}] {pos}/{len} proved  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let job = client.status(id).await?;
        let p = &job["partitions"];
        bar.set_length(p["total"].as_u64().unwrap_or(0));
        bar.set_position(p["proved"].as_u64().unwrap_or(0));
        bar.set_message(format!("{} (synthesized {})", job["state"].as_str().unwrap_or("?"), p["synthesized"]));
        if matches!(job["state"].as_str(), Some("done" | "failed" | "cancelled")) {
            bar.finish_and_clear();
            return Ok(job);
        }
        if std::time::Instant::now() > deadline {
            bar.abandon();
            bail!("job {id} did not finish within {} s", timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn print_summary(job: &Value) {
    println!("job {} {}", job["id"].as_str().unwrap_or("?"), job["state"].as_str().unwrap_or("?"));
    if let Some(e) = job["error"].as_str() {
        println!("error: {e}");
    }
    println!(
        "circuit {}  partitions {}  trace {}",
        job["circuit_id"].as_str().unwrap_or("?"),
        job["partitions"]["total"],
        job["trace_id"].as_str().unwrap_or("-")
    );
    println!("timings (s, summed over partitions): {}", job["timings"]);
    println!("bytes per hop: {}", job["bytes"]);
}

fn verify_locally(job: &Value, bytes: &[u8], params_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let spec = CircuitSpec::parse_circuit_id(job["circuit_id"].as_str().context("job has no circuit id")?)
        .context("unknown circuit id")?;
    if spec.kind().is_filecoin() {
        bail!(
            "local --verify covers the synthetic kinds; the gateway verified this {} proof with filecoin-proofs \
             before marking the job done",
            spec.kind().as_str()
        );
    }
    let seed = job["seed"].as_u64().context("job has no seed")?;
    let store = ParamStore::new(params_dir.unwrap_or_else(ParamStore::default_dir));
    let params = store.get(&spec, false)?;
    for (i, chunk) in bytes.chunks(192).enumerate() {
        let proof = bellperson::groth16::Proof::<blstrs::Bls12>::read(chunk).context("malformed proof")?;
        let inputs = PartitionCircuit::with_witness(spec, seed, i as u32).public_inputs().context("no inputs")?;
        if !snarkflow_prover::verify(&params.pvk, &proof, &inputs) {
            bail!("partition {i} proof does NOT verify");
        }
    }
    println!("verified {} partition proofs locally", bytes.len() / 192);
    Ok(())
}
