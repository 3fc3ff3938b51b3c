// persistent.cu: the 2D persistent kernel. One block holds G whole ensembles (G·P
// threads; thread g·P + r owns replica r of ensemble g of the block, its state, its
// velocity and the sines of its coordinates in registers); the ensembles' permutation,
// ladder, energies, gates, counts and trip states live in shared memory, ensemble by
// ensemble ([g][level], [g][pair]: consecutive threads and lanes touch consecutive
// words). Each of the K iterations of a launch is: step phase (every thread) —
// barrier — swap-and-adapt phase (a team of lanes per ensemble, nrpt_team_width:
// the P − 1 pair tests in parallel, only the ladder recurrence on one lane) — barrier
// — momentum reset (every thread whose replica took part in a swap zeroes its
// velocity registers, as Engine::exchange does right after the sweep). Global memory
// is read at the start and written at the end only.
#include "chain.cuh"
#include "swap.cuh"
#include "warp_swap.cuh"

/// Most threads of a persistent block (the launcher's limit: G·P ≤ this). 512 threads
/// with at most 64 registers each let two blocks share an SM (see the bounds below).
#define NRPT_PERSISTENT_MAX_THREADS 512

extern "C" __global__ void __launch_bounds__(NRPT_PERSISTENT_MAX_THREADS, 2)
persistent_2d(NrptGpuParams p, nrpt_u64 k0, nrpt_u32 iters, const NrptIterConsts* ic,
              NrptArrays a, nrpt_u8* record) {
    extern __shared__ __align__(16) unsigned char smem[];
    const nrpt_u32 P = p.core.chains;
    const nrpt_u32 G = blockDim.x / P;  // ensembles per block
    const nrpt_u32 tid = threadIdx.x;
    const nrpt_u32 g = tid / P;  // thread (g, r): replica-fastest, so an ensemble's
    const nrpt_u32 r = tid % P;  // threads, levels and global rows are consecutive
    const nrpt_u32 e = blockIdx.x * G + g;
    const bool active = g < G && e < p.ensembles;

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
    const nrpt_u32 lv = g * P, pv = g * (P - 1u);  // this ensemble's rows in shared memory
    const bool momentum = p.core.explorer != 0u;
    float x0 = 0.0f, x1 = 0.0f, v0 = 0.0f, v1 = 0.0f, s0 = 0.0f, s1 = 0.0f;
    if (active) {
        // Thread (g, r) loads level r / replica r / pair r of ensemble g.
        s_ladder[lv + r] = a.ladder[base + r];
        s_temps[lv + r] = a.temps[base + r];
        s_energies[lv + r] = a.energies[base + r];
        s_at[lv + r] = a.replica_at[base + r];
        s_of[lv + r] = a.level_of[base + r];
        s_trips[lv + r] = a.trips[base + r];
        if (r + 1u < P) {
            s_pairs[pv + r] = a.pairs[pbase + r];
            s_gates[pv + r] = a.gates[pbase + r];
            s_flags[pv + r] = a.flags[pbase + r];
        }
        if (r == 0u) {
            s_buffers[g] = a.buffers[e];
            s_stats[g] = a.stats[e];
        }
        float2 x = ((const float2*)a.states)[base + r];
        x0 = x.x;
        x1 = x.y;
        s0 = nrpt_sin_cos_2pi(x0).s;
        s1 = nrpt_sin_cos_2pi(x1).s;
        if (momentum) {
            float2 v = ((const float2*)a.momenta)[base + r];
            v0 = v.x;
            v1 = v.y;
        }
    }
    // The swap phase's teams: whole teams of consecutive lanes within one warp; team
    // τ runs ensembles τ, τ + teams, … of the block.
    const nrpt_u32 width = nrpt_team_width(P, blockDim.x);
    const nrpt_u32 teams = blockDim.x / width;
    NrptTeam team;
    team.width = width;
    team.lane = tid & (width - 1u);
    team.mask = (width == 32u ? 0xffffffffu : ((1u << width) - 1u)) << ((tid & 31u) & ~(width - 1u));
    team.reverse = false;
    const nrpt_u32 tau = tid / width;
    __syncthreads();

    for (nrpt_u32 it = 0; it < iters; ++it) {
        const nrpt_u64 k = k0 + it;
        // sass-count: step (tests/sass_count.rs splits the loop at these markers)
        if (active) {
            // Derived from the parameter block each iteration rather than kept live
            // across the swap phase (register pressure).
            NrptChainCfg cfg = nrpt_chain_cfg(&p);
            nrpt_u32 level = s_of[lv + r];
            NrptLevelCoeffs l = nrpt_level_coeffs(&cfg, s_ladder[lv + level], s_temps[lv + level]);
            NrptStream s = nrpt_stream(p.core.seed, p.core.ensemble + e, k, r, NRPT_STREAM_STEP);
            s_energies[lv + level] =
                nrpt_chain_step_2d_sin(&cfg, &l, s, &x0, &x1, &v0, &v1, &s0, &s1);
        }
        // sass-count: swap
        __syncthreads();
        if (tau < teams) {
            for (nrpt_u32 h = tau; h < G && blockIdx.x * G + h < p.ensembles; h += teams) {
                const nrpt_u32 eh = blockIdx.x * G + h;
                const nrpt_u32 hl = h * P, hp = h * (P - 1u);
                NrptEnsembleRefs refs;
                refs.energies = s_energies + hl;
                refs.ladder = s_ladder + hl;
                refs.temps = s_temps + hl;
                refs.replica_at = s_at + hl;
                refs.level_of = s_of + hl;
                refs.trips = s_trips + hl;
                refs.gates = s_gates + hp;
                refs.flags = s_flags + hp;
                refs.pairs = s_pairs + hp;
                refs.stride = 1u;
                nrpt_swap_and_adapt(&p, p.core.ensemble + eh, k, ic[it], &refs, &s_buffers[h],
                                    &s_stats[h], &team);
                if (record) {
                    NRPT_OTHER_RULES();
                    nrpt_u8* out = record + ((nrpt_u64)it * p.ensembles + eh) * (P - 1u);
                    NRPT_TEAM_FOR(&team, q, P - 1u) { out[q] = s_flags[hp + q]; }
                    // sass-count: other-rules end
                }
            }
        }
        __syncthreads();
        // MomentumOnSwap::Reset: the replica arrived at its level by a swap of this
        // iteration, so its next step starts from zero velocity. Done here rather than at
        // the next step so that the velocities written back after the last iteration are
        // the driver's. The flags stay put until the next swap phase.
        if (active && momentum && !(p.core.adapt_flags & NRPT_MOMENTUM_CARRY) &&
            nrpt_swapped_at_level(s_flags + pv, 1u, s_of[lv + r], P)) {
            NRPT_OTHER_RULES();
            v0 = 0.0f;
            v1 = 0.0f;
            // sass-count: other-rules end
        }
        // sass-count: end
    }

    if (active) {
        a.ladder[base + r] = s_ladder[lv + r];
        a.temps[base + r] = s_temps[lv + r];
        a.energies[base + r] = s_energies[lv + r];
        a.replica_at[base + r] = s_at[lv + r];
        a.level_of[base + r] = s_of[lv + r];
        a.trips[base + r] = s_trips[lv + r];
        if (r + 1u < P) {
            a.pairs[pbase + r] = s_pairs[pv + r];
            a.gates[pbase + r] = s_gates[pv + r];
            a.flags[pbase + r] = s_flags[pv + r];
        }
        if (r == 0u) {
            a.buffers[e] = s_buffers[g];
            a.stats[e] = s_stats[g];
        }
        ((float2*)a.states)[base + r] = make_float2(x0, x1);
        if (momentum) ((float2*)a.momenta)[base + r] = make_float2(v0, v1);
    }
}

/// The persistent 2D kernel for ensembles that fit a warp (P ≤ 32), without shared
/// memory or barriers: ensemble g of the block takes lanes g·W .. g·W + W − 1 (W the
/// power of two ≥ P, so a warp holds 32 / W whole ensembles; the launcher makes the
/// block whole warps), lane l holds level l and the replica at it (nrpt_warp_exchange,
/// warp_swap.cuh). Each iteration: lane l steps the replica at level l with η_l and
/// T_l, then the warp runs the swap phase with shuffles; a swap moves the replica's
/// registers to the neighbour lane, so no lane ever reads another's state from
/// memory. Lanes l ≥ P take part in the shuffles only. Counts are gathered in 16 bits
/// per lane during a launch (at most NRPT_WARP_MAX_ITERS iterations; the launcher's
/// run at most 4096) and added to the stored 64-bit counts at its end. The same results, bit for bit, as
/// persistent_2d (and as nrpt-core).
extern "C" __global__ void __launch_bounds__(NRPT_PERSISTENT_MAX_THREADS, 2)
persistent_2d_warp(NrptGpuParams p, nrpt_u64 k0, nrpt_u32 iters, const NrptIterConsts* ic,
                   NrptArrays a, nrpt_u8* record) {
    const nrpt_u32 P = p.core.chains;
    const nrpt_u32 W = nrpt_warp_width(P);
    const nrpt_u32 G = blockDim.x / W;  // ensembles per block
    const nrpt_u32 g = threadIdx.x / W;
    const nrpt_u32 l = threadIdx.x % W;
    const nrpt_u32 e = blockIdx.x * G + g;
    const nrpt_u64 base = (nrpt_u64)e * P, pbase = (nrpt_u64)e * (P - 1u);
    const bool momentum = p.core.explorer != 0u;

    NrptWarpDevice w;
    w.lane = l;
    w.width = W;
    w.me = NrptWarpLane{};
    NrptWarpLane& me = w.me;
    me.valid = g < G && e < p.ensembles && l < P;
    if (me.valid) {
        const nrpt_u32 rep = a.replica_at[base + l];
        me.rep = rep;
        me.trip = a.trips[base + rep];
        float2 x = ((const float2*)a.states)[base + rep];
        me.x0 = x.x;
        me.x1 = x.y;
        me.s0 = nrpt_sin_cos_2pi(me.x0).s;
        me.s1 = nrpt_sin_cos_2pi(me.x1).s;
        if (momentum) {
            float2 v = ((const float2*)a.momenta)[base + rep];
            me.v0 = v.x;
            me.v1 = v.y;
        }
        me.energy = a.energies[base + l];
        me.eta = a.ladder[base + l];
        me.temp = a.temps[base + l];
        if (l + 1u < P) {
            me.gate = a.gates[pbase + l];
            me.flag = a.flags[pbase + l];
        }
        me.buffer = a.buffers[e];
    }

    for (nrpt_u32 it = 0; it < iters; ++it) {
        const nrpt_u64 k = k0 + it;
        // sass-count: step
        if (me.valid) {
            NrptChainCfg cfg = nrpt_chain_cfg(&p);
            NrptLevelCoeffs lc = nrpt_level_coeffs(&cfg, me.eta, me.temp);
            NrptStream s = nrpt_stream(p.core.seed, p.core.ensemble + e, k, me.rep, NRPT_STREAM_STEP);
            me.energy = nrpt_chain_step_2d_sin(&cfg, &lc, s, &me.x0, &me.x1, &me.v0, &me.v1,
                                               &me.s0, &me.s1);
        }
        // sass-count: swap
        nrpt_u8* out = record ? record + ((nrpt_u64)it * p.ensembles + e) * (P - 1u) : 0;
        nrpt_warp_exchange(w, &p, p.core.ensemble + e, k, ic[it], out);
        // sass-count: end
    }

    nrpt_u32 rr, an;
    nrpt_warp_counts(w, &rr, &an);  // the whole warp: full-mask shuffles
    // The store's indices, derived again from the thread's coordinates (read so that
    // the compiler cannot keep them from the start: live across the loop, they would
    // spill).
    nrpt_u32 tid_x, block_x;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid_x));
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(block_x));
    {
        const nrpt_u32 l = tid_x % W;
        const nrpt_u32 e = block_x * G + tid_x / W;
        const nrpt_u64 base = (nrpt_u64)e * P, pbase = (nrpt_u64)e * (P - 1u);
        if (me.valid) {
            const nrpt_u32 rep = me.rep;
            a.replica_at[base + l] = rep;
            a.level_of[base + rep] = l;
            a.trips[base + rep] = me.trip;
            ((float2*)a.states)[base + rep] = make_float2(me.x0, me.x1);
            if (momentum) ((float2*)a.momenta)[base + rep] = make_float2(me.v0, me.v1);
            a.energies[base + l] = me.energy;
            a.ladder[base + l] = me.eta;
            a.temps[base + l] = me.temp;
            if (l + 1u < P) {
                NrptPairStats ps = a.pairs[pbase + l];
                nrpt_warp_add_pair(&ps, &me);
                a.pairs[pbase + l] = ps;
                a.gates[pbase + l] = me.gate;
                a.flags[pbase + l] = me.flag;
            }
            if (l == 0u) {
                a.buffers[e] = me.buffer;
                NrptIndexStats st = a.stats[e];
                nrpt_warp_add_stats(&st, rr, an);
                a.stats[e] = st;
            }
        }
    }
}
