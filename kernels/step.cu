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
// The launch bounds state the occupancy the launchers count on and that
// cuda/tests/nvrtc.rs asserts: 256-thread blocks, at least 4 per SM (at most 64
// registers a thread on sm_90).
extern "C" __global__ void __launch_bounds__(256, 4) step_2d(NrptGpuParams p, nrpt_u64 k, NrptArrays a) {
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

/// SumModes of small D: one thread per chain, coordinates in order, four at a time
/// (one vector access when D is a multiple of 4), the energy by the tree of
/// nrpt_core::reduce (bit-exact). D at most NRPT_SEQ_MAX_DIM (the launcher uses it up
/// to 64).
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
    a.energies[base + level] = nrpt_chain_step_seq<S, NRPT_SEQ_TREE_HI>(&cfg, &l, s, x, v);
}

extern "C" __global__ void __launch_bounds__(256, 4) step_seq_f32(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_seq<NrptStoreF32>(p, k, a); }
extern "C" __global__ void __launch_bounds__(256, 4) step_seq_bf16(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_seq<NrptStoreBf16>(p, k, a); }
extern "C" __global__ void __launch_bounds__(256, 4) step_seq_f16(NrptGpuParams p, nrpt_u64 k, NrptArrays a) { step_seq<NrptStoreF16>(p, k, a); }

/// Most threads per chain of the cooperative step.
#define NRPT_BLOCK_MAX_THREADS 256u

/// SumModes of large D: one block per chain, its shape fitted to D by the launcher
/// (nrpt_cuda::params::BlockShape, checked by nrpt_block_shape_ok): `blockDim.x`
/// threads (a multiple of 32), thread t of pass i steps the aligned chunk of `chunk`
/// coordinates (a power of two from 4 to 64) at (i · blockDim.x + t) · chunk, four at
/// a time with vector accesses, and sums its chunk's energy terms as a tree; each
/// pass's chunk sums are added by the shuffle trees of nrpt_block_tree (offsets 1, 2,
/// 4, 8, 16 in each warp, then over the warps), and the passes' sums (aligned
/// power-of-two blocks when there are several) by thread 0's tree: together the tree
/// of nrpt_core::reduce over all D terms, bit for bit.
template <class S>
__device__ void step_block(const NrptGpuParams& p, nrpt_u64 k, const NrptArrays& a,
                           nrpt_u32 chunk) {
    __shared__ float warp_sums[NRPT_BLOCK_MAX_THREADS / 32u];
    __shared__ float pass_sums[NRPT_MAX_PASSES];
    const nrpt_u32 P = p.core.chains, D = p.core.dim;
    const nrpt_u32 t = threadIdx.x, lane = t & 31u, warp = t >> 5;
    const nrpt_u32 threads = blockDim.x, warps = threads >> 5;
    const nrpt_u32 passes = (D + threads * chunk - 1u) / (threads * chunk);
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
    for (nrpt_u32 pass = 0; pass < passes; ++pass) {
        const nrpt_u32 first = pass * threads;  // the pass's first chunk
        float u = nrpt_chain_step_chunk<S>(&cfg, &l, s, x, v, first + t, chunk);
#pragma unroll
        for (nrpt_u32 off = 1u; off < 32u; off *= 2u) {
            float o = __shfl_down_sync(0xffffffffu, u, off);
            if (nrpt_chunk_present(first + t + off, chunk, D)) u = u + o;
        }
        if (warps > 1u) {
            if (lane == 0u) warp_sums[warp] = u;
            __syncthreads();
            if (warp == 0u) {
                u = lane < warps ? warp_sums[lane] : 0.0f;
#pragma unroll
                for (nrpt_u32 off = 1u; off < 32u; off *= 2u) {
                    float o = __shfl_down_sync(0xffffffffu, u, off);
                    if (lane + off < warps &&
                        nrpt_chunk_present(first + 32u * (lane + off), chunk, D)) {
                        u = u + o;
                    }
                }
            }
        }
        if (t == 0u) pass_sums[pass] = u;
        if (warps > 1u) __syncthreads();  // warp_sums is reused by the next pass
    }
    if (t == 0u) {
        float u = nrpt_pass_tree(pass_sums, passes);
        a.energies[base + level] = nrpt_energy_noise_at(&cfg, &l, s, u);
    }
}

extern "C" __global__ void __launch_bounds__(256, 4) step_block_f32(NrptGpuParams p, nrpt_u64 k, NrptArrays a, nrpt_u32 chunk) { step_block<NrptStoreF32>(p, k, a, chunk); }
extern "C" __global__ void __launch_bounds__(256, 4) step_block_bf16(NrptGpuParams p, nrpt_u64 k, NrptArrays a, nrpt_u32 chunk) { step_block<NrptStoreBf16>(p, k, a, chunk); }
extern "C" __global__ void __launch_bounds__(256, 4) step_block_f16(NrptGpuParams p, nrpt_u64 k, NrptArrays a, nrpt_u32 chunk) { step_block<NrptStoreF16>(p, k, a, chunk); }
