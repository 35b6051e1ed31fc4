// The SpMV kernels' unfolding of a folded matrix (fold.cuh), run on the host: for many folds
// (heads, block and tail lengths of 0, 1, 31, 32, 33, … rows; 1 to 5 blocks; unfolded), the
// warp kernel's groups must make every row of the result exactly once, from the stored row and
// block that the thread-per-row kernel's fold_row names, the block within one group the same;
// and fold_col must move exactly the block's own columns. Exit status 0 when all hold. Built
// and run by tests/host_checks.rs.
#include <cstdio>
#include <vector>

#include "../fold.cuh"
#include "check.h"

static void check_layout(const sf_fold& f, uint64_t stored)
{
    const spmv_layout l = layout_for(f, stored);
    std::vector<int> made(l.out_rows, 0);
    for (uint64_t g = 0; g < l.groups; g++) {
        uint64_t s0, o0;
        uint32_t n, k;
        fold_group(l, g, s0, o0, n, k);
        CHECK(n >= 1 && n <= FOLD_GROUP, "group %llu has %u rows", (unsigned long long)g, n);
        for (uint32_t lane = 0; lane < n; lane++) {
            uint64_t out = o0 + lane, at = s0 + lane;
            CHECK(out < l.out_rows && at < stored, "group %llu lane %u: row %llu of %llu, stored %llu of %llu",
                  (unsigned long long)g, lane, (unsigned long long)out, (unsigned long long)l.out_rows,
                  (unsigned long long)at, (unsigned long long)stored);
            if (out >= l.out_rows)
                continue;
            made[out]++;
            uint32_t k_row;
            uint64_t at_row = fold_row(f, out, k_row);
            CHECK(at_row == at && k_row == k, "row %llu: group says stored %llu block %u, fold_row %llu block %u",
                  (unsigned long long)out, (unsigned long long)at, k, (unsigned long long)at_row, k_row);
        }
    }
    for (uint64_t r = 0; r < l.out_rows; r++)
        CHECK(made[r] == 1, "row %llu made %d times (head %llu, rows %llu, blocks %llu, stored %llu)",
              (unsigned long long)r, made[r], (unsigned long long)f.head_rows, (unsigned long long)f.rows,
              (unsigned long long)f.blocks, (unsigned long long)stored);
}

static void check_columns()
{
    // inputs [1, 3) and aux [10, 14) of block 0; 20 columns in all over 3 blocks
    const sf_fold f{0, 1, 3, 1, 2, 10, 4};
    for (uint32_t k = 0; k < 3; k++)
        for (uint32_t c = 0; c < 30; c++) {
            uint32_t want = c;
            if (k && c >= 1 && c < 3)
                want = c + 2 * k;
            else if (k && c >= 10 && c < 14)
                want = c + 4 * k;
            CHECK(fold_col(f, c, k) == want, "column %u of block %u: %u, want %u", c, k, fold_col(f, c, k), want);
        }
}

int main()
{
    const uint64_t lengths[] = {0, 1, 2, 31, 32, 33, 63, 64, 65, 100};
    int layouts = 0;
    for (uint64_t head : lengths)
        for (uint64_t rows : lengths) {
            if (rows == 0)
                continue;
            for (uint64_t tail : lengths)
                for (uint64_t blocks = 1; blocks <= 5; blocks++) {
                    check_layout(sf_fold{head, rows, blocks, 0, 0, 0, 0}, head + rows + tail);
                    layouts++;
                }
        }
    for (uint64_t stored : lengths) {
        check_layout(sf_fold{}, stored);   // not folded
        layouts++;
    }
    check_columns();
    std::printf("%d layouts, %d failures\n", layouts, failures);
    return failures ? 1 : 0;
}
