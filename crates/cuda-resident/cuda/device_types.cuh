// What the resident prover keeps on the device and how it reports failures (included once, by
// resident.cu, after sppark's headers): errors, tracing, device buffers, and the types the FFI
// hands out (device, parameters, shape, witness, sums, timings).

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

// whether environment variable `name` is set to `value` (the measuring switches below and in
// the other files: each read once per process into a static)
static bool env_is(const char* name, const char* value)
{
    const char* v = getenv(name);
    return v && std::string(v) == value;
}

#include "waits.cuh"   // wait_stream, wait_event: how the host waits for the device

// SNARKFLOW_RESIDENT_TRACE=1 prints each step of a prove to stderr (for debugging the device
// code; the timings come back to the caller either way)
static bool tracing_on()
{
    static const bool on = getenv("SNARKFLOW_RESIDENT_TRACE") != nullptr;
    return on;
}
// SNARKFLOW_SEVEN_NTT=1 makes h the way bellperson does (c = C·w, seven NTTs), for measuring
// against the default: c = a∘b on the domain (a satisfied system's identity), six NTTs, and no
// C matrix on the device. Read once per process; a shape uploaded under one setting proves
// under it.
static bool seven_ntt()
{
    static const bool on = getenv("SNARKFLOW_SEVEN_NTT") != nullptr;
    return on;
}

// The integers of a comma-separated list in environment variable `name` (empty when unset); an
// item equal to `word` reads as `word_value`. For the measuring switches that successive calls
// take in turn (`env_turns`), so that one process compares settings run by run.
static std::vector<int> env_int_list(const char* name, const char* word = nullptr, int word_value = 0)
{
    std::vector<int> v;
    const char* env = getenv(name);
    std::string s = env ? env : "";
    for (size_t at = 0; at <= s.size();) {
        size_t end = s.find(',', at);
        if (end == std::string::npos)
            end = s.size();
        std::string item = s.substr(at, end - at);
        if (!item.empty())
            v.push_back(word && item == word ? word_value : atoi(item.c_str()));
        at = end + 1;
    }
    return v;
}

// A measuring switch whose values (env_int_list) successive calls of `take` get in turn;
// `fallback` where the variable is unset.
struct env_turns {
    std::vector<int> list;
    std::atomic<size_t> next{0};
    explicit env_turns(std::vector<int> l) : list(std::move(l)) {}
    int take(int fallback) { return list.empty() ? fallback : list[next++ % list.size()]; }
};

// SNARKFLOW_PREP_PRIORITY=1 (measuring): the stream of a, b, c, the NTTs and the H MSM (`prep`)
// at the device's greatest stream priority, so that the block scheduler gives its kernels the
// SMs before those of the tails and the sums of the ones, which have until the end of the prove.
static bool prep_priority()
{
    static const bool on = env_is("SNARKFLOW_PREP_PRIORITY", "1");
    return on;
}

// SNARKFLOW_SIDE_PRIORITY=1 (measuring): the `side` stream (the 0/1 splits and the sums of the
// points whose scalar is 1) and `fetch` (the gathers of those points from host memory) at the
// device's greatest stream priority. Where those points are in host memory (partly resident and
// streamed plans) the sums wait on PCIe, and beside the one-pass H MSM, whose blocks fill every
// SM, they got too few blocks in flight to keep the bus busy (a 48 GB card: 10.2 GB/s, 0.33 s
// waited for them after the H MSM).
static bool side_priority()
{
    static const bool on = env_is("SNARKFLOW_SIDE_PRIORITY", "1");
    return on;
}

// sppark's stream_t makes its stream at the default (lowest) priority and keeps the handle
// private, while its NTT and MSM take a stream_t. A pointer to that member, obtained through an
// explicit instantiation (which access checking does not apply to), lets `prioritized_stream`
// put a stream of the greatest priority in its place; stream_t's destructor destroys it.
struct stream_handle_tag {
    typedef cudaStream_t stream_t::*type;
    friend type handle_member(stream_handle_tag);
};
template<typename Tag, typename Tag::type M> struct stream_handle_access {
    friend typename Tag::type handle_member(Tag) { return M; }
};
template struct stream_handle_access<stream_handle_tag, &stream_t::stream>;

// a stream_t on device `id`, at the greatest priority where prep_priority() asks for it
static stream_t* prep_stream(int id)
{
    stream_t* s = new stream_t(id);
    if (!prep_priority())
        return s;
    int least = 0, greatest = 0;
    cudaStream_t& handle = s->*handle_member(stream_handle_tag{});
    cudaError_t e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (e == cudaSuccess)
        e = cudaStreamDestroy(handle);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithPriority(&handle, cudaStreamNonBlocking, greatest);
    if (e != cudaSuccess) {
        handle = nullptr;   // not destroyed twice
        delete s;
        check(e, "creating the prep stream at a higher priority");
    }
    return s;
}

#define TRACE(...) do { if (tracing_on()) { fprintf(stderr, "resident: " __VA_ARGS__); fputc('\n', stderr); } } while (0)

// ---------------------------------------------------------------------------------------------
// device buffers

// Memory the kernels read: device memory, or (`on_host`) page-locked host memory mapped into
// the device's address space, which kernels read over PCIe ("zero-copy": only the bytes a
// kernel touches cross the bus). `ptr` is the address kernels use, `host` the one the CPU uses
// (the same under unified addressing; null for device memory).
// A dbuf may also be lent room inside another buffer (`lend`): it then owns nothing, and a
// request larger than the room gets memory of its own instead.
struct dbuf {
    void* ptr = nullptr;
    void* host = nullptr;
    size_t bytes = 0;
    bool borrowed = false;

    void ensure(size_t want, const char* what)
    {
        if (want <= bytes && !host)
            return;
        release();
        check(cudaMalloc(&ptr, want), what);
        bytes = want;
    }
    // `ensure` with an eighth more when it must grow: for buffers sized by what each partition
    // brings (its tails), so that a slightly larger one does not free and allocate again (a
    // cudaFree waits for the whole device, a second prove lane's work included)
    void ensure_grown(size_t want, const char* what)
    {
        if (want <= bytes && !host)
            return;
        ensure(want + want / 8, what);
    }
    void ensure_host(size_t want, const char* what)
    {
        if (want <= bytes && host)
            return;
        release();
        check(cudaHostAlloc(&host, want, cudaHostAllocMapped | cudaHostAllocPortable), what);
        cudaError_t e = cudaHostGetDevicePointer(&ptr, host, 0);
        if (e != cudaSuccess) {
            (void)cudaFreeHost(host);
            host = nullptr;
            check(e, what);
        }
        bytes = want;
    }
    void ensure_at(bool on_host, size_t want, const char* what)
    {
        if (on_host)
            ensure_host(want, what);
        else
            ensure(want, what);
    }
    void release()
    {
        if (borrowed)
            borrowed = false;
        else if (host)
            (void)cudaFreeHost(host);
        else if (ptr)
            (void)cudaFree(ptr);
        ptr = host = nullptr;
        bytes = 0;
    }
    // use `want` bytes at `*cursor` (device memory another buffer owns, up to `end`) and move the
    // cursor past them, 256-aligned; where they do not fit, memory of its own as `ensure` gives
    void lend(uint8_t*& cursor, const uint8_t* end, size_t want, const char* what)
    {
        want = (want + 255) & ~(size_t)255;
        if ((size_t)(end - cursor) < want) {
            ensure(want, what);
            return;
        }
        release();
        ptr = cursor;
        bytes = want;
        borrowed = true;
        cursor += want;
    }
    bool on_host() const { return host != nullptr; }
    // device bytes held (mapped host memory is not device memory)
    size_t device_bytes() const { return host || borrowed ? 0 : bytes; }
    template<typename T> T* as() const { return reinterpret_cast<T*>(ptr); }
    template<typename T> T* as_host() const { return reinterpret_cast<T*>(host); }
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
// Both index lists share one buffer of n entries (`lists`): the ones from the front, the tail
// from the back (the tail list is its last n_tail entries).
struct split_t {
    dbuf lists, counts;
    size_t n = 0;
    uint32_t n_ones = 0, n_tail = 0;

    // points in host memory: never one MSM over all of them (each window would read every
    // point over PCIe again), always the split
    bool forced = false;

    // the tail MSM pays when it skips at least half the points (else: one MSM over all)
    bool used() const { return forced || n_tail <= n / 2; }
    uint32_t* ones() const { return lists.as<uint32_t>(); }
    uint32_t* tail() const { return lists.as<uint32_t>() + (n - n_tail); }
    void release() { lists.release(); counts.release(); }
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
    // one prove at a time per handle: the MSM objects and these buffers are shared
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
    // the H MSM's buffers (msm_one_pass.cuh), queued on `prep` right behind h, and the tail
    // MSMs' (one after another on the device's own stream, or on `tails`)
    one_pass_work h_msm, tail_msm;
    // A second prove lane on the same GPU (sf_device_open_lane: another handle with buffers and
    // streams of its own, proving beside the first with the same parameters and shape) queues
    // its tail MSMs here instead of on the device's own stream, and so does the first handle
    // once a lane proves beside it (sf_device_own_tail_stream).
    stream_t* tails = nullptr;
    // recorded on `side` once the three splits are written (the sums of the ones come after)
    cudaEvent_t split_ready = nullptr;
    // What is not resident comes over on `copy`: the constraint shape in chunks of rows
    // (`shape_stage`, two slots: one copied while the other's rows are multiplied) and the H
    // points in batches (into b and c, which h no longer needs by then). `staged[i]` is recorded
    // on `copy` when slot i is filled, `consumed[i]` on the stream that read it.
    cudaStream_t copy = nullptr;
    cudaEvent_t staged[2] = {nullptr, nullptr};
    cudaEvent_t consumed[2] = {nullptr, nullptr};
    dbuf shape_stage[2];
    // The points whose scalar is 1, of sections in mapped host memory, come over on `fetch` in
    // chunks of MAPPED_CHUNK (copy_points into `mapped_stage`, two slots) and are summed on
    // `side` from there (`fetched[i]`, `added[i]` say when slot i is full and free again);
    // `iota` indexes a chunk in place, `chunk_count` holds each chunk's length, `more_sums` a
    // chunk's partial sums before they are added to the query's.
    cudaStream_t fetch = nullptr;
    cudaEvent_t fetched[2] = {nullptr, nullptr};
    cudaEvent_t added[2] = {nullptr, nullptr};
    cudaEvent_t counted = nullptr;   // a query's chunk lengths are written
    dbuf mapped_stage[2], iota, chunk_count, more_sums;
    uint64_t chunks_queued = 0;

    void release_workspace()
    {
        a.release(); b.release(); c.release(); scalars.release();
        for (auto& sp : split) sp.release();
        for (auto& o : ones) o.sums.release();
        tail_points.release();
        h_msm.release();
        tail_msm.release();
        for (auto& st : shape_stage) st.release();
        for (auto& st : mapped_stage) st.release();
        iota.release(); chunk_count.release(); more_sums.release();
    }
};

// points per chunk of a mapped section's 1s on their way to the device, and chunks per query
static const size_t MAPPED_CHUNK = (size_t)1 << 20;
static const uint32_t MAPPED_MAX_CHUNKS = 4096;

enum section_t : uint32_t { SEC_H = 0, SEC_L = 1, SEC_A = 2, SEC_B1 = 3, SEC_B2 = 4, SECTIONS = 5 };

// Where a key's parts live (sf_srs_new, sf_shape_new): bit s of `host_sections` puts section s
// in mapped host memory; `shape_on_host` the three matrices (the table and the A/B gather
// lists stay on the device: every prove reads them whole).
struct sf_placement {
    uint32_t host_sections;
    uint32_t shape_on_host;
    // points per H batch when H is on the host (0: the largest that fits in b or c)
    size_t h_batch;
    // non-zeros per shape chunk when the shape is on the host (0: a default)
    size_t shape_chunk;
    // the lean plan (lean.cuh): a prove's phases one after another, so that they share memory
    uint32_t lean;
    // the compact plan (compact.cuh): the lean plan's phases in two domain vectors, the witness
    // kept compact on the device, h made with the C matrix (which the shape then keeps)
    uint32_t compact;
};

struct sf_srs {
    sf_device* dev;
    size_t count[SECTIONS];
    dbuf points[SECTIONS];
    dbuf staging;   // raw file bytes on their way to conversion
    size_t h_batch;
    bool lean, compact;
    // with H on the host: a copy of its first `h_front_len` points on the device, where the plan
    // has room to spare (sf_srs_keep_h_front); the H MSM reads them there and streams the rest.
    // A prove holds `front` shared; giving the copy back (another key needs the room) exclusively.
    dbuf h_front;
    size_t h_front_len = 0;
    mutable std::shared_mutex front;
};

struct sf_csr {
    const uint64_t* row_starts;   // rows + 1
    const uint32_t* cols;         // nnz, indices into [inputs | aux]
    const uint32_t* coeffs;       // nnz, indices into the coefficient table
    size_t rows;
    size_t nnz;
};

#include "fold.cuh"   // sf_fold: a shape's repeated blocks stored once
#include "compact_index.h"   // where a compact witness's values are

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
    size_t rows;                  // constraints (the matrices store fewer when folded)
    sf_fold fold;
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
    size_t bytes;          // device bytes
    size_t host_bytes;     // mapped host bytes (the matrices, when on the host)
    bool on_host;
    size_t chunk_nnz;      // non-zeros per streamed chunk
    sf_fold fold;          // blocks = 0: the matrices hold every row
};

struct sf_witness {
    sf_device* dev;
    dbuf buf;
    dbuf stage;   // a compact witness copied over before it is expanded into `buf`
    size_t len = 0;
    cudaStream_t stream = nullptr;
    // The compact plan (compact.cuh): the witness is the compact form kept in `stage` (class
    // words from byte 0, word offsets from `offsets_at`, the other values from `others_at`),
    // and `one` the value of class 1 (Montgomery form); `buf` is not used.
    bool kept_compact = false;
    size_t offsets_at = 0, others_at = 0;
    uint64_t one[4] = {0, 0, 0, 0};
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
    // bytes copied to the device during the prove (streamed shape and H points; the witness is
    // counted by its upload) and read by kernels from mapped host memory (an estimate: the
    // points whose scalar is not 0)
    double h2d_copied, h2d_mapped;
    // bytes of the witness's upload (set by the host half, which staged it)
    double h2d_witness;
};
