// The compact plan's prove (included once, by resident.cu, after lean.cuh), for cards of about
// 12 GB: the lean plan's phases in two domain vectors instead of three. The witness stays on
// the device in its compact form (sf_witness_keep_compact: two bits a value, an offset per 32
// values and the values that are neither 0 nor 1, about a byte a value at 32 GiB) and the
// products read it there, so the whole witness is a vector of its own in phase 1 only:
//
//   1. the witness written out whole into a's memory; the 0/1 splits, the sums of the points
//      whose scalar is 1 and the tail MSMs, their index lists, staging and gathered points in
//      b's (as the lean plan, which has a's and b's for them);
//   2. a = A·w and b = B·w from the compact form, both to the coset (four NTTs), a_c∘b_c in a;
//   3. c = C·w into b (the shape keeps the C matrix for this plan: folded, ~0.2 GiB at 32 GiB),
//      to the coset, h = (a_c·b_c − c_c)/Z there and back to coefficients: seven NTTs, where
//      the other plans' six need c beside a and b;
//   4. the H MSM in batches copied into b's two halves.
//
// At 32 GiB the device then holds two 4 GiB vectors, the folded matrices, the A/B gather lists,
// the compact witnesses and one phase's workspace (crates/prover/src/memory_plan.rs counts it).
// Every point section is in mapped host memory, as in the streamed and lean plans.

// Value i of a compact witness in device memory: expand_witness's decoding of one value.
struct compact_witness {
    const uint64_t* classes;
    const uint32_t* word_others;
    const fr_bits* others;
    fr_bits one;

    __device__ __forceinline__ scalar_t operator()(size_t i) const
    {
        const uint64_t word = classes[i / 32];
        const uint32_t at = (uint32_t)(i % 32);
        const uint32_t cls = compact_class(word, at);
        fr_bits v = {{0, 0, 0, 0}};
        if (cls == 1)
            v = one;
        else if (cls == 2)
            v = others[compact_other(word, at, word_others[i / 32])];
        return *reinterpret_cast<const scalar_t*>(&v);
    }
};

static compact_witness compact_view(const sf_witness* wit)
{
    const uint8_t* base = wit->stage.as<uint8_t>();
    compact_witness v;
    v.classes = reinterpret_cast<const uint64_t*>(base);
    v.word_others = reinterpret_cast<const uint32_t*>(base + wit->offsets_at);
    v.others = reinterpret_cast<const fr_bits*>(base + wit->others_at);
    memcpy(&v.one, wit->one, sizeof(v.one));
    return v;
}

// Phases 2 and 3 on `prep`: h in a, b free again. `marks` as queue_h records them (the C
// product is timed with the NTTs).
static void queue_h_compact(sf_device* d, const sf_shape* sh, const compact_witness& w)
{
    const gpu_t& gpu = *d->gpu;
    stream_t& s = *d->prep;
    const size_t m = (size_t)1 << sh->lg_domain;
    const uint32_t lg = (uint32_t)sh->lg_domain;
    scalar_t* a = d->a.as<scalar_t>();
    scalar_t* b = d->b.as<scalar_t>();
    auto product = [&](int i, scalar_t* v) {
        if (m > sh->rows)
            check(cudaMemsetAsync(v + sh->rows, 0, (m - sh->rows) * sizeof(scalar_t), s), "clearing a, b, c");
        const dev_csr& dm = sh->m[i];
        queue_spmv(gpu, s, v, dm.row_starts.as<uint64_t>(), dm.cols.as<uint32_t>(), dm.coeffs.as<uint32_t>(), sh, w,
                   dm.rows, 0, sh->fold);
    };
    auto to_coset = [&](scalar_t* v) {
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::standard);
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::RN, NTT::Direction::forward, NTT::Type::coset);
    };
    check(cudaEventRecord(d->marks[0], s), "timing a, b, c");
    product(0, a);
    product(1, b);
    check(cudaEventRecord(d->marks[1], s), "timing a, b, c");
    to_coset(a);
    to_coset(b);
    uint32_t blocks, threads;
    grid_for(gpu, m, blocks, threads);
    pointwise_mul<<<blocks, threads, 0, s>>>(a, a, b, m);
    check(cudaGetLastError(), "a·b on the coset");
    product(2, b);
    to_coset(b);
    sub_scale<<<blocks, threads, 0, s>>>(a, b, z_inverse(lg), m);
    check(cudaGetLastError(), "the quotient");
    NTT::Base_dev_ptr(s, a, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse, NTT::Type::coset);
    check(cudaEventRecord(d->marks[2], s), "timing the NTTs");
}

static void prove_compact(sf_device* d, const sf_srs* srs, const sf_shape* sh, const sf_witness* wit,
                          sf_msm_sums* out, sf_timings* t)
{
    const gpu_t& gpu = *d->gpu;
    if (sh->on_host || !sh->m[2].row_starts.ptr)
        throw sf_error(-1, "the compact plan needs the three matrices on the device (a shape uploaded for it)");
    const size_t m = (size_t)1 << sh->lg_domain;
    const size_t n = wit->len;
    // no c (a prove in another plan may have made one); a holds the whole witness in phase 1
    d->c.release();
    d->a.ensure(std::max(m, n) * sizeof(scalar_t), "allocating a, b");
    d->b.ensure(m * sizeof(scalar_t), "allocating a, b");
    const compact_witness cw = compact_view(wit);

    // 1. the witness whole in a; splits, ones, tails in b
    {
        lean_lending lending{d, nullptr};
        lend_phase_one(d, sh, d->b, d->b);
        const size_t words = (n + 31) / 32;
        uint32_t blocks = (uint32_t)std::min<size_t>((words + 255) / 256, (size_t)gpu.sm_count() * 8);
        expand_witness<<<std::max<uint32_t>(blocks, 1), 256, 0, d->side>>>(d->a.as<fr_bits>(), cw.classes,
                                                                          cw.word_others, cw.others, cw.one, n);
        check(cudaGetLastError(), "expanding the compact witness");
        phase_one(d, srs, sh, d->a.as<scalar_t>(), out, t);
    }

    // 2, 3. a, b from the compact witness, c after them in b, seven NTTs
    auto phase = clock_type::now();
    queue_h_compact(d, sh, cw);
    wait_stream(*d->prep, "a, b, c and the NTTs");
    t->wait_h = ms_since(phase);
    t->spmv = event_ms(d->marks[0], d->marks[1]);
    t->ntt = event_ms(d->marks[1], d->marks[2]);

    // 4. H (deg h ≤ m − 2: m − 1 points), in b's halves
    phase = clock_type::now();
    if (srs->points[SEC_H].on_host()) {
        dbuf halves[2];
        uint8_t* at = d->b.as<uint8_t>();
        const uint8_t* end = at + d->b.bytes;
        for (auto& half : halves)
            half.lend(at, end, d->b.bytes / 2 & ~(size_t)255, "allocating a batch of H points");
        t->h2d_copied += (double)h_msm_streamed(d, srs, d->a.as<scalar_t>(), m - 1, out->h, halves[0], halves[1]);
        for (auto& half : halves)
            half.release();
    } else {
        msm<bucket_t, point_t, affine_t>(gpu, out->h, srs->points[SEC_H].as<g1_mem_t>(), d->a.as<scalar_t>(), m - 1,
                                         "the H MSM");
    }
    t->msm_h = ms_since(phase);
    finish_ones(d, srs, out, t);
}
