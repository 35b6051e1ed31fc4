//! `snarkflow bench resident`'s two-lane line (`SNARKFLOW_PROVE_LANES=2`): one partition proved
//! on both prove lanes of a key at once, against one lane.

use std::time::Instant;

use snarkflow_prover::resident::ResidentKey;
use snarkflow_synthesis::SynthesizedPartition;

use super::resident::proof_bytes;

/// `runs` proves of `part` on each of a key's two lanes at once: the wall time per proof
/// against one lane's (`sequential_ms`, stage and prove one after another), and whether every
/// proof is `proof`'s bytes.
#[allow(clippy::too_many_arguments)]
pub(super) fn two_lanes(
    key: &ResidentKey,
    vk: &bellperson::groth16::VerifyingKey<blstrs::Bls12>,
    part: &SynthesizedPartition,
    (r, s): (blstrs::Scalar, blstrs::Scalar),
    runs: usize,
    proof: &[u8],
    sequential_ms: f64,
    what: String,
) -> anyhow::Result<bool> {
    let started = Instant::now();
    let proofs: Vec<anyhow::Result<Vec<Vec<u8>>>> = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    (0..runs.max(1))
                        .map(|_| {
                            let (p, _) = key.prove(vk, &part.input_assignment, &part.aux_assignment, r, s)?;
                            Ok(proof_bytes(&p))
                        })
                        .collect()
                })
            })
            .collect();
        lanes.into_iter().map(|l| l.join().expect("a lane's thread panicked")).collect()
    });
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut same = true;
    for lane in proofs {
        same &= lane?.iter().all(|p| p == proof);
    }
    let n = 2 * runs.max(1);
    println!(
        "LANES {what}: {n} proves on two lanes in {:.3} s = {:.1} ms each (one lane: {sequential_ms:.1} ms each) | all identical to the first: {same}",
        wall_ms / 1e3,
        wall_ms / n as f64
    );
    Ok(same)
}
