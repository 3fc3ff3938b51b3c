//! A potential seen only through noisy gradients and energies (nrpt-core's [`Noisy`]
//! oracle), as the paper's 2D experiment sees its 25-mode target: the synthetic targets
//! `modes2d` and `sum-modes` are `Toy<P>`.

use nrpt_core::target::{Modes2d, Noisy, SumModes};
use serde::Serialize;

/// A potential `P` behind Gaussian noise of standard deviation `noise` on every
/// gradient coordinate and on every energy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Toy<P> {
    /// The exact potential.
    pub potential: P,
    /// Standard deviation of the noise on gradients and energies (≥ 0).
    pub noise: f64,
}

/// The paper's 25-mode 2D target.
pub type Modes2dTarget = Toy<Modes2d>;
/// The D-dimensional sum of 5-mode profiles.
pub type SumModesTarget = Toy<SumModes>;

impl<P: Copy> Toy<P> {
    /// The oracle of every ensemble: the same noise on gradients and energies.
    pub fn noisy(&self) -> Noisy<P> {
        Noisy {
            potential: self.potential,
            gradient_noise: self.noise,
            energy_noise: self.noise,
        }
    }
}

impl Toy<Modes2d> {
    /// The 2D toy with noise scale `noise` (the paper's is 2).
    pub fn modes2d(noise: f64) -> Self {
        Toy {
            potential: Modes2d,
            noise,
        }
    }
}

impl Toy<SumModes> {
    /// The sum of modes in `dim` dimensions with noise scale `noise`.
    pub fn sum_modes(dim: usize, noise: f64) -> Self {
        Toy {
            potential: SumModes { dim },
            noise,
        }
    }
}
