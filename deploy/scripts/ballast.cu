// Hold all but argv[1] MiB of device 0 (as cudaMemGetInfo counts it) until killed; print one
// line once held.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <cuda_runtime.h>
int main(int argc, char** argv)
{
    size_t leave = strtoull(argv[1], nullptr, 10) << 20, free_b, total;
    cudaMemGetInfo(&free_b, &total);
    size_t held = 0, chunk = (size_t)1 << 30;
    while (free_b > leave + (1 << 20) && chunk >= (1 << 20)) {
        size_t want = free_b - leave < chunk ? free_b - leave : chunk;
        void* p;
        if (cudaMalloc(&p, want) == cudaSuccess) held += want; else { cudaGetLastError(); chunk /= 2; }
        cudaMemGetInfo(&free_b, &total);
    }
    printf("holding %.2f GiB, %.2f GiB free\n", held / 1073741824.0, free_b / 1073741824.0);
    fflush(stdout);
    pause();
}
