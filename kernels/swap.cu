// swap.cu: the swap-and-adapt kernel on the arrays in global memory: nothing goes to
// the host between iterations. One team of lanes per ensemble (nrpt_team_width: up to
// a warp, enough for the P − 1 pairs), so an ensemble's levels are read and written
// by consecutive lanes (coalesced) and its pair tests run in parallel. It follows
// every step kernel (step_2d, step_seq_*, step_block_*), all of which support
// momentum explorers, so the momentum reset on a swap (Engine::exchange,
// MomentumOnSwap::Reset) is done here for all of them.
#include "swap.cuh"

/// Iteration k of every ensemble's steps 3-6. `ic` points at iteration k's constants;
/// `record` (null or E·(P−1) bytes) receives every pair's flags. The launcher
/// (nrpt_cuda::ensembles) gives ceil(E / teams per block) blocks of `blockDim.x`
/// threads, a multiple of the team width nrpt_team_width(P, blockDim.x).
extern "C" __global__ void __launch_bounds__(128) swap_adapt(NrptGpuParams p, nrpt_u64 k, const NrptIterConsts* ic,
                                      NrptArrays a, nrpt_u8* record) {
    const nrpt_u32 P = p.core.chains;
    const nrpt_u32 width = nrpt_team_width(P, blockDim.x);
    const nrpt_u32 lane_in_warp = threadIdx.x & 31u;
    NrptTeam team;
    team.width = width;
    team.lane = threadIdx.x & (width - 1u);
    team.mask = (width == 32u ? 0xffffffffu : ((1u << width) - 1u)) << (lane_in_warp & ~(width - 1u));
    team.reverse = false;
    const nrpt_u32 e = blockIdx.x * (blockDim.x / width) + threadIdx.x / width;
    if (e >= p.ensembles) return;  // whole teams leave together
    nrpt_u64 base = (nrpt_u64)e * P, pbase = (nrpt_u64)e * (P - 1u);
    NrptEnsembleRefs r;
    r.energies = a.energies + base;
    r.ladder = a.ladder + base;
    r.temps = a.temps + base;
    r.replica_at = a.replica_at + base;
    r.level_of = a.level_of + base;
    r.trips = a.trips + base;
    r.gates = a.gates + pbase;
    r.flags = a.flags + pbase;
    r.pairs = a.pairs + pbase;
    r.stride = 1u;
    NrptIndexStats stats = a.stats[e];
    double buffer = a.buffers[e];
    nrpt_swap_and_adapt(&p, p.core.ensemble + e, k, *ic, &r, &buffer, &stats, &team);
    if (nrpt_team_leader(&team)) {
        a.stats[e] = stats;
        a.buffers[e] = buffer;
    }
    if (a.momenta) {
        // The ensemble's momenta start at chain e·P: e·P·D coordinates in.
        unsigned char* m = (unsigned char*)a.momenta + base * p.core.dim * p.coord_bytes;
        nrpt_zero_swapped_momenta(&p, &r, m, &team);
    }
    if (record) {
        NRPT_TEAM_FOR(&team, q, P - 1u) { record[pbase + q] = r.flags[q]; }
    }
}
