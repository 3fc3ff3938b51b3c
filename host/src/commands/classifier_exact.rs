//! `nrpt run --target classifier --exact`: exact tempering of a classifier's posterior,
//! from its N(0, σ²I) prior (drawn exactly) to the posterior on the whole training set
//! ([`nrpt_studies::deep::posterior::ClassifierPath`], full-batch gradients in `f64`), with HMC
//! explorers by default. It reports the communication barrier Λ̂ of a real posterior,
//! log Z = log p(y | X), the model evidence (the prior is normalized), and the test
//! accuracy and NLL of the posterior predictive of the target level's samples. The path
//! has no closed forms: `closed_form` is `null`.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use super::gaussian_path::{ExactSummary, summary_of};
use crate::progress::Progress;
use nrpt_sampling::config::{ConfigError, ExplorerKind, RunConfig, WindowSpec};
use nrpt_sampling::output::{OutDir, OutPolicy, write_json};
use nrpt_studies::deep::fidelity::example_scores;
use nrpt_studies::deep::posterior::ClassifierPath;
use nrpt_studies::exact::{self, AUTO_RULE, Chains, ClosedForm, ExactOutcome, ExactSettings};

/// Target-level states kept per ensemble for the posterior predictive (evenly spaced
/// over the measurement round).
pub const KEPT_SAMPLES: usize = 100;

/// The caps of `--quick`: chains, ensembles, iterations.
pub const QUICK: (usize, usize, u64) = (8, 2, 128);

/// Whether a configuration runs this command: `--exact` on the classifier target.
pub fn applies(c: &RunConfig) -> bool {
    c.exact && c.target.as_str() == "classifier"
}

/// The error of `--exact` (or `--quick`) on a target other than the classifier.
pub fn refused(c: &RunConfig) -> Option<ConfigError> {
    if c.target.as_str() == "classifier" {
        if c.quick && !c.exact {
            return Some(ConfigError::new(
                "quick",
                "applies to exact tempering of the classifier's posterior: add --exact",
            ));
        }
        return None;
    }
    if c.exact {
        return Some(ConfigError::new(
            "exact",
            format!(
                "exact tempering of a posterior applies to --target classifier; target {} \
                 has no such path (gaussian-path always runs exact tempering)",
                c.target
            ),
        ));
    }
    if c.quick {
        return Some(ConfigError::new(
            "quick",
            format!(
                "applies to --target classifier --exact, not to target {}",
                c.target
            ),
        ));
    }
    None
}

/// The settings of an exact classifier run: the classifier's SGD explorer default
/// (`msgd`) reads as `hmc`, its window default (`opt`) as 1 (vanilla DEO: with exact
/// swaps a window W > 1 biases the levels), and `--quick` caps chains, ensembles and
/// iterations at [`QUICK`].
///
/// # Errors
///
/// An SGD explorer given explicitly, explorer steps out of range.
pub fn settings(c: &RunConfig, dim: usize) -> Result<ExactSettings, ConfigError> {
    let c = &resolve(c);
    let explorer = super::gaussian_path::explorer(c)?;
    let (mut chains, mut ensembles, mut iterations) = (c.chains, c.ensembles, c.iterations);
    if c.quick {
        chains = chains.min(QUICK.0);
        ensembles = ensembles.min(QUICK.1);
        iterations = iterations.min(QUICK.2);
    }
    Ok(ExactSettings {
        dim,
        chains: if c.auto_chains {
            Chains::Auto(AUTO_RULE)
        } else {
            Chains::Fixed(chains)
        },
        ensembles,
        iterations,
        window: c.window,
        seed: c.seed,
        explorer,
    })
}

/// The configuration as an exact run reads it: the classifier's defaults of the SGD
/// engine, explorer `msgd` and window `opt`, read as `hmc` and 1.
pub fn resolve(c: &RunConfig) -> RunConfig {
    let mut e = c.clone();
    if e.explorer == ExplorerKind::Msgd {
        e.explorer = ExplorerKind::Hmc;
    }
    if e.window == WindowSpec::Optimal {
        e.window = WindowSpec::Fixed(1);
    }
    e
}

/// The posterior predictive of the kept target-level samples on the test set.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Predictive {
    /// Samples averaged (over ensembles).
    pub samples: usize,
    /// Test examples.
    pub test_examples: usize,
    /// Accuracy of the averaged probabilities' most probable class.
    pub accuracy: f64,
    /// Mean negative log probability of the true class under the averaged probabilities
    /// (floored at 10⁻¹², as `nrpt deep` scores).
    pub nll: f64,
}

/// `summary.json` of an exact classifier run: gaussian-path's fields (`closed_form`
/// `null`, `log_z` the log evidence log p(y | X) of the model with its normalized prior),
/// the data's size and the posterior predictive.
#[derive(Debug, Serialize)]
pub struct ClassifierExactSummary {
    /// Training examples N (ℓ sums over all of them).
    pub train_examples: usize,
    /// Ensembles that ran (after `--quick`'s cap).
    pub ensembles: usize,
    /// What every exact run reports.
    #[serde(flatten)]
    pub run: ExactSummary<Option<ClosedForm>>,
    /// The posterior predictive of the target level's samples on the test set.
    pub predictive: Predictive,
}

/// Runs the command's exact classifier branch.
pub fn run(
    config: &RunConfig,
    policy: &OutPolicy,
    strict: bool,
    json: bool,
    quiet: bool,
) -> Result<()> {
    let config = &resolve(config);
    let target = &nrpt_sampling::targets::classifier::model(config)?;
    let s = settings(config, target.dim())?;
    exact::check(&s)?;
    let out_dir = OutDir::prepare(&config.out, policy)?;
    let started = Instant::now();
    let progress = Progress::new("run", s.iterations * s.ensembles as u64, quiet);
    let none = ClosedForm {
        lambda: f64::NAN,
        log_z: f64::NAN,
        limit_round_trip_rate: f64::NAN,
    };
    let out = exact::run_path(
        &s,
        none,
        &|| Ok(ClassifierPath::new(target)),
        KEPT_SAMPLES,
        &|n| progress.inc(n),
    )?;
    progress.finish();
    let predictive = predictive(target, &out);
    let seconds = started.elapsed().as_secs_f64();
    let summary = summarize(config, &s, &out, target.data.train.len(), predictive);
    write_json(&out_dir.path().join("summary.json"), &summary)?;
    let folder = out_dir.commit()?;
    super::after_commit(&folder, || report(&summary, seconds, strict, json))
}

/// The posterior predictive of every ensemble's kept samples on the test set.
pub fn predictive(
    target: &nrpt_sampling::targets::classifier::ClassifierTarget,
    out: &ExactOutcome,
) -> Predictive {
    let test = &target.data.test;
    let c = target.data.classes;
    let dim = target.dim().max(1);
    let mut path = ClassifierPath::new(target);
    let mut mean = vec![0.0; test.len() * c];
    let mut probs = vec![0.0; test.len() * c];
    let mut samples = 0usize;
    for theta in out
        .ensembles
        .iter()
        .flat_map(|e| e.samples.chunks_exact(dim))
    {
        path.probabilities(theta, &test.x, &mut probs);
        for (m, p) in mean.iter_mut().zip(&probs) {
            *m += p;
        }
        samples += 1;
    }
    let n = samples.max(1) as f64;
    for m in &mut mean {
        *m /= n;
    }
    let scores = example_scores(&mean, &test.y, c, None);
    let average = |v: &[f64]| {
        if samples == 0 {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / test.len().max(1) as f64
        }
    };
    Predictive {
        samples,
        test_examples: test.len(),
        accuracy: average(&scores.correct),
        nll: average(&scores.nll),
    }
}

/// The summary of a finished run.
fn summarize(
    config: &RunConfig,
    s: &ExactSettings,
    out: &ExactOutcome,
    train_examples: usize,
    predictive: Predictive,
) -> ClassifierExactSummary {
    ClassifierExactSummary {
        train_examples,
        ensembles: s.ensembles,
        run: summary_of(config, s, out, None),
        predictive,
    }
}

/// Prints the warnings and the results.
fn report(summary: &ClassifierExactSummary, seconds: f64, strict: bool, json: bool) -> Result<()> {
    let run = &summary.run;
    super::warnings::report_summary(summary, &run.warnings, seconds, (strict, json), || {
        let p = &run.pooled;
        let q = &summary.predictive;
        say!(
            "exact tempering, classifier prior → posterior (D = {}, N = {}): {} ensembles × {} \
         chains × {} iterations ({}) in {seconds:.2} s",
            run.dim,
            summary.train_examples,
            summary.ensembles,
            run.chains,
            run.iterations_run,
            run.explorer.name
        )?;
        say!(
            "  Λ̂ = {:.3} ± {:.3} (Gaussian-swap correction {})",
            p.lambda,
            p.lambda_se,
            p.barrier_gaussian_corrected
                .map_or("undefined".to_string(), |v| format!("{v:.3}"))
        )?;
        say!(
            "  log Z = log p(y|X) = {:.3} ± {:.3} (forward {:.3} ± {:.3}, reverse {:.3} ± {:.3})",
            p.log_z,
            p.log_z_se,
            p.log_z_forward,
            p.log_z_forward_se,
            p.log_z_reverse,
            p.log_z_reverse_se
        )?;
        say!(
            "  round trips per 1000 iterations {:.2}; explorer acceptance {:.3}",
            p.round_trips_per_1000,
            p.explorer_acceptance
        )?;
        say!(
            "  posterior predictive of {} samples on {} test examples: accuracy {:.4}, NLL {:.4}",
            q.samples,
            q.test_examples,
            q.accuracy,
            q.nll
        )?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use nrpt_core::exact::{AnnealingPath, ExactExplorer, HmcOptions};
    use nrpt_core::model::Architecture;
    use nrpt_core::rng::{PhiloxStream, streams};

    use super::*;
    use nrpt_sampling::targets::classifier::ClassifierTarget;

    /// log Z of exact tempering on a softmax regression with 4 training examples of the
    /// digits (D = 650, σ = 0.3) against importance sampling from the prior (40,000
    /// exact prior draws, f64): within 4 combined standard errors plus 0.05 nats.
    #[test]
    fn log_z_matches_importance_sampling_from_the_prior() {
        let mut data = nrpt_sampling::data::digits();
        let n = 4;
        data.train.x.truncate(n * data.features);
        data.train.y.truncate(n);
        let target = ClassifierTarget {
            data: Arc::new(data),
            arch: Architecture::new(&[64, 10]).unwrap(),
            batch: n,
            prior_sigma: 0.3,
        };
        // Importance sampling: Z = E_π₀[e^ℓ].
        let mut path = ClassifierPath::new(&target);
        let d = path.dim();
        let mut rng = PhiloxStream::new(11, 0, 0, 0, streams::INIT);
        let mut x = vec![0.0; d];
        let draws = 40_000;
        let ells: Vec<f64> = (0..draws)
            .map(|_| {
                path.sample_reference(&mut x, &mut rng).unwrap();
                path.log_likelihood(&x).unwrap()
            })
            .collect();
        let m = ells.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = ells.iter().map(|l| (l - m).exp()).collect();
        let mean = w.iter().sum::<f64>() / draws as f64;
        let var = w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (draws - 1) as f64;
        let is_log_z = m + mean.ln();
        let is_se = (var / draws as f64).sqrt() / mean;
        let s = ExactSettings {
            dim: d,
            chains: Chains::Fixed(6),
            ensembles: 2,
            iterations: 1000,
            window: WindowSpec::Fixed(1),
            seed: 4,
            explorer: ExactExplorer::Hmc(HmcOptions {
                leapfrog_steps: 5,
                ..HmcOptions::default()
            }),
        };
        let none = ClosedForm {
            lambda: f64::NAN,
            log_z: f64::NAN,
            limit_round_trip_rate: f64::NAN,
        };
        let out = exact::run_path(
            &s,
            none,
            &|| Ok(ClassifierPath::new(&target)),
            0,
            &nrpt_sampling::engine::unobserved,
        )
        .unwrap();
        let p = out.pooled();
        let tol = 4.0 * (p.log_z_se.powi(2) + is_se.powi(2)).sqrt() + 0.05;
        eprintln!(
            "log Z: exact {:.4} ± {:.4} (forward {:.4}, reverse {:.4}), importance sampling \
             {is_log_z:.4} ± {is_se:.4}",
            p.log_z, p.log_z_se, p.log_z_forward, p.log_z_reverse
        );
        assert!(
            (p.log_z - is_log_z).abs() < tol,
            "exact {} ± {} vs importance sampling {is_log_z} ± {is_se}",
            p.log_z,
            p.log_z_se
        );
        assert!(out.ensembles.iter().all(|e| e.samples.is_empty()));
    }
}
