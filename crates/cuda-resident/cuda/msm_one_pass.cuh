// A Pippenger MSM for one large query whose points and scalars are both on the device (the H
// query): sppark's kernels — digit breakdown, radix sort, bucket accumulation, batch addition —
// scheduled here as one pass over all points on the caller's stream, with a bucket reduction of
// our own. Included by device_types.cuh (it uses its dbuf, check and TRACE).
//
// Why not sppark's msm_t::invoke for H: at 2^27 points it picks 18-bit windows and cuts the
// points into 8 batches; after each batch the host waits for `integrate` (one block per window,
// 15 of the H200's 132 SMs busy) and a copy back, ~19 ms a batch, and nothing of H can be queued
// before h exists on the host's side. Here:
//   - one batch: the digits of all points stay in device memory (4 bytes per point and window);
//   - wider windows when the points are many (fewer windows, fewer bucket additions: the
//     accumulation is ~85 % of the MSM), chosen by `one_pass_plan`;
//   - the buckets reduced by `reduce_runs`, one thread per run of RUN buckets over all SMs;
//   - every kernel queued on one stream with no host wait, so the MSM runs right behind the
//     NTTs that make h; the host reads back a few thousand run sums at the end.
//
// The layout the kernels agree on (sppark's sort): in window y a digit d ≥ 1 lands in a bucket
// x ∈ [(d−1)·2^shift, d·2^shift); shift is 0 except in the top window, which has fewer bits and
// spreads each digit over 2^shift buckets (shift = wbits − its bits). Bucket 0 of window 0 is
// left empty by `accumulate` and its points summed by `batch_addition` (the "ones"). So window
// y's sum is Σ_x ((x >> shift) + 1)·B_x, and the MSM is Σ_y 2^(y·wbits)·W_y + ones.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "steps.cuh"   // steps(): each step of a prove timed, when tracing
#include "one_pass_plan.h"   // RUN_BITS, SORT_ROWS, one_pass_plan and its arithmetic
#include "one_pass_digits.h"   // a scalar's digits for the wide top window
#include "one_pass_windows.h"   // a window's sum from its runs, in parts
#include "msm_segments.cuh"
#include "msm_affine.cuh"

// SNARKFLOW_ACCUMULATE=sppark adds the buckets up with sppark's `accumulate` (a thread a
// bucket) instead of in equal segments (msm_segments.cuh), and sends the tail MSMs back to
// sppark's msm_t: for measuring (docs/benchmarks.md, "Buckets added in equal segments")
static bool sppark_accumulate()
{
    static const bool on = env_is("SNARKFLOW_ACCUMULATE", "sppark");
    return on;
}

// SNARKFLOW_ACCUMULATE=affine adds the G1 MSMs' segments in affine coordinates, K at a time
// with one inversion (msm_affine.cuh); G2 keeps XYZZ. Opt-in: exact, but no faster on the H200.
static bool affine_accumulate()
{
    static const bool on = env_is("SNARKFLOW_ACCUMULATE", "affine");
    return on;
}

// Queue the segments' accumulation in affine coordinates where the bucket type has it (G1):
// false, with nothing queued, for the others.
template<class bucket, class mem>
static bool queue_affine(stream_t&, typename bucket::mem_t*, typename bucket::mem_t*, uint32_t, uint32_t, uint32_t,
                         uint32_t, const mem*, const vec2d_t<uint32_t>&, const vec2d_t<uint32_t>&)
{
    return false;
}

template<>
bool queue_affine<bucket_t, g1_mem_t>(stream_t& s, bucket_t::mem_t* buckets, bucket_t::mem_t* heads, uint32_t nwins,
                                      uint32_t row_bits, uint32_t seg_bits, uint32_t segs, const g1_mem_t* points,
                                      const vec2d_t<uint32_t>& digits, const vec2d_t<uint32_t>& hist)
{
    if (!affine_accumulate())
        return false;
    const uint32_t k = affine_k();
    const size_t threads = ((size_t)nwins * segs + k - 1) / k;
    const uint32_t blocks = (uint32_t)((threads + 127) / 128);
    auto kernel = k == 16 ? accumulate_affine<16> : k == 64 ? accumulate_affine<64> : accumulate_affine<32>;
    kernel<<<blocks, 128, 0, s>>>(buckets, heads, nwins, row_bits, seg_bits, segs, points, digits, hist);
    return true;
}

// Threads a block of reduce_runs. Each thread adds its run's RUN buckets one after another (a
// chain of dependent additions, latency-bound), and at 2^27 points there are ~26 K to ~39 K runs
// (one per 512 buckets): blocks of 256 left 28 of an H100's 132 SMs without one and, for the wide
// top window's 38,912 runs, did not fit one wave (2026-12-07: 41–45 ms against 21–24). Small
// blocks spread the runs over every SM in one wave.
static const uint32_t REDUCE_BLOCK = 64;

// One thread per run of RUN buckets starting at x0: out[2g] = Σ_k B_{x0+k}·#{j ∈ [x0, x0+k] :
// j ≡ 0 mod 2^shift}, out[2g+1] = Σ_k B_{x0+k}. The part of each bucket's weight that comes from
// below x0 is the same for the whole run and is added on the host (`window_sum`).
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(REDUCE_BLOCK) __global__
void reduce_runs(bucket_h* out, const bucket_h* buckets, uint32_t nwins, uint32_t row_bits, uint32_t top_row_bits,
                 uint32_t top_shift)
{
    const uint32_t run_bits_of_row = row_bits - RUN_BITS;
    size_t g = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / bucket_t::degree;
    if (g >= ((size_t)(nwins - 1) << run_bits_of_row) + ((size_t)1 << (top_row_bits - RUN_BITS)))
        return;
    // the top window's runs follow the other rows' (its row may be longer: one_pass_plan)
    uint32_t y = (uint32_t)min(g >> run_bits_of_row, (size_t)nwins - 1);
    uint32_t x0 = (uint32_t)(g - ((size_t)y << run_bits_of_row)) << RUN_BITS;
    uint32_t mask = y == nwins - 1 ? (1u << top_shift) - 1 : 0;
    const bucket_h* row = buckets + ((size_t)y << row_bits);
    bucket_t acc, res;
    acc.inf();
    res.inf();
    #pragma unroll 1
    for (uint32_t k = RUN; k-- > 0;) {
        bucket_t b = row[x0 + k];
        acc.add(b);
        if (((x0 + k) & mask) == 0)
            res.add(acc);
    }
    out[2 * g] = res;
    out[2 * g + 1] = acc;
}

// SNARKFLOW_MSM_WBITS, for measuring: a comma-separated list of window widths taken in turn by
// successive H MSMs of the process, `sppark` for sppark's msm_t after h (the path before this
// file); 0 (and unset) is `one_pass_plan_for`'s own choice, -1 sppark's.
static int h_msm_wbits()
{
    static env_turns turns(env_int_list("SNARKFLOW_MSM_WBITS", "sppark", -1));
    return turns.take(0);
}

// SNARKFLOW_SEGMENTS_PREFETCH, for measuring: a list of 0/1 that successive H MSMs of the process
// take in turn; 1 accumulates their buckets with accumulate_segments' prefetching variant.
static bool segments_prefetch()
{
    static env_turns turns(env_int_list("SNARKFLOW_SEGMENTS_PREFETCH"));
    return turns.take(0) == 1;
}

// SNARKFLOW_SEGMENTS_WARPS, for measuring: a list of warps an SM (8, 12, 16: queue_segments)
// that successive H MSMs of the process take in turn; unset, 8.
static uint32_t segments_warps()
{
    static env_turns turns(env_int_list("SNARKFLOW_SEGMENTS_WARPS"));
    return (uint32_t)turns.take(8);
}

// SNARKFLOW_H_WIDE_TOP, for measuring: a list of 0/1 that successive H MSMs of the process take
// in turn; 1 folds the H MSM's narrow top window into the one below (one_pass_widen) where the
// plan allows it (not with SNARKFLOW_ACCUMULATE set).
static bool h_wide_top()
{
    static env_turns turns(env_int_list("SNARKFLOW_H_WIDE_TOP"));
    return turns.take(0) == 1 && !sppark_accumulate() && !affine_accumulate();
}

// Per-warp sums of window 0's first bucket (sppark's batch_addition, as for the sums of the ones)
static size_t ones_slots(const gpu_t& gpu) { return (size_t)gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ; }

// What one_pass_plan.h's arithmetic needs of this device and the curve (buckets of
// `bucket_bytes`; the plan itself does not depend on them)
static one_pass_dims one_pass_dims_of(const gpu_t& gpu, size_t bucket_bytes)
{
    return one_pass_dims{(uint32_t)gpu.sm_count(), (uint32_t)scalar_t::bit_length(), DIGIT_BITS, WARP_SZ,
                         bucket_bytes, ones_slots(gpu)};
}

// Window width: `wbits` when not 0, else one_pass_default_wbits (21 bits from 2^25 points up).
static one_pass_plan one_pass_plan_for(const gpu_t& gpu, size_t n, uint32_t wbits)
{
    if (wbits == 0)
        wbits = one_pass_default_wbits(n);
    const one_pass_dims d = one_pass_dims_of(gpu, 0);
    if (!one_pass_wbits_ok(d, wbits))
        throw sf_error(-1, "MSM window width out of range: " + std::to_string(wbits));
    return one_pass_plan_of(d, n, wbits);
}

// Device buffers of the one-pass MSM, kept between proves (sized by the largest n seen).
struct one_pass_work {
    // `part`: a later batch's buckets, added to `buckets` by join_segments (batched MSMs only)
    dbuf digits, temps, hist, buckets, part, ones, runs;
    // the bytes of a plan whose buffers did not fit on the device (0: none): a plan of as many
    // or more is not tried again (a smaller one, e.g. without a wide top window, still is)
    size_t refused_bytes = 0;

    void release()
    {
        digits.release(); temps.release(); hist.release();
        buckets.release(); part.release(); ones.release(); runs.release();
        refused_bytes = 0;   // after an eviction there may be room again
    }
};

// The bytes `one_pass_reserve` allocates for `p` (`batched`: a later batch's buckets and the
// second half of `ones` too).
template<class bucket>
static size_t one_pass_bytes(const gpu_t& gpu, const one_pass_plan& p, bool batched)
{
    return one_pass_bytes_of(one_pass_dims_of(gpu, sizeof(typename bucket::mem_t)), p, batched);
}

// Allocate `p`'s buffers (kept for later proves). False, with nothing kept, when the device has
// no room for them (~13.6 GiB at 2^27 points and 21-bit windows): the caller then runs sppark's
// batched MSM, which needs ~1.6 GiB — an 80 GB device holding a 32 GiB PoRep key (53 GiB) and
// the other per-proof buffers has room for that one only.
template<class bucket>
static bool one_pass_reserve(const gpu_t& gpu, one_pass_work& w, const one_pass_plan& p, bool batched = false)
{
    if (p.n == 0)
        return true;
    const one_pass_sizes z = one_pass_sizes_of(one_pass_dims_of(gpu, sizeof(typename bucket::mem_t)), p, batched);
    if (w.refused_bytes != 0 && z.total() >= w.refused_bytes)
        return false;
    try {
        w.digits.ensure(z.digits, "allocating the MSM digits");
        w.temps.ensure(z.temps, "allocating the MSM sort space");
        w.hist.ensure(z.hist, "allocating the MSM histogram");
        w.buckets.ensure(z.buckets, "allocating the MSM buckets");
        if (batched)
            w.part.ensure(z.part, "allocating the MSM's batch buckets");
        w.ones.ensure(z.ones, "allocating the MSM buckets");
        w.runs.ensure(z.runs, "allocating the MSM buckets");
        return true;
    } catch (const sf_error& e) {
        if (e.code != cudaErrorMemoryAllocation)
            throw;
        (void)cudaGetLastError();   // not sticky: clear it
        w.release();
        w.refused_bytes = z.total();
        fprintf(stderr,
                "resident: no device memory for the one-pass MSM of %zu points (%s); using sppark's batched MSM for it\n",
                p.n, e.what());
        return false;
    }
}

// sums[i] += more[i], i < n. `bucket::degree` threads per sum (sppark spreads an Fp2 over a
// pair of lanes, which must run the same instructions): one pass, no loop, and the threads past
// n compute on sum 0 without storing, so every lane of a warp takes the same path.
template<class bucket>
__global__ void add_sums(typename bucket::mem_t* sums, const typename bucket::mem_t* more, size_t n)
{
    const size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / bucket::degree;
    const bool in = i < n;
    const size_t at = in ? i : 0;
    bucket acc = sums[at];
    bucket b = more[at];
    acc.uadd(b);
    if (in)
        sums[i] = acc;
}

// The digits of a plan whose top window is wider than the others (one_pass_widen), in the
// encoding of sppark's `breakdown` (which makes windows of one width): from the scalar or its
// negation, whichever is smaller (below r/2 < 2^254, so the top digit is never negative), by
// one_pass_digits.h. One thread a scalar, a block's scalars transposed in shared memory so that
// a window's read indexes no per-thread array.
__launch_bounds__(1024) __global__
void one_pass_breakdown(vec2d_t<uint32_t> digits, const scalar_t* scalars, size_t len, uint32_t nwins, uint32_t wbits,
                        uint32_t top_bits)
{
#ifdef __CUDA_ARCH__   // (on the host fr_t is blst's type, without the device's abs and limbs)
    extern __shared__ uint32_t limbs[];   // [8][blockDim.x]
    const auto limb = [&](uint32_t k) { return limbs[k * blockDim.x + threadIdx.x]; };
    #pragma unroll 1
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < len; i += (size_t)gridDim.x * blockDim.x) {
        scalar_t v = scalars[i];
        v.from();
        const uint32_t negated = (uint32_t)v.abs() << 31;
        for (uint32_t k = 0; k < 8; k++)
            limbs[k * blockDim.x + threadIdx.x] = v[k];
        #pragma unroll 1
        for (uint32_t win = 0; win < nwins; win++)
            digits[win][i] = window_digit(limb, win, nwins, wbits, top_bits, negated);
    }
#endif
}

// Queue the bucket accumulation of Σ scalars[i]·points[i], i < len ≤ p.n, on `s` (scalars in
// Montgomery form) into the buffers `one_pass_reserve` made: digits, sort, window 0's first
// bucket (batch_addition into `ones`), the other buckets. With `persist` (a later batch of a
// larger MSM, `one_pass_reserve(…, batched)`) the buckets and the first bucket's sums are added
// to the batches' before instead of replacing them. Nothing is waited for.
template<class bucket, class mem>
static void one_pass_accumulate(const gpu_t& gpu, stream_t& s, one_pass_work& w, const one_pass_plan& p,
                                const mem* points, const scalar_t* scalars, size_t len, bool persist,
                                bool prefetch = false, uint32_t warps = 8)
{
    typedef typename bucket::mem_t bucket_h;
    if (len >= (size_t)1 << 31 || len > p.n)
        throw sf_error(-1, "an MSM batch larger than its plan, or of 2^31 points or more");
    vec2d_t<uint32_t> digits{w.digits.ptr, (uint32_t)p.stride};
    vec2d_t<uint2> temps{w.temps.ptr, (uint32_t)p.stride};
    vec2d_t<uint32_t> hist{w.hist.ptr, (uint32_t)p.row};
    uint32_t nwins = p.nwins, wbits = p.wbits, row_bits = p.row_bits();
    if (p.wide_top() && (persist || sppark_accumulate() || affine_accumulate()))
        throw sf_error(-1, "an MSM plan with a wide top window is for the one-pass segments only");

    if (p.wide_top())
        one_pass_breakdown<<<2 * p.sort_grid, 1024, sizeof(scalar_t) * 1024, s>>>(digits, scalars, len, nwins, wbits,
                                                                                   p.top_bits);
    else
        breakdown<<<2 * p.sort_grid, 1024, sizeof(scalar_t) * 1024, s>>>(digits, scalars, len, nwins, wbits, true);
    check(cudaGetLastError(), "the MSM digits");
    steps().mark(s, "H digits");
    // the full-width windows SORT_ROWS at a time (one per grid row), then the top one alone
    // with its own width and row (its keys spread over the row by top_shift)
    const size_t sort_shared = sizeof(uint32_t) << DIGIT_BITS;
    const uint32_t top = p.top_bits - 1;
    for (uint32_t win = 0; win + 1 < nwins; win += SORT_ROWS) {
        uint32_t rows = std::min(SORT_ROWS, nwins - 1 - win);
        s.launch_coop(sort, {dim3(p.sort_grid, rows), dim3(SORT_BLOCKDIM), sort_shared}, digits, len, win, temps,
                      hist, row_bits, row_bits, row_bits);
    }
    uint32_t last = nwins - 1;
    s.launch_coop(sort, {dim3(p.sort_grid, 1), dim3(SORT_BLOCKDIM), sort_shared}, digits, len, last, temps, hist,
                  p.top_row_bits, top, 0u);
    steps().mark(s, "sort");

    void (*ones)(bucket_h*, const mem*, size_t, const uint32_t*, const uint32_t&) = batch_addition<bucket, mem>;
    // bucket 0 of window 0: the first hist[0][0] sorted digits of window 0 (a count read on the
    // device); a later batch's into the second half of `ones`, then added to the first
    const size_t slots = ones_slots(gpu);
    if (persist && (w.ones.bytes < 2 * slots * sizeof(bucket_h) ||
                    w.part.bytes < p.rows_total() * sizeof(bucket_h)))
        throw sf_error(-1, "an MSM batch added to the buckets before it needs one_pass_reserve(…, batched)");
    bucket_h* ones_into = w.ones.as<bucket_h>() + (persist ? slots : 0);
    ones<<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, s>>>(ones_into, points, len, &digits[0][0], hist[0][0]);
    check(cudaGetLastError(), "the MSM's first bucket");
    if (persist) {
        add_sums<bucket><<<(uint32_t)((slots * bucket::degree + 255) / 256), 256, 0, s>>>(w.ones.as<bucket_h>(),
                                                                                        ones_into, slots);
        check(cudaGetLastError(), "the MSM's first bucket");
    }
    steps().mark(s, "ones");
    if (sppark_accumulate()) {
        if (persist)
            throw sf_error(-1, "sppark's accumulate cannot add to the buckets of a batch before");
        // its own work counter (sppark's msm_t uses 0 and 1), so that it may run beside theirs;
        // only one MSM of this process may use it at a time (the H MSM: see tail_query)
        const uint32_t counter = MSM_NSTREAMS - 1;
        s.launch_coop(accumulate<bucket, mem>, {gpu.sm_count(), 0}, w.buckets.as<bucket_h>(), nwins, wbits,
                      const_cast<mem*>(points), digits, hist, counter);
        return;
    }
    // the segments' heads in the sort space, free once the digits are sorted
    const uint32_t seg_bits = segment_bits<bucket>(nwins, p.stride, w.temps.bytes);
    const uint32_t segs = (uint32_t)((p.stride + ((size_t)1 << seg_bits) - 1) >> seg_bits);
    const uint32_t deg = bucket::degree;
    size_t threads = (size_t)nwins * segs * deg;
    // a later batch into its own buckets, which join_segments adds to the ones carried
    bucket_h* into = persist ? w.part.as<bucket_h>() : w.buckets.as<bucket_h>();
    // (not the affine kernel for a later batch: its local memory is beyond the room the
    // streamed plans keep for this MSM)
    const bool affine = !persist && queue_affine<bucket, mem>(s, into, w.temps.as<bucket_h>(), nwins, row_bits,
                                                             seg_bits, segs, points, digits, hist);
    if (!affine) {
        auto queue = prefetch ? queue_segments<bucket, mem, true> : queue_segments<bucket, mem, false>;
        queue(s, warps, threads, into, w.temps.as<bucket_h>(), nwins, row_bits, p.top_row_bits, seg_bits, segs, points,
              digits, hist);
    }
    check(cudaGetLastError(), "adding up the MSM buckets");
    steps().mark(s, "accumulate");
    threads = p.rows_total() * deg;
    join_segments<bucket><<<(uint32_t)((threads + 255) / 256), 256, 0, s>>>(
        into, w.temps.as<bucket_h>(), nwins, row_bits, p.top_row_bits, seg_bits, segs, hist,
        persist ? w.buckets.as<bucket_h>() : nullptr);
    check(cudaGetLastError(), "joining the MSM buckets");
    steps().mark(s, "join");
}

// Queue the buckets' reduction into runs (`one_pass_collect` reads them).
template<class bucket>
static void one_pass_reduce(stream_t& s, one_pass_work& w, const one_pass_plan& p)
{
    typedef typename bucket::mem_t bucket_h;
    uint32_t blocks = (uint32_t)((p.runs() * bucket::degree + REDUCE_BLOCK - 1) / REDUCE_BLOCK);
    reduce_runs<bucket><<<blocks, REDUCE_BLOCK, 0, s>>>(w.runs.as<bucket_h>(), w.buckets.as<bucket_h>(), p.nwins, p.row_bits(),
                                               p.top_row_bits, p.top_shift());
    check(cudaGetLastError(), "reducing the MSM buckets");
    steps().mark(s, "reduce");
}

// Queue Σ scalars[i]·points[i], i < p.n, on `s` (scalars in Montgomery form), into buffers
// `one_pass_reserve` made. Nothing is waited for; `one_pass_collect` reads the result once `s`
// is done.
template<class bucket, class mem>
static void one_pass_queue(const gpu_t& gpu, stream_t& s, one_pass_work& w, const one_pass_plan& p, const mem* points,
                           const scalar_t* scalars, bool prefetch = false, uint32_t warps = 8)
{
    if (p.n == 0)
        return;
    TRACE("one-pass MSM: %zu points, %u-bit windows (%u, the top one %u bits), %zu runs", p.n, p.wbits, p.nwins,
          p.top_bits, p.runs());
    one_pass_accumulate<bucket, mem>(gpu, s, w, p, points, scalars, p.n, false, prefetch, warps);
    one_pass_reduce<bucket>(s, w, p);
}

// Wait for `s`, read the run sums back and finish on the host: each window's sum (its parts on
// threads of their own), then Horner over the windows, then the ones.
template<class bucket, class point>
static void one_pass_collect(const gpu_t& gpu, stream_t& s, const one_pass_work& w, const one_pass_plan& p, point& out)
{
    typedef typename bucket::mem_t bucket_h;
    out.inf();
    if (p.n == 0)
        return;
    wait_stream(s, "the one-pass MSM");
    std::vector<bucket> runs(2 * p.runs());
    std::vector<bucket> ones(ones_slots(gpu));
#ifndef __CUDA_ARCH__   // on the device an Fp2 bucket is spread over two threads
    static_assert(sizeof(bucket) == sizeof(bucket_h), "buckets cross as they are");
#endif
    check(cudaMemcpy(runs.data(), w.runs.ptr, runs.size() * sizeof(bucket_h), cudaMemcpyDeviceToHost), "reading the MSM runs");
    check(cudaMemcpy(ones.data(), w.ones.ptr, ones.size() * sizeof(bucket_h), cudaMemcpyDeviceToHost), "reading the MSM runs");
    // every window's parts: (window, first run, end), the runs indexed over all windows
    struct part_at {
        uint32_t y;
        size_t a, b;
    };
    std::vector<part_at> at;
    for (uint32_t y = 0; y < p.nwins; y++) {
        const size_t nruns = y == p.nwins - 1 ? p.top_runs() : p.runs_per_row;
        for (size_t a = 0; a < nruns; a += WINDOW_PART)
            at.push_back(part_at{y, a, std::min(nruns, a + WINDOW_PART)});
    }
    std::vector<window_part<bucket>> parts(at.size());
    auto sum_part = [&](size_t i) {
        const uint32_t y = at[i].y;
        const uint32_t shift = y == p.nwins - 1 ? p.top_shift() : 0;
        parts[i] = window_part_sum<bucket>(&runs[2 * y * p.runs_per_row], at[i].a, at[i].b, shift);
    };
    // a thread a part where the windows have thousands of runs (H: 2,048 each at 2^27 points);
    // a tail MSM's few runs cost less than starting the threads
    if (p.runs_per_row >= 256) {
        std::vector<std::thread> threads;
        for (size_t i = 0; i < at.size(); i++)
            threads.emplace_back(sum_part, i);
        for (auto& t : threads)
            t.join();
    } else {
        for (size_t i = 0; i < at.size(); i++)
            sum_part(i);
    }
    std::vector<point> wins(p.nwins);
    for (size_t i = 0; i < at.size();) {
        const uint32_t y = at[i].y;
        size_t j = i;
        while (j < at.size() && at[j].y == y)
            j++;
        const std::vector<window_part<bucket>> own(parts.begin() + i, parts.begin() + j);
        wins[y] = window_sum<bucket, point>(own, y == p.nwins - 1 ? p.top_shift() : 0);
        i = j;
    }
    out = wins[p.nwins - 1];
    for (uint32_t y = p.nwins - 1; y-- > 0;) {
        for (uint32_t i = 0; i < p.wbits; i++)
            out.dbl();
        out.add(wins[y]);
    }
    point first = sum_up(ones);
    out.add(first);
}
