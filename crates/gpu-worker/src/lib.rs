//! The gpu-worker: owns one proving device, keeps Groth16 parameters loaded, and proves
//! synthesized partitions one at a time, most urgent lane first.
//!
//! Per partition: fetch from the object store (digest checked), decode, prove, verify against
//! the verifying key, report the proof as an event, delete the object, ack. A proof that does
//! not verify is never reported as a result: the job fails instead. Long proofs send
//! in-progress heartbeats so the broker does not hand them to another worker; a worker killed
//! mid-proof simply never acks, and the partition is redelivered.

mod config;
mod prove;
mod shapes;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub use config::Config;
use snarkflow_bus::Bus;
use snarkflow_prover::device::DeviceReport;
use snarkflow_prover::ParamStore;
use snarkflow_service::Readiness;
use snarkflow_wire::CircuitSpec;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// How long a worker whose device failed its probe waits before probing again.
const PROBE_RETRY: Duration = Duration::from_secs(30);

/// Failed probes in a row after a device error before the process exits (non-zero), so its
/// supervisor restarts it: a CUDA context can stay broken for the life of the process.
const MAX_FAILED_REPROBES: usize = 3;

/// Process entry point: parse flags and environment, start telemetry, run until SIGINT or
/// SIGTERM, drain, flush.
pub fn main() -> std::process::ExitCode {
    use clap::Parser as _;
    let config = Config::parse();
    if let Some(gpu) = config.gpu {
        // before any thread or CUDA context exists: this process sees (and owns) one device
        std::env::set_var("CUDA_VISIBLE_DEVICES", gpu.to_string());
    }
    let telemetry = config.telemetry.clone();
    snarkflow_service::main("gpu-worker", &telemetry, |shutdown| run(config, shutdown))
}

/// The worker's view of its device: the last successful probe, or why it is unusable.
pub(crate) struct DeviceState {
    pub report: Option<DeviceReport>,
    pub error: Option<String>,
}

/// Probe the device (driver device list + a self-test proof) holding the device lock, so it
/// never overlaps a partition's kernels. On success `failed` is cleared before the lock is
/// released, so no slot waiting for the device sees it still marked failed.
async fn probe_device(
    lock: Arc<std::sync::Mutex<()>>,
    failed: Option<Arc<std::sync::atomic::AtomicBool>>,
) -> Result<DeviceReport, String> {
    tokio::task::spawn_blocking(move || {
        let _device = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let report = snarkflow_prover::device::probe()?;
        if let Some(failed) = failed {
            failed.store(false, Ordering::SeqCst);
        }
        Ok(report)
    })
    .await
    .unwrap_or_else(|panic| Err(format!("the device probe panicked: {panic}")))
}

/// Run until `shutdown`: probe the device, load parameters, report ready, prove; on shutdown
/// stop pulling and give the proof in flight `drain_secs` before handing it back. A device
/// that fails its probe (at start, or after a device error while proving) leaves the worker
/// not ready, saying why, and pulling nothing until a probe passes again.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let worker_id = config.worker_id.clone().unwrap_or_else(config::default_worker_id);
    let params_dir = config.params_dir.clone().unwrap_or_else(ParamStore::default_dir);
    let params = Arc::new(ParamStore::new(params_dir.clone()));
    let shapes = Arc::new(shapes::ShapeStore::new(params_dir.clone()));
    let metrics = prove::Metrics::new();
    let readiness = Readiness::default();
    let device_state = Arc::new(std::sync::Mutex::new(DeviceState { report: None, error: None }));
    let detail = {
        let (worker_id, device_state, params, shapes) =
            (worker_id.clone(), device_state.clone(), params.clone(), shapes.clone());
        Arc::new(move |state: &str| {
            let device = device_state.lock().expect("device state");
            serde_json::json!({
                "worker": worker_id,
                "backend": snarkflow_prover::BACKEND,
                "gpu": std::env::var("CUDA_VISIBLE_DEVICES").ok(),
                "devices": device.report.as_ref().map(|r| &r.devices),
                "self_test_seconds": device.report.as_ref().map(|r| r.self_test_seconds),
                "device_error": device.error,
                "state": state,
                "params_dir": params.dir().display().to_string(),
                "loaded_circuits": params.loaded_ids(),
                "loaded_shapes": shapes.loaded(),
            })
        })
    };
    // what a probe's outcome does to readiness and /readyz's device fields
    let unusable = {
        let (device_state, readiness, detail) = (device_state.clone(), readiness.clone(), detail.clone());
        Arc::new(move |e: String| {
            device_state.lock().expect("device state").error = Some(e);
            readiness.set(false, detail("device unusable"));
        })
    };
    let usable_again = {
        let (device_state, readiness, detail) = (device_state.clone(), readiness.clone(), detail.clone());
        Arc::new(move |report: DeviceReport| {
            *device_state.lock().expect("device state") = DeviceState { report: Some(report), error: None };
            readiness.set(true, detail("ready"));
        })
    };
    readiness.set(false, detail("probing the device"));
    snarkflow_service::spawn_status(
        config.status_listen,
        readiness.clone(),
        metrics.registry.clone(),
        shutdown.clone(),
    )
    .await?;
    let device_lock: Arc<std::sync::Mutex<()>> = Default::default();
    let report = loop {
        match probe_device(device_lock.clone(), None).await {
            Ok(report) => break report,
            Err(e) => {
                error!(backend = snarkflow_prover::BACKEND, error = %e, "device unusable; not ready, probing again in {}s", PROBE_RETRY.as_secs());
                unusable(e);
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(PROBE_RETRY) => {}
                }
            }
        }
    };
    info!(
        backend = report.backend, device = %report.label(), name = %report.names(),
        self_test_seconds = report.self_test_seconds, "device probe passed"
    );
    metrics.device_info.with_label_values(&[report.backend, &report.label(), &report.names()]).set(1);
    let (device_label, device_name) = (report.label(), report.names());
    *device_state.lock().expect("device state") = DeviceState { report: Some(report), error: None };
    readiness.set(false, detail("loading parameters"));
    for id in &config.preload {
        let spec =
            CircuitSpec::parse_circuit_id(id).ok_or_else(|| anyhow::anyhow!("--preload: unknown circuit id {id:?}"))?;
        let (store, generate, shape_store) = (params.clone(), config.generate_missing_params, shapes.clone());
        tokio::task::spawn_blocking(move || {
            store.get(&spec, generate)?;
            shape_store.get(&spec).map_err(|e| anyhow::anyhow!(e))?;
            anyhow::Ok(())
        })
        .await??;
    }
    let bus = Bus::connect(config.nats.bus_config()).await?;
    let lanes = bus.lanes("prove").await?;
    let rebuild_threads = config
        .rebuild_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| (n.get() / 4).max(2)).unwrap_or(2));
    let rebuild_pool =
        rayon::ThreadPoolBuilder::new().num_threads(rebuild_threads).thread_name(|i| format!("rebuild-{i}")).build()?;
    let worker = prove::Worker {
        device: device_lock.clone(),
        device_label,
        device_name,
        device_failed: Default::default(),
        rebuild_pool: Arc::new(rebuild_pool),
        bus,
        worker_id: worker_id.clone(),
        params: params.clone(),
        shapes: shapes.clone(),
        generate_missing_params: config.generate_missing_params,
        metrics,
    };
    readiness.set(true, detail("ready"));
    for id in params.loaded_ids() {
        worker.metrics.params_loaded.with_label_values(&[&id]).set(1);
    }
    info!(worker = %worker_id, backend = snarkflow_prover::BACKEND, params_dir = %params_dir.display(), "gpu-worker ready");

    let abandon = CancellationToken::new();
    let drain = {
        let (shutdown, abandon, drain_secs) = (shutdown.clone(), abandon.clone(), config.drain_secs);
        tokio::spawn(async move {
            shutdown.cancelled().await;
            tokio::time::sleep(Duration::from_secs(drain_secs)).await;
            abandon.cancel();
        })
    };
    // 1 + prefetch slots pull partitions; each prepares its own, and they take turns on the device
    let (worker, lanes, params) = (Arc::new(worker), Arc::new(lanes), params.clone());
    // one re-probe at a time after a device error
    let reprobe = Arc::new(tokio::sync::Mutex::new(()));
    let failed_reprobes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // set when the device stays unusable after a device error: every slot stops, run() fails
    let fatal = CancellationToken::new();
    let fatal_reason: Arc<std::sync::Mutex<Option<String>>> = Default::default();
    let mut slots = tokio::task::JoinSet::new();
    for _ in 0..=config.prefetch {
        let (worker, lanes, shutdown, abandon) = (worker.clone(), lanes.clone(), shutdown.clone(), abandon.clone());
        let (readiness, params, detail, reprobe) = (readiness.clone(), params.clone(), detail.clone(), reprobe.clone());
        let (unusable, usable_again) = (unusable.clone(), usable_again.clone());
        let (failed_reprobes, fatal, fatal_reason) = (failed_reprobes.clone(), fatal.clone(), fatal_reason.clone());
        slots.spawn(async move {
            loop {
                if worker.device_failed.load(Ordering::SeqCst) {
                    let _one = reprobe.lock().await;
                    if worker.device_failed.load(Ordering::SeqCst) {
                        match probe_device(worker.device.clone(), Some(worker.device_failed.clone())).await {
                            Ok(report) => {
                                info!(device = %report.label(), "device probe passed again; taking work");
                                failed_reprobes.store(0, Ordering::SeqCst);
                                usable_again(report);
                            }
                            Err(e) => {
                                let failures = failed_reprobes.fetch_add(1, Ordering::SeqCst) + 1;
                                unusable(e.clone());
                                if failures >= MAX_FAILED_REPROBES {
                                    error!(error = %e, failures, "device still unusable after a device error; exiting for a restart");
                                    *fatal_reason.lock().expect("fatal reason") = Some(format!(
                                        "the device failed {failures} probes in a row after a device error: {e}"
                                    ));
                                    fatal.cancel();
                                    break;
                                }
                                error!(error = %e, "device unusable; not ready, probing again in {}s", PROBE_RETRY.as_secs());
                                tokio::select! {
                                    _ = shutdown.cancelled() => break,
                                    _ = fatal.cancelled() => break,
                                    _ = tokio::time::sleep(PROBE_RETRY) => {}
                                }
                                continue;
                            }
                        }
                    }
                }
                if fatal.is_cancelled() {
                    break;
                }
                let next = tokio::select! {
                    next = lanes.next(&shutdown) => next,
                    _ = fatal.cancelled() => break,
                };
                match next {
                    Ok(Some((_, msg))) => {
                        worker.handle(&lanes, msg, &abandon).await;
                        if worker.device_failed.load(Ordering::SeqCst) {
                            readiness.set(false, detail("device error: probing the device"));
                        } else {
                            readiness.set(true, detail("ready"));
                        }
                        for id in params.loaded_ids() {
                            worker.metrics.params_loaded.with_label_values(&[&id]).set(1);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        warn!(error = %e, "pulling proving work failed; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
    }
    while slots.join_next().await.is_some() {}
    drain.abort();
    if let Some(reason) = fatal_reason.lock().expect("fatal reason").take() {
        anyhow::bail!(reason);
    }
    info!(worker = %worker_id, "gpu-worker stopped");
    Ok(())
}
