//! Witness buffers kept between partitions.
//!
//! A 32 GiB partition's witness is 130 M values, 4.2 GB. A fresh buffer that large is a fresh
//! mapping (glibc maps every allocation above 32 MiB on its own and unmaps it on free), so each
//! partition's first write to each page is a fault in which the kernel zeroes the page: on the
//! 2-core dev VM (2026-12-07) 65 % of a one-thread 32 GiB PoRep witness was the kernel's
//! `clear_page_erms` under those faults, ~4.7 s of system time a partition. A process that
//! makes many witnesses keeps the buffers of the last ones instead ([`keep`]) and writes the
//! next witness over one of them ([`take`]): the pages are mapped already and nothing needs
//! zeroing, since the generators write every value.
//!
//! Off until a process turns it on with [`keep`] (a synth-worker: one buffer per synthesis
//! slot): a one-shot command gains nothing from it. A kept buffer holds its memory while the
//! process is idle, so a synth-worker's resident set stays at its busy peak.

use std::sync::Mutex;

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// Buffers smaller than this (values: 128 MiB) are not kept by [`keep`]: their pages cost
/// little to fault in.
pub const KEPT_FROM: usize = 1 << 22;

struct Kept {
    /// At most this many buffers are kept (0: none).
    limit: usize,
    /// Of at least this many values.
    from: usize,
    buffers: Vec<Vec<Fr>>,
}

static KEPT: Mutex<Kept> = Mutex::new(Kept { limit: 0, from: KEPT_FROM, buffers: Vec::new() });

fn kept() -> std::sync::MutexGuard<'static, Kept> {
    // a panic elsewhere while the lock was held leaves a list of buffers that is still valid
    KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Keep up to `limit` witness buffers between partitions (0: keep none, and drop those kept).
pub fn keep(limit: usize) {
    keep_with(limit, KEPT_FROM);
}

/// [`keep`], keeping buffers of at least `from` values (tests keep small ones).
pub fn keep_with(limit: usize, from: usize) {
    let mut kept = kept();
    kept.limit = limit;
    kept.from = from;
    while kept.buffers.len() > limit {
        // the smallest go first
        kept.buffers.remove(0);
    }
}

/// A buffer of exactly `len` values for a generator that writes every one of them: a kept
/// buffer that holds `len` values (the smallest such), else a new one of zeros. The values of
/// a kept buffer are those of an earlier witness until overwritten. A witness too small to be
/// kept (a WinningPoSt's) gets a new one, leaving the kept ones to the large.
pub fn take(len: usize) -> Vec<Fr> {
    let found = {
        let mut kept = kept();
        let at = (len >= kept.from).then(|| kept.buffers.iter().position(|b| b.capacity() >= len)).flatten();
        at.map(|i| kept.buffers.remove(i))
    };
    let mut buffer = found.unwrap_or_else(|| Vec::with_capacity(len));
    if buffer.len() > len {
        buffer.truncate(len);
    } else {
        // zeroed in parallel: a new buffer's pages are faulted in by many threads
        let more = len - buffer.len();
        buffer.par_extend(rayon::iter::repeat_n(Fr::ZERO, more));
    }
    buffer
}

/// Hand a witness's buffer back when the witness is done with; kept if the process keeps
/// buffers and it is large enough (a larger one displaces the smallest kept), else freed.
pub fn give_back(buffer: Vec<Fr>) {
    let mut kept = kept();
    if kept.limit == 0 || buffer.capacity() < kept.from || buffer.capacity() == 0 {
        return;
    }
    if kept.buffers.len() == kept.limit {
        if kept.buffers[0].capacity() >= buffer.capacity() {
            return;
        }
        kept.buffers.remove(0);
    }
    // sorted by capacity, smallest first
    let at = kept.buffers.partition_point(|b| b.capacity() < buffer.capacity());
    kept.buffers.insert(at, buffer);
}

/// How many buffers are kept now, and their values in all.
pub fn kept_now() -> (usize, usize) {
    let kept = kept();
    (kept.buffers.len(), kept.buffers.iter().map(Vec::capacity).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test owns the process-wide list: tests run in parallel threads.
    #[test]
    fn buffers_are_kept_up_to_the_limit_reused_by_size_and_given_exactly_the_length_asked() {
        let from = 1 << 10;
        let big = from * 2;
        // off: nothing is kept
        give_back(vec![Fr::ONE; big]);
        assert_eq!(kept_now().0, 0);

        keep_with(2, from);
        // too small to keep
        give_back(vec![Fr::ONE; 16]);
        assert_eq!(kept_now().0, 0);
        give_back(vec![Fr::ONE; big]);
        give_back(vec![Fr::ONE; from]);
        assert_eq!(kept_now(), (2, big + from));
        // a third: larger than the smallest kept, so it displaces it
        give_back(vec![Fr::ONE; big + 4]);
        assert_eq!(kept_now(), (2, 2 * big + 4));
        // not larger than any kept: freed
        give_back(vec![Fr::ONE; from]);
        assert_eq!(kept_now(), (2, 2 * big + 4));

        // the smallest that holds the length is taken, cut to the length, its old values in it
        let taken = take(big - 8);
        assert_eq!((taken.len(), taken.capacity()), (big - 8, big));
        assert!(taken.iter().all(|v| *v == Fr::ONE));
        assert_eq!(kept_now(), (1, big + 4));
        // longer than it held: the rest zeros
        let mut shorter = taken;
        shorter.truncate(10);
        give_back(shorter);
        let regrown = take(big);
        assert_eq!(regrown.len(), big);
        assert!(regrown[..10].iter().all(|v| *v == Fr::ONE) && regrown[10..].iter().all(|v| *v == Fr::ZERO));
        // none holds this many: a new buffer of zeros, the kept ones left alone
        let fresh = take(2 * big);
        assert!(fresh.len() == 2 * big && fresh.iter().all(|v| *v == Fr::ZERO));
        assert_eq!(kept_now(), (1, big + 4));
        // too small to be kept: a new one too
        let small = take(from - 1);
        assert!(small.len() == from - 1 && small.iter().all(|v| *v == Fr::ZERO));
        assert_eq!(kept_now(), (1, big + 4));

        keep(0);
        assert_eq!(kept_now().0, 0);
        give_back(regrown);
        assert_eq!(kept_now().0, 0);
    }
}
