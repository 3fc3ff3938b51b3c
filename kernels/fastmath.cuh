// fastmath.cuh: the branch-free f32 logarithm and sine/cosine of 2πx of
// nrpt_core::fastmath, operation for operation, and the uniform/normal derivation of
// nrpt_core::rng::normal. Compiled without FMA contraction these give the same bits as
// nrpt-core on any IEEE-754 machine.
//
// With NRPT_FAST_MATH defined to 1 (MathMode::Fast: NVRTC -DNRPT_FAST_MATH=1, with FMA
// contraction) ln, sin_cos_2pi and Box–Muller's square root are the GPU's hardware
// approximations instead (lg2.approx, sin.approx / cos.approx on an argument reduced to
// [-π, π], rsqrt.approx): no bit parity with nrpt-core, the same distributions. The host
// build of fast mode (cuda/csrc/host_math_fast.cpp) replaces each hardware instruction
// by the correctly rounded value perturbed by a deterministic error as large as the
// PTX ISA documents for it (nrpt_emulated_error below), so the CPU can run whole
// fast-mode runs and compare their statistics with exact mode's.
#pragma once
#include "common.cuh"

#ifndef NRPT_FAST_MATH
#define NRPT_FAST_MATH 0
#endif

#if NRPT_FAST_MATH
/// 2π rounded to f32 (0x40C90FDB), the scale of the reduced argument.
#define NRPT_TWO_PI_F32 6.28318548f
/// ln 2 rounded to f32: ln x = lg2(x) · ln 2 (CUDA's __logf does the same).
#define NRPT_LN2_F32 0.693147182f

#if defined(__CUDA_ARCH__)
// The hardware approximations, spelled as PTX so that the instruction is the one named
// (the .ftz forms: no subnormal fix-up; the kernels never pass a subnormal, and a flushed
// one only moves a result by less than the documented error). PTX ISA, "Floating Point
// Instructions": lg2.approx.f32 max absolute error 2^-22.6 for the mantissa (relative
// beyond); sin/cos.approx.f32 max absolute error 2^-20.5 in [-π, π]; rsqrt.approx.f32
// max relative error 2^-22.9.
NRPT_HD float nrpt_hw_lg2(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
NRPT_HD float nrpt_hw_sin(float x) {
    float y;
    asm("sin.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
NRPT_HD float nrpt_hw_cos(float x) {
    float y;
    asm("cos.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
NRPT_HD float nrpt_hw_rsqrt(float x) {
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#else
// The host's emulation of the instructions above: the value computed in f64 by the C
// library (correct to far below f32's precision), moved by e · h(x), where e is the
// documented bound rounded up (2^-22 for lg2 where the PTX ISA says 2^-22.6, 2^-20 for
// sin/cos where it says 2^-20.5, 2^-22 relative for rsqrt where it says 2^-22.9) and
// h(x) in [-1, 1] a hash of the argument's bits: an error as large as the hardware may
// make, fixed for each argument as the hardware's is, and uncorrelated between
// neighbouring arguments (the harsher case for the statistics).
NRPT_HD double nrpt_emulated_error(float x, nrpt_u32 salt) {
    nrpt_u32 h = nrpt_f32_to_bits(x) ^ salt;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return ((double)h + 0.5) * (2.0 / 4294967296.0) - 1.0;
}
NRPT_HD float nrpt_hw_lg2(float x) {
    double l = log2((double)x);
    if (!(l == l) || l == (double)nrpt_f32_from_bits(0xff800000u) ||
        l == (double)nrpt_f32_from_bits(0x7f800000u)) {
        return (float)l;
    }
    // Absolute error for the mantissa's part, relative for large results.
    double e = (1.0 / 4194304.0) * (fabs(l) > 1.0 ? fabs(l) : 1.0);
    return (float)(l + e * nrpt_emulated_error(x, 0x1f123bb5u));
}
NRPT_HD float nrpt_hw_sin(float x) {
    return (float)(sin((double)x) + (1.0 / 1048576.0) * nrpt_emulated_error(x, 0x5851f42du));
}
NRPT_HD float nrpt_hw_cos(float x) {
    return (float)(cos((double)x) + (1.0 / 1048576.0) * nrpt_emulated_error(x, 0x4c957f2du));
}
NRPT_HD float nrpt_hw_rsqrt(float x) {
    double r = 1.0 / sqrt((double)x);
    return (float)(r * (1.0 + (1.0 / 4194304.0) * nrpt_emulated_error(x, 0x2545f491u)));
}
#endif
#endif  // NRPT_FAST_MATH

/// 2^23.
#define NRPT_ROUND_MAGIC 8388608.0f

/// fastmath::round_nearest: |x| rounded through 2^23, the sign restored.
NRPT_HD float nrpt_round_nearest(float x) {
    float a = fabsf(x);
    float n = (a < NRPT_ROUND_MAGIC) ? (a + NRPT_ROUND_MAGIC) - NRPT_ROUND_MAGIC : a;
    return copysignf(n, x);
}

/// fastmath::ln, special values included (0 -> -inf, +inf -> +inf, negative/NaN -> NaN,
/// subnormals scaled by 2^23).
NRPT_HD float nrpt_ln(float x) {
#if NRPT_FAST_MATH
    // lg2.approx · ln 2 (CUDA's __logf): 0 -> -inf, +inf -> +inf, negative -> NaN.
    return nrpt_hw_lg2(x) * NRPT_LN2_F32;
#else
    // f32::MIN_POSITIVE = 0x00800000.
    bool subnormal = x < nrpt_f32_from_bits(0x00800000u);
    float xs = subnormal ? x * 8388608.0f : x;
    nrpt_u32 bits = nrpt_f32_to_bits(xs);
    nrpt_i32 e = (nrpt_i32)((bits >> 23) & 0xffu) - (subnormal ? 150 : 127);
    float m = nrpt_f32_from_bits((bits & 0x007fffffu) | 0x3f800000u);
    // core::f32::consts::SQRT_2 = 0x3FB504F3.
    if (m > nrpt_f32_from_bits(0x3fb504f3u)) {
        m *= 0.5f;
        e += 1;
    }
    float s = (m - 1.0f) / (m + 1.0f);
    float s2 = s * s;
    float p = 1.0f + s2 * (1.0f / 3.0f + s2 * (0.2f + s2 * (1.0f / 7.0f + s2 * (1.0f / 9.0f))));
    float ln_m = 2.0f * s * p;
    const float LN2_HI = 0.6933594f;
    const float LN2_LO = -2.1219444e-4f;
    float ef = (float)e;
    float y = ef * LN2_HI + (ln_m + ef * LN2_LO);
    const float inf = nrpt_f32_from_bits(0x7f800000u);
    y = (x == inf) ? x : y;
    y = (x == 0.0f) ? -inf : y;
    return (x >= 0.0f) ? y : nrpt_f32_from_bits(0x7fc00000u);
#endif
}

struct NrptSinCos {
    float s, c;
};

/// fastmath::sin_cos_2pi: (sin 2πx, cos 2πx).
NRPT_HD NrptSinCos nrpt_sin_cos_2pi(float x) {
#if NRPT_FAST_MATH
    {
        // x reduced to r in [-1/2, 1/2] exactly (x minus its nearest integer, ties to
        // even as round_nearest; rintf is one instruction on the GPU), so the hardware
        // functions see 2πr in [-π, π], where their error bound holds. Non-finite x
        // gives NaN (inf − inf), as the exact version does.
        float r = x - rintf(x);
        float a = r * NRPT_TWO_PI_F32;
        NrptSinCos fast;
        fast.s = nrpt_hw_sin(a);
        fast.c = nrpt_hw_cos(a);
        return fast;
    }
#else
    const float S1 = nrpt_f32_from_bits(0x40c90fdbu);
    const float S3 = nrpt_f32_from_bits(0xc2255de7u);
    const float S5 = nrpt_f32_from_bits(0x42a335e3u);
    const float S7 = nrpt_f32_from_bits(0xc2996966u);
    const float S9 = nrpt_f32_from_bits(0x42283c1au);
    const float C2 = nrpt_f32_from_bits(0xc19de9e6u);
    const float C4 = nrpt_f32_from_bits(0x4281e0f8u);
    const float C6 = nrpt_f32_from_bits(0xc2aae9e4u);
    const float C8 = nrpt_f32_from_bits(0x4270fa83u);
    const float C10 = nrpt_f32_from_bits(0xc1d368f9u);
    float r = x - nrpt_round_nearest(x);
    float q = nrpt_round_nearest(4.0f * r);
    float f = r - 0.25f * q;
    float f2 = f * f;
    float s = f * (S1 + f2 * (S3 + f2 * (S5 + f2 * (S7 + f2 * S9))));
    float c = 1.0f + f2 * (C2 + f2 * (C4 + f2 * (C6 + f2 * (C8 + f2 * C10))));
    bool finite = nrpt_finite_f32(x);
    // q in {-2, ..., 2}; Rust's `q as i32` (saturating, NaN -> 0) only matters for
    // non-finite x, whose result is NaN anyway.
    nrpt_i32 qi = finite ? (((nrpt_i32)q) & 3) : 0;
    NrptSinCos out;
    out.s = (qi == 0) ? s : (qi == 1) ? c : (qi == 2) ? -s : -c;
    out.c = (qi == 0) ? c : (qi == 1) ? -s : (qi == 2) ? -c : s;
    if (!finite) {
        out.s = nrpt_f32_from_bits(0x7fc00000u);
        out.c = out.s;
    }
    return out;
#endif
}

/// rng::uniform_f32: ((w >> 9) + 0.5) · 2^-23, exact.
NRPT_HD float nrpt_uniform_f32(nrpt_u32 w) {
    return ((float)(w >> 9) + 0.5f) * (1.0f / 8388608.0f);
}

/// rng::uniform_f64: (w + 0.5) · 2^-32, exact.
NRPT_HD double nrpt_uniform_f64(nrpt_u32 w) {
    return ((double)w + 0.5) * (1.0 / 4294967296.0);
}

struct NrptPair {
    float z0, z1;
};

/// rng::box_muller_f32.
NRPT_HD NrptPair nrpt_box_muller_f32(nrpt_u32 w0, nrpt_u32 w1) {
    float u1 = nrpt_uniform_f32(w0);
    float u2 = nrpt_uniform_f32(w1);
#if NRPT_FAST_MATH
    // −2 ln u1 = (−2 ln 2) · lg2 u1, and √t = t · rsqrt(t). u1 < 1, but the approximate
    // lg2 of a u1 within 2^-22 of 1 may be 0 or even positive: t ≤ 0 gives r = 0 (t
    // clamped to 0, and rsqrt's argument to the least normal, so 0 · finite = 0).
    float t = fmaxf((-2.0f * NRPT_LN2_F32) * nrpt_hw_lg2(u1), 0.0f);
    float r = t * nrpt_hw_rsqrt(fmaxf(t, 1.17549435e-38f));
#else
    float r = nrpt_sqrtf(-2.0f * nrpt_ln(u1));
#endif
    NrptSinCos sc = nrpt_sin_cos_2pi(u2);
    NrptPair p;
    p.z0 = r * sc.c;
    p.z1 = r * sc.s;
    return p;
}
