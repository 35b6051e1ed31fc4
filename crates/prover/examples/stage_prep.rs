//! What the gpu-worker's host does with a compact witness before the resident prover stages it,
//! two ways, on 2^25 values mixed like a Filecoin PoRep partition's (51.4 % zeros, 47.3 % ones,
//! 1.3 % random field elements), on 1 and 2 threads, best of three:
//! - decoded: the wire form decoded into the whole witness, then sorted into 0, 1 and other
//!   values (`compact_witness::classify`) and the device's compact form written (`fill`);
//! - from the wire: the device's class words straight from the wire's tags
//!   (`classes_from_tags`) and only the values that are neither 0 nor 1 decoded.
//!
//! `cargo run --release -p snarkflow-prover --example stage_prep`
use blstrs::Scalar as Fr;
use ff::Field;
use rand::{Rng, SeedableRng};
use snarkflow_prover::compact_witness::{classes_from_tags, classify, fill};
use snarkflow_synthesis::{decode_compact, encode_compact, CompactParts, PartitionWitness};

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
    let w = PartitionWitness { circuit_id: "t".into(), partition: 0, inputs: vec![Fr::ONE], aux };
    let wire = encode_compact(&w, [0; 32]);
    drop(w);
    let words = (n + 1).div_ceil(32);
    let decoded = || {
        let (w, _) = decode_compact(&wire).expect("decodes");
        let c = classify(&w.inputs, &w.aux);
        let (mut offsets, mut others) = (vec![0u32; c.words()], vec![Fr::ZERO; c.others]);
        fill(&c, &w.inputs, &w.aux, &mut offsets, &mut others);
        c.others
    };
    let from_wire = || {
        let parts = CompactParts::parse(&wire).expect("parses");
        let (mut classes, mut offsets) = (vec![0u64; words], vec![0u32; words]);
        let counted = classes_from_tags(parts.tags, &mut classes, &mut offsets);
        let mut others = vec![Fr::ZERO; parts.others()];
        parts.others_into(&mut others).expect("decodes");
        assert_eq!(counted, others.len());
        counted
    };
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
        for (name, f) in
            [("decoded, then classified", &decoded as &(dyn Fn() -> usize + Sync)), ("from the wire", &from_wire)]
        {
            let mut best = f64::MAX;
            let mut others = 0;
            for _ in 0..3 {
                let t = std::time::Instant::now();
                others = pool.install(f);
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "{threads} thread(s), {name}: {best:.3} s for 2^25 values ({others} neither 0 nor 1) -> {:.1} ns/value",
                best * 1e9 / n as f64
            );
        }
    }
}
