//! The gpu-worker: the proving [`TaskHandler`](snarkflow_runtime::TaskHandler) on the worker runtime. It
//! owns one proving device (`device`: lock, probe, re-probe, fatal exit), keeps Groth16
//! parameters and constraint shapes loaded, and per partition fetches the payload (digest
//! checked), prepares it (`prepare`: decode, rebuild a, b, c), proves it on the device,
//! verifies the proof against the verifying key, reports it and deletes the object. A proof
//! that does not verify is never reported.
//!
//! `1 + --prefetch` runtime slots pull partitions, so the next is fetched and rebuilt while
//! one is proved; the device gate keeps one partition on the device at a time, the most urgent
//! waiting going next. With `SNARKFLOW_PROVE_LANES=2` (the resident prover; opt-in, being
//! measured) two partitions are on the device at once and there is a slot more.
//!
//! Module map:
//! - `prove.rs`: the stage ([`TaskHandler`](snarkflow_runtime::TaskHandler)): fetch (digest
//!   checked), prepare, prove under the device gate, verify against the verifying key, publish
//!   `PartitionProved`, delete the object; the memory estimate (from the constraint shape, or
//!   the witness alone for a prover that holds the shape on the device); a wrong proof on a GPU
//!   is proved once more, a second one fails the job.
//! - `prepare.rs`: decode and check a payload; a compact witness is either decoded (in parallel
//!   pieces) and uploaded to a prover holding the shape on the device before its turn there, or
//!   a, b, c are rebuilt from the shape. Partitions of at least 2^24 constraints are prepared one
//!   at a time, each with every rebuild thread (`--rebuild-threads`).
//! - `shapes.rs`: constraint shapes kept loaded. A shape is recorded once per circuit from the
//!   blank circuit through its kind (`ProofKind::record_shape`: PoRep records its first two
//!   challenges and copies the second, PoSt its first two sectors: `record_repeated`), kept as
//!   `<circuit-id>.shape` beside the parameters with its hash re-checked on load; a payload's
//!   shape hash must match it.
//! - `device.rs`: the one device: probe before any work and after any device error
//!   (`snarkflow_prover::device::probe`: the CUDA driver's device list plus a verified
//!   self-test proof on the real backend), not ready and pulling nothing while it fails, fatal
//!   exit when re-probes keep failing; the partition on the device now.
//! - `gate.rs`: the device gate: one partition on the device at a time (or one per prove lane),
//!   the most urgent prepared one next, so a WinningPoSt does not queue behind prefetched PoRep
//!   partitions; the probe takes the whole device.
//! - `control.rs`: answers the gateway's control requests (status, load or drop parameters).
//! - `param_trust.rs`: a file under a name filecoin-proofs publishes is loaded only with its
//!   published digest, unless the directory is a test cache (`--test-params`,
//!   `--generate-missing-params`).
//! - `config.rs`: the flags. The backends are build features, one chosen at start with
//!   `--backend` (`cpu`, `cuda`, `cuda-supraseal`, `cuda-resident`); one worker per GPU with
//!   `--gpu N`; `--urgent-slots` (default 1) more slots that pull only critical-priority tasks.

mod config;
mod control;
mod device;
mod gate;
mod param_trust;
mod prepare;
mod prove;
mod shapes;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
pub use config::Config;
use snarkflow_prover::{ParamStore, ParamsError};
use snarkflow_runtime::{Bootstrap, Ready, StatusListen};
use snarkflow_wire::Stage;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Process entry point: parse flags and environment, start telemetry, run until SIGINT or
/// SIGTERM, drain, flush.
pub fn main() -> std::process::ExitCode {
    use clap::Parser as _;
    let mut config = Config::parse();
    if let Some(gpu) = config.gpu {
        // before any thread or CUDA context exists: this process sees (and owns) one device
        std::env::set_var("CUDA_VISIBLE_DEVICES", gpu.to_string());
        config.cuda_visible_devices = Some(gpu.to_string());
    }
    let telemetry = config.worker.telemetry.clone();
    snarkflow_service::main("gpu-worker", &telemetry, |shutdown| run(config, shutdown))
}

/// Choose the prover (`--backend`, else the build's preferred one) and say which and why.
fn select_backend(requested: Option<&str>) -> anyhow::Result<()> {
    use snarkflow_prover::Backend;
    let compiled: Vec<&str> = Backend::compiled().iter().map(|b| b.name()).collect();
    let (backend, why) = match requested {
        Some(name) => {
            let b = Backend::parse(name).ok_or_else(|| {
                anyhow::anyhow!("unknown --backend {name:?} (this build has: {})", compiled.join(", "))
            })?;
            (b, "chosen with --backend")
        }
        None => (Backend::compiled()[0], "the first this build has of cuda-resident, cuda-supraseal, cuda, cpu"),
    };
    snarkflow_prover::backend::select(backend)?;
    info!(backend = backend.name(), why, compiled = %compiled.join(","), "prover backend");
    Ok(())
}

/// Run until `shutdown`: probe the device, load parameters, report ready, prove; on shutdown
/// stop pulling and give the proofs in flight `drain_secs` before handing them back. A device
/// that fails its probe (at start, or after a device error while proving) leaves the worker
/// not ready, saying why, and pulling nothing until a probe passes again.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    select_backend(config.backend.as_deref())?;
    let mut args = config.worker.clone();
    if let (Some(gpu), None) = (config.gpu, args.status_listen) {
        // one gpu-worker per GPU of a host: each its own port
        let port = 9200u32.checked_add(gpu).and_then(|p| u16::try_from(p).ok());
        let port = port.context("--gpu is a device index such as 0")?;
        args.status_listen = Some(StatusListen::At(std::net::SocketAddr::from(([0, 0, 0, 0], port))));
    }
    snarkflow_runtime::serve(Stage::Proving, args, shutdown, |boot| prepare(config, boot)).await
}

/// Probe the device, load the `--preload` parameters, connect, start the control server,
/// report ready; `None` if shutdown came first.
async fn prepare(config: Config, boot: Bootstrap) -> anyhow::Result<Option<Ready<prove::Proving>>> {
    let (host, shutdown) = (&boot.host, &boot.shutdown);
    let id = host.id.clone();
    let params_dir = config.params.dir();
    let trust = if config.test_params || config.generate_missing_params {
        warn!(dir = %params_dir.display(), "test parameter cache: parameter files are not checked against the digests filecoin-proofs publishes");
        param_trust::ParamTrust::TestCache
    } else {
        let manifest = snarkflow_filecoin::manifest::Manifest::named_or_builtin(config.params_manifest.as_deref());
        param_trust::ParamTrust::Published(manifest?)
    };
    let params = Arc::new(
        ParamStore::new(params_dir.clone(), snarkflow_circuits::catalog())
            .with_file_check(Arc::new(trust))
            .with_memory_plan(config.memory_plan),
    );
    let shapes = Arc::new(shapes::ShapeStore::new(params_dir.clone()));
    let device = Arc::new(device::Device::new(host, status_detail(&id, &config, &params, &shapes)));
    if !device.probe_until_usable(shutdown).await {
        return Ok(None);
    }
    device.report_readiness(false, "loading parameters");
    if !preload(&config, &params, &shapes, &device, shutdown).await? {
        return Ok(None);
    }
    let reporter = device.clone();
    let Some(bus) = boot.connect(move |why| reporter.report_readiness(false, why)).await? else {
        return Ok(None);
    };
    let rebuild_threads = config
        .rebuild_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| (n.get() / 4).max(2)).unwrap_or(2));
    let rebuild_pool =
        rayon::ThreadPoolBuilder::new().num_threads(rebuild_threads).thread_name(|i| format!("rebuild-{i}")).build()?;
    let stage = prove::Proving::new(host, device.clone(), rebuild_pool, params, shapes, config.generate_missing_params);
    tokio::spawn(control::serve(bus.clone(), stage.clone(), host.clone(), shutdown.clone()));
    device.report_readiness(true, "ready");
    info!(worker = %id, backend = snarkflow_prover::backend_name(), params_dir = %params_dir.display(), "gpu-worker ready");
    // a slot per prove lane on the device, and the prefetching ones beside them
    Ok(Some(Ready { bus, handler: Arc::new(stage), slots: snarkflow_prover::prove_lanes() + config.prefetch }))
}

/// How often a worker whose `--preload` parameter file is missing or refused looks again.
const PRELOAD_RETRY: Duration = Duration::from_secs(5);

/// Load the `--preload` circuits' parameters and shapes before reporting ready. A file that is
/// missing or fails its check keeps the worker up but not ready, saying which command fixes it,
/// and is looked for again every [`PRELOAD_RETRY`]; `false` if shutdown came first.
async fn preload(
    config: &Config,
    params: &Arc<ParamStore>,
    shapes: &Arc<shapes::ShapeStore>,
    device: &device::Device,
    shutdown: &CancellationToken,
) -> anyhow::Result<bool> {
    for id in &config.preload {
        let spec = snarkflow_circuits::parse_circuit_id(id)
            .ok_or_else(|| anyhow::anyhow!("--preload: unknown circuit id {id:?}"))?;
        loop {
            let (params, generate, shapes, spec) =
                (params.clone(), config.generate_missing_params, shapes.clone(), spec.clone());
            let loaded = tokio::task::spawn_blocking(move || {
                // a resident key holds its shape on the device: no host copy is needed
                if !params.get(&spec, generate)?.takes_witness() {
                    shapes.get(&spec)?;
                }
                anyhow::Ok(())
            })
            .await?;
            match loaded {
                Ok(()) => break,
                Err(e)
                    if matches!(
                        e.downcast_ref::<ParamsError>(),
                        Some(ParamsError::Missing { .. } | ParamsError::Untrusted { .. })
                    ) =>
                {
                    let why = format!("not ready: --preload {id}: {e}");
                    warn!(circuit_id = %id, error = %e, "preload parameters missing or refused; looking again");
                    device.report_readiness(false, &why);
                    tokio::select! {
                        _ = shutdown.cancelled() => return Ok(false),
                        _ = tokio::time::sleep(PRELOAD_RETRY) => {}
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(true)
}

/// What `/readyz` says: the worker, its backend and device, and what it has loaded.
fn status_detail(
    id: &str,
    config: &Config,
    params: &Arc<ParamStore>,
    shapes: &Arc<shapes::ShapeStore>,
) -> device::Detail {
    let (id, gpu, params, shapes) =
        (id.to_owned(), config.cuda_visible_devices.clone(), params.clone(), shapes.clone());
    Arc::new(move |state, report, error| {
        serde_json::json!({
            "worker": id,
            "backend": snarkflow_prover::backend_name(),
            "gpu": gpu,
            "devices": report.map(|r| &r.devices),
            "self_test_seconds": report.map(|r| r.self_test_seconds),
            "device_error": error,
            "state": state,
            "params_dir": params.dir().display().to_string(),
            "loaded_circuits": params.loaded_ids(),
            "memory_plans": params.loaded_all().iter().map(|key| (key.circuit_id.clone(), serde_json::json!({
                "prover": key.prover().name(),
                "plan": key.memory_plan(),
            }))).collect::<serde_json::Map<_, _>>(),
            "loaded_shapes": shapes.loaded(),
        })
    })
}
