//! The HMC explorer: Hamiltonian Monte Carlo at a level's β, usable on its own (a chain
//! at β = 1 is a plain HMC sampler of the path's target) or as the explorer of exact
//! tempering ([`ExactExplorer::Hmc`](super::ExactExplorer::Hmc)).
//!
//! # HMC
//!
//! Hybrid (Hamiltonian) Monte Carlo: Duane, Kennedy, Pendleton and Roweth, Phys. Lett.
//! B 1987; Neal, "MCMC using Hamiltonian dynamics", Handbook of MCMC 2011. At level β the
//! target is `f(x) = log π₀(x) + β ℓ(x)` (up to a constant) with gradient
//! `g = ∇ log π₀ + β ∇ℓ` ([`tempered_gradient`]). With the identity mass matrix the
//! Hamiltonian is `H(x, p) = −f(x) + |p|²/2`. One transition:
//!
//! 1. draws a step `ε' = ε·(1 + j·(2u_ε − 1))` (j = [`HmcOptions::jitter`], u_ε uniform)
//!    and a momentum p ~ N(0, I_D);
//! 2. runs L = [`HmcOptions::leapfrog_steps`] leapfrog steps of size ε' from (x, p):
//!    `p ← p + (ε'/2) g(x)`, then L times `x ← x + ε' p`, `p ← p + ε' g(x)` (the last kick
//!    of size ε'/2), which costs L gradients (the gradient at x is kept from the
//!    previous transition; a call evaluates it once at its start);
//! 3. accepts the end point (y, p′) with probability `min(1, exp(−ΔH))`,
//!    `ΔH = H(y, p′) − H(x, p)` (the momentum is then discarded: its flip, which makes
//!    the proposal an involution, does not change H).
//!
//! The leapfrog map is volume-preserving and reversible, so the Metropolis test makes
//! π_β exactly invariant whatever ε' and L (Neal 2011, §3.2 and §3.3).
//!
//! **Non-finite values.** The trajectory stops at the first point whose log density or
//! gradient is not finite, and the proposal is rejected (acceptance probability 0,
//! counted in [`HmcOutcome::nonfinite`]); so is an end point with a non-finite momentum.
//! Rejecting on an intermediate point keeps π_β invariant: the reversed trajectory
//! visits the same points, so it is rejected too. A current state whose log density is
//! not finite (a state the caller supplied outside the support) accepts any proposal
//! whose trajectory stayed finite, as [`mala_explore`](super::mala_explore) does.
//!
//! **Jitter.** With a fixed ε'L, HMC on a target whose scales are alike (the Gaussian
//! path is the extreme case: every coordinate oscillates at the same frequency) can make
//! near-periodic trajectories that return close to their start, and its acceptance is
//! then not even monotone in ε. Drawing ε' from an interval around ε breaks that
//! resonance (Mackenzie, Phys. Lett. B 1989; Neal 2011, §5.4.2.2). The default j = 0.2
//! (ε'L within ±20 %) was chosen by measurement on the Gaussian path at β = 1, L = 10,
//! four seeds each, 5000 adapted then 20 000 frozen transitions: with j = 0 the
//! adaptation settled at ε√τ = 1.22 for two seeds and 1.44 for the other two (D = 10),
//! and the integrated autocorrelation time of |x|² ranged from 6.5 to 13.7; with j = 0.2
//! every seed settled at 1.19 to 1.25, with 6.0 to 7.5 (autocorrelations summed up to the
//! first lag below 0.05). At D = 50, j = 0.1 was not
//! enough (15 to 18, against 6.7 to 8.0 with j = 0.2). j = 0 gives the textbook
//! fixed-step sampler.
//!
//! **Word use**, per transition (stream
//! [`EXACT_EXPLORE`](crate::rng::streams::EXACT_EXPLORE) in exact tempering, any
//! [`Rng`] on its own): one word for u_ε (drawn even when j = 0), `2·ceil(D/2)` words for
//! p by [`fill_normals`], then one word for the uniform of the accept/reject test. All
//! are drawn before the trajectory, so a trajectory stopped early (or any option other
//! than D) never shifts the words of the next transition: `2·ceil(D/2) + 2` words per
//! transition, always.
//!
//! # Step sizes
//!
//! In exact tempering each level's ε is adapted by the Robbins–Monro recursion on log ε
//! of [`adapt_step`](super::adapt_step) towards the acceptance rate a⋆ = 0.65, the
//! optimum of Beskos, Pillai, Roberts, Sanz-Serna and Stuart ("Optimal tuning of the
//! hybrid Monte Carlo algorithm", Bernoulli 2013) as the dimension grows (MALA keeps
//! 0.574). L stays fixed; the acceptance is that of the jittered steps.
//!
//! # Used on its own
//!
//! Several independent chains of full-batch HMC on the path's target (β = 1): a warm-up
//! that adapts each chain's ε, then ε frozen for the kept samples.
//!
//! ```
//! use nrpt_core::exact::{GaussianPath, HMC_SCRATCH_VECTORS, HmcOptions, adapt_step, hmc_explore};
//! use nrpt_core::rng::{PhiloxStream, streams};
//!
//! const D: usize = 3;
//! let mut path = GaussianPath::standard(D)?; // target N(0, 0.1 I₃)
//! let options = HmcOptions::default().validate()?;
//! let mut scratch = [0.0; HMC_SCRATCH_VECTORS * D];
//! let (mut sum, mut n) = (0.0, 0.0);
//! for chain in 0..4u32 {
//!     let mut x = [1.0; D];
//!     let mut step = options.initial_step;
//!     for k in 0..1500u64 {
//!         // Each chain and transition has its own Philox stream.
//!         let mut rng = PhiloxStream::new(7, chain, k, 0, streams::EXACT_EXPLORE);
//!         let out = hmc_explore(&mut path, 1.0, step, &options, &mut x, &mut scratch, &mut rng)?;
//!         if k < 500 {
//!             let a = out.mean_acceptance();
//!             step = adapt_step(step, k, a, options.target_acceptance, options.decay);
//!         } else {
//!             sum += x.iter().map(|v| v * v).sum::<f64>() / D as f64;
//!             n += 1.0;
//!         }
//!     }
//! }
//! assert!((sum / n / 0.1 - 1.0).abs() < 0.1, "variance {}", sum / n);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! Kept whole past 600 lines: the leapfrog integrator, its step-size rule and the
//! explorer are about 370 lines; the rest are their tests against closed forms.

use rand_core::Rng;

use super::explorer::{
    ExploreError, OptionNames, TemperedPoint, check_adaptation, check_lengths, tempered_gradient,
};
use super::path::AnnealingPath;
use crate::error::Error;
use crate::rng::{UnitDraw, fill_normals};

/// Vectors of length D in the scratch of [`hmc_explore`]: position, momentum, the
/// gradients at the current and at the moving point, a temporary.
pub const HMC_SCRATCH_VECTORS: usize = 5;

/// Options of the HMC explorers. `Default`: ε₀ = 0.1, L = 10 leapfrog steps, jitter 0.2
/// (why: the [module docs](self)), a⋆ = 0.65, one transition per iteration, adaptation on
/// with κ = 0.6.
///
/// ε₀ is small because a leapfrog trajectory is unstable once ε exceeds 2/√(largest
/// precision of the target), and an unstable start gives the adaptation nothing but
/// rejections; from a small ε, fully accepted trajectories grow it by a factor e^0.35 per
/// update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HmcOptions {
    /// Step size ε of every level at the start (in [1e-12, 1e12]).
    pub initial_step: f64,
    /// Leapfrog steps L per trajectory (≥ 1).
    pub leapfrog_steps: u32,
    /// Jitter j of the step size, in [0, 1): each trajectory uses ε·(1 + j(2u − 1)).
    pub jitter: f64,
    /// Acceptance rate a⋆ the adaptation aims at, in (0, 1).
    pub target_acceptance: f64,
    /// HMC transitions (trajectories) every level with β > 0 takes per iteration (≥ 1).
    pub steps_per_iteration: u32,
    /// Adapt the step sizes (otherwise they stay at `initial_step`).
    pub adapt: bool,
    /// κ of the gain (n + 1)^(−κ), in (0.5, 1].
    pub decay: f64,
}

impl Default for HmcOptions {
    fn default() -> Self {
        HmcOptions {
            initial_step: 0.1,
            leapfrog_steps: 10,
            jitter: 0.2,
            target_acceptance: 0.65,
            steps_per_iteration: 1,
            adapt: true,
            decay: 0.6,
        }
    }
}

impl HmcOptions {
    /// Checks every field; the error names the first one that is wrong.
    pub fn validate(self) -> Result<Self, Error> {
        check_adaptation(
            &OptionNames {
                initial_step: "hmc.initial_step",
                target_acceptance: "hmc.target_acceptance",
                steps_per_iteration: "hmc.steps_per_iteration",
                decay: "hmc.decay",
            },
            self.initial_step,
            self.target_acceptance,
            self.steps_per_iteration,
            self.decay,
        )?;
        if self.leapfrog_steps == 0 {
            return Err(Error::InvalidValue {
                name: "hmc.leapfrog_steps",
                value: 0.0,
                allowed: ">= 1",
            });
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(Error::InvalidValue {
                name: "hmc.jitter",
                value: self.jitter,
                allowed: "in [0, 1)",
            });
        }
        Ok(self)
    }
}

/// What one call of [`hmc_explore`] did, and where it left the chain.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HmcOutcome {
    /// Sum over the transitions of the acceptance probabilities min(1, e^{−ΔH}) (0 for a
    /// trajectory stopped at a non-finite value).
    pub acceptance_sum: f64,
    /// Transitions (trajectories) made.
    pub proposals: u32,
    /// Transitions accepted.
    pub accepted: u32,
    /// Trajectories rejected because a point of them had a non-finite log density or
    /// gradient, or their final momentum was not finite.
    pub nonfinite: u32,
    /// Evaluations of log π₀ and ℓ with their gradients: 1 at the start, then L per
    /// trajectory (fewer for one stopped early).
    pub gradient_evaluations: u64,
    /// log π₀ at the final state.
    pub log_reference: f64,
    /// ℓ at the final state.
    pub log_likelihood: f64,
}

impl HmcOutcome {
    /// Mean acceptance probability of the transitions (NaN without transitions): what
    /// [`adapt_step`](super::adapt_step) takes.
    pub fn mean_acceptance(&self) -> f64 {
        self.acceptance_sum / f64::from(self.proposals)
    }
}

/// `options.steps_per_iteration` HMC transitions at inverse temperature `beta` with
/// nominal step size `step` (jittered per trajectory), `options.leapfrog_steps` leapfrog
/// steps each, from `x` (length D = [`AnnealingPath::dim`], updated in place); `scratch`
/// has at least [`HMC_SCRATCH_VECTORS`]·D entries. Draws `2·ceil(D/2) + 2` words from
/// `rng` per transition as the [module docs](self) say. Costs 1 + L·T evaluations of log
/// π₀ and ℓ with their gradients for T transitions (fewer when a trajectory stops at a
/// non-finite value).
///
/// The options are not checked here ([`HmcOptions::validate`] does that once); no value
/// of them makes this panic.
///
/// # Errors
///
/// [`ExploreError::Input`] for a slice of the wrong length (nothing done),
/// [`ExploreError::Path`] for the path's error.
pub fn hmc_explore<P: AnnealingPath, R: Rng + ?Sized>(
    path: &mut P,
    beta: f64,
    step: f64,
    options: &HmcOptions,
    x: &mut [f64],
    scratch: &mut [f64],
    rng: &mut R,
) -> Result<HmcOutcome, ExploreError<P::Error>> {
    check_lengths(path.dim(), x.len(), scratch.len(), HMC_SCRATCH_VECTORS)?;
    hmc_unchecked(path, beta, step, options, x, scratch, rng).map_err(ExploreError::Path)
}

/// [`hmc_explore`] for lengths the caller has checked.
pub(crate) fn hmc_unchecked<P: AnnealingPath, R: Rng + ?Sized>(
    path: &mut P,
    beta: f64,
    step: f64,
    options: &HmcOptions,
    x: &mut [f64],
    scratch: &mut [f64],
    rng: &mut R,
) -> Result<HmcOutcome, P::Error> {
    let d = x.len();
    let (y, rest) = scratch.split_at_mut(d);
    let (p, rest) = rest.split_at_mut(d);
    let (gx, rest) = rest.split_at_mut(d);
    let (gy, rest) = rest.split_at_mut(d);
    let tmp = &mut rest[..d];

    let mut current = tempered_gradient(path, beta, x, gx, tmp)?;
    let mut out = HmcOutcome {
        gradient_evaluations: 1,
        ..HmcOutcome::default()
    };
    for _ in 0..options.steps_per_iteration {
        // Every word of the transition first: u_ε, p, then u.
        let u_step = f64::uniform(rng.next_u32());
        let eps = step * (1.0 + options.jitter * (2.0 * u_step - 1.0));
        fill_normals(rng, p);
        let u = f64::uniform(rng.next_u32());
        let kinetic = 0.5 * p.iter().map(|v| v * v).sum::<f64>();
        out.proposals += 1;

        y.copy_from_slice(x);
        gy.copy_from_slice(gx);
        let end = leapfrog(
            path,
            beta,
            eps,
            options.leapfrog_steps,
            y,
            p,
            gy,
            tmp,
            current,
        )?;
        out.gradient_evaluations += u64::from(end.evaluations);
        let kinetic_end = 0.5 * p.iter().map(|v| v * v).sum::<f64>();
        if !(end.finite && kinetic_end.is_finite()) {
            out.nonfinite += 1;
            continue;
        }
        // −ΔH = f(y) − f(x) + |p|²/2 − |p′|²/2.
        let log_ratio = end.point.log_density - current.log_density + kinetic - kinetic_end;
        // A current state outside the support accepts any proposal that stayed finite.
        let (accept, prob) = if !current.log_density.is_finite() || log_ratio >= 0.0 {
            (true, 1.0)
        } else {
            // NaN compares false: rejected, probability 0.
            let a = libm::exp(log_ratio);
            (
                f64::ln_uniform(u) < log_ratio,
                if a.is_nan() { 0.0 } else { a },
            )
        };
        out.acceptance_sum += prob;
        if accept {
            out.accepted += 1;
            x.copy_from_slice(y);
            gx.copy_from_slice(gy);
            current = end.point;
        }
    }
    out.log_reference = current.log_reference;
    out.log_likelihood = current.log_likelihood;
    Ok(out)
}

/// Where a leapfrog trajectory ended.
#[derive(Clone, Copy, Debug)]
struct Trajectory {
    /// log π₀, ℓ and f at the last point evaluated.
    point: TemperedPoint,
    /// Gradient evaluations made.
    evaluations: u32,
    /// Whether every point had a finite log density and gradient (else the trajectory
    /// stopped at the first that did not).
    finite: bool,
}

/// `steps` leapfrog steps of size `eps` from (`y`, `p`), with `g` the gradient of f at
/// `y` and `start` its values there; `y`, `p` and `g` end at the last point.
#[allow(clippy::too_many_arguments)]
fn leapfrog<P: AnnealingPath>(
    path: &mut P,
    beta: f64,
    eps: f64,
    steps: u32,
    y: &mut [f64],
    p: &mut [f64],
    g: &mut [f64],
    tmp: &mut [f64],
    start: TemperedPoint,
) -> Result<Trajectory, P::Error> {
    let half = 0.5 * eps;
    kick(p, g, half);
    let mut point = start;
    for i in 0..steps {
        for (yi, &pi) in y.iter_mut().zip(p.iter()) {
            *yi += eps * pi;
        }
        point = tempered_gradient(path, beta, y, g, tmp)?;
        if !(point.log_density.is_finite() && g.iter().all(|v| v.is_finite())) {
            return Ok(Trajectory {
                point,
                evaluations: i + 1,
                finite: false,
            });
        }
        kick(p, g, if i + 1 < steps { eps } else { half });
    }
    Ok(Trajectory {
        point,
        evaluations: steps,
        finite: true,
    })
}

/// p ← p + h g.
fn kick(p: &mut [f64], g: &[f64], h: f64) {
    for (pi, &gi) in p.iter_mut().zip(g) {
        *pi += h * gi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::{GaussianPath, adapt_step, log_tempered};
    use crate::rng::{PhiloxStream, streams};
    use core::convert::Infallible;

    /// A path with a non-quadratic ℓ: π₀ = N(0, I), ℓ(x) = Σ (sin x_i − x_i⁴/4). Its
    /// exact draws are not needed here.
    struct Quartic {
        dim: usize,
    }

    impl AnnealingPath for Quartic {
        type Error = Infallible;
        fn dim(&self) -> usize {
            self.dim
        }
        fn log_reference(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Infallible> {
            for (g, &v) in grad.iter_mut().zip(x) {
                *g = -v;
            }
            Ok(-0.5 * x.iter().map(|v| v * v).sum::<f64>())
        }
        fn log_likelihood_gradient(
            &mut self,
            x: &[f64],
            grad: &mut [f64],
        ) -> Result<f64, Infallible> {
            for (g, &v) in grad.iter_mut().zip(x) {
                *g = libm::cos(v) - v * v * v;
            }
            self.log_likelihood(x)
        }
        fn log_likelihood(&mut self, x: &[f64]) -> Result<f64, Infallible> {
            Ok(x.iter().map(|&v| libm::sin(v) - 0.25 * v * v * v * v).sum())
        }
        fn sample_reference<R: Rng + ?Sized>(
            &mut self,
            x: &mut [f64],
            rng: &mut R,
        ) -> Result<(), Infallible> {
            fill_normals(rng, x);
            Ok(())
        }
    }

    fn start<P: AnnealingPath>(path: &mut P, beta: f64, x: &[f64], g: &mut [f64]) -> TemperedPoint {
        let mut tmp = [0.0; 8];
        let Ok(t) = tempered_gradient(path, beta, x, g, &mut tmp[..x.len()]) else {
            unreachable!()
        };
        t
    }

    /// H(x, p) = −f(x) + |p|²/2.
    fn hamiltonian(point: TemperedPoint, p: &[f64]) -> f64 {
        -point.log_density + 0.5 * p.iter().map(|v| v * v).sum::<f64>()
    }

    /// Leapfrog is reversible: L steps forward, the momentum negated, L steps back return
    /// to the start within 1e-12 (position and momentum), on the quartic path.
    #[test]
    fn leapfrog_is_reversible() {
        let mut path = Quartic { dim: 3 };
        let beta = 0.7;
        let x0 = [0.3, -1.1, 0.8];
        let p0 = [0.5, 1.2, -0.7];
        for (eps, steps) in [(0.05, 40u32), (0.2, 7), (0.01, 1)] {
            let (mut y, mut p, mut g, mut tmp) = (x0, p0, [0.0; 3], [0.0; 3]);
            let s = start(&mut path, beta, &y, &mut g);
            let Ok(fwd) = leapfrog(
                &mut path, beta, eps, steps, &mut y, &mut p, &mut g, &mut tmp, s,
            );
            assert!(fwd.finite && fwd.evaluations == steps);
            assert!((y[0] - x0[0]).abs() > 1e-3, "the trajectory moved");
            p.iter_mut().for_each(|v| *v = -*v);
            let Ok(back) = leapfrog(
                &mut path, beta, eps, steps, &mut y, &mut p, &mut g, &mut tmp, fwd.point,
            );
            for i in 0..3 {
                assert!(
                    (y[i] - x0[i]).abs() < 1e-12,
                    "ε {eps}: x[{i}] {} vs {}",
                    y[i],
                    x0[i]
                );
                assert!(
                    (-p[i] - p0[i]).abs() < 1e-12,
                    "ε {eps}: p[{i}] {} vs {}",
                    -p[i],
                    p0[i]
                );
            }
            let lr = -0.5 * x0.iter().map(|v| v * v).sum::<f64>();
            assert!((back.point.log_reference - lr).abs() < 1e-12);
        }
    }

    /// On the Gaussian path (π_β = N(0, I/τ), ω² = τ) leapfrog conserves the shadow
    /// energy H̃ = |p|²/2 + (τ/2)(1 − ε²τ/4)|x|² exactly (the map M = [[a, ε], [c, a]] with
    /// a = 1 − ε²τ/2, c = −ετ(1 − ε²τ/4) satisfies MᵀQM = Q for Q = diag(τ(1 − ε²τ/4),
    /// 1)), so the energy error has the closed form ΔH = (ε²τ²/8)(|x_L|² − |x_0|²):
    /// checked to 1e-12 absolute (H is O(1), ΔH from 3e-4 down to 5e-6). At a fixed
    /// trajectory length T = εL = 1.2 it shrinks like ε²: ΔH/ε² tends to
    /// (τ²/8)(|x(T)|² − |x_0|²) with x(T) = x_0 cos ωT + (p_0/ω) sin ωT the exact flow,
    /// within 1.5·ε²τ relative (measured 1.18·ε²τ), and halving ε divides ΔH by 3.7 to 4.1.
    #[test]
    fn energy_error_is_the_closed_form_and_shrinks_like_eps_squared() {
        let mut path = GaussianPath::standard(4).unwrap();
        let beta = 0.6;
        let tau = path.precision(beta);
        let omega = libm::sqrt(tau);
        let x0 = [0.4, -0.2, 0.3, 0.1];
        let p0 = [1.0, 0.5, -0.8, 0.2];
        let sq = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>();
        let t = 1.2;
        let flow: [f64; 4] = core::array::from_fn(|i| {
            x0[i] * libm::cos(omega * t) + p0[i] / omega * libm::sin(omega * t)
        });
        let limit = tau * tau / 8.0 * (sq(&flow) - sq(&x0));
        let mut previous: Option<f64> = None;
        for steps in [12u32, 24, 48, 96] {
            let eps = t / f64::from(steps);
            let (mut y, mut p, mut g, mut tmp) = (x0, p0, [0.0; 4], [0.0; 4]);
            let s = start(&mut path, beta, &y, &mut g);
            let Ok(end) = leapfrog(
                &mut path, beta, eps, steps, &mut y, &mut p, &mut g, &mut tmp, s,
            );
            let dh = hamiltonian(end.point, &p) - hamiltonian(s, &p0);
            let closed = eps * eps * tau * tau / 8.0 * (sq(&y) - sq(&x0));
            assert!((dh - closed).abs() < 1e-12, "ε {eps}: ΔH {dh} vs {closed}");
            let deviation = dh / (eps * eps) / limit - 1.0;
            assert!(
                deviation.abs() < 1.5 * eps * eps * tau,
                "ε {eps}: ΔH/ε² off the limit by {deviation}"
            );
            if let Some(before) = previous {
                let ratio = before / dh;
                assert!((3.7..4.1).contains(&ratio), "ε {eps}: ratio {ratio}");
            }
            previous = Some(dh);
        }
    }

    /// HMC at fixed β on the Gaussian path samples N(0, I/τ_β): after 10 000 adapted
    /// transitions, 40 000 frozen ones (d = 4, another seed per β) give E|x|²/d within 3 %
    /// of 1/τ_β (3.5 standard errors: the integrated autocorrelation time of |x|² is about
    /// 6) and every coordinate's mean within 0.03/√τ_β of 0 (4 or more standard errors);
    /// the acceptance of the frozen kernel is within 0.05 of a⋆ = 0.65, and every
    /// transition costs 1 + L gradients.
    #[test]
    fn hmc_samples_the_tempered_gaussian_and_adapts() {
        let d = 4;
        let mut path = GaussianPath::standard(d).unwrap();
        let options = HmcOptions::default().validate().unwrap();
        for beta in [1.0, 0.3] {
            let tau = path.precision(beta);
            let mut x = [1.0f64; 4];
            let mut scratch = [0.0f64; 4 * HMC_SCRATCH_VECTORS];
            let mut step = options.initial_step;
            let (mut sq, mut mean, mut acc, mut n) = (0.0, [0.0; 4], 0.0, 0.0);
            let seed = if beta == 1.0 { 5 } else { 6 };
            for k in 0..50_000u64 {
                let mut rng = PhiloxStream::new(seed, 0, k, 0, streams::EXACT_EXPLORE);
                let Ok(o) = hmc_explore(
                    &mut path,
                    beta,
                    step,
                    &options,
                    &mut x,
                    &mut scratch,
                    &mut rng,
                ) else {
                    unreachable!()
                };
                assert_eq!(
                    o.gradient_evaluations,
                    1 + u64::from(options.leapfrog_steps)
                );
                if k < 10_000 {
                    step = adapt_step(step, k, o.mean_acceptance(), 0.65, 0.6);
                } else {
                    sq += x.iter().map(|v| v * v).sum::<f64>() / d as f64;
                    x.iter().zip(mean.iter_mut()).for_each(|(v, m)| *m += v);
                    acc += o.acceptance_sum;
                    n += 1.0;
                }
            }
            let var = sq / n;
            println!(
                "β {beta}: variance × τ {:.4}, means × √τ {:?}, acceptance {:.4}, ε {step:.4}",
                var * tau,
                mean.map(|m| m / n * tau.sqrt()),
                acc / n
            );
            assert!(
                (var * tau - 1.0).abs() < 0.03,
                "β {beta}: variance {var} vs {}",
                1.0 / tau
            );
            for m in mean {
                assert!(
                    (m / n).abs() * tau.sqrt() < 0.03,
                    "β {beta}: mean {}",
                    m / n
                );
            }
            assert!(
                (acc / n - 0.65).abs() < 0.05,
                "β {beta}: acceptance {}",
                acc / n
            );
        }
    }

    /// One transition against a plain re-implementation from the documented word order
    /// (u_ε, the momentum pairs by Box–Muller, u), on the quartic path in 3 dimensions:
    /// the same state to 1e-13 and the same decisions; the words consumed are
    /// 2·ceil(D/2) + 2 per transition.
    #[test]
    fn a_transition_matches_the_documented_recipe() {
        let d = 3;
        let beta = 0.8;
        let options = HmcOptions {
            leapfrog_steps: 5,
            jitter: 0.3,
            steps_per_iteration: 1,
            ..HmcOptions::default()
        };
        let (mut accepted, mut rejected) = (0, 0);
        for k in 0..200u64 {
            let mut path = Quartic { dim: d };
            let x0 = [0.2 * (k % 7) as f64 - 0.6, 0.5, -0.3];
            let step = 0.4 + 0.003 * k as f64;
            let mut x = x0;
            let mut scratch = [0.0; 3 * HMC_SCRATCH_VECTORS];
            let mut rng = PhiloxStream::new(11, 2, k, 5, streams::EXACT_EXPLORE);
            let Ok(o) = hmc_explore(
                &mut path,
                beta,
                step,
                &options,
                &mut x,
                &mut scratch,
                &mut rng,
            ) else {
                unreachable!()
            };
            assert_eq!(rng.position(), 2 * 2 + 2);

            // The recipe, written out.
            let words = PhiloxStream::new(11, 2, k, 5, streams::EXACT_EXPLORE);
            let w = |i: u64| words.word(i);
            let unit = |word: u32| (f64::from(word) + 0.5) / 4_294_967_296.0;
            let eps = step * (1.0 + 0.3 * (2.0 * unit(w(0)) - 1.0));
            let normal = |a: u32, b: u32| {
                let r = (-2.0 * unit(a).ln()).sqrt();
                let t = core::f64::consts::TAU * unit(b);
                (r * t.cos(), r * t.sin())
            };
            let (z0, z1) = normal(w(1), w(2));
            let (z2, _) = normal(w(3), w(4));
            let mut p = [z0, z1, z2];
            let grad = |x: &[f64; 3]| {
                let mut g = [0.0; 3];
                for i in 0..3 {
                    g[i] = -x[i] + beta * (x[i].cos() - x[i].powi(3));
                }
                g
            };
            let f = |x: &[f64; 3]| {
                let lr: f64 = -0.5 * x.iter().map(|v| v * v).sum::<f64>();
                let ll: f64 = x.iter().map(|&v| v.sin() - 0.25 * v.powi(4)).sum();
                log_tempered(beta, lr, ll)
            };
            let h0 = -f(&x0) + 0.5 * p.iter().map(|v| v * v).sum::<f64>();
            let mut y = x0;
            for _ in 0..5 {
                let g = grad(&y);
                for i in 0..3 {
                    p[i] += 0.5 * eps * g[i];
                    y[i] += eps * p[i];
                }
                let g = grad(&y);
                for i in 0..3 {
                    p[i] += 0.5 * eps * g[i];
                }
            }
            let h1 = -f(&y) + 0.5 * p.iter().map(|v| v * v).sum::<f64>();
            let prob = (h0 - h1).exp().min(1.0);
            assert!(
                (o.acceptance_sum - prob).abs() < 1e-12,
                "k {k}: {} vs {prob}",
                o.acceptance_sum
            );
            let accept = unit(w(5)).ln() < h0 - h1;
            let want = if accept { y } else { x0 };
            for i in 0..3 {
                assert!((x[i] - want[i]).abs() < 1e-13, "k {k}: x[{i}]");
            }
            assert_eq!(o.accepted, u32::from(accept));
            if accept {
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
        assert!(
            accepted > 20 && rejected > 20,
            "{accepted} accepted, {rejected} rejected"
        );
    }

    /// A path whose log density is −∞ beyond x₀ > 0.5 (a wall): no accepted state ever
    /// crosses it, trajectories that hit it are counted as non-finite and stop early, and
    /// the words drawn per transition do not depend on it. A current state beyond the
    /// wall accepts every proposal whose trajectory stays finite.
    #[test]
    fn nonfinite_points_are_rejected_and_streams_stay_aligned() {
        struct Wall;
        impl AnnealingPath for Wall {
            type Error = Infallible;
            fn dim(&self) -> usize {
                2
            }
            fn log_reference(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Infallible> {
                for (g, &v) in grad.iter_mut().zip(x) {
                    *g = -v;
                }
                let inside = -0.5 * x.iter().map(|v| v * v).sum::<f64>();
                Ok(if x[0] > 0.5 {
                    f64::NEG_INFINITY
                } else {
                    inside
                })
            }
            fn log_likelihood_gradient(
                &mut self,
                _: &[f64],
                grad: &mut [f64],
            ) -> Result<f64, Infallible> {
                grad.fill(0.0);
                Ok(0.0)
            }
            fn log_likelihood(&mut self, _: &[f64]) -> Result<f64, Infallible> {
                Ok(0.0)
            }
            fn sample_reference<R: Rng + ?Sized>(
                &mut self,
                x: &mut [f64],
                rng: &mut R,
            ) -> Result<(), Infallible> {
                fill_normals(rng, x);
                Ok(())
            }
        }
        let options = HmcOptions {
            steps_per_iteration: 3,
            leapfrog_steps: 20,
            ..HmcOptions::default()
        };
        let (mut x, mut scratch) = ([0.0, 0.0], [0.0; 2 * HMC_SCRATCH_VECTORS]);
        let (mut nonfinite, mut short) = (0, 0);
        for k in 0..2_000u64 {
            let mut rng = PhiloxStream::new(3, 0, k, 1, streams::EXACT_EXPLORE);
            let Ok(o) = hmc_explore(
                &mut Wall,
                1.0,
                0.3,
                &options,
                &mut x,
                &mut scratch,
                &mut rng,
            ) else {
                unreachable!()
            };
            assert_eq!(rng.position(), 3 * (2 + 2), "k {k}");
            assert!(x[0] <= 0.5 && o.log_reference.is_finite(), "k {k}: {x:?}");
            nonfinite += o.nonfinite;
            short += u32::from(o.gradient_evaluations < 1 + 3 * 20);
            assert!(o.acceptance_sum <= f64::from(o.proposals - o.nonfinite));
        }
        assert!(nonfinite > 100 && short > 100, "{nonfinite} {short}");
        // From beyond the wall (f = −∞): a one-step trajectory that ends inside is always
        // accepted (probability 1), one that ends outside is non-finite.
        let one = HmcOptions {
            leapfrog_steps: 1,
            steps_per_iteration: 1,
            ..options
        };
        let mut inside = 0;
        for k in 0..200u64 {
            let mut x = [3.0, 0.0];
            let mut rng = PhiloxStream::new(3, 0, k, 9, streams::EXACT_EXPLORE);
            let Ok(o) = hmc_explore(&mut Wall, 1.0, 1.0, &one, &mut x, &mut scratch, &mut rng)
            else {
                unreachable!()
            };
            assert_eq!(o.accepted + o.nonfinite, 1, "k {k}: {o:?}");
            assert_eq!(o.acceptance_sum, f64::from(o.accepted));
            assert_eq!(x[0] <= 0.5, o.accepted == 1, "k {k}: {x:?}");
            inside += o.accepted;
        }
        // Inside after one step of ε' ≈ 1 from 3 takes p₀ below about −1: some 16 %.
        assert!((10..80).contains(&inside), "{inside} of 200");
    }

    /// The same seed gives the same bits; the options and lengths are checked.
    #[test]
    fn determinism_and_errors() {
        let run = |seed: u32| {
            let mut path = Quartic { dim: 5 };
            let mut x = [0.1, 0.2, -0.3, 0.4, 0.0];
            let mut scratch = [0.0; 5 * HMC_SCRATCH_VECTORS];
            let mut outs = [HmcOutcome::default(); 50];
            for (k, o) in outs.iter_mut().enumerate() {
                let mut rng = PhiloxStream::new(seed, 0, k as u64, 0, streams::EXACT_EXPLORE);
                let Ok(r) = hmc_explore(
                    &mut path,
                    0.5,
                    0.2,
                    &HmcOptions::default(),
                    &mut x,
                    &mut scratch,
                    &mut rng,
                ) else {
                    unreachable!()
                };
                *o = r;
            }
            (x.map(f64::to_bits), outs)
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4).0, run(5).0);

        let mut path = Quartic { dim: 3 };
        let mut rng = PhiloxStream::new(0, 0, 0, 0, streams::EXACT_EXPLORE);
        let o = HmcOptions::default();
        let short = hmc_explore(
            &mut path,
            1.0,
            0.1,
            &o,
            &mut [0.0; 3],
            &mut [0.0; 14],
            &mut rng,
        );
        assert!(matches!(
            short,
            Err(ExploreError::Input(Error::LengthMismatch {
                name: "scratch",
                ..
            }))
        ));
        let wrong = hmc_explore(
            &mut path,
            1.0,
            0.1,
            &o,
            &mut [0.0; 2],
            &mut [0.0; 15],
            &mut rng,
        );
        assert!(matches!(
            wrong,
            Err(ExploreError::Input(Error::LengthMismatch { name: "x", .. }))
        ));
        assert_eq!(rng.position(), 0, "nothing drawn");

        assert!(HmcOptions::default().validate().is_ok());
        let d = HmcOptions::default();
        for (bad, name) in [
            (
                HmcOptions {
                    initial_step: 0.0,
                    ..d
                },
                "hmc.initial_step",
            ),
            (
                HmcOptions {
                    initial_step: f64::NAN,
                    ..d
                },
                "hmc.initial_step",
            ),
            (
                HmcOptions {
                    initial_step: 1e13,
                    ..d
                },
                "hmc.initial_step",
            ),
            (
                HmcOptions {
                    leapfrog_steps: 0,
                    ..d
                },
                "hmc.leapfrog_steps",
            ),
            (HmcOptions { jitter: 1.0, ..d }, "hmc.jitter"),
            (HmcOptions { jitter: -0.1, ..d }, "hmc.jitter"),
            (
                HmcOptions {
                    jitter: f64::NAN,
                    ..d
                },
                "hmc.jitter",
            ),
            (
                HmcOptions {
                    target_acceptance: 1.0,
                    ..d
                },
                "hmc.target_acceptance",
            ),
            (
                HmcOptions {
                    steps_per_iteration: 0,
                    ..d
                },
                "hmc.steps_per_iteration",
            ),
            (HmcOptions { decay: 0.5, ..d }, "hmc.decay"),
        ] {
            let e = bad.validate().unwrap_err();
            let got = match e {
                Error::InvalidValue { name, .. } | Error::SwapRateOutOfRange { name, .. } => name,
                other => panic!("{other:?}"),
            };
            assert_eq!(got, name, "{bad:?}");
        }
    }
}
