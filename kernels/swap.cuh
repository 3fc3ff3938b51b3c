// swap.cuh: one ensemble's swap-and-adapt phase, decision for decision as
// nrpt_core::driver::Engine::iterate steps 3-6 do it: the windowed sweep
// (swap::sweep_with with the buffered or Metropolis rule), the energies moved with their
// replicas, the ladder and buffer adaptation, the per-pair counts and the trip states.
// Run by one thread per ensemble, over arrays laid out with a stride (1 in global
// memory, the number of ensembles of a block in the persistent kernel's shared memory).
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

/// Element i of a strided array.
#define NRPT_AT(ptr, i, stride) ((ptr)[(nrpt_u64)(i) * (stride)])

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

/// index::observe_arrival; adds the events to `stats`.
NRPT_HD void nrpt_observe_arrival(nrpt_u8* state, nrpt_u32 level, nrpt_u32 start, nrpt_u32 top,
                                  NrptIndexStats* stats) {
    nrpt_u32 phase = *state & NRPT_PHASE_MASK;
    nrpt_u32 seen = *state & ~NRPT_PHASE_MASK & 0xffu;
    if (level == 0u) {
        bool restart = phase == NRPT_PHASE_TOP_FROM_BOTTOM || phase == NRPT_PHASE_TOP_FRESH;
        stats->restarts += restart ? 1u : 0u;
        stats->round_trips += (phase == NRPT_PHASE_TOP_FROM_BOTTOM) ? 1u : 0u;
        phase = NRPT_PHASE_BOTTOM;
        seen |= NRPT_SEEN_BOTTOM;
    } else if (level == top) {
        if (phase == NRPT_PHASE_BOTTOM) {
            phase = NRPT_PHASE_TOP_FROM_BOTTOM;
        } else if (phase == NRPT_PHASE_NONE) {
            phase = NRPT_PHASE_TOP_FRESH;
        }
        seen |= NRPT_SEEN_TOP;
    }
    if (level == start && seen == (NRPT_SEEN_BOTTOM | NRPT_SEEN_TOP)) {
        stats->authors_round_trips += 1u;
        seen = nrpt_initial_trip_state(level, top) & ~NRPT_PHASE_MASK & 0xffu;
    }
    *state = (nrpt_u8)(phase | seen);
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

/// What one sweep did (swap::SweepSummary).
struct NrptSweepSummary {
    nrpt_u32 indicators, swaps, nonfinite;
};

/// Steps 3-6 of one iteration k of the ensemble with Philox key `ensemble_key`.
/// `ic` holds γ_k and the two ladder growth factors of iteration k.
NRPT_HD NrptSweepSummary nrpt_swap_and_adapt(const NrptGpuParams* p, nrpt_u32 ensemble_key,
                                             nrpt_u64 k, NrptIterConsts ic,
                                             const NrptEnsembleRefs* r, double* buffer,
                                             NrptIndexStats* stats) {
    const nrpt_u32 P = p->core.chains;
    const nrpt_u32 st = r->stride;
    const nrpt_u32 window = p->core.window;
    const bool metropolis = p->core.rule == 1u;

    // Non-finite energies (the driver counts them replica by replica; every level holds
    // exactly one replica's energy, so counting by level gives the same total).
    for (nrpt_u32 l = 0; l < P; ++l) {
        if (!nrpt_finite_f32(NRPT_AT(r->energies, l, st))) stats->nonfinite_energies += 1u;
    }

    // Sweep (swap::sweep / sweep_with).
    NrptCursor cur = nrpt_cursor(
        nrpt_stream(p->core.seed, ensemble_key, (nrpt_u32)k, NRPT_ENSEMBLE_WIDE, NRPT_STREAM_SWAP),
        0u);
    nrpt_u32 parity;
    bool gated = window != 0u;
    if (gated) {
        if (k % (nrpt_u64)window == 0u) {
            for (nrpt_u32 q = 0; q + 1u < P; ++q) NRPT_AT(r->gates, q, st) = 1u;
        }
        parity = (nrpt_u32)((k / (nrpt_u64)window) & 1u);
    } else {
        parity = nrpt_cursor_next(&cur) >> 31;
    }
    const float buf = (float)*buffer;
    NrptSweepSummary sum;
    sum.indicators = 0u;
    sum.swaps = 0u;
    sum.nonfinite = 0u;
    for (nrpt_u32 q = 0; q + 1u < P; ++q) {
        float ec = NRPT_AT(r->energies, q, st);
        float eh = NRPT_AT(r->energies, q + 1u, st);
        bool finite = nrpt_finite_f32(ec) && nrpt_finite_f32(eh);
        bool ind = false;
        if (!metropolis) {
            ind = finite && (eh + buf < ec);
        } else {
            float u = nrpt_uniform_f32(nrpt_cursor_next(&cur));
            if (finite) {
                double tc = NRPT_AT(r->temps, q, st), th = NRPT_AT(r->temps, q + 1u, st);
                float lr = (float)(1.0 / tc - 1.0 / th) * (ec - eh);
                ind = lr >= 0.0f || nrpt_ln(u) < lr;  // UnitDraw::ln_uniform for f32
            }
        }
        nrpt_u32 f = 0u;
        if (!finite) {
            f |= NRPT_FLAG_NONFINITE;
            sum.nonfinite += 1u;
        } else if (ind) {
            f |= NRPT_FLAG_INDICATOR;
            sum.indicators += 1u;
        }
        bool eligible = ((q + 1u) & 1u) == parity;
        if (eligible && (!gated || NRPT_AT(r->gates, q, st) != 0u)) {
            f |= NRPT_FLAG_ATTEMPT;
            if (f & NRPT_FLAG_INDICATOR) {
                f |= NRPT_FLAG_SWAPPED;
                sum.swaps += 1u;
                nrpt_swap_levels(r, q);
                if (gated) NRPT_AT(r->gates, q, st) = 0u;
            }
        }
        NRPT_AT(r->flags, q, st) = (nrpt_u8)f;
    }
    if (sum.swaps > 0u) {
        for (nrpt_u32 q = 0; q + 1u < P; ++q) {
            if (NRPT_AT(r->flags, q, st) & NRPT_FLAG_SWAPPED) {
                float t = NRPT_AT(r->energies, q, st);
                NRPT_AT(r->energies, q, st) = NRPT_AT(r->energies, q + 1u, st);
                NRPT_AT(r->energies, q + 1u, st) = t;
            }
        }
    }

    // Ladder (adapt::adapt_ladder_indicators, adapt::growth_factors from the host).
    const nrpt_u32 af = p->core.adapt_flags;
    if ((af & NRPT_ADAPT_LADDER) && P >= 3u) {
        double grow_below = (NRPT_AT(r->flags, 0u, st) & NRPT_FLAG_INDICATOR) ? ic.up : ic.down;
        for (nrpt_u32 l = 1; l + 1u < P; ++l) {
            double below = NRPT_AT(r->ladder, l - 1u, st);
            double here = NRPT_AT(r->ladder, l, st);
            double above = NRPT_AT(r->ladder, l + 1u, st);
            double grow_above = (NRPT_AT(r->flags, l, st) & NRPT_FLAG_INDICATOR) ? ic.up : ic.down;
            double from_below =
                nrpt_clamp(below + nrpt_fmax(here - below, 0.0) * grow_below, below, above);
            double from_above =
                nrpt_clamp(above - nrpt_fmax(above - here, 0.0) * grow_above, below, above);
            NRPT_AT(r->ladder, l, st) = 0.5 * (from_below + from_above);
            grow_below = grow_above;
        }
        if (af & NRPT_FOLLOW_LADDER) {
            double l0 = NRPT_AT(r->ladder, 0u, st);
            for (nrpt_u32 l = 0; l < P; ++l) {
                NRPT_AT(r->temps, l, st) = NRPT_AT(r->ladder, l, st) / l0;
            }
        }
    }
    // Buffer (adapt::adapt_buffer).
    if ((af & NRPT_ADAPT_BUFFER) && !metropolis) {
        double mean = (double)sum.indicators / (double)(P - 1u);
        double target = p->core.target_swap_rate;
        *buffer = nrpt_fmax(*buffer + (mean - target) * ic.gamma / p->core.buffer_scale, 0.0);
    }

    // Book-keeping.
    const nrpt_u32 top = P - 1u;
    for (nrpt_u32 q = 0; q + 1u < P; ++q) {
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
                nrpt_observe_arrival(&NRPT_AT(r->trips, rep, st), level, rep, top, stats);
            }
        }
    }
    return sum;
}
