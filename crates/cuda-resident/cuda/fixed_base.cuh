// The FFI for random parameters on the device (included once, by resident.cu).

// ---------------------------------------------------------------------------------------------
// random parameters: k·G for many k with one fixed base G (the G1 sections of a parameter
// file), written as bellperson's uncompressed big-endian points

static __device__ __forceinline__ void fp_to_be48(uint8_t* be, fp_t v)
{
    v.from();
    const uint32_t* limb = reinterpret_cast<const uint32_t*>(&v);
    #pragma unroll
    for (int i = 0; i < 12; i++) {
        uint8_t* p = be + 44 - 4 * i;
        uint32_t w = limb[i];
        p[0] = w >> 24; p[1] = w >> 16; p[2] = w >> 8; p[3] = w;
    }
}

// `table` holds d·2^(8w)·G for w < 32, d in 1..=255 (entry w·255 + d − 1), affine. In G2 an
// Fp2 coordinate is spread over a pair of neighbouring lanes (sppark's fp2_t: the even lane
// holds c0, the odd lane c1), so DEG lanes make one point; each lane writes its own halves of
// the encoding (blst's order: c1 before c0). Each thread makes FIXED_BASE_BATCH points before
// it converts them to affine with one field inversion between them (Montgomery's trick: the
// inversion costs about as much as the 32 additions of a point). Every lane of a launch must
// reach that inversion (it exchanges values between lanes), so the grid covers whole warps,
// every thread runs the same number of batches, and the surplus slots work on a copy of
// scalar 0.
#define FIXED_BASE_BATCH 8

template<class bucket, class field, int DEG>
__global__ void fixed_base(uint8_t* out, const scalar_t* scalars, size_t n,
                           const typename bucket::affine_t::mem_t* table)
{
    const size_t point_bytes = 96 * DEG;
    const int part = threadIdx.x % DEG;             // which component of an Fp2 this lane holds
    const size_t stride = (size_t)gridDim.x * blockDim.x / DEG;
    const size_t me = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / DEG;
    const size_t rounds = (n + stride - 1) / stride;
    for (size_t first = 0; first < rounds; first += FIXED_BASE_BATCH) {
        bucket acc[FIXED_BASE_BATCH];   // X, Y, ZZZ, ZZ: x = X/ZZ, y = Y/ZZZ
        field prefix[FIXED_BASE_BATCH]; // products of ZZZ·ZZ (1 for the identity) up to each
        #pragma unroll 1
        for (int j = 0; j < FIXED_BASE_BATCH; j++) {
            size_t i = (first + j) * stride + me;
            scalar_t k = scalars[i < n ? i : 0];
            k.from();
            const uint32_t* limb = reinterpret_cast<const uint32_t*>(&k);
            acc[j].inf();
            #pragma unroll 1
            for (int w = 0; w < 32; w++) {
                uint32_t d = (limb[w / 4] >> (8 * (w % 4))) & 0xff;
                if (d) {
                    typename bucket::affine_t p = table[w * 255 + d - 1];
                    acc[j].add(p);
                }
            }
            const field* c = reinterpret_cast<const field*>(&acc[j]);
            field z = c[2] * c[3];
            if (acc[j].is_inf())
                z = field::one();
            prefix[j] = j ? prefix[j - 1] * z : z;
        }
        field inv = 1 / prefix[FIXED_BASE_BATCH - 1];   // 1/(product of all)
        #pragma unroll 1
        for (int j = FIXED_BASE_BATCH - 1; j >= 0; j--) {
            const field* c = reinterpret_cast<const field*>(&acc[j]);
            bool inf = acc[j].is_inf();
            field z = c[2] * c[3];
            if (inf)
                z = field::one();
            field zinv = j ? inv * prefix[j - 1] : inv;  // 1/(ZZZ·ZZ) of this point
            inv = inv * z;                               // 1/(product up to j − 1)
            field x = c[0] * c[2] * zinv;
            field y = c[1] * c[3] * zinv;
            size_t i = (first + j) * stride + me;
            if (i >= n)
                continue;
            uint8_t* p = out + i * point_bytes;
            size_t half = (DEG - 1 - part) * 48;        // where this lane's part of x goes
            if (inf) {
                for (int b = 0; b < 48; b++) p[half + b] = p[48 * DEG + half + b] = 0;
                if (half == 0)
                    p[0] = 0x40;
                continue;
            }
            fp_to_be48(p + half, fp_t(static_cast<const fp_mont&>(x)));
            fp_to_be48(p + 48 * DEG + half, fp_t(static_cast<const fp_mont&>(y)));
        }
    }
}

template<class bucket, class field, int DEG>
static void fixed_base_on(sf_device* d, const void* table, size_t table_bytes, const scalar_t* scalars,
                          size_t n, uint8_t* out)
{
    if (n == 0)
        return;
    const gpu_t& gpu = *d->gpu;
    gpu.select();
    stream_t& s = gpu;
    scoped_dbuf d_table, d_scalars, d_out;
    upload(d_table, table, table_bytes, "uploading the comb table", s);
    upload(d_scalars, scalars, n * sizeof(scalar_t), "uploading scalars", s);
    d_out.ensure(n * 96 * DEG, "allocating points");
    uint32_t threads = 128;
    size_t lanes = n * DEG;
    uint32_t blocks = (uint32_t)std::min<size_t>((lanes + threads - 1) / threads, (size_t)gpu.sm_count() * 16);
    fixed_base<bucket, field, DEG><<<blocks, threads, 0, s>>>(d_out.as<uint8_t>(), d_scalars.as<scalar_t>(), n,
        d_table.as<typename bucket::affine_t::mem_t>());
    check(cudaGetLastError(), "fixed-base multiplication");
    check(cudaMemcpyAsync(out, d_out.ptr, n * 96 * DEG, cudaMemcpyDeviceToHost, s), "downloading points");
    check(cudaStreamSynchronize(s), "fixed-base multiplication");
}

// k·G for the `n` scalars (Montgomery form) into `out` (n · 96 bytes in G1, n · 192 in G2, host
// memory), with the comb table of G (32 · 255 affine points, blst's layout).
SF_FFI RustError::by_value sf_fixed_base_g1(sf_device* d, const g1_mem_t* table, const scalar_t* scalars, size_t n, uint8_t* out)
{
    std::lock_guard<std::mutex> lock(d->busy);
    return guarded([&] {
        fixed_base_on<bucket_t, fp_t, 1>(d, table, 32 * 255 * sizeof(g1_mem_t), scalars, n, out);
    });
}

SF_FFI RustError::by_value sf_fixed_base_g2(sf_device* d, const g2_mem_t* table, const scalar_t* scalars, size_t n, uint8_t* out)
{
    std::lock_guard<std::mutex> lock(d->busy);
    return guarded([&] {
        fixed_base_on<bucket2_t, fp2_t, 2>(d, table, 32 * 255 * sizeof(g2_mem_t), scalars, n, out);
    });
}
