//! What this process proves on, and whether it can: the devices the CUDA driver shows it, and
//! a self-test that proves a small circuit with this build's backend and verifies the proof.
//!
//! A GPU build whose device is missing or broken must never quietly prove on the CPU: the
//! gpu-worker runs [`probe`] before it takes work and again after any device error, and stays
//! not ready (saying why) while it fails. With the `cuda` backend the kernels themselves have
//! no CPU fallback either (see `groth16.rs`).

use std::time::Instant;

use bellperson::groth16::prepare_verifying_key;
use serde::Serialize;

/// Constraints of the self-test circuit: enough for the GPU kernels to be used (the
/// multiexp runs on the device above a few thousand terms), small enough to take well
/// under a second.
pub const SELF_TEST_CONSTRAINTS: u32 = 1 << 13;

/// One device visible to this process.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeviceInfo {
    /// Ordinal among the devices this process sees (after `CUDA_VISIBLE_DEVICES`).
    pub ordinal: u32,
    /// The GPU's index on the host (as `nvidia-smi` numbers them): the ordinal mapped through
    /// `CUDA_VISIBLE_DEVICES` when that lists indices (a worker with `--gpu 3` sees ordinal 0,
    /// host index 3); the ordinal itself when unset; `None` when it lists UUIDs.
    pub host_index: Option<u32>,
    pub name: String,
    pub memory_bytes: u64,
    /// e.g. `9.0` for an H100/H200.
    pub compute_capability: String,
}

/// Why this process cannot prove on its device; `Display` says what failed and, where known,
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error(
        "the CUDA driver could not be initialised: {0}; is the NVIDIA driver installed and the device passed through?"
    )]
    DriverInit(String),
    #[error("listing CUDA devices: {0}")]
    List(String),
    #[error("CUDA device {ordinal}: {cause}")]
    Device { ordinal: u32, cause: String },
    #[error("no CUDA device is visible to this process (CUDA_VISIBLE_DEVICES={visible})")]
    NoDevice { visible: String },
    /// The binary's kernels do not run on the device under its driver (or the binary's build
    /// metadata is unreadable); `cause` says what is missing and which build has it.
    #[error("CUDA device {ordinal} ({name}): {cause}")]
    NoKernels { ordinal: u32, name: String, cause: String },
    /// The self-test proof could not be made, or did not verify.
    #[error("self-test proof on the {backend} backend failed: {source}")]
    SelfTest { backend: &'static str, source: Box<dyn std::error::Error + Send + Sync> },
}

/// The result of a successful [`probe`].
#[derive(Debug, Clone, Serialize)]
pub struct DeviceReport {
    pub backend: &'static str,
    /// Empty for the CPU backend.
    pub devices: Vec<DeviceInfo>,
    /// Seconds the self-test proof took (parameters, synthesis, proof and verification).
    pub self_test_seconds: f64,
}

impl DeviceReport {
    /// Label for metrics and span attributes: `cpu`, or `cuda:<host indices>` (with `--gpu 3`:
    /// `cuda:3`), so two workers on one host never share a label.
    pub fn label(&self) -> String {
        if self.devices.is_empty() {
            return "cpu".into();
        }
        let indices: Vec<String> = self
            .devices
            .iter()
            .map(|d| d.host_index.map_or_else(|| format!("ordinal{}", d.ordinal), |i| i.to_string()))
            .collect();
        format!("cuda:{}", indices.join(","))
    }

    /// Device names, comma-separated (`cpu` for the CPU backend).
    pub fn names(&self) -> String {
        if self.devices.is_empty() {
            return "cpu".into();
        }
        self.devices.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(",")
    }
}

/// A CUDA error in words. rustacuda's `Display` asks the driver (`cuGetErrorString`) and
/// fails when the driver cannot say, which `format!` would turn into a panic.
#[cfg(any(feature = "cuda", feature = "cuda-supraseal", feature = "cuda-resident"))]
fn describe(e: rustacuda::error::CudaError) -> String {
    use std::fmt::Write;
    let mut words = String::new();
    match write!(words, "{e}") {
        Ok(()) => format!("{words:?} ({e:?})"),
        Err(_) => format!("{e:?}"),
    }
}

/// The host index of the device a process sees as `ordinal`, given `CUDA_VISIBLE_DEVICES`.
pub fn host_index(ordinal: u32, visible: Option<&str>) -> Option<u32> {
    match visible {
        None => Some(ordinal),
        Some(list) => list.split(',').nth(ordinal as usize).and_then(|entry| entry.trim().parse().ok()),
    }
}

/// The CUDA devices the driver shows this process, in ordinal order.
#[cfg(any(feature = "cuda", feature = "cuda-supraseal", feature = "cuda-resident"))]
pub fn devices() -> Result<Vec<DeviceInfo>, DeviceError> {
    use rustacuda::device::{Device, DeviceAttribute};
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into());
    rustacuda::init(rustacuda::CudaFlags::empty()).map_err(|e| DeviceError::DriverInit(describe(e)))?;
    let mut out = Vec::new();
    for (ordinal, device) in Device::devices().map_err(|e| DeviceError::List(describe(e)))?.enumerate() {
        let err = |e: rustacuda::error::CudaError| DeviceError::Device { ordinal: ordinal as u32, cause: describe(e) };
        let device = device.map_err(err)?;
        let major = device.get_attribute(DeviceAttribute::ComputeCapabilityMajor).map_err(err)?;
        let minor = device.get_attribute(DeviceAttribute::ComputeCapabilityMinor).map_err(err)?;
        out.push(DeviceInfo {
            ordinal: ordinal as u32,
            host_index: host_index(ordinal as u32, std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref()),
            name: device.name().map_err(err)?,
            memory_bytes: device.total_memory().map_err(err)? as u64,
            compute_capability: format!("{major}.{minor}"),
        });
    }
    if out.is_empty() {
        return Err(DeviceError::NoDevice { visible });
    }
    #[cfg(feature = "cuda-resident")]
    for d in &out {
        check_kernels(d)?;
    }
    Ok(out)
}

/// Whether this build's kernels run on `device` under the installed driver: the error says
/// what is missing and which build has it ("this binary has no kernels for sm_86 …", "driver
/// supports CUDA 12.4 but this binary was built with CUDA 13.0 …").
#[cfg(feature = "cuda-resident")]
fn check_kernels(device: &DeviceInfo) -> Result<(), DeviceError> {
    use snarkflow_cuda_resident as built;
    let refused = |cause: String| DeviceError::NoKernels { ordinal: device.ordinal, name: device.name.clone(), cause };
    let kernels =
        crate::compat::BuiltKernels::from_build_env(built::ARCHS_BUILT, built::PTX_ARCH, built::TOOLKIT_BUILT)
            .map_err(|e| refused(e.to_string()))?;
    let driver = built::driver_version().map_err(|e| refused(format!("reading the driver version: {e}")))?;
    let (major, minor) = device
        .compute_capability
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .ok_or_else(|| refused(format!("unreadable compute capability {:?}", device.compute_capability)))?;
    let source = crate::compat::kernels_for(&kernels, (major, minor), driver).map_err(|e| refused(e.to_string()))?;
    tracing::info!(device = %device.name, compute_capability = %device.compute_capability, driver, kernels = %source, "kernels for the device");
    Ok(())
}

/// The CPU backend uses no device.
#[cfg(not(any(feature = "cuda", feature = "cuda-supraseal", feature = "cuda-resident")))]
pub fn devices() -> Result<Vec<DeviceInfo>, DeviceError> {
    Ok(Vec::new())
}

/// List the devices, then prove a small circuit with this build's backend (random
/// parameters, fresh each time) and verify the proof. An error says what failed.
pub fn probe() -> Result<DeviceReport, DeviceError> {
    let started = Instant::now();
    let devices = devices()?;
    self_test().map_err(|source| DeviceError::SelfTest { backend: crate::backend_name(), source })?;
    Ok(DeviceReport { backend: crate::backend_name(), devices, self_test_seconds: started.elapsed().as_secs_f64() })
}

fn self_test() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use crate::self_test::ProductChain;
    let steps = SELF_TEST_CONSTRAINTS as usize;
    let mut rng = rand::rngs::OsRng;
    let blank = ProductChain { steps, factors: None };
    let params = crate::generate_random(blank, &mut rng)?;
    let circuit = ProductChain::random(steps, &mut rng);
    let public = vec![circuit.output().expect("a witness has an output")];
    let partition = snarkflow_synthesis::synthesize(circuit, "self-test", 0)?;
    debug_assert_eq!(partition.public_inputs(), &public[..], "the recorded output is the native one");
    let pvk = prepare_verifying_key(&params.vk);
    let shape = snarkflow_synthesis::record_shape(ProductChain { steps, factors: None }, "self-test")?;
    let loaded = crate::LoadedParams::from_parameters("self-test", params, &shape)?;
    let proof = loaded.prove(partition, &mut rng)?;
    if !crate::verify(&pvk, &proof, &public) {
        return Err("the proof does not verify (the device computed a wrong result)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(not(any(feature = "cuda", feature = "cuda-supraseal", feature = "cuda-resident")))]
    fn cpu_probe_proves_and_verifies() {
        let report = probe().unwrap();
        assert_eq!(report.backend, "cpu");
        assert!(report.devices.is_empty());
        assert_eq!(report.label(), "cpu");
        assert!(report.self_test_seconds > 0.0);
    }

    #[test]
    fn labels_name_every_device() {
        let info = |ordinal: u32| DeviceInfo {
            ordinal,
            host_index: host_index(ordinal, Some("2,5")),
            name: "NVIDIA H200".into(),
            memory_bytes: 150_000_000_000,
            compute_capability: "9.0".into(),
        };
        let report = DeviceReport { backend: "cuda", devices: vec![info(0), info(1)], self_test_seconds: 0.5 };
        assert_eq!(report.label(), "cuda:2,5");
        assert_eq!(report.names(), "NVIDIA H200,NVIDIA H200");
    }

    #[test]
    fn host_indices_follow_cuda_visible_devices() {
        assert_eq!(host_index(0, None), Some(0));
        assert_eq!(host_index(1, None), Some(1));
        assert_eq!(host_index(0, Some("3")), Some(3), "--gpu 3");
        assert_eq!(host_index(1, Some("4, 6")), Some(6));
        assert_eq!(host_index(0, Some("GPU-3d4b4238-ec96")), None, "UUIDs name no index");
        assert_eq!(host_index(2, Some("0,1")), None);
        let report = DeviceReport {
            backend: "cuda",
            devices: vec![DeviceInfo {
                ordinal: 0,
                host_index: None,
                name: "NVIDIA H200".into(),
                memory_bytes: 1,
                compute_capability: "9.0".into(),
            }],
            self_test_seconds: 0.1,
        };
        assert_eq!(report.label(), "cuda:ordinal0");
    }
}
