//! Your own model through nrpt's exact tempering engine: a Bayesian linear regression,
//! tempered from its prior to its posterior, with the log evidence log p(y | X) that
//! the stepping stone estimates printed beside its closed form.
//!
//! Everything here is what a crate of yours would write: implement
//! [`nrpt_core::exact::AnnealingPath`] for the model (the prior π₀, which must be drawn
//! exactly, and the log-likelihood ℓ, each with its gradient), and hand a maker of the
//! path to [`nrpt_studies::exact::run_path`], the engine of `nrpt run --target gaussian-path` and
//! `--target classifier --exact`: ensembles in parallel on every core, MALA or HMC
//! explorers at every β > 0 with adapted step sizes, Metropolis swaps by DEO, rounds of
//! doubling length with the grid re-placed at equal barrier, `--chains auto` from a
//! pilot's barrier, and the pooled estimates (Λ̂, λ̂(β), log Z with its standard error,
//! round trips against their prediction) with the command's warnings. It writes what
//! the command writes, in the same formats: `summary.json` (its own fields here: the
//! command's pooled estimates, the closed form, the warnings), `lambda.csv`, `grid.csv`
//! and `rounds.csv` ([`nrpt_studies::exact::tables`]).
//!
//! The model: `y = X w + e`, `e ~ N(0, σ² I)` with σ known, prior `w ~ N(0, τ² I)`;
//! the data are drawn from the model itself. ℓ(w) = Σᵢ log N(yᵢ; xᵢ·w, σ²), and with the
//! normalized prior the stepping stone estimates log Z = log p(y | X) = log N(y; 0,
//! σ²I + τ²XXᵀ), computed here by the matrix determinant lemma on a d × d Cholesky
//! factor.
//!
//! With `--reference variational` the levels anneal from a mean-field Gaussian fitted to
//! the posterior after every round instead of from the prior: the posterior of a linear
//! regression is Gaussian, so the path from the fitted reference is short, and log Z is
//! the same evidence.
//!
//! The exact engine has no checkpoints: a run interrupted by Ctrl-C stops with an error
//! and starts again from the beginning (nrpt-core's `ExactTempering::progress` and
//! `resume` make a checkpoint possible, see `docs/exact-tempering-your-model.md`).
//!
//! ```sh
//! cargo run --release -p nrpt-host --example own_path -- \
//!     [--chains P|auto] [--ensembles E] [--iterations N] [--explorer mala|hmc] \
//!     [--explorer-steps T] [--reference fixed|variational|stabilized] [--seed S] [--out DIR]
//! ```

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use nrpt::progress::Progress;
use nrpt_core::exact::{AnnealingPath, ExactExplorer, HmcOptions, MalaOptions};
use nrpt_core::rng::{PhiloxStream, Rng, fill_normals};
use nrpt_sampling::config::{ReferenceKind, WindowSpec};
use nrpt_sampling::output::write_json;
use nrpt_studies::exact::{
    AUTO_RULE, Advice, Chains, ClosedForm, ExactOutcome, ExactSettings, PilotSummary, Pooled,
    Recommended, diagnostics, run_path,
};
use serde::Serialize;

/// A Bayesian linear regression: `n` observations of `d` features (row-major `x`).
#[derive(Clone, Debug)]
struct Regression {
    x: Vec<f64>,
    y: Vec<f64>,
    n: usize,
    d: usize,
    /// Noise sd σ (known).
    sigma: f64,
    /// Prior sd τ of every weight.
    tau: f64,
}

impl Regression {
    /// `n` observations of `d` standard normal features, weights drawn from the prior,
    /// noise of sd σ: all from the Philox stream of `seed`.
    fn simulate(n: usize, d: usize, sigma: f64, tau: f64, seed: u32) -> Self {
        let mut rng = PhiloxStream::new(seed, 0, 0, 0, 0);
        let mut x = vec![0.0; n * d];
        fill_normals::<f64, _>(&mut rng, &mut x);
        let mut w = vec![0.0; d];
        fill_normals::<f64, _>(&mut rng, &mut w);
        let mut noise = vec![0.0; n];
        fill_normals::<f64, _>(&mut rng, &mut noise);
        let y = (0..n)
            .map(|i| {
                let row = &x[i * d..(i + 1) * d];
                tau * row.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + sigma * noise[i]
            })
            .collect();
        Regression {
            x,
            y,
            n,
            d,
            sigma,
            tau,
        }
    }

    /// The residuals y − Xw.
    fn residuals<'a>(&'a self, w: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
        (0..self.n).map(move |i| {
            let row = &self.x[i * self.d..(i + 1) * self.d];
            self.y[i] - row.iter().zip(w).map(|(a, b)| a * b).sum::<f64>()
        })
    }

    /// −(n/2) log(2πσ²): the constant of ℓ.
    fn log_norm(&self) -> f64 {
        -0.5 * self.n as f64 * (2.0 * std::f64::consts::PI * self.sigma * self.sigma).ln()
    }

    /// log p(y | X) = log N(y; 0, σ²I + τ²XXᵀ), by the matrix determinant lemma and
    /// Woodbury with A = I/τ² + XᵀX/σ² and b = Xᵀy/σ²:
    /// −(n/2) log(2πσ²) − d log τ − ½ log det A − ½ (yᵀy/σ² − bᵀA⁻¹b).
    fn log_evidence(&self) -> f64 {
        let (d, s2) = (self.d, self.sigma * self.sigma);
        let mut a = vec![0.0; d * d];
        let mut b = vec![0.0; d];
        for i in 0..self.n {
            let row = &self.x[i * d..(i + 1) * d];
            for j in 0..d {
                b[j] += row[j] * self.y[i] / s2;
                for k in 0..d {
                    a[j * d + k] += row[j] * row[k] / s2;
                }
            }
        }
        for j in 0..d {
            a[j * d + j] += 1.0 / (self.tau * self.tau);
        }
        // Cholesky A = LLᵀ (A is symmetric positive definite), then z = L⁻¹b.
        let mut l = vec![0.0; d * d];
        for j in 0..d {
            for k in 0..=j {
                let s: f64 = (0..k).map(|m| l[j * d + m] * l[k * d + m]).sum();
                l[j * d + k] = if j == k {
                    (a[j * d + j] - s).sqrt()
                } else {
                    (a[j * d + k] - s) / l[k * d + k]
                };
            }
        }
        let mut z = vec![0.0; d];
        for j in 0..d {
            let s: f64 = (0..j).map(|m| l[j * d + m] * z[m]).sum();
            z[j] = (b[j] - s) / l[j * d + j];
        }
        let log_det_a: f64 = (0..d).map(|j| 2.0 * l[j * d + j].ln()).sum();
        let yy: f64 = self.y.iter().map(|v| v * v).sum::<f64>() / s2;
        let bab: f64 = z.iter().map(|v| v * v).sum();
        self.log_norm() - d as f64 * self.tau.ln() - 0.5 * log_det_a - 0.5 * (yy - bab)
    }
}

/// The path from the prior N(0, τ²I) to the posterior: π_β ∝ π₀ e^{βℓ}.
impl AnnealingPath for Regression {
    // Every evaluation succeeds (a model reading data from a network would say why not).
    type Error = Infallible;

    fn dim(&self) -> usize {
        self.d
    }

    fn log_reference(&mut self, w: &[f64], grad: &mut [f64]) -> Result<f64, Infallible> {
        let t2 = self.tau * self.tau;
        let mut sq = 0.0;
        for (g, &v) in grad.iter_mut().zip(w) {
            *g = -v / t2;
            sq += v * v;
        }
        let d = self.d as f64;
        Ok(-0.5 * sq / t2 - 0.5 * d * (2.0 * std::f64::consts::PI * t2).ln())
    }

    fn log_likelihood_gradient(&mut self, w: &[f64], grad: &mut [f64]) -> Result<f64, Infallible> {
        let (d, s2) = (self.d, self.sigma * self.sigma);
        grad.fill(0.0);
        let mut sq = 0.0;
        for (i, r) in self.residuals(w).enumerate() {
            sq += r * r;
            for (g, a) in grad.iter_mut().zip(&self.x[i * d..(i + 1) * d]) {
                *g += a * r / s2;
            }
        }
        Ok(-0.5 * sq / s2 + self.log_norm())
    }

    fn log_likelihood(&mut self, w: &[f64]) -> Result<f64, Infallible> {
        let sq: f64 = self.residuals(w).map(|r| r * r).sum();
        Ok(-0.5 * sq / (self.sigma * self.sigma) + self.log_norm())
    }

    fn sample_reference<R: Rng + ?Sized>(
        &mut self,
        w: &mut [f64],
        rng: &mut R,
    ) -> Result<(), Infallible> {
        fill_normals::<f64, R>(rng, w);
        w.iter_mut().for_each(|v| *v *= self.tau);
        Ok(())
    }
}

/// `summary.json`: the settings, the command's pooled estimates and warnings, and the
/// closed form.
#[derive(Debug, Serialize)]
struct Summary {
    observations: usize,
    dim: usize,
    chains: usize,
    ensembles: usize,
    iterations_run: u64,
    pilots: Vec<PilotSummary>,
    recommended_chains: Recommended,
    #[serde(flatten)]
    pooled: Pooled,
    log_evidence_closed_form: f64,
    warnings: Vec<String>,
}

/// What the example's flags say.
struct Args {
    chains: Chains,
    ensembles: usize,
    iterations: u64,
    explorer: ExactExplorer,
    reference: ReferenceKind,
    seed: u32,
    out: PathBuf,
}

fn flag<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn parse(args: &[String]) -> Args {
    let chains = match flag(args, "--chains", "auto".to_string()).as_str() {
        "auto" => Chains::Auto(AUTO_RULE),
        n => Chains::Fixed(n.parse().unwrap_or(12)),
    };
    let steps: u32 = flag(args, "--explorer-steps", 2);
    let explorer = if flag(args, "--explorer", "mala".to_string()) == "hmc" {
        ExactExplorer::Hmc(HmcOptions {
            steps_per_iteration: steps,
            ..HmcOptions::default()
        })
    } else {
        ExactExplorer::Mala(MalaOptions {
            steps_per_iteration: steps,
            ..MalaOptions::default()
        })
    };
    let reference = match args.iter().position(|a| a == "--reference") {
        None => ReferenceKind::default(),
        Some(i) => {
            let name = args.get(i + 1).map_or("", String::as_str);
            <ReferenceKind as clap::ValueEnum>::from_str(name, false).unwrap_or_else(|_| {
                eprintln!("--reference: fixed, variational or stabilized, got {name:?}");
                std::process::exit(2)
            })
        }
    };
    Args {
        chains,
        ensembles: flag(args, "--ensembles", 4),
        iterations: flag(args, "--iterations", 8_000),
        explorer,
        reference,
        seed: flag(args, "--seed", 1),
        out: flag(args, "--out", PathBuf::from("own-path-out")),
    }
}

/// Runs the regression's exact tempering with `a`, writes the outputs into `a.out` and
/// returns the summary.
fn run(a: &Args, quiet: bool) -> anyhow::Result<Summary> {
    let model = Regression::simulate(40, 5, 0.5, 2.0, 2024);
    let truth = model.log_evidence();
    let settings = ExactSettings {
        dim: model.d,
        chains: a.chains,
        ensembles: a.ensembles,
        iterations: a.iterations,
        // W = 1: with exact swaps a longer window biases the levels and log Z.
        window: WindowSpec::Fixed(1),
        seed: a.seed,
        explorer: a.explorer,
        reference: a.reference,
    };
    let closed_form = ClosedForm {
        lambda: f64::NAN,
        log_z: truth,
        limit_round_trip_rate: f64::NAN,
    };
    let progress = Progress::new("own path", a.iterations * a.ensembles as u64, quiet);
    // One path per ensemble and pilot: each sampler owns its model.
    let out: ExactOutcome = run_path(&settings, closed_form, &|| Ok(model.clone()), 0, &|n| {
        progress.inc(n)
    })?;
    progress.finish();
    let pooled = out.pooled();
    let summary = Summary {
        observations: model.n,
        dim: model.d,
        chains: out.chains,
        ensembles: out.ensembles.len(),
        iterations_run: out.iterations_run,
        pilots: out.pilots.clone(),
        recommended_chains: out.recommended(&pooled),
        warnings: diagnostics(&out, &pooled, Advice::Command(&a.explorer)),
        pooled,
        log_evidence_closed_form: truth,
    };
    write_outputs(&a.out, &out, &summary)?;
    Ok(summary)
}

fn write_outputs(dir: &Path, out: &ExactOutcome, summary: &Summary) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    write_json(&dir.join("summary.json"), summary)?;
    // No closed form of λ(β) for this path: the estimated columns only.
    nrpt_studies::exact::tables::write(dir, out, None)?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    nrpt_sampling::interrupt::install();
    let args: Vec<String> = std::env::args().collect();
    let a = parse(&args);
    let s = run(&a, false)?;
    let p = &s.pooled;
    println!(
        "log evidence: {:.4} ± {:.4} (forward {:.4}, reverse {:.4}); closed form {:.4} \
         ({:+.2} standard errors)",
        p.log_z,
        p.log_z_se,
        p.log_z_forward,
        p.log_z_reverse,
        s.log_evidence_closed_form,
        (p.log_z - s.log_evidence_closed_form) / p.log_z_se
    );
    println!(
        "{} chains, {} ensembles: barrier Λ̂ = {:.3} ± {:.3}, round trips {:.1} per 1000 \
         iterations ({:.1} predicted); wrote {}",
        s.chains,
        s.ensembles,
        p.lambda,
        p.lambda_se,
        p.round_trips_per_1000,
        p.predicted_round_trips_per_1000,
        a.out.display()
    );
    for w in &s.warnings {
        eprintln!("warning: {w}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed form of the evidence against brute force: log N(y; 0, σ²I + τ²XXᵀ) by
    /// a Cholesky factor of the n × n covariance.
    #[test]
    fn the_closed_form_is_the_gaussian_marginal() {
        let m = Regression::simulate(7, 3, 0.7, 1.5, 5);
        let n = m.n;
        let mut c = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let xi = &m.x[i * m.d..(i + 1) * m.d];
                let xj = &m.x[j * m.d..(j + 1) * m.d];
                let dot: f64 = xi.iter().zip(xj).map(|(a, b)| a * b).sum();
                c[i * n + j] = m.tau * m.tau * dot + if i == j { m.sigma * m.sigma } else { 0.0 };
            }
        }
        let mut l = vec![0.0; n * n];
        for j in 0..n {
            for k in 0..=j {
                let s: f64 = (0..k).map(|q| l[j * n + q] * l[k * n + q]).sum();
                l[j * n + k] = if j == k {
                    (c[j * n + j] - s).sqrt()
                } else {
                    (c[j * n + k] - s) / l[k * n + k]
                };
            }
        }
        let mut z = vec![0.0; n];
        for j in 0..n {
            let s: f64 = (0..j).map(|q| l[j * n + q] * z[q]).sum();
            z[j] = (m.y[j] - s) / l[j * n + j];
        }
        let brute = -0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln()
            - (0..n).map(|j| l[j * n + j].ln()).sum::<f64>()
            - 0.5 * z.iter().map(|v| v * v).sum::<f64>();
        assert!(
            (m.log_evidence() - brute).abs() < 1e-10,
            "{} vs {brute}",
            m.log_evidence()
        );
    }

    /// A short run with `reference`, writing into `out`.
    fn short(reference: ReferenceKind, out: PathBuf) -> Args {
        Args {
            chains: Chains::Fixed(10),
            ensembles: 2,
            iterations: 3_000,
            explorer: ExactExplorer::Mala(MalaOptions {
                steps_per_iteration: 2,
                ..MalaOptions::default()
            }),
            reference,
            seed: 3,
            out,
        }
    }

    /// A short run recovers the evidence within 3 standard errors and writes the
    /// command's files. With a variational reference the posterior (Gaussian here) is
    /// nearly the fitted reference: Λ̂ falls below a fifth of the fixed reference's, and
    /// the evidence is still recovered within 3 standard errors.
    #[test]
    fn a_short_run_recovers_the_evidence_with_either_reference() {
        let dir = tempfile::tempdir().unwrap();
        let a = short(ReferenceKind::Fixed, dir.path().join("out"));
        let s = run(&a, true).unwrap();
        let p = &s.pooled;
        assert!(
            (p.log_z - s.log_evidence_closed_form).abs() < 3.0 * p.log_z_se,
            "{} ± {} vs {}",
            p.log_z,
            p.log_z_se,
            s.log_evidence_closed_form
        );
        assert!(p.round_trips_per_1000 > 0.0);
        for file in ["summary.json", "lambda.csv", "grid.csv", "rounds.csv"] {
            assert!(a.out.join(file).is_file(), "{file}");
        }
        let lambda = std::fs::read_to_string(a.out.join("lambda.csv")).unwrap();
        assert!(lambda.starts_with("beta,lambda_estimated,cumulative_estimated\n"));

        let b = short(ReferenceKind::Variational, dir.path().join("variational"));
        let variational = run(&b, true).unwrap();
        let v = &variational.pooled;
        assert!(
            v.lambda < 0.2 * p.lambda,
            "Λ̂ {} against {}",
            v.lambda,
            p.lambda
        );
        assert!(
            (v.log_z - variational.log_evidence_closed_form).abs() < 3.0 * v.log_z_se,
            "{} ± {} vs {}",
            v.log_z,
            v.log_z_se,
            variational.log_evidence_closed_form
        );
    }
}
