// The steps of one prove timed by CUDA events, for SNARKFLOW_RESIDENT_TRACE (included by
// msm_one_pass.cuh, after TRACE and `check`): what issue 38 asks to see per 32 GiB partition —
// the SpMV, each NTT, and the H MSM's digits, sort, sums of the ones, accumulation, joins and
// reduction — where the prove's phases (upload, spmv, ntt, h) only give sums.
//
// The prove's thread `watch`es one stream (the resident plan's `prep`: a, b, c, the NTTs and
// the H MSM, one after another) and marks the end of each step queued on it; marks on other
// streams are not taken (the tail MSMs go through the same one-pass driver on their own
// stream). Once the stream is done, `report` prints each step's milliseconds: the time between
// its mark and the one before on the stream. The tails run beside on other streams, so a step's
// time is what it took sharing the device, as the phases are. Nothing is recorded, and no event
// made, while tracing is off.

#include <string>
#include <utility>
#include <vector>

struct step_marks {
    cudaStream_t watched = nullptr;
    std::vector<std::pair<const char*, cudaEvent_t>> taken;

    ~step_marks() { forget(); }

    void forget()
    {
        for (auto& t : taken)
            (void)cudaEventDestroy(t.second);
        taken.clear();
        watched = nullptr;
    }

    // Start watching `s` (when tracing): the steps marked from now on are this prove's.
    void watch(cudaStream_t s)
    {
        forget();
        if (!tracing_on())
            return;
        watched = s;
        mark(s, "start");
    }

    // The step `name` ends here on `s` (nothing unless `s` is the stream watched).
    void mark(cudaStream_t s, const char* name)
    {
        if (watched == nullptr || s != watched)
            return;
        cudaEvent_t e;
        check(cudaEventCreate(&e), "timing a step");
        taken.emplace_back(name, e);
        check(cudaEventRecord(e, s), "timing a step");
    }

    // After the stream watched is done: one line, each step and its milliseconds; then forget.
    void report()
    {
        if (watched != nullptr && taken.size() > 1) {
            std::string line;
            for (size_t i = 1; i < taken.size(); i++) {
                float ms = 0;
                check(cudaEventElapsedTime(&ms, taken[i - 1].second, taken[i].second), "timing a step");
                char item[96];
                snprintf(item, sizeof item, "%s%s %.1f", i > 1 ? ", " : "", taken[i].first, ms);
                line += item;
            }
            TRACE("steps (ms, on the stream of a, b, c, the NTTs and H): %s", line.c_str());
        }
        forget();
    }
};

// This thread's marks: a prove runs on one host thread from its start to its last wait.
static step_marks& steps()
{
    static thread_local step_marks marks;
    return marks;
}
