//! The waterfall: one row per partition on a common time axis — `S` synthesis, `.` waiting in
//! the queue, `G` proving — and the summary figures that say where the GPU sits idle.
//!
//! Stages are recognised by span name: `synthesize`, `queue.wait`, `prove` (plus `fetch`,
//! `verify`, … for the stage medians). Rows are keyed by the `job_id` and `partition`
//! attributes; proving devices by the `worker` and `gpu.index` (or `backend`) attributes.

mod render;

use std::collections::BTreeMap;

pub use render::{render_svg, render_text};

use crate::Span;

/// Stage spans the medians are reported for, in data-path order.
pub const STAGES: [&str; 12] = [
    "shape.record",
    "synthesize",
    "serialize",
    "store",
    "publish",
    "queue.wait",
    "fetch",
    "deserialize",
    "rebuild",
    "prove",
    "verify",
    "assemble",
];

/// Gaps shorter than this between two proofs on a device are scheduling noise, not idle time.
pub const MIN_IDLE_GAP_NS: u64 = 1_000_000;

pub type Interval = (u64, u64);

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub job_id: String,
    pub partition: i64,
    pub synth: Vec<Interval>,
    pub queue: Vec<Interval>,
    pub prove: Vec<Interval>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GapStats {
    pub count: usize,
    pub median_s: f64,
    pub max_s: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    pub name: String,
    /// Merged proving intervals.
    pub busy: Vec<Interval>,
    pub busy_s: f64,
    /// Busy time over the report window.
    pub busy_fraction: f64,
    /// Busy time from the first proof's start to the last proof's end: the steady state,
    /// without the ramp before the first partition reaches the device or the tail after.
    pub steady_fraction: f64,
    pub gaps: GapStats,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StageMedian {
    pub stage: &'static str,
    pub count: usize,
    pub median_s: f64,
    /// Most spans of this stage in progress at once (observed parallelism).
    pub max_parallel: usize,
}

/// One job's proving: how long its partitions took on the devices, first prove start to last
/// prove end (a staged run's seconds per proof), and when its first partition began.
#[derive(Debug, Clone, PartialEq)]
pub struct JobWindow {
    pub job_id: String,
    /// Partitions with a prove span.
    pub partitions: usize,
    /// The first prove's start to the last prove's end.
    pub proving: Interval,
    /// When its first partition's first span (synthesis, else queue wait, else prove) began.
    pub first_start_ns: u64,
}

impl JobWindow {
    pub fn proving_s(&self) -> f64 {
        (self.proving.1 - self.proving.0) as f64 / 1e9
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub window: Interval,
    pub rows: Vec<Row>,
    /// Each job that proved a partition, in the order its proving began.
    pub jobs: Vec<JobWindow>,
    /// The first prove's start to the last prove's end, over every job.
    pub proving: Option<Interval>,
    pub devices: Vec<Device>,
    pub stages: Vec<StageMedian>,
    /// Total synthesis seconds over total proving seconds.
    pub synth_gpu_ratio: Option<f64>,
    /// Which stage bounds throughput, with the arithmetic that says so.
    pub bound_by: String,
}

impl Report {
    pub fn window_s(&self) -> f64 {
        (self.window.1 - self.window.0) as f64 / 1e9
    }
}

/// Sort and merge overlapping intervals.
pub fn merge(mut v: Vec<Interval>) -> Vec<Interval> {
    v.sort_unstable();
    let mut out: Vec<Interval> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn max_parallel(intervals: &[Interval]) -> usize {
    let mut edges: Vec<(u64, i32)> = intervals.iter().flat_map(|&(s, e)| [(s, 1), (e, -1)]).collect();
    // ends before starts at the same instant: back-to-back is not parallel
    edges.sort_unstable_by_key(|&(t, d)| (t, d));
    let (mut cur, mut max) = (0i32, 0i32);
    for (_, d) in edges {
        cur += d;
        max = max.max(cur);
    }
    max as usize
}

fn device_name(s: &Span) -> String {
    let worker = s.attr_text("worker").unwrap_or_else(|| s.service.clone());
    match (s.attr_text("gpu.index"), s.attr_text("backend")) {
        (Some(i), _) => format!("{worker}/gpu{i}"),
        (None, Some(b)) => format!("{worker}/{b}"),
        (None, None) => worker,
    }
}

/// Build the report from spans (any mix of jobs and traces).
pub fn analyze(spans: &[Span]) -> Report {
    let mut rows: BTreeMap<(String, i64), Row> = BTreeMap::new();
    let mut devices: BTreeMap<String, Vec<Interval>> = BTreeMap::new();
    let mut window: Option<Interval> = None;
    for s in spans {
        let slot = match s.name.as_str() {
            "synthesize" | "queue.wait" | "prove" => s.name.as_str(),
            _ => continue,
        };
        let (Some(job_id), Some(partition)) = (s.attr_text("job_id"), s.attr_i64("partition")) else {
            continue;
        };
        let iv = interval(s);
        window = Some(window.map_or(iv, |w| (w.0.min(iv.0), w.1.max(iv.1))));
        let row = rows.entry((job_id.clone(), partition)).or_insert_with(|| Row {
            job_id,
            partition,
            synth: vec![],
            queue: vec![],
            prove: vec![],
        });
        match slot {
            "synthesize" => row.synth.push(iv),
            "queue.wait" => row.queue.push(iv),
            _ => {
                row.prove.push(iv);
                devices.entry(device_name(s)).or_default().push(iv);
            }
        }
    }
    let window = window.unwrap_or((0, 0));
    let window_ns = (window.1 - window.0).max(1) as f64;
    let devices: Vec<Device> = devices.into_iter().map(|(name, ivs)| device_report(name, ivs, window_ns)).collect();
    let stages: Vec<StageMedian> = STAGES.iter().filter_map(|&stage| stage_median(spans, stage)).collect();
    let total = |name: &str| spans.iter().filter(|s| s.name == name).map(Span::duration_s).sum::<f64>();
    let (synth_total, prove_total) = (total("synthesize"), total("prove"));
    let synth_gpu_ratio = (prove_total > 0.0).then(|| synth_total / prove_total);
    let bound_by = bound_by(&stages, &devices);
    let mut rows: Vec<Row> = rows.into_values().collect();
    rows.sort_by_key(|r| (r.synth.first().or(r.queue.first()).or(r.prove.first()).map(|i| i.0), r.partition));
    let jobs = job_windows(&rows);
    let proving = jobs.iter().map(|j| j.proving).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    Report { window, rows, jobs, proving, devices, stages, synth_gpu_ratio, bound_by }
}

/// Each job's proving window from its rows, in the order its proving began.
fn job_windows(rows: &[Row]) -> Vec<JobWindow> {
    let mut jobs: BTreeMap<&str, JobWindow> = BTreeMap::new();
    for r in rows {
        let Some(proving) = r.prove.iter().copied().reduce(|a, b| (a.0.min(b.0), a.1.max(b.1))) else {
            continue;
        };
        let first = [&r.synth, &r.queue, &r.prove].iter().find_map(|ivs| ivs.iter().map(|i| i.0).min());
        let first = first.unwrap_or(proving.0);
        let job = jobs.entry(r.job_id.as_str()).or_insert_with(|| JobWindow {
            job_id: r.job_id.clone(),
            partitions: 0,
            proving,
            first_start_ns: first,
        });
        job.partitions += 1;
        job.proving = (job.proving.0.min(proving.0), job.proving.1.max(proving.1));
        job.first_start_ns = job.first_start_ns.min(first);
    }
    let mut jobs: Vec<JobWindow> = jobs.into_values().collect();
    jobs.sort_by_key(|j| (j.proving.0, j.job_id.clone()));
    jobs
}

fn interval(s: &Span) -> Interval {
    (s.start_ns, s.end_ns.max(s.start_ns))
}

/// One device's busy time in a window of `window_ns`, from its prove spans' intervals: merged,
/// with the idle gaps between them.
fn device_report(name: String, intervals: Vec<Interval>, window_ns: f64) -> Device {
    let busy = merge(intervals);
    let busy_ns: u64 = busy.iter().map(|(s, e)| e - s).sum();
    let gaps: Vec<f64> =
        busy.windows(2).map(|w| w[1].0 - w[0].1).filter(|g| *g >= MIN_IDLE_GAP_NS).map(|g| g as f64 / 1e9).collect();
    let proving_ns = match (busy.first(), busy.last()) {
        (Some(first), Some(last)) => (last.1 - first.0).max(1) as f64,
        _ => 1.0,
    };
    Device {
        name,
        busy_s: busy_ns as f64 / 1e9,
        busy_fraction: busy_ns as f64 / window_ns,
        steady_fraction: busy_ns as f64 / proving_ns,
        gaps: GapStats { count: gaps.len(), max_s: gaps.iter().cloned().fold(0.0, f64::max), median_s: median(gaps) },
        busy,
    }
}

/// The median duration and the most parallel instances of the spans named `stage`, if any.
fn stage_median(spans: &[Span], stage: &'static str) -> Option<StageMedian> {
    let of: Vec<&Span> = spans.iter().filter(|s| s.name == stage).collect();
    if of.is_empty() {
        return None;
    }
    let ivs: Vec<Interval> = of.iter().map(|s| interval(s)).collect();
    Some(StageMedian {
        stage,
        count: of.len(),
        median_s: median(of.iter().map(|s| s.duration_s()).collect()),
        max_parallel: max_parallel(&ivs),
    })
}

/// The stage with the least capacity (observed parallelism / median duration) bounds
/// throughput; a device busy ≥ 95% of the window is GPU-bound whatever the arithmetic says.
fn bound_by(stages: &[StageMedian], devices: &[Device]) -> String {
    if let Some(d) = devices.iter().find(|d| d.busy_fraction >= 0.95) {
        return format!("proving: {} is busy {:.1}% of the window", d.name, 100.0 * d.busy_fraction);
    }
    let capacity = |name: &str| {
        stages.iter().find(|s| s.stage == name && s.median_s > 0.0).map(|s| (s.max_parallel as f64 / s.median_s, s))
    };
    match (capacity("synthesize"), capacity("prove")) {
        (Some((cs, s)), Some((cp, p))) => {
            let (stage, why) = if cs < cp {
                ("synthesis", "feeds the provers slower than they prove")
            } else {
                ("proving", "is the slower stage")
            };
            format!(
                "{stage} ({why}): synthesis {} × 1/{:.3} s = {cs:.2} partitions/s, proving {} × 1/{:.3} s = {cp:.2} partitions/s",
                s.max_parallel, s.median_s, p.max_parallel, p.median_s
            )
        }
        _ => "not enough spans to tell".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_joins_overlaps_and_keeps_gaps() {
        assert_eq!(merge(vec![(5, 6), (1, 3), (2, 4), (6, 7)]), vec![(1, 4), (5, 7)]);
    }

    #[test]
    fn parallelism_counts_overlaps_not_touching_intervals() {
        assert_eq!(max_parallel(&[(0, 10), (5, 15), (10, 20)]), 2);
        assert_eq!(max_parallel(&[(0, 10), (10, 20)]), 1);
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
