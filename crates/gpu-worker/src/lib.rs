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

use std::sync::Arc;
use std::time::Duration;

pub use config::Config;
use snarkflow_bus::Bus;
use snarkflow_prover::ParamStore;
use snarkflow_service::Readiness;
use snarkflow_wire::CircuitSpec;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

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

/// Run until `shutdown`: load parameters, report ready, prove; on shutdown stop pulling and
/// give the proof in flight `drain_secs` before handing it back.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let worker_id = config.worker_id.clone().unwrap_or_else(config::default_worker_id);
    let params_dir = config.params_dir.clone().unwrap_or_else(ParamStore::default_dir);
    let params = Arc::new(ParamStore::new(params_dir.clone()));
    let shapes = Arc::new(shapes::ShapeStore::new(params_dir.clone()));
    let metrics = prove::Metrics::new();
    let readiness = Readiness::default();
    let detail_worker = worker_id.clone();
    let detail = move |state: &str, params: &ParamStore, shapes: &shapes::ShapeStore| {
        serde_json::json!({
            "worker": detail_worker,
            "backend": snarkflow_prover::BACKEND,
            "gpu": std::env::var("CUDA_VISIBLE_DEVICES").ok(),
            "state": state,
            "params_dir": params.dir().display().to_string(),
            "loaded_circuits": params.loaded_ids(),
            "loaded_shapes": shapes.loaded(),
        })
    };
    readiness.set(false, detail("loading parameters", &params, &shapes));
    if let Some(addr) = config.status_listen {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        info!(addr = %listener.local_addr()?, "status endpoint listening");
        tokio::spawn(snarkflow_service::serve_status(
            listener,
            readiness.clone(),
            metrics.registry.clone(),
            shutdown.clone(),
        ));
    }
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
        device: Default::default(),
        rebuild_pool: Arc::new(rebuild_pool),
        bus,
        worker_id: worker_id.clone(),
        params: params.clone(),
        shapes: shapes.clone(),
        generate_missing_params: config.generate_missing_params,
        metrics,
    };
    readiness.set(true, detail("ready", &params, &shapes));
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
    let (worker, lanes, params, shapes) = (Arc::new(worker), Arc::new(lanes), params.clone(), shapes.clone());
    let detail = Arc::new(detail);
    let mut slots = tokio::task::JoinSet::new();
    for _ in 0..=config.prefetch {
        let (worker, lanes, shutdown, abandon) = (worker.clone(), lanes.clone(), shutdown.clone(), abandon.clone());
        let (readiness, params, shapes, detail) = (readiness.clone(), params.clone(), shapes.clone(), detail.clone());
        slots.spawn(async move {
            loop {
                match lanes.next(&shutdown).await {
                    Ok(Some((_, msg))) => {
                        worker.handle(&lanes, msg, &abandon).await;
                        readiness.set(true, detail("ready", &params, &shapes));
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
    info!(worker = %worker_id, "gpu-worker stopped");
    Ok(())
}
