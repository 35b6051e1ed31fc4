//! `snarkflow bench`: benchmarks that print numbers, each in its own module (`hop.rs`: `hop`
//! and `shape`; `synth.rs`; `hammer.rs`; `stock_c2.rs`; `resident.rs` and `resident_lanes.rs`,
//! feature `cuda-resident`).

mod hammer;
mod hop;
#[cfg(feature = "cuda-resident")]
mod resident;
#[cfg(feature = "cuda-resident")]
mod resident_lanes;
mod stock_c2;
mod synth;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use clap::Subcommand;
use snarkflow_service::ParamsDir;

use crate::circuit_args::{porep_input, CircuitArgs};

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
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
    /// A synth-worker's steps on one partition, each alone: the witness (native where the kind
    /// has a generator), the compact wire form, the store's digest; wall and core-seconds per
    /// thread count, and the synthesis cores a GPU proving a partition every --gpu-seconds needs.
    Synth {
        #[command(flatten)]
        circuit: CircuitArgs,
        /// The partition to synthesize.
        #[arg(long, default_value_t = 0)]
        partition: u32,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Thread counts to run the steps on, each in turn (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1")]
        threads: Vec<usize>,
        /// The gadgets' witness even where the kind has a native generator.
        #[arg(long)]
        gadgets: bool,
        /// GPU seconds per partition to size synthesis for (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1.0,1.37")]
        gpu_seconds: Vec<f64>,
        /// Then every step on this many partitions at once (a synth-worker's --concurrency)
        /// on the largest --threads: partitions per second and core-seconds each (0: skip).
        #[arg(long, default_value_t = 0)]
        slots: usize,
        /// A fresh witness buffer for every partition, as before synth-workers kept theirs
        /// (by default the runs write over the buffers of the ones before, as a worker does).
        #[arg(long)]
        fresh_buffers: bool,
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
        /// A program that holds all but `argv[1]` MiB of the device's memory until killed, and
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

impl BenchCommand {
    /// The parameter directory the benchmark reads, if it reads one.
    pub(crate) fn params_dir(&self) -> Option<&ParamsDir> {
        match self {
            BenchCommand::Hop { params, .. }
            | BenchCommand::Hammer { params, .. }
            | BenchCommand::Resident { params, .. }
            | BenchCommand::StockC2 { params, .. } => Some(params),
            BenchCommand::Shape { .. } | BenchCommand::Synth { .. } => None,
        }
    }
}

/// Run one benchmark; its exit code says whether every proof it made was valid.
pub(crate) async fn run(command: BenchCommand) -> anyhow::Result<ExitCode> {
    let good = match command {
        BenchCommand::Hop { circuit, runs, prove, params } => {
            let (spec, input, _) = circuit.resolve()?;
            let params_dir = params.dir();
            tokio::task::spawn_blocking(move || hop::hop(spec, input, runs, prove, params_dir)).await??;
            true
        }
        BenchCommand::Synth { circuit, partition, runs, threads, gadgets, gpu_seconds, slots, fresh_buffers } => {
            let (spec, input, partitions) = circuit.resolve()?;
            anyhow::ensure!(partition < partitions, "partition {partition} of a circuit with {partitions} partitions");
            anyhow::ensure!(threads.iter().all(|&t| t > 0), "--threads: every count must be at least 1");
            let run = synth::SynthRun { partition, runs, threads, gadgets, gpu_seconds, slots, fresh_buffers };
            tokio::task::spawn_blocking(move || synth::synth(spec, input, run)).await??;
            true
        }
        BenchCommand::Shape { circuit } => {
            let spec = snarkflow_circuits::parse_circuit_id(&circuit)
                .with_context(|| format!("unknown circuit id {circuit:?}"))?;
            tokio::task::spawn_blocking(move || hop::shape(spec)).await??
        }
        BenchCommand::Hammer { circuit, proofs, partitions, threads, unlocked, params } => {
            let run = hammer::Run { proofs, partitions, threads, locked: !unlocked };
            let resolved = circuit.resolve()?;
            let params_dir = params.dir();
            tokio::task::spawn_blocking(move || hammer::command(resolved, run, &params_dir)).await??
        }
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
        } => {
            let circuit = circuit.resolve()?;
            let params_dir = params.dir();
            #[cfg(feature = "cuda-resident")]
            {
                let compare = resident::Compare { cpu: !no_cpu, supraseal };
                let runs = resident::Runs { partitions, runs, params_seed, memory_plans: memory_plan, cards, ballast };
                tokio::task::spawn_blocking(move || resident::run(circuit, runs, compare, &params_dir)).await??
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
        BenchCommand::StockC2 { c1, miner_id, sector_num, runs, params } => {
            let inputs =
                c1.iter().map(|f| porep_input(f, Some(miner_id), sector_num)).collect::<anyhow::Result<Vec<_>>>()?;
            let params_dir = params.dir();
            let failed = tokio::task::spawn_blocking(move || stock_c2::stock_c2(&inputs, runs, &params_dir)).await??;
            failed == 0
        }
    };
    Ok(if good { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

pub(super) fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let started = Instant::now();
    let out = f();
    (out, started.elapsed().as_secs_f64())
}

/// CPU seconds this process has used (user and system, all threads).
pub(super) fn cpu_seconds() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}

/// Median of `runs` timings of `f` (each run gets a fresh input from `make`).
pub(super) fn median_of<I, T>(runs: usize, mut make: impl FnMut() -> I, mut f: impl FnMut(I) -> T) -> (T, f64) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs.max(1) {
        let input = make();
        let (out, t) = timed(|| f(input));
        times.push(t);
        last = Some(out);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    (last.expect("at least one run"), times[times.len() / 2])
}
