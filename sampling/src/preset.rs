//! The variants of the paper's rules as configuration: a preset (`paper`, the default,
//! or `authors-code`) and one key per rule that overrides it. See `nrpt_core::rules`
//! for what each rule means and the table of deviations in the README and the book's
//! `docs/src/reference/rules.md`.

use nrpt_core::rules::{
    BufferProjection, InitialLadder, LadderUpdate, MomentumOnSwap, PairEnergies, Rules, StepEnergy,
    SweepOrder,
};
use serde::{Deserialize, Serialize};

/// A named set of rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// The paper's rules (Deng et al., AAAI 2023, Eq. 7–11).
    #[default]
    Paper,
    /// The rules of the authors' code. On the toy targets their 2D notebook's: a
    /// fresh noisy energy for each side of each pair test, the pairs tested in one
    /// sequential pass, the initial learning rates rounded to 3 decimals, the buffer
    /// unprojected, iterations 0 … N inclusive. On a classifier their deep
    /// `trainer.py`'s: one mini-batch shared by every chain, each chain's loss on it
    /// before its step (no prior) as its energy, one sequential pass, rates rounded to
    /// 4 decimals, the buffer unprojected.
    AuthorsCode,
}

/// Where a data target's level energies come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum StepEnergyKind {
    /// Each chain's own mini-batch after its step, with the prior (nrpt's reading of
    /// the paper's Eq. 7).
    AfterStep,
    /// One mini-batch shared by every chain, the loss before the step, no prior (the
    /// authors' deep `trainer.py`).
    SharedBatch,
}

/// Where the two energies of a pair test come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PairEnergiesKind {
    /// One energy per level and iteration (the paper).
    PerLevel,
    /// A fresh noisy energy for each side of each test (the authors' code).
    FreshPerTest,
}

/// The order of the pair tests within an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SweepOrderKind {
    /// Every indicator from the states before the swaps (the paper).
    Simultaneous,
    /// One pass; each test sees the swaps below it (the authors' code).
    Sequential,
}

/// The ladder update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LadderUpdateKind {
    /// Every rate from the previous ladder (the paper, the authors' code).
    Jacobi,
    /// In place from the bottom, clamped between neighbours (nrpt 0.1).
    InPlace,
}

/// The projection of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ProjectionKind {
    /// C ≥ 0.
    NonNegative,
    /// No projection (the authors' code).
    Unprojected,
}

/// Momentum of swapped replicas (momentum explorers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum MomentumKind {
    /// Zero velocity after a swap (the authors' code re-creates the optimizers).
    Reset,
    /// The velocity travels with the replica.
    Carry,
}

/// The preset and the rule keys of a configuration (each `None` takes the preset's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleChoices {
    /// The preset.
    pub preset: Preset,
    /// Pair energies.
    pub pair_energies: Option<PairEnergiesKind>,
    /// Order of the pair tests.
    pub sweep_order: Option<SweepOrderKind>,
    /// Ladder update.
    pub ladder_update: Option<LadderUpdateKind>,
    /// Buffer projection.
    pub buffer_projection: Option<ProjectionKind>,
    /// Momentum on swap.
    pub momentum_on_swap: Option<MomentumKind>,
    /// Decimals of the rounded initial ladder (0: not rounded).
    pub ladder_decimals: Option<u8>,
    /// Iterations 0 … N inclusive.
    pub inclusive_iterations: Option<bool>,
    /// Energies of a data target's levels.
    pub step_energy: Option<StepEnergyKind>,
}

/// The resolved rules of a run: what nrpt-core runs, and the one rule about the
/// iteration range that belongs to whoever drives the iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// nrpt-core's rules.
    pub rules: Rules,
    /// Run N + 1 iterations (0 … N) for N asked.
    pub inclusive_iterations: bool,
}

impl RuleChoices {
    /// The preset's rules with the given keys on top, for a toy target.
    pub fn resolve(&self) -> Resolved {
        self.resolve_for(false)
    }

    /// The preset's rules with the given keys on top, for a data target (a classifier:
    /// the authors' deep code) or not (their 2D notebook).
    pub fn resolve_for(&self, data: bool) -> Resolved {
        let (mut rules, mut inclusive) = match (self.preset, data) {
            (Preset::Paper, _) => (Rules::PAPER, false),
            (Preset::AuthorsCode, false) => (Rules::AUTHORS_CODE, true),
            (Preset::AuthorsCode, true) => (Rules::AUTHORS_DEEP_CODE, false),
        };
        if let Some(k) = self.step_energy {
            rules.step_energy = match k {
                StepEnergyKind::AfterStep => StepEnergy::AfterStep,
                StepEnergyKind::SharedBatch => StepEnergy::SharedBatchBeforeStep,
            };
        }
        if let Some(k) = self.pair_energies {
            rules.pair_energies = match k {
                PairEnergiesKind::PerLevel => PairEnergies::PerLevel,
                PairEnergiesKind::FreshPerTest => PairEnergies::FreshPerTest,
            };
        }
        if let Some(k) = self.sweep_order {
            rules.sweep_order = match k {
                SweepOrderKind::Simultaneous => SweepOrder::Simultaneous,
                SweepOrderKind::Sequential => SweepOrder::Sequential,
            };
        }
        if let Some(k) = self.ladder_update {
            rules.ladder_update = match k {
                LadderUpdateKind::Jacobi => LadderUpdate::Jacobi,
                LadderUpdateKind::InPlace => LadderUpdate::InPlace,
            };
        }
        if let Some(k) = self.buffer_projection {
            rules.buffer_projection = match k {
                ProjectionKind::NonNegative => BufferProjection::NonNegative,
                ProjectionKind::Unprojected => BufferProjection::Unprojected,
            };
        }
        if let Some(k) = self.momentum_on_swap {
            rules.momentum_on_swap = match k {
                MomentumKind::Reset => MomentumOnSwap::Reset,
                MomentumKind::Carry => MomentumOnSwap::Carry,
            };
        }
        if let Some(d) = self.ladder_decimals {
            rules.initial_ladder = if d == 0 {
                InitialLadder::Geometric
            } else {
                InitialLadder::RoundedGeometric {
                    decimals: d,
                    unit: 1,
                }
            };
        }
        if let Some(i) = self.inclusive_iterations {
            inclusive = i;
        }
        Resolved {
            rules,
            inclusive_iterations: inclusive,
        }
    }
}

/// The rules of a run in words, for summaries and `results.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RulesSummary {
    /// `per-level` or `fresh-per-test`.
    pub pair_energies: &'static str,
    /// `simultaneous` or `sequential`.
    pub sweep_order: &'static str,
    /// `jacobi` or `in-place`.
    pub ladder_update: &'static str,
    /// `non-negative` or `unprojected`.
    pub buffer_projection: &'static str,
    /// `reset` or `carry`.
    pub momentum_on_swap: &'static str,
    /// Decimals of the rounded initial ladder, null when not rounded.
    pub ladder_decimals: Option<u8>,
    /// Iterations 0 … N inclusive.
    pub inclusive_iterations: bool,
    /// `after-step` or `shared-batch`.
    pub step_energy: &'static str,
}

impl From<Resolved> for RulesSummary {
    fn from(r: Resolved) -> Self {
        let rules = r.rules;
        RulesSummary {
            pair_energies: match rules.pair_energies {
                PairEnergies::PerLevel => "per-level",
                PairEnergies::FreshPerTest => "fresh-per-test",
            },
            sweep_order: match rules.sweep_order {
                SweepOrder::Simultaneous => "simultaneous",
                SweepOrder::Sequential => "sequential",
            },
            ladder_update: match rules.ladder_update {
                LadderUpdate::Jacobi => "jacobi",
                LadderUpdate::InPlace => "in-place",
            },
            buffer_projection: match rules.buffer_projection {
                BufferProjection::NonNegative => "non-negative",
                BufferProjection::Unprojected => "unprojected",
            },
            momentum_on_swap: match rules.momentum_on_swap {
                MomentumOnSwap::Reset => "reset",
                MomentumOnSwap::Carry => "carry",
            },
            ladder_decimals: match rules.initial_ladder {
                InitialLadder::Geometric => None,
                InitialLadder::RoundedGeometric { decimals, .. } => Some(decimals),
            },
            inclusive_iterations: r.inclusive_iterations,
            step_energy: match rules.step_energy {
                StepEnergy::AfterStep => "after-step",
                StepEnergy::SharedBatchBeforeStep => "shared-batch",
            },
        }
    }
}

/// `rules` for a run whose sampler takes the rates divided by `scale` (a data target's
/// N training examples; 1 otherwise): a rounded initial ladder then rounds the rates as
/// they are given (per example), as the authors' code rounds its learning rates, not
/// the tiny η/N the sampler runs. A scale that is not a whole number from 1 to 2³² − 1
/// leaves the rounding in the sampler's units.
pub fn for_rate_scale(mut rules: Rules, scale: f64) -> Rules {
    if let InitialLadder::RoundedGeometric { decimals, .. } = rules.initial_ladder
        && scale.fract() == 0.0
        && (1.0..=f64::from(u32::MAX)).contains(&scale)
    {
        rules.initial_ladder = InitialLadder::RoundedGeometric {
            decimals,
            unit: scale as u32,
        };
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The authors' deep preset on 1,348 examples: the sampler's ladder is the rates per
    /// example rounded to 4 decimals, divided by N (rounding η/N itself would give 0).
    #[test]
    fn a_rounded_ladder_rounds_the_rates_per_example() {
        let n = 1348.0;
        let rules = for_rate_scale(Rules::AUTHORS_DEEP_CODE, n);
        assert_eq!(
            rules.initial_ladder,
            InitialLadder::RoundedGeometric {
                decimals: 4,
                unit: 1348
            }
        );
        let (min, max) = (0.046_36, 0.185_46);
        let mut ladder = [0.0; 10];
        nrpt_core::adapt::initial_ladder(rules.initial_ladder, min / n, max / n, &mut ladder)
            .unwrap();
        let mut per_example = [0.0; 10];
        nrpt_core::adapt::initial_ladder(InitialLadder::Geometric, min, max, &mut per_example)
            .unwrap();
        for (l, (&got, &given)) in ladder.iter().zip(&per_example).enumerate() {
            let want = (given * 1e4).round() / 1e4 / n;
            assert!(
                (got - want).abs() <= 1e-15 * want,
                "level {l}: {got} vs {want}"
            );
        }
        assert!(
            nrpt_core::adapt::initial_ladder(
                Rules::AUTHORS_DEEP_CODE.initial_ladder,
                min / n,
                max / n,
                &mut ladder
            )
            .is_err(),
            "rounding η/N to 4 decimals collapses the ladder"
        );
        // Other scales leave the rounding as it was; unrounded ladders are untouched.
        assert_eq!(
            for_rate_scale(Rules::AUTHORS_DEEP_CODE, 0.5),
            Rules::AUTHORS_DEEP_CODE
        );
        assert_eq!(for_rate_scale(Rules::PAPER, n), Rules::PAPER);
    }

    #[test]
    fn presets_resolve_to_the_core_rules_and_keys_override() {
        let paper = RuleChoices::default().resolve();
        assert_eq!(paper.rules, Rules::PAPER);
        assert!(!paper.inclusive_iterations);
        let authors = RuleChoices {
            preset: Preset::AuthorsCode,
            ..RuleChoices::default()
        }
        .resolve();
        assert_eq!(authors.rules, Rules::AUTHORS_CODE);
        assert!(authors.inclusive_iterations);
        let mixed = RuleChoices {
            preset: Preset::AuthorsCode,
            ladder_update: Some(LadderUpdateKind::InPlace),
            ladder_decimals: Some(0),
            inclusive_iterations: Some(false),
            ..RuleChoices::default()
        }
        .resolve();
        assert_eq!(mixed.rules.ladder_update, LadderUpdate::InPlace);
        assert_eq!(mixed.rules.initial_ladder, InitialLadder::Geometric);
        assert_eq!(mixed.rules.pair_energies, PairEnergies::FreshPerTest);
        assert!(!mixed.inclusive_iterations);
        let s = RulesSummary::from(authors);
        assert_eq!(s.ladder_decimals, Some(3));
        assert_eq!(s.pair_energies, "fresh-per-test");
        assert_eq!(s.step_energy, "after-step");
        // On a classifier, the authors' deep code; a key still overrides.
        let deep = RuleChoices {
            preset: Preset::AuthorsCode,
            ..RuleChoices::default()
        };
        assert_eq!(deep.resolve_for(true).rules, Rules::AUTHORS_DEEP_CODE);
        assert!(!deep.resolve_for(true).inclusive_iterations);
        let own = RuleChoices {
            step_energy: Some(StepEnergyKind::AfterStep),
            ..deep
        }
        .resolve_for(true);
        assert_eq!(own.rules.step_energy, StepEnergy::AfterStep);
        assert_eq!(RuleChoices::default().resolve_for(true).rules, Rules::PAPER);
    }
}
