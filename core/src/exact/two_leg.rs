//! Two legs joined at the target: a fixed reference and a variational one, the
//! *stabilized* ladder of Surjanovic, Syed, Bouchard-Côté and Campbell ("Parallel
//! tempering with a variational reference", NeurIPS 2022).
//!
//! A variational reference ([`VariationalPath`](super::VariationalPath)) shortens the
//! path when its fit is good; when the fit is poor (a multimodal target, a round too short
//! to see all of it) a ladder that anneals only from it can mix worse than the fixed one.
//! The stabilized ladder keeps both:
//!
//! ```text
//! π₀ (fixed) = F_{P−1} … F_1  F_0 = target = V_0  V_1 … V_{Q−1} = q (variational)
//! ```
//!
//! Each leg is an [`ExactTempering`] run of its own: its grid from 1 to 0, its barrier
//! and equal-barrier grid, its step sizes, its stepping stone (each leg estimates the same
//! log Z, because both references are normalized), its round trips. The two target
//! levels F_0 and V_0 hold the same distribution, so the pair (F_0, V_0) of the joined
//! ladder accepts every swap: `log A = log π₁(x_V) + log π₁(x_F) − log π₁(x_F) − log
//! π₁(x_V) = 0`. That pair is the only coupling; [`TwoLegTempering`] runs it as the
//! windowed sweep of the joined ladder would:
//!
//! - in the joined ladder, both legs' pair 0 and the middle pair have opposite parities,
//!   so with DEO_W the middle pair is eligible in the windows where the legs' pair 0 is
//!   not (parity 0); having acceptance 1 it swaps at the first iteration of each such
//!   window (its gate then closes for the window);
//! - with SEO the legs draw their parities apart, and the middle pair swaps with
//!   probability 1/2 from its own stream
//!   ([`EXACT_LEG_EXCHANGE`](crate::rng::streams::EXACT_LEG_EXCHANGE)).
//!
//! Swapping the two target replicas exchanges their states, their round-trip states
//! (so a tour is followed across the legs) and their ℓ, which each leg then evaluates
//! again under its own path (ℓ is log π₁ − log π₀ on one leg and log π₁ − log q on the
//! other): two evaluations of ℓ per exchange.
//!
//! A round trip is a replica's tour from the target to a reference (either) and back; the
//! ladder's count is the sum of the legs' counts, since a tour is counted by the leg in
//! which it returns. The legs run on Philox keys of their own (the variational leg's
//! ensemble word is the fixed leg's plus [`VARIATIONAL_LEG_ENSEMBLE`]), so their
//! randomness is independent.

use crate::error::Error;
use crate::rng::{ENSEMBLE_WIDE, PhiloxStream, streams};
use crate::window::{Scheme, is_window_start, window_parity};

use super::driver::ExactTempering;
use super::path::AnnealingPath;
use super::report::ExactReport;
use super::report::RoundReport;

/// What the variational leg adds to the fixed leg's ensemble word of the Philox key: a
/// run of ensemble e on two legs uses (seed, e) and (seed, e + 2³¹).
pub const VARIATIONAL_LEG_ENSEMBLE: u32 = 1 << 31;

/// Exact tempering on two legs that meet at the target (see the [module docs](self)):
/// `fixed` anneals from the fixed reference, `variational` from a fitted one (any path
/// with the same target and dimension).
#[derive(Debug)]
pub struct TwoLegTempering<'a, 'b, P: AnnealingPath, Q: AnnealingPath<Error = P::Error>> {
    fixed: ExactTempering<'a, P>,
    variational: ExactTempering<'b, Q>,
    exchanges: u64,
}

/// What one iteration of both legs did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TwoLegReport {
    /// The fixed leg's iteration.
    pub fixed: ExactReport,
    /// The variational leg's iteration.
    pub variational: ExactReport,
    /// Whether the two target levels exchanged their replicas.
    pub exchanged: bool,
}

impl TwoLegReport {
    /// Both legs' reports of the round this iteration completed (the legs share their
    /// schedule, so they end their rounds together).
    pub fn round_end(&self) -> Option<(RoundReport, RoundReport)> {
        Some((self.fixed.round_end?, self.variational.round_end?))
    }
}

impl<'a, 'b, P: AnnealingPath, Q: AnnealingPath<Error = P::Error>> TwoLegTempering<'a, 'b, P, Q> {
    /// Joins two runs at their target level; `exchanges` is the count of a run being
    /// resumed (0 for a new one). The legs may differ in their chains, explorers and
    /// start, not in what makes them one ladder.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidValue`] when the legs' dimensions, swap schemes, round schedules
    /// (first round length) or iterations differ, or when they share a Philox key
    /// (seed, ensemble), which would correlate their random numbers.
    pub fn new(
        fixed: ExactTempering<'a, P>,
        variational: ExactTempering<'b, Q>,
        exchanges: u64,
    ) -> Result<Self, Error> {
        let (f, v) = (fixed.options(), variational.options());
        let differ = |name: &'static str, allowed: &'static str| {
            Err(Error::InvalidValue {
                name,
                value: f64::NAN,
                allowed,
            })
        };
        if fixed.path().dim() != variational.path().dim() {
            return differ("two legs' dimensions", "the same dimension on both legs");
        }
        if f.scheme != v.scheme {
            return differ("two legs' schemes", "the same swap scheme on both legs");
        }
        if f.schedule.first_round != v.schedule.first_round {
            return differ("two legs' rounds", "the same first round on both legs");
        }
        if (fixed.iteration(), fixed.round_iteration())
            != (variational.iteration(), variational.round_iteration())
        {
            return differ("two legs' iterations", "both legs at the same iteration");
        }
        if (f.seed, f.ensemble) == (v.seed, v.ensemble) {
            return differ(
                "two legs' keys",
                "different Philox keys (seed, ensemble) on the two legs",
            );
        }
        Ok(TwoLegTempering {
            fixed,
            variational,
            exchanges,
        })
    }

    /// One iteration: each leg explores, swaps and keeps its records (closing a round
    /// when it completes one: grids re-placed, the variational reference fitted), then
    /// the two target levels exchange their replicas when the middle pair is eligible.
    ///
    /// # Errors
    ///
    /// A path's error; the run is then stopped (every later call returns an error).
    pub fn step(&mut self) -> Result<TwoLegReport, P::Error> {
        let k = self.fixed.iteration();
        let fixed = self.fixed.step()?;
        let variational = self.variational.step()?;
        let exchanged = self.middle_eligible(k);
        if exchanged {
            self.exchange()?;
        }
        Ok(TwoLegReport {
            fixed,
            variational,
            exchanged,
        })
    }

    /// Runs the iterations left in the current round and returns both legs' reports.
    pub fn run_round(&mut self) -> Result<(RoundReport, RoundReport), P::Error> {
        loop {
            if let Some(r) = self.step()?.round_end() {
                return Ok(r);
            }
        }
    }

    /// Whether the middle pair (F_0, V_0) swaps at iteration `k`: the first iteration
    /// of each DEO window of parity 0 (the legs' pair 0 takes parity 1), or for SEO the
    /// top bit of the iteration's [`streams::EXACT_LEG_EXCHANGE`] word.
    fn middle_eligible(&self, k: u64) -> bool {
        let o = self.fixed.options();
        match o.scheme {
            Scheme::Deo { window } => is_window_start(k, window) && window_parity(k, window) == 0,
            Scheme::Seo => {
                let mut rng = PhiloxStream::new(
                    o.seed,
                    o.ensemble,
                    k,
                    ENSEMBLE_WIDE,
                    streams::EXACT_LEG_EXCHANGE,
                );
                rand_core::Rng::next_u32(&mut rng) >> 31 == 1
            }
        }
    }

    /// The two target replicas trade their states and round-trip states; each leg
    /// evaluates ℓ of its new one.
    fn exchange(&mut self) -> Result<(), P::Error> {
        {
            let (xf, ef, tf) = self.fixed.target_slot();
            let (xv, ev, tv) = self.variational.target_slot();
            xf.swap_with_slice(xv);
            core::mem::swap(tf, tv);
            // Stale until evaluated: NaN never passes for a value.
            (*ef, *ev) = (f64::NAN, f64::NAN);
        }
        self.exchanges += 1;
        self.fixed.evaluate_target()?;
        self.variational.evaluate_target()
    }

    /// Exchanges of the two target replicas so far.
    pub fn exchanges(&self) -> u64 {
        self.exchanges
    }

    /// Round trips over the whole run, on both legs (a tour from the target to either
    /// reference and back).
    pub fn round_trips(&self) -> u64 {
        self.fixed.stats().round_trips + self.variational.stats().round_trips
    }

    /// Turns the grids' re-placement (and with it the variational fit) on or off on
    /// both legs ([`ExactTempering::set_adapt_grid`]).
    pub fn set_adapt_grid(&mut self, on: bool) {
        self.fixed.set_adapt_grid(on);
        self.variational.set_adapt_grid(on);
    }

    /// Turns the step-size adaptation on or off on both legs.
    pub fn set_adapt_steps(&mut self, on: bool) {
        self.fixed.set_adapt_steps(on);
        self.variational.set_adapt_steps(on);
    }

    /// The fixed leg.
    pub fn fixed(&self) -> &ExactTempering<'a, P> {
        &self.fixed
    }

    /// The variational leg.
    pub fn variational(&self) -> &ExactTempering<'b, Q> {
        &self.variational
    }

    /// Iterations done (the same on both legs).
    pub fn iteration(&self) -> u64 {
        self.fixed.iteration()
    }

    /// Iterations done in the current round.
    pub fn round_iteration(&self) -> u64 {
        self.fixed.round_iteration()
    }

    /// Iterations of the current round.
    pub fn round_length(&self) -> u64 {
        self.fixed.round_length()
    }

    /// The two legs and the exchanges, to save or to take apart; [`TwoLegTempering::new`]
    /// over the legs resumed from their progress and this count continues the run.
    pub fn into_legs(self) -> (ExactTempering<'a, P>, ExactTempering<'b, Q>, u64) {
        (self.fixed, self.variational, self.exchanges)
    }
}
