// host_math.cpp: the kernels' per-thread math (kernels/*.cuh) compiled for the CPU with
// -ffp-contract=off, behind extern "C" shims that nrpt-cuda's tests call to compare
// with nrpt-core. The kernels run exactly these functions on the GPU.
//
// Compiled twice: as itself (exact mode, shims nrpt_host_*) and through
// host_math_fast.cpp with NRPT_FAST_MATH=1 (fast mode, the hardware approximations
// emulated as kernels/fastmath.cuh describes, shims nrpt_fast_host_*).
#ifndef NRPT_HOST_FN
#define NRPT_HOST_FN(name) nrpt_host_##name
#endif
#include "chain.cuh"
#include "swap.cuh"
#include "warp_swap.cuh"

extern "C" {

void NRPT_HOST_FN(philox)(const nrpt_u32* counter, const nrpt_u32* key, nrpt_u32* out) {
    NrptBlock b = nrpt_philox(counter[0], counter[1], counter[2], counter[3], key[0], key[1]);
    out[0] = b.w0;
    out[1] = b.w1;
    out[2] = b.w2;
    out[3] = b.w3;
}

nrpt_u32 NRPT_HOST_FN(stream_word)(nrpt_u32 seed, nrpt_u32 ensemble, nrpt_u64 iteration,
                               nrpt_u32 replica, nrpt_u32 stream, nrpt_u64 index) {
    return nrpt_stream_word(nrpt_stream(seed, ensemble, iteration, replica, stream), index);
}

float NRPT_HOST_FN(uniform_f32)(nrpt_u32 w) { return nrpt_uniform_f32(w); }

/// How many times this thread entered code fenced by NRPT_OTHER_RULES() (common.cuh).
nrpt_u64 NRPT_HOST_FN(other_rules_count)(void) { return nrpt_other_rules_count; }
double NRPT_HOST_FN(uniform_f64)(nrpt_u32 w) { return nrpt_uniform_f64(w); }

void NRPT_HOST_FN(box_muller_f32)(nrpt_u32 w0, nrpt_u32 w1, float* out) {
    NrptPair p = nrpt_box_muller_f32(w0, w1);
    out[0] = p.z0;
    out[1] = p.z1;
}

float NRPT_HOST_FN(ln)(float x) { return nrpt_ln(x); }
float NRPT_HOST_FN(round_nearest)(float x) { return nrpt_round_nearest(x); }

void NRPT_HOST_FN(sin_cos_2pi)(float x, float* out) {
    NrptSinCos sc = nrpt_sin_cos_2pi(x);
    out[0] = sc.s;
    out[1] = sc.c;
}

float NRPT_HOST_FN(modes2d_energy)(float a, float b) { return nrpt_modes2d_energy(a, b); }

void NRPT_HOST_FN(modes2d_gradient)(float a, float b, float* out) {
    nrpt_modes2d_gradient(a, b, &out[0], &out[1]);
}

float NRPT_HOST_FN(sum_modes_term)(float x) { return nrpt_sum_modes_term(x); }
float NRPT_HOST_FN(sum_modes_grad)(float x) { return nrpt_sum_modes_grad(x); }

nrpt_u16 NRPT_HOST_FN(f32_to_bf16)(float x) { return nrpt_f32_to_bf16(x); }
float NRPT_HOST_FN(bf16_to_f32)(nrpt_u16 h) { return nrpt_bf16_to_f32(h); }
nrpt_u16 NRPT_HOST_FN(f32_to_f16)(float x) { return nrpt_f32_to_f16(x); }
float NRPT_HOST_FN(f16_to_f32)(nrpt_u16 h) { return nrpt_f16_to_f32(h); }

nrpt_u32 NRPT_HOST_FN(persistent_shared_bytes)(nrpt_u32 g, nrpt_u32 p) {
    return nrpt_persistent_shared_bytes(g, p);
}

/// One replica's iteration as the per-thread kernels do it (step_2d for D = 2, else
/// step_seq). `storage`: 0 f32 (x, v are float*), 1 bf16, 2 f16 (x, v are u16*). Up to
/// NRPT_SEQ_MAX_DIM coordinates the tree is step_seq's own instantiation; beyond (the
/// GPU steps those by blocks) the same code with a deeper tree.
}  // extern "C"

template <class S>
static float host_step_seq(const NrptChainCfg* cfg, const NrptLevelCoeffs* l, NrptStream s,
                           typename S::T* x, typename S::T* v) {
    if (cfg->dim <= NRPT_SEQ_MAX_DIM) return nrpt_chain_step_seq<S, NRPT_SEQ_TREE_HI>(cfg, l, s, x, v);
    return nrpt_chain_step_seq<S, 32>(cfg, l, s, x, v);
}

extern "C" {


float NRPT_HOST_FN(chain_step)(const NrptGpuParams* p, nrpt_u32 ensemble_key, nrpt_u64 k,
                           nrpt_u32 replica, double eta, double temp, void* x, void* v,
                           nrpt_u32 storage) {
    NrptChainCfg cfg = nrpt_chain_cfg(p);
    NrptLevelCoeffs l = nrpt_level_coeffs(&cfg, eta, temp);
    NrptStream s = nrpt_stream(p->core.seed, ensemble_key, k, replica, NRPT_STREAM_STEP);
    if (storage == 0u && cfg.dim == 2u) {
        float* xf = (float*)x;
        float* vf = (float*)v;
        float v0 = cfg.momentum ? vf[0] : 0.0f, v1 = cfg.momentum ? vf[1] : 0.0f;
        float e = nrpt_chain_step_2d(&cfg, &l, s, &xf[0], &xf[1], &v0, &v1);
        if (cfg.momentum) {
            vf[0] = v0;
            vf[1] = v1;
        }
        return e;
    }
    if (storage == 1u)
        return host_step_seq<NrptStoreBf16>(&cfg, &l, s, (nrpt_u16*)x, (nrpt_u16*)(v ? v : x));
    if (storage == 2u)
        return host_step_seq<NrptStoreF16>(&cfg, &l, s, (nrpt_u16*)x, (nrpt_u16*)(v ? v : x));
    return host_step_seq<NrptStoreF32>(&cfg, &l, s, (float*)x, (float*)(v ? v : x));
}

/// One 2D replica's iteration as the persistent kernel does it: the sines of its
/// coordinates `s` (sin 2πx at the current state) come from the last energy and the
/// new ones are left there. x, v, s hold two floats each (v only read for momentum).
float NRPT_HOST_FN(chain_step_2d_sin)(const NrptGpuParams* p, nrpt_u32 ensemble_key, nrpt_u64 k,
                                  nrpt_u32 replica, double eta, double temp, float* x, float* v,
                                  float* s) {
    NrptChainCfg cfg = nrpt_chain_cfg(p);
    NrptLevelCoeffs l = nrpt_level_coeffs(&cfg, eta, temp);
    NrptStream st = nrpt_stream(p->core.seed, ensemble_key, k, replica, NRPT_STREAM_STEP);
    float v0 = cfg.momentum ? v[0] : 0.0f, v1 = cfg.momentum ? v[1] : 0.0f;
    float e = nrpt_chain_step_2d_sin(&cfg, &l, st, &x[0], &x[1], &v0, &v1, &s[0], &s[1]);
    if (cfg.momentum) {
        v[0] = v0;
        v[1] = v1;
    }
    return e;
}

/// The sines the persistent kernel computes once after loading a state.
void NRPT_HOST_FN(sines)(float x0, float x1, float* s) {
    s[0] = nrpt_sin_cos_2pi(x0).s;
    s[1] = nrpt_sin_cos_2pi(x1).s;
}

}  // extern "C"

template <class S>
static float host_step_block(const NrptChainCfg* cfg, const NrptLevelCoeffs* l, NrptStream s,
                             typename S::T* x, typename S::T* v, nrpt_u32 threads,
                             nrpt_u32 chunk, float* partial) {
    const nrpt_u32 passes = (cfg->dim + threads * chunk - 1u) / (threads * chunk);
    float sums[NRPT_MAX_PASSES];
    for (nrpt_u32 pass = 0; pass < passes; ++pass) {
        for (nrpt_u32 t = 0; t < threads; ++t) {
            partial[t] = nrpt_chain_step_chunk<S>(cfg, l, s, x, v, pass * threads + t, chunk);
        }
        sums[pass] = nrpt_block_tree(partial, threads, chunk, cfg->dim, pass * threads);
    }
    return nrpt_pass_tree(sums, passes);
}

extern "C" {


/// One replica's iteration as the block kernel step_block_* does it with `threads`
/// threads of `chunk` coordinates each: pass by pass every thread's chunk and the
/// shuffle trees of nrpt_block_tree, then the tree over the passes and the energy
/// noise on thread 0. `storage` as in nrpt_host_chain_step. Returns NaN, touching
/// nothing, for a shape the kernel does not take (nrpt_block_shape_ok).
float NRPT_HOST_FN(chain_step_block)(const NrptGpuParams* p, nrpt_u32 ensemble_key, nrpt_u64 k,
                                 nrpt_u32 replica, double eta, double temp, void* x, void* v,
                                 nrpt_u32 storage, nrpt_u32 threads, nrpt_u32 chunk) {
    NrptChainCfg cfg = nrpt_chain_cfg(p);
    if (!nrpt_block_shape_ok(threads, chunk, cfg.dim)) {
        return nrpt_f32_from_bits(0x7fc00000u);
    }
    NrptLevelCoeffs l = nrpt_level_coeffs(&cfg, eta, temp);
    NrptStream s = nrpt_stream(p->core.seed, ensemble_key, k, replica, NRPT_STREAM_STEP);
    float partial[1024];
    float u;
    if (storage == 1u) {
        u = host_step_block<NrptStoreBf16>(&cfg, &l, s, (nrpt_u16*)x, (nrpt_u16*)(v ? v : x),
                                           threads, chunk, partial);
    } else if (storage == 2u) {
        u = host_step_block<NrptStoreF16>(&cfg, &l, s, (nrpt_u16*)x, (nrpt_u16*)(v ? v : x),
                                          threads, chunk, partial);
    } else {
        u = host_step_block<NrptStoreF32>(&cfg, &l, s, (float*)x, (float*)(v ? v : x), threads,
                                          chunk, partial);
    }
    return nrpt_energy_noise_at(&cfg, &l, s, u);
}

/// The kernels' tree accumulator (NrptTree, as step_seq uses it, one leaf per push)
/// over n values.
float NRPT_HOST_FN(tree_sum)(const float* x, nrpt_u32 n) {
    NrptTree<0, 32> t;
    nrpt_tree_init(&t);
    for (nrpt_u32 i = 0; i < n; ++i) nrpt_tree_push(&t, x[i], 0u);
    return nrpt_tree_finish(&t);
}

/// The block step's reduction (nrpt_block_tree) of `threads` chunk sums.
float NRPT_HOST_FN(block_tree)(float* partial, nrpt_u32 threads, nrpt_u32 chunk, nrpt_u32 d) {
    return nrpt_block_tree(partial, threads, chunk, d, 0u);
}

nrpt_u32 NRPT_HOST_FN(block_shape_ok)(nrpt_u32 threads, nrpt_u32 chunk, nrpt_u32 d) {
    return nrpt_block_shape_ok(threads, chunk, d) ? 1u : 0u;
}

nrpt_u32 NRPT_HOST_FN(team_width)(nrpt_u32 chains, nrpt_u32 threads) {
    return nrpt_team_width(chains, threads);
}

/// Steps 3-6 of one ensemble, arrays with the given stride; the items of each step of
/// the team's phase in pair order or, with `reverse`, backwards.
void NRPT_HOST_FN(swap_and_adapt)(const NrptGpuParams* p, nrpt_u32 ensemble_key, nrpt_u64 k,
                              const NrptIterConsts* ic, float* energies, double* ladder,
                              double* temps, nrpt_u32* replica_at, nrpt_u32* level_of,
                              nrpt_u8* trips, nrpt_u8* gates, nrpt_u8* flags,
                              NrptPairStats* pairs, nrpt_u32 stride, double* buffer,
                              NrptIndexStats* stats, nrpt_u32* summary, nrpt_u32 reverse) {
    NrptEnsembleRefs r;
    r.energies = energies;
    r.ladder = ladder;
    r.temps = temps;
    r.replica_at = replica_at;
    r.level_of = level_of;
    r.trips = trips;
    r.gates = gates;
    r.flags = flags;
    r.pairs = pairs;
    r.stride = stride;
    NrptTeam team = nrpt_host_team(reverse != 0u);
    NrptSweepSummary s = nrpt_swap_and_adapt(p, ensemble_key, k, *ic, &r, buffer, stats, &team);
    summary[0] = s.indicators;
    summary[1] = s.swaps;
    summary[2] = s.nonfinite;
}

/// The ladder update alone (nrpt_adapt_ladder) on one ensemble's ladder and flags,
/// stride 1.
void NRPT_HOST_FN(adapt_ladder)(double* ladder, nrpt_u8* flags, nrpt_u32 chains, nrpt_u32 in_place,
                            double up, double down) {
    NrptEnsembleRefs r = {};
    r.ladder = ladder;
    r.flags = flags;
    r.stride = 1u;
    nrpt_adapt_ladder(&r, chains, in_place != 0u, up, down);
}

double NRPT_HOST_FN(adapt_buffer)(double buffer, double mean_rate, double target, double gamma,
                              double scale, nrpt_u32 unprojected) {
    return nrpt_adapt_buffer(buffer, mean_rate, target, gamma, scale, unprojected != 0u);
}

/// The authors' counting of one iteration (nrpt_authors_pass), stride 1.
nrpt_u32 NRPT_HOST_FN(authors_pass)(nrpt_u8* trips, nrpt_u32* replica_at, nrpt_u8* flags,
                                nrpt_u32 chains) {
    NrptEnsembleRefs r = {};
    r.trips = trips;
    r.replica_at = replica_at;
    r.flags = flags;
    r.stride = 1u;
    NrptTeam team = nrpt_host_team(false);
    return nrpt_authors_pass(&r, chains, &team);
}

/// The swap kernel's momentum reset (nrpt_zero_swapped_momenta) on one ensemble's
/// momenta (rows of D coordinates of p->coord_bytes bytes), stride 1.
void NRPT_HOST_FN(zero_swapped_momenta)(const NrptGpuParams* p, nrpt_u32* replica_at,
                                    nrpt_u8* flags, void* momenta) {
    NrptEnsembleRefs r = {};
    r.replica_at = replica_at;
    r.flags = flags;
    r.stride = 1u;
    NrptTeam team = nrpt_host_team(false);
    nrpt_zero_swapped_momenta(p, &r, momenta, &team);
}

/// The warp-wide swap phase of persistent_2d_warp (nrpt_warp_exchange over the lanes
/// of one segment, run one after the other) on one ensemble's arrays, stride 1: each
/// lane loaded as the kernel loads it (level l, the replica at it with its trip state,
/// 2D state, velocity and sines; states, momenta and sines by replica), the phase, and
/// the lanes stored back as the kernel stores them. `momenta` may be null (no
/// velocity). `record`, when not null, receives the P − 1 flags.
void NRPT_HOST_FN(warp_exchange)(const NrptGpuParams* p, nrpt_u32 ensemble_key, nrpt_u64 k,
                             const NrptIterConsts* ic, float* energies, double* ladder,
                             double* temps, nrpt_u32* replica_at, nrpt_u32* level_of,
                             nrpt_u8* trips, nrpt_u8* gates, nrpt_u8* flags,
                             NrptPairStats* pairs, double* buffer, NrptIndexStats* stats,
                             float* states, float* momenta, float* sines, nrpt_u8* record) {
    const nrpt_u32 P = p->core.chains;
    const nrpt_u32 W = nrpt_warp_width(P);
    NrptWarpLane lanes[32] = {};
    for (nrpt_u32 l = 0; l < W; ++l) {
        NrptWarpLane& me = lanes[l];
        me.valid = l < P;
        if (!me.valid) continue;
        const nrpt_u32 rep = replica_at[l];
        me.rep = rep;
        me.trip = trips[rep];
        me.x0 = states[2u * rep];
        me.x1 = states[2u * rep + 1u];
        me.v0 = momenta ? momenta[2u * rep] : 0.0f;
        me.v1 = momenta ? momenta[2u * rep + 1u] : 0.0f;
        me.s0 = sines[2u * rep];
        me.s1 = sines[2u * rep + 1u];
        me.energy = energies[l];
        me.eta = ladder[l];
        me.temp = temps[l];
        if (l + 1u < P) {
            me.gate = gates[l];
            me.flag = flags[l];
        }
        me.buffer = *buffer;
    }
    NrptWarpHost w;
    w.lanes = lanes;
    w.width = W;
    nrpt_warp_exchange(w, p, ensemble_key, k, *ic, record);
    for (nrpt_u32 l = 0; l < P; ++l) {
        const NrptWarpLane& me = lanes[l];
        const nrpt_u32 rep = me.rep;
        replica_at[l] = rep;
        level_of[rep] = l;
        trips[rep] = me.trip;
        states[2u * rep] = me.x0;
        states[2u * rep + 1u] = me.x1;
        if (momenta) {
            momenta[2u * rep] = me.v0;
            momenta[2u * rep + 1u] = me.v1;
        }
        sines[2u * rep] = me.s0;
        sines[2u * rep + 1u] = me.s1;
        energies[l] = me.energy;
        ladder[l] = me.eta;
        temps[l] = me.temp;
        if (l + 1u < P) {
            nrpt_warp_add_pair(&pairs[l], &me);
            gates[l] = me.gate;
            flags[l] = me.flag;
        }
    }
    // Lane 0's copy (every lane holds the same).
    *buffer = lanes[0].buffer;
    nrpt_u32 rr, an;
    nrpt_warp_counts(w, &rr, &an);
    nrpt_warp_add_stats(stats, rr, an);
}

/// nrpt_warp_width.
nrpt_u32 NRPT_HOST_FN(warp_width)(nrpt_u32 chains) { return nrpt_warp_width(chains); }

/// The persistent kernel's test for one replica's momentum reset.
nrpt_u32 NRPT_HOST_FN(swapped_at_level)(const nrpt_u8* flags, nrpt_u32 stride, nrpt_u32 level,
                                    nrpt_u32 chains) {
    return nrpt_swapped_at_level(flags, stride, level, chains) ? 1u : 0u;
}

}  // extern "C"

extern "C" {
/// Sizes and offsets of the shared blocks, for the layout test against Rust.
void NRPT_HOST_FN(layout)(nrpt_u32* out) {
    NrptGpuParams p;
    out[0] = (nrpt_u32)sizeof(NrptKernelParams);
    out[1] = (nrpt_u32)sizeof(NrptGpuParams);
    out[2] = (nrpt_u32)((const char*)&p.ensembles - (const char*)&p);
    out[3] = (nrpt_u32)((const char*)&p.core.seed - (const char*)&p);
    out[4] = (nrpt_u32)sizeof(NrptArrays);
    out[5] = (nrpt_u32)sizeof(NrptIterConsts);
    out[6] = (nrpt_u32)sizeof(NrptPairStats);
    out[7] = (nrpt_u32)sizeof(NrptIndexStats);
    out[8] = (nrpt_u32)((const char*)&p.coord_bytes - (const char*)&p);
    out[9] = (nrpt_u32)((const char*)&p.core.adapt_flags - (const char*)&p);
}
}
