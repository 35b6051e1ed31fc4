//! Which prover this process uses. A build compiles one or more backends in; the process picks
//! one at start ([`select`]), or takes the build's preferred one. A GPU build never offers the
//! CPU prover: a missing device must be an error, not a slow success.

use std::sync::OnceLock;

/// A Groth16 prover backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Backend {
    /// bellperson's multiexp and FFT on the CPU.
    Cpu,
    /// bellperson's ec-gpu-gen CUDA kernels, driven by our prover half.
    Cuda,
    /// supraseal-c2 (what Curio and lotus prove with): parameters in pinned host memory.
    CudaSupraseal,
    /// snarkflow's own prover: parameters and constraint shape resident in device memory.
    CudaResident,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::CudaSupraseal => "cuda-supraseal",
            Backend::CudaResident => "cuda-resident",
        }
    }

    pub fn parse(name: &str) -> Option<Backend> {
        [Backend::Cpu, Backend::Cuda, Backend::CudaSupraseal, Backend::CudaResident]
            .into_iter()
            .find(|b| b.name() == name)
    }

    /// Whether this build has the backend.
    pub fn is_compiled(self) -> bool {
        match self {
            Backend::Cpu => !cfg!(any(feature = "cuda", feature = "cuda-supraseal", feature = "cuda-resident")),
            Backend::Cuda => cfg!(feature = "cuda"),
            Backend::CudaSupraseal => cfg!(feature = "cuda-supraseal"),
            Backend::CudaResident => cfg!(feature = "cuda-resident"),
        }
    }

    /// Whether it proves on a GPU (a wrong proof may be the device's fault).
    pub fn is_device(self) -> bool {
        match self {
            Backend::Cpu => false,
            Backend::Cuda | Backend::CudaSupraseal | Backend::CudaResident => true,
        }
    }

    /// This build's backends, preferred first: the resident prover, then supraseal-c2, then
    /// bellperson's kernels, else the CPU.
    pub fn compiled() -> Vec<Backend> {
        [Backend::CudaResident, Backend::CudaSupraseal, Backend::Cuda, Backend::Cpu]
            .into_iter()
            .filter(|b| b.is_compiled())
            .collect()
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

static ACTIVE: OnceLock<Backend> = OnceLock::new();

/// The backend this process proves with: the one [`select`]ed, else the build's preferred one.
pub fn active() -> Backend {
    *ACTIVE.get_or_init(|| Backend::compiled()[0])
}

/// Choose the backend, once, before anything is proved or loaded.
pub fn select(backend: Backend) -> Result<(), SelectError> {
    if !backend.is_compiled() {
        let have: Vec<&str> = Backend::compiled().iter().map(|b| b.name()).collect();
        return Err(SelectError::NotBuilt { wanted: backend, have: have.join(", ") });
    }
    let chosen = *ACTIVE.get_or_init(|| backend);
    if chosen != backend {
        return Err(SelectError::AlreadyChosen(chosen));
    }
    Ok(())
}

/// Why [`select`] refused a backend.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectError {
    #[error("this build has no {wanted} backend (it has: {have})")]
    NotBuilt { wanted: Backend, have: String },
    #[error("the {0} backend is already in use")]
    AlreadyChosen(Backend),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_build_has_a_backend() {
        for b in [Backend::Cpu, Backend::Cuda, Backend::CudaSupraseal, Backend::CudaResident] {
            assert_eq!(Backend::parse(b.name()), Some(b));
        }
        assert_eq!(Backend::parse("opencl"), None);
        assert!(!Backend::compiled().is_empty());
        assert!(Backend::compiled().iter().all(|b| b.is_compiled()));
    }

    #[test]
    #[cfg(not(any(feature = "cuda", feature = "cuda-supraseal", feature = "cuda-resident")))]
    fn a_cpu_build_offers_only_the_cpu_and_refuses_gpu_backends() {
        assert_eq!(Backend::compiled(), vec![Backend::Cpu]);
        let err = select(Backend::CudaResident).unwrap_err();
        assert_eq!(err, SelectError::NotBuilt { wanted: Backend::CudaResident, have: "cpu".into() });
        assert_eq!(err.to_string(), "this build has no cuda-resident backend (it has: cpu)");
        select(Backend::Cpu).unwrap();
        assert_eq!(active(), Backend::Cpu);
    }
}
