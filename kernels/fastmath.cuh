// fastmath.cuh: the branch-free f32 logarithm and sine/cosine of 2πx of
// nrpt_core::fastmath, operation for operation, and the uniform/normal derivation of
// nrpt_core::rng::normal. Compiled without FMA contraction these give the same bits as
// nrpt-core on any IEEE-754 machine.
#pragma once
#include "common.cuh"

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
}

struct NrptSinCos {
    float s, c;
};

/// fastmath::sin_cos_2pi: (sin 2πx, cos 2πx).
NRPT_HD NrptSinCos nrpt_sin_cos_2pi(float x) {
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
    float r = nrpt_sqrtf(-2.0f * nrpt_ln(u1));
    NrptSinCos sc = nrpt_sin_cos_2pi(u2);
    NrptPair p;
    p.z0 = r * sc.c;
    p.z1 = r * sc.s;
    return p;
}
