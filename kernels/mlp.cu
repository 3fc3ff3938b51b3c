// mlp.cu: the kernels of the classifier data target (mlp.cuh): the fused per-chain step
// (one block of NRPT_MLP_THREADS threads per chain, the chain's working set in dynamic
// shared memory), the exchange (swap.cuh's swap-and-adapt, one block per ensemble, the
// momentum reset spread over the block), and the gather of the target level's states.
#include "mlp.cuh"

/// Runs a phase on this thread, then waits for the whole block.
struct NrptMlpDeviceExec {
    nrpt_u32 tid;
    template <class F>
    __device__ __forceinline__ void all(F f) {
        f(tid);
        __syncthreads();
    }
};

/// Iteration k of every chain: block c is chain c = e·P + r. At least three blocks per
/// SM (what the default network's shared memory allows; cuda/tests/mlp_nvrtc.rs
/// asserts it): at most 136 registers a thread.
extern "C" __global__ void __launch_bounds__(NRPT_MLP_THREADS, 3)
    mlp_step(NrptMlpParams p, nrpt_u64 k, NrptMlpArrays a) {
    extern __shared__ float nrpt_mlp_sm[];
    NrptMlpDeviceExec ex;
    ex.tid = threadIdx.x;
    nrpt_mlp_step_chain(ex, &p, k, &a, (nrpt_u64)blockIdx.x, nrpt_mlp_sm);
}

/// Steps 3–6 of iteration k for every ensemble (block e): the first lanes of warp 0,
/// as many as swap.cuh's team width for P chains, sweep, adapt and count; then the
/// other warps zero the momenta of the swapped replicas. `ic` points at iteration k's
/// constants; `record` (null or E·(P−1) bytes) receives the flags.
extern "C" __global__ void __launch_bounds__(NRPT_MLP_EXCHANGE_THREADS, 1)
    mlp_exchange(NrptGpuParams p, nrpt_u64 k, const NrptIterConsts* ic, NrptArrays a,
                 nrpt_u8* record) {
    const nrpt_u32 e = blockIdx.x;
    const nrpt_u32 width = nrpt_team_width(p.core.chains, 32u);
    if (threadIdx.x < width) {
        NrptTeam team;
        team.lane = threadIdx.x;
        team.width = width;
        team.mask = width == 32u ? 0xffffffffu : (1u << width) - 1u;
        team.reverse = false;
        nrpt_mlp_exchange_ensemble(&p, e, k, ic, &a, record, &team);
    }
    __syncthreads();
    // Warps 1.. zero the momenta (warp 0 keeps nothing live across the barrier).
    if (threadIdx.x >= 32u) nrpt_mlp_zero_momenta(&p, e, &a, threadIdx.x - 32u, blockDim.x - 32u);
}

/// The state at level 0 of every ensemble (block e) into `out` (E·D values).
extern "C" __global__ void __launch_bounds__(256)
    mlp_gather_target(nrpt_u32 chains, nrpt_u32 dim, const float* states,
                      const nrpt_u32* replica_at, float* out) {
    const nrpt_u64 e = blockIdx.x;
    const nrpt_u64 c = e * chains + replica_at[e * chains];
    const float* src = states + c * dim;
    float* dst = out + e * dim;
    for (nrpt_u32 i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = src[i];
}
