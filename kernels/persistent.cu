// persistent.cu: the 2D persistent kernel. One block holds G whole ensembles (G·P
// threads, thread (g, r) owns replica r of ensemble g of the block, its state in
// registers); the ensembles' permutation, ladder, energies, gates, counts and trip
// states live in shared memory, laid out [level][g] (stride G, no bank conflicts in the
// swap phase). Each of the K iterations of a launch is: step phase (every thread) —
// barrier — swap-and-adapt phase (thread g < G does ensemble g) — barrier — momentum
// reset (every thread whose replica took part in a swap zeroes its velocity registers,
// as Engine::exchange does right after the sweep). Global memory is read at the start
// and written at the end only.
#include "chain.cuh"
#include "swap.cuh"

extern "C" __global__ void __launch_bounds__(1024) persistent_2d(NrptGpuParams p, nrpt_u64 k0, nrpt_u32 iters,
                                          const NrptIterConsts* ic, NrptArrays a,
                                          nrpt_u8* record) {
    extern __shared__ __align__(16) unsigned char smem[];
    const nrpt_u32 P = p.core.chains;
    const nrpt_u32 G = blockDim.x / P;  // ensembles per block
    const nrpt_u32 tid = threadIdx.x;
    const nrpt_u32 g = tid % G;  // thread (g, r): ensemble-fastest, so a warp's swap
    const nrpt_u32 r = tid / G;  // threads (tid < G) are consecutive
    const nrpt_u32 e = blockIdx.x * G + g;
    const bool active = r < P && e < p.ensembles;

    NrptPairStats* s_pairs = (NrptPairStats*)smem;
    double* s_ladder = (double*)(s_pairs + (P - 1u) * G);
    double* s_temps = s_ladder + P * G;
    double* s_buffers = s_temps + P * G;
    NrptIndexStats* s_stats = (NrptIndexStats*)(s_buffers + G);
    float* s_energies = (float*)(s_stats + G);
    nrpt_u32* s_at = (nrpt_u32*)(s_energies + P * G);
    nrpt_u32* s_of = s_at + P * G;
    nrpt_u8* s_trips = (nrpt_u8*)(s_of + P * G);
    nrpt_u8* s_gates = s_trips + P * G;
    nrpt_u8* s_flags = s_gates + (P - 1u) * G;

    const nrpt_u64 base = (nrpt_u64)e * P, pbase = (nrpt_u64)e * (P - 1u);
    const bool momentum = p.core.explorer != 0u;
    float x0 = 0.0f, x1 = 0.0f, v0 = 0.0f, v1 = 0.0f;
    if (active) {
        // Thread (g, r) loads level r / replica r / pair r of ensemble g.
        nrpt_u32 i = r * G + g;
        s_ladder[i] = a.ladder[base + r];
        s_temps[i] = a.temps[base + r];
        s_energies[i] = a.energies[base + r];
        s_at[i] = a.replica_at[base + r];
        s_of[i] = a.level_of[base + r];
        s_trips[i] = a.trips[base + r];
        if (r + 1u < P) {
            s_pairs[i] = a.pairs[pbase + r];
            s_gates[i] = a.gates[pbase + r];
            s_flags[i] = a.flags[pbase + r];
        }
        if (r == 0u) {
            s_buffers[g] = a.buffers[e];
            s_stats[g] = a.stats[e];
        }
        float2 x = ((const float2*)a.states)[base + r];
        x0 = x.x;
        x1 = x.y;
        if (momentum) {
            float2 v = ((const float2*)a.momenta)[base + r];
            v0 = v.x;
            v1 = v.y;
        }
    }
    __syncthreads();

    for (nrpt_u32 it = 0; it < iters; ++it) {
        const nrpt_u64 k = k0 + it;
        if (active) {
            // Derived from the parameter block each iteration rather than kept live
            // across the swap phase (register pressure).
            NrptChainCfg cfg = nrpt_chain_cfg(&p);
            nrpt_u32 level = s_of[r * G + g];
            NrptLevelCoeffs l =
                nrpt_level_coeffs(&cfg, s_ladder[level * G + g], s_temps[level * G + g]);
            NrptStream s =
                nrpt_stream(p.core.seed, p.core.ensemble + e, k, r, NRPT_STREAM_STEP);
            s_energies[level * G + g] = nrpt_chain_step_2d(&cfg, &l, s, &x0, &x1, &v0, &v1);
        }
        __syncthreads();
        if (tid < G && e < p.ensembles) {
            NrptEnsembleRefs refs;
            refs.energies = s_energies + g;
            refs.ladder = s_ladder + g;
            refs.temps = s_temps + g;
            refs.replica_at = s_at + g;
            refs.level_of = s_of + g;
            refs.trips = s_trips + g;
            refs.gates = s_gates + g;
            refs.flags = s_flags + g;
            refs.pairs = s_pairs + g;
            refs.stride = G;
            nrpt_swap_and_adapt(&p, p.core.ensemble + e, k, ic[it], &refs, &s_buffers[g],
                                &s_stats[g]);
            if (record) {
                nrpt_u8* out = record + ((nrpt_u64)it * p.ensembles + e) * (P - 1u);
                for (nrpt_u32 q = 0; q + 1u < P; ++q) out[q] = s_flags[q * G + g];
            }
        }
        __syncthreads();
        // MomentumOnSwap::Reset: the replica arrived at its level by a swap of this
        // iteration, so its next step starts from zero velocity. Done here rather than at
        // the next step so that the velocities written back after the last iteration are
        // the driver's. The flags stay put until the next swap phase.
        if (active && momentum && !(p.core.adapt_flags & NRPT_MOMENTUM_CARRY) &&
            nrpt_swapped_at_level(s_flags + g, G, s_of[r * G + g], P)) {
            v0 = 0.0f;
            v1 = 0.0f;
        }
    }

    if (active) {
        nrpt_u32 i = r * G + g;
        a.ladder[base + r] = s_ladder[i];
        a.temps[base + r] = s_temps[i];
        a.energies[base + r] = s_energies[i];
        a.replica_at[base + r] = s_at[i];
        a.level_of[base + r] = s_of[i];
        a.trips[base + r] = s_trips[i];
        if (r + 1u < P) {
            a.pairs[pbase + r] = s_pairs[i];
            a.gates[pbase + r] = s_gates[i];
            a.flags[pbase + r] = s_flags[i];
        }
        if (r == 0u) {
            a.buffers[e] = s_buffers[g];
            a.stats[e] = s_stats[g];
        }
        ((float2*)a.states)[base + r] = make_float2(x0, x1);
        if (momentum) ((float2*)a.momenta)[base + r] = make_float2(v0, v1);
    }
}
