//! Booleans as bellpepper's `Boolean` allocates them.

use blstrs::Scalar as Fr;
use ff::Field;

/// The auxiliary assignment being written: values in allocation order, into a buffer of its
/// own or into a slice of a larger witness (so that independent parts of one circuit can be
/// written in parallel, each into its place).
#[derive(Debug, Default)]
pub struct Aux<'a> {
    values: Vec<Fr>,
    /// When set, values go here (from the start) instead of into `values`.
    slice: Option<&'a mut [Fr]>,
    written: usize,
}

impl<'a> Aux<'a> {
    pub fn with_capacity(n: usize) -> Self {
        Aux { values: Vec::with_capacity(n), slice: None, written: 0 }
    }

    /// Write into `slice`, from its start; allocating more values than it holds panics.
    pub fn over(slice: &'a mut [Fr]) -> Self {
        Aux { values: Vec::new(), slice: Some(slice), written: 0 }
    }

    /// Allocate a variable holding `v` (0 or 1).
    #[inline]
    pub fn bit(&mut self, v: bool) {
        self.field(if v { Fr::ONE } else { Fr::ZERO });
    }

    /// Allocate a variable holding `v`.
    #[inline]
    pub fn field(&mut self, v: Fr) {
        match &mut self.slice {
            Some(slice) => slice[self.written] = v,
            None => self.values.push(v),
        }
        self.written += 1;
    }

    /// Values allocated so far.
    pub fn len(&self) -> usize {
        self.written
    }

    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// The values allocated so far, in order.
    pub fn values(&self) -> &[Fr] {
        match &self.slice {
            Some(slice) => &slice[..self.written],
            None => &self.values,
        }
    }

    /// The values of an `Aux` with a buffer of its own (empty for one over a slice).
    pub fn into_values(self) -> Vec<Fr> {
        self.values
    }
}

/// A boolean as the gadgets see it: a constant, an allocated bit, or the negation of one.
/// `Is(v)` and `Not(v)` carry the *variable's* value `v`; the boolean's value is `v` or `!v`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bit {
    Const(bool),
    Is(bool),
    Not(bool),
}

/// `Boolean::not`: no allocation.
impl std::ops::Not for Bit {
    type Output = Bit;

    #[inline]
    fn not(self) -> Bit {
        match self {
            Bit::Const(b) => Bit::Const(!b),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }
}

impl Bit {
    /// `AllocatedBit::alloc`: one variable.
    #[inline]
    pub fn alloc(aux: &mut Aux, v: bool) -> Bit {
        aux.bit(v);
        Bit::Is(v)
    }

    #[inline]
    pub fn value(self) -> bool {
        match self {
            Bit::Const(b) | Bit::Is(b) => b,
            Bit::Not(b) => !b,
        }
    }

    #[inline]
    pub fn is_const(self) -> bool {
        matches!(self, Bit::Const(_))
    }

    /// `Boolean::xor`.
    #[inline]
    pub fn xor(aux: &mut Aux, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(false), x) | (x, Bit::Const(false)) => x,
            (Bit::Const(true), x) | (x, Bit::Const(true)) => !x,
            (is @ Bit::Is(_), not @ Bit::Not(_)) | (not @ Bit::Not(_), is @ Bit::Is(_)) => !Bit::xor(aux, is, !not),
            // AllocatedBit::xor of the two variables
            (Bit::Is(a), Bit::Is(b)) | (Bit::Not(a), Bit::Not(b)) => Bit::alloc(aux, a ^ b),
        }
    }

    /// `Boolean::and`.
    #[inline]
    pub fn and(aux: &mut Aux, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::Const(false),
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x,
            // AllocatedBit::and_not(is, not), ::nor, ::and of the variables
            (Bit::Is(is), Bit::Not(not)) | (Bit::Not(not), Bit::Is(is)) => Bit::alloc(aux, is & !not),
            (Bit::Not(a), Bit::Not(b)) => Bit::alloc(aux, !a & !b),
            (Bit::Is(a), Bit::Is(b)) => Bit::alloc(aux, a & b),
        }
    }

    /// `Boolean::sha256_ch`: (a and b) xor ((not a) and c).
    #[inline]
    pub fn sha256_ch(aux: &mut Aux, a: Bit, b: Bit, c: Bit) -> Bit {
        let (va, vb, vc) = (a.value(), b.value(), c.value());
        let ch = (va & vb) ^ (!va & vc);
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => return Bit::Const(ch),
            (Bit::Const(false), _, c) => return c,
            (a, Bit::Const(false), c) => return Bit::and(aux, !a, c),
            (a, b, Bit::Const(false)) => return Bit::and(aux, a, b),
            (a, b, Bit::Const(true)) => return !Bit::and(aux, a, !b),
            (a, Bit::Const(true), c) => return !Bit::and(aux, !a, !c),
            // a constant true `a` with variable b, c falls through, as in the gadget
            _ => {}
        }
        Bit::alloc(aux, ch)
    }

    /// `Boolean::sha256_maj`: (a and b) xor (a and c) xor (b and c).
    #[inline]
    pub fn sha256_maj(aux: &mut Aux, a: Bit, b: Bit, c: Bit) -> Bit {
        let (va, vb, vc) = (a.value(), b.value(), c.value());
        let maj = (va & vb) ^ (va & vc) ^ (vb & vc);
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => return Bit::Const(maj),
            (Bit::Const(false), b, c) => return Bit::and(aux, b, c),
            (a, Bit::Const(false), c) => return Bit::and(aux, a, c),
            (a, b, Bit::Const(false)) => return Bit::and(aux, a, b),
            (a, b, Bit::Const(true)) => return !Bit::and(aux, !a, !b),
            (a, Bit::Const(true), c) => return !Bit::and(aux, !a, !c),
            (Bit::Const(true), b, c) => return !Bit::and(aux, !b, !c),
            _ => {}
        }
        // the gadget allocates `maj`, then `b and c` for its constraint
        let out = Bit::alloc(aux, maj);
        Bit::and(aux, b, c);
        out
    }
}

#[cfg(test)]
mod tests {
    //! Every operation on every combination of operand kinds and values, against bellpepper's
    //! `Boolean`: the same allocations, and a result of the same kind and value. (SHA-256's
    //! witness alone cannot catch a wrong kind: its `ch` and `maj` results only feed sums.)

    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::ConstraintSystem;

    use super::*;
    use crate::witness::WitnessRecorder;

    const KINDS: [Bit; 6] =
        [Bit::Const(false), Bit::Const(true), Bit::Is(false), Bit::Is(true), Bit::Not(false), Bit::Not(true)];

    fn gadget_operand(cs: &mut WitnessRecorder, bit: Bit) -> Boolean {
        match bit {
            Bit::Const(b) => Boolean::constant(b),
            Bit::Is(v) => AllocatedBit::alloc(&mut *cs, Some(v)).unwrap().into(),
            Bit::Not(v) => Boolean::from(AllocatedBit::alloc(&mut *cs, Some(v)).unwrap()).not(),
        }
    }

    fn native_operand(aux: &mut Aux, bit: Bit) -> Bit {
        match bit {
            Bit::Const(_) => bit,
            Bit::Is(v) => Bit::alloc(aux, v),
            Bit::Not(v) => !Bit::alloc(aux, v),
        }
    }

    fn as_bit(b: &Boolean) -> Bit {
        match b {
            Boolean::Constant(c) => Bit::Const(*c),
            Boolean::Is(v) => Bit::Is(v.get_value().unwrap()),
            Boolean::Not(v) => Bit::Not(v.get_value().unwrap()),
        }
    }

    type GadgetOp = fn(&mut WitnessRecorder, &[Boolean]) -> Boolean;
    type NativeOp = fn(&mut Aux, &[Bit]) -> Bit;

    fn check(name: &str, arity: usize, gadget: GadgetOp, native: NativeOp) {
        let mut operands = vec![vec![]];
        for _ in 0..arity {
            operands =
                operands.into_iter().flat_map(|o: Vec<Bit>| KINDS.map(|k| [o.clone(), vec![k]].concat())).collect();
        }
        for ops in operands {
            let mut cs = WitnessRecorder::default();
            let g: Vec<Boolean> = ops.iter().map(|b| gadget_operand(&mut cs, *b)).collect();
            let g_out = as_bit(&gadget(&mut cs, &g));
            let mut aux = Aux::default();
            let n: Vec<Bit> = ops.iter().map(|b| native_operand(&mut aux, *b)).collect();
            let n_out = native(&mut aux, &n);
            assert_eq!(n_out, g_out, "{name}{ops:?}: result");
            assert_eq!(aux.values(), cs.aux, "{name}{ops:?}: allocations");
        }
    }

    #[test]
    fn every_operation_on_every_kind_matches_the_gadget() {
        check("xor", 2, |cs, o| Boolean::xor(cs, &o[0], &o[1]).unwrap(), |aux, o| Bit::xor(aux, o[0], o[1]));
        check("and", 2, |cs, o| Boolean::and(cs, &o[0], &o[1]).unwrap(), |aux, o| Bit::and(aux, o[0], o[1]));
        check(
            "ch",
            3,
            |cs, o| Boolean::sha256_ch(cs, &o[0], &o[1], &o[2]).unwrap(),
            |aux, o| Bit::sha256_ch(aux, o[0], o[1], o[2]),
        );
        check(
            "maj",
            3,
            |cs, o| Boolean::sha256_maj(cs.namespace(|| "maj"), &o[0], &o[1], &o[2]).unwrap(),
            |aux, o| Bit::sha256_maj(aux, o[0], o[1], o[2]),
        );
    }

    #[test]
    fn an_aux_over_a_slice_writes_in_place_and_refuses_to_overflow() {
        let mut buffer = vec![Fr::from(7u64); 3];
        let mut aux = Aux::over(&mut buffer[1..]);
        aux.bit(true);
        aux.field(Fr::from(5u64));
        assert_eq!(aux.len(), 2);
        assert_eq!(aux.values(), &[Fr::ONE, Fr::from(5u64)]);
        assert!(aux.into_values().is_empty(), "nothing went to a buffer of its own");
        assert_eq!(buffer, vec![Fr::from(7u64), Fr::ONE, Fr::from(5u64)]);
        let overflow = std::panic::catch_unwind(|| {
            let mut one = [Fr::ZERO];
            let mut aux = Aux::over(&mut one);
            aux.bit(false);
            aux.bit(true);
        });
        assert!(overflow.is_err(), "a second value does not fit a slice of one");
    }
}
