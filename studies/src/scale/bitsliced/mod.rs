//! The index process of Lemma 1, bit-sliced: 64 ensembles in the bits of one 64-bit
//! word, every pair's 64 swap indicators drawn together by a bit-serial comparison of
//! random words.
//!
//! The process is nrpt-core's [`IndexProcess`](nrpt_core::bernoulli::IndexProcess):
//! the windowed DEO sweep (pair l eligible when (l + 1) mod 2 is the window's parity,
//! all gates open at the start of a window, a pair swaps at most once per window),
//! with the swap indicator of pair l a Bernoulli(s_l) variable, exactly P = t/2³² for
//! `t = indicator_threshold(s_l)`, and the standard round trips 0 → P − 1 → 0 and
//! restarts of [`nrpt_core::index`]. What is stored is what the round trips need:
//!
//! - per level, two bit planes, the phase (0 to 3) of nrpt-core's `TripState` of the
//!   replica there (bit e of a plane belongs to ensemble e); with
//!   [`BitGroup::with_replicas`], ⌈log₂ P⌉ more planes hold the replica's index, so
//!   that the permutation can be read back;
//! - per pair, one word of gates (W > 1).
//!
//! A swap of the ensembles in mask m is `x = (a ^ b) & m; a ^= x; b ^= x` on each plane
//! of the two levels. The pairs eligible at one iteration are every other pair, so the
//! planes are stored by the parity of their level: pair 2i + c joins level 2i + c
//! (parity c, place i) and level 2i + c + 1 (parity 1 − c, place i + c), and eight
//! eligible pairs are eight consecutive words on each side: a batch, whose decisions,
//! exchanges and gates are one lane loop over `[u64; 8]` that compilers vectorize
//! (AVX-512: one register per plane). A batch whose gates are all closed costs one load
//! and a test; pairs that are not eligible cost nothing.
//!
//! Indicators come from a bit-serial comparison ([`indicator_lanes`]: bit e of word j
//! is digit j of ensemble e's uniform, compared with the digits of t), eight pairs in
//! lockstep, pair i of a batch reading the words of the i-th of eight xoshiro256++
//! generators of the group (Blackman and Vigna; eleven shifts, rotations, additions and
//! exclusive ors per word, eight generators in one AVX-512 register), seeded from
//! Philox4x32-10 with the seed and the group's index: the same bits for a seed whatever
//! the threads, since a group runs on one thread at a time. They are not the bits of
//! nrpt-core's `IndexProcess` or of the SIMD-lanes simulator [`super::simulator`], which
//! agree with this one statistically, as the tests check. Only ensembles whose decision
//! matters (eligible pair, gate open) are decided.
//!
//! Round trips and restarts happen at level 0 only, at most one per ensemble and
//! iteration: their masks (`m & hi & !lo` and `m & hi`) go into vertical bit-sliced
//! counters, eight planes that count to 255 for all 64 ensembles at once (a ripple
//! carry, 16 operations), added to the per-ensemble totals every 255 iterations.

// Lane loops index several arrays at once, which is what the compiler vectorizes.
#![allow(clippy::needless_range_loop)]

mod indicator;
#[cfg(test)]
mod tests;
mod words;

use nrpt_core::bernoulli::indicator_threshold;
use nrpt_sampling::engine::EngineError;
use nrpt_sampling::engine::simd::Simd;

use indicator::indicator_batch;
pub use indicator::{indicator_lanes, rounds};
use words::{WIDTH, Words8};

use super::simulator::{LaneTrips, Steps, run_on, run_on_or_stop};

/// Ensembles per group: one per bit of a word.
pub const ENSEMBLES: usize = 64;

/// The most chains of a group: the replicas nrpt-core allows one ensemble
/// ([`nrpt_core::rng::MAX_REPLICAS`]).
pub const MAX_CHAINS: usize = nrpt_core::rng::MAX_REPLICAS;

/// Why a group cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BitslicedError {
    /// Fewer than two chains (no pair) or more than [`MAX_CHAINS`].
    #[error("the index process needs between 2 and {MAX_CHAINS} chains, got {chains}")]
    Chains {
        /// P asked for (the rates given plus one).
        chains: usize,
    },
    /// A window of 0 iterations.
    #[error("the window must be at least 1 iteration")]
    ZeroWindow,
}

/// Where the indicators of a batch come from: the bit-serial comparison of random
/// words in runs, a given function in the tests.
pub(crate) trait Indicators {
    /// The ensembles of `undecided[i]` whose indicator is 1 for pair
    /// `first_pair + 2i` at iteration `k` (threshold `t[i]`; `rounds` the most
    /// [`rounds`] of the batch).
    fn decide(
        &mut self,
        k: u64,
        first_pair: usize,
        undecided: [u64; WIDTH],
        t: &[u64; WIDTH],
        rounds: u32,
    ) -> [u64; WIDTH];
}

/// The bit-serial comparison over the group's generators.
struct BitSerial<'a>(&'a mut Words8);

impl Indicators for BitSerial<'_> {
    #[inline(always)]
    fn decide(
        &mut self,
        _k: u64,
        _first_pair: usize,
        undecided: [u64; WIDTH],
        t: &[u64; WIDTH],
        rounds: u32,
    ) -> [u64; WIDTH] {
        indicator_batch(t, undecided, rounds, || self.0.next())
    }
}

/// Everything of a group but its generators: the planes, gates, thresholds, counts.
#[derive(Clone, Debug)]
struct State {
    p: usize,
    window: u32,
    /// Phase bit 0 of the replica at each level, by the level's parity:
    /// `lo[c][i]` is level 2i + c.
    lo: [Vec<u64>; 2],
    /// Phase bit 1, laid out as `lo`.
    hi: [Vec<u64>; 2],
    /// The bits of the replica's index (with replicas), `ids[c][bit][i]`.
    ids: [Vec<Vec<u64>>; 2],
    /// Gates of pair 2i + c at `gates[c][i]`.
    gates: [Vec<u64>; 2],
    /// Indicator thresholds of pair 2i + c at `thresholds[c][i]`, 0 past the last pair.
    thresholds: [Vec<u64>; 2],
    /// The most [`rounds`] of each batch of 8 pairs of each class.
    rounds: [Vec<u32>; 2],
    /// Round trips and restarts per ensemble, flushed from the counters below.
    round_trips: [u64; ENSEMBLES],
    restarts: [u64; ENSEMBLES],
    /// Round trips and restarts since the last flush, bit-sliced: plane b holds bit b
    /// of every ensemble's count.
    pending: [Counter; 2],
    /// Iterations until the pending counts are flushed (they hold at most 255).
    until_flush: u32,
    iteration: u64,
    /// `iteration mod window` and the window's parity, kept as counters (nrpt-core's
    /// `is_window_start` and `window_parity` divide, which costs as much as a batch at
    /// small P).
    in_window: u32,
    parity: u32,
}

/// 64 ensembles of the index process, bit-sliced (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct BitGroup {
    state: State,
    words: Words8,
}

/// Places per parity class of levels (and of pairs), a whole number of batches plus
/// one word, so that every batch of either class reads whole batches of both.
fn places(p: usize) -> usize {
    // Class 0 has P div 2 pairs, class 1 (P − 1) div 2: at most one batch fewer.
    WIDTH * batches(p) + WIDTH
}

/// Batches of 8 pairs per class (the larger class, 0, decides).
fn batches(p: usize) -> usize {
    (p / 2).div_ceil(WIDTH).max(1)
}

/// Bits of a replica index of P chains (at least 1).
fn id_bits(p: usize) -> usize {
    (usize::BITS - (p - 1).leading_zeros()).max(1) as usize
}

impl BitGroup {
    /// Group `group` (ensembles 64·group … 64·group + 63) of P = `rates.len() + 1`
    /// chains, window `window` and swap probability `rates[l]` for pair l (NaN and
    /// values ≤ 0 act as 0, values ≥ 1 as 1), from the identity permutation; its
    /// random words from `seed` and `group`.
    pub fn new(rates: &[f64], window: u32, seed: u32, group: u32) -> Result<Self, BitslicedError> {
        Self::build(rates, window, seed, group, false)
    }

    /// [`BitGroup::new`], also keeping the replica at each level (⌈log₂ P⌉ planes more
    /// per level, exchanged with the others) so that [`BitGroup::level_of`] can give
    /// the permutation. The same bits otherwise.
    pub fn with_replicas(
        rates: &[f64],
        window: u32,
        seed: u32,
        group: u32,
    ) -> Result<Self, BitslicedError> {
        Self::build(rates, window, seed, group, true)
    }

    fn build(
        rates: &[f64],
        window: u32,
        seed: u32,
        group: u32,
        replicas: bool,
    ) -> Result<Self, BitslicedError> {
        let p = rates.len() + 1;
        if !(2..=MAX_CHAINS).contains(&p) {
            return Err(BitslicedError::Chains { chains: p });
        }
        if window == 0 {
            return Err(BitslicedError::ZeroWindow);
        }
        let n = places(p);
        let mut lo = [vec![0u64; n], vec![0u64; n]];
        let mut hi = [vec![0u64; n], vec![0u64; n]];
        // Phases at the start (nrpt-core's `initial_trip_state`): 1 at level 0 (bits
        // lo), 3 at the top (lo and hi), 0 between.
        lo[0][0] = !0;
        let top = p - 1;
        lo[top % 2][top / 2] = !0;
        hi[top % 2][top / 2] = !0;
        let ids = if replicas {
            std::array::from_fn(|c| {
                (0..id_bits(p))
                    .map(|bit| {
                        (0..n)
                            .map(|i| {
                                let level = 2 * i + c;
                                if level < p && (level >> bit) & 1 == 1 {
                                    !0
                                } else {
                                    0
                                }
                            })
                            .collect()
                    })
                    .collect()
            })
        } else {
            [Vec::new(), Vec::new()]
        };
        let thresholds: [Vec<u64>; 2] = std::array::from_fn(|c| {
            (0..n - WIDTH)
                .map(|i| rates.get(2 * i + c).map_or(0, |&r| indicator_threshold(r)))
                .collect()
        });
        let rounds = std::array::from_fn(|c| {
            thresholds[c]
                .chunks(WIDTH)
                .map(|b| b.iter().map(|&t| rounds(t)).max().unwrap_or(0))
                .collect()
        });
        Ok(BitGroup {
            state: State {
                p,
                window,
                lo,
                hi,
                ids,
                gates: [vec![!0; n - WIDTH], vec![!0; n - WIDTH]],
                thresholds,
                rounds,
                round_trips: [0; ENSEMBLES],
                restarts: [0; ENSEMBLES],
                pending: [[0; COUNTER_BITS]; 2],
                until_flush: FLUSH_EVERY,
                iteration: 0,
                in_window: 0,
                parity: 0,
            },
            words: Words8::seeded(seed, group),
        })
    }

    /// The bytes of one group of P = `chains` chains (with the replicas' planes when
    /// `replicas`): its planes, gates and thresholds.
    pub fn bytes(chains: usize, replicas: bool) -> u64 {
        let p = chains.max(2);
        let planes = 2 + if replicas { id_bits(p) as u64 } else { 0 };
        let (places, batches) = (places(p) as u64, batches(p) as u64);
        // Per class: the planes of its levels, a gate and a threshold per pair, the
        // rounds of each batch.
        let class = places
            .saturating_mul(8 * planes)
            .saturating_add(batches.saturating_mul(16 * WIDTH as u64 + 4));
        (std::mem::size_of::<Self>() as u64).saturating_add(2 * class)
    }

    /// Runs `n` iterations with the instruction set `simd` (resolved for this
    /// processor by [`Simd::resolve`]); every choice gives the same bits.
    pub fn run(&mut self, n: u64, simd: Simd) {
        run_on(self, n, simd);
    }

    /// Runs `n` iterations as [`BitGroup::run`] does, in pieces of about
    /// [`POLL_PAIR_UPDATES`](super::simulator::POLL_PAIR_UPDATES) pair-updates per
    /// ensemble, asking `stop()` before each: the same bits as one call of `run`, or
    /// [`EngineError::Interrupted`] once `stop()` says so.
    pub fn run_or_stop(
        &mut self,
        n: u64,
        simd: Simd,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<(), EngineError> {
        run_on_or_stop(self, n, simd, stop)
    }

    /// Runs `n` iterations with the indicators of `source` (the tests' reference
    /// indicators), portable code.
    #[cfg(test)]
    pub(crate) fn run_with<S: Indicators>(&mut self, n: u64, source: &mut S) {
        for _ in 0..n {
            step(&mut self.state, source);
        }
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.state.iteration
    }

    /// P.
    pub fn chains(&self) -> usize {
        self.state.p
    }

    /// Round trips and restarts of ensemble `lane` of the group (0 to 63; `None`
    /// beyond).
    pub fn trips(&self, lane: usize) -> Option<LaneTrips> {
        let s = &self.state;
        Some(LaneTrips {
            round_trips: s.round_trips.get(lane)? + pending_of(&s.pending[0], lane),
            restarts: s.restarts.get(lane)? + pending_of(&s.pending[1], lane),
        })
    }

    /// Round trips and restarts of all 64 ensembles together.
    pub fn total_trips(&self) -> LaneTrips {
        let s = &self.state;
        let pending = |c: &Counter| {
            c.iter()
                .enumerate()
                .map(|(b, plane)| u64::from(plane.count_ones()) << b)
                .sum::<u64>()
        };
        LaneTrips {
            round_trips: s.round_trips.iter().sum::<u64>() + pending(&s.pending[0]),
            restarts: s.restarts.iter().sum::<u64>() + pending(&s.pending[1]),
        }
    }

    /// The level of every replica of ensemble `lane`: `None` for a lane past 63 or a
    /// group built without [`BitGroup::with_replicas`].
    pub fn level_of(&self, lane: usize) -> Option<Vec<u32>> {
        let s = &self.state;
        if lane >= ENSEMBLES || s.ids[0].is_empty() {
            return None;
        }
        let mut of = vec![0u32; s.p];
        for level in 0..s.p {
            let (c, i) = (level % 2, level / 2);
            let replica = s.ids[c].iter().enumerate().fold(0usize, |r, (bit, plane)| {
                r | ((plane[i] >> lane & 1) as usize) << bit
            });
            *of.get_mut(replica)? = level as u32;
        }
        Some(of)
    }
}

/// `x = (a ^ b) & m; a ^= x; b ^= x`: exchanges a and b in the ensembles of m.
#[inline(always)]
fn exchange(a: &mut [u64; WIDTH], b: &mut [u64; WIDTH], m: &[u64; WIDTH]) {
    // Both loaded, both computed, then both stored: one vector operation each (in
    // place, the compiler cannot tell that a and b do not overlap after inlining, and
    // goes word by word).
    let (old_a, old_b) = (*a, *b);
    let x: [u64; WIDTH] = std::array::from_fn(|i| (old_a[i] ^ old_b[i]) & m[i]);
    *a = std::array::from_fn(|i| old_a[i] ^ x[i]);
    *b = std::array::from_fn(|i| old_b[i] ^ x[i]);
}

/// Bits of the pending counters.
const COUNTER_BITS: usize = 8;
/// Iterations between flushes: at most one event per ensemble and iteration, so the
/// pending counts stay below 2⁸.
const FLUSH_EVERY: u32 = (1 << COUNTER_BITS) - 1;

/// A vertical counter of 64 ensembles: plane b holds bit b of each one's count.
type Counter = [u64; COUNTER_BITS];

/// Adds one to the count of every ensemble of `mask` (a ripple carry through the
/// planes; the count must stay below 2⁸).
#[inline(always)]
fn add(counter: &mut Counter, mask: u64) {
    let mut carry = mask;
    for plane in counter.iter_mut() {
        let next = *plane & carry;
        *plane ^= carry;
        carry = next;
    }
}

/// The count of ensemble `lane` in `counter`.
fn pending_of(counter: &Counter, lane: usize) -> u64 {
    counter
        .iter()
        .enumerate()
        .map(|(b, plane)| ((plane >> lane) & 1) << b)
        .sum()
}

/// Moves the pending counts into the per-ensemble totals.
fn flush(counter: &mut Counter, totals: &mut [u64; ENSEMBLES]) {
    for (b, plane) in counter.iter().enumerate() {
        for (lane, total) in totals.iter_mut().enumerate() {
            *total += ((plane >> lane) & 1) << b;
        }
    }
    *counter = [0; COUNTER_BITS];
}

/// One iteration: the eligible pairs' batches, then the arrivals at the two ends.
#[inline(always)]
fn step<S: Indicators>(s: &mut State, source: &mut S) {
    let k = s.iteration;
    let start = s.in_window == 0;
    // Pair l is eligible when (l + 1) mod 2 is the window's parity: class c = l mod 2.
    let c = (1 - s.parity) as usize;
    let gated = s.window > 1;
    let top_pair = s.p - 2;
    let (top_batch, top_lane) = ((top_pair / 2) / WIDTH, (top_pair / 2) % WIDTH);
    let mut m_bottom = 0u64;
    let mut m_top = 0u64;
    {
        // Lower levels have the class's parity (place i), upper ones the other
        // (place i + c).
        let (lo_a, lo_b) = by_class(&mut s.lo, c);
        let (hi_a, hi_b) = by_class(&mut s.hi, c);
        let (la, _) = lo_a.as_chunks_mut::<WIDTH>();
        let (lb, _) = lo_b.as_chunks_mut::<WIDTH>();
        let (ha, _) = hi_a.as_chunks_mut::<WIDTH>();
        let (hb, _) = hi_b.as_chunks_mut::<WIDTH>();
        let (gates, _) = s.gates[c].as_chunks_mut::<WIDTH>();
        let (ts, _) = s.thresholds[c].as_chunks::<WIDTH>();
        let batches = gates
            .iter_mut()
            .zip(ts)
            .zip(&s.rounds[c])
            .zip(la.iter_mut().zip(lb.iter_mut()))
            .zip(ha.iter_mut().zip(hb.iter_mut()));
        for (b, ((((g, t), &rounds), (la, lb)), (ha, hb))) in batches.enumerate() {
            let mut und = [0u64; WIDTH];
            for i in 0..WIDTH {
                let open = if start { !0 } else { g[i] };
                und[i] = open & 0u64.wrapping_sub(u64::from(t[i] != 0));
            }
            if und.iter().fold(0, |a, &u| a | u) == 0 {
                continue;
            }
            let m = source.decide(k, 2 * WIDTH * b + c, und, t, rounds);
            if gated {
                for i in 0..WIDTH {
                    g[i] = und[i] & !m[i];
                }
            }
            exchange(la, lb, &m);
            exchange(ha, hb, &m);
            if !s.ids[0].is_empty() {
                exchange_ids(&mut s.ids, c, b, &m);
            }
            if c == 0 && b == 0 {
                m_bottom = m[0];
            }
            if c == top_pair % 2 && b == top_batch {
                m_top = m[top_lane];
            }
        }
    }
    // Arrivals at level 0 (pair 0 is in class 0): a restart from phases 2 and 3 (hi),
    // a round trip from phase 2 (hi, not lo); the phase becomes 1.
    if m_bottom != 0 {
        let (lo, hi) = (&mut s.lo[0][0], &mut s.hi[0][0]);
        let restart = m_bottom & *hi;
        add(&mut s.pending[0], restart & !*lo);
        add(&mut s.pending[1], restart);
        *lo |= m_bottom;
        *hi &= !m_bottom;
    }
    // Arrivals at the top: phase 1 becomes 2, 0 becomes 3, 2 and 3 stay (hi set, lo
    // flipped where hi was clear).
    if m_top != 0 {
        let top = s.p - 1;
        let (lo, hi) = (&mut s.lo[top % 2][top / 2], &mut s.hi[top % 2][top / 2]);
        *lo ^= m_top & !*hi;
        *hi |= m_top;
    }
    s.until_flush -= 1;
    if s.until_flush == 0 {
        let [trips, restarts] = &mut s.pending;
        flush(trips, &mut s.round_trips);
        flush(restarts, &mut s.restarts);
        s.until_flush = FLUSH_EVERY;
    }
    s.iteration += 1;
    s.in_window += 1;
    if s.in_window == s.window {
        s.in_window = 0;
        s.parity ^= 1;
    }
}

/// The planes of the class-c pairs' lower levels (parity c, from place 0) and upper
/// levels (parity 1 − c, from place c).
#[inline(always)]
fn by_class(planes: &mut [Vec<u64>; 2], c: usize) -> (&mut [u64], &mut [u64]) {
    let [even, odd] = planes;
    if c == 0 {
        (even, odd)
    } else {
        (odd, even.get_mut(1..).unwrap_or_default())
    }
}

/// The exchanges of batch `b` of class c on the replicas' planes.
fn exchange_ids(ids: &mut [Vec<Vec<u64>>; 2], c: usize, b: usize, m: &[u64; WIDTH]) {
    let [even, odd] = ids;
    let at = WIDTH * b;
    for (e, o) in even.iter_mut().zip(odd.iter_mut()) {
        let (lower, upper) = if c == 0 { (e, o) } else { (o, e) };
        let (Some(lower), Some(upper)) = (
            lower.get_mut(at..at + WIDTH),
            upper.get_mut(at + c..at + c + WIDTH),
        ) else {
            continue;
        };
        for i in 0..WIDTH {
            let x = (lower[i] ^ upper[i]) & m[i];
            lower[i] ^= x;
            upper[i] ^= x;
        }
    }
}

impl Steps for BitGroup {
    #[inline(always)]
    fn steps(&mut self, n: u64) {
        let mut source = BitSerial(&mut self.words);
        for _ in 0..n {
            step(&mut self.state, &mut source);
        }
    }

    fn chains(&self) -> usize {
        self.state.p
    }
}
