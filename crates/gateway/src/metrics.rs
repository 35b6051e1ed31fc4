//! Gateway metrics (Prometheus).

use prometheus::{Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};
use snarkflow_wire::{JobEvent, JobEventBody, JobRecord};

#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    submitted: IntCounterVec,
    pub(crate) finished: IntCounterVec,
    pub(crate) job_seconds: HistogramVec,
    rejected: IntCounterVec,
    stage_seconds: HistogramVec,
    hop_bytes: IntCounterVec,
    queue_depth: IntGaugeVec,
    queue_oldest: GaugeVec,
    jobs: IntGaugeVec,
    ledger_bytes: IntGaugeVec,
    backlog_constraints: IntGaugeVec,
    backlog_gpu_seconds: Gauge,
    object_store_bytes: IntGaugeVec,
    dead_letters: IntCounterVec,
}

/// Buckets from 0.25 s to ~2.3 h: a WinningPoSt against its 30 s epoch (0.25–32 s in eight
/// steps) to a 32 GiB PoRep behind a queue.
fn job_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.25, 2.0, 16).expect("valid buckets")
}

/// Buckets from 10 ms to ~20 min: test circuits to 32 GiB partitions.
fn stage_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.01, 2.5, 14).expect("valid buckets")
}

/// A metric registered in `registry`.
fn registered<M: prometheus::core::Collector + Clone + 'static>(registry: &Registry, metric: M) -> M {
    registry.register(Box::new(metric.clone())).expect("unique metric");
    metric
}

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric")
}

fn int_gauge(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric")
}

fn histogram(name: &str, help: &str, buckets: Vec<f64>, labels: &[&str]) -> HistogramVec {
    HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), labels).expect("valid metric")
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let r = |m| registered(&registry, m);
        Metrics {
            submitted: r(counter("snarkflow_jobs_submitted_total", "jobs accepted", &["kind"])),
            finished: r(counter("snarkflow_jobs_finished_total", "jobs reaching a terminal state", &["kind", "state"])),
            job_seconds: registered(&registry, histogram(
                "snarkflow_job_seconds",
                "seconds from a job's submission to its end, by kind and how it ended (done, failed, cancelled)",
                job_buckets(),
                &["kind", "state"],
            )),
            rejected: r(counter("snarkflow_requests_rejected_total", "rejected API requests", &["code"])),
            stage_seconds: registered(&registry, histogram(
                "snarkflow_partition_stage_seconds",
                "per-partition stage durations reported by workers",
                stage_buckets(),
                &["stage"],
            )),
            hop_bytes: r(counter("snarkflow_hop_bytes_total", "bytes moved per hop", &["hop"])),
            queue_depth: registered(&registry, int_gauge("snarkflow_queue_depth", "messages waiting per stream", &["stage"])),
            queue_oldest: registered(&registry, GaugeVec::new(
                Opts::new(
                    "snarkflow_queue_oldest_seconds",
                    "age of the oldest unsettled task per stage and priority lane (0: the lane is empty)",
                ),
                &["stage", "lane"],
            )
            .expect("valid metric")),
            jobs: registered(&registry, int_gauge("snarkflow_jobs", "jobs in the ledger by state and kind", &["state", "kind"])),
            ledger_bytes: registered(&registry, int_gauge(
                "snarkflow_ledger_bytes",
                "the job ledger: bytes used, its limit (0: none), and bytes promised to unfinished jobs",
                &["what"],
            )),
            backlog_constraints: registered(&registry, int_gauge(
                "snarkflow_backlog_constraints",
                "constraints of the partitions waiting for a stage: not yet synthesized (synth), synthesized and not yet proved (prove)",
                &["stage"],
            )),
            backlog_gpu_seconds: registered(&registry, Gauge::new(
                "snarkflow_backlog_gpu_seconds",
                "seconds of one GPU the proving backlog needs, at --gpu-constraints-per-second",
            )
            .expect("valid metric")),
            object_store_bytes: registered(&registry, int_gauge(
                "snarkflow_object_store_bytes",
                "the object store (partitions, job inputs): bytes used, its limit (0: none)",
                &["what"],
            )),
            dead_letters: r(counter(
                "snarkflow_dead_letters_total",
                "tasks whose deliveries ran out, by stage and what became of them: failed_job (its job failed), recorded (its result was in the ledger, or its job had ended), unnamed (no job)",
                &["stage", "outcome"],
            )),
            registry,
        }
    }

    pub fn set_ledger_bytes(&self, used: u64, limit: Option<u64>, promised: u64) {
        let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.ledger_bytes.with_label_values(&["used"]).set(gauge(used));
        self.ledger_bytes.with_label_values(&["limit"]).set(gauge(limit.unwrap_or(0)));
        self.ledger_bytes.with_label_values(&["promised"]).set(gauge(promised));
    }

    pub(crate) fn set_backlog(&self, backlog: crate::ledger::backlog::Backlog, gpu_constraints_per_second: u64) {
        let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.backlog_constraints.with_label_values(&["synth"]).set(gauge(backlog.synth));
        self.backlog_constraints.with_label_values(&["prove"]).set(gauge(backlog.prove));
        self.backlog_gpu_seconds.set(backlog.gpu_seconds(gpu_constraints_per_second));
    }

    pub fn set_object_store_bytes(&self, used: u64, limit: Option<u64>) {
        let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.object_store_bytes.with_label_values(&["used"]).set(gauge(used));
        self.object_store_bytes.with_label_values(&["limit"]).set(gauge(limit.unwrap_or(0)));
    }

    pub fn dead_letter(&self, stage: &str, outcome: &str) {
        self.dead_letters.with_label_values(&[stage, outcome]).inc();
    }

    pub fn set_queue_depth(&self, stage: &str, depth: u64) {
        self.queue_depth.with_label_values(&[stage]).set(depth as i64);
    }

    pub fn set_queue_oldest(&self, stage: &str, lane: &str, seconds: f64) {
        self.queue_oldest.with_label_values(&[stage, lane]).set(seconds);
    }

    /// Replace the jobs-by-state gauge with a fresh count.
    pub fn set_jobs(&self, counts: &std::collections::BTreeMap<(&'static str, snarkflow_wire::JobKind), i64>) {
        self.jobs.reset();
        for ((state, kind), n) in counts {
            self.jobs.with_label_values(&[state, kind.as_str()]).set(*n);
        }
    }

    pub fn job_submitted(&self, kind: &str) {
        self.submitted.with_label_values(&[kind]).inc();
    }

    pub fn job_finished(&self, record: &JobRecord) {
        let kind = record.kind();
        let labels = [kind.as_str(), record.state.as_str()];
        self.finished.with_label_values(&labels).inc();
        let ended = record.finished_at_ms.unwrap_or_else(snarkflow_bus::now_ms);
        self.job_seconds.with_label_values(&labels).observe(ended.saturating_sub(record.created_at_ms) as f64 / 1000.0);
    }

    pub fn rejected(&self, code: &str) {
        self.rejected.with_label_values(&[code]).inc();
    }

    pub fn observe_event(&self, event: &JobEvent) {
        let stage = |name: &str, v: f64| self.stage_seconds.with_label_values(&[name]).observe(v);
        match &event.body {
            JobEventBody::PartitionSynthesized { stats } => {
                stage("synthesize", stats.synthesize_s);
                stage("serialize", stats.serialize_s);
                stage("store", stats.store_s);
                self.hop_bytes.with_label_values(&["synth_to_prove"]).inc_by(stats.bytes);
            }
            JobEventBody::PartitionProved { stats, .. } => {
                stage("queue_wait", stats.queue_wait_s);
                stage("fetch", stats.fetch_s);
                stage("deserialize", stats.deserialize_s);
                stage("rebuild", stats.rebuild_s);
                stage("prove", stats.prove_s);
                stage("verify", stats.verify_s);
                self.hop_bytes
                    .with_label_values(&["prove_to_gateway"])
                    .inc_by(snarkflow_wire::PARTITION_PROOF_BYTES as u64);
            }
            _ => {}
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
