//! The CPU prover's multi-scalar multiplications, with blst's Pippenger (buckets in XYZZ
//! coordinates, points added to them mixed, on blst's own thread per core) instead of
//! ec-gpu-gen's CPU multiexp, which shifts every scalar once per window and checks every point
//! for infinity: `perf` put 18 % of the 2 KiB PoRep test's CPU time in those two alone, and that
//! proof went from 53.4 to 34.8 s. Same sums, so the same proof bytes (the tests compare with
//! bellperson's prover).

use bellperson::groth16::Parameters;
use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective};
use group::Group;
use snarkflow_synthesis::Density;

use crate::groth16::{Densities, ProveError, QuerySums};

/// The five query sums of a partition: H over the quotient's coefficients, L over the aux
/// assignment, A and B (G1 and G2) over the inputs and the aux values their density keeps,
/// each query's points taken from the start of its slice as bellperson's prover takes them.
pub(crate) fn query_sums(
    params: &Parameters<Bls12>,
    h: &[[u8; 32]],
    inputs: &[[u8; 32]],
    aux: &[[u8; 32]],
    d: &Densities<'_>,
) -> Result<QuerySums, ProveError> {
    let ni = inputs.len();
    let b_inp = kept(inputs, d.b_inp);
    let (a_aux, b_aux) = (kept(aux, d.a_aux), kept(aux, d.b_aux));
    let nb = d.b_inp.popcount();
    Ok(QuerySums {
        h: g1("H", &params.h, h.as_flattened())?,
        l: g1("L", &params.l, aux.as_flattened())?,
        a: g1("A", &params.a, inputs.as_flattened())? + g1("A", params.a.get(ni..).unwrap_or_default(), &a_aux)?,
        b_g1: g1("B", &params.b_g1, &b_inp)? + g1("B", params.b_g1.get(nb..).unwrap_or_default(), &b_aux)?,
        b_g2: g2(&params.b_g2, &b_inp)? + g2(params.b_g2.get(nb..).unwrap_or_default(), &b_aux)?,
    })
}

/// The scalars of the variables the density has, little-endian and concatenated as blst reads
/// them (a query over every variable takes the scalars as they are, uncopied).
fn kept(scalars: &[[u8; 32]], density: &Density) -> Vec<u8> {
    scalars.iter().zip(density.iter()).filter(|(_, set)| *set).flat_map(|(s, _)| *s).collect()
}

/// Σ k_i·P_i over the first scalars.len() / 32 points (the identity for none); an error, not a
/// panic, where the query has fewer points (the partition was checked against the parameters
/// before, so this is a bug's guard).
fn g1(query: &str, points: &[G1Affine], scalars: &[u8]) -> Result<G1Projective, ProveError> {
    let n = scalars.len() / 32;
    if n == 0 {
        return Ok(G1Projective::identity());
    }
    let points = points.get(..n).ok_or_else(|| too_few(query, points.len(), n))?;
    let started = std::time::Instant::now();
    let raw: Vec<blst_p1_affine> = points.iter().map(|p| *p.as_ref()).collect();
    let sum: blst_p1 = raw.mult(scalars, 255);
    tracing::debug!(query, points = n, seconds = started.elapsed().as_secs_f64(), "CPU MSM");
    let mut out = G1Projective::identity();
    *out.as_mut() = sum;
    Ok(out)
}

/// As [`g1`], for the B query in G2.
fn g2(points: &[G2Affine], scalars: &[u8]) -> Result<G2Projective, ProveError> {
    let n = scalars.len() / 32;
    if n == 0 {
        return Ok(G2Projective::identity());
    }
    let points = points.get(..n).ok_or_else(|| too_few("B in G2", points.len(), n))?;
    let started = std::time::Instant::now();
    let raw: Vec<blst_p2_affine> = points.iter().map(|p| *p.as_ref()).collect();
    let sum: blst_p2 = raw.mult(scalars, 255);
    tracing::debug!(query = "B in G2", points = n, seconds = started.elapsed().as_secs_f64(), "CPU MSM");
    let mut out = G2Projective::identity();
    *out.as_mut() = sum;
    Ok(out)
}

fn too_few(query: &str, points: usize, scalars: usize) -> ProveError {
    ProveError::Mismatch(format!("the {query} query has {points} points for {scalars} scalars"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::groth16::generate_random_parameters;
    use rand::SeedableRng;
    use snarkflow_circuits::DenseChain;
    use snarkflow_synthesis::synthesize;

    #[test]
    fn a_query_with_fewer_points_than_scalars_is_an_error_naming_it() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let mut params = generate_random_parameters::<Bls12, _, _>(DenseChain::blank(16), &mut rng).unwrap();
        let id = snarkflow_circuits::circuit("dense-chain-c16").circuit_id();
        let p = synthesize(DenseChain::with_witness(16, 1, 0), &id, 0).unwrap();
        let reprs = |v: &[blstrs::Scalar]| v.iter().map(ff::PrimeField::to_repr).collect::<Vec<[u8; 32]>>();
        let (inputs, aux) = (reprs(&p.input_assignment), reprs(&p.aux_assignment));
        let d = Densities { a_aux: &p.a_aux_density, b_inp: &p.b_input_density, b_aux: &p.b_aux_density };
        let h = vec![[1u8; 32]; params.h.len()];
        assert!(query_sums(&params, &h, &inputs, &aux, &d).is_ok());
        params.l = std::sync::Arc::new(params.l[..aux.len() - 1].to_vec());
        let err = query_sums(&params, &h, &inputs, &aux, &d).unwrap_err();
        assert!(matches!(&err, ProveError::Mismatch(m) if m.contains("the L query has")), "{err}");
    }
}
