// host_math_fast.cpp: the shims of host_math.cpp for MathMode::Fast (NVRTC
// -DNRPT_FAST_MATH=1): the same kernels' code with kernels/fastmath.cuh's hardware
// approximations, emulated on the host (the correctly rounded value moved by an error
// as large as the PTX ISA documents), under the names nrpt_fast_host_*. The GPU also
// contracts products into FMAs in this mode; the host build does not (-ffp-contract=off
// as for exact mode): a contraction moves a result by at most an ulp or so, far less
// than the approximations' errors emulated here.
#define NRPT_FAST_MATH 1
#define NRPT_HOST_FN(name) nrpt_fast_host_##name
#include "host_math.cpp"
