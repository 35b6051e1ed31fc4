//! Whether this binary's GPU kernels can run on a device under its driver, and if not, what is
//! missing and which build has it. Pure and dependency-free: the caller passes what the build
//! recorded (crates/cuda-resident/build.rs: `SNARKFLOW_CUDA_ARCHS_BUILT`,
//! `SNARKFLOW_CUDA_PTX_ARCH`, `SNARKFLOW_CUDA_TOOLKIT_BUILT`) and what the driver reports
//! (compute capability, `cudaDriverGetVersion`).
//!
//! The rules, from NVIDIA's compatibility model:
//! - SASS built for sm_XY runs on a device of the same major X with minor ≥ Y; sm_90 SASS only
//!   on 9.0. The arch-specific `a` variants are not built, so never matched.
//! - PTX for compute_XY is JIT-compiled by the driver for any device of compute capability
//!   ≥ X.Y, provided the driver knows the toolkit's PTX ISA: driver CUDA version ≥ toolkit's.
//! - The statically linked cudart refuses a driver of an older CUDA major version than the
//!   toolkit's (minor versions of one major are compatible), whatever the kernels.

use std::fmt;

/// A compute capability, written as in `sm_XY`: 86 for 8.6, 120 for 12.0 (the minor is one digit).
pub type Sm = u32;

/// Cards providers own, per SASS architecture, for messages (shared/reference/gpu-classes.md).
const CARDS: &[(Sm, &str)] = &[
    (80, "A100"),
    (86, "RTX 3060/3090, A6000"),
    (89, "RTX 4080/4090, L40S"),
    (90, "H100, H200"),
    (100, "B200"),
    (120, "RTX 5070 Ti/5090"),
];

/// The first driver branch of each CUDA version (Linux, the toolkit's release driver), for messages.
const DRIVER_BRANCHES: &[(CudaVersion, u32)] = &[
    (CudaVersion::new(12, 0), 525),
    (CudaVersion::new(12, 1), 530),
    (CudaVersion::new(12, 2), 535),
    (CudaVersion::new(12, 3), 545),
    (CudaVersion::new(12, 4), 550),
    (CudaVersion::new(12, 5), 555),
    (CudaVersion::new(12, 6), 560),
    (CudaVersion::new(12, 8), 570),
    (CudaVersion::new(12, 9), 575),
    (CudaVersion::new(13, 0), 580),
];

/// The newest SASS architecture CUDA 12.4 (SNARKFLOW_CUDA_TOOLKIT=12) can build.
const NEWEST_SM_OF_CUDA_12_4: Sm = 90;

/// A CUDA version: a toolkit's, or the newest a driver supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl CudaVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        CudaVersion { major, minor }
    }

    /// From `cudaDriverGetVersion`'s number (12040 is 12.4); `None` for 0, which means no driver.
    pub fn from_driver(version: u32) -> Option<Self> {
        if version == 0 {
            None
        } else {
            Some(CudaVersion::new(version / 1000, version % 1000 / 10))
        }
    }

    /// "driver R580 or newer": the driver that supports this CUDA version.
    fn driver_needed(self) -> String {
        match DRIVER_BRANCHES.iter().find(|(v, _)| *v == self) {
            Some((_, branch)) => format!("driver R{branch} or newer"),
            None => format!("a driver for CUDA {self} or newer"),
        }
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The kernels a binary carries, as its build recorded them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltKernels {
    /// SASS architectures.
    pub sass: Vec<Sm>,
    /// The architecture of the embedded PTX, if any.
    pub ptx: Option<Sm>,
    pub toolkit: CudaVersion,
}

impl BuiltKernels {
    /// From the build script's strings: "80 86 89 90", "90", "12.4". Empty strings (a build
    /// without the `cuda` feature) are an error: such a binary has no kernels at all.
    pub fn from_build_env(archs: &str, ptx: &str, toolkit: &str) -> Result<Self, BuildInfoError> {
        let sm = |s: &str| s.parse::<Sm>().map_err(|_| BuildInfoError::Arch(s.to_owned()));
        let sass = archs.split_whitespace().map(sm).collect::<Result<Vec<_>, _>>()?;
        let ptx = if ptx.is_empty() { None } else { Some(sm(ptx)?) };
        let (major, minor) = toolkit.split_once('.').ok_or(BuildInfoError::NoKernels)?;
        let number = |s: &str| s.parse::<u32>().map_err(|_| BuildInfoError::Toolkit(toolkit.to_owned()));
        Ok(BuiltKernels { sass, ptx, toolkit: CudaVersion::new(number(major)?, number(minor)?) })
    }
}

/// The build script's record of the kernels, unreadable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildInfoError {
    #[error("{0:?} is not an architecture such as 86")]
    Arch(String),
    #[error("this binary was built without CUDA kernels")]
    NoKernels,
    #[error("{0:?} is not a CUDA version")]
    Toolkit(String),
}

/// Which of the binary's kernels a device will run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelSource {
    /// Machine code built for this architecture (same major, minor ≤ the device's).
    Sass(Sm),
    /// PTX for this architecture, compiled by the driver when the module loads.
    PtxJit(Sm),
}

impl fmt::Display for KernelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelSource::Sass(sm) => write!(f, "sm_{sm} kernels"),
            KernelSource::PtxJit(sm) => write!(f, "PTX compute_{sm} JIT-compiled by the driver"),
        }
    }
}

/// Why no kernel of the binary runs; `Display` says what is missing and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incompatible {
    /// `cudaDriverGetVersion` reported 0.
    NoDriver,
    /// The driver's CUDA major version is older than the toolkit's: cudart will not start.
    DriverTooOld { driver: CudaVersion, toolkit: CudaVersion },
    /// No SASS for the device's architecture, and no PTX the driver can JIT for it.
    NoKernels { device: Sm, built: BuiltKernels, driver: CudaVersion },
}

impl std::error::Error for Incompatible {}

impl fmt::Display for Incompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Incompatible::NoDriver => write!(f, "no CUDA driver: install the NVIDIA driver (R525 or newer)"),
            Incompatible::DriverTooOld { driver, toolkit } => {
                // cudart starts on any driver of its major version (minor-version compatibility)
                let needed = CudaVersion::new(toolkit.major, 0).driver_needed();
                write!(
                    f,
                    "driver supports CUDA {driver} but this binary was built with CUDA {toolkit}, which needs {needed}"
                )?;
                if toolkit.major >= 13 && driver.major == 12 {
                    write!(f, "; use the CUDA 12 build (SNARKFLOW_CUDA_TOOLKIT=12) or update the driver")
                } else {
                    write!(f, "; update the driver")
                }
            }
            Incompatible::NoKernels { device, built, driver } => {
                write!(f, "this binary has no kernels for {}", named(*device))?;
                match built.ptx {
                    None => write!(f, " and no PTX")?,
                    Some(ptx) if ptx > *device => write!(f, " and its PTX (compute_{ptx}) is newer than the device")?,
                    Some(ptx) => write!(
                        f,
                        " and its PTX (compute_{ptx}, CUDA {}) needs {} to be JIT-compiled, but the driver supports CUDA {driver}",
                        built.toolkit,
                        built.toolkit.driver_needed()
                    )?,
                }
                write!(f, "; {}", rebuild_advice(*device, built.toolkit))
            }
        }
    }
}

/// Which of `built`'s kernels a device of compute capability `device` (major, minor) runs under
/// a driver reporting `driver_version` (`cudaDriverGetVersion`, e.g. 12040), or why none does.
pub fn kernels_for(
    built: &BuiltKernels,
    device: (u32, u32),
    driver_version: u32,
) -> Result<KernelSource, Incompatible> {
    let driver = CudaVersion::from_driver(driver_version).ok_or(Incompatible::NoDriver)?;
    if driver.major < built.toolkit.major {
        return Err(Incompatible::DriverTooOld { driver, toolkit: built.toolkit });
    }
    let device = device.0 * 10 + device.1;
    if let Some(sm) = built.sass.iter().copied().filter(|&sm| sass_runs_on(sm, device)).max() {
        return Ok(KernelSource::Sass(sm));
    }
    match built.ptx {
        Some(ptx) if ptx <= device && driver >= built.toolkit => Ok(KernelSource::PtxJit(ptx)),
        _ => Err(Incompatible::NoKernels { device, built: built.clone(), driver }),
    }
}

/// SASS for `sm` runs on the same major with a minor at least as high (sm_90: only on 9.0).
fn sass_runs_on(sm: Sm, device: Sm) -> bool {
    let same_major = sm / 10 == device / 10;
    same_major && if sm == 90 { device == 90 } else { sm % 10 <= device % 10 }
}

/// "sm_86 (RTX 3060/3090, A6000)", or "sm_87" for a device not in the table.
fn named(sm: Sm) -> String {
    match CARDS.iter().find(|(s, _)| *s == sm) {
        Some((_, cards)) => format!("sm_{sm} ({cards})"),
        None => format!("sm_{sm}"),
    }
}

/// The build command that carries SASS for `device`, with the binary's own toolkit when that
/// toolkit knows the architecture (so the same drivers keep working), CUDA 13 otherwise.
fn rebuild_advice(device: Sm, toolkit: CudaVersion) -> String {
    let cuda12 = toolkit.major == 12 && device <= NEWEST_SM_OF_CUDA_12_4;
    let prefix = if cuda12 { "SNARKFLOW_CUDA_TOOLKIT=12 " } else { "" };
    let note = if toolkit.major == 12 && !cuda12 {
        format!(" (CUDA 13: needs {})", CudaVersion::new(13, 0).driver_needed())
    } else {
        String::new()
    };
    format!("build with {prefix}SNARKFLOW_CUDA_ARCHS=\"{device}\" bash deploy/scripts/build-gpu.sh{note}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUDA_13_0: u32 = 13000;
    const CUDA_12_4: u32 = 12040;
    const CUDA_12_2: u32 = 12020;

    fn built(sass: &[Sm], ptx: Sm, toolkit: (u32, u32)) -> BuiltKernels {
        BuiltKernels { sass: sass.to_vec(), ptx: Some(ptx), toolkit: CudaVersion::new(toolkit.0, toolkit.1) }
    }

    fn full_cuda13() -> BuiltKernels {
        built(&[80, 86, 89, 90, 100, 120], 120, (13, 0))
    }

    fn full_cuda12() -> BuiltKernels {
        built(&[80, 86, 89, 90], 90, (12, 4))
    }

    #[test]
    fn h200_runs_its_own_sass_from_the_full_list() {
        assert_eq!(kernels_for(&full_cuda13(), (9, 0), CUDA_13_0), Ok(KernelSource::Sass(90)));
        assert_eq!(kernels_for(&full_cuda12(), (9, 0), CUDA_13_0), Ok(KernelSource::Sass(90)));
        assert_eq!(KernelSource::Sass(90).to_string(), "sm_90 kernels");
    }

    #[test]
    fn rtx_3090_with_sm_90_only_is_refused_naming_sm_86_and_the_fix() {
        let err = kernels_for(&built(&[90], 90, (13, 0)), (8, 6), CUDA_13_0).unwrap_err();
        assert!(matches!(err, Incompatible::NoKernels { device: 86, .. }));
        let message = err.to_string();
        assert_eq!(
            message,
            "this binary has no kernels for sm_86 (RTX 3060/3090, A6000) and its PTX (compute_90) is newer than the \
             device; build with SNARKFLOW_CUDA_ARCHS=\"86\" bash deploy/scripts/build-gpu.sh"
        );
    }

    #[test]
    fn rtx_4090_runs_sm_86_sass_from_80_86() {
        assert_eq!(kernels_for(&built(&[80, 86], 86, (13, 0)), (8, 9), CUDA_13_0), Ok(KernelSource::Sass(86)));
    }

    #[test]
    fn sass_of_the_same_major_and_an_older_minor_runs() {
        assert_eq!(kernels_for(&built(&[80], 80, (12, 4)), (8, 6), CUDA_12_4), Ok(KernelSource::Sass(80)));
    }

    #[test]
    fn sass_of_another_major_never_runs_but_older_ptx_is_jit_compiled() {
        assert_eq!(kernels_for(&built(&[80], 80, (13, 0)), (9, 0), CUDA_13_0), Ok(KernelSource::PtxJit(80)));
        assert!(!sass_runs_on(80, 90) && !sass_runs_on(90, 100) && !sass_runs_on(86, 80));
    }

    #[test]
    fn rtx_50_with_the_cuda_12_4_build_needs_a_12_4_driver_for_the_ptx() {
        let ok = kernels_for(&full_cuda12(), (12, 0), CUDA_12_4);
        assert_eq!(ok, Ok(KernelSource::PtxJit(90)));
        assert_eq!(ok.unwrap().to_string(), "PTX compute_90 JIT-compiled by the driver");
        assert_eq!(kernels_for(&full_cuda12(), (12, 0), 12080), Ok(KernelSource::PtxJit(90)));

        let err = kernels_for(&full_cuda12(), (12, 0), CUDA_12_2).unwrap_err();
        assert_eq!(
            err.to_string(),
            "this binary has no kernels for sm_120 (RTX 5070 Ti/5090) and its PTX (compute_90, CUDA 12.4) needs driver \
             R550 or newer to be JIT-compiled, but the driver supports CUDA 12.2; build with SNARKFLOW_CUDA_ARCHS=\"120\" \
             bash deploy/scripts/build-gpu.sh (CUDA 13: needs driver R580 or newer)"
        );
    }

    #[test]
    fn a_cuda_12_4_build_runs_its_sass_on_an_older_12_driver() {
        // minor-version compatibility: the cudart of 12.4 starts on an R535 (CUDA 12.2) driver
        assert_eq!(kernels_for(&full_cuda12(), (8, 6), CUDA_12_2), Ok(KernelSource::Sass(86)));
    }

    #[test]
    fn a_12_4_driver_with_the_cuda_13_build_points_at_the_cuda_12_build() {
        let err = kernels_for(&full_cuda13(), (8, 6), CUDA_12_4).unwrap_err();
        assert_eq!(
            err,
            Incompatible::DriverTooOld { driver: CudaVersion::new(12, 4), toolkit: CudaVersion::new(13, 0) }
        );
        assert_eq!(
            err.to_string(),
            "driver supports CUDA 12.4 but this binary was built with CUDA 13.0, which needs driver R580 or newer; use \
             the CUDA 12 build (SNARKFLOW_CUDA_TOOLKIT=12) or update the driver"
        );
    }

    #[test]
    fn a_cuda_12_build_missing_an_arch_advises_staying_on_cuda_12() {
        let err = kernels_for(&built(&[90], 90, (12, 4)), (8, 9), CUDA_12_4).unwrap_err();
        assert!(err.to_string().ends_with(
            "build with SNARKFLOW_CUDA_TOOLKIT=12 SNARKFLOW_CUDA_ARCHS=\"89\" bash deploy/scripts/build-gpu.sh"
        ));
    }

    #[test]
    fn no_driver_and_no_ptx_are_said() {
        assert_eq!(kernels_for(&full_cuda13(), (9, 0), 0), Err(Incompatible::NoDriver));
        let no_ptx = BuiltKernels { ptx: None, ..built(&[90], 90, (13, 0)) };
        let message = kernels_for(&no_ptx, (10, 0), CUDA_13_0).unwrap_err().to_string();
        assert!(message.starts_with("this binary has no kernels for sm_100 (B200) and no PTX;"), "{message}");
    }

    #[test]
    fn sm_100_sass_runs_on_10_3_and_the_newest_matching_sass_wins() {
        assert_eq!(kernels_for(&full_cuda13(), (10, 3), CUDA_13_0), Ok(KernelSource::Sass(100)));
        assert_eq!(kernels_for(&built(&[80, 86, 89], 89, (13, 0)), (8, 9), CUDA_13_0), Ok(KernelSource::Sass(89)));
    }

    #[test]
    fn build_env_strings_parse_and_a_build_without_kernels_is_refused() {
        assert_eq!(BuiltKernels::from_build_env("80 86 89 90", "90", "12.4"), Ok(full_cuda12()));
        assert_eq!(BuiltKernels::from_build_env("", "", ""), Err(BuildInfoError::NoKernels));
        assert_eq!(BuiltKernels::from_build_env("sm_90", "90", "13.0"), Err(BuildInfoError::Arch("sm_90".into())));
        assert_eq!(CudaVersion::from_driver(12040), Some(CudaVersion::new(12, 4)));
        assert_eq!(CudaVersion::from_driver(13000), Some(CudaVersion::new(13, 0)));
    }
}
