// A scalar's window digits (one_pass_digits.h), run on the host: for the plain 2^27-point plan
// (13 windows of 21 bits, the top one 3), its widened form (12, the top one 24) and other widths,
// the digits of random scalars below r/2 and of the edge values add back up to the scalar (to
// its negation with the negated flag), every digit fits its row's keys, and the wide top digit is
// never negative. Exit status 0 when all hold. Built and run by tests/host_checks.rs.
#include <cstdio>
#include <random>
#include <vector>

#include "../one_pass_digits.h"
#include "../one_pass_plan.h"
#include "check.h"

typedef std::vector<uint32_t> limbs_t;   // 8 little-endian limbs

// r / 2 (rounded down) of BLS12-381's scalar field: sppark's `abs` leaves every scalar below it
// (or at most one unit of its top limb above; the edge cases cover that)
static const limbs_t HALF_R = {0x80000000, 0x7fffffff, 0x7fff2dff, 0xa9ded201, 0x04d0ec02, 0x199cec04, 0x94cebea4,
                               0x39f6d3a9};

// Σ digit·2^start as 16-bit chunks (signed, then carried) against the scalar's own; with
// `negated` every digit's sign is flipped, so −Σ is the scalar
static bool adds_up(const limbs_t& s, const one_pass_plan& p, uint32_t negated, uint32_t* top_digit)
{
    std::vector<int64_t> acc(24, 0);
    const auto limb = [&](uint32_t k) { return s[k]; };
    for (uint32_t win = 0; win < p.nwins; win++) {
        const bool top = win == p.nwins - 1;
        const uint32_t bits = top ? p.top_bits : p.wbits;
        const uint32_t d = window_digit(limb, win, p.nwins, p.wbits, p.top_bits, negated);
        if (d == 0)
            continue;
        // |d| in the low bits, the sign in the top one; the sort's key |d| − 1 must fit the
        // window's keys (the top window's: top_bits − 1 bits, within its row)
        const uint32_t mag = d & ((1u << bits) - 1);
        const uint32_t key_bits = top ? p.top_bits - 1 : p.wbits - 1;
        if (mag == 0 || mag - 1 >= (1u << key_bits) || (top && key_bits > p.top_row_bits))
            return false;
        int64_t value = (d >> 31) ? -(int64_t)mag : (int64_t)mag;
        if (negated)
            value = -value;
        if (top)
            *top_digit = (uint32_t)value;
        const uint32_t start = win * p.wbits;
        acc[start / 16] += value << (start % 16);
    }
    for (size_t i = 0; i + 1 < acc.size(); i++) {
        const int64_t carry = acc[i] >= 0 ? acc[i] >> 16 : -((-acc[i] + 0xffff) >> 16);
        acc[i] -= carry << 16;
        acc[i + 1] += carry;
    }
    for (size_t i = 0; i < acc.size(); i++)
        if (acc[i] != (i < 16 ? (int64_t)((s[i / 2] >> (16 * (i % 2))) & 0xffff) : 0))
            return false;
    return true;
}

static bool below(const limbs_t& a, const limbs_t& b)
{
    for (int k = 7; k >= 0; k--)
        if (a[k] != b[k])
            return a[k] < b[k];
    return false;
}

int main()
{
    const one_pass_dims h100{132, 255, 13, 32, 4 * 48, 132 * 8};
    const size_t m = ((size_t)1 << 27) - 1;
    std::vector<one_pass_plan> plans = {one_pass_plan_of(h100, m, 21), one_pass_widen(h100, one_pass_plan_of(h100, m, 21)),
                                        one_pass_plan_of(h100, 1 << 20, 12), one_pass_widen(h100, one_pass_plan_of(h100, 1 << 20, 12)),
                                        one_pass_widen(h100, one_pass_plan_of(h100, m, 23)), one_pass_plan_of(h100, m, 10)};
    CHECK(plans[1].wide_top() && plans[3].wide_top() && plans[4].wide_top() && !plans[5].wide_top(),
          "the widened plans are wide, 10-bit windows (top 5 bits) are not");
    std::mt19937_64 rng(7);
    std::vector<limbs_t> scalars;
    // edges: 0 and 1 away, r/2, r/2 with its top limb one up (sppark's abs compares top limbs),
    // all ones below bit 224, every window's top bit alone
    scalars.push_back({1, 0, 0, 0, 0, 0, 0, 0});
    scalars.push_back(HALF_R);
    limbs_t up = HALF_R;
    up[7] += 1;
    scalars.push_back(up);
    scalars.push_back({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x39f6d3aa});
    for (uint32_t bit = 0; bit < 254; bit += 7) {
        limbs_t s(8, 0);
        s[bit / 32] = 1u << (bit % 32);
        scalars.push_back(s);
    }
    while (scalars.size() < 20000) {
        limbs_t s(8);
        for (auto& l : s)
            l = (uint32_t)rng();
        s[7] &= 0x3fffffff;
        if (below(s, up) || s == up)
            scalars.push_back(s);
    }
    size_t checked = 0;
    for (const one_pass_plan& p : plans) {
        uint32_t top_max = 0;
        for (const limbs_t& s : scalars) {
            for (uint32_t negated : {0u, 1u << 31}) {
                uint32_t top = 0;
                CHECK(adds_up(s, p, negated, &top), "%u windows of %u, top %u: a scalar's digits do not add up",
                      p.nwins, p.wbits, p.top_bits);
                CHECK(!p.wide_top() || (int32_t)top >= 0, "a wide top digit is negative");
                if (!negated && top > top_max)
                    top_max = top;
                checked++;
            }
        }
        std::printf("%2u windows of %2u bits, top %2u bits (row 2^%u): largest top digit %u\n", p.nwins, p.wbits,
                    p.top_bits, p.top_row_bits, top_max);
    }
    // the widened 2^27 plan's top digit stays below r/2 >> 231 + 1 = 7,597,480
    std::printf("%zu digit sets checked\n", checked);
    std::printf("one_pass_digits: %d failures\n", failures);
    return failures ? 1 : 0;
}
