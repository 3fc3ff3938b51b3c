// mlp.cuh: the classifier data target of nrpt_core::model (softmax regression and ReLU
// MLPs on a training set seen through mini-batches) as a fused per-chain step: one
// block per chain draws its mini-batch from its STEP stream, gathers the examples from
// the data set in device memory, runs the forward and backward passes over the whole
// mini-batch in shared memory, takes the momentum-SGD (or SGLD/SGHMC) step, and
// evaluates the stochastic energy of the new state on a second mini-batch. The swap
// and adaptation phase is swap.cuh's, unchanged.
//
// Bits: every output is the f32 that nrpt_core::model::mlp computes one example at a
// time (compiled without FMA contraction): each activation, gradient entry and sum is
// accumulated in core's order (inputs in order for a forward output, examples in batch
// order for a gradient entry, outputs in order for a backpropagated entry, the batch's
// losses in order, θ² over θ in order), core's `if a == 0 { continue }` of the forward
// and backward loops is mirrored by predicating those additions on a != 0, and exp/ln
// are the `libm` crate's expf/logf (FreeBSD's) ported operation by operation. Which
// thread computes an output changes nothing.
//
// Layouts: activations, inputs and backpropagated deltas live in shared memory
// feature-major, `buf[f * stride + b]` for feature f of example b, each buffer 16-byte
// aligned, with a stride of 4 mod 8 words at least the batch (so that groups of four
// examples are one 128-bit load and neighbouring features fall in distinct banks); the
// padding examples are zeros. θ is staged in shared memory from word 0, in nrpt_core's
// layout (layer by layer: W row-major `W[i·out + j]`, then b).
//
// Every function here compiles for the host too (cuda/csrc/mlp_host.cpp): the host
// runs the same phases for every thread of a block in turn, which is what the kernel
// does between two barriers, so the CPU tests check the kernel's own arithmetic.
#pragma once
#include "swap.cuh"

/// The most weight layers (nrpt_core::model::MAX_LAYERS).
#define NRPT_MLP_MAX_LAYERS 8u
/// Threads that share the tiles of the matrix products (four warps).
#define NRPT_MLP_TILE_THREADS 128u
/// Threads of a block: the tile threads and one helper warp, which draws the energy's
/// mini-batch, sums the bias gradients and sums θ² while the others multiply.
#define NRPT_MLP_THREADS 160u
/// Threads of the exchange kernel (one block per ensemble).
#define NRPT_MLP_EXCHANGE_THREADS 128u

/// Register tiles (rows × columns of outputs per thread) of the three products: the
/// forward pass and the deltas below a layer take 4 consecutive examples per tile (one
/// 128-bit shared load), the weight gradient reads the batch 4 examples at a time.
#define NRPT_MLP_FWD_R 8u
#define NRPT_MLP_DW_R 4u
#define NRPT_MLP_DW_C 8u
#define NRPT_MLP_BELOW_R 8u

/// One weight layer (nrpt_core::model::Layer) and where its outputs sit in shared
/// memory (mirror of nrpt_cuda::mlp::MlpLayer, 20 bytes).
struct NrptMlpLayer {
    nrpt_u32 inputs;
    nrpt_u32 outputs;
    /// Offset of W (inputs × outputs) in θ, which is also its word in shared memory.
    nrpt_u32 weights;
    /// Offset of b (outputs) in θ.
    nrpt_u32 biases;
    /// Word of this layer's outputs (outputs × stride) in shared memory.
    nrpt_u32 acts;
};

/// Everything the step kernel needs to know (mirror of nrpt_cuda::mlp::MlpParams,
/// 256 bytes, no padding). Computed on the host by nrpt-cuda, from nrpt-core's
/// architecture and with nrpt-core's f32 conversions.
struct NrptMlpParams {
    NrptMlpLayer layer[8];
    /// Weight layers L (1 for softmax regression).
    nrpt_u32 layers;
    /// Features F and classes C.
    nrpt_u32 features;
    nrpt_u32 classes;
    /// Parameters D (the length of θ).
    nrpt_u32 dim;
    /// Examples per mini-batch B, and the row stride of the shared buffers (a multiple
    /// of 4, 4 mod 8, ≥ B).
    nrpt_u32 batch;
    nrpt_u32 stride;
    /// Training examples N.
    nrpt_u32 examples;
    /// Chains per ensemble P and ensembles E.
    nrpt_u32 chains;
    nrpt_u32 ensembles;
    /// Philox seed, and the key word of ensemble 0 of the launch.
    nrpt_u32 seed;
    nrpt_u32 ensemble0;
    /// 0 Langevin (SGLD/SGD), 1 momentum (mSGD/SGHMC).
    nrpt_u32 explorer;
    /// Shared-memory words: the gathered inputs (F × stride), the deltas at the scores
    /// (C × stride), the two mini-batches (B indices each), the losses (B), two scratch
    /// words (θ² and the energy), and the total.
    nrpt_u32 sm_x;
    nrpt_u32 sm_top;
    nrpt_u32 sm_idx;
    nrpt_u32 sm_idx2;
    nrpt_u32 sm_loss;
    nrpt_u32 sm_words;
    /// F::from_f64(N / B), and 1 / (σ·σ) with σ = F::from_f64(prior_sigma).
    float scale;
    float inv_var;
    /// F::from_f64(μ).
    float mu;
    nrpt_u32 pad;
    /// μ in f64, for the noise scale.
    double mu64;
};

/// Device addresses of a launch (mirror of nrpt_cuda::mlp::MlpArrays). Chain c = e·P + r
/// owns `states`, `momenta` and `grad` at [c·D, (c + 1)·D); energies, ladder and temps
/// are by level ([e·P + level]), level_of by replica. `momenta` is null for Langevin
/// explorers. The data set: `data_x` N × F row-major, `data_y` N labels below C.
struct NrptMlpArrays {
    float* states;
    float* momenta;
    float* grad;
    float* energies;
    const double* ladder;
    const double* temps;
    const nrpt_u32* level_of;
    const float* data_x;
    const nrpt_u32* data_y;
};

// ---- libm's expf and logf (the `libm` crate 0.2, from FreeBSD's e_expf.c and e_logf.c),
// which nrpt_core::float::Float::exp and ::ln call for f32. Constants are the crate's
// decimal literals (correctly rounded to f32 by every compiler involved).

/// libm's scalbnf (generic::scalbn for f32): x · 2^n, exact unless it under/overflows.
NRPT_HD float nrpt_libm_scalbnf(float x, nrpt_i32 n) {
    const float f_exp_max = nrpt_f32_from_bits(0x7f000000u);  // 2^127
    const float mul = nrpt_f32_from_bits(0x0c800000u);        // 2^-126 · 2^24 = 2^-102
    if (n > 127) {
        x *= f_exp_max;
        n -= 127;
        if (n > 127) {
            x *= f_exp_max;
            n -= 127;
            if (n > 127) n = 127;
        }
    } else if (n < -126) {
        x *= mul;
        n += 102;
        if (n < -126) {
            x *= mul;
            n += 102;
            if (n < -126) n = -126;
        }
    }
    return x * nrpt_f32_from_bits((nrpt_u32)(127 + n) << 23);
}

/// libm's expf.
NRPT_HD float nrpt_libm_expf(float x) {
    const float LN2_HI = 6.9314575195e-01f;  /* 0x3f317200 */
    const float LN2_LO = 1.4286067653e-06f;  /* 0x35bfbe8e */
    const float INV_LN2 = 1.4426950216e+00f; /* 0x3fb8aa3b */
    const float P1 = 1.6666625440e-1f;
    const float P2 = -2.7667332906e-3f;
    const float x1p127 = nrpt_f32_from_bits(0x7f000000u);
    nrpt_u32 hx = nrpt_f32_to_bits(x);
    const nrpt_i32 sign = (nrpt_i32)(hx >> 31);
    const bool signb = sign != 0;
    hx &= 0x7fffffffu;
    if (hx >= 0x42aeac50u) {
        if (hx > 0x7f800000u) return x;  // NaN
        if (hx >= 0x42b17218u && !signb) return x * x1p127;  // overflow
        if (signb && hx >= 0x42cff1b5u) return 0.0f;         // underflow
    }
    nrpt_i32 k;
    float hi, lo;
    if (hx > 0x3eb17218u) {
        if (hx > 0x3f851592u) {
            k = (nrpt_i32)(INV_LN2 * x + (signb ? -0.5f : 0.5f));
        } else {
            k = 1 - sign - sign;
        }
        const float kf = (float)k;
        hi = x - kf * LN2_HI;
        lo = kf * LN2_LO;
        x = hi - lo;
    } else if (hx > 0x39000000u) {
        k = 0;
        hi = x;
        lo = 0.0f;
    } else {
        return 1.0f + x;
    }
    const float xx = x * x;
    const float c = x - xx * (P1 + xx * P2);
    const float y = 1.0f + (x * c / (2.0f - c) - lo + hi);
    return k == 0 ? y : nrpt_libm_scalbnf(y, k);
}

/// libm's logf.
NRPT_HD float nrpt_libm_logf(float x) {
    const float LN2_HI = 6.9313812256e-01f; /* 0x3f317180 */
    const float LN2_LO = 9.0580006145e-06f; /* 0x3717f7d1 */
    const float LG1 = 0.66666662693f; /* 0xaaaaaa.0p-24 */
    const float LG2 = 0.40000972152f; /* 0xccce13.0p-25 */
    const float LG3 = 0.28498786688f; /* 0x91e9ee.0p-25 */
    const float LG4 = 0.24279078841f; /* 0xf89e26.0p-26 */
    nrpt_u32 ix = nrpt_f32_to_bits(x);
    nrpt_i32 k = 0;
    if (ix < 0x00800000u || (ix >> 31) != 0u) {
        if ((ix << 1) == 0u) return -1.0f / (x * x);     // log(±0) = -inf
        if ((ix >> 31) != 0u) return (x - x) / 0.0f;     // log(negative) = NaN
        k -= 25;                                          // subnormal: scale up
        x *= nrpt_f32_from_bits(0x4c000000u);             // 2^25
        ix = nrpt_f32_to_bits(x);
    } else if (ix >= 0x7f800000u) {
        return x;
    } else if (ix == 0x3f800000u) {
        return 0.0f;
    }
    ix += 0x3f800000u - 0x3f3504f3u;
    k += (nrpt_i32)(ix >> 23) - 0x7f;
    ix = (ix & 0x007fffffu) + 0x3f3504f3u;
    x = nrpt_f32_from_bits(ix);
    const float f = x - 1.0f;
    const float s = f / (2.0f + f);
    const float z = s * s;
    const float w = z * z;
    const float t1 = w * (LG2 + w * LG4);
    const float t2 = z * (LG1 + w * LG3);
    const float r = t2 + t1;
    const float hfsq = 0.5f * f * f;
    const float dk = (float)k;
    return s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
}

// ---- mini-batches

/// model::batch::index: ⌊w · N / 2³²⌋.
NRPT_HD nrpt_u32 nrpt_mlp_index(nrpt_u32 w, nrpt_u32 n) {
    return (nrpt_u32)(((nrpt_u64)w * (nrpt_u64)n) >> 32);
}

/// Philox blocks that hold the words [off, off + B) of a stream.
NRPT_HD nrpt_u32 nrpt_mlp_draw_blocks(const NrptMlpParams* p, nrpt_u32 off) {
    return (off + p->batch - 1u) / 4u - off / 4u + 1u;
}

/// The part of model::batch::draw (B words from word `off` of the stream on) that block
/// `u` of nrpt_mlp_draw_blocks holds: idx[i] = index(word off + i, N).
NRPT_HD void nrpt_mlp_draw_block(const NrptMlpParams* p, NrptStream s, nrpt_u32 off, nrpt_u32 u,
                                 nrpt_u32* idx) {
    const nrpt_u32 block = off / 4u + u;
    const NrptBlock w = nrpt_stream_block(s, block);
    for (nrpt_u32 lane = 0; lane < 4u; ++lane) {
        const nrpt_u32 word = 4u * block + lane;
        if (word >= off && word - off < p->batch) {
            idx[word - off] = nrpt_mlp_index(nrpt_lane(w, lane), p->examples);
        }
    }
}

/// Copies the features of the mini-batch `idx` into the shared inputs, feature-major:
/// the part of thread `t` of `n`. Consecutive threads take consecutive examples, so
/// their shared-memory writes hit consecutive banks; each thread's reads walk along one
/// example's row, which stays in L1 between them.
NRPT_HD void nrpt_mlp_gather(const NrptMlpParams* p, float* sm, const nrpt_u32* idx,
                             const float* data_x, nrpt_u32 t, nrpt_u32 n) {
    const nrpt_u32 F = p->features, B = p->batch, bs = p->stride;
    float* xt = sm + p->sm_x;
    for (nrpt_u32 e = t; e < F * B; e += n) {
        const nrpt_u32 i = e / B, b = e - i * B;
        xt[i * bs + b] = data_x[(nrpt_u64)idx[b] * F + i];
    }
}

/// Zeroes the padding columns [B, stride) of every feature-major buffer (inputs, every
/// layer's outputs, deltas at the scores): the products read whole groups of four
/// examples, and an input of exactly 0 contributes nothing (core's skip), so the padding
/// changes no sum. Nothing writes these columns afterwards.
NRPT_HD void nrpt_mlp_zero_padding(const NrptMlpParams* p, float* sm, nrpt_u32 t, nrpt_u32 n) {
    const nrpt_u32 B = p->batch, bs = p->stride, pad = bs - B;
    nrpt_u32 rows = p->features + p->classes;
    for (nrpt_u32 l = 0; l < p->layers; ++l) rows += p->layer[l].outputs;
    for (nrpt_u32 e = t; e < rows * pad; e += n) {
        const nrpt_u32 row = e / pad, b = B + (e - row * pad);
        // The buffers follow each other in shared memory: inputs, layers, top.
        sm[p->sm_x + row * bs + b] = 0.0f;
    }
}

/// Four consecutive floats from a 16-byte aligned address (one 128-bit shared load).
struct NrptF4 {
    float v[4];
};

NRPT_HD NrptF4 nrpt_mlp_load4(const float* a) {
    NrptF4 r;
#if defined(__CUDA_ARCH__)
    const float4 q = *(const float4*)a;
    r.v[0] = q.x;
    r.v[1] = q.y;
    r.v[2] = q.z;
    r.v[3] = q.w;
#else
    for (int i = 0; i < 4; ++i) r.v[i] = a[i];
#endif
    return r;
}

NRPT_HD nrpt_u32 nrpt_mlp_min(nrpt_u32 a, nrpt_u32 b) { return a < b ? a : b; }

/// Tiles of the forward product of layer l: outputs (unit j, example b), rows of
/// NRPT_MLP_FWD_R consecutive units, columns of 4 consecutive examples.
NRPT_HD nrpt_u32 nrpt_mlp_forward_tiles(const NrptMlpParams* p, nrpt_u32 l) {
    const nrpt_u32 out = p->layer[l].outputs, B = p->batch;
    return ((out + NRPT_MLP_FWD_R - 1u) / NRPT_MLP_FWD_R) * ((B + 3u) / 4u);
}

/// One tile of layer l's forward pass (mlp::example_loss): for units j = j0 .. j0 + 7
/// and examples b = b0 .. b0 + 3, `o = b_j; for i in inputs: if a_bi != 0 { o += a_bi ·
/// W[i, j] }`, then the ReLU `if o < 0 { o = 0 }` for hidden layers. Reads the layer's
/// inputs (the gathered examples or the layer below) and θ, writes the layer's outputs.
/// Neighbouring threads take neighbouring example groups (consecutive 16-byte loads)
/// and share their units (broadcast loads of W); rows past the layer's units read the
/// words after them in shared memory and are discarded.
NRPT_HD void nrpt_mlp_forward_tile(const NrptMlpParams* p, float* sm, nrpt_u32 l, nrpt_u32 tile) {
    const NrptMlpLayer L = p->layer[l];
    const nrpt_u32 B = p->batch, bs = p->stride, out = L.outputs;
    const nrpt_u32 nct = (B + 3u) / 4u;
    const nrpt_u32 rt = tile / nct, ct = tile - rt * nct;
    const nrpt_u32 j0 = rt * NRPT_MLP_FWD_R, b0 = 4u * ct;
    const float* a = ((l == 0u) ? sm + p->sm_x : sm + p->layer[l - 1u].acts) + b0;
    const float* w = sm + L.weights + j0;
    float acc[NRPT_MLP_FWD_R][4];
    for (nrpt_u32 r = 0; r < NRPT_MLP_FWD_R; ++r) {
        const float bias = sm[L.biases + nrpt_mlp_min(j0 + r, out - 1u)];
        for (nrpt_u32 q = 0; q < 4u; ++q) acc[r][q] = bias;
    }
#if defined(__CUDA_ARCH__)
#pragma unroll 2
#endif
    for (nrpt_u32 i = 0; i < L.inputs; ++i) {
        const NrptF4 x = nrpt_mlp_load4(a);
        bool on[4];
        for (nrpt_u32 q = 0; q < 4u; ++q) on[q] = x.v[q] != 0.0f;
        float wv[NRPT_MLP_FWD_R];
        for (nrpt_u32 r = 0; r < NRPT_MLP_FWD_R; ++r) wv[r] = w[r];
        for (nrpt_u32 r = 0; r < NRPT_MLP_FWD_R; ++r) {
            for (nrpt_u32 q = 0; q < 4u; ++q) {
                if (on[q]) acc[r][q] = acc[r][q] + x.v[q] * wv[r];
            }
        }
        a += bs;
        w += out;
    }
    const bool hidden = l + 1u < p->layers;
    float* o = sm + L.acts;
    for (nrpt_u32 r = 0; r < NRPT_MLP_FWD_R; ++r) {
        const nrpt_u32 j = j0 + r;
        for (nrpt_u32 q = 0; q < 4u; ++q) {
            const nrpt_u32 b = b0 + q;
            float v = acc[r][q];
            if (hidden && v < 0.0f) v = 0.0f;  // NaN stays NaN, as in core
            if (j < out && b < B) o[j * bs + b] = v;
        }
    }
}

/// Tiles of layer l's weight gradient: outputs (input i, unit j), NRPT_MLP_DW_R inputs
/// by NRPT_MLP_DW_C units per tile.
NRPT_HD nrpt_u32 nrpt_mlp_dweight_tiles(const NrptMlpParams* p, nrpt_u32 l) {
    const NrptMlpLayer L = p->layer[l];
    return ((L.inputs + NRPT_MLP_DW_R - 1u) / NRPT_MLP_DW_R) *
           ((L.outputs + NRPT_MLP_DW_C - 1u) / NRPT_MLP_DW_C);
}

/// The deltas of layer l's outputs: at the scores their own buffer, below them the
/// layer's activations (overwritten in place by nrpt_mlp_below_tile).
NRPT_HD const float* nrpt_mlp_delta(const NrptMlpParams* p, const float* sm, nrpt_u32 l) {
    return (l + 1u == p->layers) ? sm + p->sm_top : sm + p->layer[l].acts;
}

/// One tile of layer l's weight gradient (mlp::example_backward), written to `grad`
/// (θ's layout): `g = 0; for b in batch: if a_bi != 0 { g += a_bi · δ_bj }`, the batch
/// read four examples at a time (the padding examples have a = 0). Inputs
/// i = rt + r·(row tiles) and units j = ct + q·(column tiles) are interleaved, so that
/// the threads of a warp read neighbouring rows (distinct banks: the stride is 4 mod 8).
NRPT_HD void nrpt_mlp_dweight_tile(const NrptMlpParams* p, const float* sm, nrpt_u32 l,
                                   nrpt_u32 tile, float* grad) {
    const NrptMlpLayer L = p->layer[l];
    const nrpt_u32 B = p->batch, bs = p->stride, out = L.outputs, in = L.inputs;
    const nrpt_u32 nrt = (in + NRPT_MLP_DW_R - 1u) / NRPT_MLP_DW_R;
    const nrpt_u32 nct = (out + NRPT_MLP_DW_C - 1u) / NRPT_MLP_DW_C;
    const nrpt_u32 rt = tile / nct, ct = tile - rt * nct;
    const float* a = (l == 0u) ? sm + p->sm_x : sm + p->layer[l - 1u].acts;
    const float* d = nrpt_mlp_delta(p, sm, l);
    const float* ar[NRPT_MLP_DW_R];
    const float* dr[NRPT_MLP_DW_C];
    float acc[NRPT_MLP_DW_R][NRPT_MLP_DW_C];
    for (nrpt_u32 r = 0; r < NRPT_MLP_DW_R; ++r) {
        ar[r] = a + nrpt_mlp_min(rt + r * nrt, in - 1u) * bs;
        for (nrpt_u32 q = 0; q < NRPT_MLP_DW_C; ++q) acc[r][q] = 0.0f;
    }
    for (nrpt_u32 q = 0; q < NRPT_MLP_DW_C; ++q) dr[q] = d + nrpt_mlp_min(ct + q * nct, out - 1u) * bs;
    for (nrpt_u32 b = 0; b < B; b += 4u) {
        NrptF4 av[NRPT_MLP_DW_R], dv[NRPT_MLP_DW_C];
        for (nrpt_u32 r = 0; r < NRPT_MLP_DW_R; ++r) av[r] = nrpt_mlp_load4(ar[r] + b);
        for (nrpt_u32 q = 0; q < NRPT_MLP_DW_C; ++q) dv[q] = nrpt_mlp_load4(dr[q] + b);
        for (nrpt_u32 u = 0; u < 4u; ++u) {
            bool on[NRPT_MLP_DW_R];
            for (nrpt_u32 r = 0; r < NRPT_MLP_DW_R; ++r) on[r] = av[r].v[u] != 0.0f;
            // Units outside, inputs inside: neighbouring additions have different
            // predicates, which the compiler predicates instead of branching around.
            for (nrpt_u32 q = 0; q < NRPT_MLP_DW_C; ++q) {
                for (nrpt_u32 r = 0; r < NRPT_MLP_DW_R; ++r) {
                    if (on[r]) acc[r][q] = acc[r][q] + av[r].v[u] * dv[q].v[u];
                }
            }
        }
    }
    for (nrpt_u32 r = 0; r < NRPT_MLP_DW_R; ++r) {
        const nrpt_u32 i = rt + r * nrt;
        for (nrpt_u32 q = 0; q < NRPT_MLP_DW_C; ++q) {
            const nrpt_u32 j = ct + q * nct;
            if (i < in && j < out) grad[L.weights + i * out + j] = acc[r][q];
        }
    }
}

/// The gradient of bias j of layer l: `g = 0; for b in batch: g += δ_bj`.
NRPT_HD void nrpt_mlp_dbias(const NrptMlpParams* p, const float* sm, nrpt_u32 l, nrpt_u32 j,
                            float* grad) {
    const float* d = nrpt_mlp_delta(p, sm, l) + j * p->stride;
    float g = 0.0f;
    for (nrpt_u32 b = 0; b < p->batch; ++b) g = g + d[b];
    grad[p->layer[l].biases + j] = g;
}

/// Tiles of the deltas below layer l (l ≥ 1): outputs (input i, example b),
/// NRPT_MLP_BELOW_R inputs by 4 consecutive examples per tile.
NRPT_HD nrpt_u32 nrpt_mlp_below_tiles(const NrptMlpParams* p, nrpt_u32 l) {
    const nrpt_u32 in = p->layer[l].inputs, B = p->batch;
    return ((in + NRPT_MLP_BELOW_R - 1u) / NRPT_MLP_BELOW_R) * ((B + 3u) / 4u);
}

/// One tile of the deltas of layer l − 1's outputs (mlp::example_backward):
/// `s = 0; for j in outputs: s += W[i, j] · δ_bj`, kept where the ReLU was on
/// (a_bi > 0) and 0 elsewhere, written over layer l − 1's activations (every thread
/// reads the activations it overwrites, and nothing else reads them any more).
NRPT_HD void nrpt_mlp_below_tile(const NrptMlpParams* p, float* sm, nrpt_u32 l, nrpt_u32 tile) {
    const NrptMlpLayer L = p->layer[l];
    const nrpt_u32 B = p->batch, bs = p->stride, out = L.outputs, in = L.inputs;
    const nrpt_u32 nrt = (in + NRPT_MLP_BELOW_R - 1u) / NRPT_MLP_BELOW_R;
    const nrpt_u32 nct = (B + 3u) / 4u;
    const nrpt_u32 rt = tile / nct, ct = tile - rt * nct;
    const nrpt_u32 b0 = 4u * ct;
    const float* wr[NRPT_MLP_BELOW_R];
    const float* d = nrpt_mlp_delta(p, sm, l) + b0;
    float acc[NRPT_MLP_BELOW_R][4];
    for (nrpt_u32 r = 0; r < NRPT_MLP_BELOW_R; ++r) {
        wr[r] = sm + L.weights + nrpt_mlp_min(rt + r * nrt, in - 1u) * out;
        for (nrpt_u32 q = 0; q < 4u; ++q) acc[r][q] = 0.0f;
    }
#if defined(__CUDA_ARCH__)
#pragma unroll 2
#endif
    for (nrpt_u32 j = 0; j < out; ++j) {
        const NrptF4 dv = nrpt_mlp_load4(d);
        for (nrpt_u32 r = 0; r < NRPT_MLP_BELOW_R; ++r) {
            const float wv = wr[r][j];
            for (nrpt_u32 q = 0; q < 4u; ++q) acc[r][q] = acc[r][q] + wv * dv.v[q];
        }
        d += bs;
    }
    float* o = sm + p->layer[l - 1u].acts;
    for (nrpt_u32 r = 0; r < NRPT_MLP_BELOW_R; ++r) {
        const nrpt_u32 i = rt + r * nrt;
        for (nrpt_u32 q = 0; q < 4u; ++q) {
            const nrpt_u32 b = b0 + q;
            if (i < in && b < B) {
                const float act = o[i * bs + b];
                o[i * bs + b] = act > 0.0f ? acc[r][q] : 0.0f;
            }
        }
    }
}

/// Example b's loss `logsumexp(s) − s_y` (mlp::example_loss) into the shared losses,
/// and with `grad` its deltas at the scores `scale · (softmax(s) − e_y)`
/// (mlp::example_backward), feature-major into the top buffer. `idx` is the
/// mini-batch whose scores the last forward pass computed.
NRPT_HD void nrpt_mlp_top(const NrptMlpParams* p, float* sm, const nrpt_u32* idx,
                          const nrpt_u32* data_y, nrpt_u32 b, bool grad) {
    const nrpt_u32 C = p->classes, bs = p->stride;
    const float* s = sm + p->layer[p->layers - 1u].acts + b;
    float m = s[0];
    for (nrpt_u32 c = 0; c < C; ++c) {
        const float v = s[c * bs];
        if (v > m) m = v;
    }
    float sum = 0.0f;
    for (nrpt_u32 c = 0; c < C; ++c) sum = sum + nrpt_libm_expf(s[c * bs] - m);
    const float lse = m + nrpt_libm_logf(sum);
    const nrpt_u32 y = data_y[idx[b]];
    sm[p->sm_loss + b] = lse - s[y * bs];
    if (grad) {
        float* d = sm + p->sm_top + b;
        for (nrpt_u32 c = 0; c < C; ++c) {
            const float pc = nrpt_libm_expf(s[c * bs] - lse);
            d[c * bs] = p->scale * (c == y ? pc - 1.0f : pc);
        }
    }
}

// ---- the exploration step

/// What the level's learning rate and temperature mean for one step, as
/// Engine::explore computes them: η and σ = explore::noise_scale in f64, cast to f32;
/// the Langevin noise is drawn when the f64 σ is > 0, from word B of the STEP stream
/// (after the gradient's mini-batch), and the energy's mini-batch follows it.
struct NrptMlpLevel {
    float eta;
    float sigma;
    bool draw;
    nrpt_u32 lang_off;
    nrpt_u32 energy_off;
};

NRPT_HD NrptMlpLevel nrpt_mlp_level(const NrptMlpParams* p, double eta, double temp) {
    // T = 0 (SGD explorers) gives sqrt(+0) = +0 exactly: skip the square root.
    double sigma = 0.0;
    if (temp != 0.0) {
        sigma = p->explorer ? nrpt_sqrt(2.0 * (1.0 - p->mu64) * eta * temp)
                            : nrpt_sqrt(2.0 * eta * temp);
    }
    NrptMlpLevel l;
    l.eta = (float)eta;
    l.sigma = (float)sigma;
    l.draw = sigma > 0.0;
    l.lang_off = p->batch;
    l.energy_off = p->batch + (l.draw ? 2u * ((p->dim + 1u) / 2u) : 0u);
    return l;
}

/// Coordinates 2·pair and 2·pair + 1 of the step (explore::langevin_step or
/// momentum_step with the gradient `grad + θ/σ²` of mlp::energy): θ in shared memory
/// and in the chain's state, the momentum in memory.
NRPT_HD void nrpt_mlp_update_pair(const NrptMlpParams* p, const NrptMlpLevel* l, NrptStream s,
                                  nrpt_u32 pair, float* theta, float* x, float* v,
                                  const float* grad) {
    float z[2] = {0.0f, 0.0f};
    if (l->draw) {
        const nrpt_u32 w0 = nrpt_stream_word(s, (nrpt_u64)l->lang_off + 2u * pair);
        const nrpt_u32 w1 = nrpt_stream_word(s, (nrpt_u64)l->lang_off + 2u * pair + 1u);
        const NrptPair zp = nrpt_box_muller_f32(w0, w1);
        z[0] = zp.z0;
        z[1] = zp.z1;
    }
    for (nrpt_u32 h = 0; h < 2u; ++h) {
        const nrpt_u32 k = 2u * pair + h;
        if (k >= p->dim) break;
        float t = theta[k];
        const float g = grad[k] + t * p->inv_var;
        if (p->explorer == 0u) {
            if (l->sigma == 0.0f) {
                t = t - l->eta * g;
            } else {
                t = (t - l->eta * g) + l->sigma * z[h];
            }
        } else {
            float nv = p->mu * v[k] - l->eta * g;
            if (l->sigma != 0.0f) nv = nv + l->sigma * z[h];
            v[k] = nv;
            t = t + nv;
        }
        theta[k] = t;
        x[k] = t;
    }
}

// ---- one chain's iteration

/// Shared scratch words after the losses: θ² of the new state, and its energy.
#define NRPT_MLP_SQ 0u
#define NRPT_MLP_ENERGY 1u

/// One chain's whole iteration k (Engine::explore for one replica with the Classifier
/// oracle): the gradient on the first mini-batch, the step, the energy on the second,
/// written to the chain's level. `X` runs each phase on every thread of the block and
/// then synchronizes them (the kernel: this thread, then __syncthreads; the host: every
/// thread in turn). `sm` holds p->sm_words words. Returns the energy.
template <class X>
NRPT_HD float nrpt_mlp_step_chain(X& ex, const NrptMlpParams* p, nrpt_u64 k,
                                  const NrptMlpArrays* a, nrpt_u64 c, float* sm) {
    const nrpt_u32 NT = NRPT_MLP_THREADS, TT = NRPT_MLP_TILE_THREADS, HW = NT - TT;
    const nrpt_u32 P = p->chains, D = p->dim, B = p->batch, L = p->layers;
    const nrpt_u32 r = (nrpt_u32)(c % P), e = (nrpt_u32)(c / P);
    const nrpt_u64 base = (nrpt_u64)e * P;
    const nrpt_u32 level = a->level_of[c];
    const NrptMlpLevel lv = nrpt_mlp_level(p, a->ladder[base + level], a->temps[base + level]);
    const NrptStream s = nrpt_stream(p->seed, p->ensemble0 + e, k, r, NRPT_STREAM_STEP);
    float* x = a->states + c * D;
    float* v = a->momenta ? a->momenta + c * D : x;
    float* g = a->grad + c * D;
    nrpt_u32* idx = (nrpt_u32*)(sm + p->sm_idx);
    nrpt_u32* idx2 = (nrpt_u32*)(sm + p->sm_idx2);
    float* scratch = sm + p->sm_loss + B;
    const nrpt_u32 blocks = nrpt_mlp_draw_blocks(p, 0u);
    const nrpt_u32 blocks2 = nrpt_mlp_draw_blocks(p, lv.energy_off);

    // θ into shared memory, the padding examples zeroed, both mini-batches (the helper
    // warp draws the energy's).
    ex.all([&](nrpt_u32 t) {
        for (nrpt_u32 i = t; i < D; i += NT) sm[i] = x[i];
        nrpt_mlp_zero_padding(p, sm, t, NT);
        if (t < TT) {
            for (nrpt_u32 u = t; u < blocks; u += TT) nrpt_mlp_draw_block(p, s, 0u, u, idx);
        } else {
            for (nrpt_u32 u = t - TT; u < blocks2; u += HW) {
                nrpt_mlp_draw_block(p, s, lv.energy_off, u, idx2);
            }
        }
    });
    // The gradient: forward, deltas at the scores, backward.
    ex.all([&](nrpt_u32 t) { nrpt_mlp_gather(p, sm, idx, a->data_x, t, NT); });
    for (nrpt_u32 l = 0; l < L; ++l) {
        const nrpt_u32 tiles = nrpt_mlp_forward_tiles(p, l);
        ex.all([&](nrpt_u32 t) {
            if (t < TT) {
                for (nrpt_u32 u = t; u < tiles; u += TT) nrpt_mlp_forward_tile(p, sm, l, u);
            }
        });
    }
    ex.all([&](nrpt_u32 t) {
        for (nrpt_u32 b = t; b < B; b += NT) nrpt_mlp_top(p, sm, idx, a->data_y, b, true);
    });
    for (nrpt_u32 l = L; l-- > 0u;) {
        const nrpt_u32 tiles = nrpt_mlp_dweight_tiles(p, l);
        const nrpt_u32 out = p->layer[l].outputs;
        ex.all([&](nrpt_u32 t) {
            if (t < TT) {
                for (nrpt_u32 u = t; u < tiles; u += TT) nrpt_mlp_dweight_tile(p, sm, l, u, g);
            } else {
                for (nrpt_u32 j = t - TT; j < out; j += HW) nrpt_mlp_dbias(p, sm, l, j, g);
            }
        });
        if (l > 0u) {
            const nrpt_u32 below = nrpt_mlp_below_tiles(p, l);
            ex.all([&](nrpt_u32 t) {
                if (t < TT) {
                    for (nrpt_u32 u = t; u < below; u += TT) nrpt_mlp_below_tile(p, sm, l, u);
                }
            });
        }
    }
    // The step, in shared memory and in the chain's state.
    ex.all([&](nrpt_u32 t) {
        for (nrpt_u32 q = t; q < (D + 1u) / 2u; q += NT) {
            nrpt_mlp_update_pair(p, &lv, s, q, sm, x, v, g);
        }
    });
    // The energy at the new state on the second mini-batch; the helper thread sums θ²
    // (in θ's order, as mlp::energy does) while the others run the first layer.
    ex.all([&](nrpt_u32 t) { nrpt_mlp_gather(p, sm, idx2, a->data_x, t, NT); });
    for (nrpt_u32 l = 0; l < L; ++l) {
        const nrpt_u32 tiles = nrpt_mlp_forward_tiles(p, l);
        ex.all([&](nrpt_u32 t) {
            if (t < TT) {
                for (nrpt_u32 u = t; u < tiles; u += TT) nrpt_mlp_forward_tile(p, sm, l, u);
            } else if (t == TT && l == 0u) {
                float sq = 0.0f;
                for (nrpt_u32 i = 0; i < D; ++i) sq = sq + sm[i] * sm[i];
                scratch[NRPT_MLP_SQ] = sq;
            }
        });
    }
    ex.all([&](nrpt_u32 t) {
        for (nrpt_u32 b = t; b < B; b += NT) nrpt_mlp_top(p, sm, idx2, a->data_y, b, false);
    });
    ex.all([&](nrpt_u32 t) {
        if (t == TT) {
            float loss = 0.0f;
            for (nrpt_u32 b = 0; b < B; ++b) loss = loss + sm[p->sm_loss + b];
            const float energy = p->scale * loss + 0.5f * scratch[NRPT_MLP_SQ] * p->inv_var;
            scratch[NRPT_MLP_ENERGY] = energy;
            a->energies[base + level] = energy;
        }
    });
    return scratch[NRPT_MLP_ENERGY];
}

/// The energy and gradient of θ on the mini-batch `idx` (mlp::energy), through the
/// step's own phases: the reference the tests compare with nrpt-core without a step.
/// `grad` (θ's length) receives the full gradient, prior included, when not null.
template <class X>
NRPT_HD float nrpt_mlp_evaluate(X& ex, const NrptMlpParams* p, const float* theta,
                                const nrpt_u32* batch, const float* data_x,
                                const nrpt_u32* data_y, float* grad, float* sm) {
    const nrpt_u32 NT = NRPT_MLP_THREADS, TT = NRPT_MLP_TILE_THREADS, HW = NT - TT;
    const nrpt_u32 D = p->dim, B = p->batch, L = p->layers;
    nrpt_u32* idx = (nrpt_u32*)(sm + p->sm_idx);
    ex.all([&](nrpt_u32 t) {
        for (nrpt_u32 i = t; i < D; i += NT) sm[i] = theta[i];
        for (nrpt_u32 b = t; b < B; b += NT) idx[b] = batch[b];
        nrpt_mlp_zero_padding(p, sm, t, NT);
    });
    ex.all([&](nrpt_u32 t) { nrpt_mlp_gather(p, sm, idx, data_x, t, NT); });
    for (nrpt_u32 l = 0; l < L; ++l) {
        const nrpt_u32 tiles = nrpt_mlp_forward_tiles(p, l);
        ex.all([&](nrpt_u32 t) {
            if (t < TT) {
                for (nrpt_u32 u = t; u < tiles; u += TT) nrpt_mlp_forward_tile(p, sm, l, u);
            }
        });
    }
    ex.all([&](nrpt_u32 t) {
        for (nrpt_u32 b = t; b < B; b += NT) nrpt_mlp_top(p, sm, idx, data_y, b, grad != 0);
    });
    float loss = 0.0f, sq = 0.0f;
    for (nrpt_u32 b = 0; b < B; ++b) loss = loss + sm[p->sm_loss + b];
    for (nrpt_u32 i = 0; i < D; ++i) sq = sq + sm[i] * sm[i];
    const float energy = p->scale * loss + 0.5f * sq * p->inv_var;
    if (grad) {
        for (nrpt_u32 l = L; l-- > 0u;) {
            const nrpt_u32 tiles = nrpt_mlp_dweight_tiles(p, l);
            const nrpt_u32 out = p->layer[l].outputs;
            ex.all([&](nrpt_u32 t) {
                if (t < TT) {
                    for (nrpt_u32 u = t; u < tiles; u += TT) nrpt_mlp_dweight_tile(p, sm, l, u, grad);
                } else {
                    for (nrpt_u32 j = t - TT; j < out; j += HW) nrpt_mlp_dbias(p, sm, l, j, grad);
                }
            });
            if (l > 0u) {
                const nrpt_u32 below = nrpt_mlp_below_tiles(p, l);
                ex.all([&](nrpt_u32 t) {
                    if (t < TT) {
                        for (nrpt_u32 u = t; u < below; u += TT) nrpt_mlp_below_tile(p, sm, l, u);
                    }
                });
            }
        }
        ex.all([&](nrpt_u32 t) {
            for (nrpt_u32 i = t; i < D; i += NT) grad[i] = grad[i] + sm[i] * p->inv_var;
        });
    }
    return energy;
}

// ---- the exchange

/// Steps 3–6 of iteration k for ensemble e: swap.cuh's nrpt_swap_and_adapt over the
/// arrays in memory, run by `team` (the lanes of one warp on the GPU, one thread on the
/// host), then the ensemble's buffer and totals and, when `record` is not null, its
/// flags written back.
NRPT_HD void nrpt_mlp_exchange_ensemble(const NrptGpuParams* p, nrpt_u32 e, nrpt_u64 k,
                                        const NrptIterConsts* ic, const NrptArrays* a,
                                        nrpt_u8* record, const NrptTeam* team) {
    const nrpt_u32 P = p->core.chains;
    const nrpt_u64 base = (nrpt_u64)e * P, pbase = (nrpt_u64)e * (P - 1u);
    NrptEnsembleRefs r;
    r.energies = a->energies + base;
    r.ladder = a->ladder + base;
    r.temps = a->temps + base;
    r.replica_at = a->replica_at + base;
    r.level_of = a->level_of + base;
    r.trips = a->trips + base;
    r.gates = a->gates + pbase;
    r.flags = a->flags + pbase;
    r.pairs = a->pairs + pbase;
    r.stride = 1u;
    // This iteration's counts, added to the totals afterwards (integers: the same sums),
    // so that no running total stays live across the sweep.
    NrptIndexStats counts;
    counts.round_trips = 0u;
    counts.restarts = 0u;
    counts.authors_round_trips = 0u;
    counts.nonfinite_energies = 0u;
    double buffer = a->buffers[e];
    nrpt_swap_and_adapt(p, p->core.ensemble + e, k, *ic, &r, &buffer, &counts, team);
    if (nrpt_team_leader(team)) {
        NrptIndexStats* total = &a->stats[e];
        total->round_trips += counts.round_trips;
        total->restarts += counts.restarts;
        total->authors_round_trips += counts.authors_round_trips;
        total->nonfinite_energies += counts.nonfinite_energies;
        a->buffers[e] = buffer;
    }
    if (record) {
        NRPT_TEAM_FOR(team, q, P - 1u) { record[pbase + q] = r.flags[q]; }
    }
}

/// Engine::exchange's momentum reset for ensemble e after its sweep (MomentumOnSwap::
/// Reset, momentum explorers): both replicas of every executed swap restart with zero
/// velocity. The part of thread `t` of the block's `n` (coordinates t, t + n, …), once
/// the sweep's flags and permutation are visible to every thread.
NRPT_HD void nrpt_mlp_zero_momenta(const NrptGpuParams* p, nrpt_u32 e, const NrptArrays* a,
                                   nrpt_u32 t, nrpt_u32 n) {
    const nrpt_u32 P = p->core.chains, D = p->core.dim;
    if (a->momenta == 0 || p->core.explorer == 0u || (p->core.adapt_flags & NRPT_MOMENTUM_CARRY)) {
        return;
    }
    const nrpt_u64 base = (nrpt_u64)e * P, pbase = (nrpt_u64)e * (P - 1u);
    float* m = (float*)a->momenta;
    for (nrpt_u32 q = 0; q + 1u < P; ++q) {
        if (!(a->flags[pbase + q] & NRPT_FLAG_SWAPPED)) continue;
        for (nrpt_u32 h = 0; h < 2u; ++h) {
            const nrpt_u64 rep = a->replica_at[base + q + h];
            float* row = m + (base + rep) * D;
            for (nrpt_u32 j = t; j < D; j += n) row[j] = 0.0f;
        }
    }
}
