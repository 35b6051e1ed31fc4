//! `snarkflow bench synth`: a synth-worker's steps on one partition, in core-seconds. The
//! witness comes from the kind's native generator where it has one (a 2 KiB PoRep fixture)
//! and from the gadgets otherwise (a synthetic kind); a partition the input does not have and
//! a thread count of 0 are refused with what is wrong.

use std::process::{Command, Output};

fn snarkflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snarkflow")).args(args).output().expect("running snarkflow")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The step rows of one thread count's table: (name, wall s, core-s).
fn rows(stdout: &str) -> Vec<(String, f64, f64)> {
    stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| step"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(|c| c.trim().trim_matches('*')).collect();
            (cells[0].to_owned(), cells[1].parse().unwrap(), cells[2].parse().unwrap())
        })
        .collect()
}

/// A 2 KiB PoRep fixture's C1 file, in a directory that lives as long as the guard.
fn porep_fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("fx");
    let made =
        snarkflow(&["filecoin", "fixture", "--sector-size", "2KiB", "--seed", "1", "--out", fixture.to_str().unwrap()]);
    assert!(made.status.success(), "{}", text(&made));
    (dir, fixture.join("c1.json"))
}

#[test]
fn synth_times_each_step_of_a_native_porep_partition_and_sizes_the_cores() {
    let (_dir, c1) = porep_fixture();
    let out = snarkflow(&[
        "bench",
        "synth",
        "--kind",
        "porep-c2",
        "--c1",
        c1.to_str().unwrap(),
        "--miner-id",
        "1000",
        "--threads",
        "1,2",
        "--runs",
        "1",
        "--gpu-seconds",
        "0.5",
        "--slots",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", text(&out));
    // a 2 KiB PoRep partition: 2,685,713 values (docs/benchmarks.md's bench hop row)
    assert_eq!(stdout.matches("2685713 values").count(), 2, "{stdout}");
    let rows = rows(&stdout);
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let one_table = ["witness (native)", "serialize (compact wire form)", "digest (SHA-256, store)", "per partition"];
    assert_eq!(names, [one_table, one_table].concat(), "{stdout}");
    for table in rows.chunks(4) {
        let (wall, core): (f64, f64) = (table[..3].iter().map(|r| r.1).sum(), table[..3].iter().map(|r| r.2).sum());
        assert!(table[0].2 > 0.0, "the witness took no CPU time: {stdout}");
        assert!(
            (table[3].1 - wall).abs() < 0.01 && (table[3].2 - core).abs() < 0.01,
            "the total is the steps' sum: {stdout}"
        );
    }
    // two slots at once on the 2 threads, a partition each: 2 partitions, core-seconds each
    let slots =
        stdout.lines().find(|l| l.starts_with("2 slots at once on 2 thread(s): 2 partitions in ")).expect(&stdout);
    let each: f64 = slots.rsplit(", ").next().unwrap().trim_end_matches(" core-s each").parse().unwrap();
    assert!(each > 0.0, "{stdout}");
    assert_eq!(stdout.matches("cores at 0.5 s per partition").count(), 3, "{stdout}");
}

#[test]
fn synth_uses_the_gadgets_where_a_kind_has_no_native_generator() {
    let out = snarkflow(&["bench", "synth", "--kind", "sha256-chain", "--blocks", "2", "--runs", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let names: Vec<String> = rows(&String::from_utf8_lossy(&out.stdout)).into_iter().map(|r| r.0).collect();
    assert_eq!(names[0], "witness (gadgets)", "{}", text(&out));
}

#[test]
fn synth_refuses_a_partition_past_the_input_and_zero_threads() {
    let (_dir, c1) = porep_fixture();
    let c1 = c1.to_str().unwrap();
    let past =
        snarkflow(&["bench", "synth", "--kind", "porep-c2", "--c1", c1, "--miner-id", "1000", "--partition", "9"]);
    assert!(!past.status.success());
    assert!(text(&past).contains("partition 9 of a circuit with 1 partitions"), "{}", text(&past));
    let zero = snarkflow(&["bench", "synth", "--kind", "sha256-chain", "--blocks", "2", "--threads", "0"]);
    assert!(!zero.status.success());
    assert!(text(&zero).contains("--threads: every count must be at least 1"), "{}", text(&zero));
}
