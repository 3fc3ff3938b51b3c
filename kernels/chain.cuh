// chain.cuh: one replica's part of an iteration, as nrpt_core::driver::Engine::explore
// does it for F = f32: the exploration step (SGLD/SGD or momentum SGD at its level's
// learning rate and temperature) and the stochastic energy at the new state, from the
// replica's STEP stream (key [seed, ensemble], counter rng::counter(iteration, replica,
// STEP, block), the iteration in full 64 bits).
//
// Word use, as in core for the Noisy oracle: the gradient noise and the step's sampling
// noise are one normal vector (fill_normals over D, 2·ceil(D/2) words, only if the f64
// merged scale nrpt_core::explore::merged_noise_scale is > 0), then the energy noise
// (one normal pair, first value, only if σ_e != 0). For the 2D toy: four words, one
// Philox block, two Box–Muller pairs per chain-step at every level.
//
// Energies over D coordinates are summed by the pairwise tree of nrpt_core::reduce
// (NrptTree here; a block's threads and passes by the shuffle trees of step.cu,
// mirrored for the host by nrpt_block_tree and nrpt_pass_tree), for every D.
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
    bool energy_noise;
    float mu;      // F::from_f64(momentum)
    float escale;  // F::from_f64(energy_noise)
    double mu64;
    double gnoise;  // σ_g, the gradient noise, in f64 (merged into the step's noise)
    nrpt_u32 noise_words;  // 2 · ceil(D / 2)
};

NRPT_HD NrptChainCfg nrpt_chain_cfg(const NrptGpuParams* p) {
    NrptChainCfg c;
    c.dim = p->core.dim;
    c.target = p->target;
    c.momentum = p->core.explorer != 0u;
    c.energy_noise = p->energy_noise != 0.0;
    c.mu = (float)p->core.momentum;
    c.mu64 = p->core.momentum;
    c.gnoise = p->gradient_noise;
    c.escale = (float)p->energy_noise;
    c.noise_words = 2u * ((p->core.dim + 1u) / 2u);
    return c;
}

/// What a level's learning rate and temperature mean for one step.
struct NrptLevelCoeffs {
    float eta;          // F::from_f64(η)
    float sigma;        // F::from_f64(merged_noise_scale(η, σ_g, noise_scale(explorer, η, T)))
    bool draw;          // the f64 merged scale is > 0: the step's noise is drawn (words 0 ..)
    nrpt_u32 energy_off;  // first word of the energy noise
};

/// explore::noise_scale and explore::merged_noise_scale in f64, then the f32 casts the
/// driver makes.
NRPT_HD NrptLevelCoeffs nrpt_level_coeffs(const NrptChainCfg* c, double eta, double temp) {
    // T = 0 (the SGD explorers) gives sqrt(+0) = +0 exactly: skip the f64 square root.
    double sigma = 0.0;
    if (temp != 0.0) {
        sigma = c->momentum ? nrpt_sqrt(2.0 * (1.0 - c->mu64) * eta * temp)
                            : nrpt_sqrt(2.0 * eta * temp);
    }
    // |η·σ_g| in core; here both are ≥ 0 (checked when the parameters are built).
    const double a = eta * c->gnoise;
    const double merged =
        sigma == 0.0 ? a : (a == 0.0 ? sigma : nrpt_sqrt(a * a + sigma * sigma));
    NrptLevelCoeffs l;
    l.draw = merged > 0.0;
    l.eta = (float)eta;
    l.sigma = (float)merged;
    l.energy_off = l.draw ? c->noise_words : 0u;
    return l;
}

/// One coordinate's update (explore::langevin_step / momentum_step).
NRPT_HD void nrpt_update(const NrptChainCfg* c, const NrptLevelCoeffs* l, float* x, float* v,
                         float g, float z) {
    // NRPT_OTHER_RULES() fences code the paper's 2D configuration never runs (SGD
    // without noise, momentum, SumModes, other rules): see common.cuh.
    if (!c->momentum) {
        if (l->sigma == 0.0f) {
            NRPT_OTHER_RULES();
            *x = *x - l->eta * g;
            // sass-count: other-rules end
        } else {
            *x = (*x - l->eta * g) + l->sigma * z;
        }
    } else {
        NRPT_OTHER_RULES();
        float nv = c->mu * *v - l->eta * g;
        if (l->sigma != 0.0f) {
            nv = nv + l->sigma * z;
        }
        *v = nv;
        *x = *x + nv;
        // sass-count: other-rules end
    }
}

/// Steps the coordinates 2·pair and 2·pair + 1 (the second only if `has1`), given the
/// exact gradients g0, g1 at the old state, with the merged noise of words 2·pair and
/// 2·pair + 1 served by `cur`.
NRPT_HD void nrpt_step_pair(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptCursor* cur,
                            nrpt_u32 pair, bool has1, float* x0, float* x1, float* v0,
                            float* v1, float g0, float g1) {
    NrptPair zl;
    zl.z0 = 0.0f;
    zl.z1 = 0.0f;
    if (l->draw) {
        nrpt_u32 w0 = nrpt_cursor_word(cur, 2u * pair);
        nrpt_u32 w1 = nrpt_cursor_word(cur, 2u * pair + 1u);
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

/// The whole iteration of one 2D replica held in registers, given the sines of its
/// coordinates (sin 2πx0, sin 2πx1 at the current state: the gradient needs nothing
/// else of the transcendental functions); returns its stochastic energy and leaves in
/// *s0, *s1 the sines at the new state, which the energy computes anyway (one
/// sin_cos_2pi per coordinate and step instead of two, when the caller keeps them).
/// Works for Modes2d and for SumModes with D = 2. Every word it reads lies in block 0
/// of the stream (the step's noise in words 0–1 when drawn, the energy noise in the
/// next two), so it computes one Philox block and no other.
NRPT_HD float nrpt_chain_step_2d_sin(const NrptChainCfg* c, const NrptLevelCoeffs* l,
                                     NrptStream s, float* x0, float* x1, float* v0, float* v1,
                                     float* s0, float* s1) {
    const NrptBlock b = nrpt_stream_block(s, 0u);
    float g0, g1;
    if (c->target == NRPT_TARGET_MODES2D) {
        nrpt_modes2d_gradient_sin(*x0, *x1, *s0, *s1, &g0, &g1);
    } else {
        NRPT_OTHER_RULES();
        g0 = nrpt_sum_modes_grad_sin(*x0, *s0);
        g1 = nrpt_sum_modes_grad_sin(*x1, *s1);
        // sass-count: other-rules end
    }
    NrptPair z;
    z.z0 = 0.0f;
    z.z1 = 0.0f;
    if (l->draw) {
        z = nrpt_box_muller_f32(b.w0, b.w1);
    }
    nrpt_update(c, l, x0, v0, g0, z.z0);
    nrpt_update(c, l, x1, v1, g1, z.z1);
    float u;
    if (c->target == NRPT_TARGET_MODES2D) {
        u = nrpt_modes2d_energy_sin(*x0, *x1, s0, s1);
    } else {
        NRPT_OTHER_RULES();
        // Two leaves: the tree of nrpt_core::reduce is their plain sum.
        NrptSinCos ca = nrpt_sin_cos_2pi(*x0), cb = nrpt_sin_cos_2pi(*x1);
        *s0 = ca.s;
        *s1 = cb.s;
        u = nrpt_sum_modes_term_cos(*x0, ca.c) + nrpt_sum_modes_term_cos(*x1, cb.c);
        // sass-count: other-rules end
    }
    if (!c->energy_noise) {
        return u;
    }
    // energy_off is 2 when the step drew its noise, 0 otherwise.
    const nrpt_u32 e0 = l->draw ? b.w2 : b.w0, e1 = l->draw ? b.w3 : b.w1;
    return u + c->escale * nrpt_box_muller_f32(e0, e1).z0;
}

/// The whole iteration of one 2D replica held in registers; returns its stochastic
/// energy (nrpt_chain_step_2d_sin with the sines computed first).
NRPT_HD float nrpt_chain_step_2d(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptStream s,
                                 float* x0, float* x1, float* v0, float* v1) {
    float s0 = nrpt_sin_cos_2pi(*x0).s, s1 = nrpt_sin_cos_2pi(*x1).s;
    return nrpt_chain_step_2d_sin(c, l, s, x0, x1, v0, v1, &s0, &s1);
}

/// The pairwise tree of nrpt_core::reduce::TreeSum with the pending partial sums of
/// levels LO .. HI − 1 in registers (fully unrolled, static indices: no local memory).
/// Pushes are blocks of 2^level leaves with level >= LO, at most 2^(HI − 1) leaves in
/// all; a block with absent leaves at its end may only be the last push.
template <int LO, int HI>
struct NrptTree {
    float pending[HI - LO];
    nrpt_u32 count;
};

template <int LO, int HI>
NRPT_HD void nrpt_tree_init(NrptTree<LO, HI>* t) {
    for (int i = 0; i < HI - LO; ++i) t->pending[i] = 0.0f;
    t->count = 0u;
}

/// TreeSum::push_block: a binary counter whose carries join `left + right`.
template <int LO, int HI>
NRPT_HD void nrpt_tree_push(NrptTree<LO, HI>* t, float v, nrpt_u32 level) {
    bool placed = false;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < HI - LO; ++i) {
        const nrpt_u32 lv = (nrpt_u32)(LO + i);
        if (!placed && lv >= level) {
            if ((t->count >> lv) & 1u) {
                v = t->pending[i] + v;
            } else {
                t->pending[i] = v;
                placed = true;
            }
        }
    }
    t->count += 1u << level;
}

/// TreeSum::finish: the pending sums joined from the right; +0 for no leaves.
template <int LO, int HI>
NRPT_HD float nrpt_tree_finish(const NrptTree<LO, HI>* t) {
    float acc = 0.0f;
    bool any = false;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < HI - LO; ++i) {
        if ((t->count >> (LO + i)) & 1u) {
            acc = any ? t->pending[i] + acc : t->pending[i];
            any = true;
        }
    }
    return acc;
}

/// The tree sum of n = 1..4 leaves (an aligned quad, absent leaves at its end).
NRPT_HD float nrpt_quad_sum(const float* t, nrpt_u32 n) {
    if (n >= 4u) return (t[0] + t[1]) + (t[2] + t[3]);
    if (n == 3u) return (t[0] + t[1]) + t[2];
    if (n == 2u) return t[0] + t[1];
    return t[0];
}

/// Adds the energy noise (Noisy::energy) to the exact energy u, reading the two words
/// straight from their Philox block (energy_off is even, so both lie in one block).
NRPT_HD float nrpt_energy_noise_at(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptStream s,
                                   float u) {
    if (!c->energy_noise) {
        return u;
    }
    NrptBlock b = nrpt_stream_block(s, l->energy_off >> 2);
    nrpt_u32 i = l->energy_off & 3u;
    NrptPair z = nrpt_box_muller_f32(nrpt_lane(b, i), nrpt_lane(b, i + 1u));
    return u + c->escale * z.z0;
}

/// Steps quad q of a SumModes replica (coordinates 4q .. 4q + n − 1, n = 1..4): loads
/// them (one vector access when `vec`, which needs n = 4 and an aligned quad), takes
/// the step as nrpt_step_pair does pair by pair — the words of pair p are 2p, 2p + 1
/// of the merged noise, read straight from block q of the stream, so no cursor is
/// kept — stores the new state
/// (and momenta), and returns the tree sum of the energy terms at the stored state
/// (rounded to the storage type in registers: no reload). `v` may alias `x` unless the
/// explorer has momentum.
template <class S>
NRPT_HD float nrpt_step_quad(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptStream s,
                             nrpt_u32 q, nrpt_u32 n, bool vec, typename S::T* x,
                             typename S::T* v) {
    float xs[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float vs[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    typename S::T* xq = x + 4u * q;
    typename S::T* vq = v + 4u * q;
    if (vec) {
        S::load4(xq, xs);
        if (c->momentum) S::load4(vq, vs);
    } else {
        for (nrpt_u32 i = 0; i < n; ++i) {
            xs[i] = S::load(xq + i);
            if (c->momentum) vs[i] = S::load(vq + i);
        }
    }
    float g[4];
    for (int i = 0; i < 4; ++i) g[i] = nrpt_sum_modes_grad(xs[i]);
    NrptPair z0, z1;
    z0.z0 = z0.z1 = z1.z0 = z1.z1 = 0.0f;
    if (l->draw) {
        NrptBlock b = nrpt_stream_block(s, q);  // words 4q .. 4q + 3: pairs 2q, 2q + 1
        z0 = nrpt_box_muller_f32(b.w0, b.w1);
        if (n > 2u) z1 = nrpt_box_muller_f32(b.w2, b.w3);
    }
    nrpt_update(c, l, &xs[0], &vs[0], g[0], z0.z0);
    if (n > 1u) nrpt_update(c, l, &xs[1], &vs[1], g[1], z0.z1);
    if (n > 2u) nrpt_update(c, l, &xs[2], &vs[2], g[2], z1.z0);
    if (n > 3u) nrpt_update(c, l, &xs[3], &vs[3], g[3], z1.z1);
    if (vec) {
        S::store4(xq, xs);
        if (c->momentum) S::store4(vq, vs);
    } else {
        for (nrpt_u32 i = 0; i < n; ++i) {
            S::store(xq + i, xs[i]);
            if (c->momentum) S::store(vq + i, vs[i]);
        }
    }
    // Energy at the stored (rounded) state.
    float t[4];
    for (int i = 0; i < 4; ++i) t[i] = nrpt_sum_modes_term(S::round(xs[i]));
    return nrpt_quad_sum(t, n);
}

/// Steps the quads q0 .. q1 − 1 of a SumModes replica of D coordinates in order and
/// returns the tree sum of their energy terms (the subtree of those leaves when q0 is
/// aligned to the span's power-of-two size, which is how callers use it). HI bounds
/// the span: at most 2^(HI − 1) coordinates.
template <class S, int HI>
NRPT_HD float nrpt_step_span(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptStream s,
                             typename S::T* x, typename S::T* v, nrpt_u32 q0, nrpt_u32 q1) {
    const nrpt_u32 d = c->dim;
    // Four coordinates in one vector access: every quad of every replica is aligned
    // when D is a multiple of 4 (rows start at c·D coordinates).
    const bool aligned = (d & 3u) == 0u;
    NrptTree<2, HI> tree;
    nrpt_tree_init(&tree);
    for (nrpt_u32 q = q0; q < q1; ++q) {
        nrpt_u32 rest = d - 4u * q;
        nrpt_u32 n = rest < 4u ? rest : 4u;
        float u = nrpt_step_quad<S>(c, l, s, q, n, aligned && n == 4u, x, v);
        nrpt_tree_push(&tree, u, 2u);
    }
    return nrpt_tree_finish(&tree);
}

/// Largest D of the one-thread-per-chain SumModes step on the GPU (step_seq_*; the
/// launcher, nrpt_cuda::ensembles, uses it up to D = 64), and its tree's levels.
#define NRPT_SEQ_MAX_DIM 256u
#define NRPT_SEQ_TREE_HI 9

/// The iteration of one SumModes replica of any dimension, coordinates in order, by one
/// thread; the energy is the tree sum of nrpt_core::reduce, so the result is core's
/// bit for bit. HI bounds D (at most 2^(HI − 1)). `v` may alias `x` unless the
/// explorer has momentum.
template <class S, int HI>
NRPT_HD float nrpt_chain_step_seq(const NrptChainCfg* c, const NrptLevelCoeffs* l, NrptStream s,
                                  typename S::T* x, typename S::T* v) {
    nrpt_u32 quads = (c->dim + 3u) / 4u;
    float u = nrpt_step_span<S, HI>(c, l, s, x, v, 0u, quads);
    return nrpt_energy_noise_at(c, l, s, u);
}

/// Levels of a block thread's chunk tree: chunks of up to 2^(NRPT_CHUNK_TREE_HI − 1)
/// coordinates (a deeper tree costs registers: with 13 levels the FMA build spilled).
#define NRPT_CHUNK_TREE_HI 7
/// Largest chunk of coordinates of one thread of the block step.
#define NRPT_MAX_CHUNK 64u
/// Most passes of the block step over a state (a pass covers threads · chunk
/// coordinates, a power of two when there are several), and the levels of the tree
/// over the passes' sums.
#define NRPT_MAX_PASSES 64u
#define NRPT_PASS_TREE_HI 7

/// `true` when the chunk of thread t (coordinates t·K .. t·K + K − 1) holds a
/// coordinate of a D-dimensional state: chunks past the last are absent leaves of the
/// tree, and a node whose right child is absent is its left child.
NRPT_HD bool nrpt_chunk_present(nrpt_u32 t, nrpt_u32 chunk, nrpt_u32 d) {
    return (nrpt_u64)t * chunk < (nrpt_u64)d;
}

/// The part of a SumModes replica's iteration that thread t of a block does: the
/// aligned chunk of `chunk` coordinates (a power of two, a multiple of 4) starting at
/// t·chunk. Returns the chunk's tree sum (0 for a chunk past the state).
template <class S>
NRPT_HD float nrpt_chain_step_chunk(const NrptChainCfg* c, const NrptLevelCoeffs* l,
                                    NrptStream s, typename S::T* x, typename S::T* v,
                                    nrpt_u32 t, nrpt_u32 chunk) {
    nrpt_u32 quads = (c->dim + 3u) / 4u;
    nrpt_u32 q0 = t * (chunk / 4u);
    nrpt_u32 q1 = q0 + chunk / 4u;
    if (q1 > quads) q1 = quads;
    return nrpt_step_span<S, NRPT_CHUNK_TREE_HI>(c, l, s, x, v, q0, q1);
}

/// The block step's reduction of one pass's chunk sums `a[0 .. threads)` (threads a
/// multiple of 32; thread t of the pass holds chunk first + t), as step_block does it
/// on the GPU: in each warp the shuffle tree of offsets 1, 2, 4, 8, 16 (lane i, a
/// multiple of 2·off, adds lane i + off's sum when that subtree holds a present
/// chunk), then the same tree over the warps' sums in warp 0. This is the host mirror
/// (it overwrites `a`); with aligned power-of-two chunks it is the tree of
/// nrpt_core::reduce over the pass's leaves.
NRPT_HD float nrpt_block_tree(float* a, nrpt_u32 threads, nrpt_u32 chunk, nrpt_u32 d,
                              nrpt_u32 first) {
    const nrpt_u32 warps = threads / 32u;
    for (nrpt_u32 w = 0; w < warps; ++w) {
        for (nrpt_u32 off = 1u; off < 32u; off *= 2u) {
            for (nrpt_u32 lane = 0; lane < 32u; lane += 2u * off) {
                nrpt_u32 t = 32u * w + lane;
                if (nrpt_chunk_present(first + t + off, chunk, d)) a[t] = a[t] + a[t + off];
            }
        }
    }
    for (nrpt_u32 off = 1u; off < 32u; off *= 2u) {
        for (nrpt_u32 lane = 0; lane < 32u; lane += 2u * off) {
            if (lane + off < warps && nrpt_chunk_present(first + 32u * (lane + off), chunk, d)) {
                a[32u * lane] = a[32u * lane] + a[32u * (lane + off)];
            }
        }
    }
    return a[0];
}

/// The tree over the passes' sums (aligned blocks of threads · chunk leaves each), as
/// thread 0 of step_block adds them at the end.
NRPT_HD float nrpt_pass_tree(const float* sums, nrpt_u32 passes) {
    NrptTree<0, NRPT_PASS_TREE_HI> t;
    nrpt_tree_init(&t);
    for (nrpt_u32 i = 0; i < passes; ++i) nrpt_tree_push(&t, sums[i], 0u);
    return nrpt_tree_finish(&t);
}

/// `true` for a block shape the block step takes for D coordinates: threads a multiple
/// of 32 up to 1024, chunk a power of two from 4 to NRPT_MAX_CHUNK, and either one
/// pass or passes of a power-of-two number of coordinates, at most NRPT_MAX_PASSES.
NRPT_HD bool nrpt_block_shape_ok(nrpt_u32 threads, nrpt_u32 chunk, nrpt_u32 d) {
    if (threads == 0u || threads % 32u != 0u || threads > 1024u) return false;
    if (chunk < 4u || chunk > NRPT_MAX_CHUNK || (chunk & (chunk - 1u)) != 0u) return false;
    nrpt_u64 span = (nrpt_u64)threads * chunk;
    nrpt_u64 passes = ((nrpt_u64)d + span - 1u) / span;
    return passes <= 1u || ((span & (span - 1u)) == 0u && passes <= NRPT_MAX_PASSES);
}

/// Initial state coordinate j of a replica (InitialStates::Uniform): word j of its INIT
/// stream, `F::from_f64(low + (high − low) · uniform_f64(w))`.
NRPT_HD float nrpt_init_coord(const NrptGpuParams* p, NrptCursor* cur, nrpt_u32 j) {
    double u = nrpt_uniform_f64(nrpt_cursor_word(cur, j));
    return (float)(p->init_low + (p->init_high - p->init_low) * u);
}
