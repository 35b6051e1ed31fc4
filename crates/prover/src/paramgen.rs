//! Random Groth16 parameters, fast: the construction of bellperson's `generate_parameters`
//! (same toxic waste in, byte-identical parameters out — tested), with its fixed-base
//! multiplications done by comb tables (`comb.rs`) instead of wNAF.
//!
//! A fixed-base product k·G costs ~256 doublings plus ~50 additions with wNAF. With a comb
//! table holding d·2^(8w)·G for every digit position w and digit value d (built once per
//! base), it is at most one mixed addition per digit and no doublings: 32 with byte digits,
//! 16 with the 16-bit digits used once a circuit has millions of points. Almost all of
//! parameter generation is such products (H, A, B in G1 and G2, L), so this is where the time
//! goes. The QAP evaluation at τ reuses the recorded [`ConstraintShape`].
//!
//! Parameters made here are random, **not** a trusted setup: for tests and benchmarks only.

use std::io::Write;

use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::{Circuit, SynthesisError};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;
use snarkflow_synthesis::{record_shape, ConstraintShape};

use crate::comb::{CombG1, Digits};

mod pieces;
mod products;
use pieces::{write_counted, Steps};
use products::Products;

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

/// Random parameters for `circuit`.
pub fn generate_random<C: Circuit<Fr>, R: RngCore>(
    circuit: C,
    rng: &mut R,
) -> Result<Parameters<Bls12>, SynthesisError> {
    let shape = record_shape(circuit, "paramgen")?;
    generate_from_shape(&shape, &ToxicWaste::random(rng))
}

/// Parameters for the circuit whose constraints `shape` recorded, from the given toxic waste,
/// in memory. Equals bellperson's `generate_parameters` on the same circuit and values, byte
/// for byte. For large circuits use [`write_from_shape`], which never holds them whole.
pub fn generate_from_shape(shape: &ConstraintShape, t: &ToxicWaste) -> Result<Parameters<Bls12>, SynthesisError> {
    let mut bytes = Vec::new();
    write_from_shape(shape, t, &mut bytes, |_, _| Ok(()))?;
    Ok(Parameters::read(&bytes[..], false)?)
}

/// Scalars per piece of a section: the piece is computed (in parallel) while the one before
/// it is written.
const PIECE: usize = 1 << 20;

/// A piece on the GPU: 4 M points (768 MB of G2) per call repays the call's set-up.
#[cfg(feature = "cuda-resident")]
const GPU_PIECE: usize = 1 << 22;

/// Where the fixed-base multiplications of the five point sections (H, L, A, B-G1, B-G2) run.
/// The QAP evaluation (one inverse FFT, the column sums) stays on the CPU either way; the file
/// is the same.
#[derive(Clone)]
pub enum ParamDevice {
    Cpu,
    /// A GPU through the resident prover's device code (the table of each base is built on
    /// the CPU, the products on the device).
    #[cfg(feature = "cuda-resident")]
    Gpu(std::sync::Arc<snarkflow_cuda_resident::Device>),
}

impl std::fmt::Debug for ParamDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamDevice::Cpu => f.write_str("cpu"),
            #[cfg(feature = "cuda-resident")]
            ParamDevice::Gpu(d) => write!(f, "gpu {}", d.ordinal()),
        }
    }
}

/// [`write_from_shape`] with the G1 products on `device`.
pub fn write_from_shape_on<W: Write + Send>(
    shape: &ConstraintShape,
    t: &ToxicWaste,
    out: &mut W,
    device: &ParamDevice,
    on_vk: impl FnOnce(&VerifyingKey<Bls12>, u64) -> std::io::Result<()>,
) -> Result<VerifyingKey<Bls12>, SynthesisError> {
    let piece = match device {
        ParamDevice::Cpu => PIECE,
        #[cfg(feature = "cuda-resident")]
        ParamDevice::Gpu(_) => GPU_PIECE,
    };
    write_in_pieces(shape, t, out, piece, None, device, on_vk)
}

/// Writes the parameters for the circuit whose constraints `shape` recorded, from the given
/// toxic waste, to `out` in bellperson's file format (`Parameters::write`), and returns the
/// verifying key. Each section's points are made and written a piece at a time, so memory
/// holds the shape, the three QAP evaluations (3 × 32 bytes per variable) and a few pieces —
/// not the points (~480 bytes per constraint: 47 GB at 32 GiB PoRep). `on_vk` gets the
/// verifying key and the bytes the whole file will take as soon as both are known, before the
/// (long) sections are made: an error it returns stops the generation there.
pub fn write_from_shape<W: Write + Send>(
    shape: &ConstraintShape,
    t: &ToxicWaste,
    out: &mut W,
    on_vk: impl FnOnce(&VerifyingKey<Bls12>, u64) -> std::io::Result<()>,
) -> Result<VerifyingKey<Bls12>, SynthesisError> {
    write_in_pieces(shape, t, out, PIECE, None, &ParamDevice::Cpu, on_vk)
}

fn write_in_pieces<W: Write + Send>(
    shape: &ConstraintShape,
    t: &ToxicWaste,
    out: &mut W,
    piece: usize,
    digits: Option<Digits>,
    device: &ParamDevice,
    on_vk: impl FnOnce(&VerifyingKey<Bls12>, u64) -> std::io::Result<()>,
) -> Result<VerifyingKey<Bls12>, SynthesisError> {
    let mut steps = Steps::start();
    let (num_inputs, num_aux) = (shape.num_inputs, shape.num_aux);
    let qap = Qap::at_tau(shape, t, &mut steps)?;
    let products = Products::new(device, (t.g1, t.g2), digits, qap.n + num_aux);
    let points = |ks: &[Fr], skip_zero: bool, in_g2: bool| products.points(ks, skip_zero, in_g2);
    let vk = verifying_key(t, &qap, &products.g1, num_inputs);
    // A, B in G1 and G2: bellperson drops the points at infinity (variables absent from A or B);
    // a point is the identity exactly when its scalar is zero
    let nonzero = |v: &[Fr]| v.par_iter().filter(|k| !bool::from(k.is_zero())).count();
    let (all, in_a, in_b) = (num_inputs + num_aux, nonzero(&qap.at), nonzero(&qap.bt));
    on_vk(&vk, file_bytes(&vk, qap.n - 1, num_aux, in_a, in_b))?;
    vk.write(&mut *out)?;

    // H: τ^i·t(τ)/δ for i < n − 1, each stretch of 2^14 powers from its own first power
    let n = qap.n;
    let h_coeff = (t.tau.pow_vartime([n as u64]) - Fr::ONE) * qap.delta_inverse;
    let h_scalars = |range: std::ops::Range<usize>| {
        let mut ks = vec![Fr::ZERO; range.len()];
        ks.par_chunks_mut(1 << 14).enumerate().for_each(|(c, chunk)| {
            let mut power = t.tau.pow_vartime([(range.start + (c << 14)) as u64]) * h_coeff;
            for k in chunk {
                *k = power;
                power *= t.tau;
            }
        });
        ks
    };
    let h = write_counted(out, piece, n - 1, n - 1, h_scalars, |ks| points(ks, false, false))?;
    steps.section("H", h);
    // L: the aux part of ext
    let l_scalars = |r: std::ops::Range<usize>| r.into_par_iter().map(|i| qap.ext(t, num_inputs + i)).collect();
    let l = write_counted(out, piece, num_aux, num_aux, l_scalars, |ks| points(ks, false, false))?;
    steps.section("L", l);
    let a = write_counted(out, piece, in_a, all, |r| qap.at[r].to_vec(), |ks| points(ks, true, false))?;
    steps.section("A", a);
    let b1 = write_counted(out, piece, in_b, all, |r| qap.bt[r].to_vec(), |ks| points(ks, true, false))?;
    steps.section("B in G1", b1);
    let b2 = write_counted(out, piece, in_b, all, |r| qap.bt[r].to_vec(), |ks| points(ks, true, true))?;
    steps.section("B in G2", b2);
    Ok(vk)
}

/// Bytes of a parameter file in bellperson's format (`Parameters::write`, uncompressed points):
/// the verifying key, then H, L, A, B-G1 and B-G2, each a 4-byte count and its points.
fn file_bytes(vk: &VerifyingKey<Bls12>, h: usize, l: usize, a: usize, b: usize) -> u64 {
    const G1: u64 = 96;
    const G2: u64 = 192;
    // α, β, δ in G1; β, γ, δ in G2; the IC count and points
    let vk_bytes = 3 * G1 + 3 * G2 + 4 + G1 * vk.ic.len() as u64;
    vk_bytes + 5 * 4 + G1 * (h + l + a + b) as u64 + G2 * b as u64
}

/// The QAP polynomials of every variable at τ, over the evaluation domain of `n` points.
struct Qap {
    n: usize,
    at: Vec<Fr>,
    bt: Vec<Fr>,
    ct: Vec<Fr>,
    gamma_inverse: Fr,
    delta_inverse: Fr,
    num_inputs: usize,
}

impl Qap {
    /// The domain (padded to a power of two, as the prover pads), the Lagrange basis at τ over
    /// it, then the column sums; refused when an aux variable is unconstrained.
    fn at_tau(shape: &ConstraintShape, t: &ToxicWaste, steps: &mut Steps) -> Result<Qap, SynthesisError> {
        let gamma_inverse: Fr = Option::from(t.gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
        let delta_inverse: Fr = Option::from(t.delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
        let n = crate::lagrange::domain_size(shape.num_constraints())?;
        let lagrange = crate::lagrange::basis_at(t.tau, n)?;
        steps.done("lagrange basis at tau");
        let [at, bt, ct] = shape.column_evaluations(&lagrange);
        drop(lagrange);
        let qap = Qap { n, at, bt, ct, gamma_inverse, delta_inverse, num_inputs: shape.num_inputs };
        let aux = shape.num_inputs..shape.num_inputs + shape.num_aux;
        if aux.into_par_iter().any(|i| bool::from(qap.ext(t, i).is_zero())) {
            return Err(SynthesisError::UnconstrainedVariable);
        }
        steps.done("QAP at tau");
        Ok(qap)
    }

    /// IC (inputs, over γ) and L (aux, over δ): (β·a + α·b + c)/γ or /δ.
    fn ext(&self, t: &ToxicWaste, i: usize) -> Fr {
        let inv = if i < self.num_inputs { self.gamma_inverse } else { self.delta_inverse };
        (self.at[i] * t.beta + self.bt[i] * t.alpha + self.ct[i]) * inv
    }
}

/// The verifying key: the toxic waste's products and the inputs' IC points.
fn verifying_key(t: &ToxicWaste, qap: &Qap, g1: &CombG1, num_inputs: usize) -> VerifyingKey<Bls12> {
    let (g1a, g2a) = (t.g1.to_affine(), t.g2.to_affine());
    let ic_scalars: Vec<Fr> = (0..num_inputs).map(|i| qap.ext(t, i)).collect();
    let ic = g1.products(&ic_scalars);
    VerifyingKey::<Bls12> {
        alpha_g1: (g1a * t.alpha).to_affine(),
        beta_g1: (g1a * t.beta).to_affine(),
        beta_g2: (g2a * t.beta).to_affine(),
        gamma_g2: (g2a * t.gamma).to_affine(),
        delta_g1: (g1a * t.delta).to_affine(),
        delta_g2: (g2a * t.delta).to_affine(),
        ic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::groth16::{create_random_proof, generate_parameters, prepare_verifying_key, verify_proof};
    use bellperson::Circuit;
    use rand::SeedableRng;
    use snarkflow_circuits::{DenseChain, Sha256Chain};

    fn bytes(p: &Parameters<Bls12>) -> Vec<u8> {
        let mut out = Vec::new();
        p.write(&mut out).unwrap();
        out
    }

    /// Parameters from `blank`'s recorded shape and bellperson's from the circuit itself, with
    /// the same toxic waste: the same bytes, whole, in small pieces and with 16-bit digits.
    fn same_as_bellpersons<C: Circuit<Fr> + Clone>(name: &str, blank: C, rng: &mut rand_chacha::ChaCha20Rng) {
        let t = ToxicWaste::random(rng);
        let shape = record_shape(blank.clone(), "t").unwrap();
        let ours = generate_from_shape(&shape, &t).unwrap();
        let theirs =
            generate_parameters::<Bls12, _>(blank, t.g1, t.g2, t.alpha, t.beta, t.gamma, t.delta, t.tau).unwrap();
        assert!(!ours.b_g2.is_empty() && !ours.h.is_empty());
        assert!(bytes(&ours) == bytes(&theirs), "{name}: parameters differ");
        // written in many small pieces (as a 32 GiB circuit is in 1 M-point ones): the same
        let (mut pieces, mut told) = (Vec::new(), 0);
        write_in_pieces(&shape, &t, &mut pieces, 1000, None, &ParamDevice::Cpu, |_, bytes| {
            told = bytes;
            Ok(())
        })
        .unwrap();
        assert!(pieces == bytes(&theirs), "{name}: parameters written in pieces differ");
        // the size told before the sections are made (the disk-space check's) is the file's
        assert_eq!(told, pieces.len() as u64, "{name}: the file's size told ahead");
        // with the 16-bit digits that circuits of millions of points get: the same
        let mut wide = Vec::new();
        write_in_pieces(&shape, &t, &mut wide, PIECE, Some(Digits::Bits16), &ParamDevice::Cpu, |_, _| Ok(())).unwrap();
        assert!(wide == bytes(&theirs), "{name}: parameters from 16-bit digits differ");
    }

    #[test]
    fn same_toxic_waste_gives_bellpersons_parameters_byte_for_byte() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        same_as_bellpersons("sha256-chain-b1", Sha256Chain::blank(1), &mut rng);
        same_as_bellpersons("dense-chain-c300", DenseChain::blank(300), &mut rng);
    }

    #[test]
    fn proofs_with_generated_parameters_verify() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
        let params = generate_random(Sha256Chain::blank(1), &mut rng).unwrap();
        let circuit = Sha256Chain::with_witness(1, 3, 0);
        let inputs = circuit.public_inputs().unwrap();
        let proof = create_random_proof(circuit, &params, &mut rng).unwrap();
        let pvk = prepare_verifying_key(&params.vk);
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
        let mut wrong = inputs.clone();
        wrong[0] += Fr::ONE;
        assert!(!verify_proof(&pvk, &proof, &wrong).unwrap());
    }
}
