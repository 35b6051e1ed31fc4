// a, b, c and the quotient h of a partition on the device, and the H MSM with the H points in
// host memory (included once, by resident.cu, after queries.cuh: the SpMV streamed from a
// shape in host memory, z_inverse, queue_h, and h_msm_streamed with its one-pass variant
// h_msm_batched).

// v = M·w for one matrix whose non-zeros are in mapped host memory: chunks of rows copied to
// the device on `copy` into two slots in turn, each multiplied on `s` as soon as it is there,
// while the next is copied. Returns the bytes copied.
static size_t spmv_streamed(sf_device* d, const sf_shape* sh, const dev_csr& dm, scalar_t* v, const sf_witness* wit,
                            stream_t& s)
{
    const gpu_t& gpu = *d->gpu;
    const size_t chunk_nnz = sh->chunk_nnz, chunk_rows = std::max<size_t>(chunk_nnz / 2, 1);
    const size_t slot_bytes = (chunk_rows + 1) * sizeof(uint64_t) + 2 * chunk_nnz * sizeof(uint32_t);
    for (auto& st : d->shape_stage)
        st.ensure(slot_bytes, "allocating the constraint shape's staging");
    const uint64_t* starts = dm.row_starts.as_host<uint64_t>();
    const uint32_t* cols = dm.cols.as_host<uint32_t>();
    const uint32_t* coeffs = dm.coeffs.as_host<uint32_t>();
    size_t copied = 0;
    int slot = 0;
    for (size_t r0 = 0; r0 < dm.rows; slot ^= 1) {
        // as many rows as fit the slot: at most chunk_rows, at most chunk_nnz non-zeros (a row
        // longer than that alone would not fit)
        size_t limit = std::min(dm.rows, r0 + chunk_rows);
        const uint64_t* end = std::upper_bound(starts + r0 + 1, starts + limit + 1, starts[r0] + chunk_nnz);
        size_t r1 = (size_t)(end - starts) - 1;
        if (r1 == r0)
            throw sf_error(-1, "a constraint with more non-zeros than a shape chunk holds");
        uint64_t base = starts[r0], nnz = starts[r1] - base;
        dbuf& st = d->shape_stage[slot];
        uint8_t* at = st.as<uint8_t>();
        uint64_t* d_starts = reinterpret_cast<uint64_t*>(at);
        uint32_t* d_cols = reinterpret_cast<uint32_t*>(at + (chunk_rows + 1) * sizeof(uint64_t));
        uint32_t* d_coeffs = d_cols + chunk_nnz;
        // the slot's last reader (two chunks ago) must be done before it is written again
        check(cudaStreamWaitEvent(d->copy, d->consumed[slot], 0), "streaming the constraint shape");
        check(cudaMemcpyAsync(d_starts, starts + r0, (r1 - r0 + 1) * sizeof(uint64_t), cudaMemcpyHostToDevice, d->copy),
              "streaming the constraint shape");
        check(cudaMemcpyAsync(d_cols, cols + base, nnz * sizeof(uint32_t), cudaMemcpyHostToDevice, d->copy),
              "streaming the constraint shape");
        check(cudaMemcpyAsync(d_coeffs, coeffs + base, nnz * sizeof(uint32_t), cudaMemcpyHostToDevice, d->copy),
              "streaming the constraint shape");
        check(cudaEventRecord(d->staged[slot], d->copy), "streaming the constraint shape");
        check(cudaStreamWaitEvent(s, d->staged[slot], 0), "streaming the constraint shape");
        queue_spmv(gpu, s, v + r0, d_starts, d_cols, d_coeffs, sh, whole_witness{wit->buf.as<scalar_t>()}, r1 - r0,
                   base, sf_fold{});
        check(cudaEventRecord(d->consumed[slot], s), "streaming the constraint shape");
        copied += (r1 - r0 + 1) * sizeof(uint64_t) + 2 * nnz * sizeof(uint32_t);
        r0 = r1;
    }
    return copied;
}

// 1/Z on the coset g·H of the domain of 2^lg: Z there is the constant gⁿ − 1
static fr_bits z_inverse(uint32_t lg)
{
    fr_t z = group_gen;
    for (uint32_t i = 0; i < lg; i++) z = z * z;
    z = z - fr_t::one();
    fr_t z_inv = z.reciprocal();
    fr_bits bits;
    memcpy(&bits, &z_inv, sizeof(bits));
    return bits;
}

// a, b = A·w, B·w (zero beyond the last constraint) and c = a∘b, which for a satisfied system is
// C·w on the domain; then h, the coefficients of (A·B − C)/Z: A·B on the coset g·H (a and b to
// coefficients, then to the coset, multiplied) back to coefficients is P = A·B mod (xⁿ − gⁿ) =
// H·(gⁿ − 1) + C, so h = (P − C)/(gⁿ − 1) with C = iNTT(c): six NTTs where making C·w's own
// quotient on the coset takes seven (SNARKFLOW_SEVEN_NTT keeps that way, for comparison).
// h ends in `a`. Queued on `d->prep`, with `d->marks` recorded at its start, after SpMV and at
// its end. Returns the bytes of shape copied to the device (0 when it is resident). `c_room`
// (the lean plan: the witness's own buffer, read by the SpMV before c is written) replaces c.
static size_t queue_h(sf_device* d, const sf_shape* sh, const sf_witness* wit, scalar_t* c_room = nullptr)
{
    const gpu_t& gpu = *d->gpu;
    stream_t& s = *d->prep;
    size_t m = (size_t)1 << sh->lg_domain;
    uint32_t blocks, threads;
    size_t copied = 0;
    const bool seven = seven_ntt();
    check(cudaEventRecord(d->marks[0], s), "timing a, b, c");
    if (c_room && seven)
        throw sf_error(-1, "the lean plan makes h with six NTTs (SNARKFLOW_SEVEN_NTT is set)");
    d->a.ensure(m * sizeof(scalar_t), "allocating a, b, c");
    d->b.ensure(m * sizeof(scalar_t), "allocating a, b, c");
    if (!c_room)
        d->c.ensure(m * sizeof(scalar_t), "allocating a, b, c");
    scalar_t* abc[3] = {d->a.as<scalar_t>(), d->b.as<scalar_t>(), c_room ? c_room : d->c.as<scalar_t>()};
    for (int i = 0; i < (seven ? 3 : 2); i++) {
        scalar_t* v = abc[i];
        if (m > sh->rows)
            check(cudaMemsetAsync(v + sh->rows, 0, (m - sh->rows) * sizeof(scalar_t), s), "clearing a, b, c");
        const dev_csr& dm = sh->m[i];
        if (sh->on_host) {
            copied += spmv_streamed(d, sh, dm, v, wit, s);
            continue;
        }
        queue_spmv(gpu, s, v, dm.row_starts.as<uint64_t>(), dm.cols.as<uint32_t>(), dm.coeffs.as<uint32_t>(), sh,
                   whole_witness{wit->buf.as<scalar_t>()}, dm.rows, 0, sh->fold);
    }
    scalar_t *a = abc[0], *b = abc[1], *c = abc[2];
    uint32_t lg = (uint32_t)sh->lg_domain;
    const fr_bits z_bits = z_inverse(lg);
    grid_for(gpu, m, blocks, threads);
    if (!seven) {
        pointwise_mul<<<blocks, threads, 0, s>>>(c, a, b, m);
        check(cudaGetLastError(), "c = a∘b");
    }
    check(cudaEventRecord(d->marks[1], s), "timing a, b, c");
    steps().mark(s, "SpMV");
    static const char* const inverse[3] = {"iNTT a", "iNTT b", "iNTT c"};
    static const char* const coset[3] = {"coset NTT a", "coset NTT b", "coset NTT c"};
    for (int i = 0; i < 3; i++) {
        scalar_t* v = abc[i];
        if (i == 2 && !seven) {
            NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse, NTT::Type::standard);
            steps().mark(s, inverse[i]);
            break;
        }
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::standard);
        steps().mark(s, inverse[i]);
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::RN, NTT::Direction::forward, NTT::Type::coset);
        steps().mark(s, coset[i]);
    }
    if (seven) {
        quotient<<<blocks, threads, 0, s>>>(a, b, c, z_bits, m);
        check(cudaGetLastError(), "the quotient");
        NTT::Base_dev_ptr(s, a, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse, NTT::Type::coset);
    } else {
        pointwise_mul<<<blocks, threads, 0, s>>>(a, a, b, m);
        check(cudaGetLastError(), "a·b on the coset");
        NTT::Base_dev_ptr(s, a, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse, NTT::Type::coset);
        steps().mark(s, "coset iNTT h");
        sub_scale<<<blocks, threads, 0, s>>>(a, c, z_bits, m);
        check(cudaGetLastError(), "the quotient");
    }
    steps().mark(s, "quotient");
    check(cudaEventRecord(d->marks[2], s), "timing the NTTs");
    return copied;
}

// The streamed H MSM runs through the one-pass driver with its buckets carried across the
// batches (h_msm_batched): at 32 GiB on an H100 it beat sppark's MSM per batch on 24 GB cards
// (1.76-1.79 s a partition against 1.83) and in the compact plan (2.12 against 2.37-2.42).
// SNARKFLOW_H_STREAM_ONE_PASS (measuring; a list of 0 and 1 that successive proves take in
// turn): 0 runs sppark's MSM per batch instead.
static bool h_stream_one_pass()
{
    static env_turns turns(env_int_list("SNARKFLOW_H_STREAM_ONE_PASS"));
    return turns.take(1) == 1;
}

// Widest window of h_msm_batched: 17 bits (15 windows of 2^16 buckets); SNARKFLOW_H_STREAM_WBITS,
// a list taken in turn, for measuring
static uint32_t h_stream_wbits()
{
    static env_turns turns(env_int_list("SNARKFLOW_H_STREAM_WBITS"));
    return (uint32_t)turns.take(17);
}

// The plan of h_msm_batched for batches of `batch` points (one_pass_plan.h's
// one_pass_batched_plan: the window width of least work a point whose workspace fits the room
// the memory plans keep for sppark's MSM over one batch; no points where none fits).
static one_pass_plan h_batched_plan(const gpu_t& gpu, size_t batch)
{
    return one_pass_batched_plan(one_pass_dims_of(gpu, sizeof(bucket_t::mem_t)), batch, h_stream_wbits());
}

// Events made for one call and destroyed with it (a destroyed event that is still pending is
// released once the device reaches it; waits already queued on it stand).
struct event_set {
    std::vector<cudaEvent_t> ev;
    explicit event_set(size_t n) : ev(n, nullptr)
    {
        for (cudaEvent_t& e : ev) {
            cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
            if (err != cudaSuccess) {
                e = nullptr;
                release();
                check(err, "making events");
            }
        }
    }
    ~event_set() { release(); }
    void release()
    {
        for (cudaEvent_t& e : ev)
            if (e) {
                cudaEventDestroy(e);
                e = nullptr;
            }
    }
    event_set(const event_set&) = delete;
    event_set& operator=(const event_set&) = delete;
    cudaEvent_t operator[](size_t i) const { return ev[i]; }
};

// Σ h_i·H_i over all of H streamed into the two slots (as h_msm_streamed), every batch's
// accumulation queued on `prep` behind the one before into the same buckets (one_pass_accumulate
// with `persist`), the buckets reduced once at the end: no host wait between batches, each
// copy waiting only for the MSM that last read its slot. Returns the bytes copied, or SIZE_MAX
// with nothing queued where the plans' room or the device has none for the workspace. The
// workspace is given back at the end (the lean and compact plans lend that room to other
// buffers in the next prove's first phase).
static size_t h_msm_batched(sf_device* d, const sf_srs* srs, const scalar_t* h, size_t n, point_t& out,
                            g1_mem_t* const slots[2], size_t batch)
{
    const gpu_t& gpu = *d->gpu;
    stream_t& s = *d->prep;
    const one_pass_plan p = h_batched_plan(gpu, batch);
    if (p.n == 0 || !one_pass_reserve<bucket_t>(gpu, d->h_msm, p, true))
        return SIZE_MAX;
    TRACE("the H MSM in batches of %zu points, parts of %zu (the first %zu), %u-bit windows, buckets carried "
          "across, each part's copy awaited alone",
          batch, p.n, std::min(std::max<size_t>(p.n / 4, 1), batch), p.wbits);
    const g1_mem_t* host = srs->points[SEC_H].as_host<g1_mem_t>();
    // A batch is copied and accumulated in pieces, each accumulation waiting only for its own
    // piece's copy: nothing runs until the first piece is on the device (the slots are b and c,
    // busy until the NTTs end), so the first piece is a quarter part and the rest whole parts.
    // Copying whole batches left the first batch's copy bare (4.3 GB at 32 GiB on a 24 GB card:
    // ~80 ms of its 1.3 s H MSM on an H100's ~50 GB/s link, ~170 ms at PCIe 4.0's 25 GB/s).
    const size_t head = std::max<size_t>(p.n / 4, 1);
    auto pieces = [&](size_t first, auto&& each) {
        const size_t len = std::min(batch, n - first);
        for (size_t off = 0, k = 0; off < len; k++) {
            const size_t piece = std::min(first == 0 && off == 0 ? head : p.n, len - off);
            each(off, piece, k);
            off += piece;
        }
    };
    const size_t per_slot = batch / p.n + 2;   // pieces a batch can have: the head and ⌈rest / part⌉
    event_set ready(2 * per_slot);
    // both slots were last written on `prep` (a, b, c, the NTTs)
    for (int i = 0; i < 2; i++) {
        check(cudaEventRecord(d->consumed[i], s), "streaming the H points");
    }
    auto copy = [&](size_t first, int slot) {
        check(cudaStreamWaitEvent(d->copy, d->consumed[slot], 0), "streaming the H points");
        pieces(first, [&](size_t off, size_t piece, size_t k) {
            check(cudaMemcpyAsync(slots[slot] + off, host + first + off, piece * sizeof(g1_mem_t),
                                  cudaMemcpyHostToDevice, d->copy),
                  "streaming the H points");
            check(cudaEventRecord(ready[slot * per_slot + k], d->copy), "streaming the H points");
        });
    };
    copy(0, 0);
    if (batch < n)
        copy(batch, 1);
    bool persist = false;
    const bool prefetch = segments_prefetch();
    const uint32_t warps = segments_warps();
    int slot = 0;
    for (size_t first = 0; first < n; first += batch, slot ^= 1) {
        pieces(first, [&](size_t off, size_t piece, size_t k) {
            check(cudaStreamWaitEvent(s, ready[slot * per_slot + k], 0), "streaming the H points");
            one_pass_accumulate<bucket_t, g1_mem_t>(gpu, s, d->h_msm, p, slots[slot] + off, h + first + off, piece,
                                                    persist, prefetch, warps);
            persist = true;
        });
        check(cudaEventRecord(d->consumed[slot], s), "streaming the H points");
        if (first + 2 * batch < n)
            copy(first + 2 * batch, slot);
    }
    one_pass_reduce<bucket_t>(s, d->h_msm, p);
    one_pass_collect<bucket_t, point_t>(gpu, s, d->h_msm, p, out);
    // the room is the plans' for one batch of sppark's MSM, which allocates it per call
    d->h_msm.release();
    return n * sizeof(g1_mem_t);
}

// Σ h_i·H_i with the H points in mapped host memory: batches of points copied on `copy` into
// two slots in turn (h is in a; b and c are free once h is made, and are the slots; the lean
// plan passes the witness's buffer for c, the compact plan b's two halves), each batch's MSM
// (sppark's, against device memory) run while the next batch is copied; the front of H that the
// device keeps a copy of (`h_front`) is not copied. Returns the bytes copied.
static size_t h_msm_streamed(sf_device* d, const sf_srs* srs, const scalar_t* h, size_t n, point_t& out,
                             const dbuf& slot0, const dbuf& slot1)
{
    const gpu_t& gpu = *d->gpu;
    out.inf();
    size_t batch = srs->h_batch ? srs->h_batch : slot0.bytes / sizeof(g1_mem_t);
    batch = std::min({batch, slot0.bytes / sizeof(g1_mem_t), slot1.bytes / sizeof(g1_mem_t), n});
    if (batch == 0)
        throw sf_error(-1, "no room for a batch of H points");
    // the points the device holds a copy of are not streamed: their MSM (in batches too, so its
    // workspace is a streamed batch's) runs while the first streamed batch is copied
    std::shared_lock<std::shared_mutex> front(srs->front);
    const size_t kept = std::min(srs->h_front_len, n);
    auto front_msm = [&] {
        for (size_t first = 0; first < kept; first += batch) {
            point_t part;
            msm<bucket_t, point_t, affine_t>(gpu, part, srs->h_front.as<g1_mem_t>() + first, h + first,
                                             std::min(batch, kept - first), "the H MSM");
            out.add(part);
        }
    };
    if (kept == n) {
        front_msm();
        return 0;
    }
    const g1_mem_t* host = srs->points[SEC_H].as_host<g1_mem_t>();
    g1_mem_t* slots[2] = {slot0.as<g1_mem_t>(), slot1.as<g1_mem_t>()};
    if (h_stream_one_pass() && kept == 0 && !sppark_accumulate()) {
        size_t copied = h_msm_batched(d, srs, h, n, out, slots, batch);
        if (copied != SIZE_MAX)
            return copied;
    }
    // the slots were last written by the prep stream: the copies wait for it
    check(cudaEventRecord(d->consumed[0], *d->prep), "streaming the H points");
    check(cudaStreamWaitEvent(d->copy, d->consumed[0], 0), "streaming the H points");
    auto copy = [&](size_t first, int slot) {
        size_t len = std::min(batch, n - first);
        check(cudaMemcpyAsync(slots[slot], host + first, len * sizeof(g1_mem_t), cudaMemcpyHostToDevice, d->copy),
              "streaming the H points");
        check(cudaEventRecord(d->staged[slot], d->copy), "streaming the H points");
    };
    copy(kept, 0);
    front_msm();
    front.unlock();   // the rest reads only b, c and the host's points
    int slot = 0;
    for (size_t first = kept; first < n; first += batch, slot ^= 1) {
        // the other slot's MSM returned (sppark's invoke waits for its work): refill it
        if (first + batch < n)
            copy(first + batch, slot ^ 1);
        wait_event(d->staged[slot], "streaming the H points");
        point_t part;
        msm<bucket_t, point_t, affine_t>(gpu, part, slots[slot], h + first, std::min(batch, n - first), "the H MSM");
        out.add(part);
    }
    return (n - kept) * sizeof(g1_mem_t);
}
