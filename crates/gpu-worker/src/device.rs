//! How GPU work is scheduled on this worker's one device: the device gate (one partition on
//! the device at a time, two with a second prove lane, while other slots prepare theirs; the
//! most urgent waiting goes next), the probe before any work, the
//! re-probe after a device error (no work is pulled until it passes), and the fatal-exit rule
//! (a device still broken after [`MAX_FAILED_REPROBES`] probes ends the process, so its
//! supervisor restarts it with a fresh CUDA context).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus::{IntCounter, IntGaugeVec, Opts};
use snarkflow_prover::device::DeviceReport;
use snarkflow_runtime::{Failure, Fatal, WorkerHost};
use snarkflow_wire::{CurrentProof, Priority};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::gate::{Gate, Turn};

/// How long a worker whose device failed its probe waits before probing again.
const PROBE_RETRY: Duration = Duration::from_secs(30);

/// Failed probes in a row after a device error before the process exits (non-zero), so its
/// supervisor restarts it: a CUDA context can stay broken for the life of the process.
pub(crate) const MAX_FAILED_REPROBES: usize = 3;

/// What `/readyz` says about the worker, given its state in words.
pub(crate) type Detail = Arc<dyn Fn(&str, Option<&DeviceReport>, Option<&str>) -> serde_json::Value + Send + Sync>;

/// The worker's device and what it knows about it.
pub(crate) struct Device {
    /// Held while a partition (or the probe's self-test) is on the device; most urgent next.
    gate: Arc<Gate>,
    /// Set by a device error; no work is taken until a probe passes.
    failed: Arc<AtomicBool>,
    /// The last successful probe, and why the device is unusable when it is.
    state: Mutex<(Option<DeviceReport>, Option<String>)>,
    /// One re-probe at a time, however many slots find the device failed.
    reprobe: tokio::sync::Mutex<()>,
    failed_reprobes: AtomicUsize,
    host: WorkerHost,
    detail: Detail,
    device_info: IntGaugeVec,
    device_errors: IntCounter,
    /// The partitions on the device now, each with its holder's number (the first is reported
    /// to the gateway's GetStatus).
    current: Mutex<Vec<(u64, CurrentProof)>>,
    holders: AtomicU64,
}

/// A lane of the device, held for one partition; takes the partition off [`Device`]'s current
/// ones when dropped.
pub(crate) struct Held<'a> {
    _turn: Turn<'a>,
    holder: u64,
    current: &'a Mutex<Vec<(u64, CurrentProof)>>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.current.lock().expect("current partition").retain(|(holder, _)| *holder != self.holder);
    }
}

impl Device {
    pub(crate) fn new(host: &WorkerHost, detail: Detail) -> Device {
        let device_info = host.register(
            IntGaugeVec::new(
                Opts::new("snarkflow_gpu_device_info", "the proving backend and device(s) of this worker"),
                &["backend", "device", "name"],
            )
            .expect("metric"),
        );
        let device_errors = host.register(
            IntCounter::new(
                "snarkflow_gpu_device_errors_total",
                "device errors while proving; each triggers a probe before more work is taken",
            )
            .expect("metric"),
        );
        Device {
            gate: Arc::new(Gate::new(snarkflow_prover::prove_lanes())),
            failed: Default::default(),
            state: Mutex::new((None, None)),
            reprobe: Default::default(),
            failed_reprobes: AtomicUsize::new(0),
            host: host.clone(),
            detail,
            device_info,
            device_errors,
            current: Mutex::new(Vec::new()),
            holders: AtomicU64::new(0),
        }
    }

    /// Set readiness from the device's state.
    pub(crate) fn report_readiness(&self, ready: bool, state: &str) {
        let (report, error) = &*self.state.lock().expect("device state");
        self.host.readiness.set(ready, (self.detail)(state, report.as_ref(), error.as_deref()));
    }

    /// `cpu` or `cuda:<host indices>`, and the device names, for spans and metrics.
    pub(crate) fn label_and_name(&self) -> (String, String) {
        let state = self.state.lock().expect("device state");
        state.0.as_ref().map(|r| (r.label(), r.names())).unwrap_or_else(|| ("unprobed".into(), String::new()))
    }

    /// Run the probe (driver device list + a verified self-test proof) holding the device
    /// lock, so it never overlaps a partition's kernels. On success the failed flag is
    /// cleared before the lock is released: no slot waiting for the device sees it failed.
    async fn probe(&self) -> anyhow::Result<DeviceReport> {
        let (gate, failed) = (self.gate.clone(), self.failed.clone());
        tokio::task::spawn_blocking(move || {
            let _device = gate.enter_alone(Priority::Critical);
            let report = snarkflow_prover::device::probe()?;
            failed.store(false, Ordering::SeqCst);
            Ok(report)
        })
        .await
        .unwrap_or_else(|panic| Err(anyhow::anyhow!("the device probe panicked: {panic}")))
    }

    fn usable(&self, report: DeviceReport) {
        self.device_info.with_label_values(&[report.backend, &report.label(), &report.names()]).set(1);
        *self.state.lock().expect("device state") = (Some(report), None);
    }

    fn unusable(&self, e: &anyhow::Error) {
        self.state.lock().expect("device state").1 = Some(format!("{e:#}"));
        self.report_readiness(false, "device unusable");
    }

    /// Probe until the device passes (the worker's start); `false` if shutdown came first.
    pub(crate) async fn probe_until_usable(&self, shutdown: &CancellationToken) -> bool {
        self.report_readiness(false, "probing the device");
        loop {
            match self.probe().await {
                Ok(report) => {
                    info!(
                        backend = report.backend, device = %report.label(), name = %report.names(),
                        self_test_seconds = report.self_test_seconds, "device probe passed"
                    );
                    self.usable(report);
                    return true;
                }
                Err(e) => {
                    error!(backend = snarkflow_prover::backend_name(), error = %e, "device unusable; not ready, probing again in {}s", PROBE_RETRY.as_secs());
                    self.unusable(&e);
                    tokio::select! {
                        _ = shutdown.cancelled() => return false,
                        _ = tokio::time::sleep(PROBE_RETRY) => {}
                    }
                }
            }
        }
    }

    /// Before a slot pulls: after a device error, re-probe (one slot at a time) until the
    /// device passes; after [`MAX_FAILED_REPROBES`] failures in a row, stop the worker.
    pub(crate) async fn before_pull(&self, stop: &CancellationToken) -> Result<(), Fatal> {
        while self.failed.load(Ordering::SeqCst) {
            let _one = self.reprobe.lock().await;
            if !self.failed.load(Ordering::SeqCst) {
                break;
            }
            match self.probe().await {
                Ok(report) => {
                    info!(device = %report.label(), "device probe passed again; taking work");
                    self.failed_reprobes.store(0, Ordering::SeqCst);
                    self.usable(report);
                    self.report_readiness(true, "ready");
                }
                Err(e) => {
                    let failures = self.failed_reprobes.fetch_add(1, Ordering::SeqCst) + 1;
                    self.unusable(&e);
                    if failures >= MAX_FAILED_REPROBES {
                        error!(error = %e, failures, "device still unusable after a device error; exiting for a restart");
                        return Err(Fatal(format!(
                            "the device failed {failures} probes in a row after a device error: {e}"
                        )));
                    }
                    error!(error = %e, "device unusable; not ready, probing again in {}s", PROBE_RETRY.as_secs());
                    tokio::select! {
                        _ = stop.cancelled() => return Ok(()),
                        _ = tokio::time::sleep(PROBE_RETRY) => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// Take a lane of the device for one partition (`lanes`: those its key proves on; a key
    /// with fewer than the gate's takes the whole device, so that nothing admitted beside it
    /// waits for it inside the prover), after any more urgent one waiting; `Err` when it
    /// failed while this slot prepared (a slot already waiting for work when the device failed
    /// must not use it).
    pub(crate) fn acquire(&self, priority: Priority, proof: CurrentProof, lanes: usize) -> Result<Held<'_>, Failure> {
        let turn = if lanes < 2 { self.gate.enter_alone(priority) } else { self.gate.enter(priority) };
        if self.failed.load(Ordering::SeqCst) {
            return Err(Failure::Transient("the device failed and is being probed again".into()));
        }
        let holder = self.holders.fetch_add(1, Ordering::Relaxed);
        self.current.lock().expect("current partition").push((holder, proof));
        Ok(Held { _turn: turn, holder, current: &self.current })
    }

    /// The last successful probe's report and the partition on the device now (the earliest
    /// there, with two lanes).
    pub(crate) fn snapshot(&self) -> (Option<DeviceReport>, Option<CurrentProof>) {
        let report = self.state.lock().expect("device state").0.clone();
        (report, self.current.lock().expect("current partition").first().map(|(_, p)| p.clone()))
    }

    /// A device error while proving: take the worker out until a probe passes, and hand the
    /// partition back (another worker, or this one after the probe, proves it).
    pub(crate) fn fail(&self, job_id: &str, partition: u32, reason: String) -> Failure {
        warn!(job_id, partition, %reason, "device error: probing the device before taking more work");
        self.failed.store(true, Ordering::SeqCst);
        self.device_errors.inc();
        self.report_readiness(false, "device error: probing the device");
        Failure::Transient(format!("device error on {}: {reason}", self.host.id))
    }
}
