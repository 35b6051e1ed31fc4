// A folded constraint matrix and how the SpMV kernels unfold it (included by device_types.cuh;
// plain C++ so that tests/fold_layout.cpp checks the index arithmetic on a machine without a
// GPU). A shape's repeated blocks are stored once (snarkflow_synthesis::Fold): rows [head_rows,
// head_rows + blocks·rows) are `blocks` copies of the block stored after the head, block k's
// columns in [input_start, input_start + inputs) moved by k·inputs and those in [aux_start,
// aux_start + aux) by k·aux; the rows after the blocks are stored after the one block.
// blocks = 0: not folded (the matrices hold every row).
#pragma once
#include <cstdint>

#include "host_device.h"

struct sf_fold {
    uint64_t head_rows, rows, blocks;
    uint32_t input_start, inputs, aux_start, aux;
};

// Rows of one product: the stored rows and how they unfold into the rows of the result, in
// groups of 32 (a warp's) that never straddle the head, a block or the rows after the blocks.
struct spmv_layout {
    sf_fold f;          // blocks = 0: not folded, every row stored
    uint64_t head;      // stored rows before the block (all of them when not folded)
    uint64_t stored;    // rows stored
    uint64_t out_rows;  // rows of the result
    uint64_t head_groups, block_groups, groups;
};

static const uint32_t FOLD_GROUP = 32;   // rows per group: a warp's

inline spmv_layout layout_for(const sf_fold& f, uint64_t stored)
{
    spmv_layout l{};
    l.f = f;
    l.stored = stored;
    l.head = f.blocks ? f.head_rows : stored;
    l.out_rows = f.blocks ? stored + (f.blocks - 1) * f.rows : stored;
    l.head_groups = (l.head + FOLD_GROUP - 1) / FOLD_GROUP;
    l.block_groups = f.blocks ? (f.rows + FOLD_GROUP - 1) / FOLD_GROUP : 0;
    uint64_t tail = f.blocks ? stored - l.head - f.rows : 0;
    l.groups = l.head_groups + f.blocks * l.block_groups + (tail + FOLD_GROUP - 1) / FOLD_GROUP;
    return l;
}

// block k's column for the stored block's column c (k = 0 outside the blocks)
SF_HD uint32_t fold_col(const sf_fold& f, uint32_t c, uint32_t k)
{
    if (k == 0)
        return c;
    if (c - f.input_start < f.inputs)
        return c + k * f.inputs;
    if (c - f.aux_start < f.aux)
        return c + k * f.aux;
    return c;
}

// group g of 32 rows: its first stored row, its first row of the result, how many rows, its block
SF_HD void fold_group(const spmv_layout& l, uint64_t g, uint64_t& stored, uint64_t& out, uint32_t& n, uint32_t& k)
{
    const sf_fold& f = l.f;
    uint64_t end;
    k = 0;
    if (g < l.head_groups) {
        stored = out = g * FOLD_GROUP;
        end = l.head;
    } else if (g < l.head_groups + f.blocks * l.block_groups) {
        uint64_t q = g - l.head_groups, kb = q / l.block_groups, j = (q - kb * l.block_groups) * FOLD_GROUP;
        k = (uint32_t)kb;
        stored = l.head + j;
        out = l.head + kb * f.rows + j;
        end = l.head + f.rows;
    } else {
        uint64_t j = (g - l.head_groups - f.blocks * l.block_groups) * FOLD_GROUP;
        stored = l.head + f.rows + j;
        out = l.head + f.blocks * f.rows + j;
        end = l.stored;
    }
    n = (uint32_t)(end - stored < FOLD_GROUP ? end - stored : FOLD_GROUP);
}

// where row r of the result is stored, and its block (snarkflow_synthesis::Fold::stored_row)
SF_HD uint64_t fold_row(const sf_fold& f, uint64_t r, uint32_t& k)
{
    k = 0;
    if (f.blocks == 0 || r < f.head_rows)
        return r;
    if (r < f.head_rows + f.blocks * f.rows) {
        k = (uint32_t)((r - f.head_rows) / f.rows);
        return r - (uint64_t)k * f.rows;
    }
    return r - (f.blocks - 1) * f.rows;
}
