//! Density bitmaps: which variables occur (with a non-zero coefficient) in a query.

use serde::{Deserialize, Serialize};

/// A growable bitmap with a maintained popcount.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    popcount: usize,
}

impl Density {
    pub fn new() -> Self {
        Self::default()
    }

    /// Append one variable, initially absent from the query.
    pub fn push(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Mark variable `idx` as used; idempotent.
    pub fn set(&mut self, idx: usize) {
        debug_assert!(idx < self.len, "density index {idx} out of range {}", self.len);
        let (w, bit) = (idx / 64, 1u64 << (idx % 64));
        if self.words[w] & bit == 0 {
            self.words[w] |= bit;
            self.popcount += 1;
        }
    }

    pub fn get(&self, idx: usize) -> bool {
        idx < self.len && self.words[idx / 64] & (1 << (idx % 64)) != 0
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bitmap as 64-bit words, least significant bit first (the layout GPU provers take).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Number of set bits.
    pub fn popcount(&self) -> usize {
        self.popcount
    }

    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    /// Rebuild from raw parts, checking that they are consistent (used when decoding).
    pub(crate) fn validated(self) -> Option<Self> {
        let words_needed = self.len.div_ceil(64);
        if self.words.len() != words_needed {
            return None;
        }
        if let Some(last) = self.words.last() {
            let used = self.len - 64 * (words_needed - 1);
            if used < 64 && last >> used != 0 {
                return None;
            }
        }
        let count: usize = self.words.iter().map(|w| w.count_ones() as usize).sum();
        (count == self.popcount).then_some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn popcount_matches_set_bits(len in 0usize..300, sets in prop::collection::vec(0usize..300, 0..100)) {
            let mut d = Density::new();
            for _ in 0..len { d.push(); }
            let mut expected = std::collections::BTreeSet::new();
            for s in sets.into_iter().filter(|s| *s < len) {
                d.set(s);
                expected.insert(s);
            }
            prop_assert_eq!(d.popcount(), expected.len());
            prop_assert_eq!(d.len(), len);
            for i in 0..len { prop_assert_eq!(d.get(i), expected.contains(&i)); }
            prop_assert!(d.clone().validated().is_some());
        }
    }

    #[test]
    fn inconsistent_popcount_is_rejected() {
        let mut d = Density::new();
        d.push();
        d.set(0);
        d.popcount = 2;
        assert!(d.validated().is_none());
    }
}
