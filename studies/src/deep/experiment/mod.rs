//! The whole comparison of `nrpt deep`: pre-training, then every method on equal
//! gradient budgets with the same number of samples, seed by seed, scored on the test
//! set against the labels and against a reference posterior.
//!
//! Kept whole past 600 lines: the protocol, the settings with their checks and the
//! plan of rows are read against each other; a quarter of the file is their tests.
//!
//! # The protocol (stated for users in the book: `docs/src/guide/deep.md`)
//!
//! 1. **Learning rates by a stated rule** ([`EtaRule`]): the paper's rates (per
//!    example, 0.005 to 0.02) are given at its N/B ≈ 195 (CIFAR-100, 50,000 examples
//!    in batches of 256). SGD's noise, its effective temperature, scales with
//!    η·N/(B(1 − μ)); by default every rate is multiplied by 195.3/(N/B) so that every
//!    level runs at the paper's temperature ([`EtaRule::Temperature`]);
//!    [`EtaRule::AsGiven`] keeps the numbers. The sensitivity rows rerun every
//!    sampling method with the rates times each factor of `eta_sweep`.
//! 2. **Pre-training to convergence** ([`Pretraining`]): P networks per seed, a cosine
//!    schedule from η_max to 0, stopped when the NLL on a validation split carved
//!    from the training set stops improving; the pre-trained networks are their own
//!    row.
//! 3. **Equal samples, compute counted**: every sampling method's model average holds
//!    `samples` samples per seed (K), collected after the same burn-in share of its run
//!    (the pre-trained row averages its P networks); curves of NLL, agreement and total
//!    variation against the number of samples for every method; every row's mini-batch
//!    gradients per seed, the pre-training of its starting networks included.
//! 4. **Baselines as their authors run them**: cyclical SGHMC keeps several samples
//!    per cycle, SWAG collects after a burn-in; each as one long chain (×T) and from
//!    every pre-trained network (cycSGHMC×P, MultiSWAG×P), as DEO⋆ starts; DEO⋆ also
//!    with a target level that samples ([`TargetLevel::Sghmc`]). With a reference that
//!    has draws, exact sampling too: model averages of K of the reference's HMC draws
//!    ([`crate::deep::exact_sampling`]), a row of their own, and every row's total
//!    variation beside theirs at its K.
//! 5. **Scores with intervals**: accuracy, NLL, ECE, and with a reference posterior
//!    agreement and total variation ([`super::fidelity`]), each the mean over seeds
//!    with its spread and a paired-bootstrap interval over test examples.
//!
//! # Seeds, records, shards
//!
//! [`Setup::collect`] runs every method over a block of seeds and keeps, per seed and
//! row, what the report needs ([`Records`]: the model average of the test predictive,
//! the scores of the sample curve's points, a tempering run's round trips, indicator
//! counts, accuracy by level and traces); [`Setup::report`] builds the report from the
//! records of any seeds. A whole run is one block of all its seeds; a shard
//! (`--shard i/n`) is one block, and `nrpt deep merge` joins the shards' records in seed
//! order ([`Records::join`]) and builds the same report, to the bit, since every number
//! of a seed depends on that seed alone and every sum over seeds runs in seed order.
//!
//! # Where each part lives
//!
//! This module holds the settings, the learning-rate rule and the plan of rows
//! ([`Setup::new`]: sizes, rates, windows, the memory check); `collect` the runs of a
//! block of seeds, `scorer` what a seed's samples are scored into, `records` the records
//! and their checks, `report` the report built from them.

use std::sync::Arc;
use std::time::Instant;

use nrpt_core::window::Scheme;
use serde::{Deserialize, Serialize};

use super::fidelity;
use super::methods::{self, Pretraining};
use super::reference::Reference;
use super::{Rates, Sampling, TargetLevel, tempering_job};
use nrpt_sampling::data::Dataset;
use nrpt_sampling::engine::{Backend, Record};
use nrpt_sampling::error::ConfigError;
use nrpt_sampling::stats::Bootstrap;
use nrpt_sampling::targets::classifier::{Classifier, ClassifierTarget};

mod collect;
mod exact_baseline;
mod paired;
mod records;
mod report;
mod round_trips;
mod row;
mod scorer;

pub use exact_baseline::ExactSummary;
pub use records::{MethodRecords, Records, SeedScores, SeedTempering};
pub use report::{PretrainSummary, ReferenceSummary, Report};
pub use round_trips::RoundTripRatio;
pub use row::{Curves, Row};

use records::inputs_digest;
use scorer::Scorer;

/// The paper's training examples per mini-batch: CIFAR-100's 50,000 in batches of 256.
pub(crate) const PAPER_EXAMPLES_PER_BATCH: f64 = 50_000.0 / 256.0;

/// Resamples of the paired bootstrap over test examples. With 1,000 the endpoints of a
/// 95% interval are quantiles with 25 resamples beyond each: for a statistic near
/// normal with standard error σ, the Monte Carlo standard error of the p-quantile is
/// √(p (1 − p)/B) / φ(z_p) · σ, 0.085 σ at p = 0.025, small beside the interval's
/// half-width of 1.96 σ.
pub(crate) const RESAMPLES: usize = 1000;

/// How the learning rates given in the paper's units become this data set's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EtaRule {
    /// Multiplied by 195.3/(N/B): every level at the temperature η·N/(B(1 − μ)) the
    /// paper's rates have on CIFAR-100.
    #[default]
    Temperature,
    /// The numbers as given.
    AsGiven,
}

impl EtaRule {
    /// The factor on the given rates for `model`.
    pub fn factor(self, model: &ClassifierTarget) -> f64 {
        match self {
            EtaRule::Temperature => PAPER_EXAMPLES_PER_BATCH / model.iterations_per_epoch(),
            EtaRule::AsGiven => 1.0,
        }
    }
}

/// The sizes of a comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Chains P of the tempering runs and members of the ensemble.
    pub chains: usize,
    /// Seeds: independent repetitions of every method.
    pub seeds: usize,
    /// Pre-training of the starting networks.
    pub pretraining: Pretraining,
    /// Epochs of sampling per chain (the single-chain methods run P times as many).
    pub epochs: f64,
    /// Share of every method's sampling run before its first sample.
    pub burn_in: f64,
    /// Samples in every method's model average, per seed.
    pub samples: usize,
    /// Rates, buffer, adaptation of the tempering runs, in the paper's units.
    pub rates: Rates,
    /// How the rates become this data set's.
    pub eta_rule: EtaRule,
    /// Factors on the rates of extra runs of every sampling method (sensitivity).
    pub eta_sweep: Vec<f64>,
    /// Target swap rates of an extra sweep of DEO⋆ (empty: none).
    pub swap_sweep: Vec<f64>,
    /// Samples per cycle of cyclical SGHMC (its cycles: samples / this).
    pub samples_per_cycle: usize,
    /// Share of each cycle of cyclical SGHMC that samples.
    pub cycle_sampling: f64,
    /// Rank of SWAG's low-rank part.
    pub swag_rank: usize,
    /// The rules of the tempering runs (in words in the report's `rules`).
    #[serde(skip)]
    pub rules: nrpt_core::Rules,
    /// Base seed.
    pub seed: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            chains: 10,
            seeds: 10,
            pretraining: Pretraining::default(),
            epochs: 200.0,
            burn_in: 0.25,
            samples: 60,
            rates: Rates::default(),
            eta_rule: EtaRule::Temperature,
            eta_sweep: Vec::new(),
            swap_sweep: Vec::new(),
            samples_per_cycle: 3,
            cycle_sampling: 0.2,
            swag_rank: 20,
            rules: nrpt_core::Rules::PAPER,
            seed: 0,
        }
    }
}

/// Checks the sizes that the flags do not already bound.
fn check(s: &Settings, iterations: u64) -> Result<(), ConfigError> {
    if s.seeds == 0 || s.chains < 2 {
        return Err(ConfigError::new(
            "seeds",
            "needs at least 1 seed and 2 chains",
        ));
    }
    if s.samples == 0 {
        return Err(ConfigError::new("samples", "must be at least 1, got 0"));
    }
    let after = iterations - (s.burn_in * iterations as f64) as u64;
    if (s.samples as u64) > after {
        return Err(ConfigError::new(
            "samples",
            format!(
                "{} samples per method, but the sampling phase has only {after} iterations after its burn-in: lower --samples or raise --epochs",
                s.samples
            ),
        ));
    }
    if s.samples_per_cycle == 0 {
        return Err(ConfigError::new(
            "samples_per_cycle",
            "must be at least 1, got 0",
        ));
    }
    Ok(())
}

/// What a row of the report runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// The pre-trained networks.
    Pretrained,
    /// A tempering run with this window and target level.
    Tempering(Scheme, TargetLevel),
    /// The mSGD ensemble.
    Ensemble,
    /// Cyclical SGHMC, one chain ×T.
    Cyclical,
    /// SWAG, one chain ×T.
    Swag,
    /// Cyclical SGHMC, a chain from each pre-trained network (×P).
    CyclicalChains,
    /// MultiSWAG, from each pre-trained network (×P).
    MultiSwag,
}

impl Kind {
    /// The pre-trained networks the method starts from, of the P of a seed.
    fn networks(self, p: usize) -> usize {
        match self {
            Kind::Cyclical | Kind::Swag => 1,
            _ => p,
        }
    }
}

/// Where a row goes in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    /// `methods` (and the curves).
    Main,
    /// `eta_sweep`.
    EtaSweep,
    /// `swap_sweep`.
    SwapSweep,
}

/// One row of the report, before it runs.
struct Planned {
    name: String,
    kind: Kind,
    rates: Rates,
    factor: f64,
    group: Group,
}

/// A comparison before it runs: its sizes, rates, scorer and rows, from the model, the
/// settings and the reference alone (the same for a whole run, each of its shards and
/// their merge). [`Setup::collect`] runs a block of its seeds; [`Setup::report`] builds
/// the report from the records of some seeds (of all of them for the run's report).
pub struct Setup<'a> {
    model: &'a Classifier,
    s: &'a Settings,
    reference: Option<&'a Reference>,
    iterations: u64,
    warmup: u64,
    eta_factor: f64,
    rates: Rates,
    pre_data: Arc<Dataset>,
    scorer: Scorer<'a>,
    plan: Vec<Planned>,
    inputs: String,
}

impl<'a> Setup<'a> {
    /// The comparison of `s` on `model`, scored against `reference` when given (the
    /// caller checks that it belongs to `model`), sized to hold `block` seeds at once.
    pub fn new(
        model: &'a Classifier,
        s: &'a Settings,
        reference: Option<&'a Reference>,
        block: usize,
    ) -> Result<Self, crate::error::StudyError> {
        let target = model;
        let data = &target.data;
        let (p, d) = (s.chains, target.dim());
        let iterations = model.iterations(s.epochs);
        check(s, iterations)?;
        let eta_factor = s.eta_rule.factor(model);
        let rates = Rates {
            eta_min: s.rates.eta_min * eta_factor,
            eta_max: s.rates.eta_max * eta_factor,
            ..s.rates
        };
        rates.check()?;
        let warmup = (s.burn_in * iterations as f64) as u64;

        // Everything the comparison holds at once, checked before any work.
        let probe = tempering_job(
            model,
            &Sampling {
                chains: p,
                seeds: block,
                iterations,
                scheme: Scheme::Deo { window: 1 },
                rates,
                target_level: TargetLevel::Msgd,
                seed: s.seed,
                record: sample_record(iterations, warmup, s.samples),
                rules: s.rules,
                initial_states: None,
            },
        )?;
        let mut footprint = nrpt_sampling::engine::memory::of_job(&probe);
        let m = |v: &[u64]| v.iter().fold(1u64, |a, &b| a.saturating_mul(b));
        let (seeds, chains_u, dim) = (block as u64, p as u64, d as u64);
        footprint.add("pre-trained networks", m(&[seeds, chains_u, dim, 4]));
        footprint.add(
            "predictives of the samples",
            m(&[
                seeds,
                s.samples as u64 + chains_u,
                data.test.len() as u64,
                data.classes as u64,
                4,
            ]),
        );
        nrpt_sampling::engine::memory::check(
            &footprint,
            "--ensembles, --samples, --chains or --epochs",
        )
        .map_err(|e| ConfigError::new("max_memory", e))?;

        let scorer = Scorer {
            labels: &data.test.y,
            classes: data.classes,
            reference: reference.map(|r| &r.predictive[..]),
            bootstrap: Bootstrap::new(data.test.len(), RESAMPLES, u64::from(s.seed))?,
            points: fidelity::curve_points(s.samples.max(p)),
        };
        let pre_data = Arc::new(methods::validation_split(
            data,
            s.pretraining.validation_every,
        ));

        let mut plan = vec![Planned {
            name: format!("pre-trained×P{p}"),
            kind: Kind::Pretrained,
            rates,
            factor: 1.0,
            group: Group::Main,
        }];
        let mut every_method =
            |rates: Rates, factor: f64, group: Group| -> Result<(), ConfigError> {
                let suffix = if group == Group::Main {
                    String::new()
                } else {
                    format!(", η×{factor}")
                };
                let msgd = TargetLevel::Msgd;
                let mut rows = vec![
                    (
                        format!("DEO⋆-mSGD×P{p}{suffix}"),
                        Kind::Tempering(star(p, rates.swap_rate)?, msgd),
                    ),
                    (
                        format!("DEO-mSGD×P{p}{suffix}"),
                        Kind::Tempering(Scheme::Deo { window: 1 }, msgd),
                    ),
                    (format!("mSGD×P{p}{suffix}"), Kind::Ensemble),
                    (format!("cycSGHMC×T{p}{suffix}"), Kind::Cyclical),
                    (format!("SWAG×T{p}{suffix}"), Kind::Swag),
                ];
                // The main table's extra rows: DEO⋆ with a target level that samples, and
                // the single-chain baselines from all P pre-trained networks.
                if group == Group::Main {
                    rows.extend([
                        (
                            format!("DEO⋆-SGHMC×P{p}"),
                            Kind::Tempering(star(p, rates.swap_rate)?, TargetLevel::Sghmc),
                        ),
                        (format!("cycSGHMC×P{p}"), Kind::CyclicalChains),
                        (format!("MultiSWAG×P{p}"), Kind::MultiSwag),
                    ]);
                }
                for (name, kind) in rows {
                    plan.push(Planned {
                        name,
                        kind,
                        rates,
                        factor,
                        group,
                    });
                }
                Ok(())
            };
        every_method(rates, 1.0, Group::Main)?;
        for &factor in &s.eta_sweep {
            let swept = Rates {
                eta_min: rates.eta_min * factor,
                eta_max: rates.eta_max * factor,
                ..rates
            };
            every_method(swept, factor, Group::EtaSweep)?;
        }
        for &rate in &s.swap_sweep {
            plan.push(Planned {
                name: format!("DEO⋆-mSGD×P{p}, S = {rate}"),
                kind: Kind::Tempering(star(p, rate)?, TargetLevel::Msgd),
                rates: Rates {
                    swap_rate: rate,
                    ..rates
                },
                factor: 1.0,
                group: Group::SwapSweep,
            });
        }
        let inputs = inputs_digest(data, reference);
        Ok(Setup {
            inputs,
            model,
            s,
            reference,
            iterations,
            warmup,
            eta_factor,
            rates,
            pre_data,
            scorer,
            plan,
        })
    }

    /// Trace entries of the tempering runs every 5 epochs (swap rates over ~100
    /// iterations, smooth enough to see), and at least 20 times in a short run.
    fn trace_every(&self) -> u64 {
        let per_epoch = self.model.iterations_per_epoch();
        ((5.0 * per_epoch).round() as u64)
            .min(self.iterations / 20)
            .max(1)
    }
}

/// Runs the comparison over all its seeds: [`Setup::collect`] then
/// [`Setup::report`]. `backend` runs the tempering jobs; the other methods run on the
/// CPU. `reference`, when given, must belong to `model` (the caller checks it).
/// `progress(what)` is told what starts.
pub fn run(
    model: &Classifier,
    s: &Settings,
    reference: Option<&Reference>,
    backend: &dyn Backend,
    progress: &dyn Fn(&str),
) -> Result<Report, crate::error::StudyError> {
    let started = Instant::now();
    let setup = Setup::new(model, s, reference, s.seeds)?;
    let records = setup.collect(backend, 0..s.seeds, progress)?;
    Ok(setup.report(&records, started.elapsed().as_secs_f64()))
}

/// The optimal window for P chains at swap rate `rate`.
fn star(p: usize, rate: f64) -> Result<Scheme, ConfigError> {
    let window = nrpt_core::optimal::optimal_window(p, rate)
        .map_err(|e| ConfigError::new("swap_rate", e.to_string()))?;
    Ok(Scheme::Deo { window })
}

/// A record of the last `samples` target-level states evenly spaced after `warmup`
/// (the engine keeps every `thin`-th iteration from the warm-up on; the comparison
/// keeps the last `samples` of them).
fn sample_record(iterations: u64, warmup: u64, samples: usize) -> Record {
    let thin = ((iterations - warmup) / (samples as u64).max(1)).max(1);
    Record {
        thin,
        warmup,
        trace_every: 1.max(iterations / 20),
        path_iterations: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundled digits behind one hidden layer of 8, in mini-batches of `batch`.
    fn digits(batch: usize) -> Classifier {
        let data = Arc::new(nrpt_sampling::data::digits());
        Arc::new(ClassifierTarget::new(data, &[8], batch, 1.0).unwrap())
    }

    /// The temperature rule multiplies the rates by the paper's N/B over this data's:
    /// N/B times the factor is 50,000/256 whatever the batch (half the batch, twice the
    /// N/B, half the factor); as given, the factor is 1.
    #[test]
    fn the_temperature_rule_keeps_the_papers_examples_per_batch() {
        let t = digits(32);
        let per_epoch = t.iterations_per_epoch();
        assert_eq!(per_epoch, t.examples() as f64 / 32.0);
        let f = EtaRule::Temperature.factor(&t);
        assert!((f * per_epoch - 50_000.0 / 256.0).abs() < 1e-9, "{f}");
        let half = EtaRule::Temperature.factor(&digits(16));
        assert!((2.0 * half - f).abs() < 1e-12, "{half} vs {f}");
        assert_eq!(EtaRule::AsGiven.factor(&t), 1.0);
    }

    /// Every method's samples fit in the sampling phase after its burn-in: as many as
    /// the iterations left pass, one more is refused, naming `samples`; so are a run
    /// without seeds, with one chain, or without samples per cycle.
    #[test]
    fn the_samples_must_fit_after_the_burn_in() {
        let s = Settings {
            burn_in: 0.25,
            samples: 75,
            ..Settings::default()
        };
        // 100 iterations, 25 of them burn-in: 75 left.
        assert!(check(&s, 100).is_ok());
        let e = check(
            &Settings {
                samples: 76,
                ..s.clone()
            },
            100,
        )
        .unwrap_err();
        assert_eq!(e.field, "samples", "{e}");
        let bad = [
            Settings {
                seeds: 0,
                ..s.clone()
            },
            Settings {
                chains: 1,
                ..s.clone()
            },
            Settings {
                samples: 0,
                ..s.clone()
            },
            Settings {
                samples_per_cycle: 0,
                ..s.clone()
            },
        ];
        for b in &bad {
            assert!(check(b, 100).is_err(), "{b:?}");
        }
    }

    /// The record of a tempering run keeps at least the samples asked for, all after
    /// the warm-up (the comparison averages the last of them), and traces 20 times.
    #[test]
    fn the_sample_record_keeps_enough_samples_after_the_warm_up() {
        for (iterations, warmup, samples) in [
            (1000, 250, 60),
            (100, 25, 75),
            (4000, 1000, 7),
            (50, 0, 50),
            (977, 244, 13),
        ] {
            let r = sample_record(iterations, warmup, samples);
            let kept: Vec<u64> = (0..iterations).filter(|&k| r.samples_at(k)).collect();
            assert!(
                kept.len() >= samples,
                "{iterations}, {warmup}, {samples}: {} kept",
                kept.len()
            );
            assert!(kept.iter().all(|&k| k >= warmup), "{kept:?}");
            assert_eq!(r.trace_every, (iterations / 20).max(1));
        }
    }

    /// The rows of a comparison in the report's order: the pre-trained networks, the
    /// five methods, the five again at each factor of the learning-rate sweep (their
    /// rates times it), then DEO⋆ at each swap rate of the swap sweep with the optimal
    /// window for it; the sampling phase runs the epochs' iterations, the burn-in its
    /// share of them.
    #[test]
    fn the_plan_holds_every_row_in_the_reports_order() {
        let model = digits(32);
        let s = Settings {
            chains: 4,
            seeds: 1,
            epochs: 3.0,
            samples: 5,
            eta_sweep: vec![0.5, 2.0],
            swap_sweep: vec![0.3],
            ..Settings::default()
        };
        let setup = Setup::new(&model, &s, None, 1).unwrap();
        let names: Vec<&str> = setup.plan.iter().map(|p| p.name.as_str()).collect();
        let methods = |suffix: &str| {
            [
                "DEO⋆-mSGD×P4",
                "DEO-mSGD×P4",
                "mSGD×P4",
                "cycSGHMC×T4",
                "SWAG×T4",
            ]
            .map(|m| format!("{m}{suffix}"))
        };
        let mut want = vec!["pre-trained×P4".to_string()];
        want.extend(methods(""));
        want.extend(["DEO⋆-SGHMC×P4", "cycSGHMC×P4", "MultiSWAG×P4"].map(String::from));
        want.extend(methods(", η×0.5"));
        want.extend(methods(", η×2"));
        want.push("DEO⋆-mSGD×P4, S = 0.3".into());
        assert_eq!(names, want);

        let iterations = (3.0 * model.examples() as f64 / 32.0).round() as u64;
        assert_eq!(setup.iterations, iterations);
        assert_eq!(setup.warmup, (0.25 * iterations as f64) as u64);
        let factor = EtaRule::Temperature.factor(&model);
        assert_eq!(setup.eta_factor, factor);
        let star = |rate| nrpt_core::optimal::optimal_window(4, rate).unwrap();
        for p in &setup.plan {
            let eta = s.rates.eta_min * factor * p.factor;
            assert!(
                (p.rates.eta_min - eta).abs() <= 1e-12 * eta,
                "{}: {} vs {eta}",
                p.name,
                p.rates.eta_min
            );
            let rate = if p.group == Group::SwapSweep {
                0.3
            } else {
                0.1
            };
            assert_eq!(p.rates.swap_rate, rate, "{}", p.name);
            match p.kind {
                Kind::Tempering(Scheme::Deo { window }, level) if p.name.starts_with("DEO⋆") => {
                    assert_eq!(window, star(rate), "{}", p.name);
                    let sghmc = p.name.starts_with("DEO⋆-SGHMC");
                    assert_eq!(level == TargetLevel::Sghmc, sghmc, "{}", p.name);
                }
                Kind::Tempering(Scheme::Deo { window }, level) => {
                    assert_eq!((window, level), (1, TargetLevel::Msgd))
                }
                Kind::Tempering(other, _) => panic!("{}: {other:?}", p.name),
                _ => assert!(!p.name.starts_with("DEO"), "{}", p.name),
            }
        }
        let groups = [Group::Main, Group::EtaSweep, Group::SwapSweep]
            .map(|g| setup.plan.iter().filter(|p| p.group == g).count());
        assert_eq!(groups, [9, 10, 1]);
    }
}
