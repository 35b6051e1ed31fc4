// Bucket accumulation in affine coordinates with one inversion per K additions (included by
// msm_one_pass.cuh; G1 only; opt-in: SNARKFLOW_ACCUMULATE=affine).
//
// accumulate_segments adds a point to a bucket in XYZZ coordinates, ~10 field multiplications
// an addition. An affine sum P + Q costs λ = (y_Q − y_P)/(x_Q − x_P), λ², λ·(x_P − x_R): three
// multiplications and one inversion. An inversion is ~30 multiplications on the device, but K
// of them cost one inversion and 3(K − 1) multiplications (Montgomery's trick: invert the
// product of the K denominators, then peel each inverse off with two multiplications), so at
// K = 32 an addition is ~6–7 multiplications against XYZZ's ~10.
//
// The K additions must be independent. A thread here takes K segments of the same layout as
// accumulate_segments (2^seg_bits consecutive sorted entries of one window each, so its heads
// and `join_segments` serve unchanged) and walks them in lockstep: at each step every segment
// with entries left takes its next one, either into its running bucket (an addition, batched)
// or as the start of its next bucket (the finished one written out, as accumulate_segments
// writes it). The K running sums live in local memory (laid out by the compiler so that a
// warp's accesses to the same index coalesce); each step re-reads its points in the second
// pass rather than keeping K of them.
//
// The special cases of affine addition: P = ∞ (the running sum cancelled out, or a point at
// infinity read), Q = P (a doubling, λ = 3x²/2y, batched like an addition: y ≠ 0 on G1, which
// has no point of order 2) and Q = −P (the sum becomes ∞, no inversion).
//
// The inversion (sppark's `reciprocal`) works on pairs of neighbouring lanes, so every thread
// of a warp runs every step, with or without work of its own: no early return or break may go
// into this kernel.
//
// Cost to know before making it a default: the running sums are local memory, ~5.6 KB a
// thread at K = 32, which the driver reserves for every thread the device could hold (~1.5 GB
// on 132 SMs; ~3 GB at K = 64) — a launch on a card with less free than that fails (a hard
// error, not the one-pass driver's fallback). An addition costs 5M + 1S + (2M + an inversion)/K
// against XYZZ's 8M + 2S, and moves ~350–400 B of local memory against ~100 B: whether it pays
// is the device's to say: on one H200 (2026-12-06, docs/benchmarks.md) it was exact and no
// faster — the 32 GiB H MSM 879.7 ms against 917.8, the partition 1,371.5 ms against 1,369.0.

// K, the segments a thread walks together: SNARKFLOW_AFFINE_K=16|32|64 (default 32), for measuring
static uint32_t affine_k()
{
    static const uint32_t k = [] {
        const char* v = getenv("SNARKFLOW_AFFINE_K");
        uint32_t want = v ? (uint32_t)atoi(v) : 32;
        return want == 16 || want == 64 ? want : 32u;
    }();
    return k;
}

// op codes of one segment's step
static const uint8_t AFF_NONE = 0, AFF_ADD = 1, AFF_DBL = 2;

struct affine_lane_xy {
    fp_t x, y;
};

// point `digit & 0x7fffffff` of `points`, negated when the top bit is set
__device__ __forceinline__ affine_lane_xy affine_load(const g1_mem_t* points, uint32_t digit)
{
    const fp_t* xy = reinterpret_cast<const fp_t*>(points + (digit & 0x7fffffff));
    affine_lane_xy p;
    p.x = xy[0];
    p.y = xy[1];
    p.y.cneg(digit >> 31);
    return p;
}

template<uint32_t K>
__launch_bounds__(128) __global__
void accumulate_affine(bucket_t::mem_t* buckets, bucket_t::mem_t* heads, uint32_t nwins, uint32_t row_bits,
                       uint32_t seg_bits, uint32_t segs, const g1_mem_t* points, const vec2d_t<uint32_t> digits,
                       const vec2d_t<uint32_t> hist)
{
    const size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t total = (size_t)nwins * segs;
    const uint32_t last = (1u << row_bits) - 1;

    // per segment: its running sum (affine, or ∞), the prefix product before its denominator,
    // its window, first entry, next entry, end, and the current bucket [start, stop)
    fp_t ax[K], ay[K], pre[K];
    uint32_t win[K], seg0[K], at[K], end[K], bucket[K], start[K], stop[K];
    bool inf[K], used[K];
    uint8_t op[K];

    // each segment's first entry and its bucket, as accumulate_segments finds them; the entry
    // is the running sum's start
    bool work = false;
    #pragma unroll 1
    for (uint32_t j = 0; j < K; j++) {
        const size_t q = g * K + j;
        at[j] = end[j] = 0;
        used[j] = false;
        if (q >= total)
            continue;
        const uint32_t y = (uint32_t)(q / segs), s = (uint32_t)(q % segs);
        const uint32_t* h = &hist[y][0];
        win[j] = y;
        seg0[j] = s << seg_bits;
        end[j] = min(seg0[j] + (1u << seg_bits), h[last]);
        at[j] = y == 0 ? max(seg0[j], h[0]) : seg0[j];
        if (at[j] >= end[j])
            continue;
        uint32_t x = 0, hi = last;
        while (x < hi) {
            uint32_t mid = (x + hi) / 2;
            if (h[mid] > at[j])
                hi = mid;
            else
                x = mid + 1;
        }
        bucket[j] = x;
        start[j] = x ? h[x - 1] : 0;
        stop[j] = h[x];
        affine_lane_xy p = affine_load(points, digits[y][at[j]]);
        ax[j] = p.x;
        ay[j] = p.y;
        inf[j] = (p.x.is_zero() && p.y.is_zero());
        used[j] = true;
        at[j]++;
        work |= at[j] < end[j];
    }

    // the finished bucket of segment j: its first part to the bucket, a later one to the head
    auto flush = [&](uint32_t j) {
        bucket_t b(ax[j], ay[j], inf[j]);
        if (start[j] < seg0[j])
            heads[g * K + j] = b;
        else
            buckets[((size_t)win[j] << row_bits) + bucket[j]] = b;
    };

    #pragma unroll 1
    while (__any_sync(0xffffffff, work)) {
        // first pass: each segment's next entry; the denominators' running product
        fp_t run = fp_t::one();
        work = false;
        #pragma unroll 1
        for (uint32_t j = 0; j < K; j++) {
            op[j] = AFF_NONE;
            if (at[j] >= end[j])
                continue;
            affine_lane_xy p = affine_load(points, digits[win[j]][at[j]]);
            if (at[j] >= stop[j]) {
                // the first entry of the segment's next bucket with entries
                flush(j);
                const uint32_t* h = &hist[win[j]][0];
                uint32_t x = bucket[j];
                do
                    x++;
                while (h[x] == stop[j]);
                bucket[j] = x;
                start[j] = stop[j];
                stop[j] = h[x];
                ax[j] = p.x;
                ay[j] = p.y;
                inf[j] = (p.x.is_zero() && p.y.is_zero());
            } else if ((p.x.is_zero() && p.y.is_zero())) {
                // a point at infinity adds nothing
            } else if (inf[j]) {
                ax[j] = p.x;
                ay[j] = p.y;
                inf[j] = false;
            } else {
                fp_t den = p.x - ax[j];
                if (!den.is_zero()) {
                    op[j] = AFF_ADD;
                } else if ((p.y - ay[j]).is_zero()) {
                    op[j] = AFF_DBL;
                    den = ay[j] + ay[j];
                } else {
                    inf[j] = true;   // P + (−P)
                }
                if (op[j] != AFF_NONE) {
                    pre[j] = run;
                    run *= den;
                }
            }
            if (op[j] == AFF_NONE)
                at[j]++;
            work |= (op[j] == AFF_NONE ? at[j] : at[j] + 1) < end[j];
        }

        // one inversion for the step, by every lane of the warp (it works on pairs of lanes)
        __syncwarp();
        fp_t inv = run.reciprocal();

        // second pass, last to first: each denominator's inverse peeled off the product's
        #pragma unroll 1
        for (uint32_t j = K; j-- > 0;) {
            if (op[j] == AFF_NONE)
                continue;
            affine_lane_xy p = affine_load(points, digits[win[j]][at[j]]);
            const fp_t x1 = ax[j], y1 = ay[j];
            fp_t num, den;
            if (op[j] == AFF_ADD) {
                num = p.y - y1;
                den = p.x - x1;
            } else {
                num = sqr(x1);
                num = num + num + num;
                den = y1 + y1;
            }
            const fp_t lambda = num * (inv * pre[j]);
            inv *= den;
            const fp_t x3 = sqr(lambda) - x1 - p.x;
            ay[j] = lambda * (x1 - x3) - y1;
            ax[j] = x3;
            at[j]++;
        }
    }

    #pragma unroll 1
    for (uint32_t j = 0; j < K; j++)
        if (used[j])
            flush(j);
}
