//! Compiles `cuda/resident.cu` with nvcc when the `cuda` feature is on. Architectures come from
//! `SNARKFLOW_CUDA_ARCHS` (space-separated compute capabilities), as in
//! deploy/scripts/cuda-env.sh, which exports it; unset, every architecture providers own that
//! the toolkit knows. The newest one is also embedded as PTX, for the driver to JIT-compile on
//! newer devices. (cuda-env.sh's `NVCC_APPEND_FLAGS` adds the same list to every nvcc run.)
//!
//! What was built is handed to the crate's code, so a worker can say what it carries and refuse
//! a device it has no kernels for: `SNARKFLOW_CUDA_ARCHS_BUILT` (the SASS list),
//! `SNARKFLOW_CUDA_PTX_ARCH` and `SNARKFLOW_CUDA_TOOLKIT_BUILT` (nvcc's `major.minor`); all empty
//! without the `cuda` feature, so `env!` compiles either way.
//!
//! Under `cargo clippy` the kernels are not compiled: a check links nothing, and nvcc's ~4.5
//! minutes (two cores) would be spent again by the build after it, since clippy's wrapper makes
//! this script's run a unit of its own. The build compiles them (and reports nvcc's errors).

use std::process::Command;

/// A100, RTX 3090/A6000, RTX 4090/L40S, H100/H200, B200, RTX 50-series (docs/gpu.md)
const ARCHS_PROVIDERS_OWN: &str = "80 86 89 90 100 120";
/// sm_100 and sm_120 came with CUDA 12.8: an older nvcc rejects them
const ARCHS_BEFORE_CUDA_12_8: &str = "80 86 89 90";

fn main() {
    println!("cargo:rerun-if-changed=cuda");
    for var in ["SNARKFLOW_CUDA_ARCHS", "CUDA_PATH", "NVCC_APPEND_FLAGS"] {
        // CUDA_PATH names the toolkit cuda-env.sh put first on PATH (cargo does not track PATH)
        println!("cargo:rerun-if-env-changed={var}");
    }
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        export_built("", "", "");
        return;
    }
    let mut nvcc = cc::Build::new();
    nvcc.cuda(true);
    targets(&mut nvcc);
    if under_clippy() {
        return;
    }
    configure(&mut nvcc);
    nvcc.file("cuda/resident.cu");
    let objects = nvcc.compile_intermediates();
    for object in &objects {
        keep_ours_local(object);
    }
    let mut archive = cc::Build::new();
    archive.cuda(true).cudart("static");
    for object in &objects {
        archive.object(object);
    }
    archive.compile("snarkflow_resident");
}

/// SASS for each architecture of `SNARKFLOW_CUDA_ARCHS` (default: every one providers own that
/// the toolkit knows) and PTX of the newest; what was chosen is exported to the crate.
fn targets(nvcc: &mut cc::Build) {
    let (major, minor) = nvcc_version(nvcc.get_compiler().path());
    let default_archs = if (major, minor) >= (12, 8) { ARCHS_PROVIDERS_OWN } else { ARCHS_BEFORE_CUDA_12_8 };
    let archs = std::env::var("SNARKFLOW_CUDA_ARCHS").unwrap_or_else(|_| default_archs.into());
    let archs: Vec<&str> = archs.split_whitespace().collect();
    for a in &archs {
        assert!(
            !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()),
            "SNARKFLOW_CUDA_ARCHS holds compute capabilities such as \"86 90\", not {a:?}"
        );
    }
    let ptx = archs.iter().max_by_key(|a| a.parse::<u32>().unwrap_or(0)).expect("SNARKFLOW_CUDA_ARCHS is empty");
    export_built(&archs.join(" "), ptx, &format!("{major}.{minor}"));
    for a in &archs {
        nvcc.flag("-gencode").flag(format!("arch=compute_{a},code=sm_{a}"));
    }
    nvcc.flag("-gencode").flag(format!("arch=compute_{ptx},code=compute_{ptx}"));
}

/// Defines, include paths and the flags that keep our copies of sppark's symbols our own.
fn configure(nvcc: &mut cc::Build) {
    nvcc.define("FEATURE_BLS12_381", None);
    nvcc.define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None);
    // blst's assembly entry points take the ADX path when the build machine has it, as blst does
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("adx") {
        nvcc.define("__ADX__", None);
    }
    for var in ["DEP_SPPARK_ROOT", "DEP_BLST_C_SRC"] {
        let dir =
            std::env::var_os(var).unwrap_or_else(|| panic!("{var} is not set: sppark and blst must be dependencies"));
        nvcc.include(dir);
    }
    nvcc.flag("-Xcompiler").flag("-Wno-unused-function");
    nvcc.flag("-Xcompiler").flag("-Wno-subobject-linkage");
    // sppark's headers define kernels (sort, breakdown, the NTT steps…) with external linkage,
    // and supraseal-c2 compiles the same headers into the same binary: everything of ours but
    // the sf_* entry points is hidden, then made local, so the two copies never collide.
    nvcc.flag("-Xcompiler").flag("-fvisibility=hidden");
    // and no weak (COMDAT) template instances: the linker keeps one copy of a COMDAT group by
    // its name whatever the symbol visibility, which would hand supraseal our local copies
    nvcc.flag("-Xcompiler").flag("-fno-weak");
    // cooperative_groups.h trips "semantics of inline variable" notes under -fno-weak (harmless
    // for its constants): keep them out of the build log; errors still fail the build
    nvcc.cargo_warnings(false);
}

/// The object's hidden symbols made local. The compiler's exception-handling references
/// (`DW.ref.*`) are COMDAT groups every C++ object has: renamed, ours stay ours (made local
/// under their own name, the linker may keep the other library's group and leave our unwind
/// tables pointing into a discarded section).
fn keep_ours_local(object: &std::path::Path) {
    let listed = Command::new("nm").arg("--format=posix").arg(object).output().expect("running nm (binutils)");
    let renames: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.starts_with("DW.ref."))
        .map(|name| format!("--redefine-sym={name}=snarkflow_resident.{name}"))
        .collect();
    let status = Command::new("objcopy")
        .arg("--localize-hidden")
        .args(&renames)
        .arg(object)
        .status()
        .expect("running objcopy (binutils)");
    assert!(status.success(), "objcopy {} failed", object.display());
}

/// Whether cargo runs this script for `cargo clippy`: Cargo hands build scripts the wrapper it
/// compiles workspace members with, and clippy's is `clippy-driver`.
fn under_clippy() -> bool {
    println!("cargo:rerun-if-env-changed=RUSTC_WORKSPACE_WRAPPER");
    std::env::var_os("RUSTC_WORKSPACE_WRAPPER")
        .and_then(|w| std::path::Path::new(&w).file_stem().map(|s| s.to_string_lossy().starts_with("clippy-driver")))
        .unwrap_or(false)
}

/// What the crate's code reads with `env!` (see the crate docs above).
fn export_built(archs: &str, ptx: &str, toolkit: &str) {
    println!("cargo:rustc-env=SNARKFLOW_CUDA_ARCHS_BUILT={archs}");
    println!("cargo:rustc-env=SNARKFLOW_CUDA_PTX_ARCH={ptx}");
    println!("cargo:rustc-env=SNARKFLOW_CUDA_TOOLKIT_BUILT={toolkit}");
}

/// The toolkit's version from `nvcc --version` ("… release 12.4, V12.4.131"), as sppark reads it.
fn nvcc_version(nvcc: &std::path::Path) -> (u32, u32) {
    let out =
        Command::new(nvcc).arg("--version").output().unwrap_or_else(|e| panic!("running {}: {e}", nvcc.display()));
    let text = String::from_utf8_lossy(&out.stdout);
    let release = text
        .split("release ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no \"release X.Y,\" in {} --version: {text}", nvcc.display()));
    let (major, minor) = release.split_once('.').unwrap_or((release, "0"));
    let parse = |n: &str| n.trim().parse::<u32>().unwrap_or_else(|_| panic!("nvcc release {release:?} is not X.Y"));
    (parse(major), parse(minor))
}
