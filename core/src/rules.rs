//! The paper's rules, and the named variants of each that other implementations use.
//!
//! Deng et al. (AAAI 2023) state their algorithm in equations; the authors' published
//! code (WayneDW/Non-reversible-Parallel-Tempering-for-Deep-Posterior-Approximation)
//! differs from them in several small ways, and earlier versions of nrpt differed in
//! others. Each choice moves results by up to several percent (round trips, the
//! adapted ladder, the distance to the target), so none is switched silently: every
//! rule is a field of [`Rules`], [`Rules::PAPER`] (the default) follows the paper, and
//! [`Rules::AUTHORS_CODE`] reproduces the authors' 2D notebook.
//!
//! | rule | the paper | the authors' code | [`Rules::PAPER`] | option |
//! |---|---|---|---|---|
//! | energies of a pair test | one per level per iteration (Eq. 7) | a fresh noisy draw for each side of each test | [`PairEnergies::PerLevel`] | [`PairEnergies::FreshPerTest`] |
//! | order of the pair tests | every indicator from the pre-swap energies | one pass, pair l + 1 sees the state swapped into l + 1 | [`SweepOrder::Simultaneous`] | [`SweepOrder::Sequential`] |
//! | ladder update | every rate from the previous ladder (Eq. 8–10) | the same (`last_lr`) | [`LadderUpdate::Jacobi`] (rates kept positive, finite) | [`LadderUpdate::InPlace`] (nrpt ≤ 0.1), clamped between neighbours |
//! | buffer C | C > 0 required | no projection | [`BufferProjection::NonNegative`] | [`BufferProjection::Unprojected`] |
//! | momentum on a swap | — | optimizers re-created: zero velocity | [`MomentumOnSwap::Reset`] | [`MomentumOnSwap::Carry`] |
//! | initial ladder | geometric | geometric, rounded to 3 decimals | [`InitialLadder::Geometric`] | [`InitialLadder::RoundedGeometric`] |
//! | energies of a data target | the level's stochastic energy (Eq. 7) | the deep `trainer.py`: one mini-batch for every chain, the loss before the step, no prior | [`StepEnergy::AfterStep`] (its own mini-batch, after the step, with the prior) | [`StepEnergy::SharedBatchBeforeStep`] |
//!
//! Two more differences belong to whoever runs the iterations, not to one iteration:
//! the authors' loops run iterations 0 … N inclusive (N + 1 of them), and their
//! round-trip counting is kept beside the standard one by [`crate::index`].

use crate::error::Error;

/// Where the two energies of a pair test come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PairEnergies {
    /// One stochastic energy per level and iteration, computed right after the level's
    /// exploration step and shared by the two pair tests the level takes part in (the
    /// paper's Eq. 7).
    #[default]
    PerLevel,
    /// A fresh stochastic energy for each side of each pair test, so an inner level is
    /// evaluated twice per iteration with independent noise (the authors' code). The
    /// draws of pair l come from stream [`crate::rng::streams::PAIR`] with replica
    /// field l: the upper (hotter) side first, then the lower.
    FreshPerTest,
}

/// The order in which the pairs of one iteration are tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SweepOrder {
    /// Every pair's indicator from the states as they were before this iteration's
    /// swaps (the paper). Eligible pairs are disjoint, so only the indicators of the
    /// pairs that may not swap (used by the adaptation alone) depend on this.
    #[default]
    Simultaneous,
    /// Pairs in order 0 … P − 2, each test seeing the states after the swaps already
    /// made in this pass: when pair l swaps, the test of pair l + 1 uses the state that
    /// has just moved up to level l + 1 (the authors' code).
    Sequential,
}

/// How the stochastic approximation updates the inner learning rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LadderUpdate {
    /// Every rate from the previous iteration's ladder, with the paper's max(0, ·) on
    /// the gaps (Eq. 8–10; the authors' code, from a copy `last_lr`). The ladder can
    /// briefly lose its order and an inner rate can step outside the ends, as in the
    /// authors' code; only a guard far outside the ends keeps rates positive and
    /// finite (see [`crate::adapt`]).
    #[default]
    Jacobi,
    /// From l = 1 upwards in place, each rate using the already updated rate below
    /// it, then clamped between its neighbours (nrpt 0.1): the ladder stays ordered
    /// whatever the step size.
    InPlace,
}

/// Whether the correction buffer C is kept non-negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BufferProjection {
    /// `C ← max(0, C + …)`: the buffered rule needs C ≥ 0 (the paper asks for C > 0).
    #[default]
    NonNegative,
    /// `C ← C + …` without projection (the authors' code).
    Unprojected,
}

/// What happens to a momentum explorer's velocity when its replica changes level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MomentumOnSwap {
    /// Both swapped replicas restart with zero velocity: the authors' code re-creates
    /// the two optimizers on a swap, so a replica arriving at a level starts afresh.
    #[default]
    Reset,
    /// The velocity travels with the replica.
    Carry,
}

/// The learning rates of the ladder before any adaptation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InitialLadder {
    /// `η_l = η_min (η_max/η_min)^(l/(P−1))`, ends exact.
    #[default]
    Geometric,
    /// The geometric ladder with every rate rounded to `decimals` decimal places, half
    /// to even (the authors' code rounds to 3 for the toy and to 4 for their deep
    /// networks). Must stay strictly increasing and positive.
    RoundedGeometric {
        /// Decimal places, at most 12.
        decimals: u8,
        /// The rates are rounded in units of 1/`unit`: η·unit is rounded, then divided
        /// back. 1 for rates given as they run; for a data target whose sampler runs
        /// η/N, N, so that the rates per example are rounded as the authors' code
        /// rounds its learning rates. At least 1.
        unit: u32,
    },
}

/// Where the energy a level brings to its pair tests comes from (with
/// [`PairEnergies::PerLevel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StepEnergy {
    /// A stochastic energy of the level's state after its exploration step, from its
    /// own draw (a data target: its own mini-batch, independent of its gradient's and of
    /// every other level's), the whole energy with the prior term: Eq. 7's
    /// L̃(β) as nrpt reads it.
    #[default]
    AfterStep,
    /// The data term of the gradient's own draw, before the step: every level of an
    /// ensemble draws the same mini-batch at an iteration (stream
    /// [`crate::rng::streams::STEP`] with replica field
    /// [`ENSEMBLE_WIDE`](crate::rng::ENSEMBLE_WIDE)), and the energy is
    /// `N/|B| Σ_{i∈B} loss_i` of the forward pass its gradient came from, without the
    /// prior (the authors' deep `trainer.py`: one loader batch for all chains, the
    /// cross-entropy of that batch, weight decay left to the optimizer). Langevin
    /// noise, when a level has any, still comes from the replica's own stream. Needs an
    /// oracle that reports that loss ([`crate::target::EnergyOracle::last_loss`]).
    SharedBatchBeforeStep,
}

/// The variant of every rule that differs between the paper and other
/// implementations (see the [module docs](self) for the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Rules {
    /// Energies of the pair tests.
    pub pair_energies: PairEnergies,
    /// Order of the pair tests.
    pub sweep_order: SweepOrder,
    /// Ladder update.
    pub ladder_update: LadderUpdate,
    /// Projection of the buffer.
    pub buffer_projection: BufferProjection,
    /// Momentum of swapped replicas.
    pub momentum_on_swap: MomentumOnSwap,
    /// Initial ladder.
    pub initial_ladder: InitialLadder,
    /// Energies of a data target's levels.
    pub step_energy: StepEnergy,
}

impl Rules {
    /// The paper's rules (the default).
    pub const PAPER: Rules = Rules {
        pair_energies: PairEnergies::PerLevel,
        sweep_order: SweepOrder::Simultaneous,
        ladder_update: LadderUpdate::Jacobi,
        buffer_projection: BufferProjection::NonNegative,
        momentum_on_swap: MomentumOnSwap::Reset,
        initial_ladder: InitialLadder::Geometric,
        step_energy: StepEnergy::AfterStep,
    };

    /// The rules of the authors' 2D notebook: fresh energies per pair test, one
    /// sequential pass, Jacobi ladder, unprojected buffer, momentum reset on a swap,
    /// the geometric ladder rounded to 3 decimals.
    pub const AUTHORS_CODE: Rules = Rules {
        pair_energies: PairEnergies::FreshPerTest,
        sweep_order: SweepOrder::Sequential,
        ladder_update: LadderUpdate::Jacobi,
        buffer_projection: BufferProjection::Unprojected,
        momentum_on_swap: MomentumOnSwap::Reset,
        initial_ladder: InitialLadder::RoundedGeometric {
            decimals: 3,
            unit: 1,
        },
        step_energy: StepEnergy::AfterStep,
    };

    /// The rules of the authors' deep-learning code (`trainer.py`): one loss per chain
    /// and iteration from a mini-batch shared by every chain, before the step, without
    /// the prior ([`StepEnergy::SharedBatchBeforeStep`]); one sequential pass; Jacobi
    /// ladder; unprojected buffer; momentum reset on a swap (the two optimizers are
    /// re-created); the geometric ladder rounded to 4 decimals.
    pub const AUTHORS_DEEP_CODE: Rules = Rules {
        pair_energies: PairEnergies::PerLevel,
        sweep_order: SweepOrder::Sequential,
        ladder_update: LadderUpdate::Jacobi,
        buffer_projection: BufferProjection::Unprojected,
        momentum_on_swap: MomentumOnSwap::Reset,
        initial_ladder: InitialLadder::RoundedGeometric {
            decimals: 4,
            unit: 1,
        },
        step_energy: StepEnergy::SharedBatchBeforeStep,
    };

    /// Checks the fields that carry numbers, and that the energies' rules agree (a
    /// fresh energy per pair test has no step energy to share).
    pub fn validate(self) -> Result<Self, Error> {
        if self.pair_energies == PairEnergies::FreshPerTest
            && self.step_energy == StepEnergy::SharedBatchBeforeStep
        {
            return Err(Error::Unsupported {
                what: "fresh energies per pair test with the shared-batch energies before the step: choose one",
            });
        }
        if let InitialLadder::RoundedGeometric { decimals, unit } = self.initial_ladder {
            if decimals > 12 {
                return Err(Error::InvalidValue {
                    name: "initial_ladder.decimals",
                    value: f64::from(decimals),
                    allowed: "at most 12",
                });
            }
            if unit == 0 {
                return Err(Error::InvalidValue {
                    name: "initial_ladder.unit",
                    value: 0.0,
                    allowed: "at least 1",
                });
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_paper() {
        assert_eq!(Rules::default(), Rules::PAPER);
        assert_ne!(Rules::AUTHORS_CODE, Rules::PAPER);
        assert!(Rules::AUTHORS_CODE.validate().is_ok());
        let bad = Rules {
            initial_ladder: InitialLadder::RoundedGeometric {
                decimals: 13,
                unit: 1,
            },
            ..Rules::PAPER
        };
        assert!(bad.validate().is_err());
    }
}
