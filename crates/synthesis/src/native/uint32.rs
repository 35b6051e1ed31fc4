//! 32-bit words as bellperson's `UInt32` allocates them.

use super::{Aux, Bit};

/// bellperson's `UInt32`: 32 [`Bit`]s, least significant first, and the word's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U32 {
    pub bits: [Bit; 32],
    pub value: u32,
}

impl U32 {
    pub fn constant(value: u32) -> U32 {
        U32 { bits: std::array::from_fn(|i| Bit::Const((value >> i) & 1 == 1)), value }
    }

    /// `UInt32::alloc`: 32 variables, least significant bit first.
    pub fn alloc(aux: &mut Aux, value: u32) -> U32 {
        U32 { bits: std::array::from_fn(|i| Bit::alloc(aux, (value >> i) & 1 == 1)), value }
    }

    /// `UInt32::from_bits_be`: 32 bits, most significant first.
    pub fn from_bits_be(bits: &[Bit]) -> U32 {
        assert_eq!(bits.len(), 32);
        let value = bits.iter().fold(0u32, |v, b| (v << 1) | u32::from(b.value()));
        U32 { bits: std::array::from_fn(|i| bits[31 - i]), value }
    }

    /// The bits, most significant first.
    pub fn bits_be(&self) -> impl Iterator<Item = Bit> + '_ {
        self.bits.iter().rev().copied()
    }

    pub fn rotr(&self, by: usize) -> U32 {
        let by = by % 32;
        U32 { bits: std::array::from_fn(|i| self.bits[(i + by) % 32]), value: self.value.rotate_right(by as u32) }
    }

    pub fn shr(&self, by: usize) -> U32 {
        let by = by % 32;
        U32 {
            bits: std::array::from_fn(|i| if i + by < 32 { self.bits[i + by] } else { Bit::Const(false) }),
            value: self.value >> by,
        }
    }

    /// `UInt32::xor`: bit by bit, least significant first.
    pub fn xor(&self, aux: &mut Aux, other: &U32) -> U32 {
        let mut bits = [Bit::Const(false); 32];
        for (i, bit) in bits.iter_mut().enumerate() {
            *bit = Bit::xor(aux, self.bits[i], other.bits[i]);
        }
        U32 { bits, value: self.value ^ other.value }
    }

    /// `UInt32::sha256_ch` (bit by bit).
    pub fn sha256_ch(aux: &mut Aux, a: &U32, b: &U32, c: &U32) -> U32 {
        let mut bits = [Bit::Const(false); 32];
        for (i, bit) in bits.iter_mut().enumerate() {
            *bit = Bit::sha256_ch(aux, a.bits[i], b.bits[i], c.bits[i]);
        }
        U32 { bits, value: (a.value & b.value) ^ (!a.value & c.value) }
    }

    /// `UInt32::sha256_maj` (bit by bit).
    pub fn sha256_maj(aux: &mut Aux, a: &U32, b: &U32, c: &U32) -> U32 {
        let mut bits = [Bit::Const(false); 32];
        for (i, bit) in bits.iter_mut().enumerate() {
            *bit = Bit::sha256_maj(aux, a.bits[i], b.bits[i], c.bits[i]);
        }
        U32 { bits, value: (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value) }
    }

    /// `UInt32::addmany`: the sum modulo 2^32. Unless every operand bit is a constant, the
    /// gadget allocates every bit of the full sum, carries included (as many bits as the
    /// largest possible sum has), and keeps the low 32.
    pub fn addmany(aux: &mut Aux, operands: &[U32]) -> U32 {
        assert!((2..=10).contains(&operands.len()), "addmany takes 2 to 10 operands");
        let sum: u64 = operands.iter().map(|o| u64::from(o.value)).sum();
        if operands.iter().all(|o| o.bits.iter().all(|b| b.is_const())) {
            return U32::constant(sum as u32);
        }
        let max = operands.len() as u64 * u64::from(u32::MAX);
        let width = 64 - max.leading_zeros() as usize;
        let mut bits = [Bit::Const(false); 32];
        for i in 0..width {
            let bit = Bit::alloc(aux, (sum >> i) & 1 == 1);
            if let Some(slot) = bits.get_mut(i) {
                *slot = bit;
            }
        }
        U32 { bits, value: sum as u32 }
    }
}
