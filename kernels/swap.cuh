// swap.cuh: one ensemble's swap-and-adapt phase, decision for decision as
// nrpt_core::driver::Engine::exchange does it under the rules the kernels support
// (energies per level, simultaneous pair tests): the windowed sweep (swap::sweep with
// the buffered or Metropolis rule), the energies moved with their replicas, the ladder
// and buffer adaptation, the per-pair counts, the standard trip states and the
// authors' round-trip counting. Run by a team of lanes per ensemble (NrptTeam: up to
// a warp on the GPU; on the host one thread runs every item, in either order), over
// arrays laid out with a stride (1 in global memory and in the persistent kernel's
// shared memory; the host tests interleave ensembles). The momentum reset on a swap
// is not here: the momenta live in global memory for the step/swap kernels
// (nrpt_zero_swapped_momenta, called by swap.cu) and in registers for the persistent
// kernel (nrpt_swapped_at_level).
//
// The phase is split into steps whose items are independent: every pair's test (the
// simultaneous sweep reads only the energies before the swaps, and the pairs that may
// swap in one iteration are all of one parity, so they touch disjoint levels and
// replicas), every pair's energy exchange, every pair's counts and arrivals, the
// authors' checks of the inner levels; lanes split the items of a step, the team
// synchronizes between steps, and only the ladder recurrence (and the authors' checks
// of the two end levels) runs on one lane. Counts are added across lanes as integers,
// in any order.
#pragma once
#include "philox.cuh"
#include "fastmath.cuh"

/// swap::flags.
#define NRPT_FLAG_INDICATOR 1u
#define NRPT_FLAG_ATTEMPT 2u
#define NRPT_FLAG_SWAPPED 4u
#define NRPT_FLAG_NONFINITE 8u

/// index.rs trip-state bits.
#define NRPT_PHASE_MASK 3u
#define NRPT_PHASE_NONE 0u
#define NRPT_PHASE_BOTTOM 1u
#define NRPT_PHASE_TOP_FROM_BOTTOM 2u
#define NRPT_PHASE_TOP_FRESH 3u
#define NRPT_SEEN_BOTTOM 4u
#define NRPT_SEEN_TOP 8u

/// adapt::JACOBI_GUARD = 2^-20: the Jacobi update keeps every inner rate within
/// [2^-20 η₀, 2^20 η_{P−1}].
#define NRPT_JACOBI_GUARD (1.0 / 1048576.0)

/// Element i of a strided array.
#define NRPT_AT(ptr, i, stride) ((ptr)[(nrpt_u64)(i) * (stride)])

/// The lanes that run one ensemble's swap phase together. On the GPU: `width`
/// consecutive lanes of one warp (a power of two, at most 32), this thread's `lane`
/// among them and their `mask`. On the host: one thread runs every item of every step
/// (`width` 1), forwards or, with `reverse`, backwards, which the tests use to show
/// that no item of a step reads what another item of the same step writes.
struct NrptTeam {
    nrpt_u32 lane;
    nrpt_u32 width;
    nrpt_u32 mask;
    bool reverse;
};

/// Items i = 0 .. n − 1 of one step: lane t takes t, t + width, … on the GPU; the
/// host takes them all, in the team's order.
#if defined(__CUDA_ARCH__)
#define NRPT_TEAM_FOR(team, i, n) \
    for (nrpt_u32 i = (team)->lane; i < (nrpt_u32)(n); i += (team)->width)
#else
#define NRPT_TEAM_FOR(team, i, n)                                                          \
    for (nrpt_u32 i##_k = 0, i = 0;                                                        \
         i##_k < (nrpt_u32)(n) && ((i = (team)->reverse ? (nrpt_u32)(n) - 1u - i##_k : i##_k), true); \
         ++i##_k)
#endif

/// The end of a step: the team's shared-memory and global writes become visible to
/// the whole team.
NRPT_HD void nrpt_team_sync(const NrptTeam* team) {
#if defined(__CUDA_ARCH__)
    __syncwarp(team->mask);
#else
    (void)team;
#endif
}

/// `true` on the lane that runs the serial parts (lane 0; always on the host).
NRPT_HD bool nrpt_team_leader(const NrptTeam* team) { return team->lane == 0u; }

/// The sum over the team's lanes of a per-lane count (every lane gets it); on the
/// host the one thread's count is already the total.
NRPT_HD nrpt_u32 nrpt_team_sum(const NrptTeam* team, nrpt_u32 v) {
#if defined(__CUDA_ARCH__)
    for (nrpt_u32 off = team->width / 2u; off > 0u; off /= 2u) {
        v += __shfl_xor_sync(team->mask, v, off, team->width);
    }
#else
    (void)team;
#endif
    return v;
}

/// The host's team: every item by the calling thread, forwards or backwards.
NRPT_HD NrptTeam nrpt_host_team(bool reverse) {
    NrptTeam t;
    t.lane = 0u;
    t.width = 1u;
    t.mask = 1u;
    t.reverse = reverse;
    return t;
}

/// A team of one: the calling thread runs every item, in order (the serial phase, for
/// kernels that give each ensemble one thread).
NRPT_HD NrptTeam nrpt_solo_team() {
    NrptTeam t;
    t.lane = 0u;
    t.width = 1u;
#if defined(__CUDA_ARCH__)
    nrpt_u32 lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    t.mask = 1u << lane;
#else
    t.mask = 1u;
#endif
    t.reverse = false;
    return t;
}

/// Team width for P chains: enough lanes for the P − 1 pairs, a power of two within
/// one warp and within `threads` (the block, which must hold at least one team).
NRPT_HD nrpt_u32 nrpt_team_width(nrpt_u32 chains, nrpt_u32 threads) {
    nrpt_u32 w = 1u;
    while (w < 32u && w < chains - 1u && 2u * w <= threads) w *= 2u;
    return w;
}

/// One ensemble's arrays. Levels, replicas and pairs are all `stride` elements apart.
struct NrptEnsembleRefs {
    float* energies;       // by level (P)
    double* ladder;        // by level (P)
    double* temps;         // by level (P)
    nrpt_u32* replica_at;  // by level (P)
    nrpt_u32* level_of;    // by replica (P)
    nrpt_u8* trips;        // by replica (P)
    nrpt_u8* gates;        // by pair (P - 1)
    nrpt_u8* flags;        // by pair (P - 1)
    NrptPairStats* pairs;  // by pair (P - 1)
    nrpt_u32 stride;
};

/// index::initial_trip_state.
NRPT_HD nrpt_u8 nrpt_initial_trip_state(nrpt_u32 level, nrpt_u32 top) {
    if (level == 0u) return (nrpt_u8)(NRPT_PHASE_BOTTOM | NRPT_SEEN_BOTTOM);
    if (level == top) return (nrpt_u8)(NRPT_PHASE_TOP_FRESH | NRPT_SEEN_TOP);
    return (nrpt_u8)NRPT_PHASE_NONE;
}

/// index::observe_arrival: the standard round-trip phase of a replica that has just
/// arrived at `level` (`top` = P − 1); adds the round trip and restart it completes to
/// `stats`. The "seen an end" bits of the authors' counting pass through untouched.
NRPT_HD void nrpt_observe_arrival(nrpt_u8* state, nrpt_u32 level, nrpt_u32 top,
                                  NrptIndexStats* stats) {
    nrpt_u32 phase = *state & NRPT_PHASE_MASK;
    nrpt_u32 seen = *state & ~NRPT_PHASE_MASK & 0xffu;
    if (level == 0u) {
        bool restart = phase == NRPT_PHASE_TOP_FROM_BOTTOM || phase == NRPT_PHASE_TOP_FRESH;
        stats->restarts += restart ? 1u : 0u;
        stats->round_trips += (phase == NRPT_PHASE_TOP_FROM_BOTTOM) ? 1u : 0u;
        phase = NRPT_PHASE_BOTTOM;
    } else if (level == top) {
        if (phase == NRPT_PHASE_BOTTOM) {
            phase = NRPT_PHASE_TOP_FROM_BOTTOM;
        } else if (phase == NRPT_PHASE_NONE) {
            phase = NRPT_PHASE_TOP_FRESH;
        }
    }
    *state = (nrpt_u8)(phase | seen);
}

/// Step `idx` of index::authors_pass (its closure `check`): replica idx counts a trip
/// if it has seen both ends and sits at level idx at this point of the authors' walk —
/// the replica now at idx + 1 if pair (idx, idx + 1) swapped (that swap comes later in
/// the walk), else the one now at idx — and its marks are then cleared (a replica at
/// home at the top is marked again at once). Returns 1 for a trip, else 0.
NRPT_HD nrpt_u32 nrpt_authors_check(const NrptEnsembleRefs* r, nrpt_u32 idx, nrpt_u32 top) {
    const nrpt_u32 st = r->stride;
    bool later_swap = idx < top && (NRPT_AT(r->flags, idx, st) & NRPT_FLAG_SWAPPED) != 0u;
    nrpt_u32 at = NRPT_AT(r->replica_at, later_swap ? idx + 1u : idx, st);
    nrpt_u8* t = &NRPT_AT(r->trips, idx, st);
    const nrpt_u32 both = NRPT_SEEN_BOTTOM | NRPT_SEEN_TOP;
    if (at == idx && (*t & both) == both) {
        *t = (nrpt_u8)((*t & NRPT_PHASE_MASK) | (idx == top ? NRPT_SEEN_TOP : 0u));
        return 1u;
    }
    return 0u;
}

/// index::authors_pass: the authors' round-trip counting of one iteration, replayed
/// after its swaps from the permutation after the sweep and each pair's SWAPPED flag
/// (exact because the pairs that swap in one iteration are disjoint; see the Rust doc
/// comment). Updates the "seen an end" bits; returns the trips counted (on the
/// leader; the other lanes' share is added by the caller's team sum).
///
/// The walk checks level 0, marks the replica at level 0 as having seen the bottom,
/// checks levels 1 .. P − 2, marks the replica at the top, checks the top. A check of
/// level idx touches only replica idx's trip state and reads the permutation and the
/// flags, so the inner checks are independent items of one step between the two
/// marks.
NRPT_HD nrpt_u32 nrpt_authors_pass(const NrptEnsembleRefs* r, nrpt_u32 P, const NrptTeam* team) {
    const nrpt_u32 st = r->stride;
    const nrpt_u32 top = P - 1u;
    nrpt_u32 count = 0u;
    if (nrpt_team_leader(team)) {
        count += nrpt_authors_check(r, 0u, top);
        // From step 1 on, level 0 holds the replica that is there after the sweep.
        NRPT_AT(r->trips, NRPT_AT(r->replica_at, 0u, st), st) |= (nrpt_u8)NRPT_SEEN_BOTTOM;
    }
    nrpt_team_sync(team);
    NRPT_TEAM_FOR(team, i, top - 1u) { count += nrpt_authors_check(r, i + 1u, top); }
    nrpt_team_sync(team);
    if (nrpt_team_leader(team)) {
        NRPT_AT(r->trips, NRPT_AT(r->replica_at, top, st), st) |= (nrpt_u8)NRPT_SEEN_TOP;
        count += nrpt_authors_check(r, top, top);
    }
    nrpt_team_sync(team);
    return count;
}

/// index::swap_levels.
NRPT_HD void nrpt_swap_levels(const NrptEnsembleRefs* r, nrpt_u32 pair) {
    nrpt_u32 a = NRPT_AT(r->replica_at, pair, r->stride);
    nrpt_u32 b = NRPT_AT(r->replica_at, pair + 1u, r->stride);
    NRPT_AT(r->replica_at, pair, r->stride) = b;
    NRPT_AT(r->replica_at, pair + 1u, r->stride) = a;
    NRPT_AT(r->level_of, b, r->stride) = pair;
    NRPT_AT(r->level_of, a, r->stride) = pair + 1u;
}

/// adapt::adapt_ladder_indicators (through adapt_ladder_by_factor) with the growth
/// factors `up` = exp((1 − S) γ) and `down` = exp(−S γ) computed on the host by
/// adapt::growth_factors; the factor of pair l is `up` when its indicator was 1.
/// `in_place` selects LadderUpdate::InPlace, else LadderUpdate::Jacobi. Operation for
/// operation as the Rust code (max/min as f64::max/min), so the ladders agree in every
/// bit. The ends are not touched; nothing happens for P < 3.
NRPT_HD void nrpt_adapt_ladder(const NrptEnsembleRefs* r, nrpt_u32 P, bool in_place, double up,
                               double down) {
    if (P < 3u) return;
    const nrpt_u32 st = r->stride;
    double grow_below = (NRPT_AT(r->flags, 0u, st) & NRPT_FLAG_INDICATOR) ? up : down;
    if (!in_place) {
        // Jacobi: every rate from the previous ladder; `below` is the previous η_{l−1},
        // kept before it was overwritten. The guard keeps rates positive and finite.
        const double floor = NRPT_AT(r->ladder, 0u, st) * NRPT_JACOBI_GUARD;
        const double ceiling = NRPT_AT(r->ladder, P - 1u, st) / NRPT_JACOBI_GUARD;
        double below = NRPT_AT(r->ladder, 0u, st);
        for (nrpt_u32 l = 1; l + 1u < P; ++l) {
            double here = NRPT_AT(r->ladder, l, st);
            double above = NRPT_AT(r->ladder, l + 1u, st);
            double grow_above = (NRPT_AT(r->flags, l, st) & NRPT_FLAG_INDICATOR) ? up : down;
            double from_below = below + nrpt_fmax(here - below, 0.0) * grow_below;
            double from_above = above - nrpt_fmax(above - here, 0.0) * grow_above;
            NRPT_AT(r->ladder, l, st) =
                nrpt_fmin(nrpt_fmax(0.5 * (from_below + from_above), floor), ceiling);
            below = here;
            grow_below = grow_above;
        }
        return;
    }
    // In place: each rate from the already updated rate below it, both halves clamped
    // between the neighbours (as max then min, like the Rust code).
    NRPT_OTHER_RULES();
    for (nrpt_u32 l = 1; l + 1u < P; ++l) {
        double below = NRPT_AT(r->ladder, l - 1u, st);
        double here = NRPT_AT(r->ladder, l, st);
        double above = NRPT_AT(r->ladder, l + 1u, st);
        double grow_above = (NRPT_AT(r->flags, l, st) & NRPT_FLAG_INDICATOR) ? up : down;
        double from_below =
            nrpt_fmin(nrpt_fmax(below + nrpt_fmax(here - below, 0.0) * grow_below, below), above);
        double from_above =
            nrpt_fmin(nrpt_fmax(above - nrpt_fmax(above - here, 0.0) * grow_above, below), above);
        NRPT_AT(r->ladder, l, st) = 0.5 * (from_below + from_above);
        grow_below = grow_above;
    }
    // sass-count: other-rules end
}

/// adapt::adapt_buffer: `C + (mean − S) γ / c`, then max(0, ·) unless `unprojected`
/// (BufferProjection::Unprojected).
NRPT_HD double nrpt_adapt_buffer(double buffer, double mean_rate, double target, double gamma,
                                 double scale, bool unprojected) {
    double c = buffer + (mean_rate - target) * gamma / scale;
    return unprojected ? c : nrpt_fmax(c, 0.0);
}

/// What one sweep did (swap::SweepSummary).
struct NrptSweepSummary {
    nrpt_u32 indicators, swaps, nonfinite;
};

/// Steps 3-6 of one iteration k of the ensemble with Philox key `ensemble_key`
/// (Engine::exchange, momentum reset aside), by the lanes of `team`. `ic` holds γ_k
/// and the two ladder growth factors of iteration k. Every lane of the team calls it;
/// `buffer` and `stats` are written by the leader only (each lane may pass its own
/// copy); the returned summary is the team's total on every lane.
NRPT_HD NrptSweepSummary nrpt_swap_and_adapt(const NrptGpuParams* p, nrpt_u32 ensemble_key,
                                             nrpt_u64 k, NrptIterConsts ic,
                                             const NrptEnsembleRefs* r, double* buffer,
                                             NrptIndexStats* stats, const NrptTeam* team) {
    const nrpt_u32 P = p->core.chains;
    const nrpt_u32 st = r->stride;
    const nrpt_u32 window = p->core.window;
    const bool metropolis = p->core.rule == 1u;

    // Sweep (swap::sweep_levels with SweepOrder::Simultaneous: every indicator from the
    // energies before this iteration's swaps, the energies moved afterwards). The SWAP
    // stream: SEO's parity is its word 0; the Metropolis uniform of pair q is the next
    // word in pair order, word q (+ 1 under SEO), as the driver's cursor draws them.
    const NrptStream swap_stream =
        nrpt_stream(p->core.seed, ensemble_key, k, NRPT_ENSEMBLE_WIDE, NRPT_STREAM_SWAP);
    nrpt_u32 parity;
    nrpt_u32 first_word = 0u;
    const bool gated = window != 0u;
    const bool reopen = gated && k % (nrpt_u64)window == 0u;
    if (gated) {
        parity = (nrpt_u32)((k / (nrpt_u64)window) & 1u);
    } else {
        NRPT_OTHER_RULES();
        parity = nrpt_stream_word(swap_stream, 0u) >> 31;
        first_word = 1u;
        // sass-count: other-rules end
    }
    const float buf = (float)*buffer;
    nrpt_u32 nonfinite_energies = 0u, indicators = 0u, swaps = 0u, nonfinite = 0u;
    // Non-finite energies (the driver counts them by level before the sweep).
    NRPT_TEAM_FOR(team, l, P) {
        if (!nrpt_finite_f32(NRPT_AT(r->energies, l, st))) nonfinite_energies += 1u;
    }
    NRPT_TEAM_FOR(team, q, P - 1u) {
        if (reopen) NRPT_AT(r->gates, q, st) = 1u;
        float ec = NRPT_AT(r->energies, q, st);
        float eh = NRPT_AT(r->energies, q + 1u, st);
        bool finite = nrpt_finite_f32(ec) && nrpt_finite_f32(eh);
        bool ind = false;
        if (!metropolis) {
            ind = finite && (eh + buf < ec);
        } else {
            NRPT_OTHER_RULES();
            float u = nrpt_uniform_f32(nrpt_stream_word(swap_stream, first_word + q));
            if (finite) {
                double tc = NRPT_AT(r->temps, q, st), th = NRPT_AT(r->temps, q + 1u, st);
                float lr = (float)(1.0 / tc - 1.0 / th) * (ec - eh);
                ind = lr >= 0.0f || nrpt_ln(u) < lr;  // UnitDraw::ln_uniform for f32
            }
            // sass-count: other-rules end
        }
        nrpt_u32 f = 0u;
        if (!finite) {
            f |= NRPT_FLAG_NONFINITE;
            nonfinite += 1u;
        } else if (ind) {
            f |= NRPT_FLAG_INDICATOR;
            indicators += 1u;
        }
        bool eligible = ((q + 1u) & 1u) == parity;
        if (eligible && (!gated || NRPT_AT(r->gates, q, st) != 0u)) {
            f |= NRPT_FLAG_ATTEMPT;
            if (f & NRPT_FLAG_INDICATOR) {
                f |= NRPT_FLAG_SWAPPED;
                swaps += 1u;
                nrpt_swap_levels(r, q);
                if (gated) NRPT_AT(r->gates, q, st) = 0u;
            }
        }
        NRPT_AT(r->flags, q, st) = (nrpt_u8)f;
    }
    NrptSweepSummary sum;
    sum.indicators = nrpt_team_sum(team, indicators);
    sum.swaps = nrpt_team_sum(team, swaps);
    sum.nonfinite = nrpt_team_sum(team, nonfinite);
    nonfinite_energies = nrpt_team_sum(team, nonfinite_energies);
    nrpt_team_sync(team);
    if (sum.swaps > 0u) {
        NRPT_TEAM_FOR(team, q, P - 1u) {
            if (NRPT_AT(r->flags, q, st) & NRPT_FLAG_SWAPPED) {
                float t = NRPT_AT(r->energies, q, st);
                NRPT_AT(r->energies, q, st) = NRPT_AT(r->energies, q + 1u, st);
                NRPT_AT(r->energies, q + 1u, st) = t;
            }
        }
    }

    // Ladder (a recurrence: one lane), and the temperatures that follow it
    // (Temperatures::fill: η_l / η₀).
    const nrpt_u32 af = p->core.adapt_flags;
    const bool follow = (af & NRPT_ADAPT_LADDER) && (af & NRPT_FOLLOW_LADDER);
    if (nrpt_team_leader(team)) {
        if (af & NRPT_ADAPT_LADDER) {
            nrpt_adapt_ladder(r, P, (af & NRPT_LADDER_IN_PLACE) != 0u, ic.up, ic.down);
        }
        // Buffer.
        if ((af & NRPT_ADAPT_BUFFER) && !metropolis) {
            double mean = (double)sum.indicators / (double)(P - 1u);
            *buffer = nrpt_adapt_buffer(*buffer, mean, p->core.target_swap_rate, ic.gamma,
                                        p->core.buffer_scale,
                                        (af & NRPT_BUFFER_UNPROJECTED) != 0u);
        }
    }
    nrpt_team_sync(team);
    if (follow) {
        NRPT_TEAM_FOR(team, l, P) {
            NRPT_OTHER_RULES();
            NRPT_AT(r->temps, l, st) = NRPT_AT(r->ladder, l, st) / NRPT_AT(r->ladder, 0u, st);
            // sass-count: other-rules end
        }
        nrpt_team_sync(team);
    }

    // Book-keeping: pair counts and arrivals (standard counting), then the authors'
    // counting of this iteration.
    const nrpt_u32 top = P - 1u;
    NrptIndexStats arrivals = {0u, 0u, 0u, 0u};
    NRPT_TEAM_FOR(team, q, P - 1u) {
        nrpt_u32 f = NRPT_AT(r->flags, q, st);
        NrptPairStats* ps = &NRPT_AT(r->pairs, q, st);
        ps->indicators += (f & NRPT_FLAG_INDICATOR) ? 1u : 0u;
        ps->attempts += (f & NRPT_FLAG_ATTEMPT) ? 1u : 0u;
        ps->nonfinite += (f & NRPT_FLAG_NONFINITE) ? 1u : 0u;
        if (f & NRPT_FLAG_SWAPPED) {
            ps->swaps += 1u;
            for (nrpt_u32 h = 0; h < 2u; ++h) {
                nrpt_u32 level = q + h;
                nrpt_u32 rep = NRPT_AT(r->replica_at, level, st);
                nrpt_observe_arrival(&NRPT_AT(r->trips, rep, st), level, top, &arrivals);
            }
        }
    }
    nrpt_u32 restarts = nrpt_team_sum(team, (nrpt_u32)arrivals.restarts);
    nrpt_u32 trips = nrpt_team_sum(team, (nrpt_u32)arrivals.round_trips);
    nrpt_team_sync(team);
    nrpt_u32 authors = nrpt_team_sum(team, nrpt_authors_pass(r, P, team));
    if (nrpt_team_leader(team)) {
        stats->nonfinite_energies += nonfinite_energies;
        stats->restarts += restarts;
        stats->round_trips += trips;
        stats->authors_round_trips += authors;
    }
    return sum;
}

/// nrpt_swap_and_adapt by the calling thread alone (a team of one).
NRPT_HD NrptSweepSummary nrpt_swap_and_adapt(const NrptGpuParams* p, nrpt_u32 ensemble_key,
                                             nrpt_u64 k, NrptIterConsts ic,
                                             const NrptEnsembleRefs* r, double* buffer,
                                             NrptIndexStats* stats) {
    NrptTeam solo = nrpt_solo_team();
    return nrpt_swap_and_adapt(p, ensemble_key, k, ic, r, buffer, stats, &solo);
}

/// `true` when the replica now at `level` took part in a swap of the last sweep: it
/// arrived from below (pair level − 1 swapped) or from above (pair level swapped).
/// Swapping pairs are disjoint, so these are exactly the replicas whose momenta
/// Engine::exchange resets (MomentumOnSwap::Reset). `flags` is strided like the
/// ensemble's arrays.
NRPT_HD bool nrpt_swapped_at_level(const nrpt_u8* flags, nrpt_u32 stride, nrpt_u32 level,
                                   nrpt_u32 P) {
    bool from_below = level > 0u && (NRPT_AT(flags, level - 1u, stride) & NRPT_FLAG_SWAPPED);
    bool from_above = level + 1u < P && (NRPT_AT(flags, level, stride) & NRPT_FLAG_SWAPPED);
    return from_below || from_above;
}

/// Engine::exchange's momentum reset for momenta in memory: after the sweep, every
/// coordinate of the momenta of both replicas of every executed swap is set to zero
/// (zero bits are +0 in f32, bf16 and f16 alike, so only the coordinate size matters).
/// `momenta` is the ensemble's first replica row, rows of D·`coord_bytes` bytes by
/// replica; `r` the ensemble's arrays after nrpt_swap_and_adapt. The team's lanes
/// split each row. Does nothing unless the explorer has momentum and the rules reset
/// it.
NRPT_HD void nrpt_zero_swapped_momenta(const NrptGpuParams* p, const NrptEnsembleRefs* r,
                                       void* momenta, const NrptTeam* team) {
    const nrpt_u32 P = p->core.chains, D = p->core.dim;
    if (momenta == 0 || p->core.explorer == 0u || (p->core.adapt_flags & NRPT_MOMENTUM_CARRY)) {
        return;
    }
    for (nrpt_u32 q = 0; q + 1u < P; ++q) {
        if (!(NRPT_AT(r->flags, q, r->stride) & NRPT_FLAG_SWAPPED)) continue;
        for (nrpt_u32 h = 0; h < 2u; ++h) {
            nrpt_u64 rep = NRPT_AT(r->replica_at, q + h, r->stride);
            if (p->coord_bytes == 2u) {
                nrpt_u16* v = (nrpt_u16*)momenta + rep * D;
                NRPT_TEAM_FOR(team, j, D) { v[j] = 0u; }
            } else {
                nrpt_u32* v = (nrpt_u32*)momenta + rep * D;
                NRPT_TEAM_FOR(team, j, D) { v[j] = 0u; }
            }
        }
    }
}

/// nrpt_zero_swapped_momenta by the calling thread alone.
NRPT_HD void nrpt_zero_swapped_momenta(const NrptGpuParams* p, const NrptEnsembleRefs* r,
                                       void* momenta) {
    NrptTeam solo = nrpt_solo_team();
    nrpt_zero_swapped_momenta(p, r, momenta, &solo);
}
