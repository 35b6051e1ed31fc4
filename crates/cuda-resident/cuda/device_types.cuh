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
