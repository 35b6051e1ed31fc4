//! The Lagrange basis of an evaluation domain at one point τ: what parameter generation needs
//! to evaluate every variable's QAP polynomials at τ.
//!
//! bellperson gets it with an inverse FFT of the powers 1, τ, …, τ^(n−1) (2^27 of them at
//! 32 GiB PoRep: ~29 s on 16 cores). The closed form is cheaper:
//! L_i(τ) = (1/n)·Σ_j (τ·ω^−i)^j = (τ^n − 1)/n · ω^i/(τ − ω^i), one batch inversion and a few
//! products per point, in parallel. Field arithmetic is exact, so both give the same values.

use bellperson::domain::EvaluationDomain;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ec_gpu_gen::threadpool::Worker;
use ff::{BatchInvert, Field, PrimeField};
use rayon::prelude::*;

/// Points per parallel task.
const CHUNK: usize = 1 << 14;

/// The size of bellperson's evaluation domain for `len` values (the least power of two ≥ len),
/// or the error bellperson gives when the field has no root of unity of that order.
pub(crate) fn domain_size(len: usize) -> Result<usize, SynthesisError> {
    let n = len.max(1).next_power_of_two();
    if n.trailing_zeros() >= Fr::S {
        return Err(SynthesisError::PolynomialDegreeTooLarge);
    }
    Ok(n)
}

/// L_i(τ) for every i < n over bellperson's domain of size `n` (a power of two).
pub(crate) fn basis_at(tau: Fr, n: usize) -> Result<Vec<Fr>, SynthesisError> {
    let z = tau.pow_vartime([n as u64]) - Fr::ONE;
    if bool::from(z.is_zero()) {
        // τ is a point of the domain: the closed form divides by zero there
        return by_fft(tau, n);
    }
    // ω: the 2^exp-th root of unity bellperson's domain uses
    let mut omega = Fr::ROOT_OF_UNITY;
    for _ in n.trailing_zeros()..Fr::S {
        omega = omega.square();
    }
    let scale = z * Fr::from(n as u64).invert().unwrap();
    let mut basis = vec![Fr::ZERO; n];
    basis.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let first = omega.pow_vartime([(c * CHUNK) as u64]);
        let mut w = first;
        for d in chunk.iter_mut() {
            *d = tau - w;
            w *= omega;
        }
        chunk.iter_mut().batch_invert();
        let mut w = first;
        for d in chunk.iter_mut() {
            *d *= w * scale;
            w *= omega;
        }
    });
    Ok(basis)
}

/// bellperson's way: the inverse FFT of the powers of τ.
fn by_fft(tau: Fr, n: usize) -> Result<Vec<Fr>, SynthesisError> {
    let mut domain = EvaluationDomain::<Fr>::from_coeffs(vec![Fr::ZERO; n])?;
    domain.as_mut().par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut power = tau.pow_vartime([(i * CHUNK) as u64]);
        for p in chunk {
            *p = power;
            power *= tau;
        }
    });
    domain.ifft(&Worker::new(), &mut None)?;
    Ok(domain.into_coeffs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn the_closed_form_equals_the_inverse_fft() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        for n in [1, 2, 8, 1 << 15] {
            let tau = Fr::random(&mut rng);
            assert_eq!(basis_at(tau, n).unwrap(), by_fft(tau, n).unwrap(), "n = {n}");
        }
    }

    #[test]
    fn a_point_of_the_domain_gets_its_own_basis_vector() {
        // τ = ω^3 of the domain of size 8: L_3(τ) = 1, every other L_i(τ) = 0
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in 3..Fr::S {
            omega = omega.square();
        }
        let basis = basis_at(omega.pow_vartime([3]), 8).unwrap();
        let want: Vec<Fr> = (0..8).map(|i| if i == 3 { Fr::ONE } else { Fr::ZERO }).collect();
        assert_eq!(basis, want);
    }
}
