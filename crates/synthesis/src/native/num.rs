//! Field elements as bellpepper's `AllocatedNum` allocates them.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField, PrimeFieldBits};

use super::{Aux, Bit};

/// bellpepper's `AllocatedNum`: one variable holding a field element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Num {
    pub value: Fr,
}

impl Num {
    /// `AllocatedNum::alloc`: one variable.
    #[inline]
    pub fn alloc(aux: &mut Aux, value: Fr) -> Num {
        aux.field(value);
        Num { value }
    }

    /// `AllocatedNum::mul`: one variable, the product.
    #[inline]
    pub fn mul(&self, aux: &mut Aux, other: &Num) -> Num {
        Num::alloc(aux, self.value * other.value)
    }

    /// `AllocatedNum::square`: one variable, the square.
    #[inline]
    pub fn square(&self, aux: &mut Aux) -> Num {
        Num::alloc(aux, self.value.square())
    }

    /// `AllocatedNum::to_bits_le`: the value's `NUM_BITS` (255) low bits, allocated least
    /// significant first.
    pub fn to_bits_le(&self, aux: &mut Aux) -> Vec<Bit> {
        let bits = self.value.to_le_bits();
        (0..Fr::NUM_BITS as usize).map(|i| Bit::alloc(aux, bits[i])).collect()
    }

    /// `AllocatedNum::to_bits_le_strict`: the same bits, but allocated from the most
    /// significant down, with the gadget's extra "run" bits (the AND of each run of ones of
    /// p - 1 and the previous run, which proves the value below p) allocated where it
    /// allocates them. Returns the 255 bits least significant first.
    pub fn to_bits_le_strict(&self, aux: &mut Aux) -> Vec<Bit> {
        let a = self.value.to_le_bits();
        let b = (-Fr::ONE).to_le_bits();
        let mut result = Vec::with_capacity(Fr::NUM_BITS as usize);
        let mut last_run: Option<bool> = None;
        let mut current_run: Vec<bool> = Vec::new();
        let mut found_one = false;
        for i in (0..b.len()).rev() {
            let (a_bit, b_bit) = (a[i], b[i]);
            found_one |= b_bit;
            if !found_one {
                continue;
            }
            if b_bit {
                aux.bit(a_bit);
                current_run.push(a_bit);
            } else {
                if !current_run.is_empty() {
                    current_run.extend(last_run);
                    // the gadget's k-ary AND: one allocation per operand after the first
                    let mut run = current_run[0];
                    for &bit in &current_run[1..] {
                        run &= bit;
                        aux.bit(run);
                    }
                    last_run = Some(run);
                    current_run.clear();
                }
                aux.bit(a_bit);
            }
            result.push(Bit::Is(a_bit));
        }
        result.reverse();
        result
    }
}

#[cfg(test)]
mod tests {
    use bellperson::gadgets::boolean::Boolean;
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::ConstraintSystem;
    use rand::SeedableRng;

    use super::*;
    use crate::witness::WitnessRecorder;

    fn as_bits(bits: &[Boolean]) -> Vec<Bit> {
        bits.iter()
            .map(|b| match b {
                Boolean::Constant(c) => Bit::Const(*c),
                Boolean::Is(v) => Bit::Is(v.get_value().unwrap()),
                Boolean::Not(v) => Bit::Not(v.get_value().unwrap()),
            })
            .collect()
    }

    /// Values that take every path: zero, one, the largest (p - 1), powers of two around the
    /// top bit, and random ones.
    fn values() -> Vec<Fr> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(16);
        let two = Fr::from(2u64);
        let mut v = vec![Fr::ZERO, Fr::ONE, -Fr::ONE, -Fr::from(2u64), two.pow_vartime([253]), two.pow_vartime([254])];
        v.extend((0..200).map(|_| Fr::random(&mut rng)));
        v
    }

    #[test]
    fn num_operations_and_bit_decompositions_match_the_gadget() {
        for value in values() {
            let mut cs = WitnessRecorder::default();
            let num = AllocatedNum::alloc(&mut cs, || Ok(value)).unwrap();
            let square = num.square(cs.namespace(|| "square")).unwrap();
            num.mul(cs.namespace(|| "mul"), &square).unwrap();
            let loose = as_bits(&num.to_bits_le(cs.namespace(|| "bits")).unwrap());
            let strict = as_bits(&num.to_bits_le_strict(cs.namespace(|| "strict")).unwrap());

            let mut aux = Aux::default();
            let n = Num::alloc(&mut aux, value);
            let sq = n.square(&mut aux);
            n.mul(&mut aux, &sq);
            assert_eq!(n.to_bits_le(&mut aux), loose, "to_bits_le of {value:?}");
            assert_eq!(n.to_bits_le_strict(&mut aux), strict, "to_bits_le_strict of {value:?}");
            assert_eq!(aux.values(), cs.aux, "allocations for {value:?}");
        }
    }
}
