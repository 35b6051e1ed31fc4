// The lean plan's prove (included once, by resident.cu, before sf_prove): the streamed plan's
// work with its phases one after another, so that they share device memory, for cards of about
// 16 GB. Every point section and the matrices are in mapped host memory, as in the streamed plan.
//
//   1. the 0/1 splits, the sums of the points whose scalar is 1 and the tail MSMs, their index
//      lists in b's memory and their staging and gathered points in a's (neither holds anything
//      yet);
//   2. a = A·w and b = B·w (the matrices streamed in chunks), then c = a∘b written over the
//      witness, which nothing reads any more: its buffer is made as large as the domain;
//   3. the six NTTs, h in a;
//   4. the H MSM in batches copied into b and the witness's buffer.
//
// At 32 GiB the device then holds three 4 GiB vectors, the A/B gather lists and one phase's
// workspace at a time (crates/prover/src/memory_plan.rs counts it). The witness is used up: a
// second prove of it fails (its length is zeroed) rather than proving from c.

// Gives back the room lent to phase 1's buffers (lend), and marks the witness used (where `wit`
// is given: the lean plan writes c over it), however the prove ends.
struct lean_lending {
    sf_device* d;
    sf_witness* wit;
    void give_back()
    {
        for (auto& sp : d->split)
            if (sp.lists.borrowed)
                sp.lists.release();
        for (dbuf* b : {&d->mapped_stage[0], &d->mapped_stage[1], &d->tail_points, &d->scalars})
            if (b->borrowed)
                b->release();
    }
    ~lean_lending()
    {
        give_back();
        if (wit)
            wit->len = 0;
    }
};

// Phase 1's buffers lent room in `lists` (the three 0/1 splits' index lists) and then in
// `rest` (the staging of mapped points, the gathered tail points and their scalars), which may
// be the same buffer.
static void lend_phase_one(sf_device* d, const sf_shape* sh, const dbuf& lists, const dbuf& rest)
{
    uint8_t* at = lists.as<uint8_t>();
    const uint8_t* end = at + lists.bytes;
    const size_t lens[3] = {sh->num_aux, sh->a_gather_len, sh->b_gather_len};
    for (int q = 0; q < 3; q++)
        d->split[q].lists.lend(at, end, lens[q] * sizeof(uint32_t), "allocating the 0/1 split");
    if (rest.ptr != lists.ptr) {
        at = rest.as<uint8_t>();
        end = at + rest.bytes;
    }
    for (auto& st : d->mapped_stage)
        st.lend(at, end, MAPPED_CHUNK * sizeof(g2_mem_t), "allocating the staging of mapped points");
    // the rest: gathered tail points and their scalars (a G2 point and its scalar are 192 and 32
    // bytes)
    size_t left = (size_t)(end - at);
    d->tail_points.lend(at, end, left / 7 * 6 & ~(size_t)255, "allocating the gathered tail points");
    d->scalars.lend(at, end, (size_t)(end - at) & ~(size_t)255, "allocating gathered scalars");
}

// Phase 1 of the phased plans over the whole witness `w`: the 0/1 splits, the sums of the
// points whose scalar is 1 and the tail MSMs, all done when it returns (`wait_ones`: the wait
// for the sums past the tails).
static void phase_one(sf_device* d, const sf_srs* srs, const sf_shape* sh, const scalar_t* w, sf_msm_sums* out,
                      sf_timings* t)
{
    queue_splits_and_ones(d, srs, sh, w);
    splits_known(d);
    prove_tails(d, srs, sh, w, out, t);
    auto phase = clock_type::now();
    wait_stream(d->side, "the sums of the ones");
    wait_stream(d->fetch, "the sums of the ones");
    t->wait_ones = ms_since(phase);
}

static void prove_lean(sf_device* d, const sf_srs* srs, const sf_shape* sh, sf_witness* wit, sf_msm_sums* out,
                       sf_timings* t)
{
    const gpu_t& gpu = *d->gpu;
    const size_t m = (size_t)1 << sh->lg_domain;
    if (wit->buf.bytes < m * sizeof(scalar_t))
        throw sf_error(-1, "the lean plan needs a witness buffer as large as the domain (c is made in it)");
    // no c of its own (a prove in another plan may have made one), then a and b, which lend
    // their room to phase 1
    d->c.release();
    d->a.ensure(m * sizeof(scalar_t), "allocating a, b");
    d->b.ensure(m * sizeof(scalar_t), "allocating a, b");
    lean_lending lending{d, wit};
    lend_phase_one(d, sh, d->b, d->a);

    // 1. splits, ones, tails
    phase_one(d, srs, sh, wit->buf.as<scalar_t>(), out, t);
    lending.give_back();

    // 2, 3. a, b, c over the witness, the NTTs
    auto phase = clock_type::now();
    t->h2d_copied += (double)queue_h(d, sh, wit, wit->buf.as<scalar_t>());
    wait_stream(*d->prep, "a, b, c and the NTTs");
    t->wait_h = ms_since(phase);
    t->spmv = event_ms(d->marks[0], d->marks[1]);
    t->ntt = event_ms(d->marks[1], d->marks[2]);
    // the shape's staging is not needed again in this prove: its room goes to the H MSM
    for (auto& st : d->shape_stage)
        st.release();

    // 4. H (deg h ≤ m − 2: m − 1 points)
    phase = clock_type::now();
    if (srs->points[SEC_H].on_host())
        t->h2d_copied += (double)h_msm_streamed(d, srs, d->a.as<scalar_t>(), m - 1, out->h, d->b, wit->buf);
    else
        msm<bucket_t, point_t, affine_t>(gpu, out->h, srs->points[SEC_H].as<g1_mem_t>(), d->a.as<scalar_t>(), m - 1,
                                         "the H MSM");
    t->msm_h = ms_since(phase);
    finish_ones(d, srs, out, t);
}
