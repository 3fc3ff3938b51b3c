//! The Metropolis swap between two inverse temperatures, as a [`PairTest`] for the one
//! windowed sweep, [`crate::swap::sweep_with`].
//!
//! # The sign, in nrpt's level order
//!
//! Level l has inverse temperature β_l, with β_0 = 1 (target) > β_1 > … > β_{P−1} = 0
//! (reference). The pair (l, l + 1) holds x_l at β_l and x_{l+1} at β_{l+1}; a swap
//! proposes x_{l+1} at β_l and x_l at β_{l+1}. With log π_β = log π₀ + β ℓ − log Z(β),
//! the reference terms and normalizers cancel in the Metropolis ratio:
//!
//! ```text
//! log A = β_l ℓ(x_{l+1}) + β_{l+1} ℓ(x_l) − β_l ℓ(x_l) − β_{l+1} ℓ(x_{l+1})
//!       = (β_l − β_{l+1}) (ℓ(x_{l+1}) − ℓ(x_l)),
//! ```
//!
//! and the swap is accepted with probability min(1, e^{log A}). Since β_l > β_{l+1}, a
//! hotter state with the higher likelihood always moves down towards the target.
//!
//! # What each pair test records
//!
//! Every pair is tested at every iteration, eligible or not, from the states *before*
//! this iteration's swaps (the paper's simultaneous order: a pair whose lower
//! neighbour just swapped is tested with the state that was at its lower level before
//! that swap). The acceptance probability α_l = min(1, e^{log A}) of each test goes to
//! a callback: 1 − α_l is the Rao–Blackwellized rejection whose mean is the rejection
//! rate r_l of Syed et al. (less noisy than counting 0/1 outcomes of attempted swaps,
//! and available for the pairs that are not eligible). A non-finite ℓ gives α = 0 and
//! the indicator `None` (counted, never swaps).
//!
//! One uniform word per pair, in pair order, is drawn from the sweep's stream whatever
//! the outcome, so the stream's layout is fixed
//! ([`EXACT_SWAP`](crate::rng::streams::EXACT_SWAP)).

use core::convert::Infallible;

use rand_core::Rng;

use crate::rng::UnitDraw;
use crate::swap::PairTest;

/// How the pairs decide to swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SwapTest {
    /// The Metropolis swap of the [module docs](self) (the sampler).
    #[default]
    Metropolis,
    /// Every pair test says "swap", whatever the states (the rejection statistics are
    /// still the Metropolis ones). A diagnostic: the index process then runs
    /// deterministically under DEO, with round trips that can be counted exactly. The
    /// chain is then *not* a valid sampler.
    AcceptAll,
}

/// `log A = (β_l − β_{l+1})(ℓ(x_{l+1}) − ℓ(x_l))` for the pair (l, l + 1), from the cold
/// side (`beta_cold = β_l`, `ell_cold = ℓ(x_l)`) and the hot side.
#[inline]
pub fn swap_log_ratio(beta_cold: f64, beta_hot: f64, ell_cold: f64, ell_hot: f64) -> f64 {
    (beta_cold - beta_hot) * (ell_hot - ell_cold)
}

/// `min(1, e^{log A})` from [`swap_log_ratio`]; 0 when an ℓ is not finite.
#[inline]
pub fn swap_acceptance(beta_cold: f64, beta_hot: f64, ell_cold: f64, ell_hot: f64) -> f64 {
    if !(ell_cold.is_finite() && ell_hot.is_finite()) {
        return 0.0;
    }
    let log_a = swap_log_ratio(beta_cold, beta_hot, ell_cold, ell_hot);
    if log_a >= 0.0 { 1.0 } else { libm::exp(log_a) }
}

/// The tempered Metropolis swap as a [`PairTest`]: reads β by level and ℓ by replica,
/// reports `(pair, α)` of every test to `record`.
pub struct TemperedSwaps<'a, F> {
    /// β of each level (length P).
    pub betas: &'a [f64],
    /// ℓ of each replica's state (length P).
    pub log_likelihoods: &'a [f64],
    /// Metropolis, or the accept-everything diagnostic.
    pub test: SwapTest,
    /// Called with `(pair, α)` for every pair test, α from the states before this
    /// iteration's swaps.
    pub record: F,
    /// The pair that swapped last in this pass (the simultaneous order).
    swapped_below: Option<usize>,
}

impl<'a, F: FnMut(usize, f64)> TemperedSwaps<'a, F> {
    /// A test for one sweep (make a new one for every iteration).
    pub fn new(betas: &'a [f64], log_likelihoods: &'a [f64], test: SwapTest, record: F) -> Self {
        TemperedSwaps {
            betas,
            log_likelihoods,
            test,
            record,
            swapped_below: None,
        }
    }
}

impl<R: Rng + ?Sized, F: FnMut(usize, f64)> PairTest<R> for TemperedSwaps<'_, F> {
    type Error = Infallible;

    // Inlined into the sweep, where it runs once per pair and iteration: whether the
    // compiler does so on its own depends on how it splits the crate that instantiates
    // it (an unrelated change elsewhere in nrpt-host moved it out of line: 1 % more
    // instructions in `nrpt run --target gaussian-path --dim 2`).
    #[inline]
    fn indicator(
        &mut self,
        pair: usize,
        replica_at: &[u32],
        rng: &mut R,
    ) -> Result<Option<bool>, Infallible> {
        // The cold state before this pass: moved down to `pair − 1` if that pair swapped.
        let cold_level = if pair > 0 && self.swapped_below == Some(pair - 1) {
            pair - 1
        } else {
            pair
        };
        let ell_cold = self.log_likelihoods[replica_at[cold_level] as usize];
        let ell_hot = self.log_likelihoods[replica_at[pair + 1] as usize];
        let (b_cold, b_hot) = (self.betas[pair], self.betas[pair + 1]);
        let u = f64::uniform(rng.next_u32());
        (self.record)(pair, swap_acceptance(b_cold, b_hot, ell_cold, ell_hot));
        if !(ell_cold.is_finite() && ell_hot.is_finite()) {
            return Ok(None);
        }
        Ok(Some(match self.test {
            SwapTest::AcceptAll => true,
            SwapTest::Metropolis => {
                let log_a = swap_log_ratio(b_cold, b_hot, ell_cold, ell_hot);
                log_a >= 0.0 || f64::ln_uniform(u) < log_a
            }
        }))
    }

    fn swapped(&mut self, pair: usize) {
        self.swapped_below = Some(pair);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::init_identity;
    use crate::rng::{PhiloxStream, streams};
    use crate::swap::{SwapBuffers, sweep_with};
    use crate::window::Scheme;

    /// Level 0 is β = 1: a hot state with the higher ℓ always moves down; the other way
    /// round is accepted with probability e^{−Δβ Δℓ}.
    #[test]
    fn the_better_state_goes_to_the_target() {
        assert_eq!(swap_acceptance(1.0, 0.0, -5.0, 0.0), 1.0);
        assert!((swap_acceptance(1.0, 0.0, 0.0, -5.0) - libm::exp(-5.0)).abs() < 1e-16);
        assert!((swap_acceptance(0.8, 0.6, 0.0, -5.0) - libm::exp(-1.0)).abs() < 1e-15);
        assert_eq!(swap_acceptance(0.8, 0.6, f64::NAN, 0.0), 0.0);
        assert_eq!(swap_acceptance(0.8, 0.6, 0.0, f64::NEG_INFINITY), 0.0);
    }

    /// Through the sweep: the rate of executed swaps of pair 0 (eligible at odd k)
    /// matches e^{−Δβ Δℓ}, and the recorded α is that probability.
    #[test]
    fn sweep_swaps_with_the_metropolis_probability() {
        let betas = [1.0, 0.5];
        // Replica 0 (level 0) has ℓ = 0, replica 1 (level 1) ℓ = −2: A = e^{−1}.
        let ells = [0.0, -2.0];
        let want = libm::exp(-1.0);
        let n = 100_000u64;
        let mut swaps = 0u64;
        for k in 0..n {
            let (mut at, mut of, mut trips) = ([0u32; 2], [0u32; 2], [0u8; 2]);
            init_identity(&mut at, &mut of, &mut trips);
            let (mut gates, mut flags) = ([true; 1], [0u8; 1]);
            let mut seen = f64::NAN;
            let mut test = TemperedSwaps::new(&betas, &ells, SwapTest::Metropolis, |_, a| seen = a);
            let mut rng =
                PhiloxStream::new(3, 0, k, crate::rng::ENSEMBLE_WIDE, streams::EXACT_SWAP);
            let b = SwapBuffers {
                replica_at: &mut at,
                level_of: &mut of,
                gates: &mut gates,
                flags: &mut flags,
            };
            let s = sweep_with(2 * k + 1, Scheme::VANILLA_DEO, b, &mut rng, &mut test)
                .unwrap()
                .unwrap();
            swaps += u64::from(s.swaps);
            assert!((seen - want).abs() < 1e-15);
        }
        let rate = swaps as f64 / n as f64;
        // Binomial standard error ≈ 0.0015: allow 4 of them.
        assert!((rate - want).abs() < 0.006, "rate {rate} vs {want}");
    }

    /// Simultaneous order: after pair 0 swaps, pair 1 is tested with the state that was
    /// at level 1 before the swap.
    #[test]
    fn pairs_see_the_states_before_the_sweep() {
        let betas = [1.0, 0.5, 0.0];
        let ells = [-10.0, 0.0, -3.0];
        let (mut at, mut of, mut trips) = ([0u32; 3], [0u32; 3], [0u8; 3]);
        init_identity(&mut at, &mut of, &mut trips);
        let (mut gates, mut flags) = ([true; 2], [0u8; 2]);
        let mut alphas = [0.0; 2];
        let mut test =
            TemperedSwaps::new(&betas, &ells, SwapTest::Metropolis, |p, a| alphas[p] = a);
        let mut rng = PhiloxStream::new(0, 0, 0, 0, streams::EXACT_SWAP);
        let b = SwapBuffers {
            replica_at: &mut at,
            level_of: &mut of,
            gates: &mut gates,
            flags: &mut flags,
        };
        // k = 1: parity 1, pair 0 eligible; ℓ(x₁) = 0 > ℓ(x₀): it swaps for sure.
        let s = sweep_with(1, Scheme::VANILLA_DEO, b, &mut rng, &mut test)
            .unwrap()
            .unwrap();
        assert_eq!(s.swaps, 1);
        assert_eq!(at, [1, 0, 2]);
        // Pair 1 tested replica 1 (ℓ = 0, at level 1 before the sweep) against replica 2.
        assert!((alphas[1] - libm::exp(-0.5 * 3.0)).abs() < 1e-15);
        assert_eq!(alphas[0], 1.0);
    }
}
