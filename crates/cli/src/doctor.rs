//! `snarkflow doctor`: what on this host would fail a job, checked before a job finds it, each
//! finding with what to do about it. Exits non-zero when anything would.
//!
//! Checks: NATS reached and the topology usable with the role's credentials; this host's clock
//! against the gateway's; the parameter
//! files of the circuits named, present and (for filecoin-proofs' files) the published ones;
//! the free space for them; the device, probed as a gpu-worker probes it at start (this build's
//! kernels against the device and driver, then a proof verified on it).

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snarkflow_filecoin::manifest::{Manifest, ManifestError};
use snarkflow_prover::ParamStore;
use snarkflow_service::{NatsArgs, ParamsDir};

use crate::client::Client;

#[derive(Debug, clap::Args)]
pub(crate) struct DoctorArgs {
    /// Circuits this host serves (e.g. porep-c2-32GiB,winning-post-32GiB): their parameter
    /// files must be here, and filecoin-proofs' must be the published ones.
    #[arg(long, value_delimiter = ',')]
    circuit: Vec<String>,
    /// The role whose NATS credentials these are (gateway, synth, gpu).
    #[arg(long, default_value = "gpu")]
    role: String,
    /// Skip the NATS check (a host that only generates or checks parameters).
    #[arg(long)]
    no_nats: bool,
    /// Skip the device probe (a synth-worker or gateway host).
    #[arg(long)]
    no_device: bool,
    /// Seconds to wait for NATS before saying why it cannot be reached.
    #[arg(long, default_value_t = 10)]
    nats_timeout_secs: u64,
    /// Largest difference between this host's clock and the gateway's, seconds: deadlines,
    /// queue ages and trace timings compare clocks across hosts.
    #[arg(long, default_value_t = 2.0)]
    max_clock_skew_secs: f64,
    /// Free space the parameter directory's filesystem must have, GiB: a 32 GiB PoRep's
    /// parameters are 47 GB to fetch and its recorded constraint shape 8.9 GB.
    #[arg(long, default_value_t = 10)]
    min_free_gib: u64,
    #[command(flatten)]
    nats: NatsArgs,
    #[command(flatten)]
    params: ParamsDir,
}

/// One check's verdict.
enum Finding {
    Ok(String),
    Fail { what: String, fix: String },
}

fn ok(what: impl Into<String>) -> Finding {
    Finding::Ok(what.into())
}

fn fail(what: impl Into<String>, fix: impl Into<String>) -> Finding {
    Finding::Fail { what: what.into(), fix: fix.into() }
}

pub(crate) async fn run(args: DoctorArgs, client: &Client) -> anyhow::Result<ExitCode> {
    let mut findings = Vec::new();
    if !args.no_nats {
        findings.push(nats(&args).await);
    }
    findings.push(clock(client, args.max_clock_skew_secs).await);
    findings.extend(parameters(&args.params.dir(), &args.circuit));
    findings.push(disk(&args.params.dir(), args.min_free_gib));
    if !args.no_device {
        findings.push(device().await);
    }
    let mut failed = 0;
    for finding in &findings {
        match finding {
            Finding::Ok(what) => println!("ok    {what}"),
            Finding::Fail { what, fix } => {
                failed += 1;
                println!("FAIL  {what}\n      fix: {fix}");
            }
        }
    }
    println!("{} checks, {failed} would fail a job", findings.len());
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// NATS reached with this role's credentials and the topology there to use.
async fn nats(args: &DoctorArgs) -> Finding {
    let config = match args.nats.bus_config(&args.role) {
        Ok(config) => config,
        Err(e) => return fail(format!("NATS settings: {e:#}"), "correct the --nats-* flags or the files they name"),
    };
    let url = config.url.clone();
    let why = Arc::new(Mutex::new(None::<String>));
    let seen = why.clone();
    let waiting = move |reason: &str| *seen.lock().expect("never poisoned") = Some(reason.to_owned());
    let timeout = Duration::from_secs(args.nats_timeout_secs.max(1));
    match tokio::time::timeout(timeout, snarkflow_bus::Bus::connect_reporting(config, &waiting)).await {
        Ok(Ok(_)) => ok(format!("NATS at {} reached as {}, streams and buckets usable", redact(&url), args.role)),
        Ok(Err(e)) => fail(format!("NATS at {}: {e}", redact(&url)), "correct the NATS credentials or TLS settings"),
        Err(_) => {
            let reason = why.lock().expect("never poisoned").clone().unwrap_or_else(|| "no answer".into());
            fail(
                format!("NATS at {} not usable within {} s: {reason}", redact(&url), timeout.as_secs()),
                "start nats-server, open the route to it, or (a worker role) start the gateway first: it declares the streams",
            )
        }
    }
}

/// This host's clock against the gateway's (`--gateway`); a host that cannot reach the gateway
/// over HTTP (a worker needs only NATS) is not compared, and says so.
async fn clock(client: &Client, max_skew_secs: f64) -> Finding {
    // the Date header has whole seconds: within half a second of it is agreement
    let allowed = max_skew_secs.max(0.0) + 0.5;
    match client.clock_skew().await {
        Ok(Some(skew)) if skew.abs() <= allowed => ok(format!("clock: within {:.1} s of the gateway's", skew.abs())),
        Ok(Some(skew)) => fail(
            format!(
                "clock: {:.1} s {} the gateway's (more than --max-clock-skew-secs {max_skew_secs})",
                skew.abs(),
                if skew > 0.0 { "behind" } else { "ahead of" }
            ),
            "synchronise this host's clock (chrony or systemd-timesyncd against the same servers as the fleet)",
        ),
        Ok(None) => ok("clock: the gateway sent no Date header; not compared"),
        Err(e) => ok(format!("clock: not compared, the gateway is not reachable from here ({e})")),
    }
}

/// The URL without credentials.
fn redact(url: &str) -> String {
    match url.split_once("://").and_then(|(scheme, rest)| rest.split_once('@').map(|(_, host)| (scheme, host))) {
        Some((scheme, host)) => format!("{scheme}://{host}"),
        None => url.to_owned(),
    }
}

/// Each named circuit's `.params` and `.vk` present, and the published ones where
/// filecoin-proofs publishes them.
fn parameters(dir: &Path, circuits: &[String]) -> Vec<Finding> {
    let store = ParamStore::new(dir, snarkflow_circuits::catalog());
    let manifest = Manifest::builtin();
    let mut findings = Vec::new();
    for id in circuits {
        let Some(spec) = snarkflow_circuits::parse_circuit_id(id) else {
            findings
                .push(fail(format!("{id:?} is not a circuit id this build knows"), "name circuits as porep-c2-32GiB"));
            continue;
        };
        let filecoin = snarkflow_circuits::filecoin_sector_size(&spec).is_some();
        let get = if filecoin {
            format!("snarkflow params fetch --circuit {id} --params-dir {}", dir.display())
        } else {
            format!("snarkflow params generate --circuit {id} --params-dir {}", dir.display())
        };
        for path in [store.params_path(&spec), store.vk_path(&spec)] {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            if !path.exists() {
                findings.push(fail(format!("{id}: {name} is missing from {}", dir.display()), get.clone()));
                continue;
            }
            if manifest.get(&name).is_none() {
                findings.push(ok(format!("{id}: {name} present (a test circuit's: no published digest)")));
                continue;
            }
            match manifest.check_published(&path) {
                Ok(()) => findings.push(ok(format!("{id}: {name} present, the published file"))),
                Err(e @ ManifestError::NotPublished { .. }) => findings.push(fail(
                    format!("{id}: {e}"),
                    format!("move it away, then {get} (random test parameters prove nothing the chain accepts)"),
                )),
                Err(e) => findings.push(fail(format!("{id}: {e}"), "check the file's permissions")),
            }
        }
    }
    findings
}

/// Room on the filesystem of the parameter directory (or of its nearest existing parent, before
/// it is made): fetches, generated parameters and recorded constraint shapes land there.
fn disk(dir: &Path, min_free_gib: u64) -> Finding {
    let Some(existing) = dir.ancestors().find(|d| d.exists()) else {
        return fail(format!("disk: no part of {} exists", dir.display()), "create the parameter directory");
    };
    match fs2::available_space(existing) {
        Ok(free) if free >= min_free_gib << 30 => {
            ok(format!("disk: {:.1} GiB free for {}", free as f64 / (1u64 << 30) as f64, dir.display()))
        }
        Ok(free) => fail(
            format!(
                "disk: {:.1} GiB free for {}, under --min-free-gib {min_free_gib}",
                free as f64 / (1u64 << 30) as f64,
                dir.display()
            ),
            "free space there, or point --params-dir at a larger filesystem",
        ),
        Err(e) => fail(format!("disk: reading the free space of {}: {e}", existing.display()), "check the path"),
    }
}

/// The device probe a gpu-worker runs at start.
async fn device() -> Finding {
    match tokio::task::spawn_blocking(snarkflow_prover::device::probe).await {
        Ok(Ok(report)) => ok(format!(
            "device: {} backend on {}, self-test proof verified in {:.1} s",
            report.backend,
            report.label(),
            report.self_test_seconds
        )),
        Ok(Err(e)) => fail(
            format!("device: {e}"),
            "install a driver this build supports, or use the build for this GPU (docs/gpu.md, \"Your GPU\")",
        ),
        Err(panic) => fail(format!("device: the probe panicked: {panic}"), "report it with the output above"),
    }
}
