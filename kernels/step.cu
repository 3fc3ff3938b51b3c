// step.cu: the fused per-chain step kernels (exploration step + stochastic energy in one
// pass over the state). The energy goes to the replica's level: energies[e·P + level].
#include "chain.cuh"

/// Level coefficients of chain (e, r) this iteration.
__device__ __forceinline__ NrptLevelCoeffs level_of_chain(const NrptChainCfg& cfg,
                                                          const NrptArrays& a, nrpt_u64 base,
                                                          nrpt_u32 level) {
    double eta = a.ladder[base + level];
    double t = a.temps[base + level];
    return nrpt_level_coeffs(&cfg, eta, t);
}

/// D = 2 (Modes2d, or SumModes with D = 2): one thread per chain, f32 states.
extern "C" __global__ void __launch_bounds__(256) step_2d(NrptGpuParams p, nrpt_u64 k, NrptArrays a) {
    const nrpt_u32 P = p.core.chains;
    nrpt_u64 c = (nrpt_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= (nrpt_u64)p.ensembles * P) return;
    nrpt_u32 r = (nrpt_u32)(c % P);
    nrpt_u32 e = (nrpt_u32)(c / P);
    nrpt_u64 base = (nrpt_u64)e * P;
    NrptChainCfg cfg = nrpt_chain_cfg(&p);
    nrpt_u32 level = a.level_of[c];
    NrptLevelCoeffs l = level_of_chain(cfg, a, base, level);
    float2* xs = (float2*)a.states;
    float2 x = xs[c];
    float2 v = make_float2(0.0f, 0.0f);
    if (cfg.momentum) v = ((float2*)a.momenta)[c];
    NrptStream s = nrpt_stream(p.core.seed, p.core.ensemble + e, k, r, NRPT_STREAM_STEP);
    float en = nrpt_chain_step_2d(&cfg, &l, s, &x.x, &x.y, &v.x, &v.y);
    xs[c] = x;
    if (cfg.momentum) ((float2*)a.momenta)[c] = v;
    a.energies[base + level] = en;
}

/// SumModes of small D: one thread per chain, coordinates in order (bit-exact energy).
template <class S>
__device__ void step_seq(const NrptGpuParams& p, nrpt_u64 k, const NrptArrays& a) {
    const nrpt_u32 P = p.core.chains, D = p.core.dim;
    nrpt_u64 c = (nrpt_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= (nrpt_u64)p.ensembles * P) return;
    nrpt_u32 r = (nrpt_u32)(c % P);
    nrpt_u32 e = (nrpt_u32)(c / P);
    nrpt_u64 base = (nrpt_u64)e * P;
    NrptChainCfg cfg = nrpt_chain_cfg(&p);
    nrpt_u32 level = a.level_of[c];
    NrptLevelCoeffs l = level_of_chain(cfg, a, base, level);
    typename S::T* x = (typename S::T*)a.states + c * D;
    typename S::T* v = cfg.momentum ? (typename S::T*)a.momenta + c * D : x;
    NrptStream s = nrpt_stream(p.core.seed, p.core.ensemble + e, k, r, NRPT_STREAM_STEP);
    a.energies[base + level] = nrpt_chain_step_seq<S>(&cfg, &l, s, x, v);
}

extern "C" __global__ void __launch_bounds__(256) step_seq_f32(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_seq<NrptStoreF32>(p, k, a); }
extern "C" __global__ void __launch_bounds__(256) step_seq_bf16(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_seq<NrptStoreBf16>(p, k, a); }
extern "C" __global__ void __launch_bounds__(256) step_seq_f16(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_seq<NrptStoreF16>(p, k, a); }

/// Threads per chain of the cooperative step (8 warps).
#define NRPT_BLOCK_THREADS 256u

/// SumModes of large D: one block of 256 threads per chain; thread t steps quads t,
/// t + 256, …; the energy is reduced by the fixed tree of nrpt_block_sum.
template <class S>
__device__ void step_block(const NrptGpuParams& p, nrpt_u64 k, const NrptArrays& a) {
    __shared__ float warp_sums[NRPT_BLOCK_THREADS / 32u];
    const nrpt_u32 P = p.core.chains, D = p.core.dim;
    nrpt_u64 c = blockIdx.x;
    nrpt_u32 r = (nrpt_u32)(c % P);
    nrpt_u32 e = (nrpt_u32)(c / P);
    nrpt_u64 base = (nrpt_u64)e * P;
    NrptChainCfg cfg = nrpt_chain_cfg(&p);
    nrpt_u32 level = a.level_of[c];
    NrptLevelCoeffs l = level_of_chain(cfg, a, base, level);
    typename S::T* x = (typename S::T*)a.states + c * D;
    typename S::T* v = cfg.momentum ? (typename S::T*)a.momenta + c * D : x;
    NrptStream s = nrpt_stream(p.core.seed, p.core.ensemble + e, k, r, NRPT_STREAM_STEP);
    float u = nrpt_chain_step_quads<S>(&cfg, &l, s, x, v, threadIdx.x, NRPT_BLOCK_THREADS);
#pragma unroll
    for (nrpt_u32 off = 16u; off > 0u; off /= 2u) {
        u = u + __shfl_down_sync(0xffffffffu, u, off);
    }
    nrpt_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0u) warp_sums[warp] = u;
    __syncthreads();
    if (warp == 0u) {
        u = lane < NRPT_BLOCK_THREADS / 32u ? warp_sums[lane] : 0.0f;
#pragma unroll
        for (nrpt_u32 off = NRPT_BLOCK_THREADS / 64u; off > 0u; off /= 2u) {
            u = u + __shfl_down_sync(0xffffffffu, u, off);
        }
        if (lane == 0u) {
            NrptCursor cur = nrpt_cursor(s, 0u);
            a.energies[base + level] = nrpt_energy_noise(&cfg, &l, &cur, u);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) step_block_f32(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_block<NrptStoreF32>(p, k, a); }
extern "C" __global__ void __launch_bounds__(256) step_block_bf16(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_block<NrptStoreBf16>(p, k, a); }
extern "C" __global__ void __launch_bounds__(256) step_block_f16(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_block<NrptStoreF16>(p, k, a); }
