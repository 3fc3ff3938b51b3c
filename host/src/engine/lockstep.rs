//! Ensembles in SIMD lanes: the whole iteration of the paper's 2D toy —
//! exploration, energies, windowed swaps, ladder and buffer adaptation, book-keeping —
//! vectorized across ensembles, with the same bits as nrpt-core's driver.
//!
//! nrpt-core keeps states in place and permutes replica indices; here everything is
//! stored *by level* (state, replica index, travel state of the replica at each level)
//! and a swap exchanges the two levels' entries, a masked select per lane. Lane i of
//! every array belongs to ensemble `first + i`, so every step of the iteration is the
//! same operation on [`LANES`] values: the compiler turns the lane loops into AVX-512
//! or AVX2 instructions (chosen at run time). Each value is computed by the operations
//! nrpt-core performs, in the same order, with the same branch-free `f32` functions and
//! correctly rounded square roots; the tests compare whole runs with the scalar driver
//! bit for bit.
//!
//! Applies to: the 25-mode target with noise, SGD explorers (SGLD at the target level,
//! SGD above), the buffered rule, DEO windows, energies per level tested
//! simultaneously (the paper's rules; see [`applies`]).

// Lane loops index several arrays with one lane index on purpose: that is the shape the
// vectorizer turns into SIMD.
#![allow(clippy::needless_range_loop)]

use nrpt_core::adapt::{JACOBI_GUARD, growth_factors, initial_ladder};
use nrpt_core::driver::{InitialStates, Temperatures};
use nrpt_core::explore::Explorer;
use nrpt_core::fastmath::sin_cos_2pi;
use nrpt_core::index::{
    IndexStats, PHASE_MASK, PairStats, SEEN_BOTTOM, SEEN_TOP, TripState, initial_trip_state,
    observe_arrival,
};
use nrpt_core::rng::{PhiloxStream, Rng, counter, philox4x32_10_keyed_lanes, streams, uniform_f64};
use nrpt_core::rules::{BufferProjection, LadderUpdate, PairEnergies, SweepOrder};
use nrpt_core::swap::SwapRule;
// ∇U and U of the 25-mode target are nrpt-core's own functions (the same bits), with
// the sines kept from the energy for the next gradient.
use nrpt_core::target::Modes2d;
use nrpt_core::window::{Scheme, is_window_start, pair_eligible, window_parity};

use nrpt_core::driver::Progress;
use nrpt_core::swap::flags;

use super::EnsembleBuffers;
use super::record::Recorder;
use super::simd::{Simd, box_muller};
use super::state::EnsembleState;
use super::{Flow, Job, LaneGroup, OnProgress};

/// Ensembles per lane group: two AVX-512 registers of `f32` (four of AVX2), which gives
/// the compiler independent work to interleave (measured faster than 16 or 64).
pub const LANES: usize = 32;

type F32s = [f32; LANES];
type F64s = [f64; LANES];
type U32s = [u32; LANES];
type U64s = [u64; LANES];

/// `true` when the lockstep path can run `job`.
pub fn applies(job: &Job) -> bool {
    let o = &job.options;
    matches!(job.target.lane_group(), Some(LaneGroup::Modes2d { noise }) if noise > 0.0)
        && job.initial_states.is_none()
        && o.explorer == Explorer::Langevin
        && o.temperatures == Temperatures::SgdExplorers
        && o.rule == SwapRule::Buffered
        && matches!(o.scheme, Scheme::Deo { .. })
        && matches!(o.init, InitialStates::Uniform { .. })
        && o.rules.pair_energies == PairEnergies::PerLevel
        && o.rules.sweep_order == SweepOrder::Simultaneous
}

/// Per-pair counters of every lane.
#[derive(Clone, Copy)]
struct PairLanes {
    indicators: U64s,
    attempts: U64s,
    swaps: U64s,
    nonfinite: U64s,
}

/// [`LANES`] ensembles of P replicas, stored by level.
pub struct Lanes {
    p: usize,
    window: u32,
    seed: u32,
    ensemble: U32s,
    noise: f32,
    target_rate: f64,
    schedule_scale: f64,
    adapt_ladder: bool,
    adapt_buffer: bool,
    ladder_update: LadderUpdate,
    projection: BufferProjection,
    hot: Vec<f64>,
    xa: Vec<F32s>,
    xb: Vec<F32s>,
    /// sin 2πx of each state coordinate, kept from the energy evaluation for the next
    /// gradient (the same function of the same value, so the same bits).
    sa: Vec<F32s>,
    sb: Vec<F32s>,
    energy: Vec<F32s>,
    ladder: Vec<F64s>,
    replica: Vec<U32s>,
    trips: Vec<[TripState; LANES]>,
    gates: Vec<[bool; LANES]>,
    indicator: Vec<[bool; LANES]>,
    swap: Vec<[bool; LANES]>,
    pairs: Vec<PairLanes>,
    buffer: F64s,
    stats: [IndexStats; LANES],
    iteration: u64,
}

/// Philox4x32-10 of one counter per lane with key `[seed, ensemble[i]]`.
#[inline(always)]
fn philox(c: [U32s; 4], seed: u32, ensemble: &U32s) -> [U32s; 4] {
    philox4x32_10_keyed_lanes(c, seed, ensemble)
}

/// The counters of block `block` of the STEP streams of iteration `k` of the replicas
/// in `replica` (nrpt-core's `rng::counter`, lane by lane).
#[inline(always)]
fn step_counter(k: u64, replica: &U32s, block: u32) -> [U32s; 4] {
    let mut c = [[0u32; LANES]; 4];
    for i in 0..LANES {
        let w = counter(k, replica[i], streams::STEP, block);
        c[0][i] = w[0];
        c[1][i] = w[1];
        c[2][i] = w[2];
        c[3][i] = w[3];
    }
    c
}

impl Lanes {
    /// Starts ensembles `first .. first + LANES` of `job` (which must satisfy
    /// [`applies`]) as nrpt-core's driver starts them.
    pub fn new(job: &Job, first: usize) -> Result<Self, nrpt_core::Error> {
        let o = job.options.validate()?;
        let p = job.chains;
        let Scheme::Deo { window } = o.scheme else {
            unreachable!("applies() admits DEO only");
        };
        let InitialStates::Uniform { low, high } = o.init else {
            unreachable!("applies() admits uniform starts only");
        };
        let mut ladder = vec![0.0; p];
        initial_ladder(
            o.rules.initial_ladder,
            o.ladder_min,
            o.ladder_max,
            &mut ladder,
        )?;
        let mut hot = vec![0.0; p];
        o.temperatures.fill(&ladder, &mut hot);
        let mut ensemble = [0u32; LANES];
        for (i, e) in ensemble.iter_mut().enumerate() {
            *e = (first + i) as u32;
        }
        let mut xa = vec![[0.0f32; LANES]; p];
        let mut xb = vec![[0.0f32; LANES]; p];
        for l in 0..p {
            for i in 0..LANES {
                // Replica l starts at level l with coordinates from its INIT stream.
                let mut rng = PhiloxStream::new(o.seed, ensemble[i], 0, l as u32, streams::INIT);
                xa[l][i] = (low + (high - low) * uniform_f64(rng.next_u32())) as f32;
                xb[l][i] = (low + (high - low) * uniform_f64(rng.next_u32())) as f32;
            }
        }
        let sines = |x: &Vec<F32s>| -> Vec<F32s> {
            x.iter().map(|v| v.map(|c| sin_cos_2pi(c).0)).collect()
        };
        let (sa, sb) = (sines(&xa), sines(&xb));
        Ok(Lanes {
            p,
            window,
            seed: o.seed,
            ensemble,
            noise: match job.target.lane_group() {
                Some(LaneGroup::Modes2d { noise }) => noise as f32,
                None => 0.0,
            },
            target_rate: o.adapt.target_swap_rate,
            schedule_scale: o.adapt.buffer_scale,
            adapt_ladder: o.adapt.adapt_ladder,
            adapt_buffer: o.adapt.adapt_buffer,
            ladder_update: o.rules.ladder_update,
            projection: o.rules.buffer_projection,
            hot,
            xa,
            xb,
            sa,
            sb,
            energy: vec![[0.0; LANES]; p],
            ladder: ladder.iter().map(|&v| [v; LANES]).collect(),
            replica: (0..p).map(|l| [l as u32; LANES]).collect(),
            trips: (0..p)
                .map(|l| [initial_trip_state(l, p - 1); LANES])
                .collect(),
            gates: vec![[true; LANES]; p - 1],
            indicator: vec![[false; LANES]; p - 1],
            swap: vec![[false; LANES]; p - 1],
            pairs: vec![
                PairLanes {
                    indicators: [0; LANES],
                    attempts: [0; LANES],
                    swaps: [0; LANES],
                    nonfinite: [0; LANES],
                };
                p - 1
            ],
            buffer: [o.initial_buffer; LANES],
            stats: [IndexStats::default(); LANES],
            iteration: 0,
        })
    }

    /// Exploration step and energy of every level.
    #[inline(always)]
    fn explore(&mut self) {
        let k = self.iteration;
        let noise = self.noise;
        for l in 0..self.p {
            let mut eta = [0.0f32; LANES];
            for i in 0..LANES {
                eta[i] = self.ladder[l][i] as f32;
            }
            let w = philox(
                step_counter(k, &self.replica[l], 0),
                self.seed,
                &self.ensemble,
            );
            let x = Level {
                xa: &mut self.xa[l],
                xb: &mut self.xb[l],
                sa: &mut self.sa[l],
                sb: &mut self.sb[l],
                en: &mut self.energy[l],
            };
            if self.hot[l] > 0.0 {
                // SGLD: Langevin noise from words 2 and 3, the energy's from block 1.
                let w1 = philox(
                    step_counter(k, &self.replica[l], 1),
                    self.seed,
                    &self.ensemble,
                );
                let mut sigma = [0.0f32; LANES];
                for i in 0..LANES {
                    sigma[i] = (2.0 * self.ladder[l][i] * self.hot[l]).sqrt() as f32;
                }
                explore_hot(x, &eta, &sigma, &w, &w1, noise);
            } else {
                explore_cold(x, &eta, &w, noise);
            }
        }
    }

    /// Swaps, adaptation with step size `gamma`, book-keeping.
    #[inline(always)]
    fn exchange(&mut self, gamma: f64) {
        let p = self.p;
        let k = self.iteration;
        for i in 0..LANES {
            let bad = self.energy.iter().filter(|e| !e[i].is_finite()).count();
            self.stats[i].nonfinite_energies += bad as u64;
        }
        if is_window_start(k, self.window) {
            for g in &mut self.gates {
                *g = [true; LANES];
            }
        }
        let parity = window_parity(k, self.window);
        let mut c32 = [0.0f32; LANES];
        for i in 0..LANES {
            c32[i] = self.buffer[i] as f32;
        }
        let mut count = [0u32; LANES];
        for l in 0..p - 1 {
            sweep_pair(
                &self.energy[l],
                &self.energy[l + 1],
                &c32,
                &self.gates[l],
                pair_eligible(l, parity),
                &mut self.indicator[l],
                &mut self.swap[l],
                &mut self.pairs[l],
                &mut count,
            );
        }
        // Eligible pairs are disjoint: their swaps commute.
        let top = p - 1;
        for l in (0..p - 1).filter(|&l| pair_eligible(l, parity)) {
            let m = self.swap[l];
            let (lo, hi) = self.xa.split_at_mut(l + 1);
            blend(&m, &mut lo[l], &mut hi[0]);
            let (lo, hi) = self.xb.split_at_mut(l + 1);
            blend(&m, &mut lo[l], &mut hi[0]);
            let (lo, hi) = self.sa.split_at_mut(l + 1);
            blend(&m, &mut lo[l], &mut hi[0]);
            let (lo, hi) = self.sb.split_at_mut(l + 1);
            blend(&m, &mut lo[l], &mut hi[0]);
            let (lo, hi) = self.replica.split_at_mut(l + 1);
            blend(&m, &mut lo[l], &mut hi[0]);
            let (lo, hi) = self.trips.split_at_mut(l + 1);
            blend(&m, &mut lo[l], &mut hi[0]);
            for i in 0..LANES {
                if m[i] {
                    self.gates[l][i] = false;
                    for level in [l, l + 1] {
                        let ev = observe_arrival(&mut self.trips[level][i], level, top);
                        self.stats[i].record(ev);
                    }
                }
            }
        }
        self.authors_pass(parity);
        let s = self.target_rate;
        if self.adapt_ladder && p >= 3 && self.ladder_update == LadderUpdate::Jacobi {
            let (up, down) = growth_factors(s, gamma);
            let (floor, ceiling) = (
                self.ladder[0][0] * JACOBI_GUARD,
                self.ladder[p - 1][0] / JACOBI_GUARD,
            );
            let mut below = self.ladder[0];
            let mut grow_below = [0.0f64; LANES];
            for i in 0..LANES {
                grow_below[i] = if self.indicator[0][i] { up } else { down };
            }
            for l in 1..p - 1 {
                let (here, rest) = self.ladder[l..].split_at_mut(1);
                let old = here[0];
                ladder_level_jacobi(
                    &below,
                    &mut here[0],
                    &rest[0],
                    &self.indicator[l],
                    &mut grow_below,
                    (up, down),
                    (floor, ceiling),
                );
                below = old;
            }
        } else if self.adapt_ladder && p >= 3 {
            let (up, down) = growth_factors(s, gamma);
            let mut grow_below = [0.0f64; LANES];
            for i in 0..LANES {
                grow_below[i] = if self.indicator[0][i] { up } else { down };
            }
            for l in 1..p - 1 {
                let (lower, upper) = self.ladder.split_at_mut(l);
                let (here, rest) = upper.split_at_mut(1);
                ladder_level(
                    &lower[l - 1],
                    &mut here[0],
                    &rest[0],
                    &self.indicator[l],
                    &mut grow_below,
                    up,
                    down,
                );
            }
        }
        if self.adapt_buffer {
            let floor = match self.projection {
                BufferProjection::NonNegative => 0.0,
                BufferProjection::Unprojected => f64::NEG_INFINITY,
            };
            for i in 0..LANES {
                let mean = f64::from(count[i]) / (p - 1) as f64;
                self.buffer[i] =
                    (self.buffer[i] + (mean - s) * gamma / self.schedule_scale).max(floor);
            }
        }
        self.iteration += 1;
    }

    /// The authors' round-trip counting of this iteration, lane by lane: nrpt-core's
    /// `index::authors_pass` on trip states stored by level. At step idx of their walk
    /// level idx holds the replica now at idx + 1 if pair idx swapped, else the one now
    /// at idx; both candidates are read and blended, so the lane loops vectorize.
    #[inline(always)]
    fn authors_pass(&mut self, parity: u32) {
        let top = self.p - 1;
        let mut count = [0u32; LANES];
        for idx in 0..=top {
            if idx == 1 {
                mark(&mut self.trips[0], SEEN_BOTTOM);
            }
            if idx == top {
                mark(&mut self.trips[top], SEEN_TOP);
            }
            let keep = if idx == top { SEEN_TOP } else { 0 };
            if idx < top && pair_eligible(idx, parity) {
                let (lo, hi) = self.trips.split_at_mut(idx + 1);
                authors_check_pair(
                    idx as u32,
                    &self.swap[idx],
                    (&mut lo[idx], &mut hi[0]),
                    (&self.replica[idx], &self.replica[idx + 1]),
                    &mut count,
                );
            } else {
                authors_check(
                    idx as u32,
                    keep,
                    &mut self.trips[idx],
                    &self.replica[idx],
                    &mut count,
                );
            }
        }
        for (s, &c) in self.stats.iter_mut().zip(&count) {
            s.authors_round_trips += u64::from(c);
        }
    }

    /// One iteration with the adaptation step size `gamma` of this iteration, with the
    /// instruction set `simd` (already resolved for this processor).
    pub fn step(&mut self, gamma: f64, simd: Simd) {
        step_dispatch(self, gamma, simd);
    }

    /// State of the target level of lane `i`.
    pub fn target(&self, i: usize) -> [f32; 2] {
        [self.xa[0][i], self.xb[0][i]]
    }

    /// Lane `i` in nrpt-core's layout, with what it has recorded: what a checkpoint
    /// saves, the bytes nrpt-core's driver leaves (so a checkpoint does not depend on
    /// the code path that wrote it). The lanes keep the energies of the last sweep by
    /// level before its swaps, the driver after them: the swapped pairs' energies are
    /// exchanged here (eligible pairs are disjoint). The attempt bit of the flags, which
    /// the lanes do not keep, follows from the window: an eligible pair was attempted
    /// when its gate was open before the sweep, that is, is open now or has swapped.
    pub fn save(&self, i: usize, recorder: Recorder) -> EnsembleState {
        let p = self.p;
        let mut b = EnsembleBuffers::<f32>::new(p, 2, false);
        for l in 0..p {
            let r = self.replica[l][i] as usize;
            b.states[2 * r] = self.xa[l][i];
            b.states[2 * r + 1] = self.xb[l][i];
            b.energies[l] = self.energy[l][i];
            b.ladder[l] = self.ladder[l][i];
            b.temperatures[l] = self.hot[l];
            b.replica_at[l] = r as u32;
            b.level_of[r] = l as u32;
            b.trips[r] = self.trips[l][i];
        }
        for l in 0..p - 1 {
            if self.swap[l][i] {
                b.energies.swap(l, l + 1);
            }
        }
        // The parity of the last sweep (none before the first iteration).
        let parity = self
            .iteration
            .checked_sub(1)
            .map(|k| window_parity(k, self.window));
        for l in 0..p - 1 {
            b.gates[l] = self.gates[l][i];
            let bad = !(self.energy[l][i].is_finite() && self.energy[l + 1][i].is_finite());
            let attempt = parity.is_some_and(|parity| {
                pair_eligible(l, parity) && (self.gates[l][i] || self.swap[l][i])
            });
            b.flags[l] = (u8::from(self.indicator[l][i]) * flags::INDICATOR)
                | (u8::from(attempt) * flags::ATTEMPT)
                | (u8::from(self.swap[l][i]) * flags::SWAPPED)
                | (u8::from(bad) * flags::NONFINITE);
            let c = &self.pairs[l];
            b.pair_stats[l] = PairStats {
                indicators: c.indicators[i],
                attempts: c.attempts[i],
                swaps: c.swaps[i],
                nonfinite: c.nonfinite[i],
            };
        }
        EnsembleState {
            buffers: b,
            progress: Progress {
                iteration: self.iteration,
                buffer: self.buffer[i],
                stats: self.stats[i],
            },
            recorder,
        }
    }

    /// Sets the first `states.len()` lanes to saved states (of this job and these
    /// ensembles), the inverse of [`Lanes::save`].
    pub fn restore(&mut self, states: &[EnsembleState]) {
        for (i, s) in states.iter().enumerate().take(LANES) {
            let b = &s.buffers;
            for l in 0..self.p {
                let r = b.replica_at[l] as usize;
                let (a, c) = (b.states[2 * r], b.states[2 * r + 1]);
                self.replica[l][i] = r as u32;
                self.xa[l][i] = a;
                self.xb[l][i] = c;
                self.sa[l][i] = sin_cos_2pi(a).0;
                self.sb[l][i] = sin_cos_2pi(c).0;
                self.energy[l][i] = b.energies[l];
                self.ladder[l][i] = b.ladder[l];
                self.trips[l][i] = b.trips[r];
            }
            for l in 0..self.p - 1 {
                self.gates[l][i] = b.gates[l];
                self.indicator[l][i] = b.flags[l] & flags::INDICATOR != 0;
                self.swap[l][i] = b.flags[l] & flags::SWAPPED != 0;
                let (c, ps) = (&mut self.pairs[l], b.pair_stats[l]);
                c.indicators[i] = ps.indicators;
                c.attempts[i] = ps.attempts;
                c.swaps[i] = ps.swaps;
                c.nonfinite[i] = ps.nonfinite;
            }
            // Back to the lanes' order of the energies (see `save`).
            for l in 0..self.p - 1 {
                if self.swap[l][i] {
                    let e = self.energy[l][i];
                    self.energy[l][i] = self.energy[l + 1][i];
                    self.energy[l + 1][i] = e;
                }
            }
            self.buffer[i] = s.progress.buffer;
            self.stats[i] = s.progress.stats;
            self.iteration = s.progress.iteration;
        }
    }

    /// Ladder of lane `i`.
    pub fn ladder(&self, i: usize) -> Vec<f64> {
        self.ladder.iter().map(|l| l[i]).collect()
    }

    /// Buffer of lane `i`.
    pub fn buffer(&self, i: usize) -> f64 {
        self.buffer[i]
    }

    /// Totals of lane `i`.
    pub fn stats(&self, i: usize) -> IndexStats {
        self.stats[i]
    }

    /// Running indicator count of pair `l` in lane `i`.
    pub fn indicators(&self, i: usize, l: usize) -> u64 {
        self.pairs[l].indicators[i]
    }

    /// Level of every replica in lane `i`.
    pub fn level_of(&self, i: usize) -> Vec<u32> {
        let mut of = vec![0u32; self.p];
        for (level, r) in self.replica.iter().enumerate() {
            of[r[i] as usize] = level as u32;
        }
        of
    }
}

// The lane loops below are functions of their own so that their array arguments are
// known not to overlap, which is what lets the compiler vectorize them.

/// The arrays of one level that an exploration step updates.
struct Level<'a> {
    xa: &'a mut F32s,
    xb: &'a mut F32s,
    sa: &'a mut F32s,
    sb: &'a mut F32s,
    en: &'a mut F32s,
}

/// Exploration step and energy of one level of SGD explorers (temperature 0).
#[inline(always)]
fn explore_cold(x: Level<'_>, eta: &F32s, w: &[U32s; 4], noise: f32) {
    let Level { xa, xb, sa, sb, en } = x;
    for i in 0..LANES {
        let (z0, z1) = box_muller(w[0][i], w[1][i]);
        let (g0, g1) = Modes2d::gradient_from_sines(xa[i], xb[i], sa[i], sb[i]);
        let (g0, g1) = (g0 + noise * z0, g1 + noise * z1);
        let a = xa[i] - eta[i] * g0;
        let b = xb[i] - eta[i] * g1;
        let (u, s_a, s_b) = Modes2d::energy_and_sines(a, b);
        en[i] = u + noise * box_muller(w[2][i], w[3][i]).0;
        (xa[i], xb[i], sa[i], sb[i]) = (a, b, s_a, s_b);
    }
}

/// Exploration step (SGLD with noise scale `sigma`) and energy of one level.
#[inline(always)]
fn explore_hot(x: Level<'_>, eta: &F32s, sigma: &F32s, w: &[U32s; 4], w1: &[U32s; 4], noise: f32) {
    let Level { xa, xb, sa, sb, en } = x;
    for i in 0..LANES {
        let (z0, z1) = box_muller(w[0][i], w[1][i]);
        let (g0, g1) = Modes2d::gradient_from_sines(xa[i], xb[i], sa[i], sb[i]);
        let (g0, g1) = (g0 + noise * z0, g1 + noise * z1);
        let (n0, n1) = box_muller(w[2][i], w[3][i]);
        let a = xa[i] - eta[i] * g0 + sigma[i] * n0;
        let b = xb[i] - eta[i] * g1 + sigma[i] * n1;
        let (u, s_a, s_b) = Modes2d::energy_and_sines(a, b);
        en[i] = u + noise * box_muller(w1[0][i], w1[1][i]).0;
        (xa[i], xb[i], sa[i], sb[i]) = (a, b, s_a, s_b);
    }
}

/// Indicators, attempts and swap decisions of one pair in every lane.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn sweep_pair(
    lo: &F32s,
    hi: &F32s,
    c32: &F32s,
    gates: &[bool; LANES],
    eligible: bool,
    indicator: &mut [bool; LANES],
    swap: &mut [bool; LANES],
    pc: &mut PairLanes,
    count: &mut [u32; LANES],
) {
    for i in 0..LANES {
        let valid = lo[i].is_finite() && hi[i].is_finite();
        let ind = valid && hi[i] + c32[i] < lo[i];
        let attempt = eligible && gates[i];
        let sw = attempt && ind;
        indicator[i] = ind;
        swap[i] = sw;
        count[i] += u32::from(ind);
        pc.indicators[i] += u64::from(ind);
        pc.attempts[i] += u64::from(attempt);
        pc.swaps[i] += u64::from(sw);
        pc.nonfinite[i] += u64::from(!valid);
    }
}

/// The ladder update of one inner level in every lane (nrpt-core's
/// `adapt_ladder_indicators`, one level).
#[inline(always)]
fn ladder_level(
    below: &F64s,
    here: &mut F64s,
    above: &F64s,
    indicator: &[bool; LANES],
    grow_below: &mut F64s,
    up: f64,
    down: f64,
) {
    for i in 0..LANES {
        let grow_above = if indicator[i] { up } else { down };
        let (b, h, a) = (below[i], here[i], above[i]);
        let from_below = (b + (h - b).max(0.0) * grow_below[i]).max(b).min(a);
        let from_above = (a - (a - h).max(0.0) * grow_above).max(b).min(a);
        here[i] = 0.5 * (from_below + from_above);
        grow_below[i] = grow_above;
    }
}

/// Sets `bit` in every lane's trip state.
#[inline(always)]
fn mark(trips: &mut [TripState; LANES], bit: TripState) {
    for t in trips.iter_mut() {
        *t |= bit;
    }
}

const BOTH_ENDS: TripState = SEEN_BOTTOM | SEEN_TOP;

/// The authors' check of replica `idx` where level idx holds it (no swap of pair idx
/// this iteration): a trip if it is home with both ends seen, then its marks cleared
/// (down to `keep`).
#[inline(always)]
fn authors_check(
    idx: u32,
    keep: TripState,
    trips: &mut [TripState; LANES],
    replica: &U32s,
    count: &mut [u32; LANES],
) {
    for i in 0..LANES {
        let t = trips[i];
        let hit = replica[i] == idx && t & BOTH_ENDS == BOTH_ENDS;
        count[i] += u32::from(hit);
        trips[i] = if hit { (t & PHASE_MASK) | keep } else { t };
    }
}

/// The same where pair (idx, idx + 1) may have swapped: the replica checked is the one
/// now at idx + 1 in the lanes that swapped, the one at idx in the others. `idx` is
/// below the top, so the marks clear to nothing.
#[inline(always)]
fn authors_check_pair(
    idx: u32,
    swapped: &[bool; LANES],
    (t_lo, t_hi): (&mut [TripState; LANES], &mut [TripState; LANES]),
    (r_lo, r_hi): (&U32s, &U32s),
    count: &mut [u32; LANES],
) {
    for i in 0..LANES {
        let sw = swapped[i];
        let t = if sw { t_hi[i] } else { t_lo[i] };
        let r = if sw { r_hi[i] } else { r_lo[i] };
        let hit = r == idx && t & BOTH_ENDS == BOTH_ENDS;
        count[i] += u32::from(hit);
        let cleared = t & PHASE_MASK;
        t_lo[i] = if hit && !sw { cleared } else { t_lo[i] };
        t_hi[i] = if hit && sw { cleared } else { t_hi[i] };
    }
}

/// nrpt-core's Jacobi ladder update of one inner level in every lane: `below` holds
/// the previous iteration's rate of the level below.
#[inline(always)]
fn ladder_level_jacobi(
    below: &F64s,
    here: &mut F64s,
    above: &F64s,
    indicator: &[bool; LANES],
    grow_below: &mut F64s,
    (up, down): (f64, f64),
    (floor, ceiling): (f64, f64),
) {
    for i in 0..LANES {
        let grow_above = if indicator[i] { up } else { down };
        let (b, h, a) = (below[i], here[i], above[i]);
        let from_below = b + (h - b).max(0.0) * grow_below[i];
        let from_above = a - (a - h).max(0.0) * grow_above;
        here[i] = (0.5 * (from_below + from_above)).max(floor).min(ceiling);
        grow_below[i] = grow_above;
    }
}

/// Exchanges `a[i]` and `b[i]` where `mask[i]`.
#[inline(always)]
fn blend<T: Copy>(mask: &[bool; LANES], a: &mut [T; LANES], b: &mut [T; LANES]) {
    // New values first, then both stores: written as two in-place selects, the
    // exchange was miscompiled in AVX2 builds (level l + 1 kept its old values).
    let (old_a, old_b) = (*a, *b);
    for i in 0..LANES {
        a[i] = if mask[i] { old_b[i] } else { old_a[i] };
        b[i] = if mask[i] { old_a[i] } else { old_b[i] };
    }
}

#[inline(always)]
fn step_body(lanes: &mut Lanes, gamma: f64) {
    lanes.explore();
    lanes.exchange(gamma);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn step_avx2(lanes: &mut Lanes, gamma: f64) {
    step_body(lanes, gamma);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw")]
fn step_avx512(lanes: &mut Lanes, gamma: f64) {
    step_body(lanes, gamma);
}

fn step_dispatch(lanes: &mut Lanes, gamma: f64, simd: Simd) {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::resolve` returns Auto only where AVX-512 F/DQ/VL/BW are present.
        Simd::Auto => unsafe { step_avx512(lanes, gamma) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::resolve` returns Avx2 only where AVX2 is present.
        Simd::Avx2 => unsafe { step_avx2(lanes, gamma) },
        _ => step_body(lanes, gamma),
    }
}

/// Runs ensembles `first .. first + count` (count ≤ [`LANES`]) of `job` in one lane
/// group, from their saved states when given, up to iteration `until`; lanes past
/// `count` compute ensembles that are thrown away. Returns the states.
pub fn run_group(
    job: &Job,
    first: usize,
    count: usize,
    from: Option<&[EnsembleState]>,
    until: u64,
    simd: Simd,
    progress: OnProgress<'_>,
) -> Result<Vec<EnsembleState>, super::EngineError> {
    let mut lanes = Lanes::new(job, first)?;
    let mut records: Vec<Recorder> = match from {
        Some(states) => {
            lanes.restore(states);
            states.iter().map(|s| s.recorder.clone()).collect()
        }
        None => (0..count).map(|i| Recorder::new(job, first + i)).collect(),
    };
    let rec = job.record;
    let schedule = job.options.adapt.schedule;
    let mut unreported = 0u64;
    for k in lanes.iteration..until {
        lanes.step(schedule.step_size(k)?.get(), simd);
        for (i, r) in records.iter_mut().enumerate() {
            if rec.traces_at(k) {
                let ladder = lanes.ladder(i);
                r.trace(
                    k,
                    rec.trace_every,
                    ladder,
                    lanes.buffer(i),
                    lanes.stats(i),
                    |l| lanes.indicators(i, l),
                );
            }
            if r.is_first() && rec.paths_at(k) {
                r.path(lanes.level_of(i).into_iter());
            }
            if rec.samples_at(k) {
                r.sample(k, &lanes.target(i));
            }
        }
        unreported += count as u64;
        if unreported >= 1024 {
            if progress(unreported) == Flow::Stop {
                return Err(super::EngineError::Interrupted);
            }
            unreported = 0;
        }
    }
    if progress(unreported) == Flow::Stop {
        return Err(super::EngineError::Interrupted);
    }
    Ok(records
        .into_iter()
        .enumerate()
        .map(|(i, r)| lanes.save(i, r))
        .collect())
}
