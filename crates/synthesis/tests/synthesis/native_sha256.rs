//! The native SHA-256 witness equals the gadget's, value for value: random messages whose bits
//! are a random mix of constants, allocated bits and negated allocated bits (the gadgets fold
//! constants, so every mix takes other paths), one to three blocks.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use proptest::prelude::*;
use sha2::{Digest, Sha256};
use snarkflow_synthesis::native::{self, Aux, Bit};

/// How one message bit (of the value it holds) enters the hash: a constant, an allocated bit,
/// or the negation of an allocated bit holding its opposite.
#[derive(Debug, Clone, Copy)]
enum Input {
    Constant(bool),
    Allocated(bool),
    Negated(bool),
}

impl Input {
    fn value(self) -> bool {
        match self {
            Input::Constant(b) | Input::Allocated(b) | Input::Negated(b) => b,
        }
    }
}

/// bellperson's `sha256` over the message, its digest bits allocated at the end (so their
/// values are in the witness too).
struct GadgetSha256(Vec<Input>);

impl Circuit<Fr> for GadgetSha256 {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut bits = Vec::with_capacity(self.0.len());
        for (i, input) in self.0.iter().enumerate() {
            bits.push(match *input {
                Input::Constant(b) => Boolean::constant(b),
                Input::Allocated(b) => AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(b))?.into(),
                Input::Negated(b) => {
                    Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(!b))?).not()
                }
            });
        }
        let digest = bellperson::gadgets::sha256::sha256(cs.namespace(|| "sha256"), &bits)?;
        for (i, bit) in digest.iter().enumerate() {
            AllocatedBit::alloc(cs.namespace(|| format!("digest {i}")), bit.get_value())?;
        }
        Ok(())
    }
}

/// The same through the native mirror.
fn native_sha256(message: &[Input]) -> Aux<'static> {
    let mut aux = Aux::default();
    let bits: Vec<Bit> = message
        .iter()
        .map(|input| match *input {
            Input::Constant(b) => Bit::Const(b),
            Input::Allocated(b) => Bit::alloc(&mut aux, b),
            Input::Negated(b) => !Bit::alloc(&mut aux, !b),
        })
        .collect();
    let digest = native::sha256(&mut aux, &bits);
    for bit in digest {
        Bit::alloc(&mut aux, bit.value());
    }
    aux
}

fn gadget_aux(message: Vec<Input>) -> Vec<Fr> {
    snarkflow_synthesis::synthesize_witness(GadgetSha256(message), "sha256-test", 0).expect("synthesis").aux
}

fn bytes_of(message: &[Input]) -> Vec<u8> {
    message.chunks(8).map(|byte| byte.iter().fold(0u8, |v, b| (v << 1) | u8::from(b.value()))).collect()
}

fn input() -> impl Strategy<Value = Input> + Clone {
    prop_oneof![
        2 => any::<bool>().prop_map(Input::Constant),
        3 => any::<bool>().prop_map(Input::Allocated),
        1 => any::<bool>().prop_map(Input::Negated),
    ]
}

/// Messages of 0 to 130 bytes (up to three blocks once padded), each bit drawn by `bit`.
fn message(bit: impl Strategy<Value = Input> + Clone) -> impl Strategy<Value = Vec<Input>> {
    (0usize..=130).prop_flat_map(move |bytes| proptest::collection::vec(bit.clone(), bytes * 8))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn native_sha256_witness_equals_the_gadgets(message in message(input())) {
        let native = native_sha256(&message);
        let gadget = gadget_aux(message.clone());
        prop_assert_eq!(native.values().len(), gadget.len(), "as many allocations");
        prop_assert!(native.values() == gadget, "the same values in the same order");
        // and the digest is SHA-256's (its 256 bits are the witness's last values)
        let expected = Sha256::digest(bytes_of(&message));
        let digest: Vec<bool> = native.values()[native.len() - 256..].iter().map(|v| *v == Fr::from(1u64)).collect();
        let digest: Vec<u8> = digest.chunks(8).map(|b| b.iter().fold(0u8, |v, b| (v << 1) | u8::from(*b))).collect();
        prop_assert_eq!(digest, expected.to_vec());
    }

    #[test]
    fn all_allocated_and_all_constant_messages_match_too(message in message(any::<bool>().prop_map(Input::Allocated)), constant in message(any::<bool>().prop_map(Input::Constant))) {
        prop_assert!(native_sha256(&message).values() == gadget_aux(message));
        // all constants: the gadget allocates nothing but the digest bits at the end
        let native = native_sha256(&constant);
        prop_assert_eq!(native.len(), 256);
        prop_assert!(native.values() == gadget_aux(constant));
    }
}
