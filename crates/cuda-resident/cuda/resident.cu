// snarkflow's GPU-resident Groth16 prover (BLS12-381), on sppark's field, curve, NTT and MSM
// templates. What lives on the device and for how long:
//
//   sf_srs    the five point queries of one circuit's parameters (H, L, A, B-G1, B-G2),
//             uploaded once from the parameter file's raw bytes and converted on the device;
//   sf_shape  the constraint matrices A, B, C (compressed rows, coefficient indices into a small
//             table) and the gather lists the A and B queries need (their density);
//   sf_device per-proof buffers (a, b, c, gathered scalars, the 0/1 split), kept between proofs;
//   sf_witness one partition's witness, uploaded on its own stream before its prove (outside the
//             device's prove lock, so the copy overlaps the kernels of the partition before).
//
// One prove: a = A·w, b = B·w, c = C·w (SpMV) and h = (a·b − c)/Z by seven NTTs on one stream,
// while the MSMs of L, A, B-G1 and B-G2 (whose scalars are the witness's own) run beside it;
// then the H MSM over h. All against resident points. The caller assembles the proof from the
// five sums with r and s (a few point operations on the CPU). Nothing here knows Rust types;
// points cross the boundary in blst's memory layout (Montgomery form, Jacobian for results).

#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include <ff/bls12-381.hpp>
#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

// pippenger.cuh instantiates its kernels for these names, so they come first
typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef jacobian_t<fp2_t> point2_t;
typedef xyzz_t<fp2_t> bucket2_t;
typedef bucket2_t::affine_t affine2_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>
#include <ntt/ntt.cuh>

typedef affine_t::mem_t g1_mem_t;
typedef affine2_t::mem_t g2_mem_t;

static_assert(sizeof(g1_mem_t) == 96, "G1 affine in blst's layout");
static_assert(sizeof(g2_mem_t) == 192, "G2 affine in blst's layout");
#ifndef __CUDA_ARCH__   // on the device an Fp2 is spread over two threads
static_assert(sizeof(point_t) == 144, "G1 Jacobian in blst's layout");
static_assert(sizeof(point2_t) == 288, "G2 Jacobian in blst's layout");
#endif
static_assert(sizeof(scalar_t) == 32, "Fr in blst's layout");

#define SF_FFI extern "C" __attribute__((visibility("default")))

// ---------------------------------------------------------------------------------------------
// errors

struct sf_error : std::runtime_error {
    int code;
    sf_error(int c, const std::string& what) : std::runtime_error(what), code(c) {}
};

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess)
        throw sf_error(e, std::string(what) + ": " + cudaGetErrorString(e));
}

template<typename F> static RustError guarded(F f)
{
    try {
        f();
        return RustError{cudaSuccess};
    } catch (const sf_error& e) {
        return RustError{e.code ? e.code : -1, e.what()};
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    } catch (const std::exception& e) {
        return RustError{-1, e.what()};
    }
}

// SNARKFLOW_RESIDENT_TRACE=1 prints each step of a prove to stderr (for debugging the device
// code; the timings come back to the caller either way)
static bool tracing_on()
{
    static const bool on = getenv("SNARKFLOW_RESIDENT_TRACE") != nullptr;
    return on;
}
#define TRACE(...) do { if (tracing_on()) { fprintf(stderr, "resident: " __VA_ARGS__); fputc('\n', stderr); } } while (0)

// ---------------------------------------------------------------------------------------------
// device buffers

struct dbuf {
    void* ptr = nullptr;
    size_t bytes = 0;

    void ensure(size_t want, const char* what)
    {
        if (want <= bytes)
            return;
        release();
        check(cudaMalloc(&ptr, want), what);
        bytes = want;
    }
    void release()
    {
        if (ptr)
            (void)cudaFree(ptr);
        ptr = nullptr;
        bytes = 0;
    }
    template<typename T> T* as() const { return reinterpret_cast<T*>(ptr); }
};

// a dbuf freed when it goes out of scope, errors included (for buffers of one call)
struct scoped_dbuf : dbuf {
    scoped_dbuf() = default;
    scoped_dbuf(const scoped_dbuf&) = delete;
    scoped_dbuf& operator=(const scoped_dbuf&) = delete;
    ~scoped_dbuf() { release(); }
};

#include "msm_one_pass.cuh"

// One query's scalars split three ways: the indices of those that are 1 (`ones`), of those
// that are neither 0 nor 1 (`tail`), and how many of each (`counts`, on the device: [ones,
// tail]; `n_ones`, `n_tail` once read back). Most of a Filecoin witness is bits, and a Pippenger
// MSM pays for every window of a 0 or a 1 as for any other scalar: the ones become a plain sum
// of points, the zeros nothing, and only the tail goes through an MSM.
struct split_t {
    dbuf ones, tail, counts;
    size_t n = 0;
    uint32_t n_ones = 0, n_tail = 0;

    // the tail MSM pays when it skips at least half the points (else: one MSM over all)
    bool used() const { return n_tail <= n / 2; }
    void release() { ones.release(); tail.release(); counts.release(); }
};

// Per-warp partial sums of the points whose scalar is 1 (sppark's batch addition over an index
// list), added up on the host.
struct ones_sum_t {
    dbuf sums;
    size_t nsums = 0;
};

struct sf_device {
    int ordinal;
    const gpu_t* gpu;
    // one prove at a time per device: the MSM objects and these buffers are shared
    std::mutex busy;
    dbuf a, b, c, scalars;
    // The 0/1 split of the L, A and B scalars (see split_t) and the sums of the L, A, B-G1 and
    // B-G2 points whose scalar is 1, made on `side` while a, b, c, the NTTs and the H MSM run
    // on the main stream; the gathered points of the other scalars.
    split_t split[3];
    ones_sum_t ones[4];
    dbuf tail_points;
    cudaStream_t side = nullptr;
    // a, b, c and h (SpMV, the NTTs, the quotient) on a stream of their own, so that the tail
    // MSMs of L, A and B, which need only the witness, run beside them; events time its phases
    stream_t* prep = nullptr;
    cudaEvent_t marks[4] = {nullptr, nullptr, nullptr, nullptr};
    // the H MSM's buffers (msm_one_pass.cuh), queued on `prep` right behind h
    one_pass_work h_msm;
    // recorded on `side` once the three splits are written (the sums of the ones come after)
    cudaEvent_t split_ready = nullptr;

    void release_workspace()
    {
        a.release(); b.release(); c.release(); scalars.release();
        for (auto& sp : split) sp.release();
        for (auto& o : ones) o.sums.release();
        tail_points.release();
        h_msm.release();
    }
};

enum section_t : uint32_t { SEC_H = 0, SEC_L = 1, SEC_A = 2, SEC_B1 = 3, SEC_B2 = 4, SECTIONS = 5 };

struct sf_srs {
    sf_device* dev;
    size_t count[SECTIONS];
    dbuf points[SECTIONS];
    dbuf staging;   // raw file bytes on their way to conversion
};

struct sf_csr {
    const uint64_t* row_starts;   // rows + 1
    const uint32_t* cols;         // nnz, indices into [inputs | aux]
    const uint32_t* coeffs;       // nnz, indices into the coefficient table
    size_t rows;
    size_t nnz;
};

struct sf_shape_desc {
    size_t num_inputs;
    size_t num_aux;
    sf_csr m[3];
    const scalar_t* table;        // coefficient values, Montgomery form
    size_t table_len;
    uint32_t one_index;           // table index of 1 (or UINT32_MAX)
    uint32_t minus_one_index;     // table index of -1 (or UINT32_MAX)
    const uint32_t* a_gather;     // witness indices whose A-query point exists, in point order
    size_t a_gather_len;
    const uint32_t* b_gather;     // the same for the B queries
    size_t b_gather_len;
};

struct dev_csr {
    dbuf row_starts, cols, coeffs;
    size_t rows, nnz;
};

struct sf_shape {
    sf_device* dev;
    size_t num_inputs, num_aux, rows, lg_domain;
    dev_csr m[3];
    dbuf table, a_gather, b_gather;
    size_t table_len, a_gather_len, b_gather_len;
    uint32_t one_index, minus_one_index;
    size_t bytes;
};

struct sf_witness {
    sf_device* dev;
    dbuf buf;
    size_t len = 0;
    cudaStream_t stream = nullptr;
};

// sums of the five queries, in blst's Jacobian layout
struct sf_msm_sums {
    point_t h, l, a, b_g1;
    point2_t b_g2;
};

// milliseconds per phase of one prove: `spmv`, `ntt` and `msm_h` from events on the prep stream
// (device time, beside the tail MSMs; `msm_h` plus its few host milliseconds at the end), the
// tail MSMs by the host clock around their synchronised work, `wait_h` how long the host waited
// for the prep stream (h and the H MSM) once the tails were done, `wait_ones` how long the sums
// of the ones on `side` took past that
struct sf_timings {
    double upload, spmv, ntt, msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2, wait_h, wait_ones, total;
};

// ---------------------------------------------------------------------------------------------
// kernels

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

// out[r] = Σ_k coeff(k) · w[col(k)] over row r
__global__ void spmv(scalar_t* out, const uint64_t* row_starts, const uint32_t* cols, const uint32_t* coeffs,
                     const scalar_t* table, uint32_t one, uint32_t minus_one, const scalar_t* w, size_t rows)
{
    for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < rows; r += (size_t)gridDim.x * blockDim.x) {
        scalar_t acc;
        acc.zero();
        uint64_t end = row_starts[r + 1];
        for (uint64_t k = row_starts[r]; k < end; k++) {
            uint32_t ci = coeffs[k];
            scalar_t v = w[cols[k]];
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

struct fr_bits { uint64_t l[4]; };

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
// of the scalars that are 1 are appended to `ones`, of those neither 0 nor 1 to `tail`, in no
// particular order (a sum does not care); counts[0] and counts[1] count them. A warp reserves
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
            tail[at_other + __popc(other_bits & below)] = (uint32_t)i;
    }
}

// ---------------------------------------------------------------------------------------------
// helpers

static void grid_for(const gpu_t& gpu, size_t n, uint32_t& blocks, uint32_t& threads)
{
    threads = 256;
    size_t want = (n + threads - 1) / threads;
    size_t cap = (size_t)gpu.sm_count() * 8;
    blocks = (uint32_t)std::max<size_t>(1, std::min(want, cap));
}

static void upload(dbuf& dst, const void* src, size_t bytes, const char* what, stream_t& s)
{
    dst.ensure(std::max<size_t>(bytes, 32), what);
    if (bytes)
        check(cudaMemcpyAsync(dst.ptr, src, bytes, cudaMemcpyHostToDevice, s), what);
}

static size_t point_bytes(uint32_t section) { return section == SEC_B2 ? sizeof(g2_mem_t) : sizeof(g1_mem_t); }

using clock_type = std::chrono::steady_clock;
static double ms_since(clock_type::time_point t)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

// ---------------------------------------------------------------------------------------------
// FFI

SF_FFI RustError::by_value sf_device_count(size_t* out)
{
    return guarded([&] {
        int n = 0;
        check(cudaGetDeviceCount(&n), "counting CUDA devices");
        *out = (size_t)n;
    });
}

SF_FFI void sf_device_close(sf_device* d);

SF_FFI RustError::by_value sf_device_open(int ordinal, sf_device** out)
{
    return guarded([&] {
        int n = 0;
        check(cudaGetDeviceCount(&n), "counting CUDA devices");
        if (ordinal < 0 || ordinal >= n)
            throw sf_error(-1, "no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(n) + " visible)");
        const gpu_t& gpu = select_gpu(ordinal);
        gpu.select();
        auto* d = new sf_device();
        d->ordinal = ordinal;
        d->gpu = &gpu;
        cudaError_t e = cudaStreamCreateWithFlags(&d->side, cudaStreamNonBlocking);
        for (auto& ev : d->marks)
            if (e == cudaSuccess)
                e = cudaEventCreate(&ev);
        if (e == cudaSuccess)
            e = cudaEventCreateWithFlags(&d->split_ready, cudaEventDisableTiming);
        if (e != cudaSuccess) {
            sf_device_close(d);
            check(e, "creating the side stream and the phase events");
        }
        try {
            d->prep = new stream_t(gpu.id());
        } catch (...) {
            sf_device_close(d);
            throw;
        }
        *out = d;
    });
}

SF_FFI void sf_device_close(sf_device* d)
{
    if (!d) return;
    d->gpu->select();
    d->release_workspace();
    if (d->side)
        (void)cudaStreamDestroy(d->side);
    for (auto ev : d->marks)
        if (ev)
            (void)cudaEventDestroy(ev);
    if (d->split_ready)
        (void)cudaEventDestroy(d->split_ready);
    delete d->prep;
    delete d;
}

SF_FFI RustError::by_value sf_device_memory(sf_device* d, size_t* free_bytes, size_t* total_bytes)
{
    return guarded([&] {
        d->gpu->select();
        check(cudaMemGetInfo(free_bytes, total_bytes), "reading device memory");
    });
}

SF_FFI void sf_device_release_workspace(sf_device* d)
{
    std::lock_guard<std::mutex> lock(d->busy);
    d->gpu->select();
    d->release_workspace();
}

SF_FFI RustError::by_value sf_pinned_alloc(size_t bytes, void** out)
{
    return guarded([&] { check(cudaHostAlloc(out, std::max<size_t>(bytes, 1), cudaHostAllocPortable), "allocating pinned host memory"); });
}

SF_FFI void sf_pinned_free(void* p)
{
    if (p) (void)cudaFreeHost(p);
}

static void witness_free(sf_witness* w)
{
    w->dev->gpu->select();
    w->buf.release();
    if (w->stream)
        (void)cudaStreamDestroy(w->stream);
    delete w;
}

// Device memory for a witness of up to `capacity` field elements, with its own upload stream.
SF_FFI RustError::by_value sf_witness_new(sf_device* d, size_t capacity, sf_witness** out)
{
    auto* w = new sf_witness();
    w->dev = d;
    RustError e = guarded([&] {
        d->gpu->select();
        check(cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking), "creating a witness upload stream");
        w->buf.ensure(std::max<size_t>(capacity, 1) * sizeof(scalar_t), "allocating device memory for a witness");
    });
    if (e.code != cudaSuccess)
        witness_free(w);
    else
        *out = w;
    return e;
}

// Copy `len` field elements (preferably pinned memory) into the witness and wait for the copy.
// Takes no device lock: it runs while another partition proves.
SF_FFI RustError::by_value sf_witness_upload(sf_witness* w, const scalar_t* host, size_t len)
{
    return guarded([&] {
        if (len * sizeof(scalar_t) > w->buf.bytes)
            throw sf_error(-1, "the witness is larger than its device buffer");
        w->dev->gpu->select();
        w->len = 0;
        check(cudaMemcpyAsync(w->buf.ptr, host, len * sizeof(scalar_t), cudaMemcpyHostToDevice, w->stream), "uploading the witness");
        check(cudaStreamSynchronize(w->stream), "uploading the witness");
        w->len = len;
    });
}

SF_FFI void sf_witness_free(sf_witness* w)
{
    if (w)
        witness_free(w);
}

SF_FFI RustError::by_value sf_srs_new(sf_device* d, const size_t counts[SECTIONS], sf_srs** out)
{
    auto* srs = new sf_srs();
    RustError e = guarded([&] {
        d->gpu->select();
        srs->dev = d;
        for (uint32_t s = 0; s < SECTIONS; s++) {
            srs->count[s] = counts[s];
            srs->points[s].ensure(std::max<size_t>(counts[s], 1) * point_bytes(s), "allocating device memory for the parameters");
        }
    });
    if (e.code != cudaSuccess) {
        for (auto& p : srs->points) p.release();
        delete srs;
    } else {
        *out = srs;
    }
    return e;
}

// Convert `count` raw points of `section`, starting at point `first`, from the parameter
// file's bytes (`raw`, preferably pinned) into resident device memory.
SF_FFI RustError::by_value sf_srs_load(sf_srs* srs, uint32_t section, size_t first, const uint8_t* raw, size_t count)
{
    return guarded([&] {
        if (section >= SECTIONS)
            throw sf_error(-1, "no such parameter section");
        if (first + count > srs->count[section])
            throw sf_error(-1, "more points than the section holds");
        if (count == 0)
            return;
        const gpu_t& gpu = *srs->dev->gpu;
        gpu.select();
        stream_t& s = gpu;
        size_t file_bytes = count * (section == SEC_B2 ? 192 : 96);
        upload(srs->staging, raw, file_bytes, "uploading parameter points", s);
        uint32_t blocks, threads;
        grid_for(gpu, count, blocks, threads);
        if (section == SEC_B2)
            g2_from_file<<<blocks, threads, 0, s>>>(srs->points[section].as<g2_mem_t>() + first, srs->staging.as<uint8_t>(), count);
        else
            g1_from_file<<<blocks, threads, 0, s>>>(srs->points[section].as<g1_mem_t>() + first, srs->staging.as<uint8_t>(), count);
        check(cudaGetLastError(), "converting parameter points");
        check(cudaStreamSynchronize(s), "converting parameter points");
    });
}

SF_FFI void sf_srs_loaded(sf_srs* srs)
{
    srs->dev->gpu->select();
    srs->staging.release();
}

SF_FFI size_t sf_srs_bytes(const sf_srs* srs)
{
    size_t total = 0;
    for (auto& p : srs->points) total += p.bytes;
    return total;
}

SF_FFI void sf_srs_free(sf_srs* srs)
{
    if (!srs) return;
    std::lock_guard<std::mutex> lock(srs->dev->busy);
    srs->dev->gpu->select();
    for (auto& p : srs->points) p.release();
    srs->staging.release();
    delete srs;
}

SF_FFI RustError::by_value sf_shape_new(sf_device* d, const sf_shape_desc* desc, sf_shape** out)
{
    auto* sh = new sf_shape();
    RustError e = guarded([&] {
        const gpu_t& gpu = *d->gpu;
        gpu.select();
        stream_t& s = gpu;
        sh->dev = d;
        sh->num_inputs = desc->num_inputs;
        sh->num_aux = desc->num_aux;
        sh->rows = desc->m[0].rows;
        for (int i = 0; i < 3; i++)
            if (desc->m[i].rows != sh->rows)
                throw sf_error(-1, "the three matrices must have as many rows");
        size_t lg = 0;
        while (((size_t)1 << lg) < sh->rows) lg++;
        if (lg > 31)
            throw sf_error(-1, "too many constraints for the NTT domain");
        sh->lg_domain = lg;
        sh->bytes = 0;
        for (int i = 0; i < 3; i++) {
            const sf_csr& m = desc->m[i];
            dev_csr& dm = sh->m[i];
            dm.rows = m.rows;
            dm.nnz = m.nnz;
            upload(dm.row_starts, m.row_starts, (m.rows + 1) * sizeof(uint64_t), "uploading the constraint shape", s);
            upload(dm.cols, m.cols, m.nnz * sizeof(uint32_t), "uploading the constraint shape", s);
            upload(dm.coeffs, m.coeffs, m.nnz * sizeof(uint32_t), "uploading the constraint shape", s);
            sh->bytes += dm.row_starts.bytes + dm.cols.bytes + dm.coeffs.bytes;
        }
        upload(sh->table, desc->table, desc->table_len * sizeof(scalar_t), "uploading the coefficient table", s);
        upload(sh->a_gather, desc->a_gather, desc->a_gather_len * sizeof(uint32_t), "uploading the A density", s);
        upload(sh->b_gather, desc->b_gather, desc->b_gather_len * sizeof(uint32_t), "uploading the B density", s);
        sh->bytes += sh->table.bytes + sh->a_gather.bytes + sh->b_gather.bytes;
        sh->table_len = desc->table_len;
        sh->a_gather_len = desc->a_gather_len;
        sh->b_gather_len = desc->b_gather_len;
        sh->one_index = desc->one_index;
        sh->minus_one_index = desc->minus_one_index;
        check(cudaStreamSynchronize(s), "uploading the constraint shape");
    });
    if (e.code != cudaSuccess) {
        for (auto& m : sh->m) { m.row_starts.release(); m.cols.release(); m.coeffs.release(); }
        sh->table.release(); sh->a_gather.release(); sh->b_gather.release();
        delete sh;
    } else {
        *out = sh;
    }
    return e;
}

SF_FFI size_t sf_shape_bytes(const sf_shape* sh) { return sh->bytes; }

SF_FFI void sf_shape_free(sf_shape* sh)
{
    if (!sh) return;
    std::lock_guard<std::mutex> lock(sh->dev->busy);
    sh->dev->gpu->select();
    for (auto& m : sh->m) { m.row_starts.release(); m.cols.release(); m.coeffs.release(); }
    sh->table.release(); sh->a_gather.release(); sh->b_gather.release();
    delete sh;
}

template<class bucket, class point, class affine, class mem>
static void msm(const gpu_t& gpu, point& out, const mem* points, const scalar_t* scalars, size_t n, const char* what)
{
    if (n == 0) {
        out.inf();
        return;
    }
    TRACE("%s over %zu points", what, n);
    msm_t<bucket, point, affine, scalar_t> m{nullptr, n, sizeof(affine), gpu.id()};
    // Typed as affine_t (not its mem_t) so that, unwrapped, the call lands on the overload that
    // takes plain pointers: with mem_t the device-pointer template calls itself forever.
    RustError e = m.invoke(out, dev_ptr_t<affine>{reinterpret_cast<affine*>(const_cast<mem*>(points))}, n,
                           dev_ptr_t<scalar_t>{const_cast<scalar_t*>(scalars)}, true);
    if (e.code != cudaSuccess) {
        std::string msg = std::string(what) + ": " + (e.message ? e.message : cudaGetErrorString((cudaError_t)e.code));
        free(e.message);
        throw sf_error(e.code, msg);
    }
}

// Split the scalars w[map[i]], i < n, on `side` (asynchronously: the counts are read back in
// splits_known).
static void split_async(const gpu_t& gpu, cudaStream_t side, split_t& sp, const scalar_t* w, const uint32_t* map, size_t n)
{
    sp.n = n;
    sp.n_ones = sp.n_tail = 0;
    if (n == 0)
        return;
    if (n >= (size_t)1 << 31)
        throw sf_error(-1, "a query of 2^31 points or more");
    sp.ones.ensure(n * sizeof(uint32_t), "allocating the 0/1 split");
    sp.tail.ensure(n * sizeof(uint32_t), "allocating the 0/1 split");
    sp.counts.ensure(2 * sizeof(uint32_t), "allocating the 0/1 split");
    check(cudaMemsetAsync(sp.counts.ptr, 0, 2 * sizeof(uint32_t), side), "clearing the 0/1 split");
    uint32_t blocks, threads;
    grid_for(gpu, n, blocks, threads);
    fr_t one = fr_t::one();
    fr_bits one_bits;
    memcpy(&one_bits, &one, sizeof(one_bits));
    split_lists<<<blocks, threads, 0, side>>>(sp.ones.as<uint32_t>(), sp.tail.as<uint32_t>(), sp.counts.as<uint32_t>(),
                                              w, map, n, one_bits);
    check(cudaGetLastError(), "the 0/1 split");
}

// The points of `points` whose scalar is 1 in `sp`, summed per warp on `side` by sppark's batch
// addition over the index list (not a cooperative launch, so it shares the device with the
// work on the main stream).
template<class bucket, class mem>
static void sum_ones_async(const gpu_t& gpu, cudaStream_t side, ones_sum_t& o, const mem* points, const split_t& sp)
{
    typedef typename bucket::mem_t bucket_h;
    if (sp.n == 0)
        return;
    uint32_t grid = (uint32_t)gpu.sm_count();
    o.nsums = (size_t)grid * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    o.sums.ensure(o.nsums * sizeof(bucket_h), "allocating the sums of the ones");
    void (*add)(bucket_h*, const mem*, size_t, const uint32_t*, const uint32_t&) = batch_addition<bucket, mem>;
    // the count is read on the device: a reference into device memory, as sppark passes it
    const uint32_t& count = *sp.counts.as<uint32_t>();
    add<<<grid, BATCH_ADD_BLOCK_SIZE, 0, side>>>(o.sums.as<bucket_h>(), points, sp.n, sp.ones.as<uint32_t>(), count);
    check(cudaGetLastError(), "summing the points whose scalar is 1");
}

// Σ s_i·P_i over one query, once its split is known, except the sum of the points whose scalar
// is 1 (still being made on `side`; `add_ones` adds it): a Pippenger MSM over the tail's points
// (gathered next to each other), or a plain MSM over all points when the split does not pay.
template<class bucket, class point, class affine, class mem>
static void tail_query(const gpu_t& gpu, sf_device* d, point& out, const mem* points, const split_t& sp,
                       const scalar_t* w, const uint32_t* map, const char* what)
{
    stream_t& s = gpu;
    uint32_t blocks, threads;
    out.inf();
    if (sp.n == 0)
        return;
    TRACE("%s: %zu scalars, %u ones, %u neither 0 nor 1%s", what, sp.n, sp.n_ones, sp.n_tail, sp.used() ? "" : " (not split)");
    if (!sp.used()) {
        const scalar_t* scalars = w;
        if (map) {
            d->scalars.ensure(sp.n * sizeof(scalar_t), "allocating gathered scalars");
            grid_for(gpu, sp.n, blocks, threads);
            gather<<<blocks, threads, 0, s>>>(d->scalars.as<scalar_t>(), w, map, sp.n);
            check(cudaGetLastError(), "gathering scalars");
            scalars = d->scalars.as<scalar_t>();
        }
        // sppark's MSM runs on its own streams: everything above must be done first
        check(cudaStreamSynchronize(s), what);
        msm<bucket, point, affine>(gpu, out, points, scalars, sp.n, what);
        return;
    }
    if (sp.n_tail == 0)
        return;
    d->scalars.ensure(sp.n_tail * sizeof(scalar_t), "allocating gathered scalars");
    d->tail_points.ensure(sp.n_tail * sizeof(mem), what);
    grid_for(gpu, sp.n_tail, blocks, threads);
    gather_selected<<<blocks, threads, 0, s>>>(d->scalars.as<scalar_t>(), w, map, sp.tail.as<uint32_t>(), sp.n_tail);
    gather_points<mem><<<blocks, threads, 0, s>>>(d->tail_points.as<mem>(), points, sp.tail.as<uint32_t>(), sp.n_tail);
    check(cudaGetLastError(), what);
    check(cudaStreamSynchronize(s), what);
    msm<bucket, point, affine>(gpu, out, d->tail_points.as<mem>(), d->scalars.as<scalar_t>(), sp.n_tail, what);
}

// Add the sum of the points whose scalar is 1 to a query's `out`, once `side` is done (only
// where the split was used: otherwise the plain MSM counted them).
template<class bucket, class point>
static void add_ones(point& out, const split_t& sp, const ones_sum_t& o, const char* what)
{
    typedef typename bucket::mem_t bucket_h;
    if (sp.n == 0 || !sp.used())
        return;
    std::vector<bucket> partial(o.nsums);
    check(cudaMemcpy(partial.data(), o.sums.ptr, o.nsums * sizeof(bucket_h), cudaMemcpyDeviceToHost), what);
    point ones = sum_up(partial);
    out.add(ones);
}

// Wait for the splits on `side` (not for the sums of the ones queued after them) and read
// their counts back.
static void splits_known(sf_device* d)
{
    check(cudaEventSynchronize(d->split_ready), "the 0/1 split");
    for (auto& sp : d->split) {
        if (sp.n == 0)
            continue;
        uint32_t counts[2];
        check(cudaMemcpy(counts, sp.counts.ptr, sizeof(counts), cudaMemcpyDeviceToHost), "reading the 0/1 split");
        sp.n_ones = counts[0];
        sp.n_tail = counts[1];
    }
}

// a, b, c = A·w, B·w, C·w (zero beyond the last constraint), then h: to coefficients, to the
// coset g·H, (a·b − c)/Z there, back to coefficients; h ends in `a`. Queued on `d->prep`, with
// `d->marks` recorded at its start, after SpMV and at its end.
static void queue_h(sf_device* d, const sf_shape* sh, const sf_witness* wit)
{
    const gpu_t& gpu = *d->gpu;
    stream_t& s = *d->prep;
    size_t m = (size_t)1 << sh->lg_domain;
    uint32_t blocks, threads;
    check(cudaEventRecord(d->marks[0], s), "timing a, b, c");
    dbuf* abc[3] = {&d->a, &d->b, &d->c};
    grid_for(gpu, sh->rows, blocks, threads);
    for (int i = 0; i < 3; i++) {
        abc[i]->ensure(m * sizeof(scalar_t), "allocating a, b, c");
        scalar_t* v = abc[i]->as<scalar_t>();
        if (m > sh->rows)
            check(cudaMemsetAsync(v + sh->rows, 0, (m - sh->rows) * sizeof(scalar_t), s), "clearing a, b, c");
        const dev_csr& dm = sh->m[i];
        spmv<<<blocks, threads, 0, s>>>(v, dm.row_starts.as<uint64_t>(), dm.cols.as<uint32_t>(), dm.coeffs.as<uint32_t>(),
                                        sh->table.as<scalar_t>(), sh->one_index, sh->minus_one_index,
                                        wit->buf.as<scalar_t>(), sh->rows);
        check(cudaGetLastError(), "a, b, c");
    }
    check(cudaEventRecord(d->marks[1], s), "timing a, b, c");
    uint32_t lg = (uint32_t)sh->lg_domain;
    for (int i = 0; i < 3; i++) {
        scalar_t* v = abc[i]->as<scalar_t>();
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::standard);
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::RN, NTT::Direction::forward, NTT::Type::coset);
    }
    fr_t z = group_gen;
    for (uint32_t i = 0; i < lg; i++) z = z * z;
    z = z - fr_t::one();
    fr_t z_inv = z.reciprocal();
    fr_bits z_bits;
    memcpy(&z_bits, &z_inv, sizeof(z_bits));
    grid_for(gpu, m, blocks, threads);
    quotient<<<blocks, threads, 0, s>>>(d->a.as<scalar_t>(), d->b.as<scalar_t>(), d->c.as<scalar_t>(), z_bits, m);
    check(cudaGetLastError(), "the quotient");
    NTT::Base_dev_ptr(s, d->a.as<scalar_t>(), lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse, NTT::Type::coset);
    check(cudaEventRecord(d->marks[2], s), "timing the NTTs");
}

static double event_ms(cudaEvent_t from, cudaEvent_t to)
{
    float ms = 0;
    check(cudaEventElapsedTime(&ms, from, to), "reading the phase events");
    return ms;
}

// The five MSM sums of one partition whose witness ([inputs | aux], Montgomery form) was
// uploaded into `wit`. Three streams of work: the 0/1 split of the L, A and B scalars, then the
// sums of the points whose scalar is 1 (`side`); a, b, c, h and the H MSM right behind them
// (`prep`); and the tail MSMs of L, A, B-G1 and B-G2 on sppark's streams as soon as the splits
// are known (they need only the witness, so they run beside the other two).
SF_FFI RustError::by_value sf_prove(sf_device* d, const sf_srs* srs, const sf_shape* sh,
                                    const sf_witness* wit, sf_msm_sums* out, sf_timings* t)
{
    std::lock_guard<std::mutex> lock(d->busy);
    return guarded([&] {
        if (srs->dev != d || sh->dev != d || wit->dev != d)
            throw sf_error(-1, "parameters, shape and witness live on different devices");
        if (wit->len != sh->num_inputs + sh->num_aux)
            throw sf_error(-1, "witness length does not match the shape");
        size_t m = (size_t)1 << sh->lg_domain;
        if (srs->count[SEC_H] != m - 1 || srs->count[SEC_L] != sh->num_aux ||
            srs->count[SEC_A] != sh->a_gather_len || srs->count[SEC_B1] != sh->b_gather_len ||
            srs->count[SEC_B2] != sh->b_gather_len)
            throw sf_error(-1, "the parameters were not made for this constraint shape");
        const gpu_t& gpu = *d->gpu;
        gpu.select();
        auto started = clock_type::now();

        TRACE("prove: %zu inputs, %zu aux, %zu rows, domain 2^%zu", sh->num_inputs, sh->num_aux, sh->rows, sh->lg_domain);
        t->upload = 0;   // the caller times the upload, done before this call
        const scalar_t* w = wit->buf.as<scalar_t>();
        const uint32_t* a_map = sh->a_gather.as<uint32_t>();
        const uint32_t* b_map = sh->b_gather.as<uint32_t>();
        split_async(gpu, d->side, d->split[0], w + sh->num_inputs, nullptr, sh->num_aux);
        split_async(gpu, d->side, d->split[1], w, a_map, sh->a_gather_len);
        split_async(gpu, d->side, d->split[2], w, b_map, sh->b_gather_len);
        check(cudaEventRecord(d->split_ready, d->side), "the 0/1 split");
        sum_ones_async<bucket_t>(gpu, d->side, d->ones[0], srs->points[SEC_L].as<g1_mem_t>(), d->split[0]);
        sum_ones_async<bucket_t>(gpu, d->side, d->ones[1], srs->points[SEC_A].as<g1_mem_t>(), d->split[1]);
        sum_ones_async<bucket_t>(gpu, d->side, d->ones[2], srs->points[SEC_B1].as<g1_mem_t>(), d->split[2]);
        sum_ones_async<bucket2_t>(gpu, d->side, d->ones[3], srs->points[SEC_B2].as<g2_mem_t>(), d->split[2]);
        queue_h(d, sh, wit);
        // deg h ≤ m − 2, so the H query has m − 1 points
        const int wbits = h_msm_wbits();
        bool one_pass = wbits >= 0;
        one_pass_plan h_plan;
        if (one_pass) {
            h_plan = one_pass_plan_for(gpu, m - 1, (uint32_t)wbits);
            one_pass = one_pass_reserve(gpu, d->h_msm, h_plan);
        }
        if (one_pass)
            one_pass_queue(gpu, *d->prep, d->h_msm, h_plan, srs->points[SEC_H].as<g1_mem_t>(), d->a.as<scalar_t>());
        check(cudaEventRecord(d->marks[3], *d->prep), "timing the H MSM");
        splits_known(d);

        auto phase = clock_type::now();
        tail_query<bucket_t, point_t, affine_t>(gpu, d, out->l, srs->points[SEC_L].as<g1_mem_t>(), d->split[0],
                                                w + sh->num_inputs, nullptr, "the L MSM");
        t->msm_l = ms_since(phase);
        phase = clock_type::now();
        // the A and B queries have points only for the variables of their density
        tail_query<bucket_t, point_t, affine_t>(gpu, d, out->a, srs->points[SEC_A].as<g1_mem_t>(), d->split[1],
                                                w, a_map, "the A MSM");
        t->msm_a = ms_since(phase);
        phase = clock_type::now();
        tail_query<bucket_t, point_t, affine_t>(gpu, d, out->b_g1, srs->points[SEC_B1].as<g1_mem_t>(), d->split[2],
                                                w, b_map, "the B-G1 MSM");
        t->msm_b_g1 = ms_since(phase);
        phase = clock_type::now();
        tail_query<bucket2_t, point2_t, affine2_t>(gpu, d, out->b_g2, srs->points[SEC_B2].as<g2_mem_t>(), d->split[2],
                                                   w, b_map, "the B-G2 MSM");
        t->msm_b_g2 = ms_since(phase);

        phase = clock_type::now();
        check(cudaStreamSynchronize(*d->prep), "a, b, c and the NTTs");
        t->wait_h = ms_since(phase);
        t->spmv = event_ms(d->marks[0], d->marks[1]);
        t->ntt = event_ms(d->marks[1], d->marks[2]);
        phase = clock_type::now();
        if (one_pass) {
            one_pass_collect(gpu, *d->prep, d->h_msm, h_plan, out->h);
            t->msm_h = event_ms(d->marks[2], d->marks[3]) + ms_since(phase);
        } else {
            msm<bucket_t, point_t, affine_t>(gpu, out->h, srs->points[SEC_H].as<g1_mem_t>(), d->a.as<scalar_t>(), m - 1,
                                             "the H MSM");
            t->msm_h = ms_since(phase);
        }
        phase = clock_type::now();
        check(cudaStreamSynchronize(d->side), "the sums of the ones");
        t->wait_ones = ms_since(phase);
        add_ones<bucket_t>(out->l, d->split[0], d->ones[0], "the L MSM");
        add_ones<bucket_t>(out->a, d->split[1], d->ones[1], "the A MSM");
        add_ones<bucket_t>(out->b_g1, d->split[2], d->ones[2], "the B-G1 MSM");
        add_ones<bucket2_t>(out->b_g2, d->split[2], d->ones[3], "the B-G2 MSM");
        t->total = ms_since(started);
    });
}

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
