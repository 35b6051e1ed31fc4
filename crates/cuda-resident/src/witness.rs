//! Host memory the device reads over PCIe ([`PinnedBuffer`]), a witness's compact form in it
//! ([`CompactLayout`]), and a witness in device memory ([`DeviceWitness`]) uploaded from either
//! form while another partition proves.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use blstrs::Scalar as Fr;

use crate::device::Device;
use crate::ffi::{self, result};
use crate::Error;

/// Host memory the device reads at full PCIe speed (page-locked), `len` bytes.
pub struct PinnedBuffer {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: plain memory, owned
unsafe impl Send for PinnedBuffer {}
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    pub fn new(len: usize) -> Result<PinnedBuffer, Error> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: on success `p` points at `len` bytes we own
        result(unsafe { ffi::sf_pinned_alloc(len, &mut p) })?;
        let ptr = NonNull::new(p as *mut u8).ok_or_else(|| Error { code: -1, message: "no pinned memory".into() })?;
        Ok(PinnedBuffer { ptr, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` bytes we own
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes we own, borrowed mutably
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The buffer as field elements (its length rounded down to whole ones). Any bit pattern
    /// is a valid `Fr` representation for reading back what was written.
    pub fn as_fr_mut(&mut self) -> &mut [Fr] {
        debug_assert_eq!(self.ptr.as_ptr() as usize % std::mem::align_of::<Fr>(), 0, "cudaHostAlloc aligns pages");
        // SAFETY: page-aligned memory of at least len bytes; Fr is four u64 limbs
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut Fr, self.len / std::mem::size_of::<Fr>()) }
    }
}

/// Where the parts of a compact witness lie in a [`PinnedBuffer`]: `len` values as class words
/// (2 bits a value: 0, 1, or neither), one offset per word into the values that are neither,
/// then those `others` values (`snarkflow_prover::compact_witness` writes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactLayout {
    pub len: usize,
    pub others: usize,
}

impl CompactLayout {
    pub fn words(&self) -> usize {
        self.len.div_ceil(32)
    }

    fn offsets_at(&self) -> usize {
        self.words() * 8
    }

    fn others_at(&self) -> usize {
        (self.offsets_at() + self.words() * 4).next_multiple_of(32)
    }

    /// Bytes of the whole compact form: what crosses PCIe.
    pub fn bytes(&self) -> usize {
        self.others_at() + self.others * std::mem::size_of::<Fr>()
    }
}

/// A compact witness's parts in a pinned buffer, to be written.
pub struct CompactParts<'a> {
    pub classes: &'a mut [u64],
    pub word_others: &'a mut [u32],
    pub others: &'a mut [Fr],
}

impl PinnedBuffer {
    /// The buffer cut into `layout`'s parts; `None` if it is too small.
    pub fn compact_mut(&mut self, layout: &CompactLayout) -> Option<CompactParts<'_>> {
        if layout.bytes() > self.len {
            return None;
        }
        let base = self.ptr.as_ptr();
        // SAFETY: three disjoint ranges inside `len` bytes we own, borrowed mutably for the
        // lifetime of &mut self; the buffer is page-aligned and each part starts at a multiple
        // of its type's alignment (8, 8·words, 32-rounded); any bit pattern is valid for reading
        // back what was written
        unsafe {
            Some(CompactParts {
                classes: std::slice::from_raw_parts_mut(base as *mut u64, layout.words()),
                word_others: std::slice::from_raw_parts_mut(base.add(layout.offsets_at()) as *mut u32, layout.words()),
                others: std::slice::from_raw_parts_mut(base.add(layout.others_at()) as *mut Fr, layout.others),
            })
        }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by sf_pinned_alloc
        unsafe { ffi::sf_pinned_free(self.ptr.as_ptr() as *mut c_void) }
    }
}

/// A witness `[inputs | aux]` in device memory, uploaded on its own stream: made ready while
/// another partition proves, then handed to [`msm_sums`].
pub struct DeviceWitness {
    pub(crate) raw: NonNull<ffi::SfWitness>,
    capacity: usize,
    /// The compact plan's: the compact form is kept on the device as it is.
    keeps_compact: bool,
    _device: Arc<Device>,
}

// SAFETY: written only through &mut self; a prove reads it under the device's mutex
unsafe impl Send for DeviceWitness {}
unsafe impl Sync for DeviceWitness {}

impl DeviceWitness {
    /// Device memory for up to `capacity` field elements.
    pub fn new(device: &Arc<Device>, capacity: usize) -> Result<DeviceWitness, Error> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: on success we own `raw`
        result(unsafe { ffi::sf_witness_new(device.raw.as_ptr(), capacity, &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error { code: -1, message: "no witness object".into() })?;
        Ok(DeviceWitness { raw, capacity, keeps_compact: false, _device: device.clone() })
    }

    /// A witness of the compact plan ([`Placement::compact`](crate::Placement)): what
    /// [`DeviceWitness::upload_compact`] copies stays on the device in its compact form (about a
    /// byte a value for a Filecoin partition), which the prove reads in place; the device
    /// memory for it is made at the first upload. It takes no whole witness.
    pub fn new_compact(device: &Arc<Device>) -> Result<DeviceWitness, Error> {
        let mut w = DeviceWitness::new(device, 0)?;
        w.keeps_compact = true;
        w.capacity = usize::MAX;
        Ok(w)
    }

    /// Values a whole witness may have (`usize::MAX` for the compact plan's: any).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Copy `witness` to the device and wait for it; pinned memory copies ~8x faster.
    pub fn upload(&mut self, witness: &[Fr]) -> Result<(), Error> {
        if self.keeps_compact {
            return Err(Error { code: -1, message: "the compact plan's witnesses are uploaded compact".into() });
        }
        if witness.len() > self.capacity {
            return Err(Error {
                code: -1,
                message: format!("a witness of {} values does not fit a buffer of {}", witness.len(), self.capacity),
            });
        }
        // SAFETY: witness.len() values, within the buffer's capacity (checked here and there)
        result(unsafe { ffi::sf_witness_upload(self.raw.as_ptr(), witness.as_ptr(), witness.len()) })
    }
}

impl DeviceWitness {
    /// Write the witness from its compact form, in `blob` as `layout` says, on the device
    /// (`one` is what a value of class 1 becomes); waits for it. Only `layout.bytes()` cross
    /// PCIe, read in place through the mapping by the kernel, or (`SNARKFLOW_COMPACT_COPY=1`:
    /// the same proofs, no faster where measured; see resident_data.cuh) copied first into a
    /// device staging buffer this witness keeps (about a byte per value).
    pub fn upload_compact(&mut self, blob: &PinnedBuffer, layout: &CompactLayout, one: &Fr) -> Result<(), Error> {
        if layout.len > self.capacity || layout.bytes() > blob.len() {
            return Err(Error {
                code: -1,
                message: format!(
                    "a compact witness of {} values ({} bytes) does not fit a buffer of {} values or {} pinned bytes",
                    layout.len,
                    layout.bytes(),
                    self.capacity,
                    blob.len()
                ),
            });
        }
        // kept as it is (the compact plan: copied into device memory the call makes large
        // enough), or written out whole into the witness buffer
        let call = if self.keeps_compact { ffi::sf_witness_keep_compact } else { ffi::sf_witness_upload_compact };
        // SAFETY: the blob holds layout.bytes() bytes (checked), the witness buffer layout.len
        // values where it is written out (checked here and there); the kernel reads the blob
        // through its mapping
        result(unsafe {
            call(
                self.raw.as_ptr(),
                blob.ptr.as_ptr(),
                layout.bytes(),
                layout.offsets_at(),
                layout.others_at(),
                layout.len,
                one,
            )
        })
    }
}

impl Drop for DeviceWitness {
    fn drop(&mut self) {
        // SAFETY: we own it; a prove borrows it, so none is using it now
        unsafe { ffi::sf_witness_free(self.raw.as_ptr()) }
    }
}
