//! Swap rules and the sweep that applies them to one ensemble.
//!
//! Two rules decide the *swap indicator* s_l of the adjacent levels (l, l + 1), given
//! the energies e_l and e_{l+1} of the replicas at those levels:
//!
//! - the **buffered deterministic rule** (Deng et al., AAAI 2023, Eq. 7), for SGD
//!   explorers whose temperatures are unknown: `s_l = 1[e_{l+1} + C < e_l]` with a
//!   correction buffer C > 0 that absorbs the noise of stochastic energies;
//! - the **Metropolis rule** (their Eq. 2), for exact energies and known temperatures
//!   τ: swap with probability `min(1, exp((1/τ_l − 1/τ_{l+1})(e_l − e_{l+1})))`.
//!
//! A non-finite energy never wins a swap: its indicator is 0 and it is flagged.
//!
//! The sweep computes every pair's indicator (all of them feed the adaptation) and
//! executes the swaps of the eligible pairs whose gates are open (see
//! [`crate::window`]). Eligible pairs are disjoint, so their swaps commute; the
//! indicators of the other pairs depend on the [`SweepOrder`]: from the states before
//! this iteration's swaps (the paper), or each seeing the swaps below it (the authors'
//! code). [`sweep_with`] is the one implementation of the windowed pass, over any
//! [`PairTest`].
//!
//! Kept whole past 600 lines: the two swap rules and the sweep are about 420 lines; the
//! rest are their tests.

use rand_core::Rng;

use crate::error::{Error, check_chains, check_len};
use crate::float::Float;
use crate::rng::UnitDraw;
use crate::rules::SweepOrder;
use crate::window::{Scheme, is_window_start, pair_eligible, window_parity};

/// Bit flags recorded per pair by [`sweep`].
pub mod flags {
    /// The swap indicator was 1.
    pub const INDICATOR: u8 = 1;
    /// The pair was eligible with an open gate: a swap was attempted.
    pub const ATTEMPT: u8 = 2;
    /// The swap was executed.
    pub const SWAPPED: u8 = 4;
    /// One of the two energies was not finite.
    pub const NONFINITE: u8 = 8;
}

/// Exchanges the replicas at levels `pair` and `pair + 1` (buffers checked by the
/// caller: `pair + 1 < P`, a permutation and its inverse).
#[inline]
pub(crate) fn swap_levels(pair: usize, replica_at: &mut [u32], level_of: &mut [u32]) {
    let a = replica_at[pair];
    let b = replica_at[pair + 1];
    replica_at[pair] = b;
    replica_at[pair + 1] = a;
    level_of[b as usize] = pair as u32;
    level_of[a as usize] = (pair + 1) as u32;
}

/// Which rule turns two energies into a swap indicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapRule {
    /// `e_{l+1} + C < e_l` with the adaptive correction buffer C (paper Eq. 7).
    Buffered,
    /// Metropolis acceptance with the level temperatures (paper Eq. 2).
    Metropolis,
}

impl SwapRule {
    /// Numeric code used in `#[repr(C)]` parameter blocks.
    pub fn code(self) -> u32 {
        match self {
            SwapRule::Buffered => 0,
            SwapRule::Metropolis => 1,
        }
    }
}

/// The rule with the numbers it needs at one iteration.
#[derive(Clone, Copy, Debug)]
pub enum RuleInputs<'a, F> {
    /// Buffered rule with buffer C.
    Buffered {
        /// The correction buffer C.
        buffer: F,
    },
    /// Metropolis rule with the temperature of every level (all > 0).
    Metropolis {
        /// Temperatures τ_l by level, length P.
        temperatures: &'a [f64],
    },
}

/// Buffered indicator `e_hot + buffer < e_cold`; `None` when an energy is not finite.
///
/// `e_cold` is the energy at level l, `e_hot` at level l + 1.
#[inline]
pub fn buffered_indicator<F: Float>(e_cold: F, e_hot: F, buffer: F) -> Option<bool> {
    if e_cold.is_finite() && e_hot.is_finite() {
        Some(e_hot + buffer < e_cold)
    } else {
        None
    }
}

/// Log acceptance ratio of the Metropolis rule, `(1/τ_l − 1/τ_{l+1}) (e_l − e_{l+1})`.
#[inline]
pub fn metropolis_log_ratio<F: Float>(e_cold: F, e_hot: F, t_cold: f64, t_hot: f64) -> F {
    F::from_f64(1.0 / t_cold - 1.0 / t_hot) * (e_cold - e_hot)
}

/// Metropolis indicator with a uniform `u` in (0, 1): 1 iff `ln u < log ratio`, which
/// has probability `min(1, exp(log ratio))`; `None` when an energy is not finite. The
/// logarithm is [`UnitDraw::ln_uniform`] (branch-free for `f32`, so GPUs agree).
#[inline]
pub fn metropolis_indicator<F: UnitDraw>(
    e_cold: F,
    e_hot: F,
    t_cold: f64,
    t_hot: f64,
    uniform: F,
) -> Option<bool> {
    if !(e_cold.is_finite() && e_hot.is_finite()) {
        return None;
    }
    let log_ratio = metropolis_log_ratio(e_cold, e_hot, t_cold, t_hot);
    Some(log_ratio >= F::ZERO || F::ln_uniform(uniform) < log_ratio)
}

/// The permutation, gates and flags of one ensemble, indexed by level or pair.
#[derive(Debug)]
pub struct SwapBuffers<'a> {
    /// Replica at each level (length P).
    pub replica_at: &'a mut [u32],
    /// Level of each replica (length P).
    pub level_of: &'a mut [u32],
    /// Gate of each pair (length P − 1); `true` = open.
    pub gates: &'a mut [bool],
    /// Output: [`flags`] of each pair (length P − 1).
    pub flags: &'a mut [u8],
}

impl SwapBuffers<'_> {
    /// Checks the lengths (P ≥ 2 from `replica_at`, P − 1 for gates and flags) and
    /// that `replica_at` and `level_of` are a permutation and its inverse; returns P.
    /// O(P), no allocation.
    pub fn check(&self) -> Result<usize, Error> {
        let p = self.replica_at.len();
        check_chains(p)?;
        check_len("level_of", self.level_of.len(), p)?;
        check_len("gates", self.gates.len(), p - 1)?;
        check_len("flags", self.flags.len(), p - 1)?;
        // level_of[replica_at[l]] == l for every l makes replica_at injective, hence a
        // permutation of 0 … P − 1, and level_of its inverse.
        for (level, &r) in self.replica_at.iter().enumerate() {
            match self.level_of.get(r as usize) {
                Some(&back) if back as usize == level => {}
                _ => {
                    return Err(Error::InvalidValue {
                        name: "replica_at",
                        value: f64::from(r),
                        allowed: "a permutation of 0 .. P whose inverse is level_of",
                    });
                }
            }
        }
        Ok(p)
    }

    /// Re-borrows every buffer for a shorter lifetime.
    pub fn reborrow(&mut self) -> SwapBuffers<'_> {
        SwapBuffers {
            replica_at: self.replica_at,
            level_of: self.level_of,
            gates: self.gates,
            flags: self.flags,
        }
    }
}

/// The buffers an energy-based [`sweep`] reads and updates.
#[derive(Debug)]
pub struct SweepBuffers<'a, F> {
    /// Energy of the replica at each level (length P); swapped along with replicas.
    pub energies: &'a mut [F],
    /// Permutation, gates and flags.
    pub swap: SwapBuffers<'a>,
}

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepSummary {
    /// Pairs with indicator 1.
    pub indicators: u32,
    /// Swaps executed.
    pub swaps: u32,
    /// Pairs with a non-finite energy.
    pub nonfinite: u32,
}

/// How a sweep finds the swap indicator of each pair: from energies by level, from
/// fresh oracle draws, or from a model of the indicators (an index-process
/// simulation).
pub trait PairTest<R: ?Sized> {
    /// Error of a failed test (an energy oracle that fails, say).
    type Error;

    /// The indicator of pair (l, l + 1) = (`pair`, `pair` + 1): `Some(true)` to swap,
    /// `None` when an energy is not finite (counted, never swaps). `replica_at` is the
    /// permutation as it stands at this point of the pass, after the swaps of the
    /// lower pairs in this sweep.
    fn indicator(
        &mut self,
        pair: usize,
        replica_at: &[u32],
        rng: &mut R,
    ) -> Result<Option<bool>, Self::Error>;

    /// Pair `pair` has just swapped (before the next pair is tested).
    fn swapped(&mut self, _pair: usize) {}
}

/// A [`PairTest`] from a closure `(pair, rng) → indicator` that needs neither the
/// permutation nor to hear of swaps.
pub struct FnTest<T>(pub T);

impl<R: ?Sized, T: FnMut(usize, &mut R) -> Option<bool>> PairTest<R> for FnTest<T> {
    type Error = core::convert::Infallible;

    #[inline]
    fn indicator(
        &mut self,
        pair: usize,
        _replica_at: &[u32],
        rng: &mut R,
    ) -> Result<Option<bool>, Self::Error> {
        Ok((self.0)(pair, rng))
    }
}

/// The windowed sweep over any source of indicators: the one piece of swap logic that
/// the driver, the energy-based [`sweep`] and index-process simulations share.
///
/// At iteration `k`: for DEO, all gates open if `k` starts a window; for SEO one word is
/// drawn from `rng` and its top bit is the parity. Then for every pair l = 0 … P − 2 in
/// order, `test` gives its swap indicator (`None`: non-finite energies, counted, never
/// swaps); an eligible pair with an open gate (any eligible pair for SEO) and
/// indicator 1 swaps on the permutation, closes its gate and is reported to
/// `test.swapped`. Flags go to `b.flags`.
///
/// Checks the buffers first ([`SwapBuffers::check`]); an error of `test` stops the
/// sweep where it happened (the pairs before it are done).
pub fn sweep_with<R: Rng + ?Sized, T: PairTest<R>>(
    k: u64,
    scheme: Scheme,
    b: SwapBuffers<'_>,
    rng: &mut R,
    test: &mut T,
) -> Result<Result<SweepSummary, T::Error>, Error> {
    scheme.validate()?;
    b.check()?;
    Ok(sweep_unchecked(k, scheme, b, rng, test))
}

/// [`sweep_with`] for buffers the caller has checked once (the driver, the index
/// process).
pub(crate) fn sweep_unchecked<R: Rng + ?Sized, T: PairTest<R>>(
    k: u64,
    scheme: Scheme,
    b: SwapBuffers<'_>,
    rng: &mut R,
    test: &mut T,
) -> Result<SweepSummary, T::Error> {
    let (parity, gated) = match scheme {
        Scheme::Deo { window } => {
            if is_window_start(k, window) {
                b.gates.fill(true);
            }
            (window_parity(k, window), true)
        }
        Scheme::Seo => (rng.next_u32() >> 31, false),
    };
    let mut summary = SweepSummary::default();
    for (pair, out) in b.flags.iter_mut().enumerate() {
        let mut f = 0u8;
        match test.indicator(pair, b.replica_at, rng)? {
            None => {
                f |= flags::NONFINITE;
                summary.nonfinite += 1;
            }
            Some(true) => {
                f |= flags::INDICATOR;
                summary.indicators += 1;
            }
            Some(false) => {}
        }
        if pair_eligible(pair, parity) && (!gated || b.gates[pair]) {
            f |= flags::ATTEMPT;
            if f & flags::INDICATOR != 0 {
                f |= flags::SWAPPED;
                summary.swaps += 1;
                swap_levels(pair, b.replica_at, b.level_of);
                if gated {
                    b.gates[pair] = false;
                }
                test.swapped(pair);
            }
        }
        *out = f;
    }
    Ok(summary)
}

/// The indicator of one pair from the two energies by `rule`, drawing the Metropolis
/// uniform from `rng` (one word, drawn whether or not the energies are finite).
#[inline]
pub(crate) fn rule_indicator<F: UnitDraw, R: Rng + ?Sized>(
    rule: RuleInputs<'_, F>,
    pair: usize,
    e_cold: F,
    e_hot: F,
    rng: &mut R,
) -> Option<bool> {
    match rule {
        RuleInputs::Buffered { buffer } => buffered_indicator(e_cold, e_hot, buffer),
        RuleInputs::Metropolis { temperatures } => {
            let u = F::uniform(rng.next_u32());
            let (t_cold, t_hot) = (temperatures[pair], temperatures[pair + 1]);
            metropolis_indicator(e_cold, e_hot, t_cold, t_hot, u)
        }
    }
}

/// Indicators from energies by level (the paper's [`crate::rules::PairEnergies::PerLevel`]).
pub(crate) struct LevelEnergies<'e, 'r, F> {
    pub(crate) energies: &'e mut [F],
    pub(crate) rule: RuleInputs<'r, F>,
    pub(crate) order: SweepOrder,
}

impl<F: UnitDraw, R: Rng + ?Sized> PairTest<R> for LevelEnergies<'_, '_, F> {
    type Error = core::convert::Infallible;

    #[inline]
    fn indicator(
        &mut self,
        pair: usize,
        _replica_at: &[u32],
        rng: &mut R,
    ) -> Result<Option<bool>, Self::Error> {
        let (e_cold, e_hot) = (self.energies[pair], self.energies[pair + 1]);
        Ok(rule_indicator(self.rule, pair, e_cold, e_hot, rng))
    }

    #[inline]
    fn swapped(&mut self, pair: usize) {
        // Sequential: the energies follow their replicas at once, so the next pair's
        // test sees the state that moved up. Simultaneous: after the pass.
        if self.order == SweepOrder::Sequential {
            self.energies.swap(pair, pair + 1);
        }
    }
}

impl<F> LevelEnergies<'_, '_, F> {
    /// After a simultaneous pass, moves the energies with their replicas.
    pub(crate) fn finish(&mut self, flags_out: &[u8]) {
        if self.order == SweepOrder::Simultaneous {
            for (pair, &f) in flags_out.iter().enumerate() {
                if f & flags::SWAPPED != 0 {
                    self.energies.swap(pair, pair + 1);
                }
            }
        }
    }
}

/// One sweep at iteration `k` on the energies of the replicas by level: indicators for
/// every pair by `rule`, in the given `order`, then the eligible swaps (see
/// [`sweep_with`]); the energies move with their replicas.
///
/// Random words are drawn from `rng` only where needed, in this order: for SEO one word
/// whose top bit is the parity; for the Metropolis rule one word per pair, pairs in
/// order 0 … P − 2, turned into a uniform by [`UnitDraw::uniform`]. With DEO and the
/// buffered rule nothing is drawn.
///
/// Checks every length (energies and, for the Metropolis rule, temperatures of
/// length P) and the permutation first.
pub fn sweep<F: UnitDraw, R: Rng + ?Sized>(
    k: u64,
    scheme: Scheme,
    order: SweepOrder,
    rule: RuleInputs<'_, F>,
    b: SweepBuffers<'_, F>,
    rng: &mut R,
) -> Result<SweepSummary, Error> {
    scheme.validate()?;
    let p = b.swap.check()?;
    check_len("energies", b.energies.len(), p)?;
    if let RuleInputs::Metropolis { temperatures } = rule {
        check_len("temperatures", temperatures.len(), p)?;
    }
    Ok(sweep_levels(k, scheme, order, rule, b, rng))
}

/// [`sweep`] without the checks.
pub(crate) fn sweep_levels<F: UnitDraw, R: Rng + ?Sized>(
    k: u64,
    scheme: Scheme,
    order: SweepOrder,
    rule: RuleInputs<'_, F>,
    b: SweepBuffers<'_, F>,
    rng: &mut R,
) -> SweepSummary {
    let SweepBuffers { energies, mut swap } = b;
    let mut test = LevelEnergies {
        energies,
        rule,
        order,
    };
    let Ok(summary) = sweep_unchecked(k, scheme, swap.reborrow(), rng, &mut test);
    test.finish(swap.flags);
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::init_identity;
    use crate::rng::{PhiloxStream, streams};
    use rand_core::Rng;

    #[test]
    fn buffered_rule_needs_the_hot_energy_below_by_the_buffer() {
        assert_eq!(buffered_indicator(10.0f64, 5.0, 4.0), Some(true));
        assert_eq!(buffered_indicator(10.0f64, 6.0, 4.0), Some(false));
        assert_eq!(buffered_indicator(10.0f64, 7.0, 4.0), Some(false));
        assert_eq!(buffered_indicator(f64::NAN, 7.0, 4.0), None);
        assert_eq!(buffered_indicator(1.0f32, f32::NEG_INFINITY, 4.0), None);
    }

    #[test]
    fn metropolis_matches_its_probability() {
        // τ = 1 and 2, e_cold − e_hot = −1: ratio exp((1 − 0.5)(−1)) = exp(−0.5).
        let p = libm::exp(-0.5);
        let n = 200_000u32;
        let mut rng = PhiloxStream::new(7, 0, 0, 0, 3);
        let mut hits = 0u32;
        for _ in 0..n {
            let u = f64::uniform(rng.next_u32());
            hits += u32::from(metropolis_indicator(1.0f64, 2.0, 1.0, 2.0, u).unwrap_or(false));
        }
        let rate = f64::from(hits) / f64::from(n);
        // Binomial standard error sqrt(p(1 − p)/n) ≈ 0.0011: allow 5 of them.
        assert!((rate - p).abs() < 0.0055, "rate {rate} vs {p}");
        // Downhill in the right direction always swaps.
        assert_eq!(
            metropolis_indicator(2.0f64, 1.0, 1.0, 2.0, 0.999),
            Some(true)
        );
        assert_eq!(metropolis_indicator(f64::NAN, 1.0, 1.0, 2.0, 0.5), None);
    }

    struct Ens {
        energies: [f64; 6],
        at: [u32; 6],
        of: [u32; 6],
        gates: [bool; 5],
        flags: [u8; 5],
    }

    impl Ens {
        fn new() -> Self {
            let mut e = Ens {
                energies: [0.0; 6],
                at: [0; 6],
                of: [0; 6],
                gates: [false; 5],
                flags: [0; 5],
            };
            let mut trips = [0u8; 6];
            init_identity(&mut e.at, &mut e.of, &mut trips);
            e
        }
        fn sweep(&mut self, k: u64, scheme: Scheme, rng: &mut PhiloxStream) -> SweepSummary {
            self.sweep_in(k, scheme, SweepOrder::Simultaneous, rng)
        }
        fn sweep_in(
            &mut self,
            k: u64,
            scheme: Scheme,
            order: SweepOrder,
            rng: &mut PhiloxStream,
        ) -> SweepSummary {
            sweep(
                k,
                scheme,
                order,
                RuleInputs::Buffered { buffer: 0.5 },
                SweepBuffers {
                    energies: &mut self.energies,
                    swap: SwapBuffers {
                        replica_at: &mut self.at,
                        level_of: &mut self.of,
                        gates: &mut self.gates,
                        flags: &mut self.flags,
                    },
                },
                rng,
            )
            .unwrap()
        }
    }

    /// Property test of the window: random energies every iteration; each pair swaps at
    /// most once per window, only in windows of its parity, and gates reopen exactly
    /// at window starts.
    #[test]
    fn at_most_one_swap_per_pair_per_window() {
        for window in [1u32, 2, 3, 8] {
            let mut e = Ens::new();
            let mut draws = PhiloxStream::new(11, window, 0, 0, 0);
            let mut swaps_in_window = [0u32; 5];
            let mut attempts_after_swap = 0u32;
            for k in 0..4000u64 {
                if k % u64::from(window) == 0 {
                    swaps_in_window = [0; 5];
                }
                // Fresh energies at random so indicators are 1 about half the time.
                for en in e.energies.iter_mut() {
                    *en = f64::uniform(draws.next_u32()) * 3.0;
                }
                let gates_before = e.gates;
                let s = e.sweep(k, Scheme::Deo { window }, &mut draws);
                let parity = window_parity(k, window);
                let mut swaps = 0;
                for pair in 0..5 {
                    let f = e.flags[pair];
                    if f & flags::SWAPPED != 0 {
                        swaps += 1;
                        swaps_in_window[pair] += 1;
                        assert!(pair_eligible(pair, parity));
                        assert!(!e.gates[pair], "gate closes after a swap");
                    }
                    if f & flags::ATTEMPT != 0 {
                        assert!(pair_eligible(pair, parity));
                        if k % u64::from(window) != 0 {
                            assert!(gates_before[pair], "attempt only with an open gate");
                        }
                    }
                    if f & flags::ATTEMPT == 0 && pair_eligible(pair, parity) {
                        attempts_after_swap += 1;
                    }
                    assert!(
                        swaps_in_window[pair] <= 1,
                        "pair {pair} window {window} k {k}"
                    );
                }
                assert_eq!(s.swaps, swaps);
                if k % u64::from(window) == 0 {
                    assert!(
                        e.gates
                            .iter()
                            .enumerate()
                            .all(|(p, &g)| g || e.flags[p] & flags::SWAPPED != 0)
                    );
                }
            }
            // With W > 1 some eligible pairs must have found their gate closed.
            assert_eq!(attempts_after_swap > 0, window > 1, "window {window}");
        }
    }

    #[test]
    fn seo_swaps_either_parity_without_gates() {
        let mut e = Ens::new();
        let mut draws = PhiloxStream::new(3, 0, 0, 0, 0);
        let mut seen = [0u32; 2];
        for k in 0..400u64 {
            e.energies = [5.0, 4.0, 3.0, 2.0, 1.0, 0.0];
            let mut rng = PhiloxStream::new(3, 0, k, crate::rng::ENSEMBLE_WIDE, streams::SWAP);
            let s = e.sweep(k, Scheme::Seo, &mut rng);
            assert!(s.swaps > 0);
            let first = e.flags.iter().position(|f| f & flags::SWAPPED != 0);
            seen[first.unwrap_or(0) % 2] += 1;
            let _ = draws.next_u32();
        }
        assert!(seen[0] > 150 && seen[1] > 150, "{seen:?}");
    }

    #[test]
    fn nonfinite_energy_never_swaps_and_is_flagged() {
        let mut e = Ens::new();
        let mut rng = PhiloxStream::new(0, 0, 0, 0, 0);
        e.energies = [9.0, f64::NAN, 0.0, f64::INFINITY, -9.0, -20.0];
        let s = e.sweep(1, Scheme::VANILLA_DEO, &mut rng);
        // Parity 1: pairs 0, 2, 4 are eligible; pairs 0, 1, 2, 3 touch a bad energy.
        assert_eq!(s.nonfinite, 4);
        assert_eq!(s.swaps, 1);
        assert_eq!(e.flags[4] & flags::SWAPPED, flags::SWAPPED);
        assert_eq!(e.at, [0, 1, 2, 3, 5, 4]);
    }

    /// Sequential order: after pair 0 swaps, pair 1's test sees the energy that moved
    /// up to level 1; the simultaneous order tests pair 1 on the old level-1 energy.
    #[test]
    fn sequential_order_sees_the_swap_below() {
        // W = 1, k = 1: parity 1, pairs 0, 2, 4 eligible. Pair 0 swaps (0 + 0.5 < 5);
        // pair 1 (off parity): simultaneous tests 0 vs 3 → 3 + 0.5 < 0 false;
        // sequential tests 5 (moved up) vs 3 → true.
        for (order, want) in [(SweepOrder::Simultaneous, 0), (SweepOrder::Sequential, 1)] {
            let mut e = Ens::new();
            e.energies = [5.0, 0.0, 3.0, 9.0, 9.0, 9.0];
            let mut rng = PhiloxStream::new(0, 0, 0, 0, 0);
            e.sweep_in(1, Scheme::VANILLA_DEO, order, &mut rng);
            assert_eq!(e.flags[0] & flags::SWAPPED, flags::SWAPPED);
            assert_eq!(e.flags[1] & flags::INDICATOR, want, "{order:?}");
            // Either way the energies end up with their replicas.
            assert_eq!(e.energies[..2], [0.0, 5.0]);
        }
    }

    /// Inconsistent buffers are typed errors, never a panic.
    #[test]
    fn bad_buffers_are_errors() {
        let mut rng = PhiloxStream::new(0, 0, 0, 0, 0);
        let mut energies = [0.0f64; 4];
        let mut at = [0u32, 1, 2, 9];
        let mut of = [0u32, 1, 2, 3];
        let mut gates = [true; 3];
        let mut fl = [0u8; 3];
        let mut go = |at: &mut [u32], of: &mut [u32], energies: &mut [f64], gates: &mut [bool]| {
            sweep(
                0,
                Scheme::VANILLA_DEO,
                SweepOrder::Simultaneous,
                RuleInputs::Buffered { buffer: 0.0 },
                SweepBuffers {
                    energies,
                    swap: SwapBuffers {
                        replica_at: at,
                        level_of: of,
                        gates,
                        flags: &mut fl,
                    },
                },
                &mut rng,
            )
        };
        assert!(matches!(
            go(&mut at, &mut of, &mut energies, &mut gates),
            Err(Error::InvalidValue {
                name: "replica_at",
                ..
            })
        ));
        at[3] = 3;
        assert!(go(&mut at, &mut of, &mut energies, &mut gates).is_ok());
        assert!(matches!(
            go(&mut at, &mut of, &mut energies[..3], &mut gates),
            Err(Error::LengthMismatch {
                name: "energies",
                ..
            })
        ));
        assert!(matches!(
            go(&mut at, &mut of, &mut energies, &mut gates[..2]),
            Err(Error::LengthMismatch { name: "gates", .. })
        ));
        of[0] = 1;
        assert!(go(&mut at, &mut of, &mut energies, &mut gates).is_err());
        assert!(matches!(
            go(
                &mut at[..1],
                &mut of[..1],
                &mut energies[..1],
                &mut gates[..0]
            ),
            Err(Error::TooFewChains { chains: 1 })
        ));
    }
}
