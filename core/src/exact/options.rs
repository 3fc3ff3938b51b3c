//! What configures an exact tempering run.

use crate::error::Error;
use crate::window::Scheme;

use super::mala::MalaOptions;
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

/// Everything that configures an exact tempering run of one ensemble. `Default`:
/// vanilla DEO (W = 1), Metropolis swaps, [`MalaOptions::default`],
/// [`ScheduleOptions::default`] (rounds of 2, 4, 8, … iterations, grid at equal
/// barrier after each), replicas drawn from the reference, seed 0, ensemble 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactOptions {
    /// Swap scheme: DEO with a window W (W = 1 vanilla), or SEO.
    pub scheme: Scheme,
    /// Metropolis swaps, or the accept-everything diagnostic.
    pub swap_test: SwapTest,
    /// The MALA explorers and their step-size adaptation.
    pub mala: MalaOptions,
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
            mala: MalaOptions::default(),
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
        self.mala.validate()?;
        self.schedule.validate()?;
        Ok(self)
    }
}
