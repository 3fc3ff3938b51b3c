// source.cu: the step kernel of a target that brings its own CUDA source. NVRTC
// compiles this unit with the target's code as "nrpt_target.cuh" (nrpt_cuda::source);
// the swap and init kernels stay those of the main program.
#include "chain.cuh"
#include "nrpt_target.cuh"
#include "source_step.cuh"

/// One thread per chain, f32 states, D ≤ NRPT_SOURCE_MAX_DIM (checked by the launcher).
extern "C" __global__ void __launch_bounds__(256, 4) step_source(NrptGpuParams p, nrpt_u64 k, NrptArrays a) {
    const nrpt_u32 P = p.core.chains, D = p.core.dim;
    nrpt_u64 c = (nrpt_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= (nrpt_u64)p.ensembles * P) return;
    nrpt_u32 r = (nrpt_u32)(c % P);
    nrpt_u32 e = (nrpt_u32)(c / P);
    nrpt_u64 base = (nrpt_u64)e * P;
    NrptChainCfg cfg = nrpt_chain_cfg(&p);
    nrpt_u32 level = a.level_of[c];
    NrptLevelCoeffs l = nrpt_level_coeffs(&cfg, a.ladder[base + level], a.temps[base + level]);
    float* x = (float*)a.states + c * D;
    float* v = cfg.momentum ? (float*)a.momenta + c * D : x;
    NrptStream s = nrpt_stream(p.core.seed, p.core.ensemble + e, k, r, NRPT_STREAM_STEP);
    a.energies[base + level] = nrpt_chain_step_source(&cfg, &l, s, x, v);
}
