//! `nrpt run --target gaussian-path`: exact tempering on the Gaussian path N(0, I_D) →
//! N(0, I_D/10), whose communication barrier Λ, local barrier λ(β) and log Z have closed
//! forms, estimated and reported beside them (see [`nrpt_studies::exact`]).

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use nrpt_core::exact::{ExactExplorer, GaussianPath, HmcOptions, MalaOptions};
use serde::Serialize;

use crate::figures::{self, LineChart, Series, Style};
use crate::progress::Progress;
use nrpt_sampling::config::{ConfigError, ExplorerKind, ReferenceKind, RunConfig};
use nrpt_sampling::console::StdoutError;
use nrpt_sampling::output::{OutDir, OutPolicy, write_json};
use nrpt_studies::exact::{
    self, AUTO_RULE, Chains, ClosedForm, ExactOutcome, ExactSettings, PilotSummary, Pooled,
    Recommended,
};

/// `summary.json` of a gaussian-path run; with `C` = `Option<ClosedForm>` (`null`), the
/// common part of every exact run's summary (`--target classifier --exact`).
#[derive(Debug, Serialize)]
pub struct ExactSummary<C = ClosedForm> {
    /// The configuration that ran.
    pub config: RunConfig,
    /// Dimension D.
    pub dim: usize,
    /// Chains P of the main run.
    pub chains: usize,
    /// How P was chosen: `given`, or the rule of `--chains auto`.
    pub chains_rule: String,
    /// The last pilot run (with `--chains auto`, or a window chosen from the swap rate):
    /// the one P and the window came from.
    pub pilot: Option<PilotSummary>,
    /// Every pilot in order: `--chains auto` runs a larger one while the last one's
    /// pairs reject more than 0.5 on average (at most 4 pilots, 256 chains).
    pub pilots: Vec<PilotSummary>,
    /// Chains the two rules recommend for the measured Λ̂: `cost_optimal` (P − 1 ≈ 2Λ̂,
    /// the most round trips per chain-iteration) and `near_limit_5_percent` (the fewest
    /// chains within 5 % of the limit rate 1/(2 + 2Λ), for chains run in parallel);
    /// `lower_bound` true when Λ̂ saturates (pairs reject more than half of their swaps on
    /// average, or one never swaps), so both are "at least".
    pub recommended_chains: Recommended,
    /// Window W of the main run (0: SEO).
    pub window: u32,
    /// The swap rate the window was chosen for, S = 1 − Λ̂/(P − 1) (equal rejection).
    pub window_swap_rate: Option<f64>,
    /// Iterations of the main run per ensemble (rounds of doubling length; the last,
    /// with the grid and step sizes frozen, is the measurement).
    pub iterations_run: u64,
    /// Iterations of the measurement round.
    pub measured_iterations: u64,
    /// The explorers of the levels with β > 0.
    pub explorer: ExplorerSummary,
    /// The reference the levels anneal from: `fixed` (the path's own) or `variational`
    /// (a mean-field Gaussian fitted to the target level after every round; `closed_form`
    /// is then still the fixed reference's path, whose log Z is the same).
    pub reference: &'static str,
    /// Estimates pooled over ensembles (Λ̂ as `lambda`, log Z as `log_z`, …); on the
    /// stabilized ladder, the variational leg's.
    #[serde(flatten)]
    pub pooled: Pooled,
    /// On the stabilized ladder (`reference = "stabilized"`), the fixed leg; absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_leg: Option<FixedLegSummary>,
    /// The closed forms of the path.
    pub closed_form: C,
    /// Settings without effect on this target, and what the run's diagnostics found
    /// ([`exact::diagnostics()`](nrpt_studies::exact::diagnostics())), each saying what to do.
    pub warnings: Vec<String>,
}

/// The fixed leg of the stabilized ladder: its chains and pilots, and its estimates
/// pooled over ensembles (the summary's own are the variational leg's).
#[derive(Debug, Serialize)]
pub struct FixedLegSummary {
    /// Chains P of the fixed leg (the summary's `chains` are the variational leg's).
    pub chains: usize,
    /// The fixed leg's pilots in order.
    pub pilots: Vec<PilotSummary>,
    /// Chains the two rules recommend for the fixed leg's Λ̂.
    pub recommended_chains: Recommended,
    /// Exchanges of the two legs' target replicas, summed over ensembles.
    pub exchanges: u64,
    /// Round trips per 1000 iterations of the whole ladder: the two legs' together (a
    /// tour from the target to either reference and back is counted on the leg where it
    /// returns).
    pub round_trips_per_1000_both_legs: f64,
    /// The fixed leg's estimates pooled over ensembles.
    #[serde(flatten)]
    pub pooled: Pooled,
}

impl FixedLegSummary {
    /// The fixed leg of `out`, if it ran on two legs.
    fn of(out: &ExactOutcome, variational: &Pooled) -> Option<Self> {
        let leg = out.fixed_leg.as_deref()?;
        let pooled = leg.pooled();
        Some(FixedLegSummary {
            chains: leg.chains,
            pilots: leg.pilots.clone(),
            recommended_chains: leg.recommended(&pooled),
            exchanges: out.exchanges,
            round_trips_per_1000_both_legs: pooled.round_trips_per_1000
                + variational.round_trips_per_1000,
            pooled,
        })
    }

    /// The lines the text output gives the fixed leg, each opening with `indent`.
    pub(crate) fn say(&self, variational_chains: usize, indent: &str) -> Result<(), StdoutError> {
        let p = &self.pooled;
        say!(
            "{indent}stabilized ladder: the variational leg ({variational_chains} chains, the estimates above) and the fixed leg ({} chains) joined at the target, whose replicas exchanged {} times",
            self.chains,
            self.exchanges
        )?;
        say!(
            "{indent}fixed leg: Λ̂ = {:.4} ± {:.4}, log Z = {:.4} ± {:.4}, round trips per 1000 iterations {:.1} (both legs {:.1})",
            p.lambda,
            p.lambda_se,
            p.log_z,
            p.log_z_se,
            p.round_trips_per_1000,
            self.round_trips_per_1000_both_legs
        )
    }
}

/// The explorers of a run.
#[derive(Clone, Debug, Serialize)]
pub struct ExplorerSummary {
    /// `mala` or `hmc`.
    pub name: &'static str,
    /// MALA steps or HMC trajectories per level and iteration.
    pub steps_per_iteration: u32,
    /// Leapfrog steps per HMC trajectory (`null` for MALA).
    pub leapfrog_steps: Option<u32>,
    /// The acceptance rate the step sizes were adapted towards.
    pub target_acceptance: f64,
    /// Smallest and largest step size of the levels with β > 0 (over ensembles), as
    /// adapted and then frozen for the measured round.
    pub step_size_range: (f64, f64),
}

/// The explorer of a configuration: `explorer`, `explorer_steps` and, for HMC,
/// `leapfrog_steps`.
///
/// # Errors
///
/// An SGD explorer (`sgd`, `sgld`, `msgd`), a number of steps out of range, or
/// `leapfrog_steps` changed with MALA.
pub fn explorer(c: &RunConfig) -> Result<ExactExplorer, ConfigError> {
    use nrpt_sampling::config::{MAX_EXPLORER_STEPS, MAX_LEAPFROG_STEPS, in_range};
    in_range("explorer_steps", c.explorer_steps, 1, MAX_EXPLORER_STEPS)?;
    let default_leapfrog = RunConfig::default().leapfrog_steps;
    match c.explorer {
        ExplorerKind::Mala => {
            if c.leapfrog_steps != default_leapfrog {
                return Err(ConfigError::new(
                    "leapfrog_steps",
                    format!(
                        "applies to --explorer hmc; the explorer is mala (one gradient step                          per transition), got {}",
                        c.leapfrog_steps
                    ),
                ));
            }
            Ok(ExactExplorer::Mala(MalaOptions {
                steps_per_iteration: c.explorer_steps,
                ..MalaOptions::default()
            }))
        }
        ExplorerKind::Hmc => {
            in_range("leapfrog_steps", c.leapfrog_steps, 1, MAX_LEAPFROG_STEPS)?;
            Ok(ExactExplorer::Hmc(HmcOptions {
                steps_per_iteration: c.explorer_steps,
                leapfrog_steps: c.leapfrog_steps,
                ..HmcOptions::default()
            }))
        }
        other => Err(ConfigError::new(
            "explorer",
            format!(
                "target {} runs exact tempering: `mala` (the default) or `hmc`, got `{}`                  (an SGD explorer)",
                c.target,
                other.name()
            ),
        )),
    }
}

/// The settings of a configuration.
///
/// # Errors
///
/// The explorer's ([`explorer`]).
pub fn settings(c: &RunConfig) -> Result<ExactSettings, ConfigError> {
    Ok(ExactSettings {
        dim: c.dim,
        chains: if c.auto_chains {
            Chains::Auto(AUTO_RULE)
        } else {
            Chains::Fixed(c.chains)
        },
        ensembles: c.ensembles,
        iterations: c.iterations,
        window: c.window,
        seed: c.seed,
        explorer: explorer(c)?,
        reference: c.reference,
    })
}

/// A finished gaussian-path run: its settings, outcome and summary, and its seconds.
pub struct Computed {
    /// The settings of the configuration.
    pub settings: ExactSettings,
    /// Every ensemble's rounds and records.
    pub outcome: ExactOutcome,
    /// What `summary.json` holds.
    pub summary: ExactSummary,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
}

/// Runs a gaussian-path configuration without writing anything (a progress bar unless
/// `quiet`).
pub fn compute(config: &RunConfig, quiet: bool) -> Result<Computed> {
    let s = settings(config)?;
    exact::check(&s)?;
    let started = Instant::now();
    // The pilot's share is not known before P is: the bar counts the main run.
    let progress = Progress::new("run", s.iterations * s.ensembles as u64, quiet);
    let out = exact::run(&s, &|n| progress.inc(n))?;
    progress.finish();
    let seconds = started.elapsed().as_secs_f64();
    let summary = summarize(config, &s, &out);
    Ok(Computed {
        settings: s,
        outcome: out,
        summary,
        seconds,
    })
}

/// The summary of a finished run.
fn summarize(config: &RunConfig, s: &ExactSettings, out: &ExactOutcome) -> ExactSummary {
    summary_of(config, s, out, out.closed_form)
}

/// The summary of any finished exact run, with the closed forms `closed_form` of its
/// path.
pub(crate) fn summary_of<C>(
    config: &RunConfig,
    s: &ExactSettings,
    out: &ExactOutcome,
    closed_form: C,
) -> ExactSummary<C> {
    let pooled = out.pooled();
    let mut warnings = super::warnings::warnings(config, 1, 0, 1);
    warnings.extend(exact::diagnostics(
        out,
        &pooled,
        exact::Advice::Command(&s.explorer),
    ));
    // The fixed leg's own findings, named as such (a warning both legs share, such as
    // the window's, once).
    if let Some(leg) = out.fixed_leg.as_deref() {
        let found = exact::diagnostics(leg, &leg.pooled(), exact::Advice::Command(&s.explorer));
        for w in found {
            if !warnings.contains(&w) {
                warnings.push(format!("fixed leg of the stabilized ladder: {w}"));
            }
        }
    }
    ExactSummary {
        config: config.clone(),
        dim: s.dim,
        chains: out.chains,
        chains_rule: if config.auto_chains {
            "auto: cost-optimal, P − 1 ≈ 2Λ̂ of the last pilot (pilots enlarged while their \
             pairs reject more than 0.5 on average)"
                .into()
        } else {
            "given".into()
        },
        pilot: out.pilot().copied(),
        pilots: out.pilots.clone(),
        recommended_chains: out.recommended(&pooled),
        window: out.window,
        window_swap_rate: out.window_swap_rate,
        iterations_run: out.iterations_run,
        measured_iterations: out
            .ensembles
            .first()
            .and_then(|e| e.last())
            .map_or(0, |r| r.iterations),
        reference: s.reference.name(),
        explorer: ExplorerSummary {
            name: s.explorer.name(),
            steps_per_iteration: s.explorer.steps_per_iteration(),
            leapfrog_steps: match s.explorer {
                ExactExplorer::Mala(_) => None,
                ExactExplorer::Hmc(h) => Some(h.leapfrog_steps),
            },
            target_acceptance: s.explorer.target_acceptance(),
            step_size_range: out.step_size_range(),
        },
        fixed_leg: FixedLegSummary::of(out, &pooled),
        pooled,
        closed_form,
        warnings,
    }
}

/// Runs the command's gaussian-path branch.
pub fn run(
    config: &RunConfig,
    policy: &OutPolicy,
    strict: bool,
    json: bool,
    quiet: bool,
) -> Result<()> {
    exact::check(&settings(config)?)?;
    let out_dir = OutDir::prepare(&config.out, policy)?;
    let Computed {
        settings: s,
        outcome: out,
        summary,
        seconds,
    } = compute(config, quiet)?;
    write_outputs(out_dir.path(), &s, &out, &summary)?;
    let folder = out_dir.commit()?;
    super::after_commit(&folder, || report(&summary, seconds, strict, json))
}

/// Prints the warnings and the results of a run whose outputs are written.
fn report(summary: &ExactSummary, seconds: f64, strict: bool, json: bool) -> Result<()> {
    super::warnings::report_summary(summary, &summary.warnings, seconds, (strict, json), || {
        Ok(print_text(summary, seconds)?)
    })
}

fn print_text(s: &ExactSummary, seconds: f64) -> Result<(), StdoutError> {
    let p = &s.pooled;
    let cf = &s.closed_form;
    say!(
        "exact tempering, Gaussian path N(0, I_{d}) → N(0, I_{d}/10): {} ensembles × {} chains × {} iterations in {seconds:.2} s",
        s.config.ensembles,
        s.chains,
        s.iterations_run,
        d = s.dim
    )?;
    if s.config.reference != ReferenceKind::Fixed {
        say!(
            "reference: {}, a mean-field Gaussian fitted to the target level after every round (the closed forms are those of the path from N(0, I_{}); log Z is the same)",
            s.config.reference.name(),
            s.dim
        )?;
    }
    let pilots = s.pilots.len();
    for (i, pilot) in s.pilots.iter().enumerate() {
        let last = i + 1 == pilots;
        say!(
            "pilot {}/{pilots}: {} chains × {} iterations in {:.2} s, Λ̂ = {:.3}, Gaussian-swap corrected {}, mean rejection {:.3}{}",
            i + 1,
            pilot.chains,
            pilot.iterations,
            pilot.seconds,
            pilot.lambda,
            pilot
                .barrier_gaussian_corrected
                .map_or("undefined".into(), |c| format!("{c:.3}")),
            pilot.mean_rejection,
            if !s.config.auto_chains {
                String::new()
            } else if !last {
                " > 0.5: too coarse, a larger pilot follows".into()
            } else {
                format!(
                    " → {} chains (P − 1 ≈ 2Λ̂, the most round trips per chain-iteration)",
                    s.chains
                )
            }
        )?;
    }
    say!(
        "window {}{}",
        if s.window == 0 {
            "SEO".to_string()
        } else {
            s.window.to_string()
        },
        s.window_swap_rate
            .map(|r| format!(" (for the equal-rejection swap rate S = {r:.3})"))
            .unwrap_or_default()
    )?;
    let x = &s.explorer;
    say!(
        "explorer {}: {}{} per level and iteration, step sizes {:.3e} to {:.3e}, acceptance {:.3} (target {})",
        x.name,
        x.steps_per_iteration,
        match (x.leapfrog_steps, x.steps_per_iteration) {
            (Some(l), 1) => format!(" trajectory of {l} leapfrog steps"),
            (Some(l), _) => format!(" trajectories of {l} leapfrog steps"),
            (None, 1) => " step".into(),
            (None, _) => " steps".into(),
        },
        x.step_size_range.0,
        x.step_size_range.1,
        p.explorer_acceptance,
        x.target_acceptance
    )?;
    say!(
        "barrier Λ̂ = {:.4} ± {:.4} (batch means; sd over ensembles {:.4}), Gaussian-swap corrected {} (closed form {}{:.4}); pair rejections {:.3} to {:.3}",
        p.lambda,
        p.lambda_se,
        p.lambda_sd,
        p.barrier_gaussian_corrected.map_or(
            "undefined (a pair rejected every swap)".into(),
            |c| format!("{c:.4}")
        ),
        if s.config.reference != ReferenceKind::Fixed {
            "from the fixed reference "
        } else {
            ""
        },
        cf.lambda,
        p.rejection_range.0,
        p.rejection_range.1
    )?;
    say!(
        "log Z = {:.4} ± {:.4} (closed form {:.4}; error from {}): mean of the forward {:.4} ± {:.4} and reverse {:.4} ± {:.4} stepping stones",
        p.log_z,
        p.log_z_se,
        cf.log_z,
        p.log_z_se_source.describe(),
        p.log_z_forward,
        p.log_z_forward_se,
        p.log_z_reverse,
        p.log_z_reverse_se
    )?;
    say!(
        "round trips per 1000 iterations: {:.1} measured, {:.1} predicted from the rejections{}, limit {:.1} = 1000/(2 + 2Λ̂)",
        p.round_trips_per_1000,
        p.predicted_round_trips_per_1000,
        p.lemma1_round_trips_per_1000
            .filter(|_| s.window > 1)
            .map(|l| format!(" ({l:.1} by Lemma 1 with W = {})", s.window))
            .unwrap_or_default(),
        p.limit_round_trips_per_1000
    )?;
    if let Some(leg) = &s.fixed_leg {
        leg.say(s.chains, "")?;
    }
    if let (Some(c), Some(n)) = (
        s.recommended_chains.cost_optimal,
        s.recommended_chains.near_limit_5_percent,
    ) {
        if s.recommended_chains.lower_bound {
            say!(
                "chains for this Λ̂: at least {c} (most round trips per chain-iteration) and at least {n} (within 5 % of the limit): Λ̂ only bounds the barrier from below with {} chains",
                s.chains
            )?;
        } else {
            say!(
                "chains for this Λ̂: {c} (most round trips per chain-iteration), {n} (within 5 % of the limit, for chains in parallel)"
            )?;
        }
    }
    say!("wrote {}", s.config.out.display())
}

fn write_outputs(
    dir: &Path,
    s: &ExactSettings,
    out: &ExactOutcome,
    summary: &ExactSummary,
) -> Result<()> {
    write_json(&dir.join("summary.json"), summary)?;
    let path = GaussianPath::standard(s.dim)?;
    let closed = |b: f64| (path.local_barrier(b), path.cumulative_barrier(b));
    let title = format!(
        "Local communication barrier λ(β), Gaussian path, D = {} (Λ̂ = {:.3}, Λ = {:.3})",
        s.dim, summary.pooled.lambda, summary.closed_form.lambda
    );
    write_profile(dir, s.reference, out, Some(&closed), &title)
}

/// The tables of an exact run (`lambda.csv`, `grid.csv`, `rounds.csv`, and the fixed
/// leg's on the stabilized ladder) and the figure `lambda.{png,svg}`: λ̂(β) of each leg
/// (mean over ensembles), beside the closed form of the fixed reference's path when
/// `closed` gives it.
pub(crate) fn write_profile(
    dir: &Path,
    reference: ReferenceKind,
    out: &ExactOutcome,
    closed: Option<&dyn Fn(f64) -> (f64, f64)>,
    title: &str,
) -> Result<()> {
    let profile = exact::tables::write(dir, out, closed)?;
    let estimated: Vec<(f64, f64)> = profile.iter().map(|&(b, l, _)| (b, l)).collect();
    let closed: Option<Vec<(f64, f64)>> =
        closed.map(|f| profile.iter().map(|&(b, _, _)| (b, f(b).0)).collect());
    let betas: Vec<f64> = profile.iter().map(|p| p.0).collect();
    let fixed_leg: Option<Vec<(f64, f64)>> = out.fixed_leg.as_deref().map(|leg| {
        leg.profile(&betas)
            .iter()
            .map(|&(b, l, _)| (b, l))
            .collect()
    });
    let (name, closed_name) = match reference {
        ReferenceKind::Fixed => ("estimated (mean over ensembles)", "closed form"),
        ReferenceKind::Variational => (
            "estimated from the variational reference",
            "closed form from the fixed reference",
        ),
        ReferenceKind::Stabilized => ("estimated, variational leg", "closed form, fixed reference"),
    };
    let mut series = vec![Series {
        name,
        points: &estimated,
        style: Style::Line,
    }];
    if let Some(points) = &closed {
        series.push(Series {
            name: closed_name,
            points,
            style: Style::Dashed,
        });
    }
    if let Some(points) = &fixed_leg {
        series.push(Series {
            name: "estimated, fixed leg",
            points,
            style: Style::Line,
        });
    }
    figures::lines(
        &dir.join("lambda"),
        &LineChart {
            title,
            x_label: "inverse temperature β",
            y_label: "λ(β)",
            x_log: false,
            y_log: false,
            series: &series,
            hlines: &[],
            vlines: &[],
        },
    )?;
    Ok(())
}

/// Whether a configuration runs this branch.
pub fn applies(c: &RunConfig) -> bool {
    !c.target.sgd()
}
