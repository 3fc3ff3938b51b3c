//! `nrpt run --target classifier --exact`: exact tempering of a classifier's posterior,
//! from its N(0, σ²I) prior (drawn exactly) to the posterior on the whole training set
//! ([`nrpt_studies::deep::posterior::ClassifierPath`], full-batch gradients in `f64`), with HMC
//! explorers by default. It reports the communication barrier Λ̂ of a real posterior,
//! log Z = log p(y | X), the model evidence (the prior is normalized), and the test
//! accuracy and NLL of the posterior predictive of the target level's samples. The path
//! has no closed forms: `closed_form` is `null`; with `--ais N` an independent estimate
//! of log Z by annealed importance sampling on the same path
//! ([`nrpt_studies::exact::ais`]) runs after it, and the summary says whether the two
//! agree. The run itself is [`posterior::run_exact`]; this command reads the
//! configuration, writes the summary and prints it.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use super::gaussian_path::{ExactSummary, summary_of};
use crate::progress::Progress;
use nrpt_sampling::config::{ConfigError, ExplorerKind, RunConfig, WindowSpec};
use nrpt_sampling::output::{OutDir, OutPolicy, write_json};
use nrpt_studies::deep::posterior::{self, ClassifierPath, Predictive};
use nrpt_studies::exact::ais::{self, Agreement, AisOutcome, AisSettings};
use nrpt_studies::exact::{self, AUTO_RULE, Chains, ClosedForm, ExactOutcome, ExactSettings};

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
        reference: c.reference,
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

/// `summary.json` of an exact classifier run: gaussian-path's fields (`closed_form`
/// `null`, `log_z` the log evidence log p(y | X) of the model with its normalized prior),
/// the data's size and the posterior predictive.
#[derive(Debug, Serialize)]
pub(crate) struct ClassifierExactSummary {
    /// Training examples N (ℓ sums over all of them).
    pub train_examples: usize,
    /// Ensembles that ran (after `--quick`'s cap).
    pub ensembles: usize,
    /// What every exact run reports.
    #[serde(flatten)]
    pub run: ExactSummary<Option<ClosedForm>>,
    /// The posterior predictive of the target level's samples on the test set.
    pub predictive: Predictive,
    /// With `--ais N`: log Z by annealed importance sampling and its agreement with the
    /// exact run's (`null` without).
    pub ais: Option<AisCheck>,
}

/// An independent estimate of log Z beside the exact run's.
#[derive(Debug, Serialize)]
pub(crate) struct AisCheck {
    /// The annealed importance sampling run (log Z, its delta-method error, the effective
    /// particles, every log weight).
    #[serde(flatten)]
    pub outcome: AisOutcome,
    /// Exact tempering's log Z minus AIS's, with the combined error, and whether they
    /// agree (within 2.576 combined standard errors).
    pub agreement: Agreement,
}

/// The AIS settings of a configuration: `--ais` particles, `--ais-steps` steps, the exact
/// run's explorer and seed (`None` without `--ais`).
pub fn ais_settings(c: &RunConfig, s: &ExactSettings) -> Option<AisSettings> {
    (c.ais > 0).then_some(AisSettings {
        particles: c.ais,
        steps: c.ais_steps,
        explorer: s.explorer,
        seed: s.seed,
    })
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
    let ais_settings = ais_settings(config, &s);
    if let Some(a) = &ais_settings {
        ais::check(a)?;
    }
    let out_dir = OutDir::prepare(&config.out, policy)?;
    let started = Instant::now();
    let progress = Progress::new("run", s.iterations * s.ensembles as u64, quiet);
    let out = posterior::run_exact(target, &s, &|n| progress.inc(n))?;
    progress.finish();
    let predictive = posterior::predictive(target, &out);
    let mut summary = summarize(config, &s, &out, target.data.train.len(), predictive);
    if let Some(a) = &ais_settings {
        let transitions = (ais::TUNING_PARTICLES + a.particles) as u64 * u64::from(a.steps - 1);
        let progress = Progress::new("ais", transitions, quiet);
        let outcome = ais::run_ais(a, &|| Ok(ClassifierPath::new(target)), &|n| progress.inc(n))?;
        progress.finish();
        let p = &summary.run.pooled;
        let agreement = Agreement::of((p.log_z, p.log_z_se), (outcome.log_z, outcome.log_z_se));
        summary.run.warnings.extend(outcome.warnings());
        if !agreement.agree {
            summary.run.warnings.push(format!(
                "exact tempering's log Z = {:.3} ± {:.3} and annealed importance sampling's \
                 {:.3} ± {:.3} are {:.1} combined standard errors apart (more than {}): one of \
                 them, or both errors, cannot be trusted; run more --iterations (and \
                 --ensembles), or more --ais-steps",
                p.log_z,
                p.log_z_se,
                outcome.log_z,
                outcome.log_z_se,
                agreement.standard_errors_apart,
                ais::AGREEMENT_SE
            ));
        }
        summary.ais = Some(AisCheck { outcome, agreement });
    }
    let seconds = started.elapsed().as_secs_f64();
    write_json(&out_dir.path().join("summary.json"), &summary)?;
    let title = format!(
        "Local communication barrier λ(β), classifier posterior, D = {} (Λ̂ = {:.3})",
        summary.run.dim, summary.run.pooled.lambda
    );
    super::gaussian_path::write_profile(out_dir.path(), s.reference, &out, None, &title)?;
    let folder = out_dir.commit()?;
    super::after_commit(&folder, || report(&summary, seconds, strict, json))
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
        ais: None,
    }
}

/// Prints the warnings and the results.
fn report(summary: &ClassifierExactSummary, seconds: f64, strict: bool, json: bool) -> Result<()> {
    let run = &summary.run;
    super::warnings::report_summary(summary, &run.warnings, seconds, (strict, json), || {
        let p = &run.pooled;
        let q = &summary.predictive;
        say!(
            "exact tempering, classifier {} → posterior (D = {}, N = {}): {} ensembles × {} \
         chains × {} iterations ({}) in {seconds:.2} s",
            match run.reference {
                "variational" =>
                    "variational reference (a mean-field Gaussian fitted after every round)",
                "stabilized" =>
                    "prior and variational reference (two legs joined at the posterior)",
                _ => "prior",
            },
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
            "  log Z = log p(y|X) = {:.3} ± {:.3} (error from {}; forward {:.3} ± {:.3}, reverse {:.3} ± {:.3})",
            p.log_z,
            p.log_z_se,
            p.log_z_se_source.describe(),
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
        if let Some(leg) = &run.fixed_leg {
            leg.say(run.chains, "  ")?;
        }
        say!(
            "  posterior predictive of {} samples on {} test examples: accuracy {:.4}, NLL {:.4}",
            q.samples,
            q.test_examples,
            q.accuracy,
            q.nll
        )?;
        if let Some(a) = &summary.ais {
            let o = &a.outcome;
            say!(
                "  annealed importance sampling: log Z = {:.3} ± {:.3} ({} particles, effective {:.1}; {}; {} acceptance {:.3}): {} exact tempering's ({:+.3}, {:.1} combined standard errors)",
                o.log_z,
                o.log_z_se,
                o.particles,
                o.effective_particles,
                o.schedule,
                o.explorer,
                o.acceptance,
                if a.agreement.agree {
                    "agrees with"
                } else {
                    "DISAGREES with"
                },
                a.agreement.difference,
                a.agreement.standard_errors_apart
            )?;
        }
        Ok(())
    })
}
