//! What configures an exact tempering run.

use crate::error::Error;
use crate::window::Scheme;

use super::hmc::{HMC_SCRATCH_VECTORS, HmcOptions};
use super::mala::{MALA_SCRATCH_VECTORS, MalaOptions};
use super::schedule::ScheduleOptions;
use super::swap::SwapTest;

/// Where the replicas start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StartStates {
    /// An exact draw from the reference for every replica, from stream
    /// [`EXACT_INIT`](crate::rng::streams::EXACT_INIT) of (iteration 0, replica r), at
    /// the start of the first iteration.
    #[default]
    Reference,
    /// The states the caller wrote into the buffer.
    Keep,
}

/// The explorer of the levels with β > 0, with its options (the level β = 0 always takes
/// an exact draw from π₀). `Default`: MALA with [`MalaOptions::default`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ExactExplorer {
    /// MALA ([`super::mala`]): `steps_per_iteration` Langevin proposals, one gradient
    /// each; step sizes adapted towards acceptance 0.574.
    Mala(MalaOptions),
    /// HMC ([`super::hmc`]): `steps_per_iteration` trajectories of `leapfrog_steps`
    /// gradients each; step sizes adapted towards acceptance 0.65.
    Hmc(HmcOptions),
}

impl Default for ExactExplorer {
    fn default() -> Self {
        ExactExplorer::Mala(MalaOptions::default())
    }
}

impl ExactExplorer {
    /// Checks the explorer's options.
    pub fn validate(self) -> Result<Self, Error> {
        match self {
            ExactExplorer::Mala(o) => o.validate().map(ExactExplorer::Mala),
            ExactExplorer::Hmc(o) => o.validate().map(ExactExplorer::Hmc),
        }
    }

    /// `"mala"` or `"hmc"`.
    pub fn name(&self) -> &'static str {
        match self {
            ExactExplorer::Mala(_) => "mala",
            ExactExplorer::Hmc(_) => "hmc",
        }
    }

    /// Step size ε of every level at the start.
    pub fn initial_step(&self) -> f64 {
        match self {
            ExactExplorer::Mala(o) => o.initial_step,
            ExactExplorer::Hmc(o) => o.initial_step,
        }
    }

    /// Whether the step sizes adapt.
    pub fn adapt(&self) -> bool {
        match self {
            ExactExplorer::Mala(o) => o.adapt,
            ExactExplorer::Hmc(o) => o.adapt,
        }
    }

    /// The acceptance rate a⋆ the adaptation aims at.
    pub fn target_acceptance(&self) -> f64 {
        match self {
            ExactExplorer::Mala(o) => o.target_acceptance,
            ExactExplorer::Hmc(o) => o.target_acceptance,
        }
    }

    /// κ of the adaptation's gain.
    pub fn decay(&self) -> f64 {
        match self {
            ExactExplorer::Mala(o) => o.decay,
            ExactExplorer::Hmc(o) => o.decay,
        }
    }

    /// Transitions (MALA steps or HMC trajectories) per level and iteration.
    pub fn steps_per_iteration(&self) -> u32 {
        match self {
            ExactExplorer::Mala(o) => o.steps_per_iteration,
            ExactExplorer::Hmc(o) => o.steps_per_iteration,
        }
    }

    /// Evaluations of log π₀ and ℓ with gradients per level with β > 0 and iteration:
    /// `steps + 1` for MALA, `1 + steps · L` for HMC (at most: a trajectory that meets a
    /// non-finite value stops early).
    pub fn gradients_per_iteration(&self) -> u64 {
        match self {
            ExactExplorer::Mala(o) => u64::from(o.steps_per_iteration) + 1,
            ExactExplorer::Hmc(o) => {
                1 + u64::from(o.steps_per_iteration) * u64::from(o.leapfrog_steps)
            }
        }
    }

    /// Vectors of length D the explorer's scratch holds: [`MALA_SCRATCH_VECTORS`] or
    /// [`HMC_SCRATCH_VECTORS`].
    pub fn scratch_vectors(&self) -> usize {
        match self {
            ExactExplorer::Mala(_) => MALA_SCRATCH_VECTORS,
            ExactExplorer::Hmc(_) => HMC_SCRATCH_VECTORS,
        }
    }
}

/// Everything that configures an exact tempering run of one ensemble. `Default`:
/// vanilla DEO (W = 1), Metropolis swaps, MALA explorers ([`ExactExplorer::default`]),
/// [`ScheduleOptions::default`] (rounds of 2, 4, 8, … iterations, grid at equal
/// barrier after each), replicas drawn from the reference, seed 0, ensemble 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactOptions {
    /// Swap scheme: DEO with a window W (W = 1 vanilla), or SEO.
    pub scheme: Scheme,
    /// Metropolis swaps, or the accept-everything diagnostic.
    pub swap_test: SwapTest,
    /// The explorers of the levels with β > 0 and their step-size adaptation.
    pub explorer: ExactExplorer,
    /// Rounds and β grid.
    pub schedule: ScheduleOptions,
    /// Initial states.
    pub start: StartStates,
    /// Seed of the Philox streams (first key word).
    pub seed: u32,
    /// Index of this ensemble (second key word).
    pub ensemble: u32,
}

impl Default for ExactOptions {
    fn default() -> Self {
        ExactOptions {
            scheme: Scheme::VANILLA_DEO,
            swap_test: SwapTest::Metropolis,
            explorer: ExactExplorer::default(),
            schedule: ScheduleOptions::default(),
            start: StartStates::Reference,
            seed: 0,
            ensemble: 0,
        }
    }
}

impl ExactOptions {
    /// Checks every field; the error names the first one that is wrong.
    pub fn validate(self) -> Result<Self, Error> {
        self.scheme.validate()?;
        self.explorer.validate()?;
        self.schedule.validate()?;
        Ok(self)
    }
}
