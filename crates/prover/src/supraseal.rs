//! The `cuda-supraseal` backend: a [`SynthesizedPartition`] goes straight into supraseal-c2's
//! Groth16 prover (sppark's NTT and MSM kernels), with the parameter file loaded once as its
//! SRS (pinned host memory) and reused for every partition of that circuit.
//!
//! supraseal-c2 takes the same pieces bellperson's prover does — a, b, c, the assignments, the
//! three density bitmaps (64-bit words, least significant bit first, as ours are) and r, s — so
//! nothing is converted; pointers to our vectors are handed over for the duration of the call.

use std::path::Path;

use bellperson::groth16::{Proof, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine, Scalar as Fr};
use group::prime::PrimeCurveAffine;
use snarkflow_synthesis::SynthesizedPartition;

use crate::ProveError;

/// A parameter file loaded by supraseal-c2, and its section table (to check partitions
/// against: supraseal-c2 asserts its inputs in C++, which aborts the process).
pub struct Srs {
    srs: supraseal_c2::SRS,
    sections: crate::FileSections,
}

impl Srs {
    /// Load `path` (bellperson/filecoin-proofs `.params` format) into pinned host memory.
    /// With `cache`, supraseal-c2 keeps it in its process-wide cache keyed by path (loaded
    /// once however often it is asked for); without, it is freed when dropped.
    /// The error does not name `path`: callers say which file they were reading.
    pub fn load(path: &Path, cache: bool) -> std::io::Result<Srs> {
        let (_, sections) = crate::read_sections(path)?;
        let srs = supraseal_c2::SRS::try_new(path.to_owned(), cache).map_err(|e| {
            std::io::Error::other(format!("supraseal-c2 could not load the parameters: {}", String::from(e)))
        })?;
        Ok(Srs { srs, sections })
    }
}

/// The proof layout supraseal-c2 writes: A (G1), B (G2), C (G1), affine, in this order.
#[repr(C)]
struct RawProof {
    a: G1Affine,
    b: G2Affine,
    c: G1Affine,
}

/// Prove `partition` with blinding factors `r`, `s` on the GPU(s) this process sees.
pub fn prove(
    partition: &SynthesizedPartition,
    vk: &VerifyingKey<Bls12>,
    srs: &Srs,
    r: Fr,
    s: Fr,
) -> Result<Proof<Bls12>, ProveError> {
    let p = partition;
    srs.sections.check_partition(p, vk)?;
    let assignment = supraseal_c2::Assignment::<Fr> {
        a_aux_density: p.a_aux_density.words().as_ptr() as *const usize,
        a_aux_bit_len: p.a_aux_density.len(),
        a_aux_popcount: p.a_aux_density.popcount(),
        b_inp_density: p.b_input_density.words().as_ptr() as *const usize,
        b_inp_bit_len: p.b_input_density.len(),
        b_inp_popcount: p.b_input_density.popcount(),
        b_aux_density: p.b_aux_density.words().as_ptr() as *const usize,
        b_aux_bit_len: p.b_aux_density.len(),
        b_aux_popcount: p.b_aux_density.popcount(),
        a: p.a.as_ptr(),
        b: p.b.as_ptr(),
        c: p.c.as_ptr(),
        abc_size: p.a.len(),
        inp_assignment_data: p.input_assignment.as_ptr(),
        inp_assignment_size: p.input_assignment.len(),
        aux_assignment_data: p.aux_assignment.as_ptr(),
        aux_assignment_size: p.aux_assignment.len(),
    };
    let mut proofs = [RawProof { a: G1Affine::identity(), b: G2Affine::identity(), c: G1Affine::identity() }];
    // supraseal-c2 panics on a CUDA error; the caller's thread boundary turns that into a
    // failed partition, and the result is verified before anyone sees it.
    supraseal_c2::generate_groth16_proofs(&[assignment], &[r], &[s], &mut proofs, &srs.srs);
    let [raw] = proofs;
    Ok(Proof { a: raw.a, b: raw.b, c: raw.c })
}
