// The digits of one scalar for the one-pass MSM's windows (one_pass_plan.h), in the encoding
// sppark's `breakdown` and `sort` agree on: 0, or a signed digit d as a 32-bit word whose low
// `bits` bits are |d| (d > 0: d itself; d < 0: 0 − (2^bits − |d|), its two's complement), with the
// top bit flipped when the scalar was negated. Plain C++ so that tests/one_pass_digits.cpp
// checks on the host that the digits add back up to the scalar; one_pass_breakdown (the wide
// top window, msm_one_pass.cuh) makes its digits with it.
#pragma once
#include <cstdint>

#include "host_device.h"

// 32 bits of a scalar of 8 little-endian 32-bit limbs from bit `off` (0 past the top);
// `limb(i)` reads limb i
template<class Limb>
SF_HD uint32_t scalar_bits_at(const Limb& limb, uint32_t off)
{
    const uint32_t i = off / 32, s = off % 32;
    uint64_t v = limb(i);
    if (i + 1 < 8)
        v |= (uint64_t)limb(i + 1) << 32;
    return (uint32_t)(v >> s);
}

// The digit of the window of `bits` bits that starts at bit `start` (> 0): its bits and the
// bit below, rounded (a Booth digit), signed by the window's top bit read: −2^(bits−1) … 2^(bits−1).
// A window whose top bit is past the scalar's (the top one) is never negative.
SF_HD uint32_t booth_digit(uint32_t read, uint32_t bits)
{
    const uint32_t mask = 0xffffffffu >> (31 - bits);   // bits + 1 of them
    const uint32_t sign = (read >> bits) & 1;
    const uint32_t v = ((read + 1) & mask) >> 1;
    return sign ? 0u - v : v;
}

// Window `win` of a plan of `nwins` windows of `wbits` bits whose top one is `top_bits` wide
// (wider than the others when widened, or the same): its digit, with `negated` (0 or 1 << 31)
// flipped into a digit that is not 0.
template<class Limb>
SF_HD uint32_t window_digit(const Limb& limb, uint32_t win, uint32_t nwins, uint32_t wbits, uint32_t top_bits,
                            uint32_t negated)
{
    const uint32_t bits = win == nwins - 1 ? top_bits : wbits;
    const uint32_t read = win == 0 ? limb(0) << 1 : scalar_bits_at(limb, win * wbits - 1);
    const uint32_t d = booth_digit(read, bits);
    return d ? d ^ negated : 0;
}
