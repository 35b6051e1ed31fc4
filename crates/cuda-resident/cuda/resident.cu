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
// Where each part lives is the key's memory plan (sf_placement, chosen by the Rust side from the
// device's free memory): any point section may sit in page-locked host memory mapped into the
// device instead (L, A, B: the kernels read in place only the points whose scalar is not 0; H:
// copied over in batches into b and c once h no longer needs them, each batch's MSM beside the
// next copy), and the matrices too (copied in chunks of rows as a, b, c are made).
//
// One prove: a = A·w, b = B·w (SpMV), c = a∘b and h = (a·b − c)/Z by six NTTs on one stream,
// while the MSMs of L, A, B-G1 and B-G2 (whose scalars are the witness's own) run beside it;
// then the H MSM over h. The lean plan (lean.cuh) does the same work one phase after another. All against resident points. The caller assembles the proof from the
// five sums with r and s (a few point operations on the CPU). Nothing here knows Rust types;
// points cross the boundary in blst's memory layout (Montgomery form, Jacobian for results).

#include <cuda.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

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

#include "spmv.cuh"

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

// The newest CUDA version the installed driver supports (12040 for 12.4; 0 without a driver):
// asked before anything else, so an old driver is named instead of failing later.
SF_FFI RustError::by_value sf_driver_version(int* out)
{
    return guarded([&] { check(cudaDriverGetVersion(out), "reading the CUDA driver's version"); });
}

SF_FFI void sf_device_close(sf_device* d);

// A handle on device `ordinal`: its own prove buffers, streams and events. `lane`: a second
// handle on a GPU another already proves on (its tail MSMs on a stream of their own).
static RustError::by_value open_device(int ordinal, bool lane, sf_device** out)
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
        // the side stream and the one its points come over on (`fetch`): at the greatest priority
        // where SNARKFLOW_SIDE_PRIORITY=1 asks for it, else the default
        int least = 0, side_rank = 0;
        cudaError_t e = cudaDeviceGetStreamPriorityRange(&least, &side_rank);
        if (!side_priority())
            side_rank = 0;
        if (e == cudaSuccess)
            e = cudaStreamCreateWithPriority(&d->side, cudaStreamNonBlocking, side_rank);
        for (auto& ev : d->marks)
            if (e == cudaSuccess)
                e = cudaEventCreate(&ev);
        if (e == cudaSuccess)
            e = cudaEventCreateWithFlags(&d->split_ready, cudaEventDisableTiming);
        if (e == cudaSuccess)
            e = cudaStreamCreateWithFlags(&d->copy, cudaStreamNonBlocking);
        if (e == cudaSuccess)
            e = cudaStreamCreateWithPriority(&d->fetch, cudaStreamNonBlocking, side_rank);
        if (e == cudaSuccess)
            e = cudaEventCreateWithFlags(&d->counted, cudaEventDisableTiming);
        for (int i = 0; i < 2 && e == cudaSuccess; i++) {
            e = cudaEventCreateWithFlags(&d->staged[i], cudaEventDisableTiming);
            if (e == cudaSuccess)
                e = cudaEventCreateWithFlags(&d->consumed[i], cudaEventDisableTiming);
            if (e == cudaSuccess)
                e = cudaEventCreateWithFlags(&d->fetched[i], cudaEventDisableTiming);
            if (e == cudaSuccess)
                e = cudaEventCreateWithFlags(&d->added[i], cudaEventDisableTiming);
        }
        if (e != cudaSuccess) {
            sf_device_close(d);
            check(e, "creating the side stream and the phase events");
        }
        try {
            d->prep = prep_stream(gpu.id());
            if (lane)
                d->tails = new stream_t(gpu.id());
        } catch (...) {
            sf_device_close(d);
            throw;
        }
        *out = d;
    });
}

SF_FFI RustError::by_value sf_device_open(int ordinal, sf_device** out)
{
    return open_device(ordinal, false, out);
}

// A second prove lane on `ordinal`: proves with the parameters, shape and witnesses of the
// device's other handles, beside them. Refused where two MSMs of this process cannot run at
// once: sppark's accumulate (SNARKFLOW_ACCUMULATE=sppark) has one work counter per process.
SF_FFI RustError::by_value sf_device_open_lane(int ordinal, sf_device** out)
{
    if (sppark_accumulate())
        return RustError{-1, "a second prove lane cannot use sppark's accumulate (SNARKFLOW_ACCUMULATE=sppark): "
                                "its work counter is one per process"};
    return open_device(ordinal, true, out);
}

// Queue `d`'s tail MSMs on a stream of their own from its next prove on (once a second lane
// proves beside it, so that neither lane's tails wait behind the other's on the device's own).
SF_FFI RustError::by_value sf_device_own_tail_stream(sf_device* d)
{
    std::lock_guard<std::mutex> lock(d->busy);
    return guarded([&] {
        d->gpu->select();
        if (!d->tails)
            d->tails = new stream_t(d->gpu->id());
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
    if (d->copy)
        (void)cudaStreamDestroy(d->copy);
    if (d->fetch)
        (void)cudaStreamDestroy(d->fetch);
    if (d->counted)
        (void)cudaEventDestroy(d->counted);
    for (int i = 0; i < 2; i++)
        for (cudaEvent_t ev : {d->staged[i], d->consumed[i], d->fetched[i], d->added[i]})
            if (ev)
                (void)cudaEventDestroy(ev);
    delete d->prep;
    delete d->tails;
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
    return guarded([&] { check(cudaHostAlloc(out, std::max<size_t>(bytes, 1), cudaHostAllocPortable | cudaHostAllocMapped),
                                  "allocating pinned host memory"); });
}

SF_FFI void sf_pinned_free(void* p)
{
    if (p) (void)cudaFreeHost(p);
}

#include "resident_data.cuh"
#include "queries.cuh"

#include "quotient.cuh"   // a, b, c, h and the streamed H MSM

static double event_ms(cudaEvent_t from, cudaEvent_t to)
{
    float ms = 0;
    check(cudaEventElapsedTime(&ms, from, to), "reading the phase events");
    return ms;
}

#include "lean.cuh"
#include "compact.cuh"

// The five MSM sums of one partition whose witness ([inputs | aux], Montgomery form) was
// uploaded into `wit`. Three streams of work: the 0/1 split of the L, A and B scalars, then the
// sums of the points whose scalar is 1 (`side`); a, b, c, h and the H MSM right behind them
// (`prep`); and the tail MSMs of L, A, B-G1 and B-G2 as soon as the splits are known (they need
// only the witness, so they run beside the other two).
SF_FFI RustError::by_value sf_prove(sf_device* d, const sf_srs* srs, const sf_shape* sh,
                                    const sf_witness* wit, sf_msm_sums* out, sf_timings* t)
{
    std::lock_guard<std::mutex> lock(d->busy);
    return guarded([&] {
        // any handle of the same device: a second lane proves with the first's key and shape
        if (srs->dev->ordinal != d->ordinal || sh->dev->ordinal != d->ordinal || wit->dev->ordinal != d->ordinal)
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

        TRACE("prove: %zu inputs, %zu aux, %zu rows, domain 2^%zu%s%s", sh->num_inputs, sh->num_aux, sh->rows,
              sh->lg_domain, sh->on_host ? ", shape streamed" : "", srs->points[SEC_H].on_host() ? ", H streamed" : "");
        t->upload = 0;   // the caller times the upload, done before this call
        t->h2d_copied = t->h2d_mapped = 0;
        if (wit->kept_compact != srs->compact)
            throw sf_error(-1, wit->kept_compact ? "a witness kept compact is proved in the compact plan only"
                                                 : "the compact plan proves witnesses kept compact");
        if (srs->lean)
            prove_lean(d, srs, sh, const_cast<sf_witness*>(wit), out, t);
        else if (srs->compact)
            prove_compact(d, srs, sh, wit, out, t);
        if (srs->lean || srs->compact) {
            t->total = ms_since(started);
            return;
        }
        const scalar_t* w = wit->buf.as<scalar_t>();
        steps().watch(*d->prep);
        const bool after = side_after_ntt();
        queue_splits(d, srs, sh, w);
        if (!after)
            queue_ones(d, srs);
        t->h2d_copied += (double)queue_h(d, sh, wit);
        if (after) {
            // the NTTs' end (marks[2]) is recorded now: what waits for it is queued behind it
            check(cudaStreamWaitEvent(d->side, d->marks[2], 0), "the sums of the ones");
            queue_ones(d, srs);
            check(cudaStreamWaitEvent(tail_stream(gpu, d), d->marks[2], 0), "the tail MSMs");
        }
        // deg h ≤ m − 2, so the H query has m − 1 points
        const bool h_streamed = srs->points[SEC_H].on_host();
        const int wbits = h_msm_wbits();
        bool one_pass = wbits >= 0 && !h_streamed;
        one_pass_plan h_plan;
        if (one_pass) {
            h_plan = one_pass_plan_for(gpu, m - 1, (uint32_t)wbits);
            if (h_wide_top())
                h_plan = one_pass_widen(one_pass_dims_of(gpu, 0), h_plan);
            one_pass = one_pass_reserve<bucket_t>(gpu, d->h_msm, h_plan);
        }
        if (one_pass)
            one_pass_queue<bucket_t>(gpu, *d->prep, d->h_msm, h_plan, srs->points[SEC_H].as<g1_mem_t>(), d->a.as<scalar_t>(),
                                     segments_prefetch(), segments_warps());
        check(cudaEventRecord(d->marks[3], *d->prep), "timing the H MSM");
        splits_known(d);

        prove_tails(d, srs, sh, w, out, t);

        auto phase = clock_type::now();
        wait_stream(*d->prep, "a, b, c and the NTTs");
        steps().report();
        t->wait_h = ms_since(phase);
        t->spmv = event_ms(d->marks[0], d->marks[1]);
        t->ntt = event_ms(d->marks[1], d->marks[2]);
        phase = clock_type::now();
        if (one_pass) {
            one_pass_collect<bucket_t>(gpu, *d->prep, d->h_msm, h_plan, out->h);
            t->msm_h = event_ms(d->marks[2], d->marks[3]) + ms_since(phase);
        } else if (h_streamed) {
            t->h2d_copied += (double)h_msm_streamed(d, srs, d->a.as<scalar_t>(), m - 1, out->h, d->b, d->c);
            t->msm_h = ms_since(phase);
        } else {
            msm<bucket_t, point_t, affine_t>(gpu, out->h, srs->points[SEC_H].as<g1_mem_t>(), d->a.as<scalar_t>(), m - 1,
                                             "the H MSM");
            t->msm_h = ms_since(phase);
        }
        finish_ones(d, srs, out, t);
        t->total = ms_since(started);
    });
}

#include "fixed_base.cuh"
