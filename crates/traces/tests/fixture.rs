//! The waterfall report on a fixed span file, against figures computed by hand.
//!
//! The file holds two jobs of two partitions each, one prover (`gpu-1/cpu`):
//!
//! | row   | synthesize | queue.wait | prove   |
//! |-------|------------|------------|---------|
//! | a p0  | 0–2 s      | —          | 2–4 s   |
//! | a p1  | 0–3 s      | 3–5 s      | 5–6 s   |
//! | b p0  | 2–6 s      | 6–8 s      | 8–9 s   |
//! | b p1  | 3–8 s      | 8–9 s      | 9–10 s  |
//!
//! By hand: window 0–10 s; the prover is busy 2–4, 5–6, 8–10 = 5 s → 50%; idle gaps 4–5 and
//! 6–8 → 2 gaps, median 1.5 s, max 2 s; synthesis 2+3+4+5 = 14 s over proving 2+1+1+1 = 5 s →
//! 2.8; synthesis median 3.5 s with at most 2 at once → 0.57 partitions/s, proving median 1 s,
//! 1 at once → 1 partition/s: synthesis bounds throughput. Proving runs 2–10 s in all; job a's
//! partitions prove 2–6 s (4 s, its first synthesis at 0 s), job b's 8–10 s (2 s, from 2 s).

use snarkflow_traces::{otlp, waterfall};

fn report() -> waterfall::Report {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/two-jobs.otlp.json")).unwrap();
    waterfall::analyze(&otlp::parse_json(&text).unwrap())
}

#[test]
fn gpu_busy_fraction_and_gaps_match_the_hand_computation() {
    let r = report();
    assert!((r.window_s() - 10.0).abs() < 1e-9);
    assert_eq!(r.devices.len(), 1);
    let d = &r.devices[0];
    assert_eq!(d.name, "gpu-1/cpu");
    assert!((d.busy_s - 5.0).abs() < 1e-9, "{}", d.busy_s);
    assert!((d.busy_fraction - 0.5).abs() < 1e-9, "{}", d.busy_fraction);
    // proofs from 2 s to 10 s: 5 s busy of 8
    assert!((d.steady_fraction - 0.625).abs() < 1e-9, "{}", d.steady_fraction);
    assert_eq!(d.gaps.count, 2);
    assert!((d.gaps.median_s - 1.5).abs() < 1e-9 && (d.gaps.max_s - 2.0).abs() < 1e-9);
}

#[test]
fn ratio_medians_and_bound_match_the_hand_computation() {
    let r = report();
    assert!((r.synth_gpu_ratio.unwrap() - 2.8).abs() < 1e-9);
    let stage = |n: &str| r.stages.iter().find(|s| s.stage == n).unwrap().clone();
    assert_eq!((stage("synthesize").median_s, stage("synthesize").max_parallel), (3.5, 2));
    assert_eq!((stage("prove").median_s, stage("prove").max_parallel), (1.0, 1));
    assert_eq!((stage("queue.wait").median_s, stage("queue.wait").count), (2.0, 3));
    assert!(r.bound_by.starts_with("synthesis"), "{}", r.bound_by);
}

#[test]
fn each_jobs_proving_window_matches_the_hand_computation() {
    let r = report();
    let s = 1_000_000_000u64;
    let t0 = r.window.0;
    assert_eq!(r.proving.map(|(a, b)| (a - t0, b - t0)), Some((2 * s, 10 * s)));
    let jobs: Vec<(String, usize, f64, u64)> =
        r.jobs.iter().map(|j| (j.job_id[..1].to_owned(), j.partitions, j.proving_s(), j.first_start_ns - t0)).collect();
    assert_eq!(jobs, vec![("a".to_owned(), 2, 4.0, 0), ("b".to_owned(), 2, 2.0, 2 * s)]);
    let text = waterfall::render_text(&r, 20);
    assert!(
        text.contains("proving, first prove start to last prove end: 8.000 s for 4 partitions of 2 jobs"),
        "{text}"
    );
    assert!(
        text.contains(
            "  aaaaaaaa: 2 partitions proved in 4.000 s (2.000–6.000 s; its first partition began at 0.000 s)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "  bbbbbbbb: 2 partitions proved in 2.000 s (8.000–10.000 s; its first partition began at 2.000 s)"
        ),
        "{text}"
    );
}

#[test]
fn text_waterfall_draws_every_partition_on_one_axis() {
    let text = waterfall::render_text(&report(), 20);
    let row = |label: &str| {
        text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no row {label}:\n{text}")).to_owned()
    };
    // 20 columns of 0.5 s: a p0 synthesizes columns 0–3, proves 4–7
    assert_eq!(row("aaaaaaaa p0"), format!("{:16} |SSSSGGGG            |", "aaaaaaaa p0"));
    assert_eq!(row("bbbbbbbb p1"), format!("{:16} |      SSSSSSSSSS..GG|", "bbbbbbbb p1"));
    assert_eq!(row("gpu-1/cpu"), format!("{:16} |    GGGG  GG    GGGG|", "gpu-1/cpu"));
    assert!(
        text.contains(
            "busy 5.000 s of 10.000 s = 50.0% (first to last proof: 62.5%); idle gaps 2 (median 1.500 s, max 2.000 s)"
        ),
        "{text}"
    );
    let svg = waterfall::render_svg(&report());
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    assert_eq!(svg.matches("fill=\"#e15759\"").count(), 4 + 3, "a red bar per proof and per merged busy interval");
}
