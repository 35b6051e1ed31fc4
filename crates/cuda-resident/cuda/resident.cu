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

#include "device_types.cuh"

// ---------------------------------------------------------------------------------------------
// kernels

#include "kernels.cuh"

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

#include "resident_data.cuh"
#include "queries.cuh"

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

#include "fixed_base.cuh"
