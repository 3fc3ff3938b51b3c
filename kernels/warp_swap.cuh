// warp_swap.cuh: the swap-and-adapt phase of an ensemble that fits in a warp (P ≤ 32),
// with one level per lane and no shared memory and no barrier: lane l of the
// ensemble's segment (W lanes, the power of two ≥ P) holds level l — its energy, rate
// η_l and temperature, the counts, gate and flags of pair (l, l + 1) — and the replica
// now at level l: its index, its trip state, its state, velocity and sines. The sweep
// is a shuffle of the energies and a compare; a swap exchanges the replica registers
// of two neighbour lanes; the Jacobi ladder is computed by every lane for its own
// level from the old rates (the same f64 operations in the same order as
// nrpt_adapt_ladder, so the same bits); counts are summed with full-mask shuffles.
// Decision for decision the same as nrpt_swap_and_adapt (swap.cuh), and so as
// nrpt_core::driver::Engine::exchange with the momentum reset.
//
// The phase is written once (nrpt_warp_exchange) over a lane group `L`:
// NrptWarpDevice on the GPU (this thread's lane; shuffles are __shfl_sync over the
// whole warp) and NrptWarpHost on the host (every lane of the segment, one after the
// other; a shuffle reads the other lanes' values), so that the host tests run the
// kernel's own code. `L::each(f)` runs f(l) for this lane (GPU) or for every lane of
// the segment in order (host); `L::Reg<T>` is a per-lane value (a register on the
// GPU, an array on the host) read and written through `w.r(reg, l)`.
#pragma once
#include "swap.cuh"

/// One lane's registers: level `l` of the ensemble and the replica at it.
struct NrptWarpLane {
    // The replica now at this level.
    float x0, x1, v0, v1, s0, s1;
    nrpt_u32 rep;
    nrpt_u8 trip;
    // The level.
    float energy;
    double eta, temp;
    // Pair (l, l + 1), for l < P − 1: gate and flags of the last sweep.
    nrpt_u8 gate, flag;
    // Counts since the lane was loaded, two 16-bit counts a word (a launch runs at
    // most NRPT_WARP_MAX_ITERS iterations; each count grows by at most one an
    // iteration): pair l's indicators | attempts << 16 and swaps | nonfinite << 16,
    // and this lane's share of the ensemble's round trips | restarts << 16 and
    // authors' round trips | non-finite energies << 16. Added to the stored 64-bit
    // counts when the lanes are stored (nrpt_warp_add_pair, nrpt_warp_add_stats).
    nrpt_u32 pair_ia, pair_sn, trips_rr, trips_an;
    // The ensemble's buffer: the same on every lane.
    double buffer;
    // This lane holds a level of a live ensemble (l < P and the ensemble exists).
    bool valid;
};

#if defined(__CUDA_ARCH__)
/// This thread's lane of a segment of `width` lanes (the whole warp takes part in
/// every shuffle: its blocks are whole warps and every thread calls the phase).
struct NrptWarpDevice {
    template <class T>
    using Reg = T;
    NrptWarpLane me;  // by value: its fields stay in registers
    nrpt_u32 lane, width;

    template <class F>
    __device__ __forceinline__ void each(F f) {
        f(lane);
    }
    __device__ __forceinline__ NrptWarpLane& at(nrpt_u32) { return me; }
    template <class T>
    __device__ __forceinline__ T& r(T& v, nrpt_u32) {
        return v;
    }
    /// Lane `src` (of this segment)'s `v`.
    template <class T>
    __device__ __forceinline__ T shfl(const T& v, const nrpt_u32& src) {
        return __shfl_sync(0xffffffffu, v, src, width);
    }
    __device__ __forceinline__ nrpt_u8 shfl(const nrpt_u8& v, const nrpt_u32& src) {
        return (nrpt_u8)__shfl_sync(0xffffffffu, (nrpt_u32)v, src, width);
    }
    /// The sum over the segment (on every lane).
    __device__ __forceinline__ nrpt_u32 sum(nrpt_u32 v) {
        for (nrpt_u32 off = width / 2u; off > 0u; off /= 2u) {
            v += __shfl_xor_sync(0xffffffffu, v, off, width);
        }
        return v;
    }
};
#endif

#if !defined(__CUDACC__)
/// Every lane of one segment, run one after the other on the host.
struct NrptWarpHost {
    template <class T>
    struct Reg {
        T v[32];
    };
    NrptWarpLane* lanes;  // `width` lanes
    nrpt_u32 width;

    template <class F>
    void each(F f) {
        for (nrpt_u32 l = 0; l < width; ++l) f(l);
    }
    NrptWarpLane& at(nrpt_u32 l) { return lanes[l]; }
    template <class T>
    T& r(Reg<T>& v, nrpt_u32 l) {
        return v.v[l];
    }
    template <class T>
    Reg<T> shfl(const Reg<T>& v, const Reg<nrpt_u32>& src) {
        Reg<T> out;
        for (nrpt_u32 l = 0; l < width; ++l) out.v[l] = v.v[src.v[l] & (width - 1u)];
        return out;
    }
    nrpt_u32 sum(const Reg<nrpt_u32>& v) {
        nrpt_u32 s = 0u;
        for (nrpt_u32 l = 0; l < width; ++l) s += v.v[l];
        return s;
    }
};
#endif

/// Most iterations between a load and a store of the lanes (16-bit counts).
#define NRPT_WARP_MAX_ITERS 65535u

/// Adds the counts lane `me` gathered since its load to the stored counts of its pair.
NRPT_HD void nrpt_warp_add_pair(NrptPairStats* ps, const NrptWarpLane* me) {
    ps->indicators += me->pair_ia & 0xffffu;
    ps->attempts += me->pair_ia >> 16;
    ps->swaps += me->pair_sn & 0xffffu;
    ps->nonfinite += me->pair_sn >> 16;
}

/// Adds the ensemble's counts gathered since the load, `rr` and `an` (the sums over
/// the lanes of trips_rr and trips_an), to the stored index counts.
NRPT_HD void nrpt_warp_add_stats(NrptIndexStats* st, nrpt_u32 rr, nrpt_u32 an) {
    st->round_trips += rr & 0xffffu;
    st->restarts += rr >> 16;
    st->authors_round_trips += an & 0xffffu;
    st->nonfinite_energies += an >> 16;
}

/// The segment width for P chains: the power of two ≥ P (P ≤ 32).
NRPT_HD nrpt_u32 nrpt_warp_width(nrpt_u32 chains) {
    nrpt_u32 w = 1u;
    while (w < chains) w *= 2u;
    return w;
}

/// Steps 3–6 of iteration k of the ensemble with Philox key `ensemble_key`
/// (nrpt_swap_and_adapt's decisions), and the momentum reset, by the lanes of `w`.
/// `record`, when not null, receives the P − 1 flags of the sweep.
template <class L>
NRPT_HD void nrpt_warp_exchange(L& w, const NrptGpuParams* p, nrpt_u32 ensemble_key, nrpt_u64 k,
                                NrptIterConsts ic, nrpt_u8* record) {
    typedef typename L::template Reg<nrpt_u32> RegU;
    typedef typename L::template Reg<float> RegF;
    typedef typename L::template Reg<double> RegD;
    typedef typename L::template Reg<nrpt_u8> RegB;
    const nrpt_u32 P = p->core.chains;
    const nrpt_u32 top = P - 1u;
    const nrpt_u32 window = p->core.window;
    const bool metropolis = p->core.rule == 1u;
    const bool gated = window != 0u;
    const bool reopen = gated && k % (nrpt_u64)window == 0u;
    const NrptStream swap_stream =
        nrpt_stream(p->core.seed, ensemble_key, k, NRPT_ENSEMBLE_WIDE, NRPT_STREAM_SWAP);
    nrpt_u32 parity, first_word = 0u;
    if (gated) {
        parity = (nrpt_u32)((k / (nrpt_u64)window) & 1u);
    } else {
        NRPT_OTHER_RULES();
        parity = nrpt_stream_word(swap_stream, 0u) >> 31;
        first_word = 1u;
        // sass-count: other-rules end
    }
    const nrpt_u32 af = p->core.adapt_flags;

    // Neighbours: lane l reads l + 1 (above), l − 1 (below), 0 and P − 1.
    RegU up, down, first, last;
    w.each([&](nrpt_u32 l) {
        w.r(up, l) = l + 1u < P ? l + 1u : l;
        w.r(down, l) = l > 0u ? l - 1u : l;
        w.r(first, l) = 0u;
        w.r(last, l) = top;
    });

    // Sweep: pair l's test on lane l, from the energies before the swaps.
    RegF e_mine;
    RegD temp_mine;
    w.each([&](nrpt_u32 l) {
        w.r(e_mine, l) = w.at(l).energy;
        w.r(temp_mine, l) = w.at(l).temp;
    });
    RegF e_above = w.shfl(e_mine, up);
    RegD temp_above = w.shfl(temp_mine, up);
    const float buf = (float)w.at(0).buffer;  // the same on every lane
    RegU c_ind;
    w.each([&](nrpt_u32 l) {
        NrptWarpLane& me = w.at(l);
        w.r(c_ind, l) = 0u;
        if (!me.valid) return;
        // The driver counts non-finite energies by level before the sweep.
        if (!nrpt_finite_f32(me.energy)) me.trips_an += 1u << 16;
        if (l + 1u >= P) {
            me.flag = 0u;
            return;
        }
        if (reopen) me.gate = 1u;
        float ec = me.energy;
        float eh = w.r(e_above, l);
        bool finite = nrpt_finite_f32(ec) && nrpt_finite_f32(eh);
        bool ind = false;
        if (!metropolis) {
            ind = finite && (eh + buf < ec);
        } else {
            NRPT_OTHER_RULES();
            float u = nrpt_uniform_f32(nrpt_stream_word(swap_stream, first_word + l));
            if (finite) {
                double tc = me.temp, th = w.r(temp_above, l);
                float lr = (float)(1.0 / tc - 1.0 / th) * (ec - eh);
                ind = lr >= 0.0f || nrpt_ln(u) < lr;
            }
            // sass-count: other-rules end
        }
        nrpt_u32 f = 0u;
        if (!finite) {
            f |= NRPT_FLAG_NONFINITE;
        } else if (ind) {
            f |= NRPT_FLAG_INDICATOR;
            w.r(c_ind, l) = 1u;
        }
        bool eligible = ((l + 1u) & 1u) == parity;
        if (eligible && (!gated || me.gate != 0u)) {
            f |= NRPT_FLAG_ATTEMPT;
            if (f & NRPT_FLAG_INDICATOR) {
                f |= NRPT_FLAG_SWAPPED;
                if (gated) me.gate = 0u;
            }
        }
        me.flag = (nrpt_u8)f;
    });
    const nrpt_u32 indicators = w.sum(c_ind);

    // The swaps: the replica registers of lanes l and l + 1 change places when pair l
    // swapped (swapping pairs are disjoint: a lane has one partner at most).
    RegB flag_mine;
    w.each([&](nrpt_u32 l) { w.r(flag_mine, l) = w.at(l).flag; });
    RegB flag_below = w.shfl(flag_mine, down);
    RegU partner;
    w.each([&](nrpt_u32 l) {
        const NrptWarpLane& me = w.at(l);
        bool from_above = me.valid && l + 1u < P && (me.flag & NRPT_FLAG_SWAPPED);
        bool from_below = me.valid && l > 0u && (w.r(flag_below, l) & NRPT_FLAG_SWAPPED);
        w.r(partner, l) = from_above ? l + 1u : (from_below ? l - 1u : l);
    });
    {
        RegF a, b, c, d, e, f, g;
        RegU rep;
        RegB trip;
        w.each([&](nrpt_u32 l) {
            const NrptWarpLane& me = w.at(l);
            w.r(a, l) = me.x0;
            w.r(b, l) = me.x1;
            w.r(c, l) = me.v0;
            w.r(d, l) = me.v1;
            w.r(e, l) = me.s0;
            w.r(f, l) = me.s1;
            w.r(g, l) = me.energy;
            w.r(rep, l) = me.rep;
            w.r(trip, l) = me.trip;
        });
        a = w.shfl(a, partner);
        b = w.shfl(b, partner);
        c = w.shfl(c, partner);
        d = w.shfl(d, partner);
        e = w.shfl(e, partner);
        f = w.shfl(f, partner);
        g = w.shfl(g, partner);
        rep = w.shfl(rep, partner);
        trip = w.shfl(trip, partner);
        const bool reset = p->core.explorer != 0u && !(af & NRPT_MOMENTUM_CARRY);
        w.each([&](nrpt_u32 l) {
            NrptWarpLane& me = w.at(l);
            if (!me.valid) return;
            me.x0 = w.r(a, l);
            me.x1 = w.r(b, l);
            me.v0 = w.r(c, l);
            me.v1 = w.r(d, l);
            me.s0 = w.r(e, l);
            me.s1 = w.r(f, l);
            me.energy = w.r(g, l);
            me.rep = w.r(rep, l);
            me.trip = w.r(trip, l);
            // MomentumOnSwap::Reset: both replicas of a swap restart from rest.
            if (reset && w.r(partner, l) != l) {
                NRPT_OTHER_RULES();
                me.v0 = 0.0f;
                me.v1 = 0.0f;
                // sass-count: other-rules end
            }
        });
    }

    // Ladder: Jacobi by every lane from the old rates; in place, a recurrence, one
    // level per round.
    const bool follow = (af & NRPT_ADAPT_LADDER) && (af & NRPT_FOLLOW_LADDER);
    if ((af & NRPT_ADAPT_LADDER) && P >= 3u) {
        RegD eta;
        w.each([&](nrpt_u32 l) { w.r(eta, l) = w.at(l).eta; });
        if (!(af & NRPT_LADDER_IN_PLACE)) {
            RegD below = w.shfl(eta, down), above = w.shfl(eta, up);
            RegD eta0 = w.shfl(eta, first), eta_top = w.shfl(eta, last);
            w.each([&](nrpt_u32 l) {
                NrptWarpLane& me = w.at(l);
                if (!me.valid || l == 0u || l + 1u >= P) return;
                const double floor = w.r(eta0, l) * NRPT_JACOBI_GUARD;
                const double ceiling = w.r(eta_top, l) / NRPT_JACOBI_GUARD;
                double b = w.r(below, l), here = me.eta, a = w.r(above, l);
                double grow_below = (w.r(flag_below, l) & NRPT_FLAG_INDICATOR) ? ic.up : ic.down;
                double grow_above = (me.flag & NRPT_FLAG_INDICATOR) ? ic.up : ic.down;
                double from_below = b + nrpt_fmax(here - b, 0.0) * grow_below;
                double from_above = a - nrpt_fmax(a - here, 0.0) * grow_above;
                me.eta = nrpt_fmin(nrpt_fmax(0.5 * (from_below + from_above), floor), ceiling);
            });
        } else {
            NRPT_OTHER_RULES();
            for (nrpt_u32 j = 1u; j + 1u < P; ++j) {
                RegD below = w.shfl(eta, down), above = w.shfl(eta, up);
                w.each([&](nrpt_u32 l) {
                    NrptWarpLane& me = w.at(l);
                    if (l != j || !me.valid) return;
                    double b = w.r(below, l), here = me.eta, a = w.r(above, l);
                    double grow_below =
                        (w.r(flag_below, l) & NRPT_FLAG_INDICATOR) ? ic.up : ic.down;
                    double grow_above = (me.flag & NRPT_FLAG_INDICATOR) ? ic.up : ic.down;
                    double from_below =
                        nrpt_fmin(nrpt_fmax(b + nrpt_fmax(here - b, 0.0) * grow_below, b), a);
                    double from_above =
                        nrpt_fmin(nrpt_fmax(a - nrpt_fmax(a - here, 0.0) * grow_above, b), a);
                    me.eta = 0.5 * (from_below + from_above);
                    w.r(eta, l) = me.eta;
                });
            }
            // sass-count: other-rules end
        }
    }
    if (follow) {
        RegD eta;
        w.each([&](nrpt_u32 l) { w.r(eta, l) = w.at(l).eta; });
        RegD eta0 = w.shfl(eta, first);
        w.each([&](nrpt_u32 l) {
            NrptWarpLane& me = w.at(l);
            NRPT_OTHER_RULES();
            if (me.valid) me.temp = me.eta / w.r(eta0, l);
            // sass-count: other-rules end
        });
    }

    // Pair counts, arrivals (standard counting) and the authors' counting of this
    // iteration, each lane for its pair and for the replica it now holds.
    w.each([&](nrpt_u32 l) {
        NrptWarpLane& me = w.at(l);
        if (!me.valid) return;
        if (l + 1u < P) {
            nrpt_u32 f = me.flag;
            me.pair_ia += ((f & NRPT_FLAG_INDICATOR) ? 1u : 0u) | ((f & NRPT_FLAG_ATTEMPT) ? 1u << 16 : 0u);
            me.pair_sn += ((f & NRPT_FLAG_SWAPPED) ? 1u : 0u) | ((f & NRPT_FLAG_NONFINITE) ? 1u << 16 : 0u);
            if (record) {
                NRPT_OTHER_RULES();
                record[l] = (nrpt_u8)f;
                // sass-count: other-rules end
            }
        }
        if (w.r(partner, l) != l) {
            NrptIndexStats arrivals = {0u, 0u, 0u, 0u};
            nrpt_observe_arrival(&me.trip, l, top, &arrivals);
            me.trips_rr += (nrpt_u32)arrivals.round_trips | ((nrpt_u32)arrivals.restarts << 16);
        }
        // index::authors_pass for replica `rep` (its check is step `rep` of the walk):
        // the marks of the walk that come before its check, the check, the marks after.
        const nrpt_u32 rep = me.rep;
        const nrpt_u32 both = NRPT_SEEN_BOTTOM | NRPT_SEEN_TOP;
        nrpt_u32 t = me.trip;
        if (l == 0u && rep != 0u) t |= NRPT_SEEN_BOTTOM;
        if (l == top && rep == top) t |= NRPT_SEEN_TOP;
        // At level `rep` at this point of the walk: there now with pair `rep` not
        // swapped, or one above with pair `rep` (the later swap of the walk) swapped.
        bool later_swap = rep < top && l == rep + 1u && (w.r(flag_below, l) & NRPT_FLAG_SWAPPED);
        bool stays = l == rep && !(rep < top && (me.flag & NRPT_FLAG_SWAPPED));
        if ((later_swap || stays) && (t & both) == both) {
            t = (t & NRPT_PHASE_MASK) | (rep == top ? NRPT_SEEN_TOP : 0u);
            me.trips_an += 1u;
        }
        if (l == 0u && rep == 0u) t |= NRPT_SEEN_BOTTOM;
        if (l == top && rep != top) t |= NRPT_SEEN_TOP;
        me.trip = (nrpt_u8)t;
    });

    // Buffer: the same arithmetic on every lane.
    if ((af & NRPT_ADAPT_BUFFER) && !metropolis) {
        w.each([&](nrpt_u32 l) {
            NrptWarpLane& me = w.at(l);
            double mean = (double)indicators / (double)(P - 1u);
            me.buffer = nrpt_adapt_buffer(me.buffer, mean, p->core.target_swap_rate, ic.gamma,
                                          p->core.buffer_scale,
                                          (af & NRPT_BUFFER_UNPROJECTED) != 0u);
        });
    }
}

/// The ensemble's counts gathered since the load, summed over the lanes (every lane
/// gets them): (Σ trips_rr, Σ trips_an), for nrpt_warp_add_stats. Every lane of the
/// segment calls it.
template <class L>
NRPT_HD void nrpt_warp_counts(L& w, nrpt_u32* rr, nrpt_u32* an) {
    typename L::template Reg<nrpt_u32> a, b;
    w.each([&](nrpt_u32 l) {
        w.r(a, l) = w.at(l).valid ? w.at(l).trips_rr : 0u;
        w.r(b, l) = w.at(l).valid ? w.at(l).trips_an : 0u;
    });
    *rr = w.sum(a);
    *an = w.sum(b);
}
