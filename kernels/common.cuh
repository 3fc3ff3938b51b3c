// common.cuh: portable types, the host/device qualifier macro, bit casts and the
// parameter blocks shared with Rust (`#[repr(C)]` Pod mirrors in nrpt-core and
// nrpt-cuda). Every header of kernels/ compiles three ways: with NVRTC for the GPU,
// with NVRTC/nvcc for the host side of __host__ __device__ functions, and with a plain
// host C++ compiler (g++ -ffp-contract=off), where __host__/__device__ are empty.
//
// Floating-point contract: no FMA contraction (NVRTC --fmad=false, g++
// -ffp-contract=off), IEEE division and square root, round to nearest even. Under it
// every function here gives the same bits on the CPU and on the GPU.
#pragma once

#if defined(__CUDACC__)
#define NRPT_HD __host__ __device__ __forceinline__
#define NRPT_MEMBER __host__ __device__ __forceinline__
#else
#ifndef __host__
#define __host__
#endif
#ifndef __device__
#define __device__
#endif
#define NRPT_HD static inline
#define NRPT_MEMBER inline
#include <math.h>
#endif

typedef unsigned char nrpt_u8;
typedef unsigned short nrpt_u16;
typedef unsigned int nrpt_u32;
typedef int nrpt_i32;
typedef unsigned long long nrpt_u64;
typedef long long nrpt_i64;

// NRPT_OTHER_RULES(); opens code that the paper's 2D configuration (buffered rule, DEO
// window, Jacobi ladder, SGD explorers behind Gaussian noise, the 25-mode target, no
// momentum, no per-iteration flag record) never runs, up to the comment
// `// sass-count: other-rules end`: the fences of the SASS counter's configuration
// bound (cuda/tests/sass_count.rs). On the GPU it is nothing; in the host builds it
// counts, per thread, the times such code ran, which the tests read to check that the
// paper's configuration never enters a fence (nrpt_cuda::host_math::other_rules_count).
#if defined(__CUDACC__)
#define NRPT_OTHER_RULES() ((void)0)
#else
static thread_local nrpt_u64 nrpt_other_rules_count __attribute__((unused)) = 0;
#define NRPT_OTHER_RULES() ((void)++nrpt_other_rules_count)
#endif

NRPT_HD float nrpt_f32_from_bits(nrpt_u32 u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    union { nrpt_u32 u; float f; } c;
    c.u = u;
    return c.f;
#endif
}

NRPT_HD nrpt_u32 nrpt_f32_to_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    union { nrpt_u32 u; float f; } c;
    c.f = f;
    return c.u;
#endif
}

NRPT_HD nrpt_u64 nrpt_f64_to_bits(double f) {
#if defined(__CUDA_ARCH__)
    return (nrpt_u64)__double_as_longlong(f);
#else
    union { nrpt_u64 u; double f; } c;
    c.f = f;
    return c.u;
#endif
}

/// Not NaN and not infinite (by the exponent bits: no library call, no fast-math trap).
NRPT_HD bool nrpt_finite_f32(float x) {
    return (nrpt_f32_to_bits(x) & 0x7f800000u) != 0x7f800000u;
}

NRPT_HD bool nrpt_finite_f64(double x) {
    return (nrpt_f64_to_bits(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

/// IEEE square root, correctly rounded (CUDA: sqrtf with --prec-sqrt=true).
NRPT_HD float nrpt_sqrtf(float x) { return sqrtf(x); }
NRPT_HD double nrpt_sqrt(double x) { return sqrt(x); }

/// Rust's `f64::max(a, b)` for the values the sampler meets (NaN loses).
NRPT_HD double nrpt_fmax(double a, double b) {
    if (a != a) return b;
    if (b != b) return a;
    return a > b ? a : b;
}

/// Rust's `f64::min(a, b)` for the values the sampler meets (NaN loses).
NRPT_HD double nrpt_fmin(double a, double b) {
    if (a != a) return b;
    if (b != b) return a;
    return a < b ? a : b;
}

/// Mirror of `nrpt_core::params::KernelParams` (96 bytes, no padding).
struct NrptKernelParams {
    double target_swap_rate;
    double gamma_a;
    double gamma_alpha;
    double gamma_b;
    double buffer_scale;
    double momentum;
    double ladder_min;
    double ladder_max;
    nrpt_u32 chains;
    nrpt_u32 dim;
    nrpt_u32 window;
    nrpt_u32 rule;
    nrpt_u32 explorer;
    nrpt_u32 adapt_flags;
    nrpt_u32 seed;
    nrpt_u32 ensemble;
};

/// Target codes of `GpuParams::target`.
#define NRPT_TARGET_MODES2D 0u
#define NRPT_TARGET_SUM_MODES 1u
#define NRPT_TARGET_SOURCE 2u

/// Bits of `KernelParams::adapt_flags` (nrpt_core::params::adapt_flags). The rule
/// variants are bits that are 0 for the paper's rules (nrpt_core::rules::Rules::PAPER).
#define NRPT_ADAPT_LADDER 1u
#define NRPT_ADAPT_BUFFER 2u
#define NRPT_FOLLOW_LADDER 4u
/// LadderUpdate::InPlace (0: LadderUpdate::Jacobi).
#define NRPT_LADDER_IN_PLACE 8u
/// BufferProjection::Unprojected (0: BufferProjection::NonNegative, C kept >= 0).
#define NRPT_BUFFER_UNPROJECTED 16u
/// MomentumOnSwap::Carry (0: MomentumOnSwap::Reset, both replicas of a swap restart
/// with zero velocity).
#define NRPT_MOMENTUM_CARRY 32u

/// Mirror of `nrpt_cuda::params::GpuParams` (144 bytes): core's block plus what the
/// kernels need beyond it. `core.ensemble` is the Philox key of ensemble 0 of the
/// launch; ensemble e of the launch uses `core.ensemble + e`.
struct NrptGpuParams {
    NrptKernelParams core;
    /// Noise scale of the stochastic gradient, σ_g (f64 as in `Noisy`).
    double gradient_noise;
    /// Noise scale of the stochastic energy, σ_e.
    double energy_noise;
    /// Lower and upper bound of the uniform initial states.
    double init_low;
    double init_high;
    /// Number of ensembles E in the launch.
    nrpt_u32 ensembles;
    /// NRPT_TARGET_*.
    nrpt_u32 target;
    /// 1: draw initial states (InitialStates::Uniform); 0: keep.
    nrpt_u32 init_uniform;
    /// Bytes of one stored coordinate of states and momenta (4 f32, 2 bf16/f16): the
    /// swap kernel zeroes momenta without knowing their type (zero bits are 0 in all).
    nrpt_u32 coord_bytes;
};

/// Mirror of `nrpt_core::index::PairStats`.
struct NrptPairStats {
    nrpt_u64 indicators;
    nrpt_u64 attempts;
    nrpt_u64 swaps;
    nrpt_u64 nonfinite;
};

/// Mirror of `nrpt_core::index::IndexStats`.
struct NrptIndexStats {
    nrpt_u64 round_trips;
    nrpt_u64 restarts;
    nrpt_u64 authors_round_trips;
    nrpt_u64 nonfinite_energies;
};

/// Per-iteration constants of the adaptation, computed on the host by nrpt-core
/// (`StepSchedule::gamma`, `adapt::growth_factors`) so that the device never
/// evaluates pow or exp: γ_k = a / (k^α + b), up = exp((1 − S) γ_k), down = exp(−S γ_k).
struct NrptIterConsts {
    double gamma;
    double up;
    double down;
};

/// Device addresses of every array of a launch (mirror of `nrpt_cuda::params::Arrays`),
/// passed by value so each kernel takes the same few arguments. Layout, for E ensembles
/// of P replicas in D dimensions (chain c = e·P + r):
/// states and momenta `[c·D + j]` (element type by storage precision; momenta may be
/// null for Langevin explorers), energies/ladder/temps/replica_at `[e·P + level]`,
/// level_of/trips `[e·P + replica]`, gates/flags/pairs `[e·(P−1) + pair]`,
/// buffers/stats `[e]`.
struct NrptArrays {
    void* states;
    void* momenta;
    float* energies;
    double* ladder;
    double* temps;
    nrpt_u32* replica_at;
    nrpt_u32* level_of;
    nrpt_u8* trips;
    nrpt_u8* gates;
    nrpt_u8* flags;
    NrptPairStats* pairs;
    double* buffers;
    NrptIndexStats* stats;
};

/// Bytes of dynamic shared memory of the persistent kernel for G ensembles of P chains
/// (mirrored by `nrpt_cuda::kernels::persistent_shared_bytes`): pair counts, ladder,
/// temperatures, buffer, stats, energies, replica_at, level_of, trips, gates, flags.
NRPT_HD nrpt_u32 nrpt_persistent_shared_bytes(nrpt_u32 g, nrpt_u32 p) {
    return g * (32u * (p - 1u) + 16u * p + 8u + 32u + 12u * p + 3u * p);
}
