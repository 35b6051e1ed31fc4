// How the host waits for the device (included by device_types.cuh, after `check` and `env_is`).
//
// cudaStreamSynchronize and cudaEventSynchronize spin on a core while they wait when the
// process has fewer CUDA contexts than the host has cores (the driver's default scheduling),
// and a prove waits on up to five host threads at once (H and the four tail MSMs): a
// gpu-worker used 3.4 core-seconds per 32 GiB partition of 1.37 s (H200, 2026-12-07), cores
// that synthesis on the same host could use. SNARKFLOW_BLOCKING_WAIT=1 (measuring) polls
// instead, sleeping between looks: a wait ends up to ~0.1 ms after the work does, at a few
// percent of a core. Polling, not a blocking-sync event, because a stream may belong to a
// device other than the waiting thread's current one (an event must be of the stream's).

#include <thread>

static bool blocking_wait()
{
    static const bool on = env_is("SNARKFLOW_BLOCKING_WAIT", "1");
    return on;
}

// Sleep between looks while `query` answers cudaErrorNotReady; then its answer.
template<typename Query>
static cudaError_t poll_until_done(Query query)
{
    cudaError_t e;
    while ((e = query()) == cudaErrorNotReady)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    return e;
}

// Wait for everything queued on `s`.
static void wait_stream(cudaStream_t s, const char* what)
{
    if (!blocking_wait())
        check(cudaStreamSynchronize(s), what);
    else
        check(poll_until_done([s] { return cudaStreamQuery(s); }), what);
}

// Wait for event `e` (recorded on some stream).
static void wait_event(cudaEvent_t e, const char* what)
{
    if (!blocking_wait())
        check(cudaEventSynchronize(e), what);
    else
        check(poll_until_done([e] { return cudaEventQuery(e); }), what);
}
