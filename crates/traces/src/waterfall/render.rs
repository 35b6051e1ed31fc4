//! Text and SVG renderings of a [`Report`].

use std::fmt::Write as _;

use super::{Interval, Report};

fn overlaps(ivs: &[Interval], a: u64, b: u64) -> bool {
    ivs.iter().any(|&(s, e)| s < b && e > a)
}

fn bar(report: &Report, width: usize, layers: &[(&[Interval], char)]) -> String {
    let (t0, t1) = report.window;
    let step = ((t1 - t0) as f64 / width as f64).max(1.0);
    (0..width)
        .map(|c| {
            let a = t0 + (c as f64 * step) as u64;
            let b = t0 + ((c + 1) as f64 * step) as u64;
            layers.iter().find(|(ivs, _)| overlaps(ivs, a, b.max(a + 1))).map(|(_, ch)| *ch).unwrap_or(' ')
        })
        .collect()
}

fn short(id: &str) -> &str {
    &id[..id.len().min(8)]
}

/// The seed-style text waterfall and summary. `width` is the timeline width in columns.
pub fn render_text(report: &Report, width: usize) -> String {
    let mut out = String::new();
    let w = report.window_s();
    let _ = writeln!(
        out,
        "waterfall: {} partitions, {} devices, window {:.3} s   (S synthesis, . queue wait, G proving)",
        report.rows.len(),
        report.devices.len(),
        w
    );
    let label_width = 16;
    let _ = writeln!(out, "{:label_width$} |0 s{:>pad$}|", "", format!("{w:.2} s"), pad = width.saturating_sub(3));
    for d in &report.devices {
        let label = format!("{:.16}", d.name);
        let _ = writeln!(out, "{label:label_width$} |{}|", bar(report, width, &[(&d.busy, 'G')]));
    }
    let _ = writeln!(out, "{:-<1$}", "", label_width + width + 2);
    for r in &report.rows {
        let label = format!("{} p{}", short(&r.job_id), r.partition);
        let _ = writeln!(
            out,
            "{label:label_width$} |{}|",
            bar(report, width, &[(&r.prove, 'G'), (&r.synth, 'S'), (&r.queue, '.')])
        );
    }
    let _ = writeln!(out);
    for d in &report.devices {
        let _ = writeln!(
            out,
            "GPU {}: busy {:.3} s of {:.3} s = {:.1}% (first to last proof: {:.1}%); idle gaps {} (median {:.3} s, max {:.3} s)",
            d.name,
            d.busy_s,
            w,
            100.0 * d.busy_fraction,
            100.0 * d.steady_fraction,
            d.gaps.count,
            d.gaps.median_s,
            d.gaps.max_s
        );
    }
    if let Some((first, last)) = report.proving {
        let partitions: usize = report.jobs.iter().map(|j| j.partitions).sum();
        let _ = writeln!(
            out,
            "proving, first prove start to last prove end: {:.3} s for {partitions} partitions of {} jobs",
            (last - first) as f64 / 1e9,
            report.jobs.len()
        );
        let at = |t: u64| (t - report.window.0) as f64 / 1e9;
        for j in &report.jobs {
            let _ = writeln!(
                out,
                "  {}: {} partitions proved in {:.3} s ({:.3}–{:.3} s; its first partition began at {:.3} s)",
                short(&j.job_id),
                j.partitions,
                j.proving_s(),
                at(j.proving.0),
                at(j.proving.1),
                at(j.first_start_ns)
            );
        }
    }
    if let Some(r) = report.synth_gpu_ratio {
        let _ = writeln!(out, "synthesis / GPU time: {r:.3}");
    }
    let _ = writeln!(out, "stage medians:");
    for s in &report.stages {
        let _ =
            writeln!(out, "  {:<12} {:>9.4} s  (n={}, up to {} at once)", s.stage, s.median_s, s.count, s.max_parallel);
    }
    let _ = writeln!(out, "throughput bounded by: {}", report.bound_by);
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

const LEFT: f64 = 170.0;
const PLOT_W: f64 = 900.0;
const ROW_H: f64 = 16.0;

/// An SVG being written: the report's time window mapped onto the plot's width.
struct Svg {
    t0: u64,
    span_ns: f64,
    out: String,
}

impl Svg {
    fn x(&self, t: u64) -> f64 {
        LEFT + PLOT_W * (t.saturating_sub(self.t0)) as f64 / self.span_ns
    }

    /// The picture's opening, its title and the time axis (ten ticks down to `bottom`).
    fn header(&mut self, report: &Report, height: f64, bottom: f64) {
        let _ = write!(
            self.out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" font-family="monospace" font-size="11">"#,
            LEFT + PLOT_W + 200.0
        );
        let _ = write!(self.out, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
        let _ = write!(
            self.out,
            r#"<text x="10" y="16" font-size="13">snarkflow waterfall — window {:.3} s — S synthesis (blue), queue wait (grey), G proving (red)</text>"#,
            report.window_s()
        );
        let ticks = 10;
        for i in 0..=ticks {
            let t = self.t0 + (self.span_ns * i as f64 / ticks as f64) as u64;
            let xx = self.x(t);
            let _ = write!(
                self.out,
                r##"<line x1="{xx}" y1="24" x2="{xx}" y2="{bottom}" stroke="#eeeeee"/><text x="{xx}" y="34" text-anchor="middle">{:.2}s</text>"##,
                (t - self.t0) as f64 / 1e9
            );
        }
    }

    /// One labelled row at height `y`: each layer's intervals as bars of its colour.
    fn row(&mut self, y: f64, label: &str, layers: &[(&[Interval], &str)]) {
        let _ = write!(self.out, r#"<text x="10" y="{}">{}</text>"#, y + ROW_H - 4.0, escape(label));
        for (ivs, colour) in layers {
            for &(s, e) in *ivs {
                let (xs, xe) = (self.x(s), self.x(e));
                let _ = write!(
                    self.out,
                    r#"<rect x="{xs:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{colour}"/>"#,
                    y + 2.0,
                    (xe - xs).max(0.5),
                    ROW_H - 4.0
                );
            }
        }
    }

    /// The summary lines under the rows, from `y` down; closes the picture.
    fn summary(&mut self, report: &Report, mut y: f64) {
        for d in &report.devices {
            let _ = write!(
                self.out,
                r#"<text x="10" y="{y}">GPU {}: busy {:.1}% (first to last proof: {:.1}%), idle gaps {} (median {:.3} s, max {:.3} s)</text>"#,
                escape(&d.name),
                100.0 * d.busy_fraction,
                100.0 * d.steady_fraction,
                d.gaps.count,
                d.gaps.median_s,
                d.gaps.max_s
            );
            y += 18.0;
        }
        if let Some(r) = report.synth_gpu_ratio {
            let _ = write!(self.out, r#"<text x="10" y="{y}">synthesis / GPU time: {r:.3}</text>"#);
            y += 18.0;
        }
        let _ = write!(
            self.out,
            r#"<text x="10" y="{y}">throughput bounded by: {}</text></svg>"#,
            escape(&report.bound_by)
        );
    }
}

/// The same as an SVG picture.
pub fn render_svg(report: &Report) -> String {
    let (t0, t1) = report.window;
    let mut svg = Svg { t0, span_ns: (t1 - t0).max(1) as f64, out: String::new() };
    let rows = report.devices.len() + report.rows.len();
    let summary_lines = 3 + report.devices.len();
    let height = 40.0 + ROW_H * (rows as f64 + 1.0) + 18.0 * summary_lines as f64;
    svg.header(report, height, 40.0 + ROW_H * rows as f64);
    let mut y = 40.0;
    for d in &report.devices {
        svg.row(y, &format!("GPU {:.18}", d.name), &[(&d.busy, "#e15759")]);
        y += ROW_H;
    }
    for r in &report.rows {
        let label = format!("{} p{}", short(&r.job_id), r.partition);
        svg.row(y, &label, &[(&r.queue, "#bab0ac"), (&r.synth, "#4e79a7"), (&r.prove, "#e15759")]);
        y += ROW_H;
    }
    svg.summary(report, y + 20.0);
    svg.out
}
