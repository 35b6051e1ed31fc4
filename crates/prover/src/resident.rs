//! The `cuda-resident` backend: a circuit's parameter points and constraint shape live in GPU
//! memory (`snarkflow-cuda-resident`), a partition costs one witness upload, and the device
//! computes a, b, c, h and all five MSMs. Only r and s are added here, on the CPU.
//!
//! The parameter file is streamed through two pinned buffers straight into device memory and
//! converted there; no host copy of the points is kept. The constraint shape is uploaded and
//! then dropped on the host as well.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use bellperson::groth16::{Proof, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use rayon::prelude::*;
use snarkflow_cuda_resident::{self as dev, CompactLayout, DeviceWitness, PinnedBuffer};

use snarkflow_synthesis::ConstraintShape;

use crate::compact_witness;
use crate::groth16::{assemble, QuerySums};
use crate::memory_plan::{self, KeyDims, MemoryPlan, PlanKind, PlanRequest};
pub use crate::param_file::{read_sections, FileSections};
use crate::ProveError;

pub use snarkflow_cuda_resident::{Device, Placement, Timings};

mod front;
mod lanes;
mod pools;
mod upload;
pub use lanes::release_workspace;
use lanes::{prove_reserved, Reservation, PROVE_RESERVED};
use upload::{upload_points, upload_shape};

/// The device this process proves on (ordinal 0: a gpu-worker sees one GPU through
/// `CUDA_VISIBLE_DEVICES`), opened on first use.
pub fn device() -> Result<Arc<Device>, dev::Error> {
    static DEVICE: std::sync::OnceLock<Result<Arc<Device>, dev::Error>> = std::sync::OnceLock::new();
    DEVICE.get_or_init(|| Device::open(0)).clone()
}

/// Pinned host buffers a witness passes through on its way to the device: at most
/// [`PINNED_WITNESS_BUFFERS`] (a double buffer: one partition copied in while the one before
/// uploads), each reused, so pinned memory stays bounded whatever the prefetch.
const PINNED_WITNESS_BUFFERS: usize = 2;
/// Pinned witness buffers are made in multiples of this (compact forms differ a little in size
/// from partition to partition).
const PINNED_ROUNDING: usize = 32 << 20;

/// `SNARKFLOW_WHOLE_WITNESS=1` sends every witness whole, for measuring the compact form against
/// it in one binary (like `SNARKFLOW_SEVEN_NTT` and `SNARKFLOW_MSM_WBITS` in the device code).
fn whole_witness_forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var("SNARKFLOW_WHOLE_WITNESS").is_ok_and(|v| v == "1"))
}

#[derive(Default)]
struct PinnedPool {
    free: Vec<PinnedBuffer>,
    made: usize,
}

/// The device witness buffers of one key, made at load (as many as its plan has room for): a
/// partition staged while none is free waits for the prove holding one to end.
#[derive(Default)]
struct WitnessPool {
    free: Mutex<Vec<DeviceWitness>>,
    returned: Condvar,
}

/// A circuit's parameters and shape resident on one device, and the buffers witnesses pass
/// through to get there.
pub struct ResidentKey {
    device: Arc<Device>,
    /// Shared with the lent copies of the front of H ([`front`]), which other keys' loads may
    /// give back.
    srs: Arc<dev::Srs>,
    shape: dev::Shape,
    num_inputs: usize,
    num_aux: usize,
    pinned: Mutex<PinnedPool>,
    pinned_returned: Condvar,
    /// Device witness buffers no staged partition holds.
    device_witnesses: Arc<WitnessPool>,
    /// The handles it proves on: the device, and a second lane where asked for and room.
    lanes: lanes::Lanes,
    plan: MemoryPlan,
    /// Its entry in [`PROVE_RESERVED`].
    key_id: u64,
    pub shape_hash: [u8; 32],
}

impl Drop for ResidentKey {
    fn drop(&mut self) {
        let mut reserved = PROVE_RESERVED.lock().unwrap_or_else(|e| e.into_inner());
        reserved.retain(|r| r.key_id != self.key_id);
        // the second lane's buffers are nobody's once the last key proving on it is gone
        if self.lanes.count() > 1 && !reserved.iter().any(|r| r.two_lanes) {
            lanes::release_second(self.device.ordinal());
        }
    }
}

/// A partition's witness in device memory, ready for [`ResidentKey::prove_staged`]. Its device
/// buffer goes back to the key's pool when this drops.
pub struct StagedWitness {
    witness: Option<DeviceWitness>,
    pool: Arc<WitnessPool>,
    /// Classifying, copying into pinned memory and uploading, milliseconds.
    pub upload_ms: f64,
    /// Bytes that crossed PCIe: the compact form, or the whole witness.
    pub upload_bytes: u64,
}

impl Drop for StagedWitness {
    fn drop(&mut self) {
        if let Some(w) = self.witness.take() {
            self.pool.free.lock().unwrap_or_else(|e| e.into_inner()).push(w);
            self.pool.returned.notify_one();
        }
    }
}

impl std::fmt::Debug for ResidentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentKey").field("device", &self.device.ordinal()).finish_non_exhaustive()
    }
}

fn dev_err(e: dev::Error) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

fn device_failure(e: dev::Error) -> ProveError {
    ProveError::Device(e.to_string())
}

/// Why a key could not be loaded for the resident prover.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No memory plan fits this device: another prover must take the circuit.
    #[error(transparent)]
    NoPlan(#[from] memory_plan::NoPlan),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The sizes of the circuit whose parameter sections are `sections` and shape `shape`, and
/// whether its witnesses are mostly values neither 0 nor 1.
pub fn key_dims(sections: &FileSections, shape: &ConstraintShape, dense_witness: bool) -> KeyDims {
    let folded = upload::device_fold(shape).map(|f| memory_plan::FoldDims {
        rows: f.stored_rows(shape.num_constraints()) as u64,
        nnz: [f.stored_nnz(&shape.a) as u64, f.stored_nnz(&shape.b) as u64, f.stored_nnz(&shape.c) as u64],
    });
    KeyDims {
        counts: sections.counts.map(|c| c as u64),
        rows: shape.num_constraints() as u64,
        nnz: [shape.a.nnz() as u64, shape.b.nnz() as u64, shape.c.nnz() as u64],
        folded,
        table_len: shape.coeff_table().len() as u64,
        witness_len: (shape.num_inputs + shape.num_aux) as u64,
        dense_witness,
    }
}

impl ResidentKey {
    /// Upload the parameter file at `path` and `shape` to `device`, in the memory plan
    /// `request` allows that fits the device's free memory (the fastest one, unless forced).
    pub fn load(
        device: &Arc<Device>,
        path: &Path,
        shape: &ConstraintShape,
        request: PlanRequest,
    ) -> Result<(VerifyingKey<Bls12>, ResidentKey), LoadError> {
        Self::load_with(device, path, shape, request, false)
    }

    /// [`ResidentKey::load`] for a circuit whose witnesses are mostly values neither 0 nor 1
    /// (`dense_witness`: PoSt), whose plan counts full MSMs of the L, A and B queries.
    pub fn load_with(
        device: &Arc<Device>,
        path: &Path,
        shape: &ConstraintShape,
        request: PlanRequest,
        dense_witness: bool,
    ) -> Result<(VerifyingKey<Bls12>, ResidentKey), LoadError> {
        let (vk, sections) = read_sections(path)?;
        let dims = key_dims(&sections, shape, dense_witness);
        // the free memory without the shared prove buffers of either lane (made again by the
        // next prove): they are counted by PROVE_RESERVED instead
        lanes::release_workspace(device);
        let mut reserved = PROVE_RESERVED.lock().unwrap_or_else(|e| e.into_inner());
        let (main_reserved, lane_reserved) = prove_reserved(&reserved);
        let plan = front::choose(device, &dims, request, (main_reserved, lane_reserved)).map_err(dev_err)??;
        let placement = Placement {
            host_sections: plan.host_sections,
            shape_on_host: plan.shape_on_host,
            h_batch: plan.h_batch as usize,
            shape_chunk: plan.shape_chunk as usize,
            lean: plan.kind == PlanKind::Lean,
            compact: plan.kind == PlanKind::Compact,
        };
        let srs = Arc::new(upload_points(device, path, &sections, &placement)?);
        let plan = front::keep(&srs, device.ordinal(), plan);
        let shape_dev = upload_shape(device, shape, &placement).map_err(dev_err)?;
        let lane_devices = lanes::lane_devices(device, &plan, dims.witness_len, (main_reserved, lane_reserved));
        // a third witness buffer with two lanes: one staged while two prove
        let witness_buffers = plan.witness_buffers + lane_devices.len() - 1;
        let witnesses = (0..witness_buffers)
            .map(|_| match plan.kind {
                PlanKind::Compact => DeviceWitness::new_compact(device),
                _ => DeviceWitness::new(device, plan.witness_capacity as usize),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(dev_err)?;
        static NEXT_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let key_id = NEXT_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        reserved.push(Reservation { key_id, bytes: plan.prove_bytes, two_lanes: lane_devices.len() > 1 });
        drop(reserved);
        let key = ResidentKey {
            device: device.clone(),
            srs,
            shape: shape_dev,
            num_inputs: shape.num_inputs,
            num_aux: shape.num_aux,
            pinned: Mutex::new(PinnedPool::default()),
            pinned_returned: Condvar::new(),
            device_witnesses: Arc::new(WitnessPool { free: Mutex::new(witnesses), returned: Condvar::new() }),
            lanes: lanes::Lanes::new(lane_devices),
            plan,
            key_id,
            shape_hash: shape.hash,
        };
        Ok((vk, key))
    }

    /// Partitions this key proves at once: 1, or 2 with a second lane.
    pub fn lanes(&self) -> usize {
        self.lanes.count()
    }

    /// The memory plan this key was loaded in, less the copy of the front of H it gave back
    /// since.
    pub fn plan(&self) -> MemoryPlan {
        self.plan.clone().with_front_kept(self.srs.h_front() as u64)
    }

    /// Device memory this key holds (points and shape on the device).
    pub fn device_bytes(&self) -> u64 {
        self.srs.device_bytes() + self.shape.device_bytes()
    }

    /// Page-locked host memory this key holds (points and shape its plan keeps on the host).
    pub fn host_bytes(&self) -> u64 {
        self.srs.host_bytes() + self.shape.host_bytes()
    }

    /// Values in a witness `[inputs | aux]` of this circuit.
    pub fn witness_len(&self) -> usize {
        self.num_inputs + self.num_aux
    }

    /// The witnesses this key proves: its shape's hash and value counts.
    pub fn witness_shape(&self) -> snarkflow_synthesis::WitnessShape {
        snarkflow_synthesis::WitnessShape {
            hash: self.shape_hash,
            inputs: self.num_inputs as u64,
            aux: self.num_aux as u64,
        }
    }

    /// Put the partition whose witness is `inputs` (element 0 the constant ONE) and `aux` on the
    /// device, through a pinned buffer. Takes no device lock: called while another partition
    /// proves, the copy overlaps its kernels.
    pub fn stage(&self, inputs: &[Fr], aux: &[Fr]) -> Result<StagedWitness, ProveError> {
        if inputs.len() != self.num_inputs || aux.len() != self.num_aux {
            return Err(ProveError::Resident(format!(
                "witness has {} inputs and {} aux values, the shape {} and {}",
                inputs.len(),
                aux.len(),
                self.num_inputs,
                self.num_aux
            )));
        }
        let started = Instant::now();
        let n = self.witness_len();
        let classified = compact_witness::classify(inputs, aux);
        let compact = CompactLayout { len: n, others: classified.others };
        let send_compact = self.sends_compact(classified.others);
        let mut pinned = self.take_pinned_for(send_compact.then_some(&compact))?;
        if send_compact {
            let parts = pinned.compact_mut(&compact).expect("taken with room for the compact form");
            parts.classes.copy_from_slice(&classified.classes);
            compact_witness::fill(&classified, inputs, aux, parts.word_others, parts.others);
        } else {
            let buf = pinned.as_fr_mut();
            buf[..inputs.len()].copy_from_slice(inputs);
            buf[inputs.len()..n]
                .par_chunks_mut(1 << 16)
                .zip(aux.par_chunks(1 << 16))
                .for_each(|(d, s)| d.copy_from_slice(s));
        }
        self.upload_pinned(pinned, send_compact.then_some(compact), started)
    }

    /// Whether a witness with `others` values that are neither 0 nor 1 crosses in the compact
    /// form (unless `SNARKFLOW_WHOLE_WITNESS=1`); always in the compact plan, which keeps it so.
    pub fn sends_compact(&self, others: usize) -> bool {
        self.plan.kind == PlanKind::Compact
            || compact_witness::compact_pays(others, self.witness_len()) && !whole_witness_forced()
    }

    /// [`ResidentKey::stage`] for a witness still in the compact wire form, never decoded (4.2 GB
    /// at 32 GiB): its class words straight from the wire's `tags`, and `others`, its values
    /// that are neither 0 nor 1 in order (`snarkflow_synthesis::CompactParts::others_into`).
    /// Only for a witness [`ResidentKey::sends_compact`] accepts.
    pub fn stage_tags(&self, tags: &[u8], others: &[Fr]) -> Result<StagedWitness, ProveError> {
        let n = self.witness_len();
        if tags.len() != n.div_ceil(4) || !self.sends_compact(others.len()) {
            return Err(ProveError::Mismatch(format!(
                "{} tag bytes with {} values neither 0 nor 1 for a witness of {n} values sent compact",
                tags.len(),
                others.len()
            )));
        }
        let started = Instant::now();
        let compact = CompactLayout { len: n, others: others.len() };
        let mut pinned = self.take_pinned_for(Some(&compact))?;
        let parts = pinned.compact_mut(&compact).expect("taken with room for the compact form");
        let counted = compact_witness::classes_from_tags(tags, parts.classes, parts.word_others);
        parts.others.par_chunks_mut(1 << 16).zip(others.par_chunks(1 << 16)).for_each(|(d, s)| d.copy_from_slice(s));
        if counted != others.len() {
            self.give_back_pinned(pinned);
            return Err(ProveError::Mismatch(format!(
                "the tags count {counted} values neither 0 nor 1, {} were given",
                others.len()
            )));
        }
        self.upload_pinned(pinned, Some(compact), started)
    }

    /// A pinned buffer with room for the compact form `compact`, or the whole witness.
    fn take_pinned_for(&self, compact: Option<&CompactLayout>) -> Result<PinnedBuffer, ProveError> {
        let whole_bytes = self.witness_len() * std::mem::size_of::<Fr>();
        let bytes = compact.map_or(whole_bytes, |c| c.bytes());
        // rounded up, so the pooled buffers of partitions a few values apart are reused
        self.take_pinned(bytes.next_multiple_of(PINNED_ROUNDING).min(whole_bytes.max(bytes)))
    }

    /// Upload the witness written into `pinned` (in the compact form `compact`, else whole) to a
    /// device witness buffer, and give `pinned` back to the pool.
    fn upload_pinned(
        &self,
        mut pinned: PinnedBuffer,
        compact: Option<CompactLayout>,
        started: Instant,
    ) -> Result<StagedWitness, ProveError> {
        let n = self.witness_len();
        let bytes = compact.as_ref().map_or(n * std::mem::size_of::<Fr>(), |c| c.bytes());
        let written = Instant::now();
        // held by a StagedWitness from here, so a failed upload returns the buffer to the pool
        let mut staged = StagedWitness {
            witness: Some(self.take_device_witness()),
            pool: self.device_witnesses.clone(),
            upload_ms: 0.0,
            upload_bytes: bytes as u64,
        };
        let buffer_taken = Instant::now();
        let witness = staged.witness.as_mut().expect("just taken");
        let uploaded = match &compact {
            Some(layout) => witness.upload_compact(&pinned, layout, &Fr::ONE),
            None => witness.upload(&pinned.as_fr_mut()[..n]),
        };
        let uploaded_at = Instant::now();
        self.give_back_pinned(pinned);
        uploaded.map_err(device_failure)?;
        staged.upload_ms = started.elapsed().as_secs_f64() * 1e3;
        // where a staging's time goes, for plans with one device witness buffer (the wait is
        // the partition before on the device)
        tracing::debug!(
            compact = compact.is_some(),
            bytes,
            host_ms = (written - started).as_secs_f64() * 1e3,
            buffer_wait_ms = (buffer_taken - written).as_secs_f64() * 1e3,
            upload_ms = (uploaded_at - buffer_taken).as_secs_f64() * 1e3,
            "witness staged"
        );
        Ok(staged)
    }

    /// Prove the staged partition with `r` and `s`.
    pub fn prove_staged(
        &self,
        vk: &VerifyingKey<Bls12>,
        staged: &StagedWitness,
        r: Fr,
        s: Fr,
    ) -> Result<(Proof<Bls12>, Timings), ProveError> {
        let witness = staged.witness.as_ref().expect("a staged witness holds its buffer until dropped");
        let lane = self.lanes.take();
        let mut proved = dev::msm_sums(lane.device(), &self.srs, &self.shape, witness);
        // the front of H took the room the plan leaves: what a prove needs comes first
        if proved.as_ref().is_err_and(front::out_of_memory) && self.srs.h_front() > 0 {
            let given = self.srs.drop_h_front();
            tracing::warn!(
                given_back_bytes = given,
                "a prove ran out of device memory: the front of H is streamed again"
            );
            proved = dev::msm_sums(lane.device(), &self.srs, &self.shape, witness);
        }
        let (sums, mut timings) = proved.map_err(device_failure)?;
        drop(lane);
        timings.upload = staged.upload_ms;
        timings.h2d_witness = staged.upload_bytes as f64;
        let sums = QuerySums { h: sums.h, l: sums.l, a: sums.a, b_g1: sums.b_g1, b_g2: sums.b_g2 };
        Ok((assemble(vk, sums, r, s), timings))
    }

    /// [`ResidentKey::stage`] then [`ResidentKey::prove_staged`].
    pub fn prove(
        &self,
        vk: &VerifyingKey<Bls12>,
        inputs: &[Fr],
        aux: &[Fr],
        r: Fr,
        s: Fr,
    ) -> Result<(Proof<Bls12>, Timings), ProveError> {
        let staged = self.stage(inputs, aux)?;
        self.prove_staged(vk, &staged, r, s)
    }
}
