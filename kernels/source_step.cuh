// source_step.cuh: one replica's iteration for a target that brings its own CUDA source
// (nrpt_cuda::TargetSource), as nrpt_core::driver::Engine::explore does it for F = f32
// with the oracle Noisy<the target's potential>: the exact gradient at the state, the
// Langevin or momentum update with the gradient noise and the sampling noise merged
// (fill_normals over D, only if the level's f64 merged scale is > 0), the exact energy
// at the new state, then the energy noise (one normal pair, first value, only if
// σ_e != 0): the word use of chain.cuh's built-in steps.
//
// The target's source is included before this header as "nrpt_target.cuh" and defines
//
//   NRPT_HD float nrpt_target_energy(const float* x, nrpt_u32 dim);
//   NRPT_HD void nrpt_target_gradient(const float* x, float* g, nrpt_u32 dim);
//
// in the operation order of the target's Rust `Potential<f32>`: then a GPU run under
// MathMode::Exact gives the CPU's bits wherever the target's arithmetic is IEEE
// (+, −, ×, ÷, √); the device's exp, log and other library functions may differ from
// the host's libm by an ulp, and runs then part after a while (statistically alike).
#pragma once
#include "chain.cuh"

/// Largest D of a source target (its gradient is held per thread).
#define NRPT_SOURCE_MAX_DIM 256u

/// The iteration of one replica of a source target, coordinates in pairs; `v` may
/// alias `x` unless the explorer has momentum. Returns the stochastic energy.
NRPT_HD float nrpt_chain_step_source(const NrptChainCfg* c, const NrptLevelCoeffs* l,
                                     NrptStream s, float* x, float* v) {
    const nrpt_u32 d = c->dim;
    float g[NRPT_SOURCE_MAX_DIM];
    nrpt_target_gradient(x, g, d);
    NrptCursor cur = nrpt_cursor(s, 0u);
    float unused = 0.0f, unused_v = 0.0f;
    for (nrpt_u32 pair = 0u; 2u * pair < d; ++pair) {
        const nrpt_u32 i = 2u * pair;
        const bool has1 = i + 1u < d;
        float* x1 = has1 ? &x[i + 1u] : &unused;
        float* v0 = c->momentum ? &v[i] : &unused_v;
        float* v1 = (c->momentum && has1) ? &v[i + 1u] : &unused_v;
        nrpt_step_pair(c, l, &cur, pair, has1, &x[i], x1, v0, v1, g[i],
                       has1 ? g[i + 1u] : 0.0f);
    }
    float u = nrpt_target_energy(x, d);
    return nrpt_energy_noise(c, l, &cur, u);
}
