// Bucket accumulation in segments of equal length (included by msm_one_pass.cuh).
//
// sppark's `accumulate` gives each bucket to one thread, which adds the bucket's points one
// after another, so a warp runs as long as its longest bucket: at 2^27 points and 2^20 buckets
// a window the buckets' sizes vary enough to idle ~15 % of the lanes, and a scalar that repeats
// k times — the tails of a Filecoin witness repeat, one value 6,267 times in the 32 GiB
// fixture — is a k-long chain of additions in one bucket of every window.
//
// Here every thread takes the same number of consecutive sorted entries of one window (a
// segment of 2^seg_bits), whatever buckets they fall in. A bucket that lies inside one segment
// is written by that segment's thread. A bucket that crosses segments is summed in parts: the
// part in its first segment is written to the bucket, each later part to that segment's head
// (a segment has at most one: its first run of entries), and `join_segments` (one thread per
// bucket) adds the heads in and clears the empty buckets. The heads live in the sort's space,
// which nothing uses once the digits are sorted.
//
// A batch of a larger MSM whose buckets carry over from the batches before (the H points
// streamed from the host) is accumulated the same way into a second array of buckets, and
// `join_segments` adds each of its buckets to the carried one (`total`): one general addition a
// bucket in a kernel of one thread a bucket, where adding the carried bucket at the end of each
// first part would put a load and a general addition inside the accumulation's divergent loop
// (measured 2.5x slower at 32 entries a bucket). The first part runs without `total`, which
// clears the buckets it leaves empty.
//
// The layout is sppark's (sort.cuh): window y's entries are sorted by bucket, bucket x holding
// entries [hist[y][x−1], hist[y][x]) (hist[y][−1] = 0), each a point index with the sign in its
// top bit; digits that are 0 are not entries. Bucket 0 of window 0 stays the caller's
// (batch_addition), as with sppark's kernel.

// The smallest segment whose heads (one bucket per segment and window) fit in `room` bytes.
template<class bucket>
static uint32_t segment_bits(uint32_t nwins, size_t stride, size_t room)
{
    uint32_t bits = 5;
    while ((size_t)nwins * ((stride + ((size_t)1 << bits) - 1) >> bits) * sizeof(typename bucket::mem_t) > room)
        bits++;
    return bits;
}

// acc += ±p, with the addition sppark's `accumulate` picks for this bucket type and device
template<class bucket_t, class affine_t>
__device__ __forceinline__ void add_point(bucket_t& acc, const affine_t& p, uint32_t negate)
{
    if (sizeof(bucket_t) <= 128 || LARGE_L1_CODE_CACHE)
        acc.add(p, negate);
    else
        acc.uadd(p, negate);
}

// `prefetch` (a measuring variant, SNARKFLOW_SEGMENTS_PREFETCH for the H MSM): each step loads
// the next entry's point before adding the current one, so the gather's latency hides behind
// the addition in every warp, not only behind the other warps' (an SM holds one block of 8 warps
// at this kernel's ~186 registers). BLOCK and MIN_BLOCKS: see queue_segments.
template<class bucket_t, class affine_h, bool prefetch = false, uint32_t BLOCK = 256, uint32_t MIN_BLOCKS = 1,
         class bucket_h = typename bucket_t::mem_t, class affine_t = typename bucket_t::affine_t>
__launch_bounds__(BLOCK, MIN_BLOCKS) __global__
void accumulate_segments(bucket_h* buckets, bucket_h* heads, uint32_t nwins, uint32_t row_bits, uint32_t top_row_bits,
                         uint32_t seg_bits, uint32_t segs, const affine_h* points, const vec2d_t<uint32_t> digits,
                         const vec2d_t<uint32_t> hist)
{
    // an Fp2 bucket is worked on by two neighbouring threads that follow the same path
    const size_t g = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / bucket_t::degree;
    if (g >= (size_t)nwins * segs)
        return;
    const uint32_t y = (uint32_t)(g / segs), s = (uint32_t)(g % segs);
    const uint32_t* h = &hist[y][0];
    const uint32_t last = (1u << (y == nwins - 1 ? top_row_bits : row_bits)) - 1;
    const uint32_t seg_begin = s << seg_bits;
    const uint32_t end = min(seg_begin + (1u << seg_bits), h[last]);
    uint32_t i = y == 0 ? max(seg_begin, h[0]) : seg_begin;
    if (i >= end)
        return;
    // the bucket of entry i: the first x with h[x] > i (h[last] > i, so there is one)
    uint32_t x = 0, hi = last;
    while (x < hi) {
        uint32_t mid = (x + hi) / 2;
        if (h[mid] > i)
            hi = mid;
        else
            x = mid + 1;
    }
    uint32_t start = x ? h[x - 1] : 0, stop = h[x];
    const uint32_t* d = &digits[y][0];
    uint32_t digit = d[i];
    affine_t first = points[digit & 0x7fffffff];
    bucket_t acc;
    acc = first;
    acc.cneg(digit >> 31);
    uint32_t next_digit = 0;
    affine_t next;
    if (prefetch && i + 1 < end) {
        next_digit = d[i + 1];
        next = points[next_digit & 0x7fffffff];
    }
    #pragma unroll 1
    while (++i < end) {
        affine_t p;
        if (prefetch) {
            digit = next_digit;
            p = next;
            if (i + 1 < end) {
                next_digit = d[i + 1];
                next = points[next_digit & 0x7fffffff];
            }
        } else {
            digit = d[i];
            p = points[digit & 0x7fffffff];
        }
        if (i < stop) {
            add_point(acc, p, digit >> 31);
            continue;
        }
        // bucket x is done in this segment: its first part goes to the bucket, a later one to
        // this segment's head
        if (start < seg_begin)
            heads[g] = acc;
        else
            buckets[((size_t)y << row_bits) + x] = acc;
        // the next bucket with entries (it starts at i: the entries are contiguous)
        do
            x++;
        while (h[x] == stop);
        start = stop;
        stop = h[x];
        acc = p;
        acc.cneg(digit >> 31);
    }
    if (start < seg_begin)
        heads[g] = acc;
    else
        buckets[((size_t)y << row_bits) + x] = acc;
}

// Queue accumulate_segments on `threads` threads (`degree` per segment) with `warps` warps an SM
// (rows of 2^row_bits buckets, the top window's of 2^top_row_bits: one_pass_plan).
// The kernel takes 202 registers a thread (CUDA 13, sm_90; 228 with `prefetch`): a sub-partition
// of an SM (16 K registers) holds two of its warps, an SM 8, one block of 256 threads. For
// measuring the H MSM (SNARKFLOW_SEGMENTS_WARPS), G1 buckets only: 12 = blocks of 128 held to
// ≤ 168 registers (three warps a sub-partition, three blocks an SM; ptxas keeps a 24-byte stack,
// 80 with `prefetch`), 16 = blocks of 128 held to ≤ 128 registers (four blocks an SM; more of it
// on the stack); anything else, blocks of 256. Every variant adds the same entries in the same
// order: the buckets are the same bits.
template<class bucket_t, class affine_h, bool prefetch, class bucket_h = typename bucket_t::mem_t>
static void queue_segments(cudaStream_t s, uint32_t warps, size_t threads, bucket_h* buckets, bucket_h* heads,
                           uint32_t nwins, uint32_t row_bits, uint32_t top_row_bits, uint32_t seg_bits, uint32_t segs,
                           const affine_h* points, const vec2d_t<uint32_t>& digits, const vec2d_t<uint32_t>& hist)
{
    const auto launch = [&](auto kernel, uint32_t block) {
        kernel<<<(uint32_t)((threads + block - 1) / block), block, 0, s>>>(buckets, heads, nwins, row_bits, top_row_bits,
                                                                           seg_bits, segs, points, digits, hist);
    };
    if constexpr (bucket_t::degree == 1) {
        if (warps == 12)
            return launch(accumulate_segments<bucket_t, affine_h, prefetch, 128, 3>, 128);
        if (warps == 16)
            return launch(accumulate_segments<bucket_t, affine_h, prefetch, 128, 4>, 128);
    }
    launch(accumulate_segments<bucket_t, affine_h, prefetch>, 256);
}

// One thread per bucket: an empty bucket (and window 0's bucket 0) becomes the point at
// infinity; one that crossed segments gets the heads of the segments after its first. With
// `total` (a later batch), each bucket this batch filled is added to `total`'s, and the empty
// ones leave it as it is.
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(256) __global__
void join_segments(bucket_h* buckets, const bucket_h* heads, uint32_t nwins, uint32_t row_bits, uint32_t top_row_bits,
                   uint32_t seg_bits, uint32_t segs, const vec2d_t<uint32_t> hist, bucket_h* total)
{
    const size_t g = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / bucket_t::degree;
    if (g >= ((size_t)(nwins - 1) << row_bits) + ((size_t)1 << top_row_bits))
        return;
    // the rows below the top one are 2^row_bits long; the top one starts where they end
    const uint32_t y = (uint32_t)min(g >> row_bits, (size_t)nwins - 1);
    const uint32_t x = (uint32_t)(g - ((size_t)y << row_bits));
    const uint32_t* h = &hist[y][0];
    const uint32_t start = x ? h[x - 1] : 0, stop = h[x];
    if (start == stop || (x == 0 && y == 0)) {
        if (total)
            return;
        bucket_t none;
        none.inf();
        buckets[g] = none;
        return;
    }
    const uint32_t s0 = start >> seg_bits, s1 = (stop - 1) >> seg_bits;
    if (s0 == s1 && !total)
        return;
    bucket_t acc = buckets[g];
    const bucket_h* row = heads + (size_t)y * segs;
    #pragma unroll 1
    for (uint32_t s = s0 + 1; s <= s1; s++) {
        bucket_t part = row[s];
        acc.add(part);
    }
    if (total) {
        bucket_t before = total[g];
        acc.add(before);
        total[g] = acc;
    } else {
        buckets[g] = acc;
    }
}
