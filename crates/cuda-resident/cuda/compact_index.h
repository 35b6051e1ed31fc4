// Where value i of a compact witness (snarkflow_prover::compact_witness) is, from its class word
// and the word's offset into the values that are neither 0 nor 1: plain C++ so that
// tests/compact_index.cpp checks it on a machine without a GPU (expand_witness and the compact
// plan's SpMV view, compact.cuh, decode through it).
#pragma once
#include <cstdint>

#include "host_device.h"

// class of value `at` (0–31) of a class word: 0 zero, 1 one, 2 neither (3 is never written)
SF_HD uint32_t compact_class(uint64_t word, uint32_t at)
{
    return (uint32_t)(word >> (2 * at)) & 3;
}

// for a value of class 2: its index among the values that are neither, given its word's offset
// (the number of such values in the words before): the offset plus those before it in the word
SF_HD uint64_t compact_other(uint64_t word, uint32_t at, uint32_t word_offset)
{
    const uint64_t below = (1ull << (2 * at)) - 1;
    const uint64_t high = (word >> 1) & 0x5555555555555555ull & below;
#ifdef __CUDA_ARCH__
    return word_offset + (uint64_t)__popcll(high);
#else
    return word_offset + (uint64_t)__builtin_popcountll(high);
#endif
}
