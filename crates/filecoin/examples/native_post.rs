//! Native vs gadget WindowPoSt / WinningPoSt witness on one partition of sparse sectors
//!: wall and core-seconds of witness-only synthesis through the gadgets and of the
//! native generator at several thread counts, the native witness checked equal to the gadgets'.
//! A WindowPoSt partition with fewer sectors than it holds is padded with its last sector, as
//! filecoin-proofs does, so a couple of sectors give a full-size partition.
//!
//! ```text
//! cargo run --release -p snarkflow-filecoin --example native_post -- 32GiB window --threads 1,4,16
//! cargo run --release -p snarkflow-filecoin --example native_post -- 32GiB window --sectors 2349 --data random --scalars
//! ```
//!
//! `--data random` gives each sector's tree random subtrees where no challenge opens it (as a
//! sealed sector's), so sectors share no siblings; `--scalars` prints what the prover's MSMs see
//! of the native witness instead of timing it.

mod common;

use rand::SeedableRng;
use snarkflow_filecoin::post::PostKind;
use snarkflow_filecoin::sparse::SectorData;
use snarkflow_synthesis::SynthesizeWitness;

use common::{measure, sector_size, threads};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let size_name = args.first().map(String::as_str).unwrap_or("2KiB");
    let size = sector_size(size_name)?;
    let kind = match args.get(1).map(String::as_str).unwrap_or("window") {
        "window" => PostKind::Window,
        "winning" => PostKind::Winning,
        other => anyhow::bail!("unknown PoSt kind {other} (window or winning)"),
    };
    let sectors: u64 = flag("--sectors").map_or(Ok(2), |r| r.parse())?;
    let threads = threads(flag("--threads"))?;
    let ids: Vec<u64> = if kind == PostKind::Winning { vec![1] } else { (1..=sectors).collect() };
    let data = match flag("--data").as_deref() {
        None | Some("zeros") => SectorData::Zeros,
        Some("random") => SectorData::Random,
        Some(other) => anyhow::bail!("--data {other}: zeros or random"),
    };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let (request, fixture_s, _) =
        measure(|| snarkflow_filecoin::sparse_post::post_request_of(kind, size, 1000, &ids, data, &mut rng));
    let input = kind.parse(request?.as_object().expect("an object"))?.input;
    println!(
        "{size_name} {}, one partition of {} sparse sector(s), {data:?} (fixture {fixture_s:.1} s); {} cores here",
        if kind == PostKind::Window { "WindowPoSt" } else { "WinningPoSt" },
        ids.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if args.iter().any(|a| a == "--scalars") {
        let (native, wall, _) = measure(|| kind.native_witness(&input, 0, "post"));
        println!("native witness in {wall:.1} s");
        common::scalar_report(&native?.aux);
        return Ok(());
    }
    let (gadgets, wall, cpu) = measure(|| kind.visit_partition(&input, 0, SynthesizeWitness("post", 0)));
    let gadgets = gadgets??;
    println!("witness-only gadgets: {wall:.4} s wall, {cpu:.4} core-s; {} aux values", gadgets.aux.len());
    for &n in &threads {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build()?;
        let (native, wall, native_cpu) = measure(|| pool.install(|| kind.native_witness(&input, 0, "post")));
        let native = native?;
        if let Some(difference) = native.difference(&gadgets) {
            anyhow::bail!("the native witness differs from the gadgets': {difference}");
        }
        println!(
            "  native, {n:>2} threads: {wall:.4} s wall, {native_cpu:.4} core-s = {:.3}× the gadgets' core-s; equal to the gadgets'",
            native_cpu / cpu
        );
    }
    Ok(())
}
