// The FFI for what a prove reads (included once, by resident.cu): a witness's device memory and
// its upload, the parameters' points converted from the file's bytes, the constraint shape.

static void witness_free(sf_witness* w)
{
    w->dev->gpu->select();
    w->buf.release();
    w->stage.release();
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
        w->kept_compact = false;
        check(cudaMemcpyAsync(w->buf.ptr, host, len * sizeof(scalar_t), cudaMemcpyHostToDevice, w->stream), "uploading the witness");
        wait_stream(w->stream, "uploading the witness");
        w->len = len;
    });
}

// Whether the expansion reads the compact witness over PCIe in place rather than from a copy
// in device memory (compact_source, SNARKFLOW_COMPACT_COPY=1). Compared on an H100 at 32 GiB
// (docs/benchmarks.md, "The lean plan on a simulated 16 GB card"): the same proofs, and upload
// times the runs could not tell apart, so in place stays the default;
// SNARKFLOW_COMPACT_MAPPED=1 keeps it even where the copy is asked for.
static bool compact_mapped()
{
    static const bool on = getenv("SNARKFLOW_COMPACT_COPY") == nullptr || getenv("SNARKFLOW_COMPACT_MAPPED") != nullptr;
    return on;
}

// Where the expansion reads a compact witness of `bytes` in pinned memory `blob` from: a copy in
// the witness's device staging (one bulk copy, ~2 ms for a 32 GiB partition's 0.1 GB), made
// larger as needed, or, where device memory has no room for it, the blob itself through its
// mapping (each warp's reads a PCIe round trip: slower, and exposed between proves where a plan
// has one witness buffer).
static const uint8_t* compact_source(sf_witness* w, const uint8_t* blob, size_t bytes)
{
    if (!compact_mapped()) {
        if (w->stage.bytes < bytes) {
            w->stage.release();
            size_t want = bytes + bytes / 8;   // partitions' compact forms differ a little
            void* p = nullptr;
            if (cudaMalloc(&p, want) == cudaSuccess) {
                w->stage.ptr = p;
                w->stage.bytes = want;
            } else {
                (void)cudaGetLastError();
                TRACE("no device memory for a %zu-byte compact witness: read in place", bytes);
            }
        }
        if (w->stage.bytes >= bytes) {
            check(cudaMemcpyAsync(w->stage.ptr, blob, bytes, cudaMemcpyHostToDevice, w->stream),
                  "copying the compact witness");
            return w->stage.as<uint8_t>();
        }
    }
    void* dblob = nullptr;
    check(cudaHostGetDevicePointer(&dblob, (void*)blob, 0), "mapping the compact witness");
    return static_cast<const uint8_t*>(dblob);
}

// The witness of `len` values from its compact form of `bytes` in pinned memory `blob` (class
// words at byte 0, word offsets at `offsets_at`, the other values at `others_at`; see
// `expand_witness`), written into the witness buffer on its upload stream; waits for it.
// `one` is the host's 1 (Montgomery form), written for every value of class 1. Takes no device
// lock, like sf_witness_upload.
SF_FFI RustError::by_value sf_witness_upload_compact(sf_witness* w, const uint8_t* blob, size_t bytes,
                                                     size_t offsets_at, size_t others_at, size_t len,
                                                     const scalar_t* one)
{
    return guarded([&] {
        if (len * sizeof(scalar_t) > w->buf.bytes)
            throw sf_error(-1, "the witness is larger than its device buffer");
        w->dev->gpu->select();
        w->len = 0;
        w->kept_compact = false;
        if (len == 0)
            return;
        if (offsets_at > bytes || others_at > bytes)
            throw sf_error(-1, "a compact witness's parts lie outside its bytes");
        const uint8_t* d = compact_source(w, blob, bytes);
        fr_bits one_bits;
        memcpy(&one_bits, one, sizeof(one_bits));
        size_t words = (len + 31) / 32;
        uint32_t threads = 256;
        uint32_t blocks = (uint32_t)std::min<size_t>((words + threads - 1) / threads, (size_t)w->dev->gpu->sm_count() * 8);
        expand_witness<<<blocks, threads, 0, w->stream>>>(w->buf.as<fr_bits>(), reinterpret_cast<const uint64_t*>(d),
                                                         reinterpret_cast<const uint32_t*>(d + offsets_at),
                                                         reinterpret_cast<const fr_bits*>(d + others_at), one_bits, len);
        check(cudaGetLastError(), "expanding the compact witness");
        wait_stream(w->stream, "expanding the compact witness");
        w->len = len;
    });
}

// The compact plan's staging (compact.cuh): the compact form of `bytes` in pinned memory `blob`
// (laid out as for sf_witness_upload_compact) copied into the witness's device staging, made
// larger as needed, and kept there as it is: the prove reads it in place. Waits for the copy;
// takes no device lock.
SF_FFI RustError::by_value sf_witness_keep_compact(sf_witness* w, const uint8_t* blob, size_t bytes,
                                                   size_t offsets_at, size_t others_at, size_t len,
                                                   const scalar_t* one)
{
    return guarded([&] {
        w->dev->gpu->select();
        w->len = 0;
        w->kept_compact = false;
        if (offsets_at > bytes || others_at > bytes || offsets_at < (len + 31) / 32 * 8)
            throw sf_error(-1, "a compact witness's parts lie outside its bytes");
        if (w->stage.bytes < bytes) {
            w->stage.release();
            // partitions' compact forms differ a little
            w->stage.ensure(bytes + bytes / 8, "allocating device memory for a compact witness");
        }
        check(cudaMemcpyAsync(w->stage.ptr, blob, bytes, cudaMemcpyHostToDevice, w->stream),
              "copying the compact witness");
        wait_stream(w->stream, "copying the compact witness");
        w->offsets_at = offsets_at;
        w->others_at = others_at;
        memcpy(w->one, one, sizeof(w->one));
        w->len = len;
        w->kept_compact = true;
    });
}

SF_FFI void sf_witness_free(sf_witness* w)
{
    if (w)
        witness_free(w);
}

// Memory for `counts[s]` points of each section: on the device, or in mapped host memory for
// the sections `place` names (the plans that do not hold the whole key on the device).
SF_FFI RustError::by_value sf_srs_new(sf_device* d, const size_t counts[SECTIONS], const sf_placement* place,
                                      sf_srs** out)
{
    auto* srs = new sf_srs();
    RustError e = guarded([&] {
        d->gpu->select();
        srs->dev = d;
        srs->h_batch = place->h_batch;
        srs->lean = place->lean != 0;
        srs->compact = place->compact != 0;
        for (uint32_t s = 0; s < SECTIONS; s++) {
            srs->count[s] = counts[s];
            bool on_host = (place->host_sections >> s) & 1;
            srs->points[s].ensure_at(on_host, std::max<size_t>(counts[s], 1) * point_bytes(s),
                                     on_host ? "allocating pinned host memory for the parameters"
                                             : "allocating device memory for the parameters");
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
        // (a section in mapped host memory is written there over PCIe by the same kernels)
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

// Copy the first `points` H points (fewer if H has fewer) from mapped host memory to the
// device, where H lives on the host: the H MSM then streams only the rest. Replaces a copy made
// before; on failure (no room) the device keeps none.
SF_FFI RustError::by_value sf_srs_keep_h_front(sf_srs* srs, size_t points)
{
    return guarded([&] {
        std::unique_lock<std::shared_mutex> lock(srs->front);
        if (!srs->points[SEC_H].on_host())
            throw sf_error(-1, "the H points are on the device already");
        srs->dev->gpu->select();
        srs->h_front.release();
        srs->h_front_len = 0;
        points = std::min(points, srs->count[SEC_H]);
        if (points == 0)
            return;
        size_t bytes = points * sizeof(g1_mem_t);
        cudaError_t e = cudaMalloc(&srs->h_front.ptr, bytes);
        if (e == cudaSuccess) {
            srs->h_front.bytes = bytes;
            e = cudaMemcpy(srs->h_front.ptr, srs->points[SEC_H].host, bytes, cudaMemcpyHostToDevice);
        }
        if (e != cudaSuccess) {
            // the caller goes on without a front: leave no error behind for the next check
            (void)cudaGetLastError();
            srs->h_front.release();
            check(e, "keeping the front of the H points on the device");
        }
        srs->h_front_len = points;
    });
}

// Free the device's copy of the front of H (waits for proves reading it); returns its bytes.
SF_FFI size_t sf_srs_drop_h_front(sf_srs* srs)
{
    std::unique_lock<std::shared_mutex> lock(srs->front);
    srs->dev->gpu->select();
    size_t bytes = srs->h_front.bytes;
    srs->h_front.release();
    srs->h_front_len = 0;
    return bytes;
}

// H points the device keeps a copy of (sf_srs_keep_h_front)
SF_FFI size_t sf_srs_h_front(const sf_srs* srs)
{
    std::shared_lock<std::shared_mutex> lock(srs->front);
    return srs->h_front_len;
}

// device bytes, and (host) the mapped host bytes
SF_FFI size_t sf_srs_bytes(const sf_srs* srs, size_t* host)
{
    std::shared_lock<std::shared_mutex> lock(srs->front);
    size_t total = srs->h_front.bytes, on_host = 0;
    for (auto& p : srs->points) {
        total += p.device_bytes();
        on_host += p.bytes - p.device_bytes();
    }
    if (host)
        *host = on_host;
    return total;
}

SF_FFI void sf_srs_free(sf_srs* srs)
{
    if (!srs) return;
    std::lock_guard<std::mutex> lock(srs->dev->busy);
    srs->dev->gpu->select();
    for (auto& p : srs->points) p.release();
    srs->staging.release();
    srs->h_front.release();
    delete srs;
}

// A copy of `bytes` at `src` in mapped host memory (the matrices of a shape kept on the host).
static void to_host(dbuf& dst, const void* src, size_t bytes, const char* what)
{
    dst.ensure_host(std::max<size_t>(bytes, 32), what);
    if (bytes)
        memcpy(dst.host, src, bytes);
}

SF_FFI RustError::by_value sf_shape_new(sf_device* d, const sf_shape_desc* desc, const sf_placement* place,
                                        sf_shape** out)
{
    auto* sh = new sf_shape();
    RustError e = guarded([&] {
        const gpu_t& gpu = *d->gpu;
        gpu.select();
        stream_t& s = gpu;
        sh->dev = d;
        sh->on_host = place->shape_on_host != 0;
        sh->chunk_nnz = place->shape_chunk ? place->shape_chunk : ((size_t)1 << 25);
        sh->host_bytes = 0;
        sh->num_inputs = desc->num_inputs;
        sh->num_aux = desc->num_aux;
        sh->rows = desc->rows;
        sh->fold = desc->fold;
        const sf_fold& f = sh->fold;
        // (each bound checked without overflow: a fold names at most rows and columns it has)
        const uint64_t width = desc->num_inputs + desc->num_aux;
        auto within = [](uint64_t start, uint64_t per, uint64_t blocks, uint64_t limit) {
            return start <= limit && (per == 0 || blocks <= (limit - start) / per);
        };
        if (f.blocks && (f.rows == 0 || !within(f.head_rows, f.rows, f.blocks, sh->rows)
                         || !within(f.input_start, f.inputs, f.blocks, width)
                         || !within(f.aux_start, f.aux, f.blocks, width)))
            throw sf_error(-1, "the shape's fold is past its rows or columns");
        const size_t stored = f.blocks ? sh->rows - (f.blocks - 1) * f.rows : sh->rows;
        if (f.blocks && sh->on_host)
            throw sf_error(-1, "a folded shape is kept on the device");
        for (int i = 0; i < 3; i++)
            if (desc->m[i].rows != stored)
                throw sf_error(-1, "the three matrices must have as many rows");
        size_t lg = 0;
        while (((size_t)1 << lg) < sh->rows) lg++;
        if (lg > 31)
            throw sf_error(-1, "too many constraints for the NTT domain");
        sh->lg_domain = lg;
        sh->bytes = 0;
        // the C matrix only where h is made from c = C·w (SNARKFLOW_SEVEN_NTT, the compact plan)
        const int matrices = seven_ntt() || place->compact ? 3 : 2;
        for (int i = 0; i < matrices; i++) {
            const sf_csr& m = desc->m[i];
            dev_csr& dm = sh->m[i];
            dm.rows = m.rows;
            dm.nnz = m.nnz;
            if (sh->on_host) {
                const char* what = "allocating pinned host memory for the constraint shape";
                to_host(dm.row_starts, m.row_starts, (m.rows + 1) * sizeof(uint64_t), what);
                to_host(dm.cols, m.cols, m.nnz * sizeof(uint32_t), what);
                to_host(dm.coeffs, m.coeffs, m.nnz * sizeof(uint32_t), what);
                sh->host_bytes += dm.row_starts.bytes + dm.cols.bytes + dm.coeffs.bytes;
                continue;
            }
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

SF_FFI size_t sf_shape_bytes(const sf_shape* sh, size_t* host)
{
    if (host)
        *host = sh->host_bytes;
    return sh->bytes;
}

SF_FFI void sf_shape_free(sf_shape* sh)
{
    if (!sh) return;
    std::lock_guard<std::mutex> lock(sh->dev->busy);
    sh->dev->gpu->select();
    for (auto& m : sh->m) { m.row_starts.release(); m.cols.release(); m.coeffs.release(); }
    sh->table.release(); sh->a_gather.release(); sh->b_gather.release();
    delete sh;
}
