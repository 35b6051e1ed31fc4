//! Compiles `cuda/resident.cu` with nvcc when the `cuda` feature is on. Architectures come from
//! `SNARKFLOW_CUDA_ARCHS` (space-separated compute capabilities, default `90` for H100/H200),
//! as in deploy/scripts/cuda-env.sh; the last one is also embedded as PTX.

fn main() {
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-env-changed=SNARKFLOW_CUDA_ARCHS");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let archs = std::env::var("SNARKFLOW_CUDA_ARCHS").unwrap_or_else(|_| "90".into());
    let archs: Vec<&str> = archs.split_whitespace().collect();
    let mut nvcc = cc::Build::new();
    nvcc.cuda(true);
    for a in &archs {
        nvcc.flag("-gencode").flag(format!("arch=compute_{a},code=sm_{a}"));
    }
    if let Some(last) = archs.last() {
        nvcc.flag("-gencode").flag(format!("arch=compute_{last},code=compute_{last}"));
    }
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
    nvcc.file("cuda/resident.cu");
    let objects = nvcc.compile_intermediates();
    for object in &objects {
        // The compiler's exception-handling references (`DW.ref.*`) are COMDAT groups every
        // C++ object has: renamed, ours stay ours (made local under their own name, the linker
        // may keep the other library's group and leave our unwind tables pointing into a
        // discarded section).
        let listed =
            std::process::Command::new("nm").arg("--format=posix").arg(object).output().expect("running nm (binutils)");
        let renames: Vec<String> = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| name.starts_with("DW.ref."))
            .map(|name| format!("--redefine-sym={name}=snarkflow_resident.{name}"))
            .collect();
        let status = std::process::Command::new("objcopy")
            .arg("--localize-hidden")
            .args(&renames)
            .arg(object)
            .status()
            .expect("running objcopy (binutils)");
        assert!(status.success(), "objcopy {} failed", object.display());
    }
    let mut archive = cc::Build::new();
    archive.cuda(true).cudart("static");
    for object in &objects {
        archive.object(object);
    }
    archive.compile("snarkflow_resident");
}
