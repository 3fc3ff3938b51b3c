// chain.cuh: one replica's part of an iteration, as nrpt_core::driver::Engine::explore
// does it for F = f32: the exploration step (SGLD/SGD or momentum SGD at its level's
// learning rate and temperature) and the stochastic energy at the new state, from the
// replica's STEP stream (key [seed, ensemble], counter rng::counter(iteration, replica,
// STEP, block), the iteration in full 64 bits).
//
// Word use, as in core: gradient noise (Noisy: fill_normals over D, 2·ceil(D/2) words,
// only if σ_g != 0), then Langevin noise (fill_normals over D, only if the f64 noise
// scale is > 0), then the energy noise (one normal pair, first value, only if σ_e != 0).
#pragma once
#include "philox.cuh"
#include "fastmath.cuh"
#include "targets.cuh"
#include "storage.cuh"

/// Launch-wide constants of the step, derived once from the parameter block.
struct NrptChainCfg {
    nrpt_u32 dim;
    nrpt_u32 target;
    bool momentum;
    bool grad_noise;
    bool energy_noise;
    float mu;      // F::from_f64(momentum)
    float gscale;  // F::from_f64(gradient_noise)
    float escale;  // F::from_f64(energy_noise)
    double mu64;
    nrpt_u32 noise_words;  // 2 · ceil(D / 2)
};

NRPT_HD NrptChainCfg nrpt_chain_cfg(const NrptGpuParams* p) {
    NrptChainCfg c;
    c.dim = p->core.dim;
    c.target = p->target;
    c.momentum = p->core.explorer != 0u;
    c.grad_noise = p->gradient_noise != 0.0;
    c.energy_noise = p->energy_noise != 0.0;
    c.mu = (float)p->core.momentum;
    c.mu64 = p->core.momentum;
    c.gscale = (float)p->gradient_noise;
    c.escale = (float)p->energy_noise;
    c.noise_words = 2u * ((p->core.dim + 1u) / 2u);
    return c;
}

/// What a level's learning rate and temperature mean for one step.
struct NrptLevelCoeffs {
    float eta;          // F::from_f64(η)
    float sigma;        // F::from_f64(noise_scale(explorer, η, T))
    bool draw;          // the f64 noise scale is > 0: Langevin noise is drawn
    nrpt_u32 lang_off;  // first word of the Langevin noise
    nrpt_u32 energy_off;  // first word of the energy noise
};

/// explore::noise_scale in f64, then the f32 casts the driver makes.
NRPT_HD NrptLevelCoeffs nrpt_level_coeffs(const NrptChainCfg* c, double eta, double temp) {
    // T = 0 (the SGD explorers) gives sqrt(+0) = +0 exactly: skip the f64 square root.
    double sigma = 0.0;
    if (temp != 0.0) {
        sigma = c->momentum ? nrpt_sqrt(2.0 * (1.0 - c->mu64) * eta * temp)
                            : nrpt_sqrt(2.0 * eta * temp);
    }
    NrptLevelCoeffs l;
    l.draw = sigma > 0.0;
    l.eta = (float)eta;
    l.sigma = (float)sigma;
    l.lang_off = c->grad_noise ? c->noise_words : 0u;
    l.energy_off = l.lang_off + (l.draw ? c->noise_words : 0u);
    return l;
}

/// One coordinate's update (explore::langevin_step / momentum_step).
NRPT_HD void nrpt_update(const NrptChainCfg* c, const NrptLevelCoeffs* l, float* x, float* v,
                         float g, float z) {
    if (!c->momentum) {
        if (l->sigma == 0.0f) {
            *x = *x - l->eta * g;
        } else {
            *x = (*x - l->eta * g) + l->sigma * z;
        }
    } else {
        float nv = c->mu * *v - l->eta * g;
        if (l->sigma != 0.0f) {
            nv = nv + l->sigma * z;
        }
        *v = nv;
        *x = *x + nv;
    }
}

/// Steps the coordinates 2·pair and 2·pair + 1 (the second only if `has1`), given the
/// exact gradients g0, g1 at the old state. `gc` serves the gradient-noise words and
/// `lc` the Langevin words (they may be the same cursor).
NRPT_HD void nrpt_step_pair(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptCursor* gc,
                            NrptCursor* lc, nrpt_u32 pair, bool has1, float* x0, float* x1,
                            float* v0, float* v1, float g0, float g1) {
    if (c->grad_noise) {
        nrpt_u32 w0 = nrpt_cursor_word(gc, 2u * pair);
        nrpt_u32 w1 = nrpt_cursor_word(gc, 2u * pair + 1u);
        NrptPair z = nrpt_box_muller_f32(w0, w1);
        g0 = g0 + c->gscale * z.z0;
        g1 = g1 + c->gscale * z.z1;
    }
    NrptPair zl;
    zl.z0 = 0.0f;
    zl.z1 = 0.0f;
    if (l->draw) {
        nrpt_u32 w0 = nrpt_cursor_word(lc, l->lang_off + 2u * pair);
        nrpt_u32 w1 = nrpt_cursor_word(lc, l->lang_off + 2u * pair + 1u);
        zl = nrpt_box_muller_f32(w0, w1);
    }
    nrpt_update(c, l, x0, v0, g0, zl.z0);
    if (has1) {
        nrpt_update(c, l, x1, v1, g1, zl.z1);
    }
}

/// Adds the energy noise (Noisy::energy) to the exact energy u.
NRPT_HD float nrpt_energy_noise(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptCursor* cur,
                                float u) {
    if (!c->energy_noise) {
        return u;
    }
    nrpt_u32 w0 = nrpt_cursor_word(cur, l->energy_off);
    nrpt_u32 w1 = nrpt_cursor_word(cur, l->energy_off + 1u);
    NrptPair z = nrpt_box_muller_f32(w0, w1);
    return u + c->escale * z.z0;
}

/// The whole iteration of one 2D replica held in registers; returns its stochastic
/// energy. Works for Modes2d and for SumModes with D = 2.
NRPT_HD float nrpt_chain_step_2d(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptStream s,
                                 float* x0, float* x1, float* v0, float* v1) {
    NrptCursor cur = nrpt_cursor(s, 0u);
    float g0, g1;
    if (c->target == NRPT_TARGET_MODES2D) {
        nrpt_modes2d_gradient(*x0, *x1, &g0, &g1);
    } else {
        g0 = nrpt_sum_modes_grad(*x0);
        g1 = nrpt_sum_modes_grad(*x1);
    }
    nrpt_step_pair(c, l, &cur, &cur, 0u, true, x0, x1, v0, v1, g0, g1);
    float u;
    if (c->target == NRPT_TARGET_MODES2D) {
        u = nrpt_modes2d_energy(*x0, *x1);
    } else {
        u = 0.0f;
        u += nrpt_sum_modes_term(*x0);
        u += nrpt_sum_modes_term(*x1);
    }
    return nrpt_energy_noise(c, l, &cur, u);
}

/// The iteration of one SumModes replica of any dimension, coordinates in order, by one
/// thread: the energy is summed in core's order, so the result is bit-exact.
/// `v` may be null unless the explorer has momentum.
template <class S>
NRPT_HD float nrpt_chain_step_seq(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptStream s,
                                  typename S::T* x, typename S::T* v) {
    NrptCursor gc = nrpt_cursor(s, 0u);
    NrptCursor lc = nrpt_cursor(s, 0u);
    float u = 0.0f;
    nrpt_u32 d = c->dim;
    for (nrpt_u32 j = 0; j < d; j += 2u) {
        bool has1 = j + 1u < d;
        float x0 = S::load(x + j);
        float x1 = has1 ? S::load(x + j + 1u) : 0.0f;
        float v0 = 0.0f, v1 = 0.0f;
        if (c->momentum) {
            v0 = S::load(v + j);
            v1 = has1 ? S::load(v + j + 1u) : 0.0f;
        }
        float g0 = nrpt_sum_modes_grad(x0);
        float g1 = nrpt_sum_modes_grad(x1);
        nrpt_step_pair(c, l, &gc, &lc, j / 2u, has1, &x0, &x1, &v0, &v1, g0, g1);
        S::store(x + j, x0);
        if (has1) S::store(x + j + 1u, x1);
        if (c->momentum) {
            S::store(v + j, v0);
            if (has1) S::store(v + j + 1u, v1);
        }
        // Energy at the stored (rounded) state, coordinate by coordinate.
        u += nrpt_sum_modes_term(S::load(x + j));
        if (has1) u += nrpt_sum_modes_term(S::load(x + j + 1u));
    }
    return nrpt_energy_noise(c, l, &gc, u);
}

/// The part of a SumModes replica's iteration that one thread of a cooperating group
/// does: the coordinates of quads q = first, first + step, … (quad q = coordinates
/// 4q .. 4q + 3). Returns the thread's partial energy, summed in coordinate order.
/// The group then adds the partials by a fixed tree (see nrpt_tree_sum).
template <class S>
NRPT_HD float nrpt_chain_step_quads(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptStream s,
                                    typename S::T* x, typename S::T* v, nrpt_u32 first,
                                    nrpt_u32 step) {
    NrptCursor gc = nrpt_cursor(s, 0u);
    NrptCursor lc = nrpt_cursor(s, 0u);
    float u = 0.0f;
    nrpt_u32 d = c->dim;
    nrpt_u32 quads = (d + 3u) / 4u;
    for (nrpt_u32 q = first; q < quads; q += step) {
        for (nrpt_u32 h = 0; h < 2u; ++h) {
            nrpt_u32 j = 4u * q + 2u * h;
            if (j >= d) break;
            bool has1 = j + 1u < d;
            float x0 = S::load(x + j);
            float x1 = has1 ? S::load(x + j + 1u) : 0.0f;
            float v0 = 0.0f, v1 = 0.0f;
            if (c->momentum) {
                v0 = S::load(v + j);
                v1 = has1 ? S::load(v + j + 1u) : 0.0f;
            }
            float g0 = nrpt_sum_modes_grad(x0);
            float g1 = nrpt_sum_modes_grad(x1);
            nrpt_step_pair(c, l, &gc, &lc, j / 2u, has1, &x0, &x1, &v0, &v1, g0, g1);
            S::store(x + j, x0);
            if (has1) S::store(x + j + 1u, x1);
            if (c->momentum) {
                S::store(v + j, v0);
                if (has1) S::store(v + j + 1u, v1);
            }
            u += nrpt_sum_modes_term(S::load(x + j));
            if (has1) u += nrpt_sum_modes_term(S::load(x + j + 1u));
        }
    }
    return u;
}

/// The fixed reduction order of the cooperative step over `n` partials (n a multiple
/// of 32, n / 32 a power of two): a shuffle tree inside each warp of 32
/// (`for off = 16, 8, 4, 2, 1: a[i] += a[i + off]`), then the same tree over the warps'
/// sums. The GPU does exactly this with __shfl_down_sync; this is the host reference
/// (it overwrites `a`).
NRPT_HD float nrpt_block_sum(float* a, nrpt_u32 n) {
    for (nrpt_u32 w = 0; w < n; w += 32u) {
        for (nrpt_u32 off = 16u; off > 0u; off /= 2u) {
            for (nrpt_u32 i = 0; i < off; ++i) {
                a[w + i] = a[w + i] + a[w + i + off];
            }
        }
    }
    nrpt_u32 warps = n / 32u;
    for (nrpt_u32 off = warps / 2u; off > 0u; off /= 2u) {
        for (nrpt_u32 i = 0; i < off; ++i) {
            a[32u * i] = a[32u * i] + a[32u * (i + off)];
        }
    }
    return a[0];
}

/// Initial state coordinate j of a replica (InitialStates::Uniform): word j of its INIT
/// stream, `F::from_f64(low + (high − low) · uniform_f64(w))`.
NRPT_HD float nrpt_init_coord(const NrptGpuParams* p, NrptCursor* cur, nrpt_u32 j) {
    double u = nrpt_uniform_f64(nrpt_cursor_word(cur, j));
    return (float)(p->init_low + (p->init_high - p->init_low) * u);
}
