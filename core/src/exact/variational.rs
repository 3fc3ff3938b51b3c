//! A variational reference: a mean-field Gaussian fitted to the target level during the
//! run, which moves the path's β = 0 end close to the target.
//!
//! This is the reference of Surjanovic, Syed, Bouchard-Côté and Campbell, "Parallel
//! tempering with a variational reference" (NeurIPS 2022), in its mean-field Gaussian
//! family. A path from a fixed reference π₀ (a prior, say) to a posterior that
//! concentrates far from it has a large barrier Λ; a reference q fitted to the posterior
//! makes the path from q to the same target short, so fewer chains make more round trips.
//!
//! # The path
//!
//! [`VariationalPath`] wraps any [`AnnealingPath`] (π₀, ℓ), whose unnormalized target is
//! γ₁ = π₀ e^ℓ, and anneals from
//!
//! ```text
//! q(x) = Π_i N(x_i; m_i, s_i²)      (normalized: log q includes −Σ ln s_i − (D/2) ln 2π)
//! ℓ_q(x) = log γ₁(x) − log q(x) = log π₀(x) + ℓ(x) − log q(x),
//! ```
//!
//! so that q e^{ℓ_q} = γ₁: the target is unchanged, and since q is normalized the
//! stepping stone still estimates log ∫ γ₁, the evidence of the original path
//! ([`crate::exact::path`]). ∇ℓ_q = ∇log π₀ + ∇ℓ + (x − m)/s², and exact draws from q are
//! m + s·z with z standard normal ([`fill_normals`], the words of D normals).
//!
//! # The fit
//!
//! [`ExactTempering::step`](super::ExactTempering::step) hands the path the target
//! level's state after every iteration ([`AnnealingPath::observe_target`]); the path
//! keeps their running mean and variance per coordinate (Welford's update). At the end
//! of every round whose grid adapts ([`AnnealingPath::end_round`]) it sets m to the mean
//! and s to the standard deviation (floored at [`VariationalOptions::min_scale`]) of that
//! round's states, provided there were at least [`VariationalOptions::min_samples`] of
//! them (else it keeps gathering into the next round), and the sampler re-evaluates
//! every replica's ℓ under the new path. Until the first fit the path is the wrapped one,
//! bit for bit. When the sampler freezes its grid (the measuring round), the reference
//! stays as it is.
//!
//! For a Gaussian target N(μ, diag σ²) the fit converges to q = π₁ itself: ℓ_q is then
//! constant and the barrier of the path from q is zero. What remains is the fit's noise:
//! a fit from n nearly independent states misses each mean and scale by about 1/√n, which
//! leaves a barrier of order √(D/n). On N(0, I₁₀) → N(0, I₁₀/10) with 8 chains
//! (`core/tests/it/variational.rs`), Λ̂ = 2.69 from the fixed reference falls to 0.147
//! with the reference fitted to a round of 512 iterations and to 0.070 with one of 2,048,
//! and log Z's standard error from 0.053 to 0.0012.
//!
//! # Storage
//!
//! The path keeps 5·D floats in a buffer of the caller's ([`VariationalPath::buffer_len`]):
//! a slice for `no_std` callers, a `Vec` for others; nothing is allocated. The fit and
//! q itself are a [`GaussianFit`] over that buffer, which a caller who explores by
//! himself (a run told its log-likelihoods) uses on its own: he hands it the target
//! level's states and anneals from the q it fits.

use rand_core::Rng;

use super::path::AnnealingPath;
use crate::error::{Error, check_len};
use crate::rng::fill_normals;

/// ln √(2π).
const HALF_LN_TAU: f64 = 0.918_938_533_204_672_8;

/// Settings of the fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VariationalOptions {
    /// Fewest target-level states a fit uses; a round with fewer keeps gathering into
    /// the next. At least 2.
    pub min_samples: u64,
    /// Smallest standard deviation s_i of the fitted reference, > 0 (a coordinate that
    /// stood still in a round would otherwise give a reference of zero width).
    pub min_scale: f64,
}

impl Default for VariationalOptions {
    /// At least 16 states per fit, s_i ≥ 10⁻⁶.
    fn default() -> Self {
        VariationalOptions {
            min_samples: 16,
            min_scale: 1e-6,
        }
    }
}

impl VariationalOptions {
    /// Checks both settings.
    pub fn validate(self) -> Result<Self, Error> {
        if self.min_samples < 2 {
            return Err(Error::InvalidValue {
                name: "variational.min_samples",
                value: self.min_samples as f64,
                allowed: ">= 2",
            });
        }
        if !(self.min_scale.is_finite() && self.min_scale > 0.0) {
            return Err(Error::InvalidValue {
                name: "variational.min_scale",
                value: self.min_scale,
                allowed: "finite and > 0",
            });
        }
        Ok(self)
    }
}

/// A mean-field Gaussian q = N(m, diag s²) fitted to states handed to it one at a time:
/// [`GaussianFit::observe`] gathers their running mean and variance per coordinate
/// (Welford's update), [`GaussianFit::fit`] sets m and s from them. The reference of a
/// [`VariationalPath`], and on its own the fit of a caller who explores by himself (a
/// run told its log-likelihoods keeps no states, so its caller hands the target level's
/// states here and anneals from the q it reads back).
///
/// `S` is the storage of [`GaussianFit::buffer_len`] floats: `&mut [f64]` or `Vec<f64>`.
#[derive(Clone, Debug)]
pub struct GaussianFit<S> {
    buffer: S,
    dim: usize,
    options: VariationalOptions,
    /// States gathered since the last fit.
    count: u64,
    /// Fits made so far (0: nothing fitted yet).
    fits: u32,
}

/// Where each part lies in the buffer, D floats each.
const MEAN: usize = 0;
const SCALE: usize = 1;
const SUM_MEAN: usize = 2;
const SUM_M2: usize = 3;
/// Scratch for a path's gradient of its wrapped reference ([`VariationalPath`]).
const GRADIENT: usize = 4;
const PARTS: usize = 5;

impl<S: AsRef<[f64]> + AsMut<[f64]>> GaussianFit<S> {
    /// Floats of the buffer for states of dimension `dim`: the mean, the scale, the
    /// running moments and a gradient's scratch, `dim` each.
    pub fn buffer_len(dim: usize) -> usize {
        PARTS * dim
    }

    /// A fit of states of dimension `dim` with nothing gathered or fitted; `buffer`
    /// must hold [`GaussianFit::buffer_len`] floats (its contents do not matter).
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] for a buffer of the wrong length, and what
    /// [`VariationalOptions::validate`] reports.
    pub fn new(dim: usize, mut buffer: S, options: VariationalOptions) -> Result<Self, Error> {
        let options = options.validate()?;
        check_len("variational buffer", buffer.as_ref().len(), PARTS * dim)?;
        buffer.as_mut().fill(0.0);
        Ok(GaussianFit {
            buffer,
            dim,
            options,
            count: 0,
            fits: 0,
        })
    }

    /// Continues a fit saved by [`GaussianFit::saved`]: `buffer` as the fit left it
    /// ([`GaussianFit::buffer`]), `count` and `fits` as it reported them.
    ///
    /// # Errors
    ///
    /// As [`GaussianFit::new`], and a fitted reference with a scale that is not finite
    /// and positive or a mean that is not finite.
    pub fn resume(
        dim: usize,
        buffer: S,
        options: VariationalOptions,
        count: u64,
        fits: u32,
    ) -> Result<Self, Error> {
        let options = options.validate()?;
        check_len("variational buffer", buffer.as_ref().len(), PARTS * dim)?;
        let fit = GaussianFit {
            buffer,
            dim,
            options,
            count,
            fits,
        };
        if fits > 0 {
            let ok = fit.mean().iter().all(|m| m.is_finite())
                && fit.scale().iter().all(|s| s.is_finite() && *s > 0.0);
            if !ok {
                return Err(Error::InvalidValue {
                    name: "variational reference",
                    value: f64::NAN,
                    allowed: "a finite mean and a finite, positive scale",
                });
            }
        }
        Ok(fit)
    }

    /// `(count, fits)`: with [`GaussianFit::buffer`], what [`GaussianFit::resume`]
    /// needs.
    pub fn saved(&self) -> (u64, u32) {
        (self.count, self.fits)
    }

    /// The buffer (mean, scale, the running moments and a gradient, D floats each).
    pub fn buffer(&self) -> &[f64] {
        self.buffer.as_ref()
    }

    /// Dimension D of the states.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Fits made so far.
    pub fn fits(&self) -> u32 {
        self.fits
    }

    /// Whether q has been fitted at least once.
    pub fn is_fitted(&self) -> bool {
        self.fits > 0
    }

    /// States gathered since the last fit.
    pub fn gathered(&self) -> u64 {
        self.count
    }

    /// The fitted mean m (zeros before the first fit).
    pub fn mean(&self) -> &[f64] {
        self.part(MEAN)
    }

    /// The fitted standard deviations s (zeros before the first fit).
    pub fn scale(&self) -> &[f64] {
        self.part(SCALE)
    }

    /// The settings of the fit.
    pub fn options(&self) -> &VariationalOptions {
        &self.options
    }

    fn part(&self, i: usize) -> &[f64] {
        &self.buffer.as_ref()[i * self.dim..(i + 1) * self.dim]
    }

    /// The gradient's scratch (D floats).
    fn scratch(&mut self) -> &mut [f64] {
        let d = self.dim;
        &mut self.buffer.as_mut()[GRADIENT * d..(GRADIENT + 1) * d]
    }

    /// log q(x) (normalized), and ∇ log q(x) = −(x − m)/s² into `grad` when given. The
    /// fitted q: call it after the first fit (before, m = s = 0).
    pub fn log_density(&self, x: &[f64], grad: Option<&mut [f64]>) -> f64 {
        let (m, s) = (self.mean(), self.scale());
        let mut sum = 0.0;
        for ((&xi, &mi), &si) in x.iter().zip(m).zip(s) {
            let z = (xi - mi) / si;
            sum += -0.5 * z * z - libm::log(si) - HALF_LN_TAU;
        }
        if let Some(grad) = grad {
            for (((g, &xi), &mi), &si) in grad.iter_mut().zip(x).zip(m).zip(s) {
                *g = -(xi - mi) / (si * si);
            }
        }
        sum
    }

    /// Overwrites `x` with m + s·z, z from [`fill_normals`] (`2·ceil(D/2)` words of
    /// `rng`).
    pub fn sample<R: Rng + ?Sized>(&self, x: &mut [f64], rng: &mut R) {
        fill_normals(rng, x);
        for ((v, &mi), &si) in x.iter_mut().zip(self.mean()).zip(self.scale()) {
            *v = mi + si * *v;
        }
    }

    /// Welford's update of the running mean and second moment of every coordinate with
    /// the state `x`. A state of another length or with a non-finite coordinate is
    /// left out; returns whether `x` was gathered.
    pub fn observe(&mut self, x: &[f64]) -> bool {
        if x.len() != self.dim || !x.iter().all(|v| v.is_finite()) {
            return false;
        }
        self.count += 1;
        let n = self.count as f64;
        let d = self.dim;
        let (mean, m2) = self.buffer.as_mut()[SUM_MEAN * d..(SUM_M2 + 1) * d].split_at_mut(d);
        for ((&xi, mu), m2) in x.iter().zip(mean.iter_mut()).zip(m2.iter_mut()) {
            let delta = xi - *mu;
            *mu += delta / n;
            *m2 += delta * (xi - *mu);
        }
        true
    }

    /// Fits q to the states gathered since the last fit, if there are at least
    /// [`VariationalOptions::min_samples`]: m their mean, s their standard deviation
    /// (denominator n − 1) floored at [`VariationalOptions::min_scale`]; the gathered
    /// moments are then cleared. Returns whether it fitted; else it keeps gathering,
    /// and q stays as it was, also when the moments overflowed (states near the largest
    /// float) into a mean or a scale that is not finite.
    pub fn fit(&mut self) -> bool {
        if self.count < self.options.min_samples {
            return false;
        }
        let d = self.dim;
        let n = self.count as f64;
        let floor = self.options.min_scale;
        let buffer = self.buffer.as_mut();
        let (fitted, gathered) = buffer.split_at_mut(SUM_MEAN * d);
        let (mean, scale) = fitted.split_at_mut(d);
        let (sum_mean, rest) = gathered.split_at_mut(d);
        let sum_m2 = &mut rest[..d];
        let fitted_scale = |m2: f64| libm::sqrt(m2 / (n - 1.0)).max(floor);
        let finite = sum_mean.iter().all(|m| m.is_finite())
            && sum_m2.iter().all(|&m2| fitted_scale(m2).is_finite());
        if !finite {
            return false;
        }
        for i in 0..d {
            mean[i] = sum_mean[i];
            scale[i] = fitted_scale(sum_m2[i]);
        }
        sum_mean.fill(0.0);
        sum_m2.fill(0.0);
        self.count = 0;
        self.fits += 1;
        true
    }
}

/// A path from a fitted mean-field Gaussian reference to the target of `inner` (see the
/// [module docs](self)). `S` is the storage of [`VariationalPath::buffer_len`] floats:
/// `&mut [f64]` or `Vec<f64>`.
#[derive(Clone, Debug)]
pub struct VariationalPath<P, S> {
    inner: P,
    q: GaussianFit<S>,
}

impl<P: AnnealingPath, S: AsRef<[f64]> + AsMut<[f64]>> VariationalPath<P, S> {
    /// Floats of the buffer for a path of dimension `dim` ([`GaussianFit::buffer_len`]).
    pub fn buffer_len(dim: usize) -> usize {
        GaussianFit::<S>::buffer_len(dim)
    }

    /// The path of `inner` with a reference that `options` fits; until the first fit it
    /// is `inner`'s path. `buffer` must hold [`VariationalPath::buffer_len`] floats (its
    /// contents do not matter).
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] for a buffer of the wrong length, and what
    /// [`VariationalOptions::validate`] reports.
    pub fn new(inner: P, buffer: S, options: VariationalOptions) -> Result<Self, Error> {
        let q = GaussianFit::new(inner.dim(), buffer, options)?;
        Ok(VariationalPath { inner, q })
    }

    /// Continues a path saved by [`VariationalPath::saved`]: `buffer` as the path left
    /// it ([`VariationalPath::buffer`]), `count` and `fits` as it reported them.
    ///
    /// # Errors
    ///
    /// As [`GaussianFit::resume`].
    pub fn resume(
        inner: P,
        buffer: S,
        options: VariationalOptions,
        count: u64,
        fits: u32,
    ) -> Result<Self, Error> {
        let q = GaussianFit::resume(inner.dim(), buffer, options, count, fits)?;
        Ok(VariationalPath { inner, q })
    }

    /// `(count, fits)`: with [`VariationalPath::buffer`], what
    /// [`VariationalPath::resume`] needs.
    pub fn saved(&self) -> (u64, u32) {
        self.q.saved()
    }

    /// The buffer (mean, scale, the running moments and a gradient, D floats each).
    pub fn buffer(&self) -> &[f64] {
        self.q.buffer()
    }

    /// The wrapped path.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The fitted reference q.
    pub fn reference(&self) -> &GaussianFit<S> {
        &self.q
    }

    /// Fits made so far; 0 while the reference is still the wrapped path's.
    pub fn fits(&self) -> u32 {
        self.q.fits()
    }

    /// Whether the reference is the fitted Gaussian (after the first fit).
    pub fn is_fitted(&self) -> bool {
        self.q.is_fitted()
    }

    /// The fitted mean m (zeros before the first fit).
    pub fn mean(&self) -> &[f64] {
        self.q.mean()
    }

    /// The fitted standard deviations s (zeros before the first fit).
    pub fn scale(&self) -> &[f64] {
        self.q.scale()
    }

    /// The settings of the fit.
    pub fn options(&self) -> &VariationalOptions {
        self.q.options()
    }

    /// log γ₁(x) − log q(x) = log π₀(x) + ℓ(x) − log q(x), with its gradient into
    /// `grad` when given.
    fn fitted_log_likelihood(
        &mut self,
        x: &[f64],
        grad: Option<&mut [f64]>,
    ) -> Result<f64, P::Error> {
        let reference_gradient = self.q.scratch();
        let log_reference = self.inner.log_reference(x, reference_gradient)?;
        let Some(grad) = grad else {
            let ell = self.inner.log_likelihood(x)?;
            return Ok(log_reference + ell - self.q.log_density(x, None));
        };
        let ell = self.inner.log_likelihood_gradient(x, grad)?;
        let d = self.q.dim;
        let b = self.q.buffer.as_ref();
        let (m, s) = (&b[MEAN * d..][..d], &b[SCALE * d..][..d]);
        let reference_gradient = &b[GRADIENT * d..][..d];
        for ((((g, &r), &xi), &mi), &si) in
            grad.iter_mut().zip(reference_gradient).zip(x).zip(m).zip(s)
        {
            *g += r + (xi - mi) / (si * si);
        }
        Ok(log_reference + ell - self.q.log_density(x, None))
    }
}

impl<P: AnnealingPath, S: AsRef<[f64]> + AsMut<[f64]>> AnnealingPath for VariationalPath<P, S> {
    type Error = P::Error;

    fn dim(&self) -> usize {
        self.q.dim
    }

    fn validate(&self) -> Result<(), Error> {
        self.q.options.validate()?;
        self.inner.validate()
    }

    fn log_reference(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, P::Error> {
        if !self.is_fitted() {
            return self.inner.log_reference(x, grad);
        }
        Ok(self.q.log_density(x, Some(grad)))
    }

    fn log_likelihood_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, P::Error> {
        if !self.is_fitted() {
            return self.inner.log_likelihood_gradient(x, grad);
        }
        self.fitted_log_likelihood(x, Some(grad))
    }

    fn log_likelihood(&mut self, x: &[f64]) -> Result<f64, P::Error> {
        if !self.is_fitted() {
            return self.inner.log_likelihood(x);
        }
        self.fitted_log_likelihood(x, None)
    }

    /// m + s·z ([`GaussianFit::sample`]); the wrapped path's draw before the first fit.
    fn sample_reference<R: Rng + ?Sized>(
        &mut self,
        x: &mut [f64],
        rng: &mut R,
    ) -> Result<(), P::Error> {
        if !self.is_fitted() {
            return self.inner.sample_reference(x, rng);
        }
        self.q.sample(x, rng);
        Ok(())
    }

    /// [`GaussianFit::observe`].
    fn observe_target(&mut self, x: &[f64]) {
        self.q.observe(x);
    }

    /// [`GaussianFit::fit`]: fits q to the states gathered since the last fit, if there
    /// are at least [`VariationalOptions::min_samples`]; returns whether it did.
    fn end_round(&mut self) -> Result<bool, P::Error> {
        Ok(self.q.fit())
    }
}
