//! The C ABI of `cuda/resident.cu`. Every fallible call returns sppark's error struct; the
//! opaque handles are owned by the safe wrappers in `device.rs`.

use std::ffi::c_void;

use blstrs::{G1Projective, G2Projective, Scalar as Fr};

use crate::device::RowFold;

pub(crate) enum SfDevice {}
pub(crate) enum SfSrs {}
pub(crate) enum SfShape {}
pub(crate) enum SfWitness {}

#[repr(C)]
pub(crate) struct RawCsr {
    pub row_starts: *const u64,
    pub cols: *const u32,
    pub coeffs: *const u32,
    pub rows: usize,
    pub nnz: usize,
}

#[repr(C)]
pub(crate) struct RawShapeDesc {
    pub num_inputs: usize,
    pub num_aux: usize,
    pub m: [RawCsr; 3],
    pub table: *const Fr,
    pub table_len: usize,
    pub one_index: u32,
    pub minus_one_index: u32,
    pub a_gather: *const u32,
    pub a_gather_len: usize,
    pub b_gather: *const u32,
    pub b_gather_len: usize,
    pub rows: usize,
    pub fold: RowFold,
}

/// Where a key's parts live (`sf_placement`).
#[repr(C)]
pub(crate) struct RawPlacement {
    pub host_sections: u32,
    pub shape_on_host: u32,
    pub h_batch: usize,
    pub shape_chunk: usize,
    pub lean: u32,
    pub compact: u32,
}

/// The five sums, in blst's Jacobian layout (blstrs' projective types wrap exactly that).
#[repr(C)]
pub(crate) struct RawSums {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

extern "C" {
    pub(crate) fn sf_device_count(out: *mut usize) -> sppark::Error;
    pub(crate) fn sf_driver_version(out: *mut i32) -> sppark::Error;
    pub(crate) fn sf_device_open(ordinal: i32, out: *mut *mut SfDevice) -> sppark::Error;
    pub(crate) fn sf_device_open_lane(ordinal: i32, out: *mut *mut SfDevice) -> sppark::Error;
    pub(crate) fn sf_device_own_tail_stream(d: *mut SfDevice) -> sppark::Error;
    pub(crate) fn sf_device_close(d: *mut SfDevice);
    pub(crate) fn sf_device_memory(d: *mut SfDevice, free: *mut usize, total: *mut usize) -> sppark::Error;
    pub(crate) fn sf_device_release_workspace(d: *mut SfDevice);
    pub(crate) fn sf_pinned_alloc(bytes: usize, out: *mut *mut c_void) -> sppark::Error;
    pub(crate) fn sf_pinned_free(p: *mut c_void);
    pub(crate) fn sf_witness_new(d: *mut SfDevice, capacity: usize, out: *mut *mut SfWitness) -> sppark::Error;
    pub(crate) fn sf_witness_upload(w: *mut SfWitness, host: *const Fr, len: usize) -> sppark::Error;
    pub(crate) fn sf_witness_upload_compact(
        w: *mut SfWitness,
        blob: *const u8,
        bytes: usize,
        offsets_at: usize,
        others_at: usize,
        len: usize,
        one: *const Fr,
    ) -> sppark::Error;
    pub(crate) fn sf_witness_keep_compact(
        w: *mut SfWitness,
        blob: *const u8,
        bytes: usize,
        offsets_at: usize,
        others_at: usize,
        len: usize,
        one: *const Fr,
    ) -> sppark::Error;
    pub(crate) fn sf_witness_free(w: *mut SfWitness);
    pub(crate) fn sf_srs_new(
        d: *mut SfDevice,
        counts: *const usize,
        place: *const RawPlacement,
        out: *mut *mut SfSrs,
    ) -> sppark::Error;
    pub(crate) fn sf_srs_load(
        srs: *mut SfSrs,
        section: u32,
        first: usize,
        raw: *const u8,
        count: usize,
    ) -> sppark::Error;
    pub(crate) fn sf_srs_loaded(srs: *mut SfSrs);
    pub(crate) fn sf_srs_bytes(srs: *const SfSrs, host: *mut usize) -> usize;
    pub(crate) fn sf_srs_keep_h_front(srs: *mut SfSrs, points: usize) -> sppark::Error;
    pub(crate) fn sf_srs_drop_h_front(srs: *mut SfSrs) -> usize;
    pub(crate) fn sf_srs_h_front(srs: *const SfSrs) -> usize;
    pub(crate) fn sf_srs_free(srs: *mut SfSrs);
    pub(crate) fn sf_shape_new(
        d: *mut SfDevice,
        desc: *const RawShapeDesc,
        place: *const RawPlacement,
        out: *mut *mut SfShape,
    ) -> sppark::Error;
    pub(crate) fn sf_shape_bytes(sh: *const SfShape, host: *mut usize) -> usize;
    pub(crate) fn sf_shape_free(sh: *mut SfShape);
    pub(crate) fn sf_fixed_base_g1(
        d: *mut SfDevice,
        table: *const blstrs::G1Affine,
        scalars: *const Fr,
        n: usize,
        out: *mut u8,
    ) -> sppark::Error;
    pub(crate) fn sf_fixed_base_g2(
        d: *mut SfDevice,
        table: *const blstrs::G2Affine,
        scalars: *const Fr,
        n: usize,
        out: *mut u8,
    ) -> sppark::Error;
    pub(crate) fn sf_prove(
        d: *mut SfDevice,
        srs: *const SfSrs,
        sh: *const SfShape,
        wit: *const SfWitness,
        out: *mut RawSums,
        t: *mut crate::Timings,
    ) -> sppark::Error;
}

/// sppark's error into ours (its message is freed when `e` drops).
pub(crate) fn result(e: sppark::Error) -> Result<(), crate::Error> {
    if e.code == 0 {
        return Ok(());
    }
    Err(crate::Error { code: e.code, message: String::from(&e) })
}
