//! `sha256-chain`: `blocks` SHA-256 compressions, each over (previous digest ‖ 256 fresh
//! private bits), like PoRep labeling hashes a parent label with new data. Bit-heavy: almost
//! every witness value is 0 or 1. The final digest is the public input (multipacked).

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, sha256::sha256_block_no_padding};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use rand::RngCore;

/// Largest chain: 4096 compressions is ~110 M constraints, beyond which a CPU prover takes hours
/// and a 32 GiB-class circuit belongs to the Filecoin kinds anyway.
pub const MAX_BLOCKS: u32 = 4096;

/// SHA-256 initial hash value (FIPS 180-4 §5.3.3).
const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

#[derive(Debug, Clone)]
pub struct Sha256Chain {
    pub blocks: u32,
    /// 32 bytes of initial digest, then 32 fresh bytes per block; `None` when blank.
    pub data: Option<Vec<u8>>,
}

impl Sha256Chain {
    pub fn with_witness(blocks: u32, seed: u64, partition: u32) -> Self {
        let mut rng = crate::partition_rng(seed, partition);
        let mut data = vec![0u8; 32 * (blocks as usize + 1)];
        rng.fill_bytes(&mut data);
        Sha256Chain { blocks, data: Some(data) }
    }

    pub fn blank(blocks: u32) -> Self {
        Sha256Chain { blocks, data: None }
    }

    /// The chain's final digest, computed natively.
    pub fn digest(&self) -> Option<[u8; 32]> {
        let data = self.data.as_ref()?;
        let mut digest: [u8; 32] = data[..32].try_into().expect("32 bytes");
        for chunk in data[32..].chunks_exact(32) {
            let mut block = [0u8; 64];
            block[..32].copy_from_slice(&digest);
            block[32..].copy_from_slice(chunk);
            let mut state = IV;
            sha2::compress256(&mut state, &[block.into()]);
            for (i, word) in state.iter().enumerate() {
                digest[4 * i..4 * i + 4].copy_from_slice(&word.to_be_bytes());
            }
        }
        Some(digest)
    }

    pub fn public_inputs(&self) -> Option<Vec<Fr>> {
        let bits = multipack::bytes_to_bits(&self.digest()?);
        Some(multipack::compute_multipacking(&bits))
    }
}

fn alloc_bits<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    bytes: Option<&[u8]>,
    count: usize,
) -> Result<Vec<Boolean>, SynthesisError> {
    let values: Vec<Option<bool>> = match bytes {
        Some(b) => multipack::bytes_to_bits(b).into_iter().map(Some).collect(),
        None => vec![None; count],
    };
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| Ok(Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), v)?)))
        .collect()
}

impl Circuit<Fr> for Sha256Chain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let data = self.data.as_deref();
        let mut digest = alloc_bits(&mut cs.namespace(|| "initial"), data.map(|d| &d[..32]), 256)?;
        for i in 0..self.blocks as usize {
            let mut cs = cs.namespace(|| format!("block {i}"));
            let fresh = data.map(|d| &d[32 * (i + 1)..32 * (i + 2)]);
            let mut input = digest;
            input.extend(alloc_bits(&mut cs.namespace(|| "fresh"), fresh, 256)?);
            digest = sha256_block_no_padding(cs.namespace(|| "compress"), &input)?;
        }
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::util_cs::test_cs::TestConstraintSystem;

    #[test]
    fn satisfied_and_matches_native_digest() {
        let circuit = Sha256Chain::with_witness(2, 3, 0);
        let expected = circuit.public_inputs().unwrap();
        let mut cs = TestConstraintSystem::<Fr>::new();
        circuit.synthesize(&mut cs).unwrap();
        assert!(cs.is_satisfied(), "unsatisfied: {:?}", cs.which_is_unsatisfied());
        assert!(cs.verify(&expected), "circuit output differs from native sha256 chain");
    }

    #[test]
    fn native_digest_of_one_block_is_sha256_compression() {
        // With blocks = 0 the digest is the initial data itself.
        let c = Sha256Chain { blocks: 0, data: Some(vec![9u8; 32]) };
        assert_eq!(c.digest().unwrap(), [9u8; 32]);
    }
}

super::synthetic_kind! {
    /// The `sha256-chain` proof kind: a load-test circuit whose witness derives from the job seed.
    Sha256ChainKind, Sha256Chain, "sha256-chain", "blocks", "b", MAX_BLOCKS,
    constraints per unit: 27_000
}
