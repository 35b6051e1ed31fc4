//! The SpMV kernels' unfolding of a folded constraint matrix, checked on the host: `cuda/fold.cuh`
//! is plain C++ under a host compiler, so `cuda/tests/fold_layout.cpp` runs its index
//! arithmetic over many folds (every row of the result made once, from the stored row and block
//! the thread-per-row kernel names; only a block's own columns moved) on machines without a GPU.

use std::path::Path;
use std::process::Command;

#[test]
fn the_spmv_kernels_unfold_every_row_once_from_its_stored_row() {
    let cuda = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda");
    let dir = std::env::temp_dir().join(format!("sf-fold-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("fold_layout");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(cuda.join("tests/fold_layout.cpp"))
        .output()
        .unwrap_or_else(|e| panic!("running the C++ compiler {cxx:?}: {e}"));
    assert!(built.status.success(), "compiling fold_layout.cpp: {}", String::from_utf8_lossy(&built.stderr));
    let ran = Command::new(&exe).output().unwrap();
    let out = String::from_utf8_lossy(&ran.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ran.status.success(), "{out}");
    assert!(out.contains(" 0 failures"), "{out}");
}
