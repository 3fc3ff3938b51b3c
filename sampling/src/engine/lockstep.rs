//! Ensembles in SIMD lanes: the whole iteration of the paper's 2D toy —
//! exploration, energies, windowed swaps, ladder and buffer adaptation, book-keeping —
//! vectorized across ensembles, with the same bits as nrpt-core's driver.
//!
//! Kept whole past 600 lines: the iteration is one pass over one lane layout (states,
//! replicas and travel states by level), each step reading what the previous one wrote.
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

use nrpt_core::adapt::{StepSize, initial_ladder};
use nrpt_core::driver::{InitialStates, Temperatures};
use nrpt_core::explore::{Explorer, merged_noise_scale, noise_scale};
use nrpt_core::fastmath::sin_cos_2pi;
use nrpt_core::index::{IndexStats, initial_trip_state};
use nrpt_core::lanes::{
    LaneExchange, LaneRules, LaneStates, ON, PairLanes, mask, pack, replica_of, swap_where_f32,
    trip_of,
};
use nrpt_core::rng::{KeyedLanes, PhiloxStream, Rng, counter, streams, uniform_f64};
// ∇U and U of the 25-mode target are nrpt-core's own functions (the same bits), with
// the sines kept from the energy for the next gradient (simd::Exact), or fast mode's
// (simd::Fast, `--math fast`).
use nrpt_core::window::{pair_eligible, window_parity};

use nrpt_core::driver::Progress;
use nrpt_core::swap::flags;

use super::EnsembleBuffers;
use super::group::{Group, drive};
use super::record::Observed;
use super::record::Recorder;
use super::simd::{Exact, Fast, LaneMath, Simd};
use super::state::{EnsembleState, Handoff};
use super::{Job, LaneGroup, OnProgress};

/// Ensembles per lane group: two AVX-512 registers of `f32` (four of AVX2), which gives
/// the compiler independent work to interleave (measured faster than 16 or 64).
pub const LANES: usize = 32;

type F32s = [f32; LANES];
type F64s = [f64; LANES];
type U32s = [u32; LANES];

/// `true` when the lockstep path can run `job`.
pub fn applies(job: &Job) -> bool {
    let o = &job.options;
    matches!(job.target.lane_group(), Some(LaneGroup::Modes2d { noise }) if noise > 0.0)
        && job.initial_states.is_none()
        && o.explorer == Explorer::Langevin
        && o.temperatures == Temperatures::SgdExplorers
        && matches!(o.init, InitialStates::Uniform { .. })
        && LaneRules::of(o).is_ok()
}

/// The bytes of one lane group of P = `chains` replicas ([`Lanes`]: per level the
/// states, their sines, energies, ladder, replicas and travel states of every lane and
/// the level's temperature; per pair the gates, flags and counters of every lane), which
/// a worker thread holds while it runs the group.
pub(crate) fn group_bytes(chains: usize) -> u64 {
    use std::mem::size_of;
    let p = chains as u64;
    let per_level =
        5 * size_of::<F32s>() + size_of::<F64s>() + size_of::<U32s>() + size_of::<f64>();
    let per_pair = 3 * size_of::<U32s>() + size_of::<PairLanes<LANES>>();
    (size_of::<Lanes>() as u64)
        .saturating_add(p.saturating_mul(per_level as u64))
        .saturating_add(p.saturating_sub(1).saturating_mul(per_pair as u64))
}

/// [`LANES`] ensembles of P replicas, stored by level.
pub struct Lanes {
    p: usize,
    /// The Philox keys `[seed, ensemble]` of the lanes, round by round.
    keys: KeyedLanes<LANES>,
    /// The oracle's noise scale (gradient and energy), in `f64` as nrpt-core's `Noisy`
    /// holds it.
    noise: f64,
    rules: LaneRules,
    hot: Vec<f64>,
    xa: Vec<F32s>,
    xb: Vec<F32s>,
    /// sin 2πx of each state coordinate, kept from the energy evaluation for the next
    /// gradient (the same function of the same value, so the same bits).
    sa: Vec<F32s>,
    sb: Vec<F32s>,
    energy: Vec<F32s>,
    ladder: Vec<F64s>,
    /// The replica at each level with its trip state (`nrpt_core::lanes::pack`).
    replica: Vec<U32s>,
    /// Lane masks (`ON` or 0) of each pair: gate open, indicator, swapped.
    gates: Vec<U32s>,
    indicator: Vec<U32s>,
    swap: Vec<U32s>,
    pairs: Vec<PairLanes<LANES>>,
    buffer: F64s,
    stats: [IndexStats; LANES],
    iteration: u64,
}

impl Lanes {
    /// Starts ensembles `first .. first + LANES` of `job` (which must satisfy
    /// [`applies`]) as nrpt-core's driver starts them.
    pub fn new(job: &Job, first: usize) -> Result<Self, nrpt_core::Error> {
        let o = job.options.validate()?;
        let rules = LaneRules::of(&o)?;
        let p = job.chains;
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
            *e = (job.first_ensemble() + first + i) as u32;
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
        let noise = match job.target.lane_group() {
            Some(LaneGroup::Modes2d { noise }) => noise,
            None => 0.0,
        };
        let sines = |x: &Vec<F32s>| -> Vec<F32s> {
            x.iter().map(|v| v.map(|c| sin_cos_2pi(c).0)).collect()
        };
        let (sa, sb) = (sines(&xa), sines(&xb));
        Ok(Lanes {
            p,
            keys: KeyedLanes::new(o.seed, &ensemble),
            noise,
            rules,
            hot,
            xa,
            xb,
            sa,
            sb,
            energy: vec![[0.0; LANES]; p],
            ladder: ladder.iter().map(|&v| [v; LANES]).collect(),
            replica: (0..p)
                .map(|l| [pack(l as u32, initial_trip_state(l, p - 1)); LANES])
                .collect(),
            gates: vec![[ON; LANES]; p - 1],
            indicator: vec![[0; LANES]; p - 1],
            swap: vec![[0; LANES]; p - 1],
            pairs: vec![PairLanes::default(); p - 1],
            buffer: [o.initial_buffer; LANES],
            stats: [IndexStats::default(); LANES],
            iteration: 0,
        })
    }

    /// Exploration step and energy of every level.
    #[inline(always)]
    fn explore<M: LaneMath>(&mut self) {
        let k = self.iteration;
        let noise = self.noise as f32;
        for l in 0..self.p {
            let mut eta = [0.0f32; LANES];
            for i in 0..LANES {
                eta[i] = self.ladder[l][i] as f32;
            }
            // Block 0 of the replicas' STEP streams (nrpt-core's `rng::counter`).
            let mut c2 = [0u32; LANES];
            for i in 0..LANES {
                c2[i] = counter(k, replica_of(self.replica[l][i]), streams::STEP, 0)[2];
            }
            let w = self.keys.block(k as u32, (k >> 32) as u32, &c2, 0);
            // One normal pair for the gradient noise and the sampling noise together
            // (nrpt-core's merged_noise_scale): at every level words 0–1 move the state
            // and words 2–3 give the energy noise, one Philox block per chain-step.
            let mut scale = [0.0f32; LANES];
            if self.hot[l] > 0.0 {
                for i in 0..LANES {
                    let lr = self.ladder[l][i];
                    let sigma = noise_scale(Explorer::Langevin, lr, self.hot[l]);
                    scale[i] = merged_noise_scale(lr, self.noise, sigma) as f32;
                }
            } else {
                // SGD levels (σ = 0): the gradient noise alone, a vector loop.
                for i in 0..LANES {
                    scale[i] = merged_noise_scale(self.ladder[l][i], self.noise, 0.0) as f32;
                }
            }
            explore_level::<M>(
                (&mut self.xa[l], &mut self.xb[l]),
                (&mut self.sa[l], &mut self.sb[l]),
                &mut self.energy[l],
                (&eta, &scale, noise),
                &w,
            );
        }
    }

    /// Swaps, adaptation with step size `gamma`, book-keeping: nrpt-core's lane
    /// exchange, which calls back to exchange the states of the levels that swap.
    #[inline(always)]
    fn exchange(&mut self, gamma: f64) -> Result<(), nrpt_core::Error> {
        let (xa, xb, sa, sb) = (&mut self.xa, &mut self.xb, &mut self.sa, &mut self.sb);
        let exchange = LaneExchange {
            energies: &self.energy,
            ladder: &mut self.ladder,
            replica: &mut self.replica,
            gates: &mut self.gates,
            indicator: &mut self.indicator,
            swapped: &mut self.swap,
            pairs: &mut self.pairs,
            buffer: &mut self.buffer,
            stats: &mut self.stats,
        };
        let mut states = States { xa, xb, sa, sb };
        exchange.run(&self.rules, self.iteration, gamma, &mut states)?;
        self.iteration += 1;
        Ok(())
    }

    /// One iteration with the adaptation step size `gamma` of this iteration, with the
    /// instruction set `simd` (already resolved for this processor).
    ///
    /// # Errors
    ///
    /// A buffer length that does not fit (none after [`Lanes::new`]).
    pub fn step(&mut self, gamma: f64, simd: Simd, fast: bool) -> Result<(), nrpt_core::Error> {
        step_dispatch(self, gamma, simd, fast)
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
            let r = replica_of(self.replica[l][i]) as usize;
            b.states[2 * r] = self.xa[l][i];
            b.states[2 * r + 1] = self.xb[l][i];
            b.energies[l] = self.energy[l][i];
            b.ladder[l] = self.ladder[l][i];
            b.temperatures[l] = self.hot[l];
            b.replica_at[l] = r as u32;
            b.level_of[r] = l as u32;
            b.trips[r] = trip_of(self.replica[l][i]);
        }
        for l in 0..p - 1 {
            if self.swap[l][i] != 0 {
                b.energies.swap(l, l + 1);
            }
        }
        // The parity of the last sweep (none before the first iteration).
        let parity = self
            .iteration
            .checked_sub(1)
            .map(|k| window_parity(k, self.rules.window));
        for l in 0..p - 1 {
            b.gates[l] = self.gates[l][i] != 0;
            let bad = !(self.energy[l][i].is_finite() && self.energy[l + 1][i].is_finite());
            let attempt = parity.is_some_and(|parity| {
                pair_eligible(l, parity) && (self.gates[l][i] | self.swap[l][i]) != 0
            });
            b.flags[l] = (u8::from(self.indicator[l][i] != 0) * flags::INDICATOR)
                | (u8::from(attempt) * flags::ATTEMPT)
                | (u8::from(self.swap[l][i] != 0) * flags::SWAPPED)
                | (u8::from(bad) * flags::NONFINITE);
            b.pair_stats[l] = self.pairs[l].lane(i).unwrap_or_default();
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
                self.replica[l][i] = pack(r as u32, b.trips[r]);
                self.xa[l][i] = a;
                self.xb[l][i] = c;
                self.sa[l][i] = sin_cos_2pi(a).0;
                self.sb[l][i] = sin_cos_2pi(c).0;
                self.energy[l][i] = b.energies[l];
                self.ladder[l][i] = b.ladder[l];
            }
            for l in 0..self.p - 1 {
                self.gates[l][i] = mask(b.gates[l]);
                self.indicator[l][i] = mask(b.flags[l] & flags::INDICATOR != 0);
                self.swap[l][i] = mask(b.flags[l] & flags::SWAPPED != 0);
                self.pairs[l].set_lane(i, b.pair_stats[l]);
            }
            // Back to the lanes' order of the energies (see `save`).
            for l in 0..self.p - 1 {
                if self.swap[l][i] != 0 {
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
        self.pairs[l].indicators(i)
    }

    /// Level of every replica in lane `i`.
    pub fn level_of(&self, i: usize) -> Vec<u32> {
        let mut of = vec![0u32; self.p];
        for (level, r) in self.replica.iter().enumerate() {
            of[replica_of(r[i]) as usize] = level as u32;
        }
        of
    }
}

/// A lane group as the run loop drives it: its first `count` lanes are ensembles of
/// the job, the others are computed and thrown away.
struct Running<'a> {
    lanes: &'a mut Lanes,
    count: usize,
    simd: Simd,
    /// Fast mode's math (`--math fast`) instead of nrpt-core's bits.
    fast: bool,
}

impl Group for Running<'_> {
    fn iteration(&self) -> u64 {
        self.lanes.iteration
    }

    fn ensembles(&self) -> usize {
        self.count
    }

    fn step(&mut self, gamma: StepSize) -> Result<(), super::EngineError> {
        Ok(self.lanes.step(gamma.get(), self.simd, self.fast)?)
    }

    fn view(&self, i: usize) -> impl Observed + '_ {
        LaneView {
            lanes: self.lanes,
            i,
        }
    }
}

/// Lane `i`, as a recorder reads it.
struct LaneView<'a> {
    lanes: &'a Lanes,
    i: usize,
}

impl Observed for LaneView<'_> {
    fn ladder(&self) -> Vec<f64> {
        self.lanes.ladder(self.i)
    }
    fn buffer(&self) -> f64 {
        self.lanes.buffer(self.i)
    }
    fn stats(&self) -> IndexStats {
        self.lanes.stats(self.i)
    }
    fn indicators(&self, pair: usize) -> u64 {
        self.lanes.indicators(self.i, pair)
    }
    fn level_of(&self) -> Vec<u32> {
        self.lanes.level_of(self.i)
    }
    fn push_target(&self, samples: &mut Vec<f32>) {
        samples.extend_from_slice(&self.lanes.target(self.i));
    }
}

/// The states of the lanes, by level, as the lane exchange swaps them.
struct States<'a> {
    xa: &'a mut [F32s],
    xb: &'a mut [F32s],
    sa: &'a mut [F32s],
    sb: &'a mut [F32s],
}

impl LaneStates<LANES> for States<'_> {
    #[inline(always)]
    fn swap_levels(&mut self, l: usize, mask: &[u32; LANES]) {
        for x in [&mut *self.xa, &mut *self.xb, &mut *self.sa, &mut *self.sb] {
            let (lo, hi) = x.split_at_mut(l + 1);
            swap_where_f32(mask, &mut lo[l], &mut hi[0]);
        }
    }
}

// The lane loops below are functions of their own so that their array arguments are
// known not to overlap, which is what lets the compiler vectorize them.

/// Exploration step and energy of one level, in the math `M` (exact: nrpt-core's bits,
/// operation for operation; fast: contracted): the exact gradient, then one normal pair
/// of scale `scale` (the gradient noise and the level's sampling noise merged), then
/// the energy with its noise.
#[inline(always)]
fn explore_level<M: LaneMath>(
    (xa, xb): (&mut F32s, &mut F32s),
    (sa, sb): (&mut F32s, &mut F32s),
    en: &mut F32s,
    (eta, scale, noise): (&F32s, &F32s, f32),
    w: &[U32s; 4],
) {
    // Each array its own argument: the compiler knows they do not overlap, so the
    // vector loop needs neither run-time overlap checks nor copies.
    for i in 0..LANES {
        let (z0, z1) = M::box_muller(w[0][i], w[1][i]);
        let (g0, g1) = M::gradient_from_sines(xa[i], xb[i], sa[i], sb[i]);
        let a = M::mul_add(scale[i], z0, M::mul_add(-eta[i], g0, xa[i]));
        let b = M::mul_add(scale[i], z1, M::mul_add(-eta[i], g1, xb[i]));
        let (u, s_a, s_b) = M::energy_and_sines(a, b);
        en[i] = M::mul_add(noise, M::box_muller(w[2][i], w[3][i]).0, u);
        (xa[i], xb[i], sa[i], sb[i]) = (a, b, s_a, s_b);
    }
}

#[inline(always)]
fn step_body<M: LaneMath>(lanes: &mut Lanes, gamma: f64) -> Result<(), nrpt_core::Error> {
    lanes.explore::<M>();
    lanes.exchange(gamma)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn step_avx2(lanes: &mut Lanes, gamma: f64) -> Result<(), nrpt_core::Error> {
    step_body::<Exact>(lanes, gamma)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw")]
fn step_avx512(lanes: &mut Lanes, gamma: f64) -> Result<(), nrpt_core::Error> {
    step_body::<Exact>(lanes, gamma)
}

/// Fast mode on AVX2: the FMA instructions come with it on every AVX2 processor the
/// engine meets (Haswell and later, Zen), and `Simd::resolve` checks for them.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn step_avx2_fast(lanes: &mut Lanes, gamma: f64) -> Result<(), nrpt_core::Error> {
    step_body::<Fast<true>>(lanes, gamma)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,fma")]
fn step_avx512_fast(lanes: &mut Lanes, gamma: f64) -> Result<(), nrpt_core::Error> {
    step_body::<Fast<true>>(lanes, gamma)
}

fn step_dispatch(
    lanes: &mut Lanes,
    gamma: f64,
    simd: Simd,
    fast: bool,
) -> Result<(), nrpt_core::Error> {
    match (simd, fast) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::resolve` returns Auto only where AVX-512 F/DQ/VL/BW are present.
        (Simd::Auto, false) => unsafe { step_avx512(lanes, gamma) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::resolve` returns Avx2 only where AVX2 is present.
        (Simd::Avx2, false) => unsafe { step_avx2(lanes, gamma) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, and the FMA instructions are checked here.
        (Simd::Auto, true) if std::arch::is_x86_feature_detected!("fma") => unsafe {
            step_avx512_fast(lanes, gamma)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (Simd::Avx2, true) if std::arch::is_x86_feature_detected!("fma") => unsafe {
            step_avx2_fast(lanes, gamma)
        },
        // The portable build has no FMA instruction: fast mode rounds each product.
        (_, true) => step_body::<Fast<false>>(lanes, gamma),
        (_, false) => step_body::<Exact>(lanes, gamma),
    }
}

/// Runs ensembles `first .. first + count` (count ≤ [`LANES`]) of `job` in one lane
/// group, from their saved states when given, up to iteration `until`; lanes past
/// `count` compute ensembles that are thrown away; `fast` selects fast mode's lane math
/// (`CpuBackend::fast_math`). Returns the states.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_group(
    job: &Job,
    first: usize,
    count: usize,
    from: Option<&[Handoff]>,
    until: u64,
    simd: Simd,
    fast: bool,
    progress: OnProgress<'_>,
) -> Result<Vec<EnsembleState>, super::EngineError> {
    let mut lanes = Lanes::new(job, first)?;
    let mut records: Vec<Recorder> = match from {
        Some(saved) => {
            let states = (0..count)
                .map(|i| Handoff::take_from(saved, i))
                .collect::<Result<Vec<_>, _>>()?;
            lanes.restore(&states);
            states.into_iter().map(|s| s.recorder).collect()
        }
        None => (0..count)
            .map(|i| Recorder::new(job, job.first_ensemble() + first + i))
            .collect(),
    };
    let mut group = Running {
        lanes: &mut lanes,
        count,
        simd,
        fast,
    };
    drive(&mut group, &mut records, job, until, progress)?;
    Ok(records
        .into_iter()
        .enumerate()
        .map(|(i, r)| lanes.save(i, r))
        .collect())
}
