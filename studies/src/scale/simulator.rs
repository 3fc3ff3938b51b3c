//! The index process of Lemma 1 for many ensembles at once: swap indicators drawn as
//! independent Bernoulli variables, `N` ensembles per group in SIMD lanes.
//!
//! It draws the same words and takes the same decisions as nrpt-core's
//! [`IndexProcess`](nrpt_core::bernoulli::IndexProcess) (the tests compare them run
//! for run): word l of the SWAP stream of (seed, ensemble, iteration) decides pair l,
//! eligible pairs with an open gate swap when the word is below the pair's
//! [`indicator_threshold`], and arrivals update the same standard round-trip states.
//! Levels hold the replica index and travel state of the replica there, so a swap is a
//! masked exchange per lane. DEO windows only (SEO uses nrpt-core's `IndexProcess`).
//! Scaling studies measure the standard round trips, so the authors' counting (a pass
//! over every level each iteration) is left out here.

#![allow(clippy::needless_range_loop)]

use nrpt_core::bernoulli::indicator_threshold;
use nrpt_core::index::{IndexStats, PHASE_MASK, initial_trip_state};
use nrpt_core::rng::{ENSEMBLE_WIDE, counter, philox4x32_10_keyed_lanes, streams};
use nrpt_core::window::{is_window_start, pair_eligible, window_parity};

use nrpt_sampling::engine::EngineError;
use nrpt_sampling::engine::simd::Simd;

/// Pair-updates per lane between two polls of [`Group::run_or_stop`]: a few
/// milliseconds of one core at any P (the step of P chains updates P − 1 pairs), so a
/// stop request is seen at once and polling costs nothing measurable.
pub const POLL_PAIR_UPDATES: u64 = 1 << 18;

/// An index simulator (this module's lanes, or the bit-sliced one) as the two share
/// their running: one function per instruction set, and runs in pieces that can stop.
pub(crate) trait Steps {
    /// Runs `n` iterations. Implementations are `#[inline(always)]`, so that each
    /// instruction set's function of [`run_on`] compiles them with its features.
    fn steps(&mut self, n: u64);

    /// Chains P: the pair-updates of an iteration are P − 1.
    fn chains(&self) -> usize;
}

/// Runs `n` iterations of `s` with the instruction set `simd` (resolved for this
/// processor by [`Simd::resolve`]); every choice gives the same bits.
pub(crate) fn run_on<S: Steps>(s: &mut S, n: u64, simd: Simd) {
    match simd.resolve() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `resolve` returns Auto only where AVX-512 F/DQ/VL/BW are present.
        Simd::Auto => unsafe { steps_avx512(s, n) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `resolve` returns Avx2 only where AVX2 is present.
        Simd::Avx2 => unsafe { steps_avx2(s, n) },
        _ => s.steps(n),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn steps_avx2<S: Steps>(s: &mut S, n: u64) {
    s.steps(n);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw")]
fn steps_avx512<S: Steps>(s: &mut S, n: u64) {
    s.steps(n);
}

/// Runs `n` iterations of `s` as [`run_on`] does, in pieces of about
/// [`POLL_PAIR_UPDATES`] pair-updates per ensemble, asking `stop()` before each:
/// [`EngineError::Interrupted`] once it says so. The pieces split nothing but the loop.
pub(crate) fn run_on_or_stop<S: Steps>(
    s: &mut S,
    n: u64,
    simd: Simd,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<(), EngineError> {
    let piece = (POLL_PAIR_UPDATES / s.chains().max(1) as u64).max(1);
    let mut left = n;
    while left > 0 {
        if stop() {
            return Err(EngineError::Interrupted);
        }
        let k = left.min(piece);
        run_on(s, k, simd);
        left -= k;
    }
    Ok(())
}

/// Ensembles per group of the benchmarks and tests (any power of two from 4 to 64
/// works: `Group<N>`).
pub const LANES: usize = 32;

/// Counters of every lane.
#[derive(Clone, Copy)]
struct Counts<const N: usize> {
    round_trips: [u64; N],
    restarts: [u64; N],
    swaps: [u64; N],
}

/// The standard round trips and restarts of one lane.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneTrips {
    /// Round trips 0 → P − 1 → 0.
    pub round_trips: u64,
    /// Arrivals at level 0 from the top.
    pub restarts: u64,
}

impl From<IndexStats> for LaneTrips {
    fn from(s: IndexStats) -> Self {
        LaneTrips {
            round_trips: s.round_trips,
            restarts: s.restarts,
        }
    }
}

/// `N` ensembles of the index process.
pub struct Group<const N: usize> {
    p: usize,
    window: u32,
    seed: u32,
    ensemble: [u32; N],
    threshold: Vec<u64>,
    replica: Vec<[u32; N]>,
    /// Standard round-trip phase of the replica at each level (the phase bits of
    /// nrpt-core's `TripState`, widened to 32 bits for the lanes).
    trips: Vec<[u32; N]>,
    gates: Vec<[bool; N]>,
    counts: Counts<N>,
    iteration: u64,
}

impl<const N: usize> Group<N> {
    /// The bytes of one group of P = `chains` chains: the struct, and per level its
    /// replica and travel state in every lane, per pair a threshold and a gate per lane.
    pub fn bytes(chains: usize) -> u64 {
        let (p, n) = (chains as u64, N as u64);
        (std::mem::size_of::<Self>() as u64)
            .saturating_add(p.saturating_mul(8 * n))
            .saturating_add(p.saturating_sub(1).saturating_mul(8 + n))
    }

    /// Ensembles `first .. first + N` with P = `rates.len() + 1` chains, window
    /// `window` ≥ 1 and swap probability `rates[l]` for pair l, from the identity.
    pub fn new(rates: &[f64], window: u32, seed: u32, first: u32) -> Self {
        let p = rates.len() + 1;
        let mut ensemble = [0u32; N];
        for (i, e) in ensemble.iter_mut().enumerate() {
            *e = first.wrapping_add(i as u32);
        }
        Group {
            p,
            window: window.max(1),
            seed,
            ensemble,
            threshold: rates.iter().map(|&r| indicator_threshold(r)).collect(),
            replica: (0..p).map(|l| [l as u32; N]).collect(),
            trips: (0..p)
                .map(|l| [u32::from(initial_trip_state(l, p - 1) & PHASE_MASK); N])
                .collect(),
            gates: vec![[true; N]; p - 1],
            counts: Counts {
                round_trips: [0; N],
                restarts: [0; N],
                swaps: [0; N],
            },
            iteration: 0,
        }
    }

    /// Runs `n` iterations with the instruction set `simd` (resolved for this
    /// processor by [`Simd::resolve`]); every choice gives the same bits.
    pub fn run(&mut self, n: u64, simd: Simd) {
        run_on(self, n, simd);
    }

    /// Runs `n` iterations as [`Group::run`] does, in pieces of about
    /// [`POLL_PAIR_UPDATES`] pair-updates per lane, asking `stop()` before each: the
    /// same bits as one call of `run` (the pieces split nothing but the loop), or
    /// [`EngineError::Interrupted`] once `stop()` says so.
    pub fn run_or_stop(
        &mut self,
        n: u64,
        simd: Simd,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<(), EngineError> {
        run_on_or_stop(self, n, simd, stop)
    }

    #[inline(always)]
    fn step(&mut self) {
        let k = self.iteration;
        if is_window_start(k, self.window) {
            for g in &mut self.gates {
                *g = [true; N];
            }
        }
        let parity = window_parity(k, self.window);
        let top = self.p - 1;
        let pairs = self.p - 1;
        for b in 0..pairs.div_ceil(4) {
            let c = counter(k, ENSEMBLE_WIDE, streams::SWAP, b as u32);
            let ctr = [[c[0]; N], [c[1]; N], [c[2]; N], [c[3]; N]];
            let w = philox4x32_10_keyed_lanes(ctr, self.seed, &self.ensemble);
            for (j, words) in w.iter().enumerate() {
                let l = 4 * b + j;
                if l >= pairs {
                    break;
                }
                if !pair_eligible(l, parity) {
                    continue;
                }
                let (lo, hi) = self.replica.split_at_mut(l + 1);
                let (tlo, thi) = self.trips.split_at_mut(l + 1);
                let mask = decide(
                    words,
                    self.threshold[l],
                    &mut self.gates[l],
                    &mut self.counts,
                );
                exchange(&mask, &mut lo[l], &mut hi[0]);
                exchange(&mask, &mut tlo[l], &mut thi[0]);
                arrive(&mut tlo[l], &mask, l, top, &mut self.counts);
                arrive(&mut thi[0], &mask, l + 1, top, &mut self.counts);
            }
        }
        self.iteration += 1;
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Round trips and restarts of lane `i`.
    pub fn trips(&self, i: usize) -> LaneTrips {
        LaneTrips {
            round_trips: self.counts.round_trips[i],
            restarts: self.counts.restarts[i],
        }
    }

    /// Swaps executed in lane `i`.
    pub fn swaps(&self, i: usize) -> u64 {
        self.counts.swaps[i]
    }

    /// Level of every replica in lane `i`.
    pub fn level_of(&self, i: usize) -> Vec<u32> {
        let mut of = vec![0; self.p];
        for (level, r) in self.replica.iter().enumerate() {
            of[r[i] as usize] = level as u32;
        }
        of
    }
}

/// Swap decisions of one eligible pair: indicator below the threshold and gate open.
#[inline(always)]
fn decide<const N: usize>(
    words: &[u32; N],
    threshold: u64,
    gates: &mut [bool; N],
    c: &mut Counts<N>,
) -> [bool; N] {
    let mut mask = [false; N];
    for i in 0..N {
        let swap = gates[i] & (u64::from(words[i]) < threshold);
        gates[i] &= !swap;
        mask[i] = swap;
        c.swaps[i] += u64::from(swap);
    }
    mask
}

/// Exchanges `a[i]` and `b[i]` where `mask[i]`.
#[inline(always)]
fn exchange<T: Copy, const N: usize>(mask: &[bool; N], a: &mut [T; N], b: &mut [T; N]) {
    // New values first, then both stores: written as two in-place selects, the
    // exchange was miscompiled in AVX2 builds (level l + 1 kept its old values).
    let (old_a, old_b) = (*a, *b);
    for i in 0..N {
        a[i] = if mask[i] { old_b[i] } else { old_a[i] };
        b[i] = if mask[i] { old_a[i] } else { old_b[i] };
    }
}

/// nrpt-core's `observe_arrival` for the replicas that just arrived at `level` (where
/// `mask`), lane by lane without branches. Phases: 0 no end yet, 1 last end 0, 2 top
/// after 0, 3 top fresh (see `nrpt_core::index`); inner levels change nothing.
#[inline(always)]
fn arrive<const N: usize>(
    trips: &mut [u32; N],
    mask: &[bool; N],
    level: usize,
    top: usize,
    c: &mut Counts<N>,
) {
    if level == 0 {
        arrive_bottom(trips, mask, c);
    } else if level == top {
        arrive_top(trips, mask);
    }
}

/// Arrivals at level 0: a restart from any top phase, a round trip from phase 2.
#[inline(always)]
fn arrive_bottom<const N: usize>(trips: &mut [u32; N], mask: &[bool; N], c: &mut Counts<N>) {
    for i in 0..N {
        let phase = trips[i];
        let restart = u64::from(phase >> 1); // phases 2 and 3
        let trip = u64::from(phase == 2);
        let m = u64::from(mask[i]);
        trips[i] = if mask[i] { 1 } else { phase };
        c.round_trips[i] += m * trip;
        c.restarts[i] += m * restart;
    }
}

/// Arrivals at the top: phase 1 becomes 2, phase 0 becomes 3.
#[inline(always)]
fn arrive_top<const N: usize>(trips: &mut [u32; N], mask: &[bool; N]) {
    for i in 0..N {
        let phase = trips[i];
        let next = if phase == 1 {
            2
        } else if phase == 0 {
            3
        } else {
            phase
        };
        trips[i] = if mask[i] { next } else { phase };
    }
}

impl<const N: usize> Steps for Group<N> {
    #[inline(always)]
    fn steps(&mut self, n: u64) {
        for _ in 0..n {
            self.step();
        }
    }

    fn chains(&self) -> usize {
        self.p
    }
}

/// The reference the lanes must equal: nrpt-core's scalar `IndexProcess` for one
/// ensemble, run `iterations` times; its totals and the level of every replica.
pub fn reference(
    rates: &[f64],
    window: u32,
    seed: u32,
    ensemble: u32,
    iterations: u64,
) -> (IndexStats, Vec<u32>) {
    use nrpt_core::bernoulli::IndexProcess;
    use nrpt_core::swap::SwapBuffers;
    use nrpt_core::window::Scheme;
    let p = rates.len() + 1;
    let (mut at, mut of, mut gates, mut flags, mut trips) = (
        vec![0u32; p],
        vec![0u32; p],
        vec![true; p - 1],
        vec![0u8; p - 1],
        vec![0u8; p],
    );
    let swap = SwapBuffers {
        replica_at: &mut at,
        level_of: &mut of,
        gates: &mut gates,
        flags: &mut flags,
    };
    match IndexProcess::new(
        Scheme::Deo {
            window: window.max(1),
        },
        swap,
        &mut trips,
        seed,
        ensemble,
    ) {
        Ok(mut ip) => {
            for _ in 0..iterations {
                ip.step(|l| rates[l]);
            }
            (ip.stats(), ip.level_of().to_vec())
        }
        // Only P < 2 fails, which `rates` of length ≥ 1 rules out.
        Err(_) => (IndexStats::default(), of),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces of [`Group::run_or_stop`] give the bits of one [`Group::run`]; a stop
    /// request ends it before the first piece.
    #[test]
    fn polled_runs_are_the_same_run_and_stop() {
        let rates = vec![0.4; 4095];
        let (mut whole, mut pieces) = (
            Group::<LANES>::new(&rates, 3, 5, 0),
            Group::<LANES>::new(&rates, 3, 5, 0),
        );
        // 200 iterations of P = 4096: pieces of 64 and a last one of 8.
        whole.run(200, Simd::Auto);
        let polls = std::sync::atomic::AtomicU32::new(0);
        let count = || {
            polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            false
        };
        pieces.run_or_stop(200, Simd::Auto, &count).unwrap();
        assert_eq!(polls.into_inner(), 4);
        assert_eq!(pieces.iteration(), 200);
        for i in 0..LANES {
            assert_eq!(whole.trips(i), pieces.trips(i));
            assert_eq!(whole.swaps(i), pieces.swaps(i));
            assert_eq!(whole.level_of(i), pieces.level_of(i));
        }
        let stopped = pieces.run_or_stop(200, Simd::Auto, &|| true);
        assert!(matches!(stopped, Err(EngineError::Interrupted)));
        assert_eq!(pieces.iteration(), 200);
    }

    /// Every lane equals nrpt-core's index process run for run: counts and positions.
    #[test]
    fn lanes_equal_the_core_index_process() {
        for (p, window, rate) in [
            (2usize, 1u32, 0.5),
            (5, 1, 0.4),
            (16, 7, 0.4),
            (33, 3, 0.9),
            (64, 20, 0.1),
        ] {
            let rates: Vec<f64> = (0..p - 1)
                .map(|l| rate * (1.0 - 0.3 * (l % 3) as f64 / 3.0))
                .collect();
            let iters = 3_000;
            let groups: Vec<Group<LANES>> = [Simd::Auto, Simd::Avx2, Simd::Portable]
                .into_iter()
                .map(|simd| {
                    let mut g = Group::<LANES>::new(&rates, window, 11, 100);
                    g.run(iters, simd);
                    g
                })
                .collect();
            for i in [0usize, 1, 17, LANES - 1] {
                let (stats, levels) = reference(&rates, window, 11, 100 + i as u32, iters);
                for (g, simd) in groups.iter().zip(["auto", "avx2", "portable"]) {
                    let want = LaneTrips::from(stats);
                    assert_eq!(g.trips(i), want, "{simd}: P {p} W {window} lane {i}");
                    assert_eq!(g.level_of(i), levels, "{simd}: P {p} W {window} lane {i}");
                }
            }
        }
    }
}
