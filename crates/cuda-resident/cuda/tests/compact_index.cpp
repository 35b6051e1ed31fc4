// The compact witness's decoding (compact_index.h), run on the host: for class words of every
// kind (all zeros, all ones, all neither, alternating, random at several densities), each value
// of class 2 must be given the index a sequential walk over the witness gives it, and every
// value its class. Exit status 0 when all hold. Built and run by tests/host_checks.rs.
#include <cstdio>
#include <random>
#include <vector>

#include "../compact_index.h"
#include "check.h"

// a witness of `classes` (one per value, 0–2), packed as the encoder packs it, decoded value by
// value against a running count of the values that are neither
static void check_witness(const std::vector<uint32_t>& classes)
{
    const size_t words = (classes.size() + 31) / 32;
    std::vector<uint64_t> packed(words, 0);
    std::vector<uint32_t> offsets(words, 0);
    for (size_t i = 0; i < classes.size(); i++)
        packed[i / 32] |= (uint64_t)classes[i] << (2 * (i % 32));
    uint32_t seen = 0;
    for (size_t w = 0; w < words; w++) {
        offsets[w] = seen;
        for (size_t i = w * 32; i < classes.size() && i < (w + 1) * 32; i++)
            seen += classes[i] == 2;
    }
    uint64_t next = 0;
    for (size_t i = 0; i < classes.size(); i++) {
        const uint32_t at = (uint32_t)(i % 32);
        const uint32_t cls = compact_class(packed[i / 32], at);
        CHECK(cls == classes[i], "value %zu: class %u, written %u", i, cls, classes[i]);
        if (classes[i] == 2) {
            const uint64_t got = compact_other(packed[i / 32], at, offsets[i / 32]);
            CHECK(got == next, "value %zu: other %llu, expected %llu", i, (unsigned long long)got,
                  (unsigned long long)next);
            next++;
        }
    }
}

int main()
{
    std::mt19937_64 rng(7);
    size_t witnesses = 0;
    for (size_t len : {1, 31, 32, 33, 64, 1000, 4096 + 17}) {
        for (uint32_t only = 0; only < 3; only++) {
            check_witness(std::vector<uint32_t>(len, only));
            witnesses++;
        }
        std::vector<uint32_t> alternating(len);
        for (size_t i = 0; i < len; i++)
            alternating[i] = i % 2 ? 2 : (uint32_t)(i % 3 == 0);
        check_witness(alternating);
        witnesses++;
        // Filecoin-like (1 % neither) to dense (90 %)
        for (uint32_t per_mille : {10, 130, 500, 900}) {
            std::vector<uint32_t> random(len);
            for (auto& c : random)
                c = rng() % 1000 < per_mille ? 2 : (uint32_t)(rng() & 1);
            check_witness(random);
            witnesses++;
        }
    }
    std::printf("compact_index: %zu witnesses, %d failures\n", witnesses, failures);
    return failures ? 1 : 0;
}
