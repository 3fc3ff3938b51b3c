// swap.cu: the swap-and-adapt kernel, one thread per ensemble, on the arrays in global
// memory: nothing goes to the host between iterations. It follows every step kernel
// (step_2d, step_seq_*, step_block_*), all of which support momentum explorers, so the
// momentum reset on a swap (Engine::exchange, MomentumOnSwap::Reset) is done here for
// all of them.
#include "swap.cuh"

/// Iteration k of every ensemble's steps 3-6. `ic` points at iteration k's constants;
/// `record` (null or E·(P−1) bytes) receives every pair's flags.
extern "C" __global__ void __launch_bounds__(128) swap_adapt(NrptGpuParams p, nrpt_u64 k, const NrptIterConsts* ic,
                                      NrptArrays a, nrpt_u8* record) {
    nrpt_u32 e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= p.ensembles) return;
    const nrpt_u32 P = p.core.chains;
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
    nrpt_swap_and_adapt(&p, p.core.ensemble + e, k, *ic, &r, &buffer, &stats);
    a.stats[e] = stats;
    a.buffers[e] = buffer;
    if (a.momenta) {
        // The ensemble's momenta start at chain e·P: e·P·D coordinates in.
        unsigned char* m = (unsigned char*)a.momenta + base * p.core.dim * p.coord_bytes;
        nrpt_zero_swapped_momenta(&p, &r, m);
    }
    if (record) {
        for (nrpt_u32 q = 0; q + 1u < P; ++q) record[pbase + q] = r.flags[q];
    }
}
