//! Groth16 proving from a synthesized partition, step for step as bellperson's native prover.

use std::ops::{AddAssign, Mul};
use std::sync::Arc;

#[cfg(feature = "cuda")]
use bellperson::gpu::LockedMultiexpKernel;
use bellperson::gpu::{GpuError, LockedFftKernel};
#[cfg(feature = "cuda")]
use bellperson::groth16::ParameterSource;
use bellperson::groth16::{self, Parameters, PreparedVerifyingKey, Proof};
use bellperson::SynthesisError;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
#[cfg(feature = "cuda")]
use blstrs::{G1Affine, G2Affine};
#[cfg(feature = "cuda")]
use ec_gpu_gen::multiexp_cpu::{DensityTracker, FullDensity, QueryDensity, SourceBuilder};
#[cfg(feature = "cuda")]
use ec_gpu_gen::threadpool::{Waiter, Worker};
use ec_gpu_gen::EcError;
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve};
use rayon::prelude::*;
use snarkflow_synthesis::{Density, SynthesizedPartition};

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("proving failed: {0}")]
    Synthesis(#[from] SynthesisError),
    #[error("multiexp failed: {0}")]
    Multiexp(#[from] EcError),
    #[error("gpu failed: {0}")]
    Gpu(#[from] GpuError),
    #[error("partition has {got} public inputs but the parameters expect {expected}")]
    InputCount { got: usize, expected: usize },
    #[error("verifying key has an identity element (subverted parameters)")]
    IdentityInKey,
    #[error("the device failed: {0}")]
    Device(String),
    #[error("{0}")]
    Resident(String),
    /// The partition does not fit the parameters (checked before any backend sees both).
    #[error("the partition does not fit the parameters: {0}")]
    Mismatch(String),
}

impl ProveError {
    /// The device failed (a kernel error), as opposed to a problem with the partition or
    /// the parameters: the partition may succeed elsewhere, and the device needs a probe.
    pub fn is_device_error(&self) -> bool {
        matches!(self, ProveError::Gpu(_) | ProveError::Multiexp(_) | ProveError::Device(_))
    }
}

#[cfg(feature = "cuda")]
fn tracker(d: &Density) -> Arc<DensityTracker> {
    let mut t = DensityTracker::new();
    for _ in 0..d.len() {
        t.add_element();
    }
    for (i, set) in d.iter().enumerate() {
        if set {
            t.inc(i);
        }
    }
    debug_assert_eq!(t.get_total_density(), d.popcount());
    Arc::new(t)
}

fn reprs(v: Vec<Fr>) -> Arc<Vec<[u8; 32]>> {
    Arc::new(v.into_par_iter().map(|s| s.to_repr()).collect())
}

/// Radix-2 FFTs of several vectors of the same length, in place: on the GPU with the `cuda`
/// feature (an error if the kernel cannot run: never a silent CPU fallback), else on the
/// CPU (`fft_cpu.rs`: the same transform as bellperson's).
fn fft_many(
    #[cfg_attr(not(feature = "cuda"), allow(unused_variables))] kern: &mut LockedFftKernel<Fr>,
    coeffs: &mut [&mut [Fr]],
    omega: Fr,
    log_n: u32,
) -> Result<(), ProveError> {
    #[cfg(feature = "cuda")]
    {
        let (omegas, log_ns) = (vec![omega; coeffs.len()], vec![log_n; coeffs.len()]);
        kern.with(|k: &mut ec_gpu_gen::fft::FftKernel<Fr>| Ok(k.radix_fft_many(coeffs, &omegas, &log_ns)?))?;
    }
    #[cfg(not(feature = "cuda"))]
    for a in coeffs.iter_mut() {
        crate::fft_cpu::fft(a, omega, log_n);
    }
    Ok(())
}

/// v_i ← v_i · g^i, in parallel pieces
pub(crate) fn distribute_powers(v: &mut [Fr], g: Fr) {
    const CHUNK: usize = 1 << 14;
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut u = g.pow_vartime([(i * CHUNK) as u64]);
        for x in chunk {
            *x *= u;
            u *= g;
        }
    });
}

fn scale(v: &mut [Fr], by: Fr) {
    v.par_iter_mut().for_each(|x| *x *= by);
}

/// Coefficients of h(X) = (a(X)·b(X) − c(X)) / Z(X), as the H query's exponents: the
/// evaluation-domain steps of bellperson's prover (iFFT, coset FFT, pointwise a·b − c,
/// division by Z on the coset, inverse coset FFT).
fn quotient(mut a: Vec<Fr>, mut b: Vec<Fr>, mut c: Vec<Fr>) -> Result<Arc<Vec<[u8; 32]>>, ProveError> {
    let mut kern = LockedFftKernel::<Fr>::new(false);
    let mut m = 1usize;
    let mut log_n = 0u32;
    while m < a.len() {
        m *= 2;
        log_n += 1;
        if log_n >= Fr::S {
            return Err(SynthesisError::PolynomialDegreeTooLarge.into());
        }
    }
    let mut omega = Fr::ROOT_OF_UNITY;
    for _ in log_n..Fr::S {
        omega = omega.square();
    }
    let omega_inv = omega.invert().unwrap();
    let m_inv = Fr::from(m as u64).invert().unwrap();
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    for v in [&mut a, &mut b, &mut c] {
        v.resize(m, Fr::ZERO);
    }
    // to coefficients, then to evaluations on the coset g·H
    fft_many(&mut kern, &mut [&mut a, &mut b, &mut c], omega_inv, log_n)?;
    for v in [&mut a, &mut b, &mut c] {
        scale(v, m_inv);
        distribute_powers(v, g);
    }
    fft_many(&mut kern, &mut [&mut a, &mut b, &mut c], omega, log_n)?;
    a.par_iter_mut().zip(b.par_iter()).zip(c.par_iter()).for_each(|((a, b), c)| {
        *a *= b;
        *a -= c;
    });
    drop((b, c));
    // Z(X) = X^m − 1 is the constant g^m − 1 on the coset
    let z_inv = (g.pow_vartime([m as u64]) - Fr::ONE).invert().unwrap();
    scale(&mut a, z_inv);
    fft_many(&mut kern, &mut [&mut a], omega_inv, log_n)?;
    scale(&mut a, m_inv);
    distribute_powers(&mut a, g.invert().unwrap());
    // deg h ≤ n − 2: the top coefficient is zero and the H query has n − 1 bases
    a.pop();
    Ok(reprs(a))
}

/// One multi-exponentiation on the GPU (the `cuda` feature), failing (never falling back to
/// the CPU) if the kernel cannot run. Without the feature, `cpu_msm` takes the queries.
#[cfg(feature = "cuda")]
fn multiexp<Q, D, G, S>(
    worker: &Worker,
    bases: S,
    density: D,
    exponents: Arc<Vec<[u8; 32]>>,
    kern: &mut LockedMultiexpKernel<G>,
) -> Result<Waiter<Result<G::Curve, EcError>>, ProveError>
where
    for<'a> &'a Q: QueryDensity,
    D: Send + Sync + 'static + Clone + AsRef<Q>,
    G: PrimeCurveAffine<Scalar = Fr> + bellperson::gpu::GpuName,
    S: SourceBuilder<G>,
{
    let sum = kern.with(|k: &mut bellperson::gpu::CpuGpuMultiexpKernel<G>| {
        let exps = density.as_ref().generate_exps::<Fr>(exponents.clone());
        let (bases, skip) = bases.clone().get();
        Ok(k.multiexp(worker, bases, exps, skip)?)
    })?;
    Ok(Waiter::done(Ok(sum)))
}

/// Prove `partition` with the blinding factors `r` and `s`.
pub fn prove(
    partition: SynthesizedPartition,
    params: &Parameters<Bls12>,
    r: Fr,
    s: Fr,
) -> Result<Proof<Bls12>, ProveError> {
    let vk = &params.vk;
    if (vk.delta_g1.is_identity() | vk.delta_g2.is_identity()).into() {
        return Err(ProveError::IdentityInKey);
    }
    if partition.input_assignment.len() != vk.ic.len() {
        return Err(ProveError::InputCount { got: partition.input_assignment.len(), expected: vk.ic.len() });
    }
    let p = partition;
    #[cfg(feature = "cuda")]
    let n = p.a.len();
    let h_exps = quotient(p.a, p.b, p.c)?;
    let inputs = reprs(p.input_assignment);
    let aux = reprs(p.aux_assignment);

    let d = Densities { a_aux: &p.a_aux_density, b_inp: &p.b_input_density, b_aux: &p.b_aux_density };
    #[cfg(not(feature = "cuda"))]
    let sums = crate::cpu_msm::query_sums(params, &h_exps, &inputs, &aux, &d)?;
    #[cfg(feature = "cuda")]
    let sums = gpu_query_sums(&Worker::new(), params, n, h_exps, inputs, aux, &d)?;
    Ok(assemble(vk, sums, r, s))
}

/// Which variables the A and B queries have points for (the rest are skipped).
pub(crate) struct Densities<'a> {
    pub(crate) a_aux: &'a Density,
    pub(crate) b_inp: &'a Density,
    pub(crate) b_aux: &'a Density,
}

/// The five query sums on the GPU with ec-gpu-gen's kernels, as bellperson's prover takes them.
#[cfg(feature = "cuda")]
fn gpu_query_sums(
    worker: &Worker,
    source: &Parameters<Bls12>,
    n: usize,
    h_exps: Arc<Vec<[u8; 32]>>,
    inputs: Arc<Vec<[u8; 32]>>,
    aux: Arc<Vec<[u8; 32]>>,
    d: &Densities<'_>,
) -> Result<QuerySums, ProveError> {
    let (a_aux, b_inp, b_aux) = (tracker(d.a_aux), tracker(d.b_inp), tracker(d.b_aux));
    let (num_inputs, num_aux) = (inputs.len(), aux.len());
    let mut g1 = LockedMultiexpKernel::<G1Affine>::new(false);
    let h = multiexp(worker, source.get_h(n)?, FullDensity, h_exps, &mut g1)?;
    let l = multiexp(worker, source.get_l(num_aux)?, FullDensity, aux.clone(), &mut g1)?;
    let (a_inp_src, a_aux_src) = source.get_a(num_inputs, a_aux.get_total_density())?;
    let a_inputs = multiexp(worker, a_inp_src, FullDensity, inputs.clone(), &mut g1)?;
    let a_aux_sum = multiexp(worker, a_aux_src, a_aux.clone(), aux.clone(), &mut g1)?;
    let (b1_inp_src, b1_aux_src) = source.get_b_g1(b_inp.get_total_density(), b_aux.get_total_density())?;
    let b1_inputs = multiexp(worker, b1_inp_src, b_inp.clone(), inputs.clone(), &mut g1)?;
    let b1_aux = multiexp(worker, b1_aux_src, b_aux.clone(), aux.clone(), &mut g1)?;
    // the kernel holds the GPU lock; the G2 kernel cannot be taken until it is released
    #[allow(clippy::drop_non_drop)]
    drop(g1);
    let mut g2 = LockedMultiexpKernel::<G2Affine>::new(false);
    let (b2_inp_src, b2_aux_src) = source.get_b_g2(b_inp.get_total_density(), b_aux.get_total_density())?;
    let b2_inputs = multiexp(worker, b2_inp_src, b_inp, inputs, &mut g2)?;
    let b2_aux = multiexp(worker, b2_aux_src, b_aux, aux, &mut g2)?;
    #[allow(clippy::drop_non_drop)]
    drop(g2);

    let mut a = a_inputs.wait()?;
    a.add_assign(&a_aux_sum.wait()?);
    let mut b_g1 = b1_inputs.wait()?;
    b_g1.add_assign(&b1_aux.wait()?);
    let mut b_g2 = b2_inputs.wait()?;
    b_g2.add_assign(&b2_aux.wait()?);
    Ok(QuerySums { h: h.wait()?, l: l.wait()?, a, b_g1, b_g2 })
}

/// The five query sums of one partition: Σ h_i·H_i, Σ w_j·L_j over aux, and Σ w_k·A_k,
/// Σ w_k·B_k (G1, G2) over the variables each query has points for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QuerySums {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// The proof from the query sums and the blinding factors, as bellperson computes it:
/// A = α + Σa + r·δ;  B = β + Σb + s·δ;
/// C = Σh + Σl + s·Σa + r·Σb1 + r·s·δ + s·α + r·β.
pub(crate) fn assemble(vk: &groth16::VerifyingKey<Bls12>, sums: QuerySums, r: Fr, s: Fr) -> Proof<Bls12> {
    let QuerySums { h, l, a, b_g1, b_g2 } = sums;
    let mut g_a = vk.delta_g1.mul(r);
    g_a.add_assign(&vk.alpha_g1);
    g_a.add_assign(&a);

    let mut g_b = vk.delta_g2.mul(s);
    g_b.add_assign(&vk.beta_g2);
    g_b.add_assign(&b_g2);

    let mut g_c = a.mul(s);
    g_c.add_assign(&b_g1.mul(r));
    g_c.add_assign(vk.delta_g1.mul(r * s));
    g_c.add_assign(&vk.alpha_g1.mul(s));
    g_c.add_assign(&vk.beta_g1.mul(r));
    g_c.add_assign(&h);
    g_c.add_assign(&l);

    Proof { a: g_a.to_affine(), b: g_b.to_affine(), c: g_c.to_affine() }
}

/// Prove with fresh random blinding factors (what production does).
pub fn prove_with_rng<R: rand::RngCore>(
    partition: SynthesizedPartition,
    params: &Parameters<Bls12>,
    rng: &mut R,
) -> Result<Proof<Bls12>, ProveError> {
    let (r, s) = (Fr::random(&mut *rng), Fr::random(&mut *rng));
    prove(partition, params, r, s)
}

/// Check `proof` against the verifying key and the public inputs (without the leading ONE).
pub fn verify(pvk: &PreparedVerifyingKey<Bls12>, proof: &Proof<Bls12>, public_inputs: &[Fr]) -> bool {
    groth16::verify_proof(pvk, proof, public_inputs).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::groth16::{create_proof_batch, generate_random_parameters, prepare_verifying_key};
    use bellperson::Circuit;
    use rand::SeedableRng;
    use snarkflow_circuits::{DenseChain, Sha256Chain};
    use snarkflow_synthesis::synthesize;
    use snarkflow_wire::CircuitSpec;

    /// Partitions 0 and 1 (`circuit(p)`, with public inputs `public(&circuit)`) proved by us and
    /// by bellperson with the same r and s: the same bytes, and they verify.
    fn check_identical<C: Circuit<Fr> + Clone + Send>(
        spec: CircuitSpec,
        blank: C,
        circuit: impl Fn(u32) -> C,
        public: impl Fn(&C) -> Vec<Fr>,
    ) {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
        let params = generate_random_parameters::<Bls12, _, _>(blank, &mut rng).unwrap();
        let pvk = prepare_verifying_key(&params.vk);
        for partition in 0..2 {
            let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let circuit = circuit(partition);
            let public = public(&circuit);
            let stock = create_proof_batch(vec![circuit.clone()], &params, vec![r], vec![s]).unwrap().remove(0);
            let synthesized = synthesize(circuit, &spec.circuit_id(), partition).unwrap();
            let ours = prove(synthesized, &params, r, s).unwrap();
            let (mut ours_bytes, mut stock_bytes) = (vec![], vec![]);
            ours.write(&mut ours_bytes).unwrap();
            stock.write(&mut stock_bytes).unwrap();
            assert_eq!(ours_bytes.len(), crate::PROOF_BYTES);
            assert_eq!(ours_bytes, stock_bytes, "{spec:?} partition {partition}: proof differs from bellperson's");
            assert!(verify(&pvk, &ours, &public));
        }
    }

    #[test]
    fn compact_path_proofs_are_byte_identical_to_full_synthesis() {
        use snarkflow_synthesis::{decode_compact, encode_compact, record_shape, synthesize_witness};
        let id = snarkflow_circuits::circuit("sha256-chain-b1").circuit_id();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let params = generate_random_parameters::<Bls12, _, _>(Sha256Chain::blank(1), &mut rng).unwrap();
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        let full = synthesize(Sha256Chain::with_witness(1, 3, 1), &id, 1).unwrap();
        let shape = record_shape(Sha256Chain::blank(1), &id).unwrap();
        let witness = synthesize_witness(Sha256Chain::with_witness(1, 3, 1), &id, 1).unwrap();
        let (witness, _) = decode_compact(&encode_compact(&witness, shape.hash)).unwrap();
        let rebuilt = shape.rebuild(witness).unwrap();
        let (mut a, mut b) = (vec![], vec![]);
        prove(full, &params, r, s).unwrap().write(&mut a).unwrap();
        prove(rebuilt, &params, r, s).unwrap().write(&mut b).unwrap();
        assert_eq!(a, b, "the compact path must give the very same proof");
    }

    #[test]
    fn proofs_are_byte_identical_to_bellperson_dense_chain() {
        check_identical(
            snarkflow_circuits::circuit("dense-chain-c300"),
            DenseChain::blank(300),
            |p| DenseChain::with_witness(300, 9, p),
            |c| c.public_inputs().unwrap(),
        );
    }

    #[test]
    fn proofs_are_byte_identical_to_bellperson_sha256_chain() {
        check_identical(
            snarkflow_circuits::circuit("sha256-chain-b1"),
            Sha256Chain::blank(1),
            |p| Sha256Chain::with_witness(1, 9, p),
            |c| c.public_inputs().unwrap(),
        );
    }

    #[test]
    fn wrong_public_input_fails_verification() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let params = generate_random_parameters::<Bls12, _, _>(DenseChain::blank(16), &mut rng).unwrap();
        let pvk = prepare_verifying_key(&params.vk);
        let p = synthesize(DenseChain::with_witness(16, 1, 0), "x", 0).unwrap();
        let public = p.public_inputs().to_vec();
        let proof = prove_with_rng(p, &params, &mut rng).unwrap();
        assert!(verify(&pvk, &proof, &public));
        assert!(!verify(&pvk, &proof, &[public[0] + Fr::ONE]));
    }

    #[test]
    fn tampered_witness_gives_a_proof_that_does_not_verify() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
        let params = generate_random_parameters::<Bls12, _, _>(DenseChain::blank(16), &mut rng).unwrap();
        let pvk = prepare_verifying_key(&params.vk);
        let mut p = synthesize(DenseChain::with_witness(16, 1, 0), "x", 0).unwrap();
        let public = p.public_inputs().to_vec();
        p.c[3] += Fr::ONE;
        let proof = prove_with_rng(p, &params, &mut rng).unwrap();
        assert!(!verify(&pvk, &proof, &public));
    }
}
