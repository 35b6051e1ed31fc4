//! Byte encoding of a [`SynthesizedPartition`] for the object store (the raw wire form).
//!
//! Layout: 4-byte magic, 2-byte little-endian version, then bincode of [`WirePartition`], whose
//! scalar vectors are flat little-endian 32-byte field representations. Decoding rejects a
//! wrong magic or version, non-canonical field elements, and inconsistent shapes.

use blstrs::Scalar as Fr;
use ff::PrimeField;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{Density, SynthesizedPartition};

pub const ENCODING_MAGIC: [u8; 4] = *b"SFSP";
pub const ENCODING_VERSION: u16 = 1;
const HEADER_LEN: usize = 6;

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not a synthesized partition (bad magic)")]
    Magic,
    #[error("unsupported partition encoding version {0}")]
    Version(u16),
    #[error("malformed partition encoding: {0}")]
    Bincode(#[from] bincode::Error),
    #[error("non-canonical field element in {0}")]
    FieldElement(&'static str),
    #[error("inconsistent partition: {0}")]
    Shape(String),
}

#[derive(Serialize, Deserialize)]
struct WirePartition {
    circuit_id: String,
    partition: u32,
    #[serde(with = "serde_bytes")]
    a: Vec<u8>,
    #[serde(with = "serde_bytes")]
    b: Vec<u8>,
    #[serde(with = "serde_bytes")]
    c: Vec<u8>,
    #[serde(with = "serde_bytes")]
    input_assignment: Vec<u8>,
    #[serde(with = "serde_bytes")]
    aux_assignment: Vec<u8>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

fn scalars_to_bytes(v: &[Fr]) -> Vec<u8> {
    let mut out = vec![0u8; v.len() * 32];
    out.par_chunks_mut(32).zip(v.par_iter()).for_each(|(dst, s)| dst.copy_from_slice(&s.to_repr()));
    out
}

fn scalars_from_bytes(bytes: &[u8], what: &'static str) -> Result<Vec<Fr>, DecodeError> {
    if !bytes.len().is_multiple_of(32) {
        return Err(DecodeError::Shape(format!("{what} is not a whole number of field elements")));
    }
    bytes
        .par_chunks(32)
        .map(|chunk| {
            let repr: [u8; 32] = chunk.try_into().expect("chunks of 32");
            Option::from(Fr::from_repr(repr)).ok_or(DecodeError::FieldElement(what))
        })
        .collect()
}

impl SynthesizedPartition {
    /// Serialize for the synth → prove hop.
    pub fn encode(&self) -> Vec<u8> {
        let wire = WirePartition {
            circuit_id: self.circuit_id.clone(),
            partition: self.partition,
            a: scalars_to_bytes(&self.a),
            b: scalars_to_bytes(&self.b),
            c: scalars_to_bytes(&self.c),
            input_assignment: scalars_to_bytes(&self.input_assignment),
            aux_assignment: scalars_to_bytes(&self.aux_assignment),
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        };
        let mut out = Vec::with_capacity(HEADER_LEN + 32 * 5 * self.a.len());
        out.extend_from_slice(&ENCODING_MAGIC);
        out.extend_from_slice(&ENCODING_VERSION.to_le_bytes());
        bincode::serialize_into(&mut out, &wire).expect("writing to a Vec cannot fail");
        out
    }

    /// Inverse of [`SynthesizedPartition::encode`], with every check a prover relies on.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        if bytes.len() < HEADER_LEN || bytes[..4] != ENCODING_MAGIC {
            return Err(DecodeError::Magic);
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if version != ENCODING_VERSION {
            return Err(DecodeError::Version(version));
        }
        let wire: WirePartition = bincode::deserialize(&bytes[HEADER_LEN..])?;
        let density = |d: Density, what: &str| {
            d.validated().ok_or_else(|| DecodeError::Shape(format!("{what} density is inconsistent")))
        };
        let p = SynthesizedPartition {
            circuit_id: wire.circuit_id,
            partition: wire.partition,
            a: scalars_from_bytes(&wire.a, "a")?,
            b: scalars_from_bytes(&wire.b, "b")?,
            c: scalars_from_bytes(&wire.c, "c")?,
            input_assignment: scalars_from_bytes(&wire.input_assignment, "input assignment")?,
            aux_assignment: scalars_from_bytes(&wire.aux_assignment, "aux assignment")?,
            a_aux_density: density(wire.a_aux_density, "a aux")?,
            b_input_density: density(wire.b_input_density, "b input")?,
            b_aux_density: density(wire.b_aux_density, "b aux")?,
        };
        p.check_shape()?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesize;
    use proptest::prelude::*;
    use snarkflow_circuits::DenseChain;

    fn sample(constraints: u32, seed: u64) -> SynthesizedPartition {
        let spec = snarkflow_circuits::circuit(&format!("dense-chain-c{}", constraints));
        synthesize(DenseChain::with_witness(constraints, seed, 3), &spec.circuit_id(), 3).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn encode_decode_round_trips(constraints in 1u32..200, seed: u64) {
            let p = sample(constraints, seed);
            prop_assert_eq!(SynthesizedPartition::decode(&p.encode()).unwrap(), p);
        }

        #[test]
        fn truncation_is_detected(cut in 1usize..2000) {
            let bytes = sample(50, 1).encode();
            let cut = cut.min(bytes.len());
            prop_assert!(SynthesizedPartition::decode(&bytes[..bytes.len() - cut]).is_err());
        }
    }

    #[test]
    fn non_canonical_scalar_is_rejected() {
        let p = sample(4, 1);
        let mut bytes = p.encode();
        // the a vector's first element sits after header, circuit id and two length prefixes
        let offset = HEADER_LEN + 8 + p.circuit_id.len() + 4 + 8;
        bytes[offset..offset + 32].copy_from_slice(&[0xff; 32]);
        assert!(matches!(SynthesizedPartition::decode(&bytes), Err(DecodeError::FieldElement("a"))));
    }

    #[test]
    fn wrong_magic_and_version_are_rejected() {
        let mut bytes = sample(4, 1).encode();
        bytes[5] = 9;
        assert!(matches!(SynthesizedPartition::decode(&bytes), Err(DecodeError::Version(_))));
        assert!(matches!(SynthesizedPartition::decode(b"nope"), Err(DecodeError::Magic)));
    }
}
