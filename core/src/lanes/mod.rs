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
//! the lanes that the compiler turns into vector instructions, without a branch per
//! lane: flags are lane masks ([`ON`] or 0 in a `u32`, the shape of a vector
//! comparison's result), swaps exchange bits with `(a ^ b) & mask`, the replica index
//! and its trip state share one word ([`pack`]), counters run in `u32` lanes that are
//! flushed into `u64` totals long before they could wrap ([`PairLanes`]), and the
//! round-trip book-keeping looks only at the two levels where an arrival can change a
//! trip (0 and P − 1). The code compiles to straight vector code for L = 8, 16 and 32.
//!
//! The arithmetic of each rule is nrpt-core's one definition, applied lane by lane:
//! [`buffered_indicator`]'s comparison for the swap test, [`jacobi_level`] /
//! [`in_place_level`] for the ladder, [`adapt_buffer`] for the buffer; the round-trip
//! book-keeping is [`observe_arrival`] and [`authors_check`] written on the packed
//! words (the tests compare them). So a lane computes the bits the scalar driver
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

mod counts;
mod trips;

pub use counts::{FLUSH_EVERY, PairLanes};
pub use trips::{REPLICA_MASK, TRIP_SHIFT, pack, replica_of, trip_of};
use trips::{Tally, arrive_bottom, arrive_top, authors_pass};

use crate::adapt::{adapt_buffer, growth_factors, in_place_level, jacobi_guard, jacobi_level};
use crate::driver::TemperingOptions;
use crate::error::Error;
use crate::float::Float;
use crate::index::IndexStats;
#[cfg(doc)]
use crate::index::{authors_check, observe_arrival};
use crate::rules::{BufferProjection, LadderUpdate, PairEnergies, SweepOrder};
use crate::swap::SwapRule;
#[cfg(doc)]
use crate::swap::buffered_indicator;
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

/// A lane's flag set: every bit of its `u32` (the result of a vector comparison).
pub const ON: u32 = u32::MAX;

/// `ON` where `b`, else 0.
#[inline(always)]
pub const fn mask(b: bool) -> u32 {
    (b as u32).wrapping_neg()
}

/// The caller's states, stored by level: the lane exchange asks it to exchange the
/// states of two levels in the lanes whose pair swaps. Implement it on a struct of
/// mutable borrows with `#[inline(always)]`, so that the exchange compiles into the
/// caller's vectorized loop (a closure would stay a call, compiled without the
/// caller's instruction set); [`swap_where`] and [`swap_where_f32`] do the exchange.
pub trait LaneStates<const L: usize> {
    /// Exchanges the states of levels `level` and `level + 1` in the lanes where `mask`
    /// is [`ON`] (the others are 0).
    fn swap_levels(&mut self, level: usize, mask: &[u32; L]);
}

/// No states (an exchange of indices alone, as in tests).
impl<const L: usize> LaneStates<L> for () {
    #[inline(always)]
    fn swap_levels(&mut self, _: usize, _: &[u32; L]) {}
}

/// The exchange state of L ensembles of P replicas, stored by level, over buffers the
/// caller owns. Lengths: P for `energies`, `ladder` and `replica`; P − 1 for `gates`,
/// `indicator`, `swapped` and `pairs`. Flags are lane masks: [`ON`] or 0.
#[derive(Debug)]
pub struct LaneExchange<'a, F, const L: usize> {
    /// Energy of the replica at each level, from this iteration's exploration (not
    /// moved by the swaps: after [`LaneExchange::run`] the swapped pairs' energies
    /// belong to the other level).
    pub energies: &'a [[F; L]],
    /// Learning rate of each level.
    pub ladder: &'a mut [[f64; L]],
    /// The replica at each level and its trip state, packed ([`pack`]).
    pub replica: &'a mut [[u32; L]],
    /// Gate of each pair (`ON` = open).
    pub gates: &'a mut [[u32; L]],
    /// Output: swap indicator of each pair this iteration.
    pub indicator: &'a mut [[u32; L]],
    /// Output: whether each pair swapped this iteration.
    pub swapped: &'a mut [[u32; L]],
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
    /// states of the levels that swap (the packed replica words are exchanged here).
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
        if is_window_start(k, rules.window) {
            for g in self.gates.iter_mut() {
                *g = [ON; L];
            }
        }
        let parity = window_parity(k, rules.window);
        // The first eligible pair: pairs first, first + 2, … may swap.
        let first = 1 - parity as usize;
        let mut buffer = [F::ZERO; L];
        for i in 0..L {
            buffer[i] = F::from_f64(self.buffer[i]);
        }
        let mut tally = Tally::new();
        let mut count = [0u32; L];
        let mut finite_below = finite(&self.energies[0], &mut tally.nonfinite);
        for l in 0..top {
            let finite_above = finite(&self.energies[l + 1], &mut tally.nonfinite);
            sweep_pair(
                (&self.energies[l], &self.energies[l + 1]),
                (&finite_below, &finite_above),
                &buffer,
                pair_eligible(l, parity).then_some(&mut self.gates[l]),
                (&mut self.indicator[l], &mut self.swapped[l]),
                &mut self.pairs[l],
                &mut count,
            );
            finite_below = finite_above;
        }
        // Eligible pairs are disjoint: their swaps commute.
        for l in (first..top).step_by(2) {
            let m = self.swapped[l];
            states.swap_levels(l, &m);
            let (lo, hi) = self.replica.split_at_mut(l + 1);
            swap_where(&m, &mut lo[l], &mut hi[0]);
        }
        // Arrivals change a trip only at the ends: level 0 (by pair 0) and P − 1.
        if pair_eligible(0, parity) {
            arrive_bottom(&mut self.replica[0], &self.swapped[0], &mut tally);
        }
        if pair_eligible(top - 1, parity) {
            arrive_top(&mut self.replica[top], &self.swapped[top - 1]);
        }
        authors_pass(self.replica, self.swapped, parity, &mut tally.authors);
        tally.add_to(self.stats);
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

/// The mask of the finite energies of a level; counts the others in `bad`.
#[inline(always)]
fn finite<F: Float, const L: usize>(e: &[F; L], bad: &mut [u32; L]) -> [u32; L] {
    let mut m = [0u32; L];
    for i in 0..L {
        m[i] = mask(e[i].is_finite());
        bad[i] = bad[i].wrapping_sub(!m[i]);
    }
    m
}

/// Indicators, attempts and swap decisions of one pair in every lane: the buffered
/// indicator `e_hot + buffer < e_cold` between finite energies. `gates` is the pair's
/// gates when the pair is eligible this iteration (`None`: it cannot swap); the lanes
/// that swap close theirs.
#[inline(always)]
fn sweep_pair<F: Float, const L: usize>(
    (cold, hot): (&[F; L], &[F; L]),
    (finite_cold, finite_hot): (&[u32; L], &[u32; L]),
    buffer: &[F; L],
    gates: Option<&mut [u32; L]>,
    (indicator, swapped): (&mut [u32; L], &mut [u32; L]),
    pc: &mut PairLanes<L>,
    count: &mut [u32; L],
) {
    let mut bad = [0u32; L];
    for i in 0..L {
        let both = finite_cold[i] & finite_hot[i];
        indicator[i] = mask(hot[i] + buffer[i] < cold[i]) & both;
        bad[i] = !both;
        count[i] = count[i].wrapping_sub(indicator[i]);
    }
    match gates {
        Some(gates) => {
            let attempt = *gates;
            for i in 0..L {
                swapped[i] = attempt[i] & indicator[i];
                // A swap needs the gate open: closing it flips the gate's bits.
                gates[i] = attempt[i] ^ swapped[i];
            }
            pc.add(indicator, Some((&attempt, swapped)), &bad);
        }
        None => {
            *swapped = [0; L];
            pc.add(indicator, None, &bad);
        }
    }
}

/// The ladder update of every lane from this iteration's indicators.
#[inline(always)]
fn adapt_ladder<const L: usize>(
    ladder: &mut [[f64; L]],
    indicator: &[[u32; L]],
    rules: &LaneRules,
    gamma: f64,
) {
    let p = ladder.len();
    let (up, down) = growth_factors(rules.target_rate, gamma);
    let mut grow_below = [0.0f64; L];
    for i in 0..L {
        grow_below[i] = if indicator[0][i] != 0 { up } else { down };
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
    indicator: &[u32; L],
    grow_below: &mut [f64; L],
    (up, down): (f64, f64),
    (floor, ceiling): (&[f64; L], &[f64; L]),
) {
    for i in 0..L {
        let grow_above = if indicator[i] != 0 { up } else { down };
        let growth = (grow_below[i], grow_above);
        here[i] = jacobi_level(below[i], here[i], above[i], growth, (floor[i], ceiling[i]));
        grow_below[i] = grow_above;
    }
}

/// [`in_place_level`] of one inner level in every lane.
#[inline(always)]
fn in_place_lanes<const L: usize>(
    (below, here, above): (&[f64; L], &mut [f64; L], &[f64; L]),
    indicator: &[u32; L],
    grow_below: &mut [f64; L],
    (up, down): (f64, f64),
) {
    for i in 0..L {
        let grow_above = if indicator[i] != 0 { up } else { down };
        here[i] = in_place_level(below[i], here[i], above[i], (grow_below[i], grow_above));
        grow_below[i] = grow_above;
    }
}

/// Exchanges `a[i]` and `b[i]` where `mask[i]` is [`ON`] (0 elsewhere), by the bits.
#[inline(always)]
pub fn swap_where<const L: usize>(mask: &[u32; L], a: &mut [u32; L], b: &mut [u32; L]) {
    for i in 0..L {
        let d = (a[i] ^ b[i]) & mask[i];
        a[i] ^= d;
        b[i] ^= d;
    }
}

/// [`swap_where`] for `f32` lanes (their bits are exchanged, NaN payloads included).
#[inline(always)]
pub fn swap_where_f32<const L: usize>(mask: &[u32; L], a: &mut [f32; L], b: &mut [f32; L]) {
    for i in 0..L {
        let (x, y) = (a[i].to_bits(), b[i].to_bits());
        let d = (x ^ y) & mask[i];
        a[i] = f32::from_bits(x ^ d);
        b[i] = f32::from_bits(y ^ d);
    }
}
