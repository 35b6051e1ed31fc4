//! What a worker process has before its stage exists: an id, a status endpoint and the
//! metrics every worker exports.

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry};
use snarkflow_service::Readiness;
use snarkflow_wire::Stage;
use tokio_util::sync::CancellationToken;

/// The id a worker of `role` gets when none is configured: `<role>-<host>-<pid>`.
pub fn default_worker_id(role: &str) -> String {
    format!("{role}-{}-{}", snarkflow_telemetry::host_name(), std::process::id())
}

/// A worker's identity, readiness and metrics; cheap to clone.
#[derive(Clone)]
pub struct WorkerHost {
    pub id: String,
    pub stage: Stage,
    pub readiness: Readiness,
    /// Every metric of this worker; a stage registers its own here too.
    pub registry: Registry,
    /// `snarkflow_<lane>_stage_seconds{stage}`: how long each step of a partition took.
    seconds: HistogramVec,
    /// `snarkflow_<lane>_in_flight`: tasks being handled now.
    pub(crate) in_flight: IntGauge,
    /// `snarkflow_<lane>_partitions_total{outcome}`: tasks settled, by outcome.
    pub(crate) outcomes: IntCounterVec,
}

impl WorkerHost {
    /// Metrics and readiness (not ready) for a worker of `stage`, and the status endpoint on
    /// `status_listen` (none when unset) until `shutdown`.
    pub async fn start(
        stage: Stage,
        id: String,
        status_listen: Option<std::net::SocketAddr>,
        shutdown: CancellationToken,
    ) -> std::io::Result<WorkerHost> {
        let lane = stage.lane_name();
        let registry = Registry::new();
        let seconds = HistogramVec::new(
            HistogramOpts::new(format!("snarkflow_{lane}_stage_seconds"), format!("{} step durations", stage.as_str()))
                .buckets(prometheus::exponential_buckets(0.005, 2.5, 14).expect("buckets")),
            &["stage"],
        )
        .expect("metric");
        let in_flight = IntGauge::new(format!("snarkflow_{lane}_in_flight"), "partitions being handled by this worker")
            .expect("metric");
        let outcomes = IntCounterVec::new(
            Opts::new(format!("snarkflow_{lane}_partitions_total"), "partitions handled by outcome"),
            &["outcome"],
        )
        .expect("metric");
        registry.register(Box::new(seconds.clone())).expect("unique");
        registry.register(Box::new(in_flight.clone())).expect("unique");
        registry.register(Box::new(outcomes.clone())).expect("unique");
        let readiness = Readiness::default();
        readiness.set(false, serde_json::json!({ "worker": id, "state": "starting" }));
        snarkflow_service::spawn_status(status_listen, readiness.clone(), registry.clone(), shutdown).await?;
        Ok(WorkerHost { id, stage, readiness, registry, seconds, in_flight, outcomes })
    }

    /// Record how long step `step` of a partition took.
    pub fn observe(&self, step: &str, seconds: f64) {
        self.seconds.with_label_values(&[step]).observe(seconds);
    }

    /// Register a stage's own metric.
    pub fn register<M: prometheus::core::Collector + Clone + 'static>(&self, metric: M) -> M {
        self.registry.register(Box::new(metric.clone())).expect("metric names are unique per worker");
        metric
    }
}
