//! `snarkflow bench synth`: what a synth-worker spends on one partition, step by step, each
//! step run alone so the process's CPU time is that step's: the witness (the kind's native
//! generator where it has one, else the gadgets), the compact wire form, and the digest the
//! object store keeps. From their core-seconds, the synthesis cores a GPU proving a partition
//! every so many seconds needs.

use snarkflow_circuits::JobInput;
use snarkflow_synthesis::native::buffers;
use snarkflow_synthesis::{encode_compact, PartitionWitness, SynthesizeWitness};
use snarkflow_wire::CircuitSpec;

use super::cpu_seconds;

/// How `bench synth` runs: which partition, how often, on how many threads, and the GPU
/// speeds to size synthesis for.
pub(super) struct SynthRun {
    pub partition: u32,
    pub runs: usize,
    pub threads: Vec<usize>,
    pub gadgets: bool,
    pub gpu_seconds: Vec<f64>,
    /// Then the whole step sequence on this many partitions at once (a worker's
    /// `--concurrency`), on the largest thread count: 0 skips it.
    pub slots: usize,
    /// A fresh witness buffer each partition instead of the last one's.
    pub fresh_buffers: bool,
}

/// One step's median wall seconds and mean core-seconds over the runs.
#[derive(Clone, Copy)]
struct Cost {
    wall_s: f64,
    core_s: f64,
}

/// Median wall seconds and mean core-seconds of `runs` calls of `f`, and its last result.
fn measure<T>(runs: usize, mut f: impl FnMut() -> T) -> (T, Cost) {
    let before = cpu_seconds();
    let (out, wall_s) = super::median_of(runs, || (), |_| f());
    (out, Cost { wall_s, core_s: (cpu_seconds() - before) / runs.max(1) as f64 })
}

/// The partition's witness the synth-worker's way: native where the kind has a generator
/// (unless `gadgets`), and which path made it.
fn witness(
    spec: &CircuitSpec,
    input: Option<&JobInput>,
    partition: u32,
    gadgets: bool,
) -> anyhow::Result<(PartitionWitness, &'static str)> {
    let seed = 42;
    if !gadgets {
        if let Some(made) = snarkflow_circuits::native_witness(spec, seed, partition, input) {
            return Ok((made?, "native"));
        }
    }
    let id = spec.circuit_id();
    let made =
        snarkflow_circuits::visit_with_witness(spec, seed, partition, input, SynthesizeWitness(&id, partition))??;
    Ok((made, "gadgets"))
}

/// `snarkflow bench synth`: a markdown table per thread count, then the cores a GPU needs.
pub(super) fn synth(spec: CircuitSpec, input: Option<JobInput>, run: SynthRun) -> anyhow::Result<()> {
    let input = input.as_ref();
    println!(
        "circuit {}, partition {}, {} run(s) per step; each step alone, so the process's CPU time is the step's",
        spec.circuit_id(),
        run.partition,
        run.runs.max(1)
    );
    // as a synth-worker does: one buffer kept per slot
    buffers::keep(if run.fresh_buffers { 0 } else { run.slots.max(1) });
    let mut per_partition = Vec::new();
    for &threads in &run.threads {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
        let (rows, path, values, bytes) = pool.install(|| -> anyhow::Result<_> {
            let mut made: Option<anyhow::Result<(PartitionWitness, &str)>> = None;
            let ((), witness_cost) = measure(run.runs, || {
                // the run before hands its buffer back first, as a worker's partition does
                if let Some(Ok((w, _))) = made.take() {
                    buffers::give_back(w.aux);
                }
                made = Some(witness(&spec, input, run.partition, run.gadgets));
            });
            let (w, path) = made.expect("at least one run")?;
            let values = w.inputs.len() + w.aux.len();
            // the shape's hash only labels the payload: recorded once per host, not per partition
            let (encoded, encode_cost) = measure(run.runs, || encode_compact(&w, [0; 32]));
            buffers::give_back(w.aux);
            let (_, digest_cost) = measure(run.runs, || snarkflow_bus::object_digest(&encoded));
            Ok(([witness_cost, encode_cost, digest_cost], path, values, encoded.len()))
        })?;
        println!("\n{threads} thread(s): {values} values, {bytes} bytes on the wire");
        println!("| step | wall s | core-s | ns per value (core) |");
        println!("|---|---|---|---|");
        let names =
            [format!("witness ({path})"), "serialize (compact wire form)".into(), "digest (SHA-256, store)".into()];
        for (name, cost) in names.iter().zip(rows) {
            println!("| {name} | {:.3} | {:.3} | {:.1} |", cost.wall_s, cost.core_s, 1e9 * cost.core_s / values as f64);
        }
        let total = rows.iter().fold(Cost { wall_s: 0.0, core_s: 0.0 }, |t, c| Cost {
            wall_s: t.wall_s + c.wall_s,
            core_s: t.core_s + c.core_s,
        });
        println!(
            "| **per partition** | **{:.3}** | **{:.3}** | {:.1} |",
            total.wall_s,
            total.core_s,
            1e9 * total.core_s / values as f64
        );
        per_partition.push((format!("each step alone on {threads} thread(s)"), total));
    }
    if run.slots > 0 {
        let threads = run.threads.iter().copied().max().unwrap_or(1);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
        let done = run.slots * run.runs.max(1);
        let (before, started) = (cpu_seconds(), std::time::Instant::now());
        // each slot a thread of its own, as a worker's tasks are, sharing one rayon pool
        std::thread::scope(|scope| -> anyhow::Result<()> {
            let slots: Vec<_> = (0..run.slots)
                .map(|_| {
                    scope.spawn(|| -> anyhow::Result<()> {
                        for _ in 0..run.runs.max(1) {
                            let (w, _) = pool.install(|| witness(&spec, input, run.partition, run.gadgets))?;
                            let encoded = pool.install(|| encode_compact(&w, [0; 32]));
                            buffers::give_back(w.aux);
                            std::hint::black_box(snarkflow_bus::object_digest(&encoded));
                        }
                        Ok(())
                    })
                })
                .collect();
            slots.into_iter().try_for_each(|s| s.join().expect("a slot's thread panicked"))
        })?;
        let (wall, core) = (started.elapsed().as_secs_f64(), cpu_seconds() - before);
        println!(
            "\n{} slots at once on {threads} thread(s): {done} partitions in {wall:.3} s = {:.2} partitions/s, {:.3} core-s each",
            run.slots,
            done as f64 / wall,
            core / done as f64
        );
        per_partition.push((
            format!("{} slots at once on {threads} thread(s)", run.slots),
            Cost { wall_s: wall / done as f64, core_s: core / done as f64 },
        ));
    }
    println!("\nsynthesis cores to keep one GPU fed (core-s per partition ÷ the GPU's seconds per partition;");
    println!("the store's write into the broker and the broker itself are not counted):");
    for (label, total) in per_partition {
        let cores: Vec<String> =
            run.gpu_seconds.iter().map(|g| format!("{:.1} cores at {g} s per partition", total.core_s / g)).collect();
        println!("  {label}: {}", cores.join(", "));
    }
    Ok(())
}
