//! The `cuda-resident` backend: a circuit's parameter points and constraint shape live in GPU
//! memory (`snarkflow-cuda-resident`), a partition costs one witness upload, and the device
//! computes a, b, c, h and all five MSMs. Only r and s are added here, on the CPU.
//!
//! The parameter file is streamed through two pinned buffers straight into device memory and
//! converted there; no host copy of the points is kept. The constraint shape is uploaded and
//! then dropped on the host as well.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};

use bellperson::groth16::{Proof, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};
use rayon::prelude::*;
use snarkflow_cuda_resident::{self as dev, Csr, PinnedBuffer, Section, ShapeDesc};
use snarkflow_synthesis::ConstraintShape;

use crate::groth16::{assemble, QuerySums};
use crate::ProveError;

pub use snarkflow_cuda_resident::{Device, Timings};

/// The device this process proves on (ordinal 0: a gpu-worker sees one GPU through
/// `CUDA_VISIBLE_DEVICES`), opened on first use.
pub fn device() -> Result<Arc<Device>, dev::Error> {
    static DEVICE: std::sync::OnceLock<Result<Arc<Device>, dev::Error>> = std::sync::OnceLock::new();
    DEVICE.get_or_init(|| Device::open(0)).clone()
}

/// Bytes of each pinned buffer the parameter file passes through (two are in flight).
const UPLOAD_CHUNK: usize = 256 << 20;

/// Where each point section of a bellperson parameter file starts and how many points it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSections {
    pub offsets: [u64; 5],
    pub counts: [usize; 5],
}

/// Read the verifying key and the section table of the parameter file at `path`.
pub fn read_sections(path: &Path) -> std::io::Result<(VerifyingKey<Bls12>, FileSections)> {
    let mut file = BufReader::new(File::open(path)?);
    let vk = VerifyingKey::<Bls12>::read(&mut file)?;
    // α, β (G1), β, γ (G2), δ (G1, G2), the IC count and points
    let mut at = (96 * 3 + 192 * 3 + 4 + 96 * vk.ic.len()) as u64;
    let mut sections = FileSections { offsets: [0; 5], counts: [0; 5] };
    let len = file.get_ref().metadata()?.len();
    for (i, section) in Section::ALL.into_iter().enumerate() {
        file.seek(SeekFrom::Start(at))?;
        let mut count = [0u8; 4];
        file.read_exact(&mut count)?;
        let count = u32::from_be_bytes(count) as usize;
        sections.offsets[i] = at + 4;
        sections.counts[i] = count;
        at += 4 + (count * section.file_point_bytes()) as u64;
        if at > len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{section:?} section runs past the end"),
            ));
        }
    }
    Ok((vk, sections))
}

/// A circuit's parameters and shape resident on one device, and a pinned witness buffer.
pub struct ResidentKey {
    device: Arc<Device>,
    srs: dev::Srs,
    shape: dev::Shape,
    num_inputs: usize,
    num_aux: usize,
    /// Pinned staging for the witness `[inputs | aux]`, reused by every prove.
    staging: Mutex<Option<PinnedBuffer>>,
    pub shape_hash: [u8; 32],
}

impl std::fmt::Debug for ResidentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentKey").field("device", &self.device.ordinal()).finish_non_exhaustive()
    }
}

fn dev_err(e: dev::Error) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

impl ResidentKey {
    /// Upload the parameter file at `path` and `shape` to `device`.
    pub fn load(
        device: &Arc<Device>,
        path: &Path,
        shape: &ConstraintShape,
    ) -> std::io::Result<(VerifyingKey<Bls12>, ResidentKey)> {
        let (vk, sections) = read_sections(path)?;
        let srs = upload_points(device, path, &sections)?;
        let shape_dev = upload_shape(device, shape).map_err(dev_err)?;
        let key = ResidentKey {
            device: device.clone(),
            srs,
            shape: shape_dev,
            num_inputs: shape.num_inputs,
            num_aux: shape.num_aux,
            staging: Mutex::new(None),
            shape_hash: shape.hash,
        };
        Ok((vk, key))
    }

    /// Device memory this key holds (points and shape).
    pub fn device_bytes(&self) -> u64 {
        self.srs.device_bytes() + self.shape.device_bytes()
    }

    /// Prove the partition whose witness is `inputs` (element 0 the constant ONE) and `aux`.
    pub fn prove(
        &self,
        vk: &VerifyingKey<Bls12>,
        inputs: &[Fr],
        aux: &[Fr],
        r: Fr,
        s: Fr,
    ) -> Result<(Proof<Bls12>, Timings), ProveError> {
        if inputs.len() != self.num_inputs || aux.len() != self.num_aux {
            return Err(ProveError::Resident(format!(
                "witness has {} inputs and {} aux values, the shape {} and {}",
                inputs.len(),
                aux.len(),
                self.num_inputs,
                self.num_aux
            )));
        }
        let n = inputs.len() + aux.len();
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if staging.as_ref().is_none_or(|b| b.len() < n * 32) {
            *staging = None;
            *staging = Some(PinnedBuffer::new(n * 32).map_err(|e| ProveError::Resident(e.to_string()))?);
        }
        let buf = staging.as_mut().expect("allocated above").as_fr_mut();
        buf[..inputs.len()].copy_from_slice(inputs);
        buf[inputs.len()..n]
            .par_chunks_mut(1 << 16)
            .zip(aux.par_chunks(1 << 16))
            .for_each(|(d, s)| d.copy_from_slice(s));
        let (sums, timings) = dev::msm_sums(&self.device, &self.srs, &self.shape, &buf[..n])
            .map_err(|e| ProveError::Device(e.to_string()))?;
        let sums = QuerySums { h: sums.h, l: sums.l, a: sums.a, b_g1: sums.b_g1, b_g2: sums.b_g2 };
        Ok((assemble(vk, sums, r, s), timings))
    }
}

/// Stream the five point sections from the file into device memory: one thread reads into
/// one pinned buffer while the device converts the other.
fn upload_points(device: &Arc<Device>, path: &Path, sections: &FileSections) -> std::io::Result<dev::Srs> {
    let mut srs = dev::Srs::allocate(device, sections.counts).map_err(dev_err)?;
    let (to_device, filled) = sync_channel::<(Section, usize, PinnedBuffer, usize)>(1);
    let (to_reader, empty) = sync_channel::<PinnedBuffer>(2);
    for _ in 0..2 {
        to_reader.send(PinnedBuffer::new(UPLOAD_CHUNK).map_err(dev_err)?).expect("room for two");
    }
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> std::io::Result<()> {
            let mut file = File::open(path)?;
            for (i, section) in Section::ALL.into_iter().enumerate() {
                let size = section.file_point_bytes();
                let per_chunk = UPLOAD_CHUNK / size;
                file.seek(SeekFrom::Start(sections.offsets[i]))?;
                let mut first = 0;
                while first < sections.counts[i] {
                    let n = per_chunk.min(sections.counts[i] - first);
                    let Ok(mut buf) = empty.recv() else { return Ok(()) };
                    file.read_exact(&mut buf.as_mut_slice()[..n * size])?;
                    if to_device.send((section, first, buf, n * size)).is_err() {
                        return Ok(());
                    }
                    first += n;
                }
            }
            Ok(())
        });
        let mut uploaded = Ok(());
        for (section, first, mut buf, bytes) in filled.iter() {
            uploaded = srs.load(section, first, &buf.as_mut_slice()[..bytes]).map_err(dev_err);
            if uploaded.is_err() {
                break;
            }
            let _ = to_reader.send(buf);
        }
        drop(filled);
        drop(to_reader);
        reader.join().expect("parameter reader panicked")?;
        uploaded
    })?;
    srs.loaded();
    Ok(srs)
}

/// The shape's matrices and the gather lists of the A and B queries: the variables each
/// query has points for, in the order the parameter file stores them.
fn upload_shape(device: &Arc<Device>, shape: &ConstraintShape) -> Result<dev::Shape, dev::Error> {
    let inputs = shape.num_inputs as u32;
    let set = |d: &snarkflow_synthesis::Density, offset: u32| -> Vec<u32> {
        d.iter().enumerate().filter(|&(_, on)| on).map(|(i, _)| i as u32 + offset).collect()
    };
    let mut a_gather: Vec<u32> = (0..inputs).collect();
    a_gather.extend(set(&shape.a_aux_density, inputs));
    let mut b_gather = set(&shape.b_input_density, 0);
    b_gather.extend(set(&shape.b_aux_density, inputs));
    fn csr(m: &snarkflow_synthesis::SparseMatrix) -> Csr<'_> {
        Csr { row_starts: m.row_starts(), cols: m.cols(), coeffs: m.coeffs() }
    }
    let desc = ShapeDesc {
        num_inputs: shape.num_inputs,
        num_aux: shape.num_aux,
        matrices: [csr(&shape.a), csr(&shape.b), csr(&shape.c)],
        table: shape.coeff_table(),
        a_gather: &a_gather,
        b_gather: &b_gather,
    };
    dev::Shape::upload(device, &desc)
}
