// a, b = A·w, B·w (included once, by resident.cu, after its helpers): the kernels and the call
// that queues one matrix's product on a stream. A folded matrix (sf_fold) stores a repeated
// block once: its rows are made `blocks` times, the columns shifted to each block's variables.

// (spmv_layout, layout_for, fold_col, fold_group, fold_row: fold.cuh, in groups of a warp's rows)
static_assert(FOLD_GROUP == WARP_SZ, "a group of rows is a warp's");

// The witness as the products read it: value i of a whole witness in device memory, or
// (the compact plan, compact.cuh) of its compact form, decoded where it is read.
struct whole_witness {
    const scalar_t* w;
    __device__ __forceinline__ scalar_t operator()(size_t i) const { return w[i]; }
};

// out[r] = Σ_k coeff(k) · w(col(k)) over row r; cols and coeffs hold the non-zeros from `base`
// on (a chunk of rows streamed from the host starts past 0)
template<class W>
__global__ void spmv(scalar_t* out, const uint64_t* row_starts, const uint32_t* cols, const uint32_t* coeffs,
                     const scalar_t* table, uint32_t one, uint32_t minus_one, const W w, const spmv_layout l,
                     uint64_t base)
{
    for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < l.out_rows; r += (size_t)gridDim.x * blockDim.x) {
        scalar_t acc;
        acc.zero();
        uint32_t blk;
        uint64_t at = fold_row(l.f, r, blk);
        uint64_t end = row_starts[at + 1];
        for (uint64_t k = row_starts[at]; k < end; k++) {
            uint32_t ci = coeffs[k - base];
            scalar_t v = w(fold_col(l.f, cols[k - base], blk));
            if (ci == one)
                acc += v;
            else if (ci == minus_one)
                acc -= v;
            else
                acc += v * table[ci];
        }
        out[r] = acc;
    }
}

// The same product with a warp per 32 rows: the warp walks the rows' non-zeros 32 at a time
// (columns and coefficients read coalesced), a lane a term, and a segmented sum across the warp
// adds each row's terms; a row's sums over the chunks gather in shared memory. A thread per row
// (`spmv`) leaves a warp's lanes idle while its longest row runs (the A matrix's rows run from
// one term to hundreds) and reads the non-zeros of 32 rows from 32 places.
static const uint32_t SPMV_WARPS = 8;   // warps per block

// lane `src`'s value of v (every lane of the warp takes part)
__device__ __forceinline__ scalar_t shfl_scalar(const scalar_t& v, uint32_t src)
{
    scalar_t r;
    const uint32_t* from = reinterpret_cast<const uint32_t*>(&v);
    uint32_t* to = reinterpret_cast<uint32_t*>(&r);
    #pragma unroll
    for (size_t i = 0; i < sizeof(scalar_t) / sizeof(uint32_t); i++)
        to[i] = __shfl_sync(0xffffffff, from[i], src);
    return r;
}

template<class W>
__launch_bounds__(SPMV_WARPS * WARP_SZ) __global__
void spmv_warps(scalar_t* out, const uint64_t* row_starts, const uint32_t* cols, const uint32_t* coeffs,
                const scalar_t* table, uint32_t one, uint32_t minus_one, const W w, const spmv_layout l,
                uint64_t base)
{
    // per warp: where its 32 rows start (and the end), and their sums so far
    __shared__ uint64_t bounds[SPMV_WARPS][WARP_SZ + 1];
    __shared__ uint64_t sums_raw[SPMV_WARPS][WARP_SZ][sizeof(scalar_t) / 8];
    const uint32_t lane = threadIdx.x % WARP_SZ, me = threadIdx.x / WARP_SZ;
    uint64_t* bound = bounds[me];
    scalar_t* sums = reinterpret_cast<scalar_t*>(&sums_raw[me][0][0]);
    const size_t warps = (size_t)gridDim.x * blockDim.x / WARP_SZ;
    for (size_t group = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / WARP_SZ; group < l.groups;
         group += warps) {
        uint64_t r0, out0;
        uint32_t nrows, blk;
        fold_group(l, group, r0, out0, nrows, blk);
        // lanes past the last row hold the end, so that no entry lands in them
        bound[lane] = row_starts[r0 + min(lane, nrows)];
        if (lane == 0)
            bound[WARP_SZ] = row_starts[r0 + nrows];
        sums[lane].zero();
        __syncwarp();
        const uint64_t end = bound[WARP_SZ];
        for (uint64_t k0 = bound[0]; k0 < end; k0 += WARP_SZ) {
            const uint64_t k = k0 + lane;
            scalar_t term;
            term.zero();
            uint32_t row = WARP_SZ;   // past the end: a segment of its own, adding nothing
            if (k < end) {
                uint32_t ci = coeffs[k - base];
                scalar_t v = w(fold_col(l.f, cols[k - base], blk));
                if (ci == one)
                    term = v;
                else if (ci == minus_one)
                    term -= v;
                else
                    term = v * table[ci];
                // the last row starting at or before k (an empty row starts where the next does)
                uint32_t lo = 0, hi = WARP_SZ - 1;
                while (lo < hi) {
                    uint32_t mid = (lo + hi + 1) / 2;
                    if (bound[mid] <= k)
                        lo = mid;
                    else
                        hi = mid - 1;
                }
                row = lo;
            }
            // inclusive sums over each run of lanes with the same row (the rows rise with the lanes)
            #pragma unroll
            for (uint32_t d = 1; d < WARP_SZ; d <<= 1) {
                scalar_t other = shfl_scalar(term, lane >= d ? lane - d : lane);
                uint32_t other_row = __shfl_sync(0xffffffff, row, lane >= d ? lane - d : lane);
                if (lane >= d && other_row == row)
                    term += other;
            }
            // the last lane of a row's run holds the run's sum
            uint32_t next_row = __shfl_sync(0xffffffff, row, lane + 1 < WARP_SZ ? lane + 1 : lane);
            if (row < WARP_SZ && (lane == WARP_SZ - 1 || next_row != row))
                sums[row] += term;
            __syncwarp();
        }
        if (lane < nrows)
            out[out0 + lane] = sums[lane];
        __syncwarp();
    }
}

// SNARKFLOW_SPMV=rows multiplies with a thread per row (`spmv`) instead of a warp per 32 rows
// (`spmv_warps`), for measuring (docs/benchmarks.md, "SpMV with a warp per 32 rows")
static bool spmv_by_rows()
{
    static const bool on = env_is("SNARKFLOW_SPMV", "rows");
    return on;
}

// v[r] = row r of a matrix times w, for the `stored` rows of a CSR whose non-zeros start at
// `base`, unfolded by `fold` (blocks = 0: v has the stored rows); `w` a whole_witness, or the
// compact plan's view of a compact one (compact.cuh)
template<class W>
static void queue_spmv(const gpu_t& gpu, stream_t& s, scalar_t* v, const uint64_t* starts, const uint32_t* cols,
                       const uint32_t* coeffs, const sf_shape* sh, const W& w, size_t stored, uint64_t base,
                       const sf_fold& fold)
{
    const spmv_layout l = layout_for(fold, stored);
    uint32_t blocks, threads;
    if (spmv_by_rows()) {
        grid_for(gpu, l.out_rows, blocks, threads);
        spmv<W><<<blocks, threads, 0, s>>>(v, starts, cols, coeffs, sh->table.as<scalar_t>(), sh->one_index,
                                        sh->minus_one_index, w, l, base);
    } else {
        // 32 threads per group of 32 rows (grid_for's blocks are of SPMV_WARPS warps)
        static_assert(SPMV_WARPS * WARP_SZ == 256, "grid_for makes blocks of 256 threads");
        grid_for(gpu, l.groups * WARP_SZ, blocks, threads);
        spmv_warps<W><<<blocks, SPMV_WARPS * WARP_SZ, 0, s>>>(v, starts, cols, coeffs, sh->table.as<scalar_t>(),
                                                           sh->one_index, sh->minus_one_index, w, l, base);
    }
    check(cudaGetLastError(), "a, b, c");
}
