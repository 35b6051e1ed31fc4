//! Parameters of one circuit loaded for this process's backend: the bellperson parameters,
//! supraseal-c2's SRS, or the resident prover's device key; proving and verifying with them.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use bellperson::groth16::{prepare_verifying_key, Parameters, PreparedVerifyingKey, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};
use snarkflow_synthesis::{ConstraintShape, PartitionWitness, SynthesizedPartition};

use crate::backend::Backend;
use crate::ParamsError;

/// What a backend proves with.
// one per loaded circuit: the variants' size difference costs nothing
#[allow(clippy::large_enum_variant)]
pub(crate) enum ProvingKey {
    /// The whole parameter file in memory, for our bellperson-based prover (CPU or `cuda`).
    #[cfg_attr(any(feature = "cuda-supraseal", feature = "cuda-resident"), allow(dead_code))]
    Bellperson(Parameters<Bls12>),
    /// The parameter file loaded by supraseal-c2 (pinned host memory).
    #[cfg(feature = "cuda-supraseal")]
    Supraseal(crate::supraseal::Srs),
    /// Points and constraint shape resident in device memory.
    #[cfg(feature = "cuda-resident")]
    Resident(crate::resident::ResidentKey),
}

/// Why [`LoadedParams::stage_wire`] failed: the payload (permanent: it fails the same way on
/// any worker) or the staging itself.
#[derive(Debug, thiserror::Error)]
pub enum StageWireError {
    #[error("undecodable compact witness: {0}")]
    Wire(#[from] snarkflow_synthesis::CompactError),
    #[error(transparent)]
    Stage(#[from] crate::ProveError),
}

/// A partition's witness already in device memory ([`LoadedParams::stage`]); only the resident
/// backend makes these.
pub struct StagedWitness {
    #[cfg(feature = "cuda-resident")]
    inner: crate::resident::StagedWitness,
}

impl std::fmt::Debug for StagedWitness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagedWitness").finish_non_exhaustive()
    }
}

/// Parameters of one circuit shape, loaded and ready to prove and verify with.
pub struct LoadedParams {
    pub circuit_id: String,
    pub vk: VerifyingKey<Bls12>,
    pub pvk: PreparedVerifyingKey<Bls12>,
    pub load_seconds: f64,
    key: ProvingKey,
}

impl LoadedParams {
    /// Prove `partition` with fresh random r, s, on this build's backend.
    pub fn prove<R: rand::RngCore>(
        &self,
        partition: SynthesizedPartition,
        rng: &mut R,
    ) -> Result<Proof<Bls12>, crate::ProveError> {
        use ff::Field;
        // tests make the device fail here (feature `failpoints`)
        fail::fail_point!("prover-device-error", |_| Err(crate::ProveError::Gpu(bellperson::gpu::GpuError::Simple(
            "injected device error (failpoint prover-device-error)"
        ))));
        let (r, s) = (Fr::random(&mut *rng), Fr::random(&mut *rng));
        match &self.key {
            ProvingKey::Bellperson(params) => crate::prove(partition, params, r, s),
            #[cfg(feature = "cuda-supraseal")]
            ProvingKey::Supraseal(srs) => crate::supraseal::prove(&partition, &self.vk, srs, r, s),
            #[cfg(feature = "cuda-resident")]
            ProvingKey::Resident(key) => {
                key.prove(&self.vk, &partition.input_assignment, &partition.aux_assignment, r, s).map(|(p, _)| p)
            }
        }
    }

    /// For a key that proves from a witness in device memory (the resident backend), put
    /// `witness` there now, outside the device gate, so the copy overlaps the partition on the
    /// device; `None` for the other backends (they take the witness when they prove).
    pub fn stage(&self, witness: &PartitionWitness) -> Result<Option<StagedWitness>, crate::ProveError> {
        #[cfg(feature = "cuda-resident")]
        if let ProvingKey::Resident(key) = &self.key {
            return key.stage(&witness.inputs, &witness.aux).map(|inner| Some(StagedWitness { inner }));
        }
        let _ = witness;
        Ok(None)
    }

    /// [`LoadedParams::stage`] for a witness still in the compact wire form, decoding only what
    /// the device needs: its values that are neither 0 nor 1 (and the caller the public
    /// inputs). `Ok(None)` where that does not apply — another backend, or a witness better
    /// sent whole (`ResidentKey::sends_compact`): decode it and [`LoadedParams::stage`] it.
    pub fn stage_wire(
        &self,
        wire: &snarkflow_synthesis::CompactParts<'_>,
    ) -> Result<Option<StagedWitness>, StageWireError> {
        #[cfg(feature = "cuda-resident")]
        if let ProvingKey::Resident(key) = &self.key {
            let others = wire.others();
            if !key.sends_compact(others) {
                return Ok(None);
            }
            let mut values = vec![<Fr as ff::Field>::ZERO; others];
            wire.others_into(&mut values)?;
            let inner = key.stage_tags(wire.tags, &values)?;
            return Ok(Some(StagedWitness { inner }));
        }
        let _ = wire;
        Ok(None)
    }

    /// Prove a witness [`LoadedParams::stage`] put on the device, with fresh random r, s.
    pub fn prove_staged<R: rand::RngCore>(
        &self,
        staged: &StagedWitness,
        rng: &mut R,
    ) -> Result<Proof<Bls12>, crate::ProveError> {
        fail::fail_point!("prover-device-error", |_| Err(crate::ProveError::Gpu(bellperson::gpu::GpuError::Simple(
            "injected device error (failpoint prover-device-error)"
        ))));
        #[cfg(feature = "cuda-resident")]
        if let ProvingKey::Resident(key) = &self.key {
            use ff::Field;
            let (r, s) = (Fr::random(&mut *rng), Fr::random(&mut *rng));
            return key.prove_staged(&self.vk, &staged.inner, r, s).map(|(p, _)| p);
        }
        let _ = (staged, rng);
        Err(crate::ProveError::Resident("these parameters do not prove staged witnesses".into()))
    }

    /// Values in the circuit's witness when this key holds the constraint shape itself (the
    /// resident backend: the host then holds nothing of a partition but its witness).
    pub fn witness_len(&self) -> Option<usize> {
        match &self.key {
            ProvingKey::Bellperson(_) => None,
            #[cfg(feature = "cuda-supraseal")]
            ProvingKey::Supraseal(_) => None,
            #[cfg(feature = "cuda-resident")]
            ProvingKey::Resident(key) => Some(key.witness_len()),
        }
    }

    /// Whether this key builds a, b, c itself from a witness (so the caller need not).
    pub fn takes_witness(&self) -> bool {
        match &self.key {
            ProvingKey::Bellperson(_) => false,
            #[cfg(feature = "cuda-supraseal")]
            ProvingKey::Supraseal(_) => false,
            #[cfg(feature = "cuda-resident")]
            ProvingKey::Resident(_) => true,
        }
    }

    /// Partitions this key proves at once on the device: 2 for a resident key with a second
    /// prove lane, else 1.
    pub fn lanes(&self) -> usize {
        match &self.key {
            #[cfg(feature = "cuda-resident")]
            ProvingKey::Resident(key) => key.lanes(),
            _ => 1,
        }
    }

    /// The resident prover's memory plan for this key (`None` for the other provers).
    pub fn memory_plan(&self) -> Option<crate::memory_plan::MemoryPlan> {
        match &self.key {
            #[cfg(feature = "cuda-resident")]
            ProvingKey::Resident(key) => Some(key.plan()),
            _ => None,
        }
    }

    /// The prover this key proves with (a resident build falls back to supraseal-c2 for a
    /// circuit no memory plan fits).
    pub fn prover(&self) -> crate::Backend {
        match &self.key {
            ProvingKey::Bellperson(_) => crate::backend::active(),
            #[cfg(feature = "cuda-supraseal")]
            ProvingKey::Supraseal(_) => crate::Backend::CudaSupraseal,
            #[cfg(feature = "cuda-resident")]
            ProvingKey::Resident(_) => crate::Backend::CudaResident,
        }
    }

    /// The constraint shape this key holds on the device (resident keys only).
    pub fn resident_witness_shape(&self) -> Option<snarkflow_synthesis::WitnessShape> {
        match &self.key {
            #[cfg(feature = "cuda-resident")]
            ProvingKey::Resident(key) => Some(key.witness_shape()),
            _ => None,
        }
    }

    /// Parameters held in memory (the device self-test's, with their circuit's `shape`), loaded
    /// the way this process's backend loads a file; supraseal-c2 and the resident prover only
    /// read files, so for them they pass through a temporary one.
    pub fn from_parameters(
        circuit_id: &str,
        params: Parameters<Bls12>,
        #[cfg_attr(not(feature = "cuda-resident"), allow(unused_variables))] shape: &ConstraintShape,
    ) -> Result<LoadedParams, ParamsError> {
        let started = Instant::now();
        let vk = params.vk.clone();
        // supraseal-c2 and the resident prover load files: a name never used before (supraseal's
        // cache is keyed by path), removed once loaded
        #[cfg_attr(not(any(feature = "cuda-supraseal", feature = "cuda-resident")), allow(dead_code))]
        fn via_file(
            circuit_id: &str,
            params: &Parameters<Bls12>,
            load: impl FnOnce(&Path) -> Result<ProvingKey, ParamsError>,
        ) -> Result<ProvingKey, ParamsError> {
            let unique: u64 = rand::random();
            let path = std::env::temp_dir()
                .join(format!("snarkflow-{circuit_id}-{}-{unique:016x}.params", std::process::id()));
            let werr = |source| ParamsError::Write { path: path.clone(), source };
            let mut out = BufWriter::new(File::create(&path).map_err(werr)?);
            params.write(&mut out).and_then(|_| out.flush()).map_err(werr)?;
            drop(out);
            let key = load(&path);
            let _ = fs::remove_file(&path);
            key
        }
        let key = match crate::backend::active() {
            Backend::Cpu | Backend::Cuda => ProvingKey::Bellperson(params),
            #[cfg(feature = "cuda-supraseal")]
            Backend::CudaSupraseal => via_file(circuit_id, &params, |path| {
                crate::supraseal::Srs::load(path, false)
                    .map(ProvingKey::Supraseal)
                    .map_err(|source| ParamsError::Read { path: path.to_owned(), source })
            })?,
            #[cfg(feature = "cuda-resident")]
            Backend::CudaResident => via_file(circuit_id, &params, |path| {
                let device = crate::resident::device().map_err(|e| ParamsError::Device(e.to_string()))?;
                crate::resident::ResidentKey::load(&device, path, shape, Default::default())
                    .map(|(_, key)| ProvingKey::Resident(key))
                    .map_err(|e| match e {
                        crate::resident::LoadError::NoPlan(e) => ParamsError::Device(e.to_string()),
                        crate::resident::LoadError::Io(source) => ParamsError::Read { path: path.to_owned(), source },
                    })
            })?,
            #[allow(unreachable_patterns)]
            other => return Err(ParamsError::Device(format!("this build has no {other} backend"))),
        };
        Ok(LoadedParams::assemble(circuit_id, vk, key, started))
    }

    pub(crate) fn assemble(
        circuit_id: &str,
        vk: VerifyingKey<Bls12>,
        key: ProvingKey,
        started: Instant,
    ) -> LoadedParams {
        let pvk = prepare_verifying_key(&vk);
        LoadedParams { circuit_id: circuit_id.to_owned(), vk, pvk, load_seconds: started.elapsed().as_secs_f64(), key }
    }

    /// The full parameters, when this backend holds them (not the GPU-only keys).
    pub fn parameters(&self) -> Option<&Parameters<Bls12>> {
        match &self.key {
            ProvingKey::Bellperson(params) => Some(params),
            #[cfg(feature = "cuda-supraseal")]
            ProvingKey::Supraseal(_) => None,
            #[cfg(feature = "cuda-resident")]
            ProvingKey::Resident(_) => None,
        }
    }
}

impl std::fmt::Debug for LoadedParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedParams").field("circuit_id", &self.circuit_id).finish_non_exhaustive()
    }
}

/// Load `path` for the resident prover in the memory plan that fits the device (`request`
/// allowing); when none does, for supraseal-c2 if this build has it (saying why), else refuse
/// with what the smallest plan needs.
#[cfg(feature = "cuda-resident")]
pub(crate) fn load_resident(
    id: &str,
    path: &Path,
    shape: ConstraintShape,
    request: crate::memory_plan::PlanRequest,
    dense_witness: bool,
) -> Result<(VerifyingKey<Bls12>, ProvingKey), ParamsError> {
    use crate::resident::LoadError;
    use tracing::info;
    let device = crate::resident::device().map_err(|e| ParamsError::Device(e.to_string()))?;
    match crate::resident::ResidentKey::load_with(&device, path, &shape, request, dense_witness) {
        Ok((vk, key)) => {
            let plan = key.plan();
            info!(
                circuit_id = %id, plan = %plan.kind, one_pass_h = plan.one_pass_h,
                device_bytes = key.device_bytes(), host_bytes = key.host_bytes(),
                pcie_bytes_max = plan.pcie_bytes_max, free_bytes = plan.free_bytes,
                "memory plan: {}; {}", plan.summary(), plan.why
            );
            Ok((vk, ProvingKey::Resident(key)))
        }
        Err(LoadError::NoPlan(no_plan)) => {
            #[cfg(feature = "cuda-supraseal")]
            {
                tracing::warn!(circuit_id = %id, reason = %no_plan, "proving this circuit with supraseal-c2 instead");
                drop(shape);
                let file = File::open(path).map_err(|source| ParamsError::Read { path: path.to_owned(), source })?;
                let vk = bellperson::groth16::VerifyingKey::<Bls12>::read(std::io::BufReader::new(file))
                    .map_err(|source| ParamsError::Read { path: path.to_owned(), source })?;
                let srs = crate::supraseal::Srs::load(path, false)
                    .map_err(|source| ParamsError::Read { path: path.to_owned(), source })?;
                Ok((vk, ProvingKey::Supraseal(srs)))
            }
            #[cfg(not(feature = "cuda-supraseal"))]
            Err(ParamsError::Device(format!("{no_plan}; this build has no other GPU prover")))
        }
        Err(LoadError::Io(source)) => Err(ParamsError::Read { path: path.to_owned(), source }),
    }
}
