// A window's sum from its runs (one_pass_windows.h), run on the host with a stand-in group (the
// integers mod 2^61 − 1 under addition: `add`, `dbl` and `inf` as the curve types have them):
// random buckets of one window are reduced into runs as `reduce_runs` reduces them (its loop,
// restated here), then summed in parts of WINDOW_PART runs and combined; the result must be
// Σ_x ((x >> shift) + 1)·B_x for windows of one part and of many (the wide top window's 16,384
// runs), uneven last parts, and the shifts of a narrow top window. Exit status 0 when all hold.
// Built and run by tests/host_checks.rs.
#include <cstdio>
#include <random>
#include <vector>

#include "../one_pass_windows.h"
#include "check.h"

static const uint64_t P = (1ull << 61) - 1;

struct elem {
    uint64_t v = 0;
    void inf() { v = 0; }
    void add(const elem& o) { v = (v + o.v) % P; }
    void dbl() { add(*this); }
};

// `runs` windows' worth of buckets (nruns·RUN), reduced and summed; against the direct sum
static bool window_adds_up(size_t nruns, uint32_t shift, std::mt19937_64& rng)
{
    const size_t n = nruns << RUN_BITS;
    std::vector<elem> buckets(n);
    for (auto& b : buckets)
        b.v = rng() % P;
    // reduce_runs: per run, from its last bucket down, acc += B; res += acc where (x & mask) == 0
    const uint64_t mask = ((uint64_t)1 << shift) - 1;
    std::vector<elem> runs(2 * nruns);
    for (size_t g = 0; g < nruns; g++) {
        elem acc, res;
        const size_t x0 = g << RUN_BITS;
        for (size_t k = RUN; k-- > 0;) {
            acc.add(buckets[x0 + k]);
            if (((x0 + k) & mask) == 0)
                res.add(acc);
        }
        runs[2 * g] = res;
        runs[2 * g + 1] = acc;
    }
    std::vector<window_part<elem>> parts;
    for (size_t a = 0; a < nruns; a += WINDOW_PART)
        parts.push_back(window_part_sum<elem>(runs.data(), a, std::min(nruns, a + WINDOW_PART), shift));
    const elem got = window_sum<elem, elem>(parts, shift);
    elem want;
    for (size_t x = 0; x < n; x++) {
        const uint64_t weight = (x >> shift) + 1;
        want.v = (uint64_t)(((unsigned __int128)buckets[x].v * weight + want.v) % P);
    }
    return got.v == want.v;
}

int main()
{
    std::mt19937_64 rng(11);
    size_t windows = 0;
    // a plain window (2,048 runs: one part), the wide top (16,384: eight), uneven part counts,
    // a tail MSM's few runs, and a narrow top window's shifts (3 bits in a 20-bit row: 18)
    for (size_t nruns : {(size_t)1, (size_t)3, (size_t)2048, (size_t)2049, (size_t)5000, (size_t)16384}) {
        for (uint32_t shift : {0u, 3u, 9u, 12u, 18u}) {
            CHECK(window_adds_up(nruns, shift, rng), "%zu runs, shift %u: the window's sum is wrong", nruns, shift);
            windows++;
        }
    }
    std::printf("%zu windows summed in parts of %zu runs\n", windows, WINDOW_PART);
    std::printf("one_pass_windows: %d failures\n", failures);
    return failures ? 1 : 0;
}
