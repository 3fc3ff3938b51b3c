//! The exchange phase of L ensembles in lockstep: swaps, ladder and buffer adaptation
//! and round-trip book-keeping, stored by level with one lane per ensemble.
//!
//! [`crate::driver::Tempering`] keeps one ensemble, its states in place and a
//! permutation of replica indices. An engine that advances many ensembles at once
//! (SIMD registers on a CPU, threads of a warp on a GPU) stores everything *by level*
//! instead: the energy, learning rate, replica index and trip state of the replica at
//! each level, one array element per ensemble ("lane"). A swap of the pair (l, l + 1)
//! then exchanges the two levels' entries in the lanes where it happens, a masked
//! select. Every step here is the same operation on `L` values, written as loops over
//! the lanes that the compiler turns into vector instructions.
//!
//! The arithmetic of each rule is nrpt-core's one definition, applied lane by lane:
//! [`buffered_indicator`] for the swap test, [`jacobi_level`] / [`in_place_level`]
//! for the ladder, [`adapt_buffer`] for the buffer, [`observe_arrival`] and
//! [`authors_check`] for round trips. So a lane computes the bits the scalar driver
//! computes for its ensemble (tested below against [`crate::driver::Tempering`], and in
//! the host's engine against whole runs), and `L = 1` is the scalar driver's exchange
//! in this layout.
//!
//! The lane exchange runs the paper's rules for SGD explorers: the buffered swap rule,
//! DEO with a window, the energies of each level tested simultaneously
//! ([`LaneRules::of`] says which options it accepts). The states themselves belong to
//! the caller (their layout depends on the target): [`LaneExchange::run`] calls back
//! ([`LaneStates`]) with the mask of every swapping pair so the caller exchanges them.

// Lane loops index several arrays with one lane index on purpose: that is the shape the
// vectorizer turns into SIMD.
#![allow(clippy::needless_range_loop)]

use crate::adapt::{adapt_buffer, growth_factors, in_place_level, jacobi_guard, jacobi_level};
use crate::driver::TemperingOptions;
use crate::error::Error;
use crate::float::Float;
use crate::index::{
    IndexStats, PairStats, SEEN_BOTTOM, SEEN_TOP, TripState, authors_check, observe_arrival,
};
use crate::rules::{BufferProjection, LadderUpdate, PairEnergies, SweepOrder};
use crate::swap::{SwapRule, buffered_indicator};
use crate::window::{Scheme, is_window_start, pair_eligible, window_parity};

/// The settings of the lane exchange, from validated [`TemperingOptions`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaneRules {
    /// DEO window W.
    pub window: u32,
    /// Target swap (indicator) rate S.
    pub target_rate: f64,
    /// Scale c of the buffer's step size.
    pub buffer_scale: f64,
    /// Whether the ladder adapts.
    pub adapt_ladder: bool,
    /// Whether the buffer adapts.
    pub adapt_buffer: bool,
    /// The ladder update.
    pub ladder_update: LadderUpdate,
    /// The buffer's projection.
    pub projection: BufferProjection,
}

impl LaneRules {
    /// The lane exchange's settings for `options`, which it runs when they ask for the
    /// buffered rule, DEO swaps and the energies of each level tested simultaneously.
    ///
    /// # Errors
    ///
    /// An invalid option ([`TemperingOptions::validate`]) or [`Error::Unsupported`] for
    /// a rule the lanes do not implement.
    pub fn of(options: &TemperingOptions) -> Result<Self, Error> {
        let o = options.validate()?;
        let Scheme::Deo { window } = o.scheme else {
            return Err(Error::Unsupported {
                what: "the lane exchange runs DEO swaps only",
            });
        };
        if o.rule != SwapRule::Buffered {
            return Err(Error::Unsupported {
                what: "the lane exchange runs the buffered swap rule only",
            });
        }
        if o.rules.pair_energies != PairEnergies::PerLevel
            || o.rules.sweep_order != SweepOrder::Simultaneous
        {
            return Err(Error::Unsupported {
                what: "the lane exchange tests the energies of each level simultaneously only",
            });
        }
        Ok(LaneRules {
            window,
            target_rate: o.adapt.target_swap_rate,
            buffer_scale: o.adapt.buffer_scale,
            adapt_ladder: o.adapt.adapt_ladder,
            adapt_buffer: o.adapt.adapt_buffer,
            ladder_update: o.rules.ladder_update,
            projection: o.rules.buffer_projection,
        })
    }
}

/// The caller's states, stored by level: the lane exchange asks it to exchange the
/// states of two levels in the lanes whose pair swaps. Implement it on a struct of
/// mutable borrows with `#[inline(always)]`, so that the exchange compiles into the
/// caller's vectorized loop (a closure would stay a call, compiled without the
/// caller's instruction set).
pub trait LaneStates<const L: usize> {
    /// Exchanges the states of levels `level` and `level + 1` where `mask` is set.
    fn swap_levels(&mut self, level: usize, mask: &[bool; L]);
}

/// No states (an exchange of indices alone, as in tests).
impl<const L: usize> LaneStates<L> for () {
    #[inline(always)]
    fn swap_levels(&mut self, _: usize, _: &[bool; L]) {}
}

/// The counts of one adjacent pair in every lane ([`PairStats`], by lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairLanes<const L: usize> {
    /// Iterations at which the swap indicator was 1.
    pub indicators: [u64; L],
    /// Iterations at which the pair was eligible with an open gate.
    pub attempts: [u64; L],
    /// Swaps done.
    pub swaps: [u64; L],
    /// Tests with a non-finite energy.
    pub nonfinite: [u64; L],
}

impl<const L: usize> Default for PairLanes<L> {
    fn default() -> Self {
        PairLanes {
            indicators: [0; L],
            attempts: [0; L],
            swaps: [0; L],
            nonfinite: [0; L],
        }
    }
}

impl<const L: usize> PairLanes<L> {
    /// The counts of lane `i` (`None` past the last lane).
    pub fn lane(&self, i: usize) -> Option<PairStats> {
        Some(PairStats {
            indicators: *self.indicators.get(i)?,
            attempts: self.attempts[i],
            swaps: self.swaps[i],
            nonfinite: self.nonfinite[i],
        })
    }

    /// Sets the counts of lane `i` (nothing past the last lane).
    pub fn set_lane(&mut self, i: usize, s: PairStats) {
        if i < L {
            self.indicators[i] = s.indicators;
            self.attempts[i] = s.attempts;
            self.swaps[i] = s.swaps;
            self.nonfinite[i] = s.nonfinite;
        }
    }
}

/// The exchange state of L ensembles of P replicas, stored by level, over buffers the
/// caller owns. Lengths: P for `energies`, `ladder`, `replica` and `trips`; P − 1 for
/// `gates`, `indicator`, `swapped` and `pairs`.
#[derive(Debug)]
pub struct LaneExchange<'a, F, const L: usize> {
    /// Energy of the replica at each level, from this iteration's exploration (not
    /// moved by the swaps: after [`LaneExchange::run`] the swapped pairs' energies
    /// belong to the other level).
    pub energies: &'a [[F; L]],
    /// Learning rate of each level.
    pub ladder: &'a mut [[f64; L]],
    /// Replica index at each level.
    pub replica: &'a mut [[u32; L]],
    /// Trip state of the replica at each level.
    pub trips: &'a mut [[TripState; L]],
    /// Gate of each pair (`true` = open).
    pub gates: &'a mut [[bool; L]],
    /// Output: swap indicator of each pair this iteration.
    pub indicator: &'a mut [[bool; L]],
    /// Output: whether each pair swapped this iteration.
    pub swapped: &'a mut [[bool; L]],
    /// Counts of each pair.
    pub pairs: &'a mut [PairLanes<L>],
    /// Correction buffer C of each lane.
    pub buffer: &'a mut [f64; L],
    /// Totals of each lane.
    pub stats: &'a mut [IndexStats; L],
}

impl<F: Float, const L: usize> LaneExchange<'_, F, L> {
    /// P, after checking every length.
    ///
    /// # Errors
    ///
    /// [`Error::TooFewChains`] below two levels, [`Error::LengthMismatch`] for a buffer
    /// whose length does not follow from `energies`.
    pub fn check(&self) -> Result<usize, Error> {
        let p = self.energies.len();
        if p < 2 {
            return Err(Error::TooFewChains { chains: p });
        }
        let lengths = [
            ("ladder", self.ladder.len(), p),
            ("replica", self.replica.len(), p),
            ("trips", self.trips.len(), p),
            ("gates", self.gates.len(), p - 1),
            ("indicator", self.indicator.len(), p - 1),
            ("swapped", self.swapped.len(), p - 1),
            ("pairs", self.pairs.len(), p - 1),
        ];
        for (name, found, expected) in lengths {
            if found != expected {
                return Err(Error::LengthMismatch {
                    name,
                    expected,
                    found,
                });
            }
        }
        Ok(p)
    }

    /// Phases 3–6 of iteration `k` in every lane, with the adaptation step size
    /// `gamma`: the windowed DEO sweep by the buffered rule, the swaps, the ladder and
    /// buffer adaptation, the round-trip book-keeping. `states` exchanges the caller's
    /// states of the levels that swap (the replica indices and trip states are
    /// exchanged here).
    ///
    /// # Errors
    ///
    /// The first length error of [`LaneExchange::check`]; nothing is changed then.
    #[inline(always)]
    pub fn run(
        self,
        rules: &LaneRules,
        k: u64,
        gamma: f64,
        states: &mut impl LaneStates<L>,
    ) -> Result<(), Error> {
        let p = self.check()?;
        let top = p - 1;
        for i in 0..L {
            let bad = self.energies.iter().filter(|e| !e[i].is_finite()).count();
            self.stats[i].nonfinite_energies += bad as u64;
        }
        if is_window_start(k, rules.window) {
            for g in self.gates.iter_mut() {
                *g = [true; L];
            }
        }
        let parity = window_parity(k, rules.window);
        let mut buffer = [F::ZERO; L];
        for i in 0..L {
            buffer[i] = F::from_f64(self.buffer[i]);
        }
        let mut count = [0u32; L];
        for l in 0..top {
            sweep_pair(
                (&self.energies[l], &self.energies[l + 1]),
                &buffer,
                &self.gates[l],
                pair_eligible(l, parity),
                (&mut self.indicator[l], &mut self.swapped[l]),
                &mut self.pairs[l],
                &mut count,
            );
        }
        // Eligible pairs are disjoint: their swaps commute.
        for l in (0..top).filter(|&l| pair_eligible(l, parity)) {
            let m = self.swapped[l];
            states.swap_levels(l, &m);
            let (lo, hi) = self.replica.split_at_mut(l + 1);
            blend(&m, &mut lo[l], &mut hi[0]);
            let (lo, hi) = self.trips.split_at_mut(l + 1);
            blend(&m, &mut lo[l], &mut hi[0]);
            for i in 0..L {
                if m[i] {
                    self.gates[l][i] = false;
                    for level in [l, l + 1] {
                        let ev = observe_arrival(&mut self.trips[level][i], level, top);
                        self.stats[i].record(ev);
                    }
                }
            }
        }
        authors_pass(self.trips, self.replica, self.swapped, self.stats, parity);
        if rules.adapt_ladder && p >= 3 {
            adapt_ladder(self.ladder, self.indicator, rules, gamma);
        }
        if rules.adapt_buffer {
            for i in 0..L {
                let mean = f64::from(count[i]) / top as f64;
                self.buffer[i] = adapt_buffer(
                    self.buffer[i],
                    mean,
                    rules.target_rate,
                    gamma,
                    rules.buffer_scale,
                    rules.projection,
                );
            }
        }
        Ok(())
    }
}

// The lane loops below are functions of their own so that their array arguments are
// known not to overlap, which is what lets the compiler vectorize them.

/// Indicators, attempts and swap decisions of one pair in every lane.
#[inline(always)]
fn sweep_pair<F: Float, const L: usize>(
    (cold, hot): (&[F; L], &[F; L]),
    buffer: &[F; L],
    gates: &[bool; L],
    eligible: bool,
    (indicator, swapped): (&mut [bool; L], &mut [bool; L]),
    pc: &mut PairLanes<L>,
    count: &mut [u32; L],
) {
    for i in 0..L {
        let test = buffered_indicator(cold[i], hot[i], buffer[i]);
        let ind = test == Some(true);
        let attempt = eligible && gates[i];
        let sw = attempt && ind;
        indicator[i] = ind;
        swapped[i] = sw;
        count[i] += u32::from(ind);
        pc.indicators[i] += u64::from(ind);
        pc.attempts[i] += u64::from(attempt);
        pc.swaps[i] += u64::from(sw);
        pc.nonfinite[i] += u64::from(test.is_none());
    }
}

/// The ladder update of every lane from this iteration's indicators.
#[inline(always)]
fn adapt_ladder<const L: usize>(
    ladder: &mut [[f64; L]],
    indicator: &[[bool; L]],
    rules: &LaneRules,
    gamma: f64,
) {
    let p = ladder.len();
    let (up, down) = growth_factors(rules.target_rate, gamma);
    let mut grow_below = [0.0f64; L];
    for i in 0..L {
        grow_below[i] = if indicator[0][i] { up } else { down };
    }
    match rules.ladder_update {
        LadderUpdate::Jacobi => {
            let mut guard = ([0.0f64; L], [0.0f64; L]);
            for i in 0..L {
                (guard.0[i], guard.1[i]) = jacobi_guard(ladder[0][i], ladder[p - 1][i]);
            }
            // The previous iteration's rate of the level below.
            let mut below = ladder[0];
            for l in 1..p - 1 {
                let (here, rest) = ladder[l..].split_at_mut(1);
                let old = here[0];
                let levels = (&below, &mut here[0], &rest[0]);
                jacobi_lanes(
                    levels,
                    &indicator[l],
                    &mut grow_below,
                    (up, down),
                    (&guard.0, &guard.1),
                );
                below = old;
            }
        }
        LadderUpdate::InPlace => {
            for l in 1..p - 1 {
                let (lower, upper) = ladder.split_at_mut(l);
                let (here, rest) = upper.split_at_mut(1);
                let levels = (&lower[l - 1], &mut here[0], &rest[0]);
                in_place_lanes(levels, &indicator[l], &mut grow_below, (up, down));
            }
        }
    }
}

/// [`jacobi_level`] of one inner level in every lane, each lane within its guard.
#[inline(always)]
fn jacobi_lanes<const L: usize>(
    (below, here, above): (&[f64; L], &mut [f64; L], &[f64; L]),
    indicator: &[bool; L],
    grow_below: &mut [f64; L],
    (up, down): (f64, f64),
    (floor, ceiling): (&[f64; L], &[f64; L]),
) {
    for i in 0..L {
        let grow_above = if indicator[i] { up } else { down };
        let growth = (grow_below[i], grow_above);
        here[i] = jacobi_level(below[i], here[i], above[i], growth, (floor[i], ceiling[i]));
        grow_below[i] = grow_above;
    }
}

/// [`in_place_level`] of one inner level in every lane.
#[inline(always)]
fn in_place_lanes<const L: usize>(
    (below, here, above): (&[f64; L], &mut [f64; L], &[f64; L]),
    indicator: &[bool; L],
    grow_below: &mut [f64; L],
    (up, down): (f64, f64),
) {
    for i in 0..L {
        let grow_above = if indicator[i] { up } else { down };
        here[i] = in_place_level(below[i], here[i], above[i], (grow_below[i], grow_above));
        grow_below[i] = grow_above;
    }
}

/// The authors' round-trip counting of this iteration in every lane:
/// [`crate::index::authors_pass`] on trip states stored by level. At step idx of their
/// walk level idx holds the replica now at idx + 1 if pair idx swapped, else the one
/// now at idx; both candidates are read and blended, so the lane loops vectorize.
#[inline(always)]
fn authors_pass<const L: usize>(
    trips: &mut [[TripState; L]],
    replica: &[[u32; L]],
    swapped: &[[bool; L]],
    stats: &mut [IndexStats; L],
    parity: u32,
) {
    let top = trips.len() - 1;
    let mut count = [0u32; L];
    for idx in 0..=top {
        if idx == 1 {
            mark(&mut trips[0], SEEN_BOTTOM);
        }
        if idx == top {
            mark(&mut trips[top], SEEN_TOP);
        }
        let keep = if idx == top { SEEN_TOP } else { 0 };
        if idx < top && pair_eligible(idx, parity) {
            let (lo, hi) = trips.split_at_mut(idx + 1);
            check_pair(
                idx as u32,
                &swapped[idx],
                (&mut lo[idx], &mut hi[0]),
                (&replica[idx], &replica[idx + 1]),
                &mut count,
            );
        } else {
            check_level(idx as u32, keep, &mut trips[idx], &replica[idx], &mut count);
        }
    }
    for (s, &c) in stats.iter_mut().zip(&count) {
        s.authors_round_trips += u64::from(c);
    }
}

/// Sets `bit` in every lane's trip state.
#[inline(always)]
fn mark<const L: usize>(trips: &mut [TripState; L], bit: TripState) {
    for t in trips.iter_mut() {
        *t |= bit;
    }
}

/// The authors' check of replica `idx` where level idx holds it (no swap of pair idx
/// this iteration).
#[inline(always)]
fn check_level<const L: usize>(
    idx: u32,
    keep: TripState,
    trips: &mut [TripState; L],
    replica: &[u32; L],
    count: &mut [u32; L],
) {
    for i in 0..L {
        let (hit, t) = authors_check(idx, replica[i], trips[i], keep);
        count[i] += u32::from(hit);
        trips[i] = t;
    }
}

/// The same where pair (idx, idx + 1) may have swapped: the replica checked is the one
/// now at idx + 1 in the lanes that swapped, the one at idx in the others. `idx` is
/// below the top, so the marks clear to nothing.
#[inline(always)]
fn check_pair<const L: usize>(
    idx: u32,
    swapped: &[bool; L],
    (t_lo, t_hi): (&mut [TripState; L], &mut [TripState; L]),
    (r_lo, r_hi): (&[u32; L], &[u32; L]),
    count: &mut [u32; L],
) {
    for i in 0..L {
        let sw = swapped[i];
        let t = if sw { t_hi[i] } else { t_lo[i] };
        let r = if sw { r_hi[i] } else { r_lo[i] };
        let (hit, cleared) = authors_check(idx, r, t, 0);
        count[i] += u32::from(hit);
        t_lo[i] = if hit && !sw { cleared } else { t_lo[i] };
        t_hi[i] = if hit && sw { cleared } else { t_hi[i] };
    }
}

/// Exchanges `a[i]` and `b[i]` where `mask[i]`.
#[inline(always)]
pub fn blend<T: Copy, const L: usize>(mask: &[bool; L], a: &mut [T; L], b: &mut [T; L]) {
    // New values first, then both stores: written as two in-place selects, the
    // exchange was miscompiled in AVX2 builds (level l + 1 kept its old values).
    let (old_a, old_b) = (*a, *b);
    for i in 0..L {
        a[i] = if mask[i] { old_b[i] } else { old_a[i] };
        b[i] = if mask[i] { old_a[i] } else { old_b[i] };
    }
}
