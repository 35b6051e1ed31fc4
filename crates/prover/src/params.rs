//! Groth16 parameters on disk and kept in memory. Synthetic kinds: `<dir>/<circuit-id>.params`
//! and `.vk`; Filecoin kinds: filecoin-proofs' own names (`v28-<circuit identifier>.params`,
//! `.vk`, `.meta`), so `<dir>` can be an operator's `FIL_PROOFS_PARAMETER_CACHE`.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use snarkflow_synthesis::{CircuitCatalog, ConstraintShape};
use snarkflow_wire::CircuitSpec;
use tracing::{info, warn};

use crate::backend::Backend;
pub use crate::loaded::LoadedParams;
use crate::loaded::ProvingKey;

#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    /// `fix` is the command that puts the file there: `params fetch` for the files
    /// filecoin-proofs publishes, `params generate` for the others.
    #[error("parameters for {circuit_id} not found: expected {path} (run `{fix}`)")]
    Missing { circuit_id: String, path: PathBuf, fix: String },
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("writing {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("generating parameters for {circuit_id}: {source}")]
    Generate { circuit_id: String, source: bellperson::SynthesisError },
    #[error("circuit {circuit_id}: {source}")]
    Circuit { circuit_id: String, source: snarkflow_synthesis::CatalogError },
    #[error("the device cannot hold the parameters: {0}")]
    Device(String),
    #[error(
        "refusing to write random parameters for {circuit_id} into {dir}: it holds trusted-setup parameters \
         ({file}), and every prover reading that directory would pick random ones up beside them. Use another \
         --params-dir for test parameters (or, if {file} is itself random, create {file}.random)"
    )]
    BesideTrustedSetup { circuit_id: String, dir: PathBuf, file: String },
    /// The store's [`FileCheck`] refused the file (e.g. not the digest filecoin-proofs publishes).
    #[error("{path}: {source}")]
    Untrusted { path: PathBuf, source: FileRefused },
}

/// A check a parameter file must pass before a store loads it (the gpu-worker's: the digests
/// filecoin-proofs publishes); run once per file and process.
pub trait FileCheck: Send + Sync + std::fmt::Debug {
    /// `Err` says why the file at `path` must not be used.
    fn check(&self, path: &Path) -> Result<(), FileRefused>;
}

/// Why a [`FileCheck`] refused a file, and what the operator can do about it.
#[derive(Debug, thiserror::Error)]
#[error("{source}{}", fix.as_deref().map(|f| format!(": {f}")).unwrap_or_default())]
pub struct FileRefused {
    /// What the check found (e.g. `manifest::ManifestError::NotPublished`).
    pub source: Box<dyn std::error::Error + Send + Sync>,
    /// What to do instead, when the check knows.
    pub fix: Option<String>,
}

/// Suffix of the mark written beside each random Filecoin parameter file (`<stem>.random`): a
/// `v28-*.params` file without one is taken to be a trusted-setup file (from `paramfetch`).
const RANDOM_MARK: &str = "random";

/// A directory of parameter files plus the ones loaded into this process. Loading is done
/// once per circuit id; concurrent callers for the same id wait for the first.
#[derive(Debug)]
pub struct ParamStore {
    dir: PathBuf,
    catalog: Arc<dyn CircuitCatalog>,
    /// Where random parameters are made.
    param_device: crate::ParamDevice,
    loaded: Mutex<BTreeMap<String, Arc<LoadedParams>>>,
    loading: Mutex<()>,
    /// Run on a file before it is first loaded; none by default.
    file_check: Option<Arc<dyn FileCheck>>,
    /// The resident prover's memory plan: the fastest that fits, unless forced.
    memory_plan: crate::memory_plan::PlanRequest,
}

impl ParamStore {
    /// A store over `dir`, naming files and recording shapes through `catalog`.
    pub fn new(dir: impl Into<PathBuf>, catalog: Arc<dyn CircuitCatalog>) -> Self {
        ParamStore {
            dir: dir.into(),
            catalog,
            param_device: crate::ParamDevice::Cpu,
            loaded: Mutex::default(),
            loading: Mutex::default(),
            file_check: None,
            memory_plan: Default::default(),
        }
    }

    /// Force the resident prover's memory plan (`--memory-plan`), instead of the fastest one
    /// that fits the device.
    pub fn with_memory_plan(mut self, request: crate::memory_plan::PlanRequest) -> Self {
        self.memory_plan = request;
        self
    }

    /// Check every parameter file with `check` before loading it.
    pub fn with_file_check(mut self, check: Arc<dyn FileCheck>) -> Self {
        self.file_check = Some(check);
        self
    }

    /// Make random parameters on `device` (the G1 products; see [`crate::ParamDevice`]).
    pub fn with_param_device(mut self, device: crate::ParamDevice) -> Self {
        self.param_device = device;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn stem(&self, spec: &CircuitSpec) -> String {
        // a Filecoin spec whose identifier cannot be computed is not servable anyway; the
        // circuit id keeps the path printable in the error that follows
        self.catalog.param_file_stem(spec).unwrap_or_else(|_| spec.circuit_id())
    }

    /// The command that puts a missing parameter file at `path`: the published files
    /// (filecoin-proofs' `v28-` names) are fetched, the others generated.
    fn fix_for_missing(&self, circuit_id: &str, path: &Path) -> String {
        let published = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("v28-"));
        let verb = if published { "fetch" } else { "generate" };
        format!("snarkflow params {verb} --circuit {circuit_id} --params-dir {}", self.dir.display())
    }

    pub fn params_path(&self, spec: &CircuitSpec) -> PathBuf {
        self.dir.join(format!("{}.params", self.stem(spec)))
    }

    pub fn vk_path(&self, spec: &CircuitSpec) -> PathBuf {
        self.dir.join(format!("{}.vk", self.stem(spec)))
    }

    pub fn meta_path(&self, spec: &CircuitSpec) -> PathBuf {
        self.dir.join(format!("{}.meta", self.stem(spec)))
    }

    /// A filecoin-proofs parameter file in the directory that is not marked random: the
    /// directory holds an operator's trusted-setup parameters.
    fn trusted_setup_file(&self) -> Option<String> {
        let mut names: Vec<String> = fs::read_dir(&self.dir)
            .ok()?
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.starts_with("v28-") && name.ends_with(".params"))
            .filter(|name| !self.dir.join(name).with_extension(RANDOM_MARK).exists())
            .collect();
        names.sort();
        names.into_iter().next()
    }

    /// Circuit ids loaded in memory, sorted.
    /// Every circuit loaded in this process, by id.
    pub fn loaded_all(&self) -> Vec<Arc<LoadedParams>> {
        self.loaded.lock().expect("params lock").values().cloned().collect()
    }

    pub fn loaded_ids(&self) -> Vec<String> {
        self.loaded.lock().expect("params lock").keys().cloned().collect()
    }

    /// Whether `spec`'s parameters are loaded in memory.
    pub fn is_loaded(&self, spec: &CircuitSpec) -> bool {
        self.loaded.lock().expect("params lock").contains_key(&spec.circuit_id())
    }

    /// `spec`'s parameters if they are loaded (never loads them).
    pub fn loaded(&self, spec: &CircuitSpec) -> Option<Arc<LoadedParams>> {
        self.loaded.lock().expect("params lock").get(&spec.circuit_id()).cloned()
    }

    /// Size of `spec`'s parameter file (0 when absent).
    pub fn file_bytes(&self, spec: &CircuitSpec) -> u64 {
        std::fs::metadata(self.params_path(spec)).map(|m| m.len()).unwrap_or(0)
    }

    /// Drop `spec`'s loaded parameters (proofs in flight keep them until they finish);
    /// whether they were loaded.
    pub fn evict(&self, spec: &CircuitSpec) -> bool {
        self.loaded.lock().expect("params lock").remove(&spec.circuit_id()).is_some()
    }

    /// The loaded parameters for `spec`, reading them from disk on first use; with
    /// `generate_missing`, random parameters are generated and cached when no file exists.
    pub fn get(&self, spec: &CircuitSpec, generate_missing: bool) -> Result<Arc<LoadedParams>, ParamsError> {
        let id = spec.circuit_id();
        if let Some(p) = self.loaded.lock().expect("params lock").get(&id) {
            return Ok(p.clone());
        }
        let _one_loader = self.loading.lock().expect("params loading lock");
        if let Some(p) = self.loaded.lock().expect("params lock").get(&id) {
            return Ok(p.clone());
        }
        let path = self.params_path(spec);
        if !path.exists() {
            if !generate_missing {
                let fix = self.fix_for_missing(&id, &path);
                return Err(ParamsError::Missing { circuit_id: id, path, fix });
            }
            self.generate(spec, false)?;
        }
        if let Some(check) = &self.file_check {
            check.check(&path).map_err(|source| ParamsError::Untrusted { path: path.clone(), source })?;
        }
        let started = Instant::now();
        let read_err = |source| ParamsError::Read { path: path.clone(), source };
        let file = File::open(&path).map_err(read_err)?;
        let (vk, key) = match crate::backend::active() {
            Backend::Cpu | Backend::Cuda => {
                // Our own cache files are written atomically, so the (slow) subgroup checks are skipped.
                let params =
                    Parameters::<Bls12>::read(BufReader::with_capacity(1 << 20, file), false).map_err(read_err)?;
                (params.vk.clone(), ProvingKey::Bellperson(params))
            }
            #[cfg(feature = "cuda-supraseal")]
            Backend::CudaSupraseal => {
                // the verifying key is the file's first section
                let vk = bellperson::groth16::VerifyingKey::<Bls12>::read(BufReader::new(file)).map_err(read_err)?;
                // not supraseal's own process-wide cache: this store is the cache, and an
                // eviction must free the pinned copy once the proofs holding it finish
                let srs = crate::supraseal::Srs::load(&path, false).map_err(read_err)?;
                (vk, ProvingKey::Supraseal(srs))
            }
            #[cfg(feature = "cuda-resident")]
            Backend::CudaResident => {
                drop(file);
                let dense = self.catalog.dense_witness(spec);
                crate::loaded::load_resident(&id, &path, self.shape(spec)?, self.memory_plan, dense)?
            }
            #[allow(unreachable_patterns)]
            other => return Err(ParamsError::Device(format!("this build has no {other} backend"))),
        };
        let loaded = Arc::new(LoadedParams::assemble(&id, vk, key, started));
        info!(circuit_id = %id, seconds = loaded.load_seconds, path = %path.display(), "parameters loaded");
        self.loaded.lock().expect("params lock").insert(id, loaded.clone());
        Ok(loaded)
    }

    /// `spec`'s constraint shape: `<dir>/<circuit id>.shape` (written beside generated
    /// parameters, or by an earlier load) when it is the right circuit's, else recorded from
    /// the circuit and written there.
    pub fn shape(&self, spec: &CircuitSpec) -> Result<ConstraintShape, ParamsError> {
        let id = spec.circuit_id();
        let path = self.dir.join(format!("{id}.shape"));
        if let Ok(file) = File::open(&path) {
            match ConstraintShape::read_from(BufReader::with_capacity(1 << 20, file)) {
                Ok(shape) if shape.circuit_id == id => return Ok(shape),
                Ok(_) => warn!(path = %path.display(), "shape file is for another circuit; recording afresh"),
                Err(e) => warn!(path = %path.display(), error = %e, "unusable shape file; recording afresh"),
            }
        }
        let shape = self
            .catalog
            .record_shape(spec)
            .map_err(|source| ParamsError::Circuit { circuit_id: id.clone(), source })?;
        if let Err(e) = shape.write_file(&path) {
            warn!(path = %path.display(), error = %e, "could not keep the constraint shape");
        }
        Ok(shape)
    }

    /// Generate random parameters for `spec` into the directory, unless present (or `force`).
    /// A file lock keeps two processes from generating the same id at once; files appear
    /// atomically (written to a temporary name, then renamed).
    pub fn generate(&self, spec: &CircuitSpec, force: bool) -> Result<PathBuf, ParamsError> {
        self.generate_with(spec, force, crate::ToxicWaste::random(&mut rand::rngs::OsRng))
    }

    /// [`generate`](Self::generate) from given toxic waste: a seeded one makes the same file on
    /// every machine (exactness checks that compare proofs made on different hosts).
    pub fn generate_with(
        &self,
        spec: &CircuitSpec,
        force: bool,
        toxic: crate::ToxicWaste,
    ) -> Result<PathBuf, ParamsError> {
        let id = spec.circuit_id();
        let path = self.params_path(spec);
        let werr = |path: &Path| {
            let path = path.to_owned();
            move |source| ParamsError::Write { path, source }
        };
        fs::create_dir_all(&self.dir).map_err(werr(&self.dir))?;
        let lock_path = self.dir.join(format!("{id}.lock"));
        let lock = File::create(&lock_path).map_err(werr(&lock_path))?;
        lock.lock().map_err(werr(&lock_path))?;
        if path.exists() && !force {
            return Ok(path);
        }
        let filecoin = self.catalog.filecoin_sector_size(spec);
        if filecoin.is_some() {
            if let Some(file) = self.trusted_setup_file() {
                return Err(ParamsError::BesideTrustedSetup { circuit_id: id, dir: self.dir.clone(), file });
            }
        }
        warn!(
            circuit_id = %id,
            "generating RANDOM Groth16 parameters: not a trusted setup, for tests and benchmarks only"
        );
        let started = Instant::now();
        let shape = self
            .catalog
            .record_shape(spec)
            .map_err(|source| ParamsError::Circuit { circuit_id: id.clone(), source })?;
        info!(circuit_id = %id, seconds = started.elapsed().as_secs_f64(), "constraint shape recorded");
        // the shape goes next to the parameters, where the gpu-worker looks before recording it
        // again; it is written (9 GB at 32 GiB PoRep) beside the QAP evaluation, which does
        // not touch the disk
        let shape_path = self.dir.join(format!("{id}.shape"));
        let write = write_atomically;
        // the parameters are written as they are made, never whole in memory (47 GB at 32 GiB);
        // the verifying key is known first and written at once, so a gateway can take jobs
        // (which wait for a gpu-worker) while the sections are made (minutes at 32 GiB)
        let vk_path = self.vk_path(spec);
        let made = std::thread::scope(|scope| {
            scope.spawn(|| keep_shape(&shape, &shape_path));
            write(&path, &|out| {
                crate::write_from_shape_on(&shape, &toxic, out, &self.param_device, |vk, bytes| {
                    // minutes before the last section would find the disk full (a 32 GiB
                    // WindowPoSt's ~74 GB on a 64 GB disk), say so now
                    room_for(&self.dir, bytes)?;
                    write(&vk_path, &|out| vk.write(out).map_err(werr(&vk_path)))
                        .map_err(|e| std::io::Error::other(e.to_string()))
                })
                .map_err(|source| match source {
                    bellperson::SynthesisError::IoError(source) => ParamsError::Write { path: path.clone(), source },
                    source => ParamsError::Generate { circuit_id: id.clone(), source },
                })
                .map(drop)
            })
        });
        if made.is_err() {
            // a key without its parameters would let a gateway take jobs nobody can prove
            let _ = fs::remove_file(&vk_path);
        }
        made?;
        drop(shape);
        if let Some(sector_size) = filecoin {
            // the `.meta` file filecoin-proofs writes next to its parameters
            let meta = format!("{{\"sector_size\":{sector_size}}}");
            write(&self.meta_path(spec), &|out| out.write_all(meta.as_bytes()).map_err(werr(&self.meta_path(spec))))?;
            let mark = path.with_extension(RANDOM_MARK);
            write(&mark, &|out| {
                out.write_all(b"random Groth16 parameters made by `snarkflow params generate`: not a trusted setup\n")
                    .map_err(werr(&mark))
            })?;
        }
        info!(circuit_id = %id, seconds = started.elapsed().as_secs_f64(), path = %path.display(), "parameters generated");
        Ok(path)
    }
}

/// An error unless the file system of `dir` has `bytes` free for a parameter file. Checked when
/// the parameters' `.tmp` holds nothing yet; the shape file written beside it meanwhile (9 GB at
/// 32 GiB PoRep, where none was kept before) is not counted, so a disk that misses by less
/// still fills later.
fn room_for(dir: &Path, bytes: u64) -> std::io::Result<()> {
    let free = fs2::available_space(dir)?;
    if free >= bytes {
        return Ok(());
    }
    let gb = |b: u64| b as f64 / 1e9;
    Err(std::io::Error::new(
        std::io::ErrorKind::StorageFull,
        format!(
            "the parameters take {:.1} GB and {} has {:.1} GB free: free space there or choose another \
             --params-dir",
            gb(bytes),
            dir.display(),
            gb(free)
        ),
    ))
}

/// Write the constraint shape to `path` unless a file is there; a failure is only logged (the
/// gpu-worker records the shape again where it finds none).
fn keep_shape(shape: &ConstraintShape, path: &Path) {
    if path.exists() {
        return;
    }
    let writing = Instant::now();
    match shape.write_file(path) {
        Ok(()) => info!(path = %path.display(), seconds = writing.elapsed().as_secs_f64(), "constraint shape written"),
        Err(e) => warn!(path = %path.display(), error = %e, "could not keep the constraint shape"),
    }
}

/// Write `target` through `<target>.tmp` (the .params and .vk files are written at the same
/// time), flushed, synced and renamed into place; the temporary file is removed on failure.
fn write_atomically(
    target: &Path,
    what: &dyn Fn(&mut BufWriter<File>) -> Result<(), ParamsError>,
) -> Result<(), ParamsError> {
    let werr = |path: &Path| {
        let path = path.to_owned();
        move |source| ParamsError::Write { path, source }
    };
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let file = File::create(&tmp).map_err(werr(&tmp))?;
    let mut out = BufWriter::with_capacity(1 << 22, file);
    let written = what(&mut out)
        .and_then(|()| out.flush().map_err(werr(&tmp)))
        .and_then(|()| out.get_ref().sync_all().map_err(werr(&tmp)))
        .and_then(|()| fs::rename(&tmp, target).map_err(werr(target)));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests;
