//! Energy functions: the oracle trait the sampler calls, exact potentials, and the
//! noisy oracle that hides a potential behind stochastic gradients and energies.
//!
//! The sampler only ever sees an [`EnergyOracle`]: a stochastic gradient ∇Ũ and a
//! stochastic energy Ũ at a point, written into buffers the caller owns. A data target
//! computes them on a mini-batch; the toy targets add Gaussian noise to an exact
//! [`Potential`] through [`Noisy`].

#[cfg(test)]
mod lane_tests;
mod modes2d;
mod sum_modes;

pub use modes2d::Modes2d;
pub use sum_modes::SumModes;

use core::convert::Infallible;
use rand_core::Rng;

use crate::error::{Error, check_non_negative};
use crate::float::Float;
use crate::rng::{UnitDraw, fill_normals, normal_pair};

/// Stochastic energy and gradient of the target, π(x) ∝ exp(−U(x)).
///
/// Random draws come from the `rng` handed in; the driver hands each replica, iteration
/// and purpose its own counter-based stream, so results do not depend on call order.
pub trait EnergyOracle<F: Float> {
    /// Error of a failed evaluation (a data source that fails, say). Non-finite values
    /// are not errors: the sampler counts them and they never win a swap. `Clone`,
    /// because a sampler stopped by an error returns it again on every later call.
    type Error: core::fmt::Debug + Clone;

    /// Dimension D of the state.
    fn dim(&self) -> usize;

    /// Checks the oracle's own settings (noise scales, say) when a sampler is built:
    /// an invalid setting is an [`Error`] rather than NaN in the results. The default
    /// accepts everything.
    fn validate(&self) -> Result<(), Error> {
        Ok(())
    }

    /// Writes a stochastic gradient ∇Ũ(x) into `grad` (length D).
    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[F],
        grad: &mut [F],
        rng: &mut R,
    ) -> Result<(), Self::Error>;

    /// Returns a stochastic energy Ũ(x).
    fn energy<R: Rng + ?Sized>(&mut self, x: &[F], rng: &mut R) -> Result<F, Self::Error>;

    /// For an oracle whose stochastic gradient is an exact gradient plus additive
    /// Gaussian noise, `∇Ũ(x) = ∇U(x) + σ_g ξ` with ξ ~ N(0, I_D) drawn afresh and
    /// independent of everything else: writes ∇U(x) into `grad` (length D) and returns
    /// `Some(σ_g)`. The explorer then draws the gradient noise together with its own
    /// sampling noise, as one normal vector of the summed variance
    /// ([`merged_noise_scale`](crate::explore::merged_noise_scale)): the same transition
    /// law from half the normals. [`Noisy`] does this.
    ///
    /// The default returns `Ok(None)` and leaves `grad` alone: the explorer calls
    /// [`gradient`](EnergyOracle::gradient), and the oracle's noise, whatever its law,
    /// stays the oracle's. An oracle that wraps another should forward this method.
    fn gaussian_gradient(&mut self, x: &[F], grad: &mut [F]) -> Result<Option<f64>, Self::Error> {
        let _ = (x, grad);
        Ok(None)
    }

    /// Whether [`last_loss`](EnergyOracle::last_loss) reports a loss (data targets);
    /// the rule [`StepEnergy::SharedBatchBeforeStep`](crate::rules::StepEnergy) needs
    /// one. Default: no.
    fn reports_loss(&self) -> bool {
        false
    }

    /// The data term of the energy at the point and on the draw (the mini-batch) of
    /// the last [`gradient`](EnergyOracle::gradient) call, without any prior term, in
    /// the energy's units (`N/|B| Σ_{i∈B} loss_i`); `None` when the oracle has no data
    /// term or has not computed a gradient yet. Default: `None`.
    fn last_loss(&self) -> Option<F> {
        None
    }
}

/// An exact, deterministic potential U(x) with its gradient.
pub trait Potential<F: Float> {
    /// Dimension D.
    fn dim(&self) -> usize;
    /// U(x).
    fn energy(&self, x: &[F]) -> F;
    /// Writes ∇U(x) into `grad` (length D).
    fn gradient(&self, x: &[F], grad: &mut [F]);
}

/// A [`Potential`]'s `f32` math over `L` states at once: lane `i` of every array is
/// state `i`, stored coordinate-major (`x[j][i]` is coordinate `j` of state `i`, `D`
/// rows of `L` lanes). Every lane is, bit for bit, what `Potential::<f32>` computes for
/// that state: the operations are the same, in the same order, written once per target
/// (the scalar impl and this one share their per-coordinate functions). Engines that
/// step many replicas or ensembles in SIMD lanes use it; the loops over lanes are the
/// shape a vectorizer turns into SIMD.
pub trait LanePotential: Potential<f32> {
    /// Writes ∇U of every lane into `grad` (`D` rows).
    fn gradient_lanes<const L: usize>(&self, x: &[[f32; L]], grad: &mut [[f32; L]]);
    /// U of every lane.
    fn energy_lanes<const L: usize>(&self, x: &[[f32; L]]) -> [f32; L];
}

/// A potential seen only through noise: `∇Ũ = ∇U + σ_g ξ` with ξ ~ N(0, I_D) and
/// `Ũ = U + σ_e ζ` with ζ ~ N(0, 1). The paper's toy uses σ_g = σ_e = 2.
///
/// Word use (the GPU kernels match it): the gradient noise, drawn by
/// [`gradient`](EnergyOracle::gradient), is [`fill_normals`] over D values; the energy
/// noise the first value of one [`normal_pair`]. The sampler does not call `gradient`:
/// [`gaussian_gradient`](EnergyOracle::gaussian_gradient) gives it ∇U and σ_g, and it
/// draws the gradient noise and its own sampling noise as one normal vector.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noisy<P> {
    /// The exact potential.
    pub potential: P,
    /// Standard deviation σ_g of the gradient noise.
    pub gradient_noise: f64,
    /// Standard deviation σ_e of the energy noise.
    pub energy_noise: f64,
}

impl<P> Noisy<P> {
    /// A potential behind noise of the given scales, both finite and ≥ 0.
    pub fn new(potential: P, gradient_noise: f64, energy_noise: f64) -> Result<Self, Error> {
        let n = Noisy {
            potential,
            gradient_noise,
            energy_noise,
        };
        n.check()?;
        Ok(n)
    }

    fn check(&self) -> Result<(), Error> {
        check_non_negative("gradient_noise", self.gradient_noise)?;
        check_non_negative("energy_noise", self.energy_noise)
    }

    /// The paper's oracle: noise scale 2 on gradient and energy.
    pub fn paper(potential: P) -> Self {
        Noisy {
            potential,
            gradient_noise: 2.0,
            energy_noise: 2.0,
        }
    }

    /// No noise at all (exact gradients and energies).
    pub fn exact(potential: P) -> Self {
        Noisy {
            potential,
            gradient_noise: 0.0,
            energy_noise: 0.0,
        }
    }
}

impl<F: Float + UnitDraw, P: Potential<F>> EnergyOracle<F> for Noisy<P> {
    type Error = Infallible;

    fn dim(&self) -> usize {
        self.potential.dim()
    }

    fn validate(&self) -> Result<(), Error> {
        self.check()
    }

    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[F],
        grad: &mut [F],
        rng: &mut R,
    ) -> Result<(), Infallible> {
        self.potential.gradient(x, grad);
        if self.gradient_noise != 0.0 {
            let s = F::from_f64(self.gradient_noise);
            // Draw in blocks of 8 so no scratch buffer is needed.
            let mut buf = [F::ZERO; 8];
            for chunk in grad.chunks_mut(8) {
                let z = &mut buf[..chunk.len()];
                fill_normals(rng, z);
                for (g, &zi) in chunk.iter_mut().zip(z.iter()) {
                    *g += s * zi;
                }
            }
        }
        Ok(())
    }

    fn gaussian_gradient(&mut self, x: &[F], grad: &mut [F]) -> Result<Option<f64>, Infallible> {
        self.potential.gradient(x, grad);
        Ok(Some(self.gradient_noise))
    }

    fn energy<R: Rng + ?Sized>(&mut self, x: &[F], rng: &mut R) -> Result<F, Infallible> {
        let u = self.potential.energy(x);
        if self.energy_noise == 0.0 {
            return Ok(u);
        }
        let (z, _) = normal_pair::<F, R>(rng);
        Ok(u + F::from_f64(self.energy_noise) * z)
    }
}

/// Checks a potential's gradient against central differences of its energy: returns
/// the largest absolute difference over the coordinates of `x`. For tests and users
/// who bring their own potential; `grad` and `probe` are scratch of length D.
pub fn gradient_check<P: Potential<f64>>(
    potential: &P,
    x: &[f64],
    grad: &mut [f64],
    probe: &mut [f64],
    h: f64,
) -> f64 {
    potential.gradient(x, grad);
    probe.copy_from_slice(x);
    let mut worst: f64 = 0.0;
    for j in 0..x.len() {
        probe[j] = x[j] + h;
        let up = potential.energy(probe);
        probe[j] = x[j] - h;
        let down = potential.energy(probe);
        probe[j] = x[j];
        worst = worst.max(((up - down) / (2.0 * h) - grad[j]).abs());
    }
    worst
}
