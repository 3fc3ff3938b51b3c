// targets.cuh: the potentials of nrpt_core::target for F = f32, in the same operation
// order as core's generic code (constants are `F::from_f64(c)`: the f64 value rounded
// to f32 once).
#pragma once
#include "fastmath.cuh"

/// Modes2d::WALL.
#define NRPT_MODES2D_WALL 20.0f
/// π as f64 (core::f64::consts::PI).
#define NRPT_PI_F64 3.141592653589793

/// Modes2d::energy: 0.2|x|² − 2(cos 2πa + cos 2πb) + 1[|x|² > 20](|x|² − 20), the
/// cosines by the branch-free sin_cos_2pi, as core computes them.
NRPT_HD float nrpt_modes2d_energy(float a, float b) {
    float r2 = a * a + b * b;
    float ca = nrpt_sin_cos_2pi(a).c;
    float cb = nrpt_sin_cos_2pi(b).c;
    float u = (float)0.2 * r2 - 2.0f * (ca + cb);
    if (r2 > NRPT_MODES2D_WALL) {
        u += r2 - NRPT_MODES2D_WALL;
    }
    return u;
}

/// Modes2d::gradient, given sa = sin 2πa and sb = sin 2πb (the sines of
/// nrpt_sin_cos_2pi, which the persistent kernel keeps from the last energy).
NRPT_HD void nrpt_modes2d_gradient_sin(float a, float b, float sa, float sb, float* ga,
                                       float* gb) {
    const float four_pi = (float)(4.0 * NRPT_PI_F64);
    float r2 = a * a + b * b;
    float slope = (r2 > NRPT_MODES2D_WALL) ? (float)(0.4 + 2.0) : (float)0.4;
    *ga = slope * a + four_pi * sa;
    *gb = slope * b + four_pi * sb;
}

/// Modes2d::gradient.
NRPT_HD void nrpt_modes2d_gradient(float a, float b, float* ga, float* gb) {
    nrpt_modes2d_gradient_sin(a, b, nrpt_sin_cos_2pi(a).s, nrpt_sin_cos_2pi(b).s, ga, gb);
}

/// Modes2d::energy that also returns sin 2πa and sin 2πb (the next gradient's sines).
NRPT_HD float nrpt_modes2d_energy_sin(float a, float b, float* sa, float* sb) {
    float r2 = a * a + b * b;
    NrptSinCos sca = nrpt_sin_cos_2pi(a);
    NrptSinCos scb = nrpt_sin_cos_2pi(b);
    *sa = sca.s;
    *sb = scb.s;
    float u = (float)0.2 * r2 - 2.0f * (sca.c + scb.c);
    if (r2 > NRPT_MODES2D_WALL) {
        u += r2 - NRPT_MODES2D_WALL;
    }
    return u;
}

/// One term of SumModes::energy, `0.2 x² − 2 cos 2πx` (core: `q * xj * xj - c * cos`);
/// the energy adds the terms by the pairwise tree of nrpt_core::reduce (NrptTree).
NRPT_HD float nrpt_sum_modes_term_cos(float x, float c) {
    return (float)0.2 * x * x - (float)2.0 * c;
}

NRPT_HD float nrpt_sum_modes_term(float x) {
    return nrpt_sum_modes_term_cos(x, nrpt_sin_cos_2pi(x).c);
}

/// One coordinate of SumModes::gradient, `0.4 x + 4π sin 2πx`, given s = sin 2πx.
NRPT_HD float nrpt_sum_modes_grad_sin(float x, float s) {
    const float four_pi = (float)(4.0 * NRPT_PI_F64);
    return (float)0.4 * x + four_pi * s;
}

/// One coordinate of SumModes::gradient.
NRPT_HD float nrpt_sum_modes_grad(float x) {
    return nrpt_sum_modes_grad_sin(x, nrpt_sin_cos_2pi(x).s);
}
