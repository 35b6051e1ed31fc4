//! How fast the gpu-worker sorts a witness into 0, 1 and other values before staging it on the
//! device (`compact_witness::classify`): 2^25 values mixed like a Filecoin PoRep partition's
//! (51.4 % zeros, 47.3 % ones, 1.3 % random field elements), on 1 and 2 threads, best of three.
//! `cargo run --release -p snarkflow-prover --example classify`
use blstrs::Scalar as Fr;
use ff::Field;
use rand::{Rng, SeedableRng};
use snarkflow_prover::compact_witness::classify;

fn main() {
    let n = 1usize << 25;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let aux: Vec<Fr> = (0..n)
        .map(|_| match rng.gen_range(0..1000) {
            0..=513 => Fr::ZERO,
            514..=986 => Fr::ONE,
            _ => Fr::random(&mut rng),
        })
        .collect();
    let inputs = [Fr::ONE];
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
        let mut best = f64::MAX;
        let mut others = 0;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            others = pool.install(|| classify(&inputs, &aux)).others;
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{threads} thread(s): {best:.3} s for 2^25 values ({others} neither 0 nor 1) -> {:.1} ns/value",
            best * 1e9 / n as f64
        );
    }
}
