//! `snarkflow bench resident`: the GPU-resident prover against the other backends of this
//! build, on the same partitions with the same r and s. Prints per-phase device times and
//! whether each proof is byte-identical to the CPU prover's (and supraseal's, when built in)
//! and verifies; exits non-zero if a resident proof fails to verify or differs from another
//! backend's valid proof.

use std::path::Path;
use std::time::Instant;

#[cfg(feature = "cuda-supraseal")]
use anyhow::Context as _;
use ff::Field;
use rand::SeedableRng;
use snarkflow_circuits::JobInput;
use snarkflow_prover::memory_plan::PlanRequest;
use snarkflow_prover::resident::{ResidentKey, Timings};
use snarkflow_prover::ParamStore;
use snarkflow_synthesis::SynthesizedPartition;
use snarkflow_wire::CircuitSpec;

type Fr = blstrs::Scalar;

/// What to compare the resident proofs with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Compare {
    pub cpu: bool,
    pub supraseal: bool,
}

/// How much to run.
#[derive(Debug, Clone)]
pub(crate) struct Runs {
    /// Distinct partitions.
    pub partitions: usize,
    /// Proves per partition.
    pub runs: usize,
    /// Generate the parameters from this seed (overwriting the file).
    pub params_seed: Option<u64>,
    /// Each in turn, on the same partitions with the same r and s (the proofs must be equal).
    pub memory_plans: Vec<PlanRequest>,
    /// Then, for each card size (GiB), the plan chosen with only that much device memory free:
    /// `ballast` (a program holding all but argv[1] MiB of the device until killed) holds the
    /// rest.
    pub cards: Vec<u64>,
    pub ballast: Option<std::path::PathBuf>,
}

/// Device memory a card of this size leaves a prover, below its size: the driver's own and a
/// CUDA context (measured on 24 GB cards: ~0.8 GiB).
const CARD_UNUSABLE_MIB: u64 = 800;

/// Clears its flag when dropped.
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A process holding all but `leave_mib` of the device's free memory, killed when dropped.
struct Ballast(std::process::Child);

impl Ballast {
    fn hold(program: &Path, leave_mib: u64) -> anyhow::Result<Ballast> {
        use std::io::BufRead;
        let mut child = std::process::Command::new(program)
            .arg(leave_mib.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line)?;
        println!("CARD ballast: {}", line.trim());
        Ok(Ballast(child))
    }
}

impl Drop for Ballast {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(super) fn proof_bytes(p: &bellperson::groth16::Proof<blstrs::Bls12>) -> Vec<u8> {
    let mut out = Vec::with_capacity(snarkflow_prover::PROOF_BYTES);
    p.write(&mut out).expect("writing to a vec");
    out
}

fn row(t: &Timings) -> String {
    format!(
        "upload {:.1} spmv {:.1} ntt {:.1} (beside) l {:.1} a {:.1} b1 {:.1} b2 {:.1} wait-h {:.1} h {:.1} wait-ones {:.1} total {:.1} ms | pcie witness {:.3} GB copied {:.2} GB mapped {:.2} GB ({:.1} GB/s over the prove)",
        t.upload,
        t.spmv,
        t.ntt,
        t.msm_l,
        t.msm_a,
        t.msm_b_g1,
        t.msm_b_g2,
        t.wait_h,
        t.msm_h,
        t.wait_ones,
        t.total,
        t.h2d_witness / 1e9,
        t.h2d_copied / 1e9,
        t.h2d_mapped / 1e9,
        (t.h2d_copied + t.h2d_mapped) / 1e6 / t.total.max(1e-3),
    )
}

/// The process's peak resident set (VmHWM), GiB.
fn peak_rss_gib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / (1u64 << 20) as f64)
}

/// The parameters' file and what every plan is checked against: the verifying key, and the
/// other provers' keys when they are compared.
struct Reference {
    path: std::path::PathBuf,
    vk: bellperson::groth16::VerifyingKey<blstrs::Bls12>,
    pvk: bellperson::groth16::PreparedVerifyingKey<blstrs::Bls12>,
    cpu: Option<bellperson::groth16::Parameters<blstrs::Bls12>>,
    #[cfg(feature = "cuda-supraseal")]
    supra: Option<snarkflow_prover::supraseal::Srs>,
}

impl Reference {
    fn load(path: std::path::PathBuf, compare: Compare) -> anyhow::Result<Reference> {
        let vk = bellperson::groth16::VerifyingKey::<blstrs::Bls12>::read(std::io::BufReader::new(
            std::fs::File::open(&path)?,
        ))?;
        let pvk = bellperson::groth16::prepare_verifying_key(&vk);
        let cpu = if compare.cpu {
            let file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&path)?);
            Some(bellperson::groth16::Parameters::<blstrs::Bls12>::read(file, false)?)
        } else {
            None
        };
        #[cfg(feature = "cuda-supraseal")]
        let supra = if compare.supraseal {
            let srs = snarkflow_prover::supraseal::Srs::load(&path, false);
            Some(srs.with_context(|| format!("reading {}", path.display()))?)
        } else {
            None
        };
        #[cfg(not(feature = "cuda-supraseal"))]
        if compare.supraseal {
            anyhow::bail!("this build has no supraseal backend to compare with");
        }
        #[cfg(feature = "cuda-supraseal")]
        return Ok(Reference { path, vk, pvk, cpu, supra });
        #[cfg(not(feature = "cuda-supraseal"))]
        Ok(Reference { path, vk, pvk, cpu })
    }

    /// The other provers once on `part`, against `mine` (the first plan's proof): a COMPARE
    /// line, and whether none disagreed with a valid proof of its own.
    fn compare(
        &self,
        part: &SynthesizedPartition,
        mine: &[u8],
        (r, s): (Fr, Fr),
        mut line: String,
    ) -> anyhow::Result<bool> {
        let mut good = true;
        if let Some(params) = &self.cpu {
            let started = Instant::now();
            let cpu = snarkflow_prover::prove(part.clone(), params, r, s)?;
            let same = proof_bytes(&cpu) == mine;
            line += &format!(" | cpu {:.2} s identical {same}", started.elapsed().as_secs_f64());
            good &= same;
        }
        #[cfg(feature = "cuda-supraseal")]
        if let Some(srs) = &self.supra {
            let started = Instant::now();
            let theirs = snarkflow_prover::supraseal::prove(part, &self.vk, srs, r, s)?;
            let same = proof_bytes(&theirs) == mine;
            // with equal r and s a valid proof is unique: when the bytes differ, this says
            // which side is wrong
            let valid = snarkflow_prover::verify(&self.pvk, &theirs, part.public_inputs());
            line += &format!(" | supraseal {:.3} s identical {same} verified {valid}", started.elapsed().as_secs_f64());
            // supraseal-c2 sometimes returns a proof that does not verify (measured at 512
            // MiB: docs/benchmarks.md); that is its failure, not the resident prover's
            good &= same || !valid;
        }
        #[cfg(feature = "cuda-supraseal")]
        let compared = self.cpu.is_some() || self.supra.is_some();
        #[cfg(not(feature = "cuda-supraseal"))]
        let compared = self.cpu.is_some();
        if compared {
            println!("{line}");
        }
        Ok(good)
    }
}

/// The parameters of `spec` (made from `seed` when given, else the store's), and its shape.
fn parameters(
    store: &ParamStore,
    spec: &CircuitSpec,
    seed: Option<u64>,
) -> anyhow::Result<(std::path::PathBuf, snarkflow_synthesis::ConstraintShape)> {
    let started = Instant::now();
    let path = match seed {
        Some(seed) => {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
            store.generate_with(spec, true, snarkflow_prover::ToxicWaste::random(&mut rng))?
        }
        None => store.generate(spec, false)?,
    };
    println!("parameters {} ({:.1} s)", path.display(), started.elapsed().as_secs_f64());
    let started = Instant::now();
    let shape = store.shape(spec)?;
    let fold = shape.fold().map_or_else(String::new, |f| format!(", {f} (folded on the device)"));
    println!(
        "shape {}: {} constraints, {} inputs, {} aux, nnz {}{fold} ({:.1} s)",
        spec.circuit_id(),
        shape.num_constraints(),
        shape.num_inputs,
        shape.num_aux,
        shape.a.nnz() + shape.b.nnz() + shape.c.nnz(),
        started.elapsed().as_secs_f64()
    );
    Ok((path, shape))
}

/// For a simulated card of `card` GiB, the ballast holding the rest of the device.
fn hold_card(card: Option<u64>, ballast: &Option<std::path::PathBuf>) -> anyhow::Result<Option<Ballast>> {
    match (card, ballast) {
        (None, _) => Ok(None),
        (Some(gib), Some(program)) => {
            let leave = gib * 1024 - CARD_UNUSABLE_MIB;
            println!("CARD {gib} GiB: all but {leave} MiB of the device held by another process");
            Ok(Some(Ballast::hold(program, leave)?))
        }
        (Some(_), None) => anyhow::bail!("--cards needs --ballast"),
    }
}

/// `body` run while a thread samples the device's free memory every few milliseconds (sppark's
/// MSMs take and give back memory of their own inside a prove): its result and the least free.
fn sampling_free<T>(
    device: &snarkflow_prover::resident::Device,
    body: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(T, u64)> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let sampling = AtomicBool::new(true);
    let least_free = AtomicU64::new(u64::MAX);
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            while sampling.load(Ordering::Relaxed) {
                if let Ok((free, _)) = device.memory() {
                    least_free.fetch_min(free, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        // stops the sampler however the body ends
        let _stop = StopOnDrop(&sampling);
        body()
    })?;
    Ok((result, least_free.load(Ordering::Relaxed)))
}

/// Every partition proved with `key`: each proof checked against the first plan's (kept in
/// `first`), the other provers compared once. `false` when anything differed or failed.
fn prove_parts(
    key: &ResidentKey,
    reference: &Reference,
    parts: &[SynthesizedPartition],
    first: &mut [Option<Vec<u8>>],
    runs: usize,
    id: &str,
) -> anyhow::Result<bool> {
    let mut all_good = true;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2026);
    let plan_name = key.plan().kind.name();
    for (i, part) in parts.iter().enumerate() {
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        let mine = match prove_runs(key, &reference.vk, &reference.pvk, part, (r, s), runs, id, i) {
            Ok(Some(proof)) => proof,
            Ok(None) => {
                all_good = false;
                continue;
            }
            Err(e) => {
                // a plan that does not fit after all is a finding to print, then the next
                println!("FAILED {id} {} partition {i}: {e:#}", key.plan().kind);
                return Ok(false);
            }
        };
        if let Some(theirs) = &first[i] {
            let same = *theirs == mine;
            println!("PLANS {id} partition {i} {plan_name} identical to the first plan's proof: {same}");
            all_good &= same;
            continue;
        }
        all_good &= reference.compare(part, &mine, (r, s), format!("COMPARE {id} partition {i}"))?;
        first[i] = Some(mine);
    }
    Ok(all_good)
}

/// Run the comparison; `Ok(false)` when a proof differed or did not verify.
pub(crate) fn run(
    (spec, input, available): (CircuitSpec, Option<JobInput>, u32),
    Runs { partitions, runs, params_seed, memory_plans, cards, ballast }: Runs,
    compare: Compare,
    params_dir: &Path,
) -> anyhow::Result<bool> {
    let id = spec.circuit_id();
    let store = ParamStore::new(params_dir, snarkflow_circuits::catalog());
    let (path, shape) = parameters(&store, &spec, params_seed)?;
    let reference = Reference::load(path, compare)?;
    eprintln!("bench resident: comparison keys loaded; synthesizing {partitions} partitions");
    let parts: Vec<SynthesizedPartition> =
        super::hammer::partitions_of(&spec, input.as_ref(), available, partitions, Some(&shape))?;
    let device = snarkflow_prover::resident::Device::open(0).map_err(anyhow::Error::msg)?;
    let mut all_good = true;
    // per partition: the first plan's proof, which every later plan's must equal
    let mut first: Vec<Option<Vec<u8>>> = vec![None; parts.len()];
    let settings = memory_plans.iter().map(|&p| (p, None)).chain(cards.iter().map(|&c| (PlanRequest::Auto, Some(c))));
    for (plan, card) in settings {
        // the shared prove buffers of the key before (both lanes') are still allocated: free
        // them before the ballast counts the free memory (the loader would, but only after the
        // ballast)
        snarkflow_prover::resident::release_workspace(&device);
        let _held = hold_card(card, &ballast)?;
        let (free_before, _) = device.memory().map_err(anyhow::Error::msg)?;
        let Some(key) = load_key(&device, &reference.path, &shape, plan, &id)? else {
            // a card too small for every plan is a result, not a failure
            all_good &= card.is_some();
            continue;
        };
        let (good, least) = sampling_free(&device, || prove_parts(&key, &reference, &parts, &mut first, runs, &id))?;
        all_good &= good;
        // the device memory this plan really used at its peak, against its estimate
        println!(
            "USED {id} {}: {:.2} GiB of device memory at the peak, {:.2} GiB planned{}",
            key.plan().kind,
            free_before.saturating_sub(least.min(free_before)) as f64 / (1u64 << 30) as f64,
            key.plan().device_bytes as f64 / (1u64 << 30) as f64,
            if key.lanes() > 1 { " (for one lane; the peak includes the second's)" } else { "" }
        );
    }
    let (free_end, _) = device.memory().map_err(anyhow::Error::msg)?;
    println!(
        "PEAK {id} host RSS {:.2} GiB, device free at the end {:.2} GiB",
        peak_rss_gib(),
        free_end as f64 / (1u64 << 30) as f64
    );
    Ok(all_good)
}

/// The key in `plan`, with a line saying where it went; `None` (and a line saying why) when no
/// plan fits the device.
fn load_key(
    device: &std::sync::Arc<snarkflow_prover::resident::Device>,
    path: &Path,
    shape: &snarkflow_synthesis::ConstraintShape,
    plan: PlanRequest,
    id: &str,
) -> anyhow::Result<Option<ResidentKey>> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let (free0, total) = device.memory().map_err(anyhow::Error::msg)?;
    let started = Instant::now();
    let key = match ResidentKey::load(device, path, shape, plan) {
        Ok((_, key)) => key,
        Err(snarkflow_prover::resident::LoadError::NoPlan(e)) => {
            println!("PLAN {id} none: {e}");
            return Ok(None);
        }
        Err(e) => return Err(anyhow::Error::new(e).context("uploading parameters and shape")),
    };
    let (free1, _) = device.memory().map_err(anyhow::Error::msg)?;
    println!(
        "RESIDENT-LOAD {id} {:.2} s, key {:.2} GiB on the device, {:.2} GiB pinned on the host ({:.2} GiB used of {:.1})",
        started.elapsed().as_secs_f64(),
        gib(key.device_bytes()),
        gib(key.host_bytes()),
        gib(free0.saturating_sub(free1)),
        gib(total)
    );
    println!("PLAN {id} {} ({}), {:.2} GiB free at load", key.plan().summary(), key.plan().why, gib(free0));
    Ok(Some(key))
}

/// `runs` proves of one partition with the same r and s: each run's proof must equal the first's
/// and verify. The proof's bytes, or `None` when it failed either.
#[allow(clippy::too_many_arguments)]
fn prove_runs(
    key: &ResidentKey,
    vk: &bellperson::groth16::VerifyingKey<blstrs::Bls12>,
    pvk: &bellperson::groth16::PreparedVerifyingKey<blstrs::Bls12>,
    part: &SynthesizedPartition,
    (r, s): (blstrs::Scalar, blstrs::Scalar),
    runs: usize,
    id: &str,
    i: usize,
) -> anyhow::Result<Option<Vec<u8>>> {
    let plan = key.plan().kind.name();
    let mut times = Vec::new();
    let mut proof: Option<Vec<u8>> = None;
    let mut good = true;
    eprintln!("bench resident: partition {i}, {plan} plan, proving");
    let sequential = Instant::now();
    for run in 0..runs.max(1) {
        let (p, t) = key.prove(vk, &part.input_assignment, &part.aux_assignment, r, s)?;
        let bytes = proof_bytes(&p);
        // a device setting such as SNARKFLOW_MSM_WBITS may change between runs: each run's
        // proof must equal the first's
        let same = proof.as_ref().is_none_or(|first| *first == bytes);
        if runs > 1 {
            println!("RUN {id} {plan} partition {i} run {run} {} | same as run 0: {same}", row(&t));
        }
        good &= same;
        times.push(t);
        proof.get_or_insert(bytes);
    }
    let proof = proof.expect("one run at least");
    let sequential_ms = sequential.elapsed().as_secs_f64() * 1e3 / runs.max(1) as f64;
    if key.lanes() > 1 {
        good &= super::resident_lanes::two_lanes(
            key,
            vk,
            part,
            (r, s),
            runs,
            &proof,
            sequential_ms,
            format!("{id} {plan} partition {i}"),
        )?;
    }
    times.sort_by(|a, b| a.total.total_cmp(&b.total));
    // the lower middle: with two runs, the second (warm) one is usually the faster
    let median = times[(times.len() - 1) / 2];
    let parsed = bellperson::groth16::Proof::<blstrs::Bls12>::read(&proof[..])?;
    let verified = snarkflow_prover::verify(pvk, &parsed, part.public_inputs());
    // printed before any comparison, which may take long (or fail) on its own
    println!("RESIDENT {id} {plan} partition {i} {} | verified {verified}", row(&median));
    println!("PROOF {id} partition {i} {}", hex::encode(&proof));
    Ok((good && verified).then_some(proof))
}
