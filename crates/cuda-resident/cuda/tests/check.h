// The host checks' one assertion (tests/host_checks.rs runs them): CHECK counts a failure and
// prints the first ten; the program exits 1 when `failures` is not 0.
#pragma once
#include <cstdio>

static int failures = 0;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            if (failures++ < 10) {                                                            \
                std::printf("FAIL %s:%d: ", __FILE__, __LINE__);                              \
                std::printf(__VA_ARGS__);                                                     \
                std::printf("\n");                                                            \
            }                                                                                 \
        }                                                                                     \
    } while (0)
