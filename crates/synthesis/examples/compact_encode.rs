//! How fast a witness is encoded into the compact wire form: 2^25 values mixed like a Filecoin
//! PoRep partition's (51.4 % zeros, 47.3 % ones, 1.3 % random field elements), on 1 and 2
//! threads, best of three. `cargo run --release -p snarkflow-synthesis --example compact_encode`
use blstrs::Scalar as Fr;
use ff::Field;
use rand::{Rng, SeedableRng};
use snarkflow_synthesis::{encode_compact, PartitionWitness};
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
    let w = PartitionWitness { circuit_id: "t".into(), partition: 0, inputs: vec![], aux };
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut best = f64::MAX;
        let mut len = 0;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let b = pool.install(|| encode_compact(&w, [0; 32]));
            best = best.min(t.elapsed().as_secs_f64());
            len = b.len();
        }
        println!(
            "{threads} thread(s): {:.3} s for 2^25 values ({} bytes) -> {:.1} ns/value",
            best,
            len,
            best * 1e9 / n as f64
        );
    }
}
