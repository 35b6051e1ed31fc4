// A window's sum from the runs `reduce_runs` (msm_one_pass.cuh) leaves, on the host: plain C++
// templates over the bucket and point types, so that tests/one_pass_windows.cpp checks them on a
// machine without a GPU with a small stand-in group. RUN_BITS is one_pass_plan.h's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "one_pass_plan.h"

// Window y's Σ_x ((x >> shift) + 1)·B_x from its runs: Σ_s res_s + Σ_s c_s·acc_s with
// c_s = ⌈x0_s / 2^shift⌉, the weight run s inherits from below its first bucket. c grows by
// Δ = RUN >> shift at every run (shift ≤ RUN_BITS) or by 0 or 1 (wider shifts), so
// Σ_s c_s·acc_s = d·Σ_{s: Δ_s ≠ 0} (Σ_{s' ≥ s} acc_s'), d = max(1, RUN >> shift).
//
// A window is summed in parts of at most WINDOW_PART runs, each on a host thread of its own
// (the wide top window has 16,384 runs: one thread took ~30–45 ms over them, 2026-12-07). A
// part [a, b) gives Σ res, Σ acc and its own raised sum Σ_{s ∈ [a, b): Δ_s ≠ 0} Σ_{s' ∈ [s, b)}
// acc_s' with the count of those s; the parts above it add count·(their Σ acc) to it.
static const size_t WINDOW_PART = 2048;

template<class bucket>
struct window_part {
    bucket total, suffix, raised;
    size_t flagged = 0;
};

template<class bucket>
static window_part<bucket> window_part_sum(const bucket* runs, size_t a, size_t b, uint32_t shift)
{
    window_part<bucket> part;
    part.total.inf(); part.suffix.inf(); part.raised.inf();
    auto c = [shift](size_t s) { return ((s << RUN_BITS) + ((size_t)1 << shift) - 1) >> shift; };
    for (size_t s = b; s-- > a;) {
        part.total.add(runs[2 * s]);
        part.suffix.add(runs[2 * s + 1]);
        if (s > 0 && c(s) != c(s - 1)) {
            part.raised.add(part.suffix);
            part.flagged++;
        }
    }
    return part;
}

// k·p by doubling and adding (k is at most a window's run count)
template<class point>
static point times(point p, size_t k)
{
    point acc;
    acc.inf();
    for (; k != 0; k >>= 1) {
        if (k & 1)
            acc.add(p);
        p.dbl();
    }
    return acc;
}

// The window's sum from its parts, lowest first
template<class bucket, class point>
static point window_sum(const std::vector<window_part<bucket>>& parts, uint32_t shift)
{
    bucket total, above;
    total.inf(); above.inf();
    point raised;
    raised.inf();
    for (size_t i = parts.size(); i-- > 0;) {
        const window_part<bucket>& part = parts[i];
        total.add(part.total);
        point own = part.raised;
        raised.add(own);
        if (i + 1 < parts.size())   // (the top part has nothing above it)
            raised.add(times<point>(above, part.flagged));
        above.add(part.suffix);
    }
    for (uint32_t i = shift; i < RUN_BITS; i++)
        raised.dbl();
    point w = total;
    w.add(raised);
    return w;
}

