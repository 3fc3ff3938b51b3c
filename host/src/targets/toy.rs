//! The synthetic targets: a potential seen only through noisy gradients and energies
//! (nrpt-core's [`Noisy`] oracle), as the paper's 2D experiment sees its 25-mode target.

use nrpt_core::target::{Modes2d, Noisy, SumModes};
use serde::Serialize;

use crate::engine::replica_lanes;
use crate::engine::{Explore, Job, Target};

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

impl Target for Toy<Modes2d> {
    type Oracle = Noisy<Modes2d>;

    fn name(&self) -> String {
        "modes2d".into()
    }

    fn dim(&self) -> usize {
        2
    }

    fn oracle(&self) -> Noisy<Modes2d> {
        self.noisy()
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({ "name": "modes2d", "noise": self.noise })
    }

    fn fast_explore(&self, job: &Job) -> Option<Explore<Noisy<Modes2d>>> {
        replica_lanes::applies(job.options.explorer)
            .then_some(replica_lanes::explore::<Modes2d> as Explore<Noisy<Modes2d>>)
    }
}

impl Target for Toy<SumModes> {
    type Oracle = Noisy<SumModes>;

    fn name(&self) -> String {
        "sum-modes".into()
    }

    fn dim(&self) -> usize {
        self.potential.dim
    }

    fn oracle(&self) -> Noisy<SumModes> {
        self.noisy()
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({ "name": "sum-modes", "dim": self.potential.dim, "noise": self.noise })
    }

    fn fast_explore(&self, job: &Job) -> Option<Explore<Noisy<SumModes>>> {
        replica_lanes::applies(job.options.explorer)
            .then_some(replica_lanes::explore::<SumModes> as Explore<Noisy<SumModes>>)
    }
}
