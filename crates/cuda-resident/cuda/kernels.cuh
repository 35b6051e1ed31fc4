// The resident prover's own kernels (included once, by resident.cu): parameter points from the
// file's bytes into blst's layout, the sparse matrix-vector products, the quotient on the coset,
// the gathers and the 0/1 split of a query's scalars.

static __device__ __forceinline__ void be48_to_fp(fp_t& out, const uint8_t* be, bool strip_flags)
{
    uint32_t limb[12];
    #pragma unroll
    for (int i = 0; i < 12; i++) {
        const uint8_t* p = be + 44 - 4 * i;
        uint32_t b0 = p[0];
        if (strip_flags && i == 11)
            b0 &= 0x1f;
        limb[i] = (b0 << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
    }
    out = *reinterpret_cast<const fp_t*>(limb);
    out.to();
}

// Uncompressed points as bellperson writes them (big-endian coordinates, G2 as c1 then c0; the
// infinity flag 0x40 in the first byte) into blst's affine layout (infinity = all zero).
__global__ void g1_from_file(g1_mem_t* out, const uint8_t* raw, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint8_t* p = raw + i * 96;
        fp_t* dst = reinterpret_cast<fp_t*>(&out[i]);
        fp_t x, y;
        be48_to_fp(x, p, true);
        be48_to_fp(y, p + 48, false);
        if (p[0] & 0x40) { x.zero(); y.zero(); }
        dst[0] = x;
        dst[1] = y;
    }
}

__global__ void g2_from_file(g2_mem_t* out, const uint8_t* raw, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint8_t* p = raw + i * 192;
        fp_t* dst = reinterpret_cast<fp_t*>(&out[i]);
        bool inf = p[0] & 0x40;
        // file: x.c1 x.c0 y.c1 y.c0; memory: x.c0 x.c1 y.c0 y.c1
        #pragma unroll
        for (int j = 0; j < 4; j++) {
            fp_t v;
            be48_to_fp(v, p + 48 * (j ^ 1), j == 0 || j == 1);
            if (inf) v.zero();
            dst[j] = v;
        }
    }
}

struct fr_bits { uint64_t l[4]; };

// The witness from its compact form (`snarkflow_prover::compact_witness`): two bits a value in
// `classes` (0 zero, 1 one, 2 neither, its value then in `others` at the word's `word_others`
// plus the number of such values before it in the word). A warp takes 32 words: each lane
// reads one word and its offset (coalesced), then the warp writes the words' values one word
// at a time, a lane a value (coalesced). The inputs may be mapped host memory: they cross the
// bus once, at ~1/40 of the whole witness for a Filecoin partition.
__global__ void expand_witness(fr_bits* out, const uint64_t* classes, const uint32_t* word_others,
                               const fr_bits* others, fr_bits one, size_t n)
{
    const size_t words = (n + 31) / 32;
    const uint32_t lane = threadIdx.x % WARP_SZ;
    const size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / WARP_SZ;
    const size_t warps = (size_t)gridDim.x * blockDim.x / WARP_SZ;
    for (size_t first = warp * WARP_SZ; first < words; first += warps * WARP_SZ) {
        const size_t mine = first + lane;
        const uint64_t my_class = mine < words ? classes[mine] : 0;
        const uint32_t my_offset = mine < words ? word_others[mine] : 0;
        const uint32_t count = (uint32_t)min((size_t)WARP_SZ, words - first);
        for (uint32_t k = 0; k < count; k++) {
            const uint64_t word = __shfl_sync(0xffffffff, my_class, k);
            const uint32_t offset = __shfl_sync(0xffffffff, my_offset, k);
            const size_t i = (first + k) * WARP_SZ + lane;
            if (i >= n)
                continue;
            fr_bits v = {{0, 0, 0, 0}};
            const uint32_t cls = compact_class(word, lane);
            if (cls == 1)
                v = one;
            else if (cls == 2)
                v = others[compact_other(word, lane, offset)];
            out[i] = v;
        }
    }
}


// a ← (a·b − c) / Z on the coset, Z being the constant g^m − 1 there
__global__ void quotient(scalar_t* a, const scalar_t* b, const scalar_t* c, fr_bits z_inv_bits, size_t n)
{
    const scalar_t z_inv = *reinterpret_cast<const scalar_t*>(&z_inv_bits);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        scalar_t x = a[i] * b[i];
        x -= c[i];
        a[i] = x * z_inv;
    }
}

// out ← x·y
__global__ void pointwise_mul(scalar_t* out, const scalar_t* x, const scalar_t* y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = x[i] * y[i];
}

// a ← (a − c)·z
__global__ void sub_scale(scalar_t* a, const scalar_t* c, fr_bits z_bits, size_t n)
{
    const scalar_t z = *reinterpret_cast<const scalar_t*>(&z_bits);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        scalar_t x = a[i];
        x -= c[i];
        a[i] = x * z;
    }
}

__global__ void gather(scalar_t* out, const scalar_t* w, const uint32_t* idx, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = w[idx[i]];
}

// out[k] = w[map[sel[k]]] (w[sel[k]] without a map): the scalars of the selected points
__global__ void gather_selected(scalar_t* out, const scalar_t* w, const uint32_t* map, const uint32_t* sel, size_t n)
{
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        uint32_t i = sel[k];
        out[k] = w[map ? map[i] : i];
    }
}

template<class mem>
__global__ void gather_points(mem* out, const mem* points, const uint32_t* sel, size_t n)
{
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        out[k] = points[sel[k]];
}

// The 0/1 split of a query's scalars s_i = w[map[i]] (w[i] without a map), i < n: the indices
// of the scalars that are 1 are appended to `ones`, of those neither 0 nor 1 prepended to
// `tail` from tail[n − 1] down (one list of n entries holds both: `ones` and `tail` may be the
// same buffer), in no particular order (a sum does not care); counts[0] and counts[1] count them. A warp reserves
// room for its 32 scalars with one atomic per list.
// (`one` is 1 in Montgomery form: sppark's fr_t::is_one does not compile with CUDA 13.0.)
__global__ void split_lists(uint32_t* ones, uint32_t* tail, uint32_t* counts,
                            const scalar_t* w, const uint32_t* map, size_t n, fr_bits one_bits_)
{
    const uint32_t* one_limbs = reinterpret_cast<const uint32_t*>(&one_bits_);
    const uint32_t lane = threadIdx.x % WARP_SZ;
    const uint32_t below = (1u << lane) - 1;
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t base = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) - lane; base < n; base += step) {
        size_t i = base + lane;
        bool one = false, other = false;
        if (i < n) {
            scalar_t v = w[map ? map[i] : i];
            const uint32_t* limb = reinterpret_cast<const uint32_t*>(&v);
            uint32_t diff = 0;
            #pragma unroll
            for (int k = 0; k < 8; k++)
                diff |= limb[k] ^ one_limbs[k];
            one = diff == 0;
            other = !one && !v.is_zero();
        }
        uint32_t one_bits = __ballot_sync(0xffffffff, one);
        uint32_t other_bits = __ballot_sync(0xffffffff, other);
        uint32_t at_one = 0, at_other = 0;
        if (lane == 0) {
            if (one_bits)
                at_one = atomicAdd(&counts[0], __popc(one_bits));
            if (other_bits)
                at_other = atomicAdd(&counts[1], __popc(other_bits));
        }
        at_one = __shfl_sync(0xffffffff, at_one, 0);
        at_other = __shfl_sync(0xffffffff, at_other, 0);
        if (one)
            ones[at_one + __popc(one_bits & below)] = (uint32_t)i;
        if (other)
            tail[n - 1 - (at_other + __popc(other_bits & below))] = (uint32_t)i;
    }
}

// out[k] = points[sel[k]] for k < min(n, *count) (count: a device value; null: n), copying each
// point as 16-byte words with consecutive threads on consecutive words: with the points in
// mapped host memory, a warp then asks PCIe for whole points (a few large reads) instead of one
// small read per limb. Few blocks suffice: the copy waits on PCIe, not on the SMs, which stay
// free for the prove's other kernels.
template<class mem>
__global__ void copy_points(mem* out, const mem* points, const uint32_t* sel, size_t n, const uint32_t* count)
{
    static_assert(sizeof(mem) % 16 == 0, "points are whole 16-byte words");
    const uint32_t words = sizeof(mem) / 16;
    size_t len = n;
    if (count && *count < len)
        len = *count;
    const size_t total = len * words, step = (size_t)gridDim.x * blockDim.x;
    const uint4* in = reinterpret_cast<const uint4*>(points);
    uint4* dst = reinterpret_cast<uint4*>(out);
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < total; t += 4 * step) {
        // four independent loads in flight per thread before the stores
        uint4 v[4];
        #pragma unroll
        for (int u = 0; u < 4; u++) {
            size_t at = t + u * step;
            if (at < total)
                v[u] = in[(size_t)sel[at / words] * words + at % words];
        }
        #pragma unroll
        for (int u = 0; u < 4; u++) {
            size_t at = t + u * step;
            if (at < total)
                dst[at] = v[u];
        }
    }
}

__global__ void iota(uint32_t* out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = (uint32_t)i;
}

// out[k] = how many of the first *total entries fall in chunk k of `chunk` (k < nchunks)
__global__ void chunk_counts(uint32_t* out, const uint32_t* total, uint32_t chunk, uint32_t nchunks)
{
    for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < nchunks; k += gridDim.x * blockDim.x) {
        uint64_t first = (uint64_t)k * chunk, t = *total;
        uint64_t left = t <= first ? 0 : t - first;
        out[k] = (uint32_t)(left < chunk ? left : chunk);
    }
}

