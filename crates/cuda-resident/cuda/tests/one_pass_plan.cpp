// The one-pass MSM's plan arithmetic (one_pass_plan.h), run on the host: the resident H's
// windows and workspace at 2^27 points, the default widths, the sort's grid on small and large
// devices, and the batched H's plans (quotient.cuh's h_batched_plan) for the batches the
// streamed, lean and compact plans stream: each fits the room the memory plans keep for one
// batch, keeps its parts within the batch and at 8 entries a bucket or more, and is the least
// work a point of every (window, part) that fits. Exit status 0 when all hold. Built and run by
// tests/host_checks.rs.
#include <cstdio>
#include <vector>

#include "../one_pass_plan.h"
#include "check.h"

// BLS12-381 G1 (255-bit scalars, XYZZ buckets of four 48-byte coordinates), sppark's sort digit
// (13 bits) and warp, and a device of `sms` SMs with sppark's 256-thread batch-addition blocks
static one_pass_dims g1_on(uint32_t sms)
{
    return one_pass_dims{sms, 255, 13, 32, 4 * 48, (size_t)sms * 256 / 32};
}

static double cost_of(const one_pass_plan& p, size_t batch)
{
    const size_t joins = (batch + p.n - 1) / p.n;
    return p.nwins * (1.0 + 2.0 * (double)p.row * (double)joins / (double)batch);
}

static void check_batched(const one_pass_dims& d, size_t batch, uint32_t widest)
{
    const size_t budget = batch * 42 + ((size_t)64 << 20);
    const one_pass_plan p = one_pass_batched_plan(d, batch, widest);
    CHECK(p.n > 0, "batch %zu: no plan", batch);
    if (p.n == 0)
        return;
    CHECK(one_pass_bytes_of(d, p, true) <= budget, "batch %zu: %zu bytes over the room %zu", batch,
          one_pass_bytes_of(d, p, true), budget);
    CHECK(p.wbits >= 12 && p.wbits <= widest, "batch %zu: %u-bit windows", batch, p.wbits);
    CHECK(p.n <= batch, "batch %zu: parts of %zu", batch, p.n);
    CHECK(p.n == batch || (p.n >= ((size_t)1 << 16) && p.n >= ((size_t)8 << (p.wbits - 1)) && !(p.n & (p.n - 1))),
          "batch %zu: parts of %zu at %u bits", batch, p.n, p.wbits);
    // least work of every window and power-of-two part that fits (or the whole batch)
    for (uint32_t w = 12; w <= widest; w++) {
        for (size_t part = (size_t)1 << 16; part < 2 * batch + ((size_t)1 << 16); part <<= 1) {
            if (part < ((size_t)1 << (w + 2)))
                continue;
            one_pass_plan q = one_pass_plan_of(d, part < batch ? part : batch, w);
            if (one_pass_bytes_of(d, q, true) > budget)
                continue;
            CHECK(cost_of(p, batch) <= cost_of(q, batch) + 1e-9,
                  "batch %zu: %u bits in parts of %zu (cost %.3f) beats the plan's %u bits in %zu (%.3f)", batch, w,
                  q.n, cost_of(q, batch), p.wbits, p.n, cost_of(p, batch));
        }
    }
    std::printf("batch %10zu: %u-bit windows in parts of %9zu, %6.1f MiB of %6.1f, %.3f entries a point\n", batch,
                p.wbits, p.n, one_pass_bytes_of(d, p, true) / 1048576.0, budget / 1048576.0, cost_of(p, batch));
}

int main()
{
    const one_pass_dims h100 = g1_on(132);

    // the resident H at 2^27 points: 13 windows of 21 bits, the top one 3 bits, 2,048 runs a
    // window, ~13 GiB of workspace (the prover's memory plans count it: memory_plan/dims.rs)
    const size_t m = ((size_t)1 << 27) - 1;
    CHECK(one_pass_default_wbits(m) == 21, "2^27 points: %u-bit windows", one_pass_default_wbits(m));
    const one_pass_plan h = one_pass_plan_of(h100, m, 21);
    CHECK(h.nwins == 13 && h.top_bits == 3 && h.runs_per_row == 2048 && h.stride == ((size_t)1 << 27),
          "2^27 points: %u windows, top %u bits, %zu runs a window, stride %zu", h.nwins, h.top_bits, h.runs_per_row,
          h.stride);
    const double gib = one_pass_bytes_of(h100, h, false) / 1073741824.0;
    CHECK(gib > 12.5 && gib < 13.5, "2^27 points: %.2f GiB of workspace", gib);
    std::printf("resident H, 2^27 points: %u windows of %u bits, %.2f GiB\n", h.nwins, h.wbits, gib);

    // the same H with its 3-bit top window folded into the one below: 12 windows, the top one
    // 24 bits read (digits up to 2^23, a row of its own of 2^23 buckets), the rows before it as
    // they were; its digits and sort space shrink, its buckets grow
    const one_pass_plan wide = one_pass_widen(h100, h);
    CHECK(wide.wide_top() && !h.wide_top(), "2^27 points: the widened plan's top window is wide, the plain one's not");
    CHECK(wide.nwins == 12 && wide.wbits == 21 && wide.top_bits == 24 && wide.top_row_bits == 23 &&
              wide.top_shift() == 0 && wide.row == h.row && wide.runs_per_row == h.runs_per_row,
          "widened: %u windows of %u bits, top %u bits in a row of 2^%u, shift %u", wide.nwins, wide.wbits,
          wide.top_bits, wide.top_row_bits, wide.top_shift());
    // every bit of the scalar is in one window: 11 of 21 and the top 24 read from bit 230 (the
    // top digit rounds with bit 230, as a Booth digit does)
    CHECK((wide.nwins - 1) * wide.wbits + wide.top_bits == 255, "widened windows cover %u bits",
          (wide.nwins - 1) * wide.wbits + wide.top_bits);
    CHECK(wide.rows_total() == 11 * ((size_t)1 << 20) + ((size_t)1 << 23) && wide.top_runs() == ((size_t)1 << 14) &&
              wide.runs() == 11 * 2048 + ((size_t)1 << 14),
          "widened: %zu buckets, %zu runs", wide.rows_total(), wide.runs());
    CHECK(h.rows_total() == 13 * ((size_t)1 << 20) && h.runs() == 13 * 2048 && h.top_shift() == 18,
          "plain: %zu buckets, %zu runs, top shift %u", h.rows_total(), h.runs(), h.top_shift());
    const one_pass_sizes hs = one_pass_sizes_of(h100, h, false), ws = one_pass_sizes_of(h100, wide, false);
    CHECK(ws.digits + ((size_t)1 << 29) == hs.digits && ws.buckets == hs.buckets + 6 * ((size_t)1 << 20) * 192 &&
              ws.hist == wide.rows_total() * 4,
          "widened sizes: digits %zu (plain %zu), buckets %zu (plain %zu)", ws.digits, hs.digits, ws.buckets,
          hs.buckets);
    std::printf("resident H widened: %u windows, top %u bits, %.2f GiB\n", wide.nwins, wide.top_bits,
                one_pass_bytes_of(h100, wide, false) / 1073741824.0);
    // a top window of 5 bits or more stays (25-bit windows: 15 … 5 bits); 23-bit ones (top 2
    // bits) widen to a 25-bit top, within the sort's 26
    CHECK(one_pass_plan_of(h100, m, 25).top_bits == 5 && !one_pass_widen(h100, one_pass_plan_of(h100, m, 25)).wide_top(),
          "25-bit windows (top 5 bits) stay");
    const one_pass_plan w23 = one_pass_widen(h100, one_pass_plan_of(h100, m, 23));
    CHECK(w23.wide_top() && w23.nwins == 11 && w23.top_bits == 25 && w23.top_row_bits == 24,
          "23-bit windows widened: %u windows, top %u bits", w23.nwins, w23.top_bits);

    // sppark's widths below 2^25 points
    CHECK(one_pass_default_wbits((size_t)1 << 25) == 21, "2^25");
    CHECK(one_pass_default_wbits((size_t)1 << 22) == 14, "2^22: %u", one_pass_default_wbits((size_t)1 << 22));
    CHECK(one_pass_default_wbits((size_t)1 << 20) == 12, "2^20: %u", one_pass_default_wbits((size_t)1 << 20));
    CHECK(one_pass_default_wbits((size_t)1 << 16) == 10, "2^16: %u", one_pass_default_wbits((size_t)1 << 16));
    CHECK(one_pass_wbits_ok(h100, 10) && one_pass_wbits_ok(h100, 27), "10 and 27 bits are in range");
    CHECK(!one_pass_wbits_ok(h100, 9) && !one_pass_wbits_ok(h100, 28), "9 and 28 bits are out of range");

    // the sort's grid: a power of two of at most a third of the SMs and at most a warp
    for (uint32_t sms : {28u, 46u, 84u, 128u, 132u, 170u}) {
        const uint32_t grid = one_pass_plan_of(g1_on(sms), m, 21).sort_grid;
        CHECK(grid >= 1 && !(grid & (grid - 1)) && grid <= 32 && (grid == 1 || grid <= sms / 3) &&
                  (grid * 2 > sms / 3 || grid == 32),
              "%u SMs: a sort grid of %u", sms, grid);
    }

    // the batched H: the compact plan's batches (2^23 at 32 GiB), the lean plan's (2^24), the
    // streamed plan's on a 24 GB card (a third of the domain: 44,739,242), the small sizes'
    for (size_t batch : {(size_t)1 << 16, (size_t)100000, (size_t)1 << 18, (size_t)1 << 20, (size_t)1 << 22,
                         (size_t)1 << 23, (size_t)1 << 24, (size_t)44739242, m})
        check_batched(h100, batch, 17);
    const one_pass_plan compact = one_pass_batched_plan(h100, (size_t)1 << 23, 17);
    CHECK(compact.wbits == 16 && compact.n == ((size_t)1 << 21), "compact batches: %u bits in parts of %zu",
          compact.wbits, compact.n);
    const one_pass_plan lean = one_pass_batched_plan(h100, (size_t)1 << 24, 17);
    CHECK(lean.wbits == 17 && lean.n == ((size_t)1 << 22), "lean batches: %u bits in parts of %zu", lean.wbits,
          lean.n);
    // a narrower widest window (SNARKFLOW_H_STREAM_WBITS) is kept to; one out of range gives none
    check_batched(h100, (size_t)1 << 23, 13);
    CHECK(one_pass_batched_plan(h100, (size_t)1 << 23, 30).n == 0, "30-bit windows give no plan");

    std::printf("one_pass_plan: %d failures\n", failures);
    return failures ? 1 : 0;
}
