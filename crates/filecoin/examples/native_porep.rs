//! Native vs gadget PoRep witness on one partition of a sparse CC sector: wall and
//! core-seconds of full synthesis, witness-only synthesis through the gadgets, and the native
//! generator at several thread counts; the native witness is checked equal to the gadgets'.
//!
//! ```text
//! cargo run --release -p snarkflow-filecoin --example native_porep -- 2KiB [--full] [--threads 1,2] [--runs 5]
//! cargo run --release -p snarkflow-filecoin --example native_porep -- 32GiB --threads 1,4,16 --runs 1
//! cargo run --release -p snarkflow-filecoin --example native_porep -- 32GiB --scalars
//! ```
//!
//! `--scalars` prints instead what a prover's MSMs see of the native witness: how many aux values
//! are 0, 1 or neither, and how the others are distributed (distinct values, the most frequent,
//! how many fit in 13 bits): a Pippenger bucket method slows down when many scalars repeat.
//! `--data random` makes the fixture a sector holding random data (`SectorData::Random`);
//! `--c1 PATH` reads a C1 envelope instead (a sealed sector's `c1.json`, from
//! `snarkflow filecoin seal`), the size then the envelope's; `--partition K` picks the partition.

use std::time::Instant;

mod common;
use common::scalar_report;

use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use snarkflow_filecoin::porep::{self, PorepInput};
use snarkflow_filecoin::sparse::SectorData;
use snarkflow_synthesis::{Synthesize, SynthesizeWitness};

fn cpu_seconds() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}

/// Median wall seconds and mean CPU seconds of `runs` calls of `f`, and its last result.
fn measure<T>(runs: usize, mut f: impl FnMut() -> T) -> (T, f64, f64) {
    let (mut walls, cpu_before, mut last) = (Vec::new(), cpu_seconds(), None);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        last = Some(f());
        walls.push(started.elapsed().as_secs_f64());
    }
    let cpu = (cpu_seconds() - cpu_before) / runs.max(1) as f64;
    walls.sort_by(|a, b| a.total_cmp(b));
    (last.expect("one run at least"), walls[walls.len() / 2], cpu)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let size = args.first().map(String::as_str).filter(|a| !a.starts_with("--")).unwrap_or("2KiB");
    let full = args.iter().any(|a| a == "--full");
    let runs: usize = flag("--runs").map_or(Ok(3), |r| r.parse())?;
    let threads: Vec<usize> =
        flag("--threads").unwrap_or_else(|| "1,2".into()).split(',').map(str::parse).collect::<Result<_, _>>()?;
    let registered = match size {
        "2KiB" => RegisteredSealProof::StackedDrg2KiBV1_1,
        "8MiB" => RegisteredSealProof::StackedDrg8MiBV1_1,
        "512MiB" => RegisteredSealProof::StackedDrg512MiBV1_1,
        "32GiB" => RegisteredSealProof::StackedDrg32GiBV1_1,
        "64GiB" => RegisteredSealProof::StackedDrg64GiBV1_1,
        other => anyhow::bail!("unknown sector size {other}"),
    };
    let data = match flag("--data").as_deref() {
        None | Some("zeros") => SectorData::Zeros,
        Some("random") => SectorData::Random,
        Some(other) => anyhow::bail!("--data {other}: zeros or random"),
    };
    let k: usize = flag("--partition").map_or(Ok(0), |k| k.parse())?;
    let (miner_id, sector_id) = (1000, 1);
    let started = Instant::now();
    let (input, what) = match flag("--c1") {
        Some(path) => {
            let parsed = porep::parse_envelope(miner_id, &std::fs::read(&path)?)?;
            (parsed.input, format!("the sealed sector of {path}"))
        }
        None => {
            let prover_id = snarkflow_filecoin::prover_id(miner_id);
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
            let c1 = snarkflow_filecoin::sparse::porep_c1_of(registered, prover_id, sector_id, data, &mut rng)?;
            (PorepInput { miner_id, sector_id, prover_id, c1 }, format!("a sparse {size} sector ({data:?})"))
        }
    };
    println!(
        "PoRep, partition {k} of {what} (input {:.1} s); median wall of {runs} runs; {} cores here",
        started.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let full_s = if full {
        let (synthesized, wall, cpu) =
            measure(runs, || porep::visit_partition(&input, k, Synthesize("porep", k as u32)));
        let synthesized = synthesized??;
        println!(
            "full synthesis (gadgets, a·b·c): {wall:.4} s wall, {cpu:.4} core-s; {} constraints",
            synthesized.num_constraints()
        );
        Some(cpu)
    } else {
        None
    };
    if args.iter().any(|a| a == "--scalars") {
        let native = porep::native_witness(&input, k, "porep")?;
        scalar_report(&native.aux);
        return Ok(());
    }
    if args.iter().any(|a| a == "--native-only") {
        // profiling: no gadget run, so nothing to compare with
        for &n in &threads {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build()?;
            let (native, wall, cpu) = measure(runs, || pool.install(|| porep::native_witness(&input, k, "porep")));
            println!(
                "native, {n:>2} threads: {wall:.4} s wall, {cpu:.4} core-s; {} aux values (not compared)",
                native?.aux.len()
            );
        }
        return Ok(());
    }
    let (gadget, gadget_wall, gadget_cpu) =
        measure(runs, || porep::visit_partition(&input, k, SynthesizeWitness("porep", k as u32)));
    let gadget = gadget??;
    let ratio = |cpu: f64| full_s.map_or("—".into(), |f| format!("{:.3}×", cpu / f));
    println!(
        "witness-only (gadgets): {gadget_wall:.4} s wall, {gadget_cpu:.4} core-s; {} aux values; {} of full",
        gadget.aux.len(),
        ratio(gadget_cpu)
    );
    for &n in &threads {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build()?;
        let (native, wall, cpu) = measure(runs, || pool.install(|| porep::native_witness(&input, k, "porep")));
        let native = native?;
        if let Some(what) = native.difference(&gadget) {
            anyhow::bail!("the native witness differs from the gadgets' ({what})");
        }
        println!(
            "native, {n:>2} threads: {wall:.4} s wall, {cpu:.4} core-s; {:.3}× the gadgets' witness-only core-s, {} of full; latency {:.1}× shorter than witness-only",
            cpu / gadget_cpu,
            ratio(cpu),
            gadget_wall / wall
        );
    }
    println!("native witness equal to the gadgets' value for value at every thread count");
    Ok(())
}
