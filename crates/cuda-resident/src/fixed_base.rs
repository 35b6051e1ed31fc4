//! Random parameters on the device: k·G for many scalars k and one fixed base G, from its comb
//! table, written as bellperson's parameter files store points.

use blstrs::{G1Affine, G2Affine, Scalar as Fr};

use crate::device::Device;
use crate::ffi::{self, result};
use crate::Error;

/// Entries of the comb tables [`fixed_base_g1`] and [`fixed_base_g2`] take: d·2^(8w)·G for
/// w < 32 and d in 1..=255, at index w·255 + d − 1.
pub const COMB_ENTRIES: usize = 32 * 255;

fn check_table(len: usize) -> Result<(), Error> {
    if len == COMB_ENTRIES {
        return Ok(());
    }
    Err(Error { code: -1, message: format!("a comb table has {COMB_ENTRIES} entries, not {len}") })
}

/// k·G for every scalar k, as bellperson's parameter files store G1 points (uncompressed, 96
/// bytes each, big-endian coordinates, 0x40 flag for the identity), computed on `device` from
/// `table`, the comb table of G.
pub fn fixed_base_g1(device: &Device, table: &[G1Affine], scalars: &[Fr]) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; scalars.len() * 96];
    fixed_base_g1_into(device, table, scalars, &mut out)?;
    Ok(out)
}

/// [`fixed_base_g1`] into the first `scalars.len()` · 96 bytes of `out` (a [`PinnedBuffer`]
/// reused piece after piece spares the copy through pageable memory and its page faults).
pub fn fixed_base_g1_into(device: &Device, table: &[G1Affine], scalars: &[Fr], out: &mut [u8]) -> Result<(), Error> {
    check_table(table.len())?;
    check_room(out.len(), scalars.len() * 96)?;
    // SAFETY: table has COMB_ENTRIES points, out room for one 96-byte point per scalar
    result(unsafe {
        ffi::sf_fixed_base_g1(device.raw.as_ptr(), table.as_ptr(), scalars.as_ptr(), scalars.len(), out.as_mut_ptr())
    })
}

/// [`fixed_base_g1`] in G2: 192 bytes per point (x.c1, x.c0, y.c1, y.c0, as blst writes them).
pub fn fixed_base_g2(device: &Device, table: &[G2Affine], scalars: &[Fr]) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; scalars.len() * 192];
    fixed_base_g2_into(device, table, scalars, &mut out)?;
    Ok(out)
}

/// [`fixed_base_g2`] into the first `scalars.len()` · 192 bytes of `out`.
pub fn fixed_base_g2_into(device: &Device, table: &[G2Affine], scalars: &[Fr], out: &mut [u8]) -> Result<(), Error> {
    check_table(table.len())?;
    check_room(out.len(), scalars.len() * 192)?;
    // SAFETY: table has COMB_ENTRIES points, out room for one 192-byte point per scalar
    result(unsafe {
        ffi::sf_fixed_base_g2(device.raw.as_ptr(), table.as_ptr(), scalars.as_ptr(), scalars.len(), out.as_mut_ptr())
    })
}

fn check_room(have: usize, need: usize) -> Result<(), Error> {
    if have >= need {
        return Ok(());
    }
    Err(Error { code: -1, message: format!("{need} bytes of points do not fit in {have}") })
}
