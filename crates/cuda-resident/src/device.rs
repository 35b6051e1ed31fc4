//! Safe owners of the device objects: a [`Device`], the [`Srs`] and [`Shape`] resident on it,
//! and the one call that proves ([`msm_sums`]). Pinned buffers and witnesses: `witness.rs`.

use std::ptr::NonNull;
use std::sync::Arc;

use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use group::Group;

use crate::ffi::{self, result};
use crate::placement::{Placement, Section};
use crate::witness::DeviceWitness;
use crate::Error;

/// One CUDA device, opened for resident proving (or a second prove lane on one: a handle of its
/// own). The device code serialises proves on a handle.
pub struct Device {
    pub(crate) raw: NonNull<ffi::SfDevice>,
    ordinal: u32,
}

// SAFETY: the device object is only touched under its own mutex on the C++ side, and the
// handle is never freed while an `Arc` to it lives.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

/// The newest CUDA version the driver supports, as `cudaDriverGetVersion` numbers it (12040 is
/// 12.4; 0: no driver).
pub fn driver_version() -> Result<u32, Error> {
    let mut v = 0i32;
    // SAFETY: writes one int
    result(unsafe { ffi::sf_driver_version(&mut v) })?;
    Ok(v.max(0) as u32)
}

impl Device {
    /// Devices visible to this process.
    pub fn count() -> Result<usize, Error> {
        let mut n = 0usize;
        // SAFETY: writes one usize
        result(unsafe { ffi::sf_device_count(&mut n) })?;
        Ok(n)
    }

    pub fn open(ordinal: u32) -> Result<Arc<Device>, Error> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: on success `raw` is a fresh device object we own
        result(unsafe { ffi::sf_device_open(ordinal as i32, &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error { code: -1, message: "no device object".into() })?;
        Ok(Arc::new(Device { raw, ordinal }))
    }

    /// A second prove lane on the GPU `self` is: a handle with prove buffers and streams of its
    /// own that proves with the [`Srs`], [`Shape`] and witnesses made on `self`, beside `self`'s
    /// proves ([`msm_sums`] takes the lane). Refused where two MSMs cannot run at once in this
    /// process (`SNARKFLOW_ACCUMULATE=sppark`).
    pub fn open_lane(&self) -> Result<Arc<Device>, Error> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: on success `raw` is a fresh device object we own
        result(unsafe { ffi::sf_device_open_lane(self.ordinal as i32, &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error { code: -1, message: "no device object".into() })?;
        Ok(Arc::new(Device { raw, ordinal: self.ordinal }))
    }

    /// Queue this handle's tail MSMs on a stream of their own from its next prove on (done for
    /// the first handle once a second lane proves beside it; waits for a prove on it to end).
    pub fn own_tail_stream(&self) -> Result<(), Error> {
        // SAFETY: the handle is live; the device code takes its lock
        result(unsafe { ffi::sf_device_own_tail_stream(self.raw.as_ptr()) })
    }

    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// (free, total) bytes of device memory.
    pub fn memory(&self) -> Result<(u64, u64), Error> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two usizes
        result(unsafe { ffi::sf_device_memory(self.raw.as_ptr(), &mut free, &mut total) })?;
        Ok((free as u64, total as u64))
    }

    /// Free the per-proof buffers (they are allocated again by the next prove).
    pub fn release_workspace(&self) {
        // SAFETY: the handle is live
        unsafe { ffi::sf_device_release_workspace(self.raw.as_ptr()) }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: last owner; Srs and Shape hold an Arc, so none is left
        unsafe { ffi::sf_device_close(self.raw.as_ptr()) }
    }
}

/// One circuit's parameter points, in device memory (or, as [`Placement`] says, host memory).
pub struct Srs {
    raw: NonNull<ffi::SfSrs>,
    counts: [usize; 5],
    _device: Arc<Device>,
}

// SAFETY: its points are written only through &mut self and proves read them under the
// device's mutex; the copy of the front of H (`keep_h_front`, `drop_h_front` through &self) is
// guarded by a lock of its own on the C++ side
unsafe impl Send for Srs {}
unsafe impl Sync for Srs {}

impl Srs {
    /// Device memory for `counts[s]` points of each section (in [`Section::ALL`] order).
    pub fn allocate(device: &Arc<Device>, counts: [usize; 5], placement: &Placement) -> Result<Srs, Error> {
        let mut raw = std::ptr::null_mut();
        let place = placement.raw();
        // SAFETY: reads five usizes and the placement; on success we own `raw`
        result(unsafe { ffi::sf_srs_new(device.raw.as_ptr(), counts.as_ptr(), &place, &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error { code: -1, message: "no parameter object".into() })?;
        Ok(Srs { raw, counts, _device: device.clone() })
    }

    pub fn count(&self, section: Section) -> usize {
        self.counts[section as usize]
    }

    /// Convert points `first..` of `section` from the file's bytes (whole points; pinned memory
    /// uploads fastest) into device memory.
    pub fn load(&mut self, section: Section, first: usize, raw: &[u8]) -> Result<(), Error> {
        let size = section.file_point_bytes();
        if !raw.len().is_multiple_of(size) || first + raw.len() / size > self.count(section) {
            return Err(Error {
                code: -1,
                message: format!("{} bytes are not whole {section:?} points that fit", raw.len()),
            });
        }
        // SAFETY: raw holds raw.len() / size whole points
        result(unsafe { ffi::sf_srs_load(self.raw.as_ptr(), section as u32, first, raw.as_ptr(), raw.len() / size) })
    }

    /// Every point is in: free the upload staging buffer.
    pub fn loaded(&mut self) {
        // SAFETY: the handle is live
        unsafe { ffi::sf_srs_loaded(self.raw.as_ptr()) }
    }

    pub fn device_bytes(&self) -> u64 {
        // SAFETY: the handle is live
        unsafe { ffi::sf_srs_bytes(self.raw.as_ptr(), std::ptr::null_mut()) as u64 }
    }

    /// With H placed on the host: keep a device copy of its first `points` points (fewer if H
    /// has fewer), which the H MSM then reads there instead of streaming them. Replaces a copy
    /// made before; on an error (no room) none is kept.
    pub fn keep_h_front(&self, points: usize) -> Result<(), Error> {
        // SAFETY: the handle is live; the device code takes the copy's lock
        result(unsafe { ffi::sf_srs_keep_h_front(self.raw.as_ptr(), points) })
    }

    /// Free the device copy of the front of H, waiting for proves that read it; its bytes.
    pub fn drop_h_front(&self) -> u64 {
        // SAFETY: the handle is live; the device code takes the copy's lock
        unsafe { ffi::sf_srs_drop_h_front(self.raw.as_ptr()) as u64 }
    }

    /// H points the device keeps a copy of ([`Srs::keep_h_front`]).
    pub fn h_front(&self) -> usize {
        // SAFETY: the handle is live
        unsafe { ffi::sf_srs_h_front(self.raw.as_ptr()) }
    }

    /// Page-locked host bytes holding the sections placed on the host.
    pub fn host_bytes(&self) -> u64 {
        let mut host = 0usize;
        // SAFETY: the handle is live; writes one usize
        unsafe { ffi::sf_srs_bytes(self.raw.as_ptr(), &mut host) };
        host as u64
    }
}

impl Drop for Srs {
    fn drop(&mut self) {
        // SAFETY: we own it; the C++ side waits for a prove using it to end
        unsafe { ffi::sf_srs_free(self.raw.as_ptr()) }
    }
}

/// One sparse matrix in compressed rows over the witness `[inputs | aux]`.
#[derive(Debug, Clone, Copy)]
pub struct Csr<'a> {
    pub row_starts: &'a [u64],
    pub cols: &'a [u32],
    pub coeffs: &'a [u32],
}

/// A shape's repeated blocks stored once (`snarkflow_synthesis::Fold`, `sf_fold`): rows
/// `[head_rows, head_rows + blocks·rows)` are copies of the block stored after the head, block
/// `k`'s columns in `[input_start, input_start + inputs)` moved by `k·inputs` and those in
/// `[aux_start, aux_start + aux)` by `k·aux`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RowFold {
    pub head_rows: u64,
    pub rows: u64,
    pub blocks: u64,
    pub input_start: u32,
    pub inputs: u32,
    pub aux_start: u32,
    pub aux: u32,
}

impl RowFold {
    /// Rows the matrices store for `rows` constraints.
    pub fn stored_rows(&self, rows: usize) -> Option<usize> {
        let repeated = self.blocks.checked_sub(1)?.checked_mul(self.rows)?;
        rows.checked_sub(usize::try_from(repeated).ok()?)
    }

    /// Whether the fold lies within `rows` constraints over a witness of `width` values.
    fn fits(&self, rows: usize, width: usize) -> bool {
        let end = |start: u64, per: u64| per.checked_mul(self.blocks).and_then(|b| b.checked_add(start));
        self.blocks >= 1
            && self.rows >= 1
            && end(self.head_rows, self.rows).is_some_and(|e| e <= rows as u64)
            && end(self.input_start.into(), self.inputs.into()).is_some_and(|e| e <= width as u64)
            && end(self.aux_start.into(), self.aux.into()).is_some_and(|e| e <= width as u64)
    }
}

/// What the device needs of a constraint shape.
#[derive(Debug, Clone, Copy)]
pub struct ShapeDesc<'a> {
    pub num_inputs: usize,
    pub num_aux: usize,
    /// Constraints: the matrices' rows, or (folded) the rows they unfold to.
    pub rows: usize,
    /// The matrices hold the head, one block and the rows after the blocks.
    pub fold: Option<RowFold>,
    pub matrices: [Csr<'a>; 3],
    pub table: &'a [Fr],
    /// Witness indices whose A-query point exists, in the order of the points.
    pub a_gather: &'a [u32],
    /// The same for the B queries (G1 and G2 share it).
    pub b_gather: &'a [u32],
}

/// A constraint shape resident in device memory.
pub struct Shape {
    raw: NonNull<ffi::SfShape>,
    _device: Arc<Device>,
}

// SAFETY: immutable after upload
unsafe impl Send for Shape {}
unsafe impl Sync for Shape {}

impl Shape {
    pub fn upload(device: &Arc<Device>, desc: &ShapeDesc<'_>, placement: &Placement) -> Result<Shape, Error> {
        let malformed = |message: &str| Error { code: -1, message: message.into() };
        let width = desc.num_inputs + desc.num_aux;
        let rows = match desc.fold {
            Some(f) if f.fits(desc.rows, width) && !placement.shape_on_host => {
                f.stored_rows(desc.rows).ok_or_else(|| malformed("the shape's fold is past its rows"))?
            }
            Some(_) => {
                return Err(malformed("the shape's fold is past its rows or columns, or its matrices on the host"))
            }
            None => desc.rows,
        };
        for m in &desc.matrices {
            let nnz = m.row_starts.last().copied().unwrap_or(0) as usize;
            if m.row_starts.len() != rows + 1 || m.cols.len() != nnz || m.coeffs.len() != nnz {
                return Err(Error { code: -1, message: "malformed constraint matrix".into() });
            }
            if m.cols.iter().any(|&c| c as usize >= width) || m.coeffs.iter().any(|&k| k as usize >= desc.table.len()) {
                return Err(Error {
                    code: -1,
                    message: "constraint matrix indexes past the witness or the table".into(),
                });
            }
        }
        if desc.a_gather.iter().chain(desc.b_gather).any(|&i| i as usize >= width) {
            return Err(Error { code: -1, message: "density gather indexes past the witness".into() });
        }
        let index_of = |v: Fr| desc.table.iter().position(|t| *t == v).map_or(u32::MAX, |i| i as u32);
        let csr = |m: &Csr<'_>| ffi::RawCsr {
            row_starts: m.row_starts.as_ptr(),
            cols: m.cols.as_ptr(),
            coeffs: m.coeffs.as_ptr(),
            rows,
            nnz: m.cols.len(),
        };
        let raw_desc = ffi::RawShapeDesc {
            num_inputs: desc.num_inputs,
            num_aux: desc.num_aux,
            m: [csr(&desc.matrices[0]), csr(&desc.matrices[1]), csr(&desc.matrices[2])],
            table: desc.table.as_ptr(),
            table_len: desc.table.len(),
            one_index: index_of(Fr::from(1u64)),
            minus_one_index: index_of(-Fr::from(1u64)),
            a_gather: desc.a_gather.as_ptr(),
            a_gather_len: desc.a_gather.len(),
            b_gather: desc.b_gather.as_ptr(),
            b_gather_len: desc.b_gather.len(),
            rows: desc.rows,
            fold: desc.fold.unwrap_or_default(),
        };
        let mut raw = std::ptr::null_mut();
        let place = placement.raw();
        // SAFETY: every pointer in raw_desc is valid for the length beside it (checked above)
        result(unsafe { ffi::sf_shape_new(device.raw.as_ptr(), &raw_desc, &place, &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error { code: -1, message: "no shape object".into() })?;
        Ok(Shape { raw, _device: device.clone() })
    }

    pub fn device_bytes(&self) -> u64 {
        // SAFETY: the handle is live
        unsafe { ffi::sf_shape_bytes(self.raw.as_ptr(), std::ptr::null_mut()) as u64 }
    }

    /// Page-locked host bytes holding the matrices when they are placed on the host.
    pub fn host_bytes(&self) -> u64 {
        let mut host = 0usize;
        // SAFETY: the handle is live; writes one usize
        unsafe { ffi::sf_shape_bytes(self.raw.as_ptr(), &mut host) };
        host as u64
    }
}

impl Drop for Shape {
    fn drop(&mut self) {
        // SAFETY: we own it
        unsafe { ffi::sf_shape_free(self.raw.as_ptr()) }
    }
}

/// Σ h_i·H_i, Σ aux_j·L_j, Σ w_k·A_k, Σ w_k·B_k (G1 and G2) of one partition.
#[derive(Debug, Clone, Copy)]
pub struct Sums {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// Milliseconds per phase of one prove. `spmv` and `ntt` are device time from CUDA events on
/// their own stream, which runs beside the L, A and B MSMs; the MSMs are timed by the host around
/// their synchronised work; `wait_h` is how long the H MSM waited for h once those were done,
/// `wait_ones` how long the sums of the points whose scalar is 1 ran past the H MSM.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    pub upload: f64,
    pub spmv: f64,
    pub ntt: f64,
    pub msm_h: f64,
    pub msm_l: f64,
    pub msm_a: f64,
    pub msm_b_g1: f64,
    pub msm_b_g2: f64,
    pub wait_h: f64,
    pub wait_ones: f64,
    pub total: f64,
    /// Bytes copied to the device during the prove (streamed matrices and H points).
    pub h2d_copied: f64,
    /// Bytes the kernels read from host memory in place (points of host sections whose scalar
    /// is not 0).
    pub h2d_mapped: f64,
    /// Bytes of the witness's upload: its compact form, or the whole witness (set by the host
    /// half that staged it).
    pub h2d_witness: f64,
}

/// The five MSM sums of the partition whose witness (`[inputs | aux]`) is in `witness`, against
/// `srs` and `shape` on `device` or a lane of it ([`Device::open_lane`]; the device code checks
/// that all four are on one GPU).
pub fn msm_sums(device: &Device, srs: &Srs, shape: &Shape, witness: &DeviceWitness) -> Result<(Sums, Timings), Error> {
    let mut raw = ffi::RawSums {
        h: G1Projective::identity(),
        l: G1Projective::identity(),
        a: G1Projective::identity(),
        b_g1: G1Projective::identity(),
        b_g2: G2Projective::identity(),
    };
    let mut t = Timings::default();
    // SAFETY: the C++ side checks that srs and shape belong to device and fit the witness length
    result(unsafe {
        ffi::sf_prove(device.raw.as_ptr(), srs.raw.as_ptr(), shape.raw.as_ptr(), witness.raw.as_ptr(), &mut raw, &mut t)
    })?;
    Ok((Sums { h: raw.h, l: raw.l, a: raw.a, b_g1: raw.b_g1, b_g2: raw.b_g2 }, t))
}
