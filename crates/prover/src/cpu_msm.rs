//! The CPU prover's multi-scalar multiplications, with blst's Pippenger (affine bucket
//! additions sharing inversions, its own thread per core) instead of ec-gpu-gen's CPU multiexp,
//! which shifts every scalar once per window and checks every point for infinity: on the 2 KiB
//! PoRep (2.7 M constraints) the queries took ~100 of a proof's ~110 CPU-s that way. Same sums,
//! so the same proof bytes (the tests compare with bellperson's prover).

use bellperson::groth16::Parameters;
use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective};
use group::Group;
use snarkflow_synthesis::Density;

use crate::groth16::QuerySums;

/// Which variables the A and B queries have points for (the rest are skipped).
pub(crate) struct Densities<'a> {
    pub(crate) a_aux: &'a Density,
    pub(crate) b_inp: &'a Density,
    pub(crate) b_aux: &'a Density,
}

/// The five query sums of a partition: H over the quotient's coefficients, L over the aux
/// assignment, A and B (G1 and G2) over the inputs and the aux values their density keeps,
/// each query's points taken from the start of its slice as bellperson's prover takes them.
pub(crate) fn query_sums(
    params: &Parameters<Bls12>,
    h: &[[u8; 32]],
    inputs: &[[u8; 32]],
    aux: &[[u8; 32]],
    d: &Densities<'_>,
) -> QuerySums {
    let ni = inputs.len();
    let b_inp = kept(inputs, Some(d.b_inp));
    let (a_aux, b_aux) = (kept(aux, Some(d.a_aux)), kept(aux, Some(d.b_aux)));
    let nb = d.b_inp.popcount();
    QuerySums {
        h: g1(&params.h, &kept(h, None)),
        l: g1(&params.l, &kept(aux, None)),
        a: g1(&params.a, &kept(inputs, None)) + g1(&params.a[ni..], &a_aux),
        b_g1: g1(&params.b_g1, &b_inp) + g1(&params.b_g1[nb..], &b_aux),
        b_g2: g2(&params.b_g2, &b_inp) + g2(&params.b_g2[nb..], &b_aux),
    }
}

/// The scalars a query multiplies, little-endian and concatenated as blst reads them: those
/// whose variable the density has, or all of them.
fn kept(scalars: &[[u8; 32]], density: Option<&Density>) -> Vec<u8> {
    match density {
        None => scalars.as_flattened().to_vec(),
        Some(d) => scalars.iter().zip(d.iter()).filter(|(_, set)| *set).flat_map(|(s, _)| *s).collect(),
    }
}

/// Σ k_i·P_i over the first scalars.len() / 32 points (the identity for none).
fn g1(points: &[G1Affine], scalars: &[u8]) -> G1Projective {
    let n = scalars.len() / 32;
    if n == 0 {
        return G1Projective::identity();
    }
    let raw: Vec<blst_p1_affine> = points[..n].iter().map(|p| *p.as_ref()).collect();
    let sum: blst_p1 = raw.mult(scalars, 255);
    let mut out = G1Projective::identity();
    *out.as_mut() = sum;
    out
}

/// As [`g1`], in G2.
fn g2(points: &[G2Affine], scalars: &[u8]) -> G2Projective {
    let n = scalars.len() / 32;
    if n == 0 {
        return G2Projective::identity();
    }
    let raw: Vec<blst_p2_affine> = points[..n].iter().map(|p| *p.as_ref()).collect();
    let sum: blst_p2 = raw.mult(scalars, 255);
    let mut out = G2Projective::identity();
    *out.as_mut() = sum;
    out
}
