// SF_HD: a function of the plain C++ headers that both the device code and the host checks
// (tests/*.cpp, built by a host compiler) use: host and device under nvcc, inline elsewhere.
#pragma once

#ifndef SF_HD
#ifdef __CUDACC__
#define SF_HD __host__ __device__ __forceinline__
#else
#define SF_HD inline
#endif
#endif
