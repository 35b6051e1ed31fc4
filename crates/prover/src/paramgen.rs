//! Random Groth16 parameters, fast: the construction of bellperson's `generate_parameters`
//! (same toxic waste in, byte-identical parameters out — tested), with its fixed-base
//! multiplications done by comb tables instead of wNAF.
//!
//! A fixed-base product k·G costs ~256 doublings plus ~50 additions with wNAF. With a comb
//! table holding d·2^(8w)·G for every byte position w and byte value d (32 × 255 affine points
//! per base, built once), it is at most 32 mixed additions and no doublings. Almost all of
//! parameter generation is such products (H, A, B in G1 and G2, L), so this is where the time
//! goes. The QAP evaluation at τ reuses the recorded [`ConstraintShape`].
//!
//! Parameters made here are random, **not** a trusted setup: for tests and benchmarks only.

use std::sync::Arc;

use bellperson::domain::EvaluationDomain;
use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::{Circuit, SynthesisError};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu_gen::threadpool::Worker;
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;
use snarkflow_synthesis::{record_shape, ConstraintShape};

/// The secret values of a setup. Whoever knows them can forge proofs.
#[derive(Clone)]
pub struct ToxicWaste {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Fr,
    pub beta: Fr,
    pub gamma: Fr,
    pub delta: Fr,
    pub tau: Fr,
}

impl std::fmt::Debug for ToxicWaste {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToxicWaste(..)")
    }
}

impl ToxicWaste {
    /// Drawn in the order bellperson's `generate_random_parameters` draws them.
    pub fn random<R: RngCore>(rng: &mut R) -> Self {
        ToxicWaste {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Fr::random(&mut *rng),
            beta: Fr::random(&mut *rng),
            gamma: Fr::random(&mut *rng),
            delta: Fr::random(&mut *rng),
            tau: Fr::random(&mut *rng),
        }
    }
}

const WINDOWS: usize = 32;
const ENTRIES: usize = 255;

/// A comb table: d·2^(8w)·base for w in 0..32, d in 1..256, affine, so that k·base is the
/// sum of one entry per non-zero byte of k. (A macro rather than a generic: blstrs' mixed
/// addition impls do not resolve through the `group` traits' associated types.)
macro_rules! comb {
    ($name:ident, $proj:ty, $affine:ty) => {
        struct $name {
            table: Vec<$affine>,
        }

        impl $name {
            fn new(base: $proj) -> Self {
                let mut bases = Vec::with_capacity(WINDOWS);
                let mut b = base;
                for _ in 0..WINDOWS {
                    bases.push(b);
                    for _ in 0..8 {
                        b = b.double();
                    }
                }
                let projective: Vec<$proj> = bases
                    .par_iter()
                    .flat_map_iter(|b| {
                        let mut acc = *b;
                        let mut row = Vec::with_capacity(ENTRIES);
                        for _ in 0..ENTRIES {
                            row.push(acc);
                            acc += b;
                        }
                        row
                    })
                    .collect();
                let mut table = vec![<$affine>::identity(); projective.len()];
                <$proj>::batch_normalize(&projective, &mut table);
                $name { table }
            }

            fn mul(&self, k: &Fr) -> $proj {
                let bytes = k.to_repr();
                let mut acc = <$proj>::identity();
                for (w, &d) in bytes.as_ref().iter().enumerate() {
                    if d != 0 {
                        acc += &self.table[w * ENTRIES + d as usize - 1];
                    }
                }
                acc
            }

            /// k·base for every k, as affine points (identity for k = 0), in parallel.
            fn mul_all(&self, scalars: &[Fr]) -> Vec<$affine> {
                let mut out = vec![<$affine>::identity(); scalars.len()];
                out.par_chunks_mut(1 << 12).zip(scalars.par_chunks(1 << 12)).for_each(|(out, ks)| {
                    let points: Vec<$proj> = ks.iter().map(|k| self.mul(k)).collect();
                    <$proj>::batch_normalize(&points, out);
                });
                out
            }
        }
    };
}

comb!(CombG1, G1Projective, G1Affine);
comb!(CombG2, G2Projective, G2Affine);

/// Random parameters for `circuit`.
pub fn generate_random<C: Circuit<Fr>, R: RngCore>(
    circuit: C,
    rng: &mut R,
) -> Result<Parameters<Bls12>, SynthesisError> {
    let shape = record_shape(circuit, "paramgen")?;
    generate_from_shape(&shape, &ToxicWaste::random(rng))
}

/// Parameters for the circuit whose constraints `shape` recorded, from the given toxic waste.
/// Equals bellperson's `generate_parameters` on the same circuit and values, byte for byte.
pub fn generate_from_shape(shape: &ConstraintShape, t: &ToxicWaste) -> Result<Parameters<Bls12>, SynthesisError> {
    let worker = Worker::new();
    let (num_inputs, num_aux) = (shape.num_inputs, shape.num_aux);
    let gamma_inverse: Fr = Option::from(t.gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inverse: Fr = Option::from(t.delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;

    // powers of τ over the evaluation domain (padded to a power of two, as the prover pads)
    let mut domain = EvaluationDomain::<Fr>::from_coeffs(vec![Fr::ZERO; shape.num_constraints()])?;
    let n = domain.as_ref().len();
    domain.as_mut().par_chunks_mut(1 << 14).enumerate().for_each(|(i, chunk)| {
        let mut power = t.tau.pow_vartime([(i << 14) as u64]);
        for p in chunk {
            *p = power;
            power *= t.tau;
        }
    });
    let g1 = CombG1::new(t.g1);
    let g2 = CombG2::new(t.g2);

    // H: τ^i·t(τ)/δ for i < n − 1
    let h_coeff = domain.z(&t.tau) * delta_inverse;
    let h_scalars: Vec<Fr> = domain.as_ref()[..n - 1].par_iter().map(|p| *p * h_coeff).collect();
    let h = g1.mul_all(&h_scalars);
    drop(h_scalars);

    // Lagrange basis at τ, then the QAP polynomials of every variable at τ
    domain.ifft(&worker, &mut None)?;
    let lagrange = domain.into_coeffs();
    let [at, bt, ct] = shape.column_evaluations(&lagrange);
    drop(lagrange);

    let a = g1.mul_all(&at);
    let b_g1 = g1.mul_all(&bt);
    let b_g2 = g2.mul_all(&bt);
    // IC (inputs, over γ) and L (aux, over δ): (β·a + α·b + c)/γ or /δ
    let ext: Vec<Fr> = (0..num_inputs + num_aux)
        .into_par_iter()
        .map(|i| {
            let inv = if i < num_inputs { gamma_inverse } else { delta_inverse };
            (at[i] * t.beta + bt[i] * t.alpha + ct[i]) * inv
        })
        .collect();
    drop((at, bt, ct));
    let mut ext = g1.mul_all(&ext);
    let l = ext.split_off(num_inputs);
    let ic = ext;
    if l.iter().any(|p| bool::from(p.is_identity())) {
        return Err(SynthesisError::UnconstrainedVariable);
    }

    let (g1a, g2a) = (t.g1.to_affine(), t.g2.to_affine());
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1a * t.alpha).to_affine(),
        beta_g1: (g1a * t.beta).to_affine(),
        beta_g2: (g2a * t.beta).to_affine(),
        gamma_g2: (g2a * t.gamma).to_affine(),
        delta_g1: (g1a * t.delta).to_affine(),
        delta_g2: (g2a * t.delta).to_affine(),
        ic,
    };
    // bellperson drops the points at infinity of A and B (variables absent from A or B)
    let nonzero_g1 = |v: Vec<G1Affine>| -> Arc<Vec<G1Affine>> {
        Arc::new(v.into_iter().filter(|p| !bool::from(p.is_identity())).collect())
    };
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: nonzero_g1(a),
        b_g1: nonzero_g1(b_g1),
        b_g2: Arc::new(b_g2.into_iter().filter(|p| !bool::from(p.is_identity())).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::groth16::{create_random_proof, generate_parameters, prepare_verifying_key, verify_proof};
    use rand::SeedableRng;
    use snarkflow_circuits::PartitionCircuit;
    use snarkflow_wire::CircuitSpec;

    fn bytes(p: &Parameters<Bls12>) -> Vec<u8> {
        let mut out = Vec::new();
        p.write(&mut out).unwrap();
        out
    }

    #[test]
    fn same_toxic_waste_gives_bellpersons_parameters_byte_for_byte() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        for spec in [CircuitSpec::Sha256Chain { blocks: 1 }, CircuitSpec::DenseChain { constraints: 300 }] {
            let t = ToxicWaste::random(&mut rng);
            let ours = generate_from_shape(&record_shape(PartitionCircuit::blank(spec), "t").unwrap(), &t).unwrap();
            let theirs = generate_parameters::<Bls12, _>(
                PartitionCircuit::blank(spec),
                t.g1,
                t.g2,
                t.alpha,
                t.beta,
                t.gamma,
                t.delta,
                t.tau,
            )
            .unwrap();
            assert!(!ours.b_g2.is_empty() && !ours.h.is_empty());
            assert!(bytes(&ours) == bytes(&theirs), "{spec:?}: parameters differ");
        }
    }

    #[test]
    fn proofs_with_generated_parameters_verify() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
        let spec = CircuitSpec::Sha256Chain { blocks: 1 };
        let params = generate_random(PartitionCircuit::blank(spec), &mut rng).unwrap();
        let circuit = PartitionCircuit::with_witness(spec, 3, 0);
        let inputs = circuit.public_inputs().unwrap();
        let proof = create_random_proof(circuit, &params, &mut rng).unwrap();
        let pvk = prepare_verifying_key(&params.vk);
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
        let mut wrong = inputs.clone();
        wrong[0] += Fr::ONE;
        assert!(!verify_proof(&pvk, &proof, &wrong).unwrap());
    }
}
