//! What configures a tempering run: the swap scheme and rule, the explorers, the
//! temperatures, the ladder, the adaptation, the variant of each rule, the seed.

use crate::adapt::{AdaptOptions, check_ladder_ends};
use crate::error::{Error, check_non_negative};
use crate::explore::Explorer;
use crate::rules::Rules;
use crate::swap::SwapRule;
use crate::window::Scheme;

/// Temperatures of the levels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Temperatures {
    /// The paper's SGD explorers: T₀ = 1 at the target, T = 0 above (the explorers'
    /// spread comes from gradient noise and large learning rates).
    SgdExplorers,
    /// The same temperature T at every level.
    Constant(f64),
    /// Geometric from 1 at level 0 to `max` at level P − 1.
    Geometric {
        /// Temperature of the hottest level (> 1).
        max: f64,
    },
    /// `T_l = η_l / η₀`, following the ladder as it adapts (the linear relation
    /// between learning rate and temperature that motivates the paper's adaptation).
    FollowLadder,
}

/// Where the replicas start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InitialStates {
    /// Every coordinate uniform in [low, high), drawn from the INIT stream of each
    /// replica (the paper: U(−1, 1)).
    Uniform {
        /// Lower bound.
        low: f64,
        /// Upper bound (> low).
        high: f64,
    },
    /// Keep the states the caller put in the storage.
    Keep,
}

/// Everything that configures a tempering run of one ensemble. `Default` is the
/// paper's 2D toy experiment with its window W = 8 (DEO⋆-SGD×P16) under the paper's
/// rules ([`Rules::PAPER`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TemperingOptions {
    /// Swap scheme and window.
    pub scheme: Scheme,
    /// Swap rule.
    pub rule: SwapRule,
    /// Exploration kernel.
    pub explorer: Explorer,
    /// Level temperatures.
    pub temperatures: Temperatures,
    /// Smallest learning rate η₀ (the target level).
    pub ladder_min: f64,
    /// Largest learning rate η_{P−1} (the hottest explorer).
    pub ladder_max: f64,
    /// Initial correction buffer C of the buffered rule.
    pub initial_buffer: f64,
    /// Adaptation of the ladder and buffer.
    pub adapt: AdaptOptions,
    /// The variant of every rule where the paper and other implementations differ.
    pub rules: Rules,
    /// Initial states.
    pub init: InitialStates,
    /// Seed of the Philox streams.
    pub seed: u32,
    /// Index of this ensemble (second key word of the Philox streams).
    pub ensemble: u32,
}

impl Default for TemperingOptions {
    /// DEO⋆-SGD on the paper's toy: W = 8, buffered rule, SGD explorers, η from 0.003
    /// to 0.6, C₀ = 4, S = 0.4, γ_k = 50/(k^0.8 + 500), x₀ ~ U(−1, 1)², the paper's
    /// rules.
    fn default() -> Self {
        TemperingOptions {
            scheme: Scheme::Deo { window: 8 },
            rule: SwapRule::Buffered,
            explorer: Explorer::Langevin,
            temperatures: Temperatures::SgdExplorers,
            ladder_min: 0.003,
            ladder_max: 0.6,
            initial_buffer: 4.0,
            adapt: AdaptOptions::default(),
            rules: Rules::PAPER,
            init: InitialStates::Uniform {
                low: -1.0,
                high: 1.0,
            },
            seed: 0,
            ensemble: 0,
        }
    }
}

impl Temperatures {
    /// Writes the temperature of every level for the given ladder (same length P ≥ 2):
    /// what the driver uses at the start and, for [`Temperatures::FollowLadder`],
    /// after every ladder update. Entries past the shorter of the two slices are left
    /// alone.
    pub fn fill(&self, ladder: &[f64], temperatures: &mut [f64]) {
        let top = temperatures.len().saturating_sub(1).max(1);
        let first = ladder.first().copied().unwrap_or(1.0);
        for (l, (t, &eta)) in temperatures.iter_mut().zip(ladder).enumerate() {
            *t = match *self {
                Temperatures::SgdExplorers => {
                    if l == 0 {
                        1.0
                    } else {
                        0.0
                    }
                }
                Temperatures::Constant(c) => c,
                Temperatures::Geometric { max } => libm::pow(max, l as f64 / top as f64),
                Temperatures::FollowLadder => eta / first,
            };
        }
    }
}

impl TemperingOptions {
    /// Checks every field; `Error` names the first one that is wrong.
    pub fn validate(self) -> Result<Self, Error> {
        self.scheme.validate()?;
        self.explorer.validate()?;
        self.adapt.validate()?;
        self.rules.validate()?;
        check_ladder_ends(self.ladder_min, self.ladder_max)?;
        check_non_negative("initial_buffer", self.initial_buffer)?;
        match self.temperatures {
            Temperatures::Constant(t) => check_non_negative("temperature", t)?,
            Temperatures::Geometric { max } => {
                if !(max.is_finite() && max > 1.0) {
                    return Err(Error::InvalidValue {
                        name: "temperatures.max",
                        value: max,
                        allowed: "finite and > 1",
                    });
                }
            }
            Temperatures::SgdExplorers | Temperatures::FollowLadder => {}
        }
        if self.rule == SwapRule::Metropolis {
            let positive = match self.temperatures {
                Temperatures::Constant(t) => t > 0.0,
                Temperatures::SgdExplorers => false,
                Temperatures::Geometric { .. } | Temperatures::FollowLadder => true,
            };
            if !positive {
                return Err(Error::InvalidValue {
                    name: "temperatures",
                    value: 0.0,
                    allowed: "> 0 at every level for the Metropolis rule",
                });
            }
        }
        if let InitialStates::Uniform { low, high } = self.init
            && !(low.is_finite() && high.is_finite() && low < high && (high - low).is_finite())
        {
            return Err(Error::InvalidValue {
                name: "init.high",
                value: high,
                allowed: "finite and > init.low",
            });
        }
        Ok(self)
    }
}
