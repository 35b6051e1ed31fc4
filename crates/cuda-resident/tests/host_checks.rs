//! The device code's index and plan arithmetic, checked on the host: `cuda/fold.cuh`,
//! `cuda/compact_index.h`, `cuda/one_pass_plan.h`, `cuda/one_pass_digits.h` and
//! `cuda/one_pass_windows.h` are plain C++ under a host compiler, so
//! the programs in `cuda/tests/` run them on machines without a GPU.
//!
//! - `fold_layout.cpp`: the SpMV kernels' unfolding of a folded constraint matrix over many folds
//!   (every row of the result made once, from the stored row and block the thread-per-row kernel
//!   names; only a block's own columns moved).
//! - `compact_index.cpp`: the compact witness's decoding (`expand_witness`, the compact plan's
//!   SpMV view): every value's class, and each value that is neither 0 nor 1 at the index a
//!   sequential walk gives it.
//! - `one_pass_plan.cpp`: the one-pass MSM's plan arithmetic (`cuda/one_pass_plan.h`): the
//!   resident H's windows and workspace at 2^27 points, and the batched H's plan for each batch
//!   size the streamed plans stream: within the room the memory plans keep for it, and the least
//!   work a point of every window and part that fits; the widened plan (a wide top window).
//! - `one_pass_digits.cpp`: a scalar's window digits (`cuda/one_pass_digits.h`, made on the
//!   device by `one_pass_breakdown`): they add back up to the scalar (or its negation) for the
//!   plain and widened plans, each fits its window's keys, a wide top digit is never negative.
//! - `one_pass_windows.cpp`: a window's sum from its bucket runs, summed in parts on host
//!   threads and combined (`cuda/one_pass_windows.h`), against the direct weighted sum, with a
//!   stand-in group.

use std::path::Path;
use std::process::Command;

/// Compile `cuda/tests/{name}.cpp` with the host's C++ compiler, run it, and return what it
/// printed, asserting it exited 0 and reported no failures.
fn run_host_check(name: &str) -> String {
    let cuda = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda");
    let dir = std::env::temp_dir().join(format!("sf-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(name);
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(cuda.join(format!("tests/{name}.cpp")))
        .output()
        .unwrap_or_else(|e| panic!("running the C++ compiler {cxx:?}: {e}"));
    assert!(built.status.success(), "compiling {name}.cpp: {}", String::from_utf8_lossy(&built.stderr));
    let ran = Command::new(&exe).output().unwrap();
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ran.status.success(), "{out}");
    assert!(out.contains(" 0 failures"), "{out}");
    out
}

#[test]
fn the_spmv_kernels_unfold_every_row_once_from_its_stored_row() {
    run_host_check("fold_layout");
}

#[test]
fn a_compact_witness_decodes_every_value_to_its_place() {
    let out = run_host_check("compact_index");
    assert!(out.contains("56 witnesses"), "{out}");
}

#[test]
fn the_msm_window_digits_add_back_up_to_the_scalar_with_a_wide_top_window_too() {
    let out = run_host_check("one_pass_digits");
    assert!(out.contains("12 windows of 21 bits, top 24 bits (row 2^23): largest top digit 7597479"), "{out}");
}

#[test]
fn a_window_summed_in_parts_on_host_threads_is_the_whole_window_s_weighted_sum() {
    let out = run_host_check("one_pass_windows");
    assert!(out.contains("30 windows summed in parts of 2048 runs"), "{out}");
}

#[test]
fn the_batched_h_takes_the_least_work_that_fits_the_room_kept_for_it() {
    let out = run_host_check("one_pass_plan");
    assert!(out.contains("batch   44739242: 17-bit windows"), "{out}");
}
