//! The CPU prover's radix-2 FFTs over Fr, in place. Replaces ec-gpu-gen's CPU FFT, which
//! updates the twiddle with a second multiplication in every butterfly and, on a few threads,
//! first spreads the input over per-thread sub-FFTs with one more multiplication per element
//! per thread: here the twiddles are tabled once per stage, the stages whose blocks fit in the
//! L2 cache run block by block, and the larger ones stream the two halves of each block. The
//! transform is the same (the same ω), so the values are identical.

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// Stages up to blocks of 2^13 values (256 KiB) run inside one block before the next block.
const LOG_BLOCK: u32 = 13;

/// a ← DFT_ω(a), for a of length 2^log_n and ω a primitive 2^log_n-th root of unity.
pub(crate) fn fft(a: &mut [Fr], omega: Fr, log_n: u32) {
    let n = a.len();
    assert_eq!(n, 1usize << log_n, "an FFT of {n} values is not of length 2^{log_n}");
    if n == 1 {
        return;
    }
    bit_reverse(a, log_n);
    // ω^j for j < n/2: stage s (blocks of 2^(s+1)) uses every 2^(log_n−1−s)-th of them
    let powers = powers(omega, n / 2);
    let twiddles = |s: u32| -> Vec<Fr> {
        let step = 1usize << (log_n - 1 - s);
        (0..1usize << s).into_par_iter().map(|j| powers[j * step]).collect()
    };
    let small = log_n.min(LOG_BLOCK);
    let small_twiddles: Vec<Vec<Fr>> = (0..small).map(twiddles).collect();
    a.par_chunks_mut(1 << small).for_each(|block| {
        for tw in &small_twiddles {
            for pair in block.chunks_mut(2 * tw.len()) {
                let (lo, hi) = pair.split_at_mut(tw.len());
                butterflies(lo, hi, tw);
            }
        }
    });
    for s in small..log_n {
        let tw = twiddles(s);
        let m = tw.len();
        a.par_chunks_mut(2 * m).for_each(|pair| {
            let (lo, hi) = pair.split_at_mut(m);
            lo.par_chunks_mut(1 << 12)
                .zip(hi.par_chunks_mut(1 << 12))
                .zip(tw.par_chunks(1 << 12))
                .for_each(|((lo, hi), tw)| butterflies(lo, hi, tw));
        });
    }
}

/// (x, y) ← (x + w·y, x − w·y) element by element.
fn butterflies(lo: &mut [Fr], hi: &mut [Fr], tw: &[Fr]) {
    for ((x, y), w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
        let t = *y * w;
        *y = *x - t;
        *x += t;
    }
}

/// ω^0 … ω^(count−1).
fn powers(omega: Fr, count: usize) -> Vec<Fr> {
    let mut out = vec![Fr::ONE; count];
    crate::groth16::distribute_powers(&mut out, omega);
    out
}

/// a[k] ↔ a[reverse(k)], as a parallel gather into a copy.
fn bit_reverse(a: &mut [Fr], log_n: u32) {
    let shift = usize::BITS - log_n;
    let source = a.to_vec();
    a.par_iter_mut().enumerate().for_each(|(k, x)| *x = source[k.reverse_bits() >> shift]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::PrimeField;
    use rand::SeedableRng;

    fn root(log_n: u32) -> Fr {
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in log_n..Fr::S {
            omega = omega.square();
        }
        omega
    }

    #[test]
    fn equals_ec_gpu_gens_serial_fft_and_inverts() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
        for log_n in [0, 1, 2, 5, 12, 13, 14, 16] {
            let v: Vec<Fr> = (0..1usize << log_n).map(|_| Fr::random(&mut rng)).collect();
            let (mut ours, mut stock) = (v.clone(), v.clone());
            let omega = root(log_n);
            fft(&mut ours, omega, log_n);
            ec_gpu_gen::fft_cpu::serial_fft::<Fr>(&mut stock, &omega, log_n);
            assert!(ours == stock, "2^{log_n}: not ec-gpu-gen's transform");
            fft(&mut ours, omega.invert().unwrap(), log_n);
            let n_inv = Fr::from(1u64 << log_n).invert().unwrap();
            assert!(
                ours.iter().zip(&v).all(|(x, y)| *x * n_inv == *y),
                "2^{log_n}: the inverse does not return the input"
            );
        }
    }
}
