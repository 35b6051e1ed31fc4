//! A native witness written over a kept buffer (a synth-worker's next partition writes over
//! the last one's: `snarkflow_synthesis::native::buffers`) equals one written into fresh
//! zeros. Its own test binary: the kept buffers are the process's, and a test beside it
//! could take the one given back here.

use blstrs::Scalar as Fr;
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use snarkflow_filecoin::porep::{self, PorepInput};
use snarkflow_filecoin::sparse::SectorData;
use snarkflow_synthesis::native::buffers;

#[test]
fn a_witness_written_over_a_kept_buffer_of_stale_values_equals_one_in_fresh_zeros() {
    let (miner_id, sector_id) = (1000, 5);
    let prover_id = snarkflow_filecoin::prover_id(miner_id);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
    let c1 = snarkflow_filecoin::sparse::porep_c1_of(
        RegisteredSealProof::StackedDrg2KiBV1_1,
        prover_id,
        sector_id,
        SectorData::Zeros,
        &mut rng,
    )
    .expect("sparse C1");
    let input = PorepInput { miner_id, sector_id, prover_id, c1 };
    let fresh = porep::native_witness(&input, 0, "porep").expect("native witness");

    // one kept buffer, longer than the witness, every value a stale one neither 0 nor 1
    let stale_len = fresh.aux.len() + 100;
    buffers::keep_with(1, 0);
    buffers::give_back(vec![Fr::from(7u64); stale_len]);
    let over = porep::native_witness(&input, 0, "porep").expect("native witness");
    let kept_after = buffers::kept_now().0;
    buffers::keep(0);

    assert_eq!((kept_after, over.aux.capacity()), (0, stale_len), "the witness did not take the kept buffer");
    assert_eq!(over.aux.len(), fresh.aux.len());
    let differs = over.aux.iter().zip(&fresh.aux).position(|(a, b)| a != b);
    assert_eq!(differs, None, "a value of the kept buffer survived or differs");
    assert_eq!(over.inputs, fresh.inputs);
}
