//! Deep posteriors at toy scale: the paper's deep-learning experiment (its Table 2 and
//! Figure 7) with a classifier on a small real dataset instead of ResNets on CIFAR-100.
//!
//! Deng et al. pre-train P networks, then run P momentum-SGD chains between learning
//! rates η_min and η_max that swap with the buffered rule at a low target swap rate S
//! and the optimal window W⋆ (DEO⋆-mSGD×P), against vanilla DEO (W = 1), an mSGD
//! ensemble ×P, cyclical SGHMC ×T and SWAG ×T on equal gradient budgets, and score the
//! Bayesian model average (BMA) of the collected samples. This module builds those
//! runs for a classifier target ([`Classifier`]: data, network, mini-batch, prior):
//!
//! - [`tempering_job`], [`Rates`], [`Sampling`], [`TargetLevel`]: the tempering jobs
//!   over the classifier, with learning rates and the buffer in the paper's units (see
//!   [`Rates`]) and the paper's noise-free target level or SGHMC there;
//! - [`methods`]: pre-training, the ensemble, cyclical SGHMC and SWAG;
//! - [`metrics`]: the samples' predictives and their average's accuracy, NLL and
//!   calibration error; [`fidelity`]: the same per example, agreement and total
//!   variation against a reference posterior, intervals, curves against the number of
//!   samples;
//! - [`posterior`]: the classifier's posterior as an annealing path (prior to
//!   posterior, full batch, `f64`) for nrpt-core's exact samplers; [`mod@reference`]: the
//!   reference posterior by full-batch HMC, its files and the bundled ones;
//! - [`experiment`]: the whole comparison of `nrpt deep`, and its protocol;
//! - [`external`]: a predictive computed outside nrpt (the reference's model trained
//!   your own way), checked to be of the reference's model and test split, and scored
//!   against it as `nrpt deep` scores its methods.

pub mod exact_sampling;
pub mod experiment;
pub mod external;
pub mod fidelity;
pub(crate) mod lossless;
pub mod methods;
pub mod metrics;
pub mod posterior;
pub mod reference;

use std::sync::Arc;

use nrpt_core::Rules;
use nrpt_core::adapt::{AdaptOptions, StepSchedule};
use nrpt_core::driver::{InitialStates, Temperatures, TemperingOptions};
use nrpt_core::explore::Explorer;
use nrpt_core::swap::SwapRule;
use nrpt_core::window::Scheme;
use serde::Serialize;

use nrpt_sampling::engine::{Job, Record};
use nrpt_sampling::error::{ConfigError, learning_rates, non_negative, positive};
use nrpt_sampling::targets::Classifier;

/// A tempering job over the classifier `target` (E = `s.seeds` ensembles, one per seed).
pub fn tempering_job(target: &Classifier, s: &Sampling) -> Result<Job, ConfigError> {
    let n = target.examples() as f64;
    let r = &s.rates;
    r.check()?;
    let options = TemperingOptions {
        scheme: s.scheme,
        rule: SwapRule::Buffered,
        explorer: Explorer::Momentum {
            momentum: r.momentum,
        },
        temperatures: s.target_level.temperatures(),
        ladder_min: r.eta_min / n,
        ladder_max: r.eta_max / n,
        initial_buffer: r.buffer * n,
        adapt: AdaptOptions {
            target_swap_rate: r.swap_rate,
            schedule: StepSchedule {
                a: r.gamma_a,
                alpha: r.gamma_alpha,
                b: r.gamma_b,
            },
            adapt_ladder: true,
            adapt_buffer: true,
            buffer_scale: r.buffer_scale / n,
        },
        rules: nrpt_sampling::preset::for_rate_scale(s.rules, n),
        init: if s.initial_states.is_some() {
            InitialStates::Keep
        } else {
            InitialStates::Uniform {
                low: -0.05,
                high: 0.05,
            }
        },
        seed: s.seed,
        ensemble: 0,
    };
    options
        .validate()
        .map_err(|e| ConfigError::new("config", e.to_string()))?;
    Ok(Job {
        options,
        target: Arc::new(Arc::clone(target)),
        chains: s.chains,
        ensembles: s.seeds,
        iterations: s.iterations,
        record: s.record,
        initial_states: s.initial_states.clone(),
    })
}

/// What the target level (the smallest learning rate) of a tempering run over a
/// classifier runs; the levels above are noise-free momentum SGD either way.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum TargetLevel {
    /// Momentum SGD without injected noise, as in the paper's ResNet runs (the noise of
    /// the mini-batches is the only noise): an optimizer whose stationary law, at a
    /// constant learning rate, is SGD's, not a stated posterior.
    #[default]
    Msgd,
    /// SGHMC at temperature 1: momentum SGD plus Gaussian noise √(2(1 − μ)η) per
    /// coordinate (η in the energy's units), the discretized Langevin dynamics whose
    /// stationary law is the posterior itself (Chen, Fox and Guestrin, "Stochastic
    /// gradient Hamiltonian Monte Carlo", ICML 2014), as the paper's theory assumes at
    /// the target and `nrpt run --target classifier` runs it.
    Sghmc,
}

impl TargetLevel {
    /// The temperatures of the levels: 0 everywhere, or 1 at the target and 0 above.
    pub fn temperatures(self) -> Temperatures {
        match self {
            TargetLevel::Msgd => Temperatures::Constant(0.0),
            TargetLevel::Sghmc => Temperatures::SgdExplorers,
        }
    }

    /// The explorer's name in a row's name: `mSGD` or `SGHMC`.
    pub fn label(self) -> &'static str {
        match self {
            TargetLevel::Msgd => "mSGD",
            TargetLevel::Sghmc => "SGHMC",
        }
    }
}

/// Learning rates and the buffer in the paper's units: for the mean loss per
/// example, as a deep-learning user gives them. The sampler's energy sums the loss
/// over the N training examples, so it runs η/N, a buffer N·C and a buffer scale c/N
/// (the buffer moves by N·γ/c per unit of rate error, i.e. by γ/c per example).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rates {
    /// η of the target level (the paper: 0.005).
    pub eta_min: f64,
    /// η of the hottest level (the paper: 0.02).
    pub eta_max: f64,
    /// Momentum μ of every level.
    pub momentum: f64,
    /// Target swap rate S.
    pub swap_rate: f64,
    /// Initial buffer C, per example.
    pub buffer: f64,
    /// Buffer scale c (the authors' code: 10).
    pub buffer_scale: f64,
    /// Step sizes a / (k^α + b) of the adaptation.
    pub gamma_a: f64,
    /// α.
    pub gamma_alpha: f64,
    /// b.
    pub gamma_b: f64,
}

impl Default for Rates {
    fn default() -> Self {
        Rates {
            eta_min: 0.005,
            eta_max: 0.02,
            momentum: 0.9,
            swap_rate: 0.1,
            buffer: 0.1,
            buffer_scale: 10.0,
            gamma_a: 50.0,
            gamma_alpha: 0.8,
            gamma_b: 1000.0,
        }
    }
}

impl Rates {
    /// Checks every field; errors name the flag.
    pub fn check(&self) -> Result<(), ConfigError> {
        learning_rates(self.eta_min, self.eta_max, self.momentum)?;
        if !(self.swap_rate > 0.0 && self.swap_rate < 1.0) {
            return Err(ConfigError::new(
                "swap_rate",
                format!("must lie strictly between 0 and 1, got {}", self.swap_rate),
            ));
        }
        non_negative("buffer", self.buffer)?;
        positive("buffer_scale", self.buffer_scale)?;
        positive("gamma_a", self.gamma_a)?;
        positive("gamma_alpha", self.gamma_alpha)?;
        positive("gamma_b", self.gamma_b)
    }
}

/// One tempering run over a model: P chains, one ensemble per seed.
#[derive(Clone, Debug)]
pub struct Sampling {
    /// Chains P.
    pub chains: usize,
    /// Ensembles (seeds) E.
    pub seeds: usize,
    /// Iterations.
    pub iterations: u64,
    /// Window.
    pub scheme: Scheme,
    /// Rates, buffer, adaptation.
    pub rates: Rates,
    /// The rules (the paper's by default).
    pub rules: Rules,
    /// What the target level runs (the paper's noise-free mSGD by default).
    pub target_level: TargetLevel,
    /// Base seed.
    pub seed: u32,
    /// What to record.
    pub record: Record,
    /// Pre-trained states, E·P·D values (ensemble by ensemble, replica by replica).
    pub initial_states: Option<Arc<Vec<f32>>>,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            chains: 10,
            seeds: 1,
            iterations: 1000,
            scheme: Scheme::Deo { window: 1 },
            rates: Rates::default(),
            rules: Rules::PAPER,
            target_level: TargetLevel::Msgd,
            seed: 0,
            record: Record::NOTHING,
            initial_states: None,
        }
    }
}
