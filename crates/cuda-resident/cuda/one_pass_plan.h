// The one-pass MSM's plan arithmetic (msm_one_pass.cuh): window widths, the workspace's bytes,
// and the batched H's choice of window and part (quotient.cuh's h_batched_plan). Plain C++, so
// that tests/one_pass_plan.cpp checks it on a machine without a GPU; what it needs of the
// device and the curve comes in `one_pass_dims`.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

static const uint32_t RUN_BITS = 9;
static const uint32_t RUN = 1u << RUN_BITS;
// windows sorted by one launch (one grid row each): sppark's msm_t sorts two at a time, beside
// its other batches' work; here the sort runs alone before the accumulation, so more rows keep
// more SMs busy. The top window is always sorted alone (a launch gives rows past the first one
// width between them).
static const uint32_t SORT_ROWS = 4;

// The windows: nwins − 1 of wbits (signed digits, a row of 2^(wbits − 1) buckets each), then
// the top one of top_bits (digits 1 … 2^(top_bits − 1)), whose row has 2^top_row_bits buckets.
// A top window narrower than the others spreads each digit over 2^top_shift() buckets of a row
// as long as theirs; a wide one (one_pass_widen) has a row of its own width, 2^(top_bits − 1).
struct one_pass_plan {
    size_t n = 0, stride = 0;
    uint32_t wbits = 0, nwins = 0, top_bits = 0, top_row_bits = 0;
    size_t row = 0, runs_per_row = 0;
    uint32_t sort_grid = 0;

    uint32_t row_bits() const { return wbits - 1; }
    bool wide_top() const { return top_bits > wbits; }
    uint32_t top_shift() const { return top_row_bits - (top_bits - 1); }
    size_t top_row() const { return (size_t)1 << top_row_bits; }
    // buckets (and histogram entries) of all windows: the rows below the top one, then its own
    size_t rows_total() const { return (size_t)(nwins - 1) * row + top_row(); }
    size_t top_runs() const { return top_row() >> RUN_BITS; }
    size_t runs() const { return (size_t)(nwins - 1) * runs_per_row + top_runs(); }
};

// The device's SMs, the scalars' bits, sppark's sort digit and warp widths, the bytes of a
// bucket and the per-warp sums of the ones (ones_slots in msm_one_pass.cuh).
struct one_pass_dims {
    uint32_t sm_count, scalar_bits, digit_bits, warp;
    size_t bucket_bytes, ones_slots;
};

// 21 bits from 2^25 points up (13 windows instead of sppark's 15 at 18 bits; 2^20 buckets a
// window), else sppark's own choice for that many points
inline uint32_t one_pass_default_wbits(size_t n)
{
    uint32_t lg = 0;
    for (size_t v = n + n / 2; v >>= 1;)
        lg++;
    return n >= ((size_t)1 << 25) ? 21 : std::min<uint32_t>(std::max<uint32_t>(lg, 18) - 8, 18);
}

// a row must hold at least one run; the sort handles keys of up to 2·digit_bits bits
inline bool one_pass_wbits_ok(const one_pass_dims& d, uint32_t wbits)
{
    return wbits >= RUN_BITS + 1 && wbits - 1 <= 2 * d.digit_bits;
}

// The plan for n points in windows of `wbits` (one_pass_wbits_ok).
inline one_pass_plan one_pass_plan_of(const one_pass_dims& d, size_t n, uint32_t wbits)
{
    one_pass_plan p;
    p.n = n;
    p.stride = (n + d.warp - 1) & ~(size_t)(d.warp - 1);
    p.wbits = wbits;
    p.nwins = (d.scalar_bits - 1) / p.wbits + 1;
    p.top_bits = d.scalar_bits - p.wbits * (p.nwins - 1);
    p.top_row_bits = p.wbits - 1;
    p.row = (size_t)1 << (p.wbits - 1);
    p.runs_per_row = p.row >> RUN_BITS;
    // the sort runs best on about a third of the SMs, in a power of two of blocks (at most a
    // warp's worth: the sort's own limit)
    p.sort_grid = 1;
    while (p.sort_grid * 2 <= d.sm_count / 3 && p.sort_grid * 2 <= d.warp)
        p.sort_grid *= 2;
    return p;
}

// A top window of at most WIDE_TOP_MAX bits costs a window's additions (every point whose top
// digit is not 0: at 2^27 points and 21 bits, 86 % of them, for 3 bits) for a few bits.
// Widening folds it into the window below: one window fewer, the new top one top_bits + wbits
// wide with a row of its own (2^23 buckets at 21 bits: 1.4 GiB more buckets, 0.5 GiB fewer
// digits at 2^27 points). Its digits come from one_pass_breakdown (sppark's `breakdown` makes
// windows of one width); the sort handles its keys up to 2·digit_bits bits. `p` as it is where
// it cannot widen.
static const uint32_t WIDE_TOP_MAX = 4;

inline one_pass_plan one_pass_widen(const one_pass_dims& d, one_pass_plan p)
{
    if (p.nwins < 2 || p.top_bits > WIDE_TOP_MAX || p.wbits + p.top_bits - 1 > 2 * d.digit_bits)
        return p;
    p.nwins -= 1;
    p.top_bits += p.wbits;
    p.top_row_bits = p.top_bits - 1;
    return p;
}

// The buffers one_pass_reserve allocates for `p`, in bytes: digits, sort space, histogram,
// buckets, a later batch's buckets (`batched` only), the ones' sums (twice when `batched`: a
// later batch's half), the runs.
struct one_pass_sizes {
    size_t digits, temps, hist, buckets, part, ones, runs;

    size_t total() const { return digits + temps + hist + buckets + part + ones + runs; }
};

inline one_pass_sizes one_pass_sizes_of(const one_pass_dims& d, const one_pass_plan& p, bool batched)
{
    const size_t buckets = p.rows_total() * d.bucket_bytes;
    return one_pass_sizes{(size_t)p.nwins * p.stride * sizeof(uint32_t),
                          SORT_ROWS * p.stride * 2 * sizeof(uint32_t),
                          p.rows_total() * sizeof(uint32_t),
                          buckets,
                          batched ? buckets : 0,
                          (batched ? 2 : 1) * d.ones_slots * d.bucket_bytes,
                          2 * p.runs() * d.bucket_bytes};
}

inline size_t one_pass_bytes_of(const one_pass_dims& d, const one_pass_plan& p, bool batched)
{
    return one_pass_sizes_of(d, p, batched).total();
}

// The batched H's plan for batches of `batch` points (h_batched_plan): each window width from
// `widest` down to 12 bits gets the largest part (a power of two of at least 2^16 points and 8
// a bucket, or the whole batch) whose workspace fits what the memory plans reserve for sppark's
// MSM over one batch (42 bytes a point and 64 MiB: `streamed_msm_bytes` in the prover's
// memory_plan/dims.rs); of those the one of least work a point: its windows' entries plus each
// part's join of every bucket into the carried ones (a general addition and its loads, counted
// as two entries). A plan of no points where none fits.
inline one_pass_plan one_pass_batched_plan(const one_pass_dims& d, size_t batch, uint32_t widest)
{
    const size_t budget = batch * 42 + ((size_t)64 << 20);
    size_t most = (size_t)1 << 16;
    while (most < batch)
        most <<= 1;
    one_pass_plan best{};
    double best_cost = 0;
    for (uint32_t wbits = widest; wbits >= 12 && one_pass_wbits_ok(d, wbits); wbits--) {
        for (size_t part = most; part >= std::max((size_t)1 << 16, (size_t)1 << (wbits + 2)); part >>= 1) {
            one_pass_plan p = one_pass_plan_of(d, std::min(part, batch), wbits);
            if (one_pass_bytes_of(d, p, true) > budget)
                continue;
            // a batch is taken in ⌈batch / part⌉ parts, each joined over every bucket
            const size_t joins = (batch + p.n - 1) / p.n;
            double cost = p.nwins * (1.0 + 2.0 * (double)p.row * (double)joins / (double)batch);
            if (best.n == 0 || cost < best_cost) {
                best = p;
                best_cost = cost;
            }
            break;
        }
    }
    return best;
}
