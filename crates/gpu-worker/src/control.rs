//! Answers the gateway's control requests (cuzk's `GetStatus`, `PreloadSRS`, `EvictSRS`):
//! what this worker's device is doing and which parameters it holds; load or drop a
//! circuit's parameters. Core NATS request/reply, see `snarkflow_wire::control`.

use std::time::Instant;

use futures::StreamExt;
use snarkflow_bus::Bus;
use snarkflow_runtime::WorkerHost;
use snarkflow_wire::{
    GpuDevice, GpuWorkerStatus, LoadedCircuit, ParamsCommand, ParamsReply, GPU_PARAMS_SUBJECT, GPU_STATUS_SUBJECT,
};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::prove::Proving;

/// Answer control requests until `shutdown`.
pub(crate) async fn serve(bus: Bus, proving: Proving, host: WorkerHost, shutdown: CancellationToken) {
    let subscribed = tokio::try_join!(
        bus.control_requests(GPU_STATUS_SUBJECT, "gateway"),
        bus.control_requests(GPU_PARAMS_SUBJECT, "gateway")
    );
    let (mut status, mut params) = match subscribed {
        Ok(subscriptions) => subscriptions,
        Err(e) => {
            warn!(error = %e, "cannot take control requests: the gateway's GetStatus will not list this worker");
            return;
        }
    };
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            Some(request) = status.next() => {
                let reply = serde_json::to_vec(&report(&proving, &host)).expect("statuses serialize");
                if let Err(e) = bus.reply(&request, reply).await {
                    warn!(error = %e, "answering a status request");
                }
            }
            Some(request) = params.next() => {
                // a load can take minutes: status requests keep being answered meanwhile
                let (bus, proving, worker) = (bus.clone(), proving.clone(), host.id.clone());
                tokio::spawn(async move {
                    let reply = params_command(&proving, &worker, &request.payload).await;
                    let reply = serde_json::to_vec(&reply).expect("replies serialize");
                    if let Err(e) = bus.reply(&request, reply).await {
                        warn!(error = %e, "answering a parameters request");
                    }
                });
            }
            else => return,
        }
    }
}

/// This worker as the gateway's GetStatus lists it.
fn report(proving: &Proving, host: &WorkerHost) -> GpuWorkerStatus {
    let (ready, detail) = host.readiness.get();
    let (probe, current) = proving.device.snapshot();
    let devices = if snarkflow_prover::backend_name() == "cpu" {
        vec![GpuDevice { index: 0, name: "cpu".into(), memory_bytes: 0 }]
    } else {
        probe
            .map(|r| r.devices)
            .unwrap_or_default()
            .into_iter()
            .map(|d| GpuDevice { index: d.host_index.unwrap_or(d.ordinal), name: d.name, memory_bytes: d.memory_bytes })
            .collect()
    };
    let loaded = proving
        .params
        .loaded_all()
        .into_iter()
        .map(|key| {
            let id = key.circuit_id.clone();
            let bytes = snarkflow_circuits::parse_circuit_id(&id).map_or(0, |spec| proving.params.file_bytes(&spec));
            let plan = key.memory_plan();
            LoadedCircuit {
                circuit_id: id,
                bytes,
                prover: key.prover().name().into(),
                memory_plan: plan.as_ref().map(|p| p.kind.name().into()),
                host_bytes: plan.as_ref().map_or(0, |p| p.host_bytes),
            }
        })
        .collect();
    GpuWorkerStatus {
        worker: host.id.clone(),
        host: snarkflow_telemetry::host_name(),
        backend: snarkflow_prover::backend_name().into(),
        ready,
        state: detail["state"].as_str().unwrap_or_default().to_owned(),
        devices,
        loaded,
        current,
    }
}

async fn params_command(proving: &Proving, worker: &str, payload: &[u8]) -> ParamsReply {
    let error = |message: String| ParamsReply::Error { worker: worker.to_owned(), message };
    let command: ParamsCommand = match serde_json::from_slice(payload) {
        Ok(command) => command,
        Err(e) => return error(format!("unreadable parameters command: {e}")),
    };
    let (ParamsCommand::Preload { circuit_id } | ParamsCommand::Evict { circuit_id }) = &command;
    let Some(spec) = snarkflow_circuits::parse_circuit_id(circuit_id) else {
        return error(format!("unknown circuit id {circuit_id:?}"));
    };
    match command {
        ParamsCommand::Preload { .. } => {
            if proving.params.is_loaded(&spec) {
                return ParamsReply::Preloaded { worker: worker.to_owned(), already_loaded: true, load_ms: 0 };
            }
            let started = Instant::now();
            let (loader, to_load) = (proving.clone(), spec.clone());
            match tokio::task::spawn_blocking(move || loader.load(&to_load)).await {
                Ok(Ok(())) => {
                    let load_ms = started.elapsed().as_millis() as u64;
                    info!(circuit_id = %spec.circuit_id(), load_ms, "parameters preloaded on request");
                    ParamsReply::Preloaded { worker: worker.to_owned(), already_loaded: false, load_ms }
                }
                Ok(Err(e)) => error(e.to_string()),
                Err(panic) => error(format!("loading the parameters panicked: {panic}")),
            }
        }
        ParamsCommand::Evict { .. } => {
            let bytes = proving.params.file_bytes(&spec);
            let was_loaded = proving.evict(&spec);
            info!(circuit_id = %spec.circuit_id(), was_loaded, "parameters evicted on request");
            ParamsReply::Evicted {
                worker: worker.to_owned(),
                was_loaded,
                freed_bytes: if was_loaded { bytes } else { 0 },
            }
        }
    }
}
