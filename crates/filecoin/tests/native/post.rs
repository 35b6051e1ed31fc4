//! The native WindowPoSt / WinningPoSt witness equals the gadgets' value for value:
//! on sparse sectors of 2 KiB, 8 MiB and 512 MiB (random, several sectors per WindowPoSt
//! partition, so the partition's padding with its last sector is exercised) and on a real
//! sealed 2 KiB sector. Its public inputs are the ones filecoin-proofs' verifier derives.

use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use snarkflow_filecoin::post::{PostInput, PostKind};
use snarkflow_synthesis::SynthesizeWitness;

fn assert_native_matches(kind: PostKind, input: &PostInput, what: &str) {
    let gadget = kind.visit_partition(input, 0, SynthesizeWitness("post", 0)).unwrap().expect("gadget witness");
    let native = kind.native_witness(input, 0, "post").expect("native witness");
    assert_eq!(native.difference(&gadget), None, "{what}");
    let verifier = kind.public_inputs(input).expect("verifier inputs");
    assert_eq!(native.inputs[1..], verifier[0][..], "{what}: not the verifier's inputs");
}

fn sparse(kind: PostKind, sector_size: u64, sectors: &[u64], seed: u64) -> PostInput {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let request = snarkflow_filecoin::sparse_post::post_request(kind, sector_size, 1000, sectors, &mut rng).unwrap();
    kind.parse(request.as_object().unwrap()).expect("a valid request").input
}

#[test]
fn the_native_post_witness_equals_the_gadgets_on_sparse_sectors() {
    for seed in 0..4 {
        assert_native_matches(PostKind::Winning, &sparse(PostKind::Winning, 2048, &[7], seed), "winning 2 KiB");
        assert_native_matches(PostKind::Window, &sparse(PostKind::Window, 2048, &[1, 2], seed), "window 2 KiB");
    }
    for size in [8u64 << 20, 512 << 20] {
        assert_native_matches(PostKind::Winning, &sparse(PostKind::Winning, size, &[3], 1), "winning");
        assert_native_matches(PostKind::Window, &sparse(PostKind::Window, size, &[4], 1), "window");
    }
}

#[test]
fn the_native_post_witness_equals_the_gadgets_on_a_real_sealed_sector() {
    let dir = tempfile::tempdir().unwrap();
    let sealed =
        snarkflow_filecoin::fixtures::seal_sector(dir.path(), RegisteredSealProof::StackedDrg2KiBV1_1, 1000, 5, 9)
            .unwrap();
    for (kind, window) in [(PostKind::Window, true), (PostKind::Winning, false)] {
        let request = sealed.post_request_input(window, [3; 32]).unwrap();
        let input = kind.parse(request.as_object().unwrap()).expect("a valid request").input;
        assert_native_matches(kind, &input, if window { "window, sealed" } else { "winning, sealed" });
    }
}
