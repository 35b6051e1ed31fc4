// The MSMs of one query beside the NTTs (included once, by resident.cu, after the device types
// and helpers): a plain MSM, the 0/1 split and the sum of the points whose scalar is 1, the
// Pippenger MSM over the rest ("tail"), and reading the split's counts back.

// held while one of sppark's MSMs runs (see msm)
static std::mutex sppark_msm_lock;

template<class bucket, class point, class affine, class mem>
static void msm(const gpu_t& gpu, point& out, const mem* points, const scalar_t* scalars, size_t n, const char* what)
{
    if (n == 0) {
        out.inf();
        return;
    }
    TRACE("%s over %zu points", what, n);
    // one at a time (G1 and G2 alike): sppark's MSMs share the device's streams (each waits for
    // everything queued on them) and their type's work counters, and two prove lanes may both
    // fall back to them
    std::lock_guard<std::mutex> lock(sppark_msm_lock);
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
    sp.lists.ensure(n * sizeof(uint32_t), "allocating the 0/1 split");
    sp.counts.ensure(2 * sizeof(uint32_t), "allocating the 0/1 split");
    check(cudaMemsetAsync(sp.counts.ptr, 0, 2 * sizeof(uint32_t), side), "clearing the 0/1 split");
    uint32_t blocks, threads;
    grid_for(gpu, n, blocks, threads);
    fr_t one = fr_t::one();
    fr_bits one_bits;
    memcpy(&one_bits, &one, sizeof(one_bits));
    split_lists<<<blocks, threads, 0, side>>>(sp.lists.as<uint32_t>(), sp.lists.as<uint32_t>(), sp.counts.as<uint32_t>(),
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
    add<<<grid, BATCH_ADD_BLOCK_SIZE, 0, side>>>(o.sums.as<bucket_h>(), points, sp.n, sp.ones(), count);
    check(cudaGetLastError(), "summing the points whose scalar is 1");
}

// The same sums for points in mapped host memory: the 1s' points are copied to the device in
// chunks on `fetch` (copy_points: whole points per read, few SMs) while `side` sums the chunk
// before (batch addition over it in place, then added to the query's sums). The number of 1s is
// known only on the device, so every chunk the query could need is queued, each reading its own
// length (0 past the end). Queued right after the splits (`split_ready`).
template<class bucket, class mem>
static void sum_ones_mapped(const gpu_t& gpu, sf_device* d, ones_sum_t& o, const mem* points, const split_t& sp,
                            uint32_t query, uint32_t grid_div)
{
    typedef typename bucket::mem_t bucket_h;
    if (sp.n == 0)
        return;
    const size_t chunk = MAPPED_CHUNK;
    const uint32_t nchunks = (uint32_t)((sp.n + chunk - 1) / chunk);
    if (nchunks > MAPPED_MAX_CHUNKS)
        throw sf_error(-1, "a query of 2^32 points or more");
    const uint32_t sms = (uint32_t)gpu.sm_count();
    const uint32_t grid = std::max<uint32_t>(sms / grid_div, 1);
    o.nsums = (size_t)grid * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    o.sums.ensure(o.nsums * sizeof(bucket_h), "allocating the sums of the ones");
    d->more_sums.ensure(o.nsums * sizeof(bucket2_t::mem_t), "allocating the sums of the ones");
    for (auto& st : d->mapped_stage)
        st.ensure(chunk * sizeof(g2_mem_t), "allocating the staging of mapped points");
    uint32_t blocks, threads;
    if (d->iota.bytes < chunk * sizeof(uint32_t)) {
        d->iota.ensure(chunk * sizeof(uint32_t), "allocating the staging of mapped points");
        grid_for(gpu, chunk, blocks, threads);
        iota<<<blocks, threads, 0, d->side>>>(d->iota.as<uint32_t>(), chunk);
        check(cudaGetLastError(), "the staging of mapped points");
    }
    // each query its own lengths (the four are queued one after another)
    d->chunk_count.ensure(4 * MAPPED_MAX_CHUNKS * sizeof(uint32_t), "allocating the staging of mapped points");
    uint32_t* counts = d->chunk_count.as<uint32_t>() + (size_t)query * MAPPED_MAX_CHUNKS;
    chunk_counts<<<(nchunks + 255) / 256, 256, 0, d->side>>>(counts, sp.counts.as<uint32_t>(), (uint32_t)chunk, nchunks);
    check(cudaGetLastError(), "the staging of mapped points");
    check(cudaEventRecord(d->counted, d->side), "the staging of mapped points");
    check(cudaStreamWaitEvent(d->fetch, d->counted, 0), "the staging of mapped points");
    void (*add)(bucket_h*, const mem*, size_t, const uint32_t*, const uint32_t&) = batch_addition<bucket, mem>;
    const uint32_t copy_grid = std::max<uint32_t>(sms / 4, 1);
    const uint32_t sum_blocks = (uint32_t)((o.nsums * bucket::degree + 255) / 256);
    for (uint32_t k = 0; k < nchunks; k++) {
        int slot = (int)(d->chunks_queued++ & 1);
        mem* stage = d->mapped_stage[slot].as<mem>();
        // the slot's chunk before must be summed before it is overwritten
        check(cudaStreamWaitEvent(d->fetch, d->added[slot], 0), "fetching mapped points");
        copy_points<mem><<<copy_grid, 256, 0, d->fetch>>>(stage, points, sp.ones() + (size_t)k * chunk,
                                                          chunk, counts + k);
        check(cudaGetLastError(), "fetching mapped points");
        check(cudaEventRecord(d->fetched[slot], d->fetch), "fetching mapped points");
        check(cudaStreamWaitEvent(d->side, d->fetched[slot], 0), "summing mapped points");
        // a reference into device memory, as sppark takes the count
        const uint32_t& len = *(counts + k);
        bucket_h* into = k == 0 ? o.sums.as<bucket_h>() : d->more_sums.as<bucket_h>();
        add<<<grid, BATCH_ADD_BLOCK_SIZE, 0, d->side>>>(into, stage, chunk, d->iota.as<uint32_t>(), len);
        check(cudaGetLastError(), "summing mapped points");
        if (k > 0) {
            add_sums<bucket><<<sum_blocks, 256, 0, d->side>>>(o.sums.as<bucket_h>(), d->more_sums.as<bucket_h>(), o.nsums);
            check(cudaGetLastError(), "summing mapped points");
        }
        check(cudaEventRecord(d->added[slot], d->side), "summing mapped points");
    }
}

// SNARKFLOW_TAIL_MSM=sppark runs the tail MSMs with sppark's msm_t (batches, a thread a bucket),
// for measuring; so does SNARKFLOW_ACCUMULATE=sppark (sppark's `accumulate` has one work counter
// for the one-pass MSMs, which the H MSM uses beside the tails)
static bool sppark_tails()
{
    static const bool on = env_is("SNARKFLOW_TAIL_MSM", "sppark") || sppark_accumulate();
    return on;
}

// Tails smaller than this go to sppark's msm_t (a few thousand points: its batches and sort
// are tuned for them; the one-pass plan pays at tens of thousands).
static const size_t TAIL_ONE_PASS_MIN = (size_t)1 << 14;

// The stream a handle's tail MSMs are queued on: the device's own, or a second lane's `tails`.
static stream_t& tail_stream(const gpu_t& gpu, sf_device* d)
{
    stream_t& own = gpu;
    return d->tails ? *d->tails : own;
}

// Σ scalars[i]·points[i], i < n, for a query's tail (gathered points and scalars, queued on the
// device's stream): one pass with the buckets added in segments, so that a scalar repeated
// thousands of times is not one long chain of additions; sppark's msm_t where that has no room.
template<class bucket, class point, class affine, class mem>
static void tail_msm(const gpu_t& gpu, sf_device* d, point& out, const mem* points, size_t n, const char* what)
{
    stream_t& s = tail_stream(gpu, d);
    const scalar_t* scalars = d->scalars.as<scalar_t>();
    if (n >= TAIL_ONE_PASS_MIN && !sppark_tails()) {
        one_pass_plan plan = one_pass_plan_for(gpu, n, 0);
        if (one_pass_reserve<bucket>(gpu, d->tail_msm, plan)) {
            TRACE("%s: one pass", what);
            one_pass_queue<bucket>(gpu, s, d->tail_msm, plan, points, scalars);
            one_pass_collect<bucket>(gpu, s, d->tail_msm, plan, out);
            return;
        }
    }
    // sppark's MSM runs on its own streams: the gathers must be done first
    wait_stream(s, what);
    msm<bucket, point, affine>(gpu, out, points, scalars, n, what);
}

// SNARKFLOW_TAIL_COPY_SMS (measuring; a list successive proves take in turn): the tails' copies
// of their points from mapped host memory on one block for every n SMs (`1`: a block a SM, `4`:
// one for every fourth SM, leaving the others' load units to the SpMV and NTTs beside them);
// 0 (unset) is a quarter of grid_for's blocks (up to 8 a SM: 2 a SM at 32 GiB)
static int tail_copy_sms()
{
    static env_turns turns(env_int_list("SNARKFLOW_TAIL_COPY_SMS"));
    return turns.take(0);
}

static uint32_t tail_copy_blocks(const gpu_t& gpu, uint32_t blocks, int sms_per_block)
{
    if (sms_per_block <= 0)
        return std::max(blocks / 4, 1u);
    return std::max((uint32_t)gpu.sm_count() / (uint32_t)sms_per_block, 1u);
}

// Σ s_i·P_i over one query, once its split is known, except the sum of the points whose scalar
// is 1 (still being made on `side`; `add_ones` adds it): a Pippenger MSM over the tail's points
// (gathered next to each other), or a plain MSM over all points when the split does not pay.
template<class bucket, class point, class affine, class mem>
static void tail_query(const gpu_t& gpu, sf_device* d, point& out, const mem* points, const split_t& sp,
                       const scalar_t* w, const uint32_t* map, const char* what, int copy_sms)
{
    stream_t& s = tail_stream(gpu, d);
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
        wait_stream(s, what);
        msm<bucket, point, affine>(gpu, out, points, scalars, sp.n, what);
        return;
    }
    if (sp.n_tail == 0)
        return;
    // (with the points on the host, gather_points reads each tail point once over PCIe)
    d->scalars.ensure_grown(sp.n_tail * sizeof(scalar_t), "allocating gathered scalars");
    d->tail_points.ensure_grown(sp.n_tail * sizeof(mem), what);
    grid_for(gpu, sp.n_tail, blocks, threads);
    gather_selected<<<blocks, threads, 0, s>>>(d->scalars.as<scalar_t>(), w, map, sp.tail(), sp.n_tail);
    if (sp.forced)   // points in mapped host memory: whole points per read
        copy_points<mem><<<tail_copy_blocks(gpu, blocks, copy_sms), 256, 0, s>>>(d->tail_points.as<mem>(), points,
                                                                                 sp.tail(), sp.n_tail, nullptr);
    else
        gather_points<mem><<<blocks, threads, 0, s>>>(d->tail_points.as<mem>(), points, sp.tail(), sp.n_tail);
    check(cudaGetLastError(), what);
    tail_msm<bucket, point, affine>(gpu, d, out, d->tail_points.as<mem>(), sp.n_tail, what);
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
    wait_event(d->split_ready, "the 0/1 split");
    for (auto& sp : d->split) {
        if (sp.n == 0)
            continue;
        uint32_t counts[2];
        check(cudaMemcpy(counts, sp.counts.ptr, sizeof(counts), cudaMemcpyDeviceToHost), "reading the 0/1 split");
        sp.n_ones = counts[0];
        sp.n_tail = counts[1];
    }
}

// SNARKFLOW_ONES_GRID_DIV (measuring; a list whose values successive proves take in turn): the
// sums of the ones in mapped host memory on a 1/n share of the SMs (1: all), so that the SpMV
// and NTTs beside them keep the rest while the points come over PCIe
static uint32_t ones_grid_div()
{
    static env_turns turns(env_int_list("SNARKFLOW_ONES_GRID_DIV"));
    return (uint32_t)std::max(turns.take(1), 1);
}

// SNARKFLOW_SIDE_AFTER_NTT (measuring; a list of 0 and 1 that successive proves take in turn):
// 1 queues the sums of the ones and the tail MSMs behind the NTTs (`marks[2]` on `prep`), so
// that they run beside the H MSM instead of beside the SpMV and the NTTs
static bool side_after_ntt()
{
    static env_turns turns(env_int_list("SNARKFLOW_SIDE_AFTER_NTT"));
    return turns.take(0) == 1;
}

// The 0/1 splits of the L, A and B scalars of the witness `w` on `side`. `split_ready` is
// recorded once the splits are written.
static void queue_splits(sf_device* d, const sf_srs* srs, const sf_shape* sh, const scalar_t* w)
{
    const gpu_t& gpu = *d->gpu;
    const uint32_t* a_map = sh->a_gather.as<uint32_t>();
    const uint32_t* b_map = sh->b_gather.as<uint32_t>();
    d->split[0].forced = srs->points[SEC_L].on_host();
    d->split[1].forced = srs->points[SEC_A].on_host();
    d->split[2].forced = srs->points[SEC_B1].on_host() || srs->points[SEC_B2].on_host();
    split_async(gpu, d->side, d->split[0], w + sh->num_inputs, nullptr, sh->num_aux);
    split_async(gpu, d->side, d->split[1], w, a_map, sh->a_gather_len);
    split_async(gpu, d->side, d->split[2], w, b_map, sh->b_gather_len);
    check(cudaEventRecord(d->split_ready, d->side), "the 0/1 split");
}

// The sums of the points whose scalar is 1, on `side` behind the splits (the points of sections
// in host memory come over in chunks first: sum_ones_mapped).
static void queue_ones(sf_device* d, const sf_srs* srs)
{
    const gpu_t& gpu = *d->gpu;
    const uint32_t grid_div = ones_grid_div();
    auto ones = [&](auto bucket_tag, uint32_t q, const dbuf& points, const split_t& sp) {
        typedef decltype(bucket_tag) bucket;
        typedef typename bucket::affine_t::mem_t mem;
        if (points.on_host())
            sum_ones_mapped<bucket>(gpu, d, d->ones[q], points.as<mem>(), sp, q, grid_div);
        else
            sum_ones_async<bucket>(gpu, d->side, d->ones[q], points.as<mem>(), sp);
    };
    ones(bucket_t{}, 0, srs->points[SEC_L], d->split[0]);
    ones(bucket_t{}, 1, srs->points[SEC_A], d->split[1]);
    ones(bucket_t{}, 2, srs->points[SEC_B1], d->split[2]);
    ones(bucket2_t{}, 3, srs->points[SEC_B2], d->split[2]);
}

static void queue_splits_and_ones(sf_device* d, const sf_srs* srs, const sf_shape* sh, const scalar_t* w)
{
    queue_splits(d, srs, sh, w);
    queue_ones(d, srs);
}

// The tail MSMs of L, A, B-G1 and B-G2 (each timed by the host clock), once the splits are
// known (splits_known).
static void prove_tails(sf_device* d, const sf_srs* srs, const sf_shape* sh, const scalar_t* w, sf_msm_sums* out,
                        sf_timings* t)
{
    const gpu_t& gpu = *d->gpu;
    const uint32_t* a_map = sh->a_gather.as<uint32_t>();
    const uint32_t* b_map = sh->b_gather.as<uint32_t>();
    const int copy_sms = tail_copy_sms();
    auto phase = clock_type::now();
    tail_query<bucket_t, point_t, affine_t>(gpu, d, out->l, srs->points[SEC_L].as<g1_mem_t>(), d->split[0],
                                            w + sh->num_inputs, nullptr, "the L MSM", copy_sms);
    t->msm_l = ms_since(phase);
    phase = clock_type::now();
    // the A and B queries have points only for the variables of their density
    tail_query<bucket_t, point_t, affine_t>(gpu, d, out->a, srs->points[SEC_A].as<g1_mem_t>(), d->split[1], w, a_map,
                                            "the A MSM", copy_sms);
    t->msm_a = ms_since(phase);
    phase = clock_type::now();
    tail_query<bucket_t, point_t, affine_t>(gpu, d, out->b_g1, srs->points[SEC_B1].as<g1_mem_t>(), d->split[2], w,
                                            b_map, "the B-G1 MSM", copy_sms);
    t->msm_b_g1 = ms_since(phase);
    phase = clock_type::now();
    tail_query<bucket2_t, point2_t, affine2_t>(gpu, d, out->b_g2, srs->points[SEC_B2].as<g2_mem_t>(), d->split[2], w,
                                               b_map, "the B-G2 MSM", copy_sms);
    t->msm_b_g2 = ms_since(phase);
}

// Wait for the sums of the ones on `side` (`wait_ones`), add them to the queries' sums, and
// count what the kernels read of the sections in host memory: the points whose scalar is 1
// (summed) or neither 0 nor 1 (gathered); those whose scalar is 0 are never read.
static void finish_ones(sf_device* d, const sf_srs* srs, sf_msm_sums* out, sf_timings* t)
{
    auto phase = clock_type::now();
    wait_stream(d->side, "the sums of the ones");
    t->wait_ones = ms_since(phase);
    add_ones<bucket_t>(out->l, d->split[0], d->ones[0], "the L MSM");
    add_ones<bucket_t>(out->a, d->split[1], d->ones[1], "the A MSM");
    add_ones<bucket_t>(out->b_g1, d->split[2], d->ones[2], "the B-G1 MSM");
    add_ones<bucket2_t>(out->b_g2, d->split[2], d->ones[3], "the B-G2 MSM");
    const uint32_t sections[4] = {SEC_L, SEC_A, SEC_B1, SEC_B2};
    const int splits[4] = {0, 1, 2, 2};
    for (int q = 0; q < 4; q++)
        if (srs->points[sections[q]].on_host())
            t->h2d_mapped += (double)(d->split[splits[q]].n_ones + d->split[splits[q]].n_tail) * point_bytes(sections[q]);
}
