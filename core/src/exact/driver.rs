//! The exact tempering run: explore, swap, record, and close rounds.
//!
//! Kept whole past 600 lines: one type, the round's explore–swap–record loop, whose
//! steps share its borrowed buffers; the pieces it calls have modules of their own
//! (imports below).

use crate::error::{Error, check_len};
use crate::index::{IndexStats, TripState, authors_pass, init_identity, observe_arrival};
use crate::rng::{ENSEMBLE_WIDE, PhiloxStream, streams};
use crate::swap::{SwapBuffers, flags, sweep_unchecked};

use super::barrier::Barrier;
use super::buffers::{ExactBuffers, LevelRecord, PairRecord};
use super::chains::rate_of;
use super::evidence::{BATCHES, BatchMeans, Estimate, batch_of};
use super::explorer::adapt_step;
use super::hmc::hmc_unchecked;
use super::mala::{mala_unchecked, reference_draw};
use super::options::{ExactExplorer, ExactOptions, StartStates};
use super::path::{AnnealingPath, NoPath};
use super::report::{ExactReport, RoundReport};
use super::schedule::{InitialGrid, check_grid, uniform_grid};
use super::swap::TemperedSwaps;

/// Exact non-reversible parallel tempering of one ensemble over buffers the caller owns:
/// MALA or HMC explorers (exact draws at β = 0), Metropolis swaps by windowed DEO or SEO,
/// rounds of doubling length that re-place the β grid at equal barrier, and the
/// barrier and stepping-stone estimates of every round (see [`crate::exact`]).
#[derive(Debug)]
pub struct ExactTempering<'a, P: AnnealingPath> {
    path: P,
    options: ExactOptions,
    b: ExactBuffers<'a>,
    dim: usize,
    /// Everything else that carries over from one iteration to the next.
    at: ExactProgress,
    failure: Option<P::Error>,
}

/// Where an exact tempering run stands besides its buffers: with the buffers (as the run
/// left them), all [`ExactTempering::resume`] needs to continue it with the same bits as
/// if it had never stopped. Plain data, `Copy` (and `serde` with the crate's `serde`
/// feature), so a caller can save it beside the buffers.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ExactProgress {
    /// Iterations done in the whole run.
    pub iteration: u64,
    /// The current round (rounds completed so far).
    pub round: u32,
    /// Iterations done in the current round.
    pub round_iteration: u64,
    /// The initial states and their ℓ are in place (drawn by the first
    /// [`ExactTempering::step`], or told by the first [`ExactTempering::tell`]).
    pub started: bool,
    /// A round has just ended: its records are cleared before the next iteration.
    pub closed: bool,
    /// Round trips, restarts and non-finite counts over the whole run.
    pub stats: IndexStats,
    /// `stats` when the current round started.
    pub round_base: IndexStats,
    /// The current round's batch estimates of the forward stepping stone.
    pub forward_batches: BatchMeans,
    /// The current round's batch estimates of the reverse stepping stone.
    pub reverse_batches: BatchMeans,
    /// Σ over the current batch's iterations of s_k = Σ_l (1 − α_{l,k}).
    pub barrier_batch_sum: f64,
    /// Iterations in that sum.
    pub barrier_batch_iterations: u64,
    /// The current round's batch means of s_k (for the standard error of Λ̂).
    pub barrier_batches: BatchMeans,
    /// The grid is re-placed at equal barrier after each round.
    pub adapt_grid: bool,
    /// The explorers' step sizes adapt.
    pub adapt_steps: bool,
    /// The report of the last completed round.
    pub last_round: Option<RoundReport>,
}

impl ExactProgress {
    /// A run that has not started.
    fn fresh(options: &ExactOptions) -> Self {
        ExactProgress {
            iteration: 0,
            round: 0,
            round_iteration: 0,
            started: false,
            closed: false,
            stats: IndexStats::default(),
            round_base: IndexStats::default(),
            forward_batches: BatchMeans::default(),
            reverse_batches: BatchMeans::default(),
            barrier_batch_sum: 0.0,
            barrier_batch_iterations: 0,
            barrier_batches: BatchMeans::default(),
            adapt_grid: options.schedule.adapt_grid,
            adapt_steps: options.explorer.adapt(),
            last_round: None,
        }
    }
}

impl<'a, P: AnnealingPath> ExactTempering<'a, P> {
    /// Checks the options, the path and every buffer length (P from `buffers.betas`, D
    /// from the path), then sets the grid, the step sizes, the permutation and the
    /// records. The path is not called until the first iteration.
    ///
    /// # Errors
    ///
    /// The first invalid option ([`ExactOptions::validate`]), path setting, buffer length
    /// ([`ExactBuffers::check`]) or, with [`InitialGrid::Keep`], grid point
    /// ([`check_grid`]).
    pub fn new(options: ExactOptions, path: P, buffers: ExactBuffers<'a>) -> Result<Self, Error> {
        let options = options.validate()?;
        path.validate()?;
        let dim = path.dim();
        buffers.check(dim, &options.explorer)?;
        Self::start_fresh(options, path, dim, buffers)
    }

    /// Continues a run: `buffers` hold its state as the run left them (as
    /// [`ExactTempering::into_buffers`] gives them back, or copies of them) and `progress`
    /// its [`ExactTempering::progress`]; `options` and `path` must be the ones it ran with.
    /// The run then goes on with the same bits as if it had never stopped. A run stopped
    /// by its path's error resumes without it, from its half-explored replicas.
    ///
    /// # Errors
    ///
    /// As [`ExactTempering::new`], and a state that cannot be a run's: a grid or barrier knots out of order, `replica_at` not a permutation
    /// whose inverse is `level_of`, a step size that is not finite and positive, a round
    /// already past its length.
    pub fn resume(
        options: ExactOptions,
        path: P,
        buffers: ExactBuffers<'a>,
        progress: ExactProgress,
    ) -> Result<Self, Error> {
        let options = options.validate()?;
        path.validate()?;
        let dim = path.dim();
        buffers.check(dim, &options.explorer)?;
        Self::continue_with(options, path, dim, buffers, progress)
    }

    /// A fresh run over checked options and buffers.
    fn start_fresh(
        options: ExactOptions,
        path: P,
        dim: usize,
        mut buffers: ExactBuffers<'a>,
    ) -> Result<Self, Error> {
        match options.schedule.initial_grid {
            InitialGrid::Uniform => uniform_grid(buffers.betas)?,
            InitialGrid::Keep => {
                check_grid(buffers.betas)?;
            }
        }
        let b = &mut buffers;
        init_identity(b.replica_at, b.level_of, b.trips);
        b.gates.fill(true);
        b.flags.fill(0);
        b.pairs.fill(PairRecord::default());
        b.levels.fill(LevelRecord {
            step: options.explorer.initial_step(),
            ..LevelRecord::default()
        });
        b.log_likelihoods.fill(f64::NAN);
        b.barrier_betas.copy_from_slice(b.betas);
        b.barrier_values.fill(0.0);
        b.scratch.fill(0.0);
        Ok(ExactTempering {
            path,
            options,
            b: buffers,
            dim,
            at: ExactProgress::fresh(&options),
            failure: None,
        })
    }

    /// A run continued over checked options and buffers, once its state is checked.
    fn continue_with(
        options: ExactOptions,
        path: P,
        dim: usize,
        mut buffers: ExactBuffers<'a>,
        progress: ExactProgress,
    ) -> Result<Self, Error> {
        check_state(&options, &mut buffers, &progress)?;
        Ok(ExactTempering {
            path,
            options,
            b: buffers,
            dim,
            at: progress,
            failure: None,
        })
    }

    /// Runs one iteration: every level explores, the windowed sweep swaps, the records
    /// are updated; if the iteration completes a round, the round is closed (report in
    /// [`ExactReport::round_end`], grid re-placed for the next one).
    ///
    /// # Errors
    ///
    /// The path's error; the replicas may then be half-explored, so every later call
    /// returns the same error.
    pub fn step(&mut self) -> Result<ExactReport, P::Error> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        let out = self.iterate();
        if let Err(e) = &out {
            self.failure = Some(e.clone());
        }
        out
    }

    /// One iteration whose exploration the caller did: `log_likelihoods[r]` is ℓ of
    /// replica r's state after the caller moved it at β = `betas()[level_of()[r]]`
    /// (**by replica**, as [`ExactTempering::log_likelihoods`] holds them), with any
    /// sampler that leaves π_β invariant (at β = 0, an exact draw from π₀ or such a
    /// sampler). Then exactly what [`ExactTempering::step`] runs after its own
    /// exploration: the stepping-stone terms, the windowed sweep of Metropolis swaps, the
    /// swap and round-trip records, the end of a batch or of a round (Λ̂, log Z, the grid
    /// re-placed). A run told the ℓ that another run's `step` computed makes that run's
    /// swaps, grids and estimates bit for bit; its [`RoundReport::explorer_acceptance`]
    /// is NaN (no explorer ran here) and the states in the buffer are not touched.
    ///
    /// A non-finite ℓ is taken as it is: its pairs get α = 0, never swap and are counted
    /// ([`ExactReport::nonfinite_pairs`]); a NaN or +∞ makes the round's stepping stone
    /// NaN or +∞ (−∞, a likelihood of zero, is a weight of zero). A path error of an
    /// earlier [`ExactTempering::step`] does not stop `tell` (every ℓ is replaced).
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] unless there is one ℓ per replica; nothing changes then.
    pub fn tell(&mut self, log_likelihoods: &[f64]) -> Result<ExactReport, Error> {
        check_len(
            "log_likelihoods",
            log_likelihoods.len(),
            self.b.log_likelihoods.len(),
        )?;
        self.open_iteration();
        self.b.log_likelihoods.copy_from_slice(log_likelihoods);
        self.at.started = true;
        Ok(self.close_iteration())
    }

    /// Runs the iterations left in the current round and returns its report.
    pub fn run_round(&mut self) -> Result<RoundReport, P::Error> {
        loop {
            if let Some(r) = self.step()?.round_end {
                return Ok(r);
            }
        }
    }

    fn iterate(&mut self) -> Result<ExactReport, P::Error> {
        if !self.at.started {
            self.start()?;
        }
        self.open_iteration();
        self.explore()?;
        // The grid's setting of this round: closing the round may not change it, but the
        // path adapts with the grid (AnnealingPath::end_round).
        let adapting = self.at.adapt_grid;
        let report = self.close_iteration();
        // The target level's state after the swaps (the buffers and the path are
        // borrowed apart).
        let (d, r) = (self.dim, self.b.replica_at[0] as usize);
        if let Some(x) = self.b.states.get(r * d..(r + 1) * d) {
            self.path.observe_target(x);
        }
        if report.round_end.is_some() && adapting && self.path.end_round()? {
            self.evaluate_again()?;
        }
        Ok(report)
    }

    /// The replica at the target level (level 0): its state, its ℓ and its round-trip
    /// state, for the exchange between the two legs of a
    /// [`TwoLegTempering`](super::TwoLegTempering).
    pub(super) fn target_slot(&mut self) -> (&mut [f64], &mut f64, &mut TripState) {
        let (d, r) = (self.dim, self.b.replica_at[0] as usize);
        (
            &mut self.b.states[r * d..(r + 1) * d],
            &mut self.b.log_likelihoods[r],
            &mut self.b.trips[r],
        )
    }

    /// ℓ of the target level's state again, under this run's path (after the state came
    /// from the other leg); an error stops the run as [`ExactTempering::step`]'s do.
    pub(super) fn evaluate_target(&mut self) -> Result<(), P::Error> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        let (d, r) = (self.dim, self.b.replica_at[0] as usize);
        match self.path.log_likelihood(&self.b.states[r * d..(r + 1) * d]) {
            Ok(ell) => {
                self.b.log_likelihoods[r] = ell;
                Ok(())
            }
            Err(e) => {
                self.failure = Some(e.clone());
                Err(e)
            }
        }
    }

    /// ℓ of every replica's state under the path as it is now (after the path changed at
    /// the end of a round).
    fn evaluate_again(&mut self) -> Result<(), P::Error> {
        let d = self.dim;
        for (r, x) in self.b.states.chunks(d).enumerate() {
            self.b.log_likelihoods[r] = self.path.log_likelihood(x)?;
        }
        Ok(())
    }

    /// Before an iteration's ℓ: the records of a round that has just ended are cleared.
    fn open_iteration(&mut self) {
        if self.at.closed {
            self.b.pairs.fill(PairRecord::default());
            self.b.levels.iter_mut().for_each(LevelRecord::clear_round);
            self.at.closed = false;
        }
    }

    /// Everything after the iteration's ℓ (explored or told): the stepping stones, the
    /// exchange, the counters, the end of a batch and of a round.
    fn close_iteration(&mut self) -> ExactReport {
        self.record_stepping_stones();
        let report = self.exchange();
        self.at.iteration += 1;
        self.at.round_iteration += 1;
        let n = self.round_length();
        if batch_of(self.at.round_iteration - 1, n).1 {
            self.close_batch();
        }
        let round_end = (self.at.round_iteration >= n).then(|| self.close_round());
        ExactReport {
            round_end,
            ..report
        }
    }

    /// Initial states (unless kept) and their ℓ.
    fn start(&mut self) -> Result<(), P::Error> {
        let o = self.options;
        let d = self.dim;
        for (r, x) in self.b.states.chunks_mut(d).enumerate() {
            if o.start == StartStates::Reference {
                let mut rng =
                    PhiloxStream::new(o.seed, o.ensemble, 0, r as u32, streams::EXACT_INIT);
                self.path.sample_reference(x, &mut rng)?;
            }
            self.b.log_likelihoods[r] = self.path.log_likelihood(x)?;
        }
        self.at.started = true;
        Ok(())
    }

    /// Every level moves its replica: MALA or HMC at β > 0, an exact draw at β = 0.
    fn explore(&mut self) -> Result<(), P::Error> {
        let o = self.options;
        let (d, k) = (self.dim, self.at.iteration);
        let b = &mut self.b;
        for (level, (&beta, rec)) in b.betas.iter().zip(b.levels.iter_mut()).enumerate() {
            let r = b.replica_at[level] as usize;
            let x = &mut b.states[r * d..(r + 1) * d];
            let mut rng =
                PhiloxStream::new(o.seed, o.ensemble, k, r as u32, streams::EXACT_EXPLORE);
            // (acceptance sum, proposals, accepted, ℓ at the final state)
            let (acceptance_sum, proposals, accepted, ell) = if beta == 0.0 {
                let out = reference_draw(&mut self.path, x, &mut rng)?;
                (0.0, 0, 0, out.log_likelihood)
            } else {
                match &o.explorer {
                    ExactExplorer::Mala(m) => {
                        let out = mala_unchecked(
                            &mut self.path,
                            beta,
                            rec.step,
                            m.steps_per_iteration,
                            x,
                            b.scratch,
                            &mut rng,
                        )?;
                        let (a, n, acc) = (out.acceptance_sum, out.proposals, out.accepted);
                        (a, n, acc, out.log_likelihood)
                    }
                    ExactExplorer::Hmc(h) => {
                        let out = hmc_unchecked(
                            &mut self.path,
                            beta,
                            rec.step,
                            h,
                            x,
                            b.scratch,
                            &mut rng,
                        )?;
                        let (a, n, acc) = (out.acceptance_sum, out.proposals, out.accepted);
                        (a, n, acc, out.log_likelihood)
                    }
                }
            };
            b.log_likelihoods[r] = ell;
            if proposals > 0 {
                rec.acceptance_sum += acceptance_sum;
                rec.proposals += u64::from(proposals);
                rec.accepted += u64::from(accepted);
                if self.at.adapt_steps {
                    let mean = acceptance_sum / f64::from(proposals);
                    rec.step = adapt_step(
                        rec.step,
                        rec.updates,
                        mean,
                        o.explorer.target_acceptance(),
                        o.explorer.decay(),
                    );
                    rec.updates += 1;
                }
            }
        }
        Ok(())
    }

    /// The forward and reverse stepping-stone terms of every pair, from the explored
    /// states before the swaps.
    fn record_stepping_stones(&mut self) {
        let b = &mut self.b;
        for (l, rec) in b.pairs.iter_mut().enumerate() {
            let gap = b.betas[l] - b.betas[l + 1];
            let ell_cold = b.log_likelihoods[b.replica_at[l] as usize];
            let ell_hot = b.log_likelihoods[b.replica_at[l + 1] as usize];
            let (fwd, rev) = (gap * ell_hot, -gap * ell_cold);
            rec.forward.push(fwd);
            rec.forward_batch.push(fwd);
            rec.reverse.push(rev);
            rec.reverse_batch.push(rev);
        }
    }

    /// The windowed sweep and the swap and round-trip book-keeping.
    fn exchange(&mut self) -> ExactReport {
        let o = self.options;
        let k = self.at.iteration;
        let b = &mut self.b;
        let pairs = &mut *b.pairs;
        let batch_sum = &mut self.at.barrier_batch_sum;
        let mut test =
            TemperedSwaps::new(b.betas, b.log_likelihoods, o.swap_test, |pair, alpha| {
                let rec = &mut pairs[pair];
                rec.tests += 1;
                rec.rejection_sum += 1.0 - alpha;
                *batch_sum += 1.0 - alpha;
            });
        self.at.barrier_batch_iterations += 1;
        let mut rng = PhiloxStream::new(o.seed, o.ensemble, k, ENSEMBLE_WIDE, streams::EXACT_SWAP);
        let swap = SwapBuffers {
            replica_at: b.replica_at,
            level_of: b.level_of,
            gates: b.gates,
            flags: b.flags,
        };
        let Ok(summary) = sweep_unchecked(k, o.scheme, swap, &mut rng, &mut test);

        let before = self.at.stats.round_trips;
        let top = b.betas.len() - 1;
        for (pair, (&f, rec)) in b.flags.iter().zip(b.pairs.iter_mut()).enumerate() {
            rec.attempts += u64::from(f & flags::ATTEMPT != 0);
            rec.nonfinite += u64::from(f & flags::NONFINITE != 0);
            if f & flags::SWAPPED != 0 {
                rec.swaps += 1;
                for level in [pair, pair + 1] {
                    let r = b.replica_at[level] as usize;
                    self.at
                        .stats
                        .record(observe_arrival(&mut b.trips[r], level, top));
                }
            }
        }
        self.at.stats.nonfinite_energies += u64::from(summary.nonfinite);
        self.at.stats.authors_round_trips +=
            u64::from(authors_pass(b.trips, b.replica_at, b.flags));
        ExactReport {
            swaps: summary.swaps,
            round_trips: (self.at.stats.round_trips - before) as u32,
            nonfinite_pairs: summary.nonfinite,
            round_end: None,
        }
    }

    /// One batch of the round is complete: its stepping-stone estimates.
    fn close_batch(&mut self) {
        let (mut fwd, mut rev) = (0.0, 0.0);
        for rec in self.b.pairs.iter_mut() {
            fwd += rec.forward_batch.log_mean();
            rev -= rec.reverse_batch.log_mean();
            rec.clear_batch();
        }
        self.at.forward_batches.push(fwd);
        self.at.reverse_batches.push(rev);
        self.at
            .barrier_batches
            .push(self.at.barrier_batch_sum / self.at.barrier_batch_iterations.max(1) as f64);
        self.at.barrier_batch_sum = 0.0;
        self.at.barrier_batch_iterations = 0;
    }

    /// The round's report; the barrier snapshot; the next grid; the next round.
    fn close_round(&mut self) -> RoundReport {
        let b = &mut self.b;
        let p = b.betas.len();
        // Λ̂ at the knots of this round's grid.
        b.barrier_betas.copy_from_slice(b.betas);
        let mut acc = 0.0;
        b.barrier_values[p - 1] = 0.0;
        for l in (0..p - 1).rev() {
            // NaN cannot occur (α is 0 for a non-finite ℓ); were it to, it counts as 1.
            let r = b.pairs[l].rejection_rate();
            acc += if r.is_nan() { 1.0 } else { r.clamp(0.0, 1.0) };
            b.barrier_values[l] = acc;
        }
        let rates = || b.pairs.iter().map(PairRecord::rejection_rate);
        let rejection_range = rates().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(r), hi.max(r))
        });
        let forward: f64 = b.pairs.iter().map(|r| r.forward.log_mean()).sum();
        let reverse: f64 = b.pairs.iter().map(|r| -r.reverse.log_mean()).sum();
        let (acc_sum, proposals) = b.levels.iter().fold((0.0, 0u64), |(a, n), l| {
            (a + l.acceptance_sum, n + l.proposals)
        });
        let mut report = RoundReport {
            round: self.at.round,
            iterations: self.at.round_iteration,
            global_barrier: acc,
            global_barrier_standard_error: self.at.barrier_batches.standard_error(),
            log_normalizer: Estimate {
                value: forward,
                standard_error: self.at.forward_batches.standard_error(),
            },
            log_normalizer_reverse: Estimate {
                value: reverse,
                standard_error: self.at.reverse_batches.standard_error(),
            },
            round_trips: self.at.stats.round_trips - self.at.round_base.round_trips,
            restarts: self.at.stats.restarts - self.at.round_base.restarts,
            predicted_round_trip_rate: rate_of(rates()),
            rejection_range,
            explorer_acceptance: acc_sum / proposals as f64,
            grid_adapted: false,
        };
        if self.at.adapt_grid && acc > 0.0 {
            let placed = Barrier::new(b.barrier_betas, b.barrier_values)
                .and_then(|barrier| barrier.equal_barrier_grid(b.betas));
            match placed {
                Ok(()) => report.grid_adapted = true,
                // A degenerate barrier: keep this round's grid.
                Err(_) => b.betas.copy_from_slice(b.barrier_betas),
            }
        }
        self.at.forward_batches.clear();
        self.at.reverse_batches.clear();
        self.at.barrier_batches.clear();
        self.at.round += 1;
        self.at.round_iteration = 0;
        self.at.round_base = self.at.stats;
        self.at.closed = true;
        self.at.last_round = Some(report);
        report
    }

    /// Iterations of the current round ([`ScheduleOptions::round_length`](super::ScheduleOptions::round_length)).
    pub fn round_length(&self) -> u64 {
        self.options.schedule.round_length(self.at.round)
    }

    /// The current round (from 0): rounds completed so far.
    pub fn round(&self) -> u32 {
        self.at.round
    }

    /// Iterations done in the whole run.
    pub fn iteration(&self) -> u64 {
        self.at.iteration
    }

    /// Iterations done in the current round.
    pub fn round_iteration(&self) -> u64 {
        self.at.round_iteration
    }

    /// Turns the grid's re-placement after each round on or off (off: the grid stays
    /// fixed from now on, as for a final measurement round). A path that adapts at the
    /// end of a round ([`AnnealingPath::end_round`]: a fitted variational reference)
    /// adapts only while the grid does.
    pub fn set_adapt_grid(&mut self, on: bool) {
        self.at.adapt_grid = on;
    }

    /// Turns the step-size adaptation on or off from the next iteration on.
    pub fn set_adapt_steps(&mut self, on: bool) {
        self.at.adapt_steps = on;
    }

    /// The barrier of the last completed round (Λ̂ = 0 everywhere before the first).
    pub fn barrier(&self) -> Barrier<'_> {
        // Valid by construction: a checked grid and sums of rates in [0, 1].
        Barrier::from_checked(self.b.barrier_betas, self.b.barrier_values)
    }

    /// The report of the last completed round.
    pub fn last_round(&self) -> Option<&RoundReport> {
        self.at.last_round.as_ref()
    }

    /// Round trips, restarts and non-finite counts over the whole run.
    pub fn stats(&self) -> IndexStats {
        self.at.stats
    }

    /// The current grid, by level.
    pub fn betas(&self) -> &[f64] {
        self.b.betas
    }

    /// Step sizes and acceptance, by level (the current round; after a round ends and
    /// until the next iteration, that round's).
    pub fn levels(&self) -> &[LevelRecord] {
        self.b.levels
    }

    /// Swap and stepping-stone records, by pair (same timing as [`Self::levels`]; the
    /// grid they belong to is [`Barrier::betas`] of [`Self::barrier`] once the round
    /// is closed).
    pub fn pairs(&self) -> &[PairRecord] {
        self.b.pairs
    }

    /// States, replica-major.
    pub fn states(&self) -> &[f64] {
        self.b.states
    }

    /// The state at `level` (level 0: the target's sample), or `None` past the last.
    pub fn state_at_level(&self, level: usize) -> Option<&[f64]> {
        let r = *self.b.replica_at.get(level)? as usize;
        self.b.states.get(r * self.dim..(r + 1) * self.dim)
    }

    /// ℓ of each replica's state, by replica.
    pub fn log_likelihoods(&self) -> &[f64] {
        self.b.log_likelihoods
    }

    /// Replica at each level.
    pub fn replica_at(&self) -> &[u32] {
        self.b.replica_at
    }

    /// Level of each replica.
    pub fn level_of(&self) -> &[u32] {
        self.b.level_of
    }

    /// The path.
    pub fn path(&self) -> &P {
        &self.path
    }

    /// The validated options.
    pub fn options(&self) -> &ExactOptions {
        &self.options
    }

    /// Where the run stands besides its buffers: with them, what
    /// [`ExactTempering::resume`] continues.
    pub fn progress(&self) -> ExactProgress {
        self.at
    }

    /// The error that stopped the run, if the path failed.
    pub fn failure(&self) -> Option<&P::Error> {
        self.failure.as_ref()
    }

    /// Gives the buffers back.
    pub fn into_buffers(self) -> ExactBuffers<'a> {
        self.b
    }
}

impl<'a> ExactTempering<'a, NoPath> {
    /// A run whose caller explores and calls [`ExactTempering::tell`] every iteration
    /// (nrpt keeps no states: `states` and `scratch` are empty,
    /// [`ExactBuffers::told_lengths`]). The options' explorer and start states play no
    /// part; everything else is as [`ExactTempering::new`].
    ///
    /// # Errors
    ///
    /// As [`ExactTempering::new`], with the lengths of [`ExactBuffers::told_lengths`].
    pub fn told(options: ExactOptions, buffers: ExactBuffers<'a>) -> Result<Self, Error> {
        let options = options.validate()?;
        buffers.check_told()?;
        Self::start_fresh(options, NoPath, 0, buffers)
    }

    /// Continues a run made by [`ExactTempering::told`], as [`ExactTempering::resume`].
    ///
    /// # Errors
    ///
    /// As [`ExactTempering::resume`], with the lengths of [`ExactBuffers::told_lengths`].
    pub fn resume_told(
        options: ExactOptions,
        buffers: ExactBuffers<'a>,
        progress: ExactProgress,
    ) -> Result<Self, Error> {
        let options = options.validate()?;
        buffers.check_told()?;
        Self::continue_with(options, NoPath, 0, buffers, progress)
    }
}

/// Checks that buffers of checked lengths and `progress` can be a state of a run with
/// `options`: the grid ([`check_grid`]) and the barrier's knots ([`Barrier::new`]) valid,
/// `replica_at` a permutation whose inverse is `level_of`, every step size finite and
/// positive, the current round not past its length, no more batches than
/// [`BATCHES`](super::BATCHES), nothing done before the start.
fn check_state(
    options: &ExactOptions,
    b: &mut ExactBuffers<'_>,
    progress: &ExactProgress,
) -> Result<(), Error> {
    check_grid(b.betas)?;
    Barrier::new(b.barrier_betas, b.barrier_values)?;
    SwapBuffers {
        replica_at: b.replica_at,
        level_of: b.level_of,
        gates: b.gates,
        flags: b.flags,
    }
    .check()?;
    if let Some(l) = b
        .levels
        .iter()
        .find(|l| !(l.step.is_finite() && l.step > 0.0))
    {
        return Err(Error::InvalidValue {
            name: "levels.step",
            value: l.step,
            allowed: "finite and > 0 at every level",
        });
    }
    let bad = |name, value: f64, allowed| {
        Err(Error::InvalidValue {
            name,
            value,
            allowed,
        })
    };
    let length = options.schedule.round_length(progress.round);
    if progress.round_iteration >= length {
        return bad(
            "progress.round_iteration",
            progress.round_iteration as f64,
            "below the length of the current round",
        );
    }
    if progress.round_iteration > progress.iteration {
        return bad(
            "progress.round_iteration",
            progress.round_iteration as f64,
            "at most the iterations of the run",
        );
    }
    if !progress.started && progress.iteration > 0 {
        return bad("progress.started", 0.0, "true once an iteration has run");
    }
    for batches in [
        &progress.forward_batches,
        &progress.reverse_batches,
        &progress.barrier_batches,
    ] {
        if batches.len() > BATCHES {
            return bad(
                "progress.batches",
                batches.len() as f64,
                "at most BATCHES batch estimates",
            );
        }
    }
    Ok(())
}
