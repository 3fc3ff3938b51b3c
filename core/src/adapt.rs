//! Stochastic-approximation tuning of the learning-rate ladder and of the correction
//! buffer towards equal swap rates at a target S (Deng et al., AAAI 2023, Eq. 8–10).
//!
//! The ends of the ladder, η₀ (the target, smallest) and η_{P−1} (the hottest
//! explorer), stay fixed. Each inner rate moves so that the gap below it grows when the
//! pair below swaps more often than S and the gap above it grows when the pair above
//! does:
//!
//! ```text
//! η_l ← ½ [ η_{l−1} + max(0, η_l − η_{l−1}) · exp((s_{l−1} − S) γ_k)
//!         + η_{l+1} − max(0, η_{l+1} − η_l) · exp((s_l − S) γ_k) ]
//! ```
//!
//! with s the swap indicators (or rates) of the adjacent pairs and the step sizes
//! `γ_k = a / (k^α + b)`. By default ([`LadderUpdate::Jacobi`], the paper's Eq. 8–10
//! and the authors' code) every η_l is computed from the previous iteration's ladder,
//! with the max(0, ·) on the gaps. The paper says this keeps the ladder non-decreasing;
//! it does not quite: where a gap is small, one update can cross it, and an inner rate
//! can step outside [η₀, η_{P−1}] (on the paper's toy the crowded inner rates are out
//! of order now and then and the lowest dips to 0.4 η₀, in the authors' code as here);
//! max(0, ·) then treats a crossed gap as zero and the order comes back. Where the
//! swap rates do not respond to the gaps at all (a Metropolis rule with fixed
//! temperatures, say) the rates wander freely, so a guard ([`JACOBI_GUARD`]) keeps them
//! positive and finite; the paper's settings never reach it. [`LadderUpdate::InPlace`] runs
//! from l = 1 upwards in place, each η_l using the already updated η_{l−1}, with both
//! halves clamped to [η_{l−1}, η_{l+1}], so the ladder stays non-decreasing and within
//! its ends whatever happens.
//!
//! The buffer follows `C ← max(0, C + (mean_l s_l − S) γ_k / c)` (or the same without
//! the max, [`BufferProjection::Unprojected`]): more swaps than wanted raise the bar.
//!
//! Kept whole past 600 lines: the ladder and buffer updates are about 400 lines; the
//! rest are their tests.

use crate::error::{Error, check_positive, check_rate};
use crate::rules::{BufferProjection, InitialLadder, LadderUpdate};

/// Step sizes `γ_k = a / (k^α + b)` of the stochastic approximation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepSchedule {
    /// Numerator a (> 0).
    pub a: f64,
    /// Decay exponent α, in (0.5, 1] for the usual convergence guarantees.
    pub alpha: f64,
    /// Offset b (≥ 0): damps the first steps.
    pub b: f64,
}

impl Default for StepSchedule {
    /// The paper's toy experiment: a = 50, α = 0.8, b = 500.
    fn default() -> Self {
        StepSchedule {
            a: 50.0,
            alpha: 0.8,
            b: 500.0,
        }
    }
}

impl StepSchedule {
    /// Checks that a > 0, α > 0, b ≥ 0 and that γ₀ is finite.
    pub fn validate(self) -> Result<Self, Error> {
        check_positive("schedule.a", self.a)?;
        check_positive("schedule.alpha", self.alpha)?;
        if !(self.b.is_finite() && self.b >= 0.0) {
            return Err(Error::InvalidValue {
                name: "schedule.b",
                value: self.b,
                allowed: "finite and >= 0",
            });
        }
        if self.b == 0.0 {
            return Err(Error::InvalidValue {
                name: "schedule.b",
                value: self.b,
                allowed: "> 0 (gamma at k = 0 is a / b)",
            });
        }
        Ok(self)
    }

    /// Step size at iteration `k`.
    #[inline]
    pub fn gamma(&self, k: u64) -> f64 {
        self.a / (libm::pow(k as f64, self.alpha) + self.b)
    }

    /// The step size at iteration `k` as a checked [`StepSize`]: an error if the
    /// schedule is invalid (see [`StepSchedule::validate`]).
    pub fn step_size(&self, k: u64) -> Result<StepSize, Error> {
        self.validate()?;
        StepSize::new(self.gamma(k))
    }
}

/// A step size γ of the stochastic approximation, known to be finite and ≥ 0: what
/// the driver's [`exchange_with_gamma`](crate::Tempering::exchange_with_gamma) takes,
/// so that no NaN can reach the ladder or the buffer.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct StepSize(f64);

impl StepSize {
    /// γ = 0: no adaptation.
    pub const ZERO: StepSize = StepSize(0.0);

    /// Checks that `gamma` is finite and ≥ 0.
    pub fn new(gamma: f64) -> Result<Self, Error> {
        crate::error::check_non_negative("gamma", gamma)?;
        Ok(StepSize(gamma))
    }

    /// The value.
    #[inline]
    pub fn get(self) -> f64 {
        self.0
    }
}

/// Options of the ladder and buffer adaptation (the variants of the update rules are
/// in [`crate::rules::Rules`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptOptions {
    /// Target swap rate S of every adjacent pair, in (0, 1).
    pub target_swap_rate: f64,
    /// Step sizes.
    pub schedule: StepSchedule,
    /// Tune the inner learning rates.
    pub adapt_ladder: bool,
    /// Tune the correction buffer (buffered rule only).
    pub adapt_buffer: bool,
    /// Scale c of the buffer update (the buffer moves by γ/c per unit of rate error).
    pub buffer_scale: f64,
}

impl Default for AdaptOptions {
    /// The paper's toy experiment: S = 0.4, a = 50, α = 0.8, b = 500, c = 1, both on.
    fn default() -> Self {
        AdaptOptions {
            target_swap_rate: 0.4,
            schedule: StepSchedule::default(),
            adapt_ladder: true,
            adapt_buffer: true,
            buffer_scale: 1.0,
        }
    }
}

impl AdaptOptions {
    /// Checks every field.
    pub fn validate(self) -> Result<Self, Error> {
        check_rate("target_swap_rate", self.target_swap_rate)?;
        self.schedule.validate()?;
        check_positive("buffer_scale", self.buffer_scale)?;
        Ok(self)
    }
}

/// Checks the ends of a ladder: `0 < min < max`, both finite.
pub fn check_ladder_ends(min: f64, max: f64) -> Result<(), Error> {
    if min.is_finite() && max.is_finite() && min > 0.0 && min < max {
        Ok(())
    } else {
        Err(Error::LadderEnds { min, max })
    }
}

/// Fills `out` with the geometric ladder from `min` to `max`:
/// `η_l = min · (max/min)^(l/(P−1))`, ends exact.
pub fn geometric_ladder(min: f64, max: f64, out: &mut [f64]) -> Result<(), Error> {
    check_ladder_ends(min, max)?;
    crate::error::check_chains(out.len())?;
    let last = out.len() - 1;
    let ratio = max / min;
    for (l, eta) in out.iter_mut().enumerate() {
        *eta = min * libm::pow(ratio, l as f64 / last as f64);
    }
    out[0] = min;
    out[last] = max;
    Ok(())
}

/// Fills `out` with the initial ladder of the given kind from `min` to `max`. A
/// rounded ladder must stay strictly increasing and positive: rounding 0.0004 to 3
/// decimals, say, is an error that names the level.
pub fn initial_ladder(
    kind: InitialLadder,
    min: f64,
    max: f64,
    out: &mut [f64],
) -> Result<(), Error> {
    geometric_ladder(min, max, out)?;
    if let InitialLadder::RoundedGeometric { decimals, unit } = kind {
        if unit == 0 {
            return Err(Error::InvalidValue {
                name: "initial_ladder.unit",
                value: 0.0,
                allowed: "at least 1",
            });
        }
        let unit = f64::from(unit);
        if decimals > 12 {
            return Err(Error::InvalidValue {
                name: "initial_ladder.decimals",
                value: f64::from(decimals),
                allowed: "at most 12",
            });
        }
        let scale = libm::pow(10.0, f64::from(decimals));
        let mut below = 0.0;
        for eta in out.iter_mut() {
            // rint rounds half to even, as Python's round does.
            *eta = libm::rint(*eta * unit * scale) / scale / unit;
            // NaN fails the comparison too.
            if (*eta).partial_cmp(&below) != Some(core::cmp::Ordering::Greater) {
                return Err(Error::InvalidValue {
                    name: "initial_ladder",
                    value: *eta,
                    allowed: "strictly increasing and > 0 after rounding (use more decimals)",
                });
            }
            below = *eta;
        }
    }
    Ok(())
}

/// One stochastic-approximation step of the ladder (see the module docs).
///
/// `rate(l)` gives s_l of pair (l, l + 1) for l = 0 … P − 2: a 0/1 indicator of the
/// last iteration or a running rate. The ends of `ladder` are not touched.
pub fn adapt_ladder(
    ladder: &mut [f64],
    update: LadderUpdate,
    target: f64,
    gamma: f64,
    rate: impl Fn(usize) -> f64,
) {
    adapt_ladder_by_factor(ladder, update, |l| libm::exp((rate(l) - target) * gamma));
}

/// [`adapt_ladder`] for 0/1 indicators: the growth factor takes only two values,
/// `exp((1 − S) γ)` and `exp(−S γ)`, so two exponentials serve the whole ladder.
pub fn adapt_ladder_indicators(
    ladder: &mut [f64],
    update: LadderUpdate,
    target: f64,
    gamma: f64,
    indicator: impl Fn(usize) -> bool,
) {
    let (up, down) = growth_factors(target, gamma);
    adapt_ladder_by_factor(ladder, update, |l| if indicator(l) { up } else { down });
}

/// The two growth factors of the ladder update for 0/1 indicators at step size γ:
/// `(exp((1 − S) γ), exp(−S γ))`, for an indicator of 1 and of 0. Engines that update
/// many ensembles at once (vector lanes, a GPU) compute them once per iteration from
/// this definition.
#[inline]
pub fn growth_factors(target: f64, gamma: f64) -> (f64, f64) {
    (
        libm::exp((1.0 - target) * gamma),
        libm::exp(-target * gamma),
    )
}

/// The guard of the Jacobi update: every inner rate stays within
/// [2⁻²⁰ η₀, 2²⁰ η_{P−1}], so that no learning rate reaches zero, turns negative or
/// overflows. The paper's toy never comes near (its raw ladder stays within
/// [0.39 η₀, 0.96 η_{P−1}]).
pub const JACOBI_GUARD: f64 = 1.0 / 1_048_576.0;

/// The ladder update given the growth factor `exp((s_l − S) γ)` of every pair.
fn adapt_ladder_by_factor(ladder: &mut [f64], update: LadderUpdate, factor: impl Fn(usize) -> f64) {
    let p = ladder.len();
    if p < 3 {
        return;
    }
    let mut grow_below = factor(0);
    if update == LadderUpdate::Jacobi {
        // `below` is the previous iteration's η_{l−1}, kept before it was overwritten.
        let guard = jacobi_guard(ladder[0], ladder[p - 1]);
        let mut below = ladder[0];
        for l in 1..p - 1 {
            let here = ladder[l];
            let grow_above = factor(l);
            ladder[l] = jacobi_level(below, here, ladder[l + 1], (grow_below, grow_above), guard);
            below = here;
            grow_below = grow_above;
        }
        return;
    }
    for l in 1..p - 1 {
        let grow_above = factor(l);
        ladder[l] = in_place_level(
            ladder[l - 1],
            ladder[l],
            ladder[l + 1],
            (grow_below, grow_above),
        );
        grow_below = grow_above;
    }
}

/// [`adapt_ladder_indicators`] where some pairs were not observed (`observed(l)` is
/// `None`: a controller told a non-finite energy on one side of pair l). An unobserved
/// pair carries no rate error (its s_l counts as S, a growth factor of exactly 1), and
/// an inner level both of whose pairs are unobserved keeps its rate unchanged (bit for
/// bit); where every pair is observed it is [`adapt_ladder_indicators`], bit for bit.
pub fn adapt_ladder_observed(
    ladder: &mut [f64],
    update: LadderUpdate,
    target: f64,
    gamma: f64,
    observed: impl Fn(usize) -> Option<bool>,
) {
    let p = ladder.len();
    if p < 3 {
        return;
    }
    let (up, down) = growth_factors(target, gamma);
    let factor = |l: usize| match observed(l) {
        Some(true) => up,
        Some(false) => down,
        None => 1.0,
    };
    let guard = jacobi_guard(ladder[0], ladder[p - 1]);
    // The previous iteration's η_{l−1} (the Jacobi update reads the old ladder).
    let mut below = ladder[0];
    for l in 1..p - 1 {
        let here = ladder[l];
        if observed(l - 1).is_some() || observed(l).is_some() {
            let grow = (factor(l - 1), factor(l));
            ladder[l] = match update {
                LadderUpdate::Jacobi => jacobi_level(below, here, ladder[l + 1], grow, guard),
                LadderUpdate::InPlace => in_place_level(ladder[l - 1], here, ladder[l + 1], grow),
            };
        }
        below = here;
    }
}

/// The bounds `[2⁻²⁰ η₀, 2²⁰ η_{P−1}]` of the Jacobi update ([`JACOBI_GUARD`]) for a
/// ladder with ends `first` and `last`.
#[inline(always)]
pub fn jacobi_guard(first: f64, last: f64) -> (f64, f64) {
    (first * JACOBI_GUARD, last / JACOBI_GUARD)
}

/// The [`LadderUpdate::Jacobi`] update of one inner rate η_l: `below` is the previous
/// iteration's η_{l−1}, `here` and `above` η_l and η_{l+1}; `grow` the growth factors
/// of the pairs below and above; `(floor, ceiling)` from [`jacobi_guard`]. The one
/// definition every engine applies (the scalar driver per level; the lockstep lanes of
/// [`crate::lanes`] per ensemble).
#[inline(always)]
pub fn jacobi_level(
    below: f64,
    here: f64,
    above: f64,
    (grow_below, grow_above): (f64, f64),
    (floor, ceiling): (f64, f64),
) -> f64 {
    // `if d > 0 { d } else { 0 }` is `d.max(0.0)` for every d, NaN included (it gives 0),
    // in one vector instruction (`maxpd`); likewise the guard, whose ends are finite.
    let positive = |d: f64| if d > 0.0 { d } else { 0.0 };
    let from_below = below + positive(here - below) * grow_below;
    let from_above = above - positive(above - here) * grow_above;
    // The raw update can leave [η₀, η_{P−1}] (it does on the paper's toy, as in the
    // authors' code) but never reaches zero or infinity: a learning rate must stay
    // positive and finite (the guard never acts in the paper's settings).
    let mid = 0.5 * (from_below + from_above);
    let raised = if mid > floor { mid } else { floor };
    if raised < ceiling { raised } else { ceiling }
}

/// The [`LadderUpdate::InPlace`] update of one inner rate η_l: `below` is η_{l−1}
/// as already updated this iteration, `here` and `above` η_l and η_{l+1}; `grow` the
/// growth factors of the pairs below and above. Each move is kept within its
/// neighbours. The one definition every engine applies.
#[inline(always)]
pub fn in_place_level(
    below: f64,
    here: f64,
    above: f64,
    (grow_below, grow_above): (f64, f64),
) -> f64 {
    // max/min rather than clamp: clamp has a panic path (and its float formatting)
    // that firmware and WASM builds would have to carry.
    let from_below = (below + (here - below).max(0.0) * grow_below)
        .max(below)
        .min(above);
    let from_above = (above - (above - here).max(0.0) * grow_above)
        .max(below)
        .min(above);
    0.5 * (from_below + from_above)
}

/// One stochastic-approximation step of the correction buffer:
/// `max(0, C + (mean_rate − S) γ / c)`, or without the max for
/// [`BufferProjection::Unprojected`].
#[inline]
pub fn adapt_buffer(
    buffer: f64,
    mean_rate: f64,
    target: f64,
    gamma: f64,
    scale: f64,
    projection: BufferProjection,
) -> f64 {
    let c = buffer + (mean_rate - target) * gamma / scale;
    match projection {
        BufferProjection::NonNegative => c.max(0.0),
        BufferProjection::Unprojected => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{PhiloxStream, UnitDraw};
    use rand_core::Rng;

    #[test]
    fn schedule_matches_the_formula() {
        let s = StepSchedule::default();
        assert_eq!(s.gamma(0), 0.1);
        let k: f64 = 20_000.0;
        let expect = 50.0 / (libm::pow(k, 0.8) + 500.0);
        assert!((s.gamma(20_000) - expect).abs() < 1e-15);
        assert!(s.gamma(10) > s.gamma(100));
        assert!(StepSchedule { a: 0.0, ..s }.validate().is_err());
        assert!(StepSchedule { b: f64::NAN, ..s }.validate().is_err());
    }

    #[test]
    fn geometric_ladder_has_exact_ends_and_constant_ratio() {
        let mut l = [0.0; 16];
        geometric_ladder(0.003, 0.6, &mut l).unwrap();
        assert_eq!(l[0], 0.003);
        assert_eq!(l[15], 0.6);
        let r = l[1] / l[0];
        for w in l.windows(2) {
            assert!((w[1] / w[0] - r).abs() < 1e-12);
        }
        assert!(geometric_ladder(0.6, 0.003, &mut l).is_err());
        assert!(geometric_ladder(0.0, 0.6, &mut l).is_err());
        assert!(geometric_ladder(0.1, f64::INFINITY, &mut l).is_err());
        assert!(geometric_ladder(0.1, 0.2, &mut l[..1]).is_err());
    }

    /// The Jacobi update computes every rate from the previous ladder: the same as a
    /// plain evaluation of the paper's formula on a copy.
    #[test]
    fn jacobi_update_uses_the_previous_ladder() {
        let mut ladder = [0.0; 7];
        geometric_ladder(0.003, 0.6, &mut ladder).unwrap();
        let s = [true, false, true, true, false, false];
        let (target, gamma) = (0.4, 0.3);
        let last = ladder;
        let f = |l: usize| libm::exp((f64::from(u8::from(s[l])) - target) * gamma);
        let mut want = last;
        for l in 1..6 {
            let gain1 = (last[l] - last[l - 1]).max(0.0) * f(l - 1);
            let gain2 = (last[l + 1] - last[l]).max(0.0) * f(l);
            want[l] = 0.5 * ((last[l - 1] + gain1) + (last[l + 1] - gain2));
        }
        adapt_ladder_indicators(&mut ladder, LadderUpdate::Jacobi, target, gamma, |l| s[l]);
        assert_eq!(ladder, want);
        // In place, level 2 sees the new level 1 and the result differs.
        let mut in_place = last;
        adapt_ladder_indicators(&mut in_place, LadderUpdate::InPlace, target, gamma, |l| {
            s[l]
        });
        assert_eq!(in_place[1], want[1]);
        assert_ne!(in_place[2], want[2]);
    }

    #[test]
    fn rounded_initial_ladder_is_the_authors() {
        // The authors' notebook: round(0.003 · 200^(l/15), 3).
        let mut l = [0.0; 16];
        initial_ladder(
            InitialLadder::RoundedGeometric {
                decimals: 3,
                unit: 1,
            },
            0.003,
            0.6,
            &mut l,
        )
        .unwrap();
        let want = [
            0.003, 0.004, 0.006, 0.009, 0.012, 0.018, 0.025, 0.036, 0.051, 0.072, 0.103, 0.146,
            0.208, 0.296, 0.421, 0.6,
        ];
        assert_eq!(l, want);
        let mut g = [0.0; 16];
        initial_ladder(InitialLadder::Geometric, 0.003, 0.6, &mut g).unwrap();
        geometric_ladder(0.003, 0.6, &mut l).unwrap();
        assert_eq!(g, l);
        // Rounding that collapses two levels is an error.
        let e = initial_ladder(
            InitialLadder::RoundedGeometric {
                decimals: 2,
                unit: 1,
            },
            0.003,
            0.6,
            &mut l,
        );
        assert!(matches!(
            e,
            Err(Error::InvalidValue {
                name: "initial_ladder",
                ..
            })
        ));
    }

    /// Whatever the indicators and however large the step, the in-place update keeps
    /// the ladder's ends and its order, and the Jacobi update keeps every rate
    /// positive.
    #[test]
    fn ladder_keeps_order_and_ends() {
        for update in [LadderUpdate::Jacobi, LadderUpdate::InPlace] {
            keeps_order_and_ends(update);
        }
    }

    fn keeps_order_and_ends(update: LadderUpdate) {
        let mut rng = PhiloxStream::new(1, 2, 3, 4, 5);
        for gamma in [0.01, 0.5, 5.0, 50.0] {
            let mut ladder = [0.0; 12];
            geometric_ladder(0.01, 1.0, &mut ladder).unwrap();
            for _ in 0..2000 {
                let mut s = [0.0; 11];
                for v in s.iter_mut() {
                    *v = f64::from(rng.next_u32() & 1);
                }
                adapt_ladder(&mut ladder, update, 0.4, gamma, |l| s[l]);
                assert_eq!(ladder[0], 0.01);
                assert_eq!(ladder[11], 1.0);
                let (lo, hi) = (0.01 * JACOBI_GUARD, 1.0 / JACOBI_GUARD);
                assert!(ladder.iter().all(|&e| (lo..=hi).contains(&e)), "{ladder:?}");
                for w in ladder.windows(2) {
                    if update == LadderUpdate::Jacobi {
                        break;
                    }
                    assert!(w[0] <= w[1], "{update:?} gamma {gamma}: {ladder:?}");
                }
            }
        }
    }

    /// Synthetic pairs whose acceptance falls with the gap: pair l accepts with
    /// probability `exp(−κ_l (η_{l+1} − η_l) − C)`, with κ spread over a factor 20.
    /// Ladder and buffer adaptation together must bring every pair to S, with either
    /// ladder update.
    #[test]
    fn converges_to_equal_acceptance_at_the_target() {
        for update in [LadderUpdate::Jacobi, LadderUpdate::InPlace] {
            converges_with(update);
        }
    }

    fn converges_with(update: LadderUpdate) {
        const P: usize = 8;
        let target = 0.4;
        let kappa: [f64; P - 1] = [1.0, 20.0, 3.0, 8.0, 1.5, 12.0, 5.0];
        let accept = |ladder: &[f64], c: f64, l: usize| {
            libm::exp(-kappa[l] * (ladder[l + 1] - ladder[l]) - c)
        };
        let mut ladder = [0.0; P];
        geometric_ladder(0.01, 0.2, &mut ladder).unwrap();
        let mut buffer = 0.0;
        let schedule = StepSchedule::default();
        let mut rng = PhiloxStream::new(42, 0, 0, 0, 0);
        let mut s = [0.0; P - 1];
        for k in 0..200_000u64 {
            for (l, v) in s.iter_mut().enumerate() {
                let u = f64::uniform(rng.next_u32());
                *v = f64::from(u8::from(u < accept(&ladder, buffer, l)));
            }
            let gamma = schedule.gamma(k);
            adapt_ladder(&mut ladder, update, target, gamma, |l| s[l]);
            let mean = s.iter().sum::<f64>() / (P - 1) as f64;
            buffer = adapt_buffer(
                buffer,
                mean,
                target,
                gamma,
                1.0,
                BufferProjection::NonNegative,
            );
        }
        for l in 0..P - 1 {
            let a = accept(&ladder, buffer, l);
            assert!(
                (a - target).abs() < 0.03,
                "{update:?} pair {l}: {a} (ladder {ladder:?}, C {buffer})"
            );
        }
        // Feasibility check of the synthetic model: equal acceptance needs C > 0 here.
        assert!(buffer > 0.05, "buffer {buffer}");
    }

    #[test]
    fn indicator_form_equals_the_general_form() {
        let mut a = [0.0; 9];
        geometric_ladder(0.003, 0.6, &mut a).unwrap();
        let a0 = a;
        let s = [true, false, false, true, true, false, true, false];
        for update in [LadderUpdate::Jacobi, LadderUpdate::InPlace] {
            a = a0;
            let mut b = a0;
            for k in 0..50 {
                let gamma = StepSchedule::default().gamma(k);
                adapt_ladder(&mut a, update, 0.4, gamma, |l| {
                    f64::from(u8::from(s[(l + k as usize) % 8]))
                });
                adapt_ladder_indicators(&mut b, update, 0.4, gamma, |l| s[(l + k as usize) % 8]);
            }
            assert_eq!(a, b);
        }
    }

    /// Every pair observed: the same bits as the indicator form; no pair observed: the
    /// ladder does not move; one pair unobserved: only its levels' halves stand still.
    #[test]
    fn unobserved_pairs_carry_no_rate_error() {
        let s = [true, false, false, true, true, false, true, false];
        for update in [LadderUpdate::Jacobi, LadderUpdate::InPlace] {
            let mut a = [0.0; 9];
            geometric_ladder(0.003, 0.6, &mut a).unwrap();
            let mut b = a;
            for k in 0..200 {
                let gamma = StepSchedule::default().gamma(k);
                let at = |l: usize| s[(l + k as usize) % 8];
                adapt_ladder_indicators(&mut a, update, 0.4, gamma, at);
                adapt_ladder_observed(&mut b, update, 0.4, gamma, |l| Some(at(l)));
            }
            assert_eq!(a, b, "{update:?}");
            let before = a;
            for k in 0..50 {
                let gamma = StepSchedule::default().gamma(k);
                adapt_ladder_observed(&mut a, update, 0.4, gamma, |_| None);
            }
            assert_eq!(a, before, "{update:?}");
            // Pairs 2 and 3 unobserved: level 3 (between them) keeps its rate.
            adapt_ladder_observed(&mut a, update, 0.4, 0.5, |l| {
                (l != 2 && l != 3).then_some(s[l])
            });
            assert_eq!(a[3], before[3], "{update:?}");
            assert_ne!(a[1], before[1], "{update:?}");
        }
    }

    #[test]
    fn buffer_rises_with_too_many_swaps_and_stays_non_negative() {
        let nn = BufferProjection::NonNegative;
        assert!(adapt_buffer(4.0, 0.9, 0.4, 0.1, 1.0, nn) > 4.0);
        assert!(adapt_buffer(4.0, 0.1, 0.4, 0.1, 1.0, nn) < 4.0);
        assert_eq!(adapt_buffer(0.01, 0.0, 0.4, 1.0, 1.0, nn), 0.0);
        let free = adapt_buffer(0.01, 0.0, 0.4, 1.0, 1.0, BufferProjection::Unprojected);
        assert!((free - (0.01 - 0.4)).abs() < 1e-15);
    }
}
