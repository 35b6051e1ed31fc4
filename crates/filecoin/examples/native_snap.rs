//! Native vs gadget SnapDeals witness on random partitions: wall and core-seconds of
//! witness-only synthesis through the gadgets and of the native generator at several thread
//! counts; the native witness is checked equal to the gadgets' (same seed, same circuit).
//!
//! ```text
//! cargo run --release -p snarkflow-filecoin --example native_snap -- 32GiB --threads 1,4,16 --seeds 1
//! cargo run --release -p snarkflow-filecoin --example native_snap -- 32GiB --scalars
//! ```

mod common;

use snarkflow_filecoin::random_snap::{random_snap_partition, Witnesses};

use common::{measure, sector_size, threads};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let size_name = args.first().map(String::as_str).unwrap_or("2KiB");
    let size = sector_size(size_name)?;
    let seeds: u64 = flag("--seeds").map_or(Ok(1), |r| r.parse())?;
    let threads = threads(flag("--threads"))?;
    println!(
        "{size_name} SnapDeals, random partitions; {} cores here",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if args.iter().any(|a| a == "--scalars") {
        // what a prover's MSMs see of one random partition's native witness
        let (native, wall, _) = measure(|| random_snap_partition(size, 0, Witnesses::Native));
        let native = native?;
        println!("partition {} (h {}), native witness in {wall:.1} s", native.k, native.h);
        common::scalar_report(&native.native.expect("native asked for").aux);
        return Ok(());
    }
    for seed in 0..seeds {
        let (gadgets, wall, cpu) = measure(|| random_snap_partition(size, seed, Witnesses::Gadgets));
        let gadgets = gadgets?;
        let reference = gadgets.gadgets.expect("gadgets asked for");
        println!(
            "seed {seed} (partition {}, h {}): witness-only gadgets {wall:.4} s wall, {cpu:.4} core-s; {} aux values",
            gadgets.k,
            gadgets.h,
            reference.aux.len()
        );
        for &n in &threads {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build()?;
            let (native, wall, native_cpu) =
                measure(|| pool.install(|| random_snap_partition(size, seed, Witnesses::Native)));
            let native = native?.native.expect("native asked for");
            if let Some(difference) = native.difference(&reference) {
                anyhow::bail!("the native witness differs from the gadgets': {difference}");
            }
            println!(
                "  native, {n:>2} threads: {wall:.4} s wall, {native_cpu:.4} core-s = {:.3}× the gadgets' core-s; equal to the gadgets'",
                native_cpu / cpu
            );
        }
    }
    Ok(())
}
