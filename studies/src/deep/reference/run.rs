//! The reference posterior's run: several independent chains of full-batch
//! Hamiltonian Monte Carlo on a classifier's posterior, as Izmailov, Vikram, Hoffman
//! and Wilson do ("What are Bayesian neural network posteriors really like?", ICML
//! 2021) and the NeurIPS 2021 approximate-inference competition's reference does.
//!
//! # One chain
//!
//! The target is the posterior π(θ) ∝ N(θ; 0, σ²I) · Π_i p(y_i | x_i, θ) over the
//! whole training set: [`ClassifierPath`] at β = 1, its gradient exact (no
//! mini-batches), in `f64`. HMC is nrpt-core's exact explorer
//! ([`nrpt_core::exact::hmc`]): identity mass, leapfrog, a Metropolis test on the
//! total energy.
//!
//! 1. **Start**: the network initialization every SGD method uses (W ~ N(0, 1/in),
//!    biases 0), from its own seed per chain, so chains start apart.
//! 2. **Warm-up** (`warmup` trajectories, discarded): after every trajectory the step
//!    size ε moves by the Robbins–Monro rule on log ε towards `target_acceptance`
//!    ([`nrpt_core::exact::adapt_step`]), with the gain of the trajectory's rank in the
//!    warm-up.
//! 3. **Sampling** (`samples` trajectories): ε frozen at its last warm-up value, every
//!    trajectory's end state kept.
//!
//! A trajectory takes L = ⌈τ/ε⌉ leapfrog steps (at most `max_leapfrog_steps`) for the
//! trajectory length τ (`trajectory_length`; Izmailov et al. take τ = πσ/2, a quarter
//! of the period of the prior's own dynamics, so a trajectory can cross the prior's
//! scale), with the step size jittered by ±10 % per trajectory against periodic
//! orbits.
//!
//! # What is reported
//!
//! The predictive: the mean over every kept sample of every chain of the softmax
//! outputs on the test set. Diagnostics ([`Diagnostics`]), across chains: rank-
//! normalized split R̂ and bulk and tail effective sample sizes of the test
//! log-likelihood Σ_i log p(y_i | x_i, θ) and of every predictive probability
//! p_k(x_i | θ); acceptance, step sizes and leapfrog steps per chain; divergent
//! trajectories (an energy error so large that e^{−ΔH} is 0 in f64, ΔH > 745, or a
//! non-finite value on the way).
//!
//! Randomness: chain c's trajectory k draws from the Philox stream
//! [`EXACT_EXPLORE`](nrpt_core::rng::streams::EXACT_EXPLORE) of (seed, c; k, 0), its
//! start from the INIT stream of (seed, c). Chains run in parallel; results depend on
//! the seed alone.

use std::time::Instant;

use nrpt_core::exact::{ExploreError, HMC_SCRATCH_VECTORS, HmcOptions, adapt_step, hmc_explore};
use nrpt_core::rng::{PhiloxStream, streams};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::super::fidelity::example_scores;
use super::super::posterior::ClassifierPath;
use super::{FORMAT, Meta, ModelKey, Reference};
use nrpt_sampling::engine::memory::{Footprint, PROCESS_BYTES};
use nrpt_sampling::engine::{EngineError, Flow};
use nrpt_sampling::error::{ConfigError, in_range, positive};
use nrpt_sampling::interrupt::Stopped;
use nrpt_sampling::stats::convergence;
use nrpt_sampling::targets::classifier::{ClassifierTarget, initial_parameters};

/// Relative jitter of the step size per trajectory.
pub(crate) const JITTER: f64 = 0.1;

/// The sampler's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HmcSettings {
    /// Independent chains (≥ 2 for R̂).
    pub chains: usize,
    /// Warm-up trajectories per chain (step size adapted, discarded).
    pub warmup: u64,
    /// Kept trajectories per chain.
    pub samples: u64,
    /// Trajectory length τ = L·ε.
    pub trajectory_length: f64,
    /// The most leapfrog steps of a trajectory.
    pub max_leapfrog_steps: u32,
    /// Step size of the first warm-up trajectory.
    pub initial_step: f64,
    /// Acceptance rate the warm-up aims at.
    pub target_acceptance: f64,
    /// κ of the warm-up's gain (n + 1)^(−κ).
    pub decay: f64,
    /// Seed.
    pub seed: u32,
    /// Kept trajectories whose predictives are stored one by one (`draws.npy.gz`,
    /// [`super::draws::pick`]); 0 in a reference written before draws were kept.
    #[serde(default)]
    pub stored_draws: usize,
}

impl Default for HmcSettings {
    fn default() -> Self {
        HmcSettings {
            chains: 4,
            warmup: 250,
            samples: 1250,
            trajectory_length: std::f64::consts::FRAC_PI_2,
            max_leapfrog_steps: 512,
            initial_step: 1e-3,
            target_acceptance: 0.8,
            decay: 0.6,
            seed: 0,
            stored_draws: super::draws::DEFAULT_DRAWS,
        }
    }
}

/// The most chains, trajectories and leapfrog steps accepted.
pub const MAX_CHAINS: usize = 64;
/// See [`MAX_CHAINS`].
pub(crate) const MAX_TRAJECTORIES: u64 = 1_000_000;
/// See [`MAX_CHAINS`].
pub(crate) const MAX_LEAPFROG: u32 = 100_000;

impl HmcSettings {
    /// Checks every field; errors name the flag.
    pub fn check(&self) -> Result<(), ConfigError> {
        in_range("chains", self.chains, 2, MAX_CHAINS)?;
        in_range("warmup", self.warmup, 1, MAX_TRAJECTORIES)?;
        in_range("samples", self.samples, 4, MAX_TRAJECTORIES)?;
        positive("trajectory_length", self.trajectory_length)?;
        in_range(
            "max_leapfrog_steps",
            self.max_leapfrog_steps,
            1,
            MAX_LEAPFROG,
        )?;
        positive("initial_step", self.initial_step)?;
        if !(self.target_acceptance > 0.0 && self.target_acceptance < 1.0) {
            return Err(ConfigError::new(
                "target_acceptance",
                format!(
                    "must lie strictly between 0 and 1, got {}",
                    self.target_acceptance
                ),
            ));
        }
        if !(self.decay > 0.5 && self.decay <= 1.0) {
            return Err(ConfigError::new(
                "decay",
                format!("must lie in (0.5, 1], got {}", self.decay),
            ));
        }
        Ok(())
    }
}

/// R̂ and effective sample sizes of one scalar quantity across chains.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantity {
    /// Rank-normalized split R̂ (the larger of bulk and tail).
    pub rhat: f64,
    /// Bulk effective sample size.
    pub ess_bulk: f64,
    /// Tail effective sample size.
    pub ess_tail: f64,
}

/// How well the chains agree, and how the sampler behaved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// Of the test log-likelihood Σ_i log p(y_i | x_i, θ).
    pub test_log_likelihood: Quantity,
    /// Predictive probabilities p_k(x_i | θ) with a defined R̂ (not constant).
    pub predictive_quantities: usize,
    /// The largest R̂ among them.
    pub predictive_rhat_max: f64,
    /// Their median R̂.
    pub predictive_rhat_median: f64,
    /// The share of them with R̂ above 1.1.
    pub predictive_rhat_above_1_1: f64,
    /// The smallest bulk ESS among them.
    pub predictive_ess_bulk_min: f64,
    /// Their median bulk ESS.
    pub predictive_ess_bulk_median: f64,
    /// Mean acceptance probability of the kept trajectories, per chain.
    pub acceptance: Vec<f64>,
    /// The frozen step size, per chain.
    pub step_size: Vec<f64>,
    /// Leapfrog steps of a kept trajectory, per chain.
    pub leapfrog_steps: Vec<u32>,
    /// Kept trajectories that diverged, all chains: a non-finite value on the way, or
    /// an acceptance probability of 0 in f64 (ΔH > 745).
    pub divergent: u64,
    /// Gradient evaluations, all chains.
    pub gradient_evaluations: u64,
    /// Whether every R̂ reported is below 1.1.
    pub converged: bool,
}

/// One chain's run.
struct Chain {
    /// Per kept sample: the test log-likelihood.
    test_ll: Vec<f64>,
    /// Per kept sample: the predictive (test examples × classes), f32.
    probs: Vec<f32>,
    /// Sum over kept samples of the predictive.
    sum: Vec<f64>,
    acceptance: f64,
    step: f64,
    leapfrog: u32,
    divergent: u64,
    gradients: u64,
}

/// What `nrpt reference` computes.
pub struct ReferenceRun {
    /// The reference.
    pub reference: Reference,
    /// Per chain, per kept sample: the test log-likelihood (for the trace figure).
    pub test_log_likelihood: Vec<Vec<f64>>,
}

/// Leapfrog steps of a trajectory of length `tau` at step size `step`.
fn leapfrog_steps(tau: f64, step: f64, max: u32) -> u32 {
    let l = (tau / step).ceil();
    if l.is_finite() && l >= 1.0 {
        (l.min(f64::from(max))) as u32
    } else {
        max
    }
}

/// Runs one chain; `tick()` after every trajectory says whether to go on.
fn chain(
    target: &ClassifierTarget,
    s: &HmcSettings,
    c: usize,
    tick: &(dyn Fn() -> Flow + Sync),
) -> Result<Chain, crate::error::StudyError> {
    let data = &target.data;
    let (n, classes) = (data.test.len(), data.classes);
    let mut path = ClassifierPath::new(target);
    let d = target.dim();
    let mut start = vec![0.0f32; d];
    initial_parameters(&target.arch, s.seed, c as u32, 0, &mut start);
    let mut x: Vec<f64> = start.iter().map(|&v| f64::from(v)).collect();
    let mut scratch = vec![0.0; HMC_SCRATCH_VECTORS * d];
    let mut step = s.initial_step;
    let mut out = Chain {
        test_ll: Vec::with_capacity(s.samples as usize),
        probs: Vec::with_capacity(s.samples as usize * n * classes),
        sum: vec![0.0; n * classes],
        acceptance: 0.0,
        step: 0.0,
        leapfrog: 0,
        divergent: 0,
        gradients: 0,
    };
    let mut probs = vec![0.0f64; n * classes];
    for k in 0..s.warmup + s.samples {
        let options = HmcOptions {
            initial_step: step,
            leapfrog_steps: leapfrog_steps(s.trajectory_length, step, s.max_leapfrog_steps),
            jitter: JITTER,
            target_acceptance: s.target_acceptance,
            steps_per_iteration: 1,
            adapt: false,
            decay: s.decay,
        };
        let mut rng = PhiloxStream::new(s.seed, c as u32, k, 0, streams::EXACT_EXPLORE);
        let o = hmc_explore(
            &mut path,
            1.0,
            step,
            &options,
            &mut x,
            &mut scratch,
            &mut rng,
        )
        .map_err(|e| match e {
            // A stop request during the trajectory (the path polls it at every pass).
            ExploreError::Path(Stopped) => EngineError::Interrupted.into(),
            ExploreError::Input(_) => crate::error::StudyError::failed(format!("chain {c}: {e}")),
        })?;
        out.gradients += o.gradient_evaluations;
        let acceptance = o.mean_acceptance();
        if k < s.warmup {
            step = adapt_step(step, k, acceptance, s.target_acceptance, s.decay);
        } else {
            out.acceptance += acceptance / s.samples as f64;
            out.step = step;
            out.leapfrog = options.leapfrog_steps;
            if o.nonfinite > 0 || o.acceptance_sum == 0.0 {
                out.divergent += 1;
            }
            path.probabilities(&x, &data.test.x, &mut probs);
            let scores = example_scores(&probs, &data.test.y, classes, None);
            out.test_ll.push(-scores.nll.iter().sum::<f64>());
            for (s, &p) in out.sum.iter_mut().zip(&probs) {
                *s += p;
            }
            out.probs.extend(probs.iter().map(|&p| p as f32));
        }
        if tick() == Flow::Stop {
            return Err(EngineError::Interrupted.into());
        }
    }
    Ok(out)
}

/// The convergence figures of one quantity, NaN where undefined.
fn quantity(chains: &[&[f64]]) -> Quantity {
    let or_nan = |r: Result<f64, _>| r.unwrap_or(f64::NAN);
    Quantity {
        rhat: or_nan(convergence::rhat(chains)),
        ess_bulk: or_nan(convergence::ess_bulk(chains)),
        ess_tail: or_nan(convergence::ess_tail(chains)),
    }
}

/// The memory of [`run`] for `target` and `s`, by part: the data, every chain's
/// full-batch pass (its f64 copy of the training features, every layer's outputs and two
/// rows of the widest layer over max(training, test) examples), its HMC vectors, and what
/// it keeps (f32 predictive of every kept sample: chains × samples × test examples ×
/// classes, usually the largest part), then the diagnostics' per-quantity draws (f64,
/// one quantity per worker thread at a time).
pub fn footprint(target: &ClassifierTarget, s: &HmcSettings) -> Footprint {
    let m = |v: &[u64]| v.iter().fold(1u64, |a, &b| a.saturating_mul(b));
    let data = &target.data;
    let (train, test) = (data.train.len() as u64, data.test.len() as u64);
    let (features, classes) = (data.features as u64, data.classes as u64);
    let chains = s.chains as u64;
    let d = target.dim() as u64;
    let rows = train.max(test);
    let outputs: u64 = target.arch.iter().map(|l| l.outputs as u64).sum();
    let widest = target.arch.widest() as u64;
    let mut f = Footprint::default();
    f.add("process", PROCESS_BYTES);
    f.add("data", m(&[train + test, features + 1, 4]));
    let pass = m(&[train, features, 8])
        .saturating_add(m(&[rows, outputs, 8]))
        .saturating_add(m(&[2, rows, widest, 8]))
        .saturating_add(m(&[HMC_SCRATCH_VECTORS as u64 + 2, d, 8]))
        .saturating_add(m(&[2, test, classes, 8]));
    f.add("full-batch passes", m(&[chains, pass]));
    f.add(
        "kept samples",
        m(&[chains, s.samples, m(&[test, classes, 4]).saturating_add(8)]),
    );
    let threads = rayon::current_num_threads() as u64;
    f.add("diagnostics", m(&[threads, chains, s.samples, 8 * 2]));
    f
}

/// The median of finite values (NaN if none).
fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

/// Runs the reference for `target`; `tick()` is called after every trajectory of every
/// chain and stops the run when it says so. `command` is recorded.
pub fn run(
    target: &ClassifierTarget,
    s: &HmcSettings,
    command: &str,
    tick: &(dyn Fn() -> Flow + Sync),
) -> Result<ReferenceRun, crate::error::StudyError> {
    s.check()?;
    nrpt_sampling::engine::memory::check(&footprint(target, s), "--samples or --chains")
        .map_err(|m| ConfigError::new("max_memory", m))?;
    let started = Instant::now();
    let chains: Vec<Chain> = (0..s.chains)
        .into_par_iter()
        .map(|c| chain(target, s, c, tick))
        .collect::<Result<_, _>>()?;
    let data = &target.data;
    let (n, classes) = (data.test.len(), data.classes);
    let total = (s.chains as u64 * s.samples) as f64;
    let mut predictive = vec![0.0; n * classes];
    for c in &chains {
        for (p, &v) in predictive.iter_mut().zip(&c.sum) {
            *p += v / total;
        }
    }
    let lls: Vec<&[f64]> = chains.iter().map(|c| &c.test_ll[..]).collect();
    let test_log_likelihood = quantity(&lls);
    // Every predictive probability across chains.
    let m = s.samples as usize;
    // Thousands of quantities, each over every kept draw: the stop request is polled
    // between two.
    let per_quantity: Vec<(f64, f64)> = (0..n * classes)
        .into_par_iter()
        .map(|q| {
            nrpt_sampling::interrupt::check()?;
            let draws: Vec<Vec<f64>> = chains
                .iter()
                .map(|c| {
                    (0..m)
                        .map(|j| f64::from(c.probs[j * n * classes + q]))
                        .collect()
                })
                .collect();
            let refs: Vec<&[f64]> = draws.iter().map(|v| &v[..]).collect();
            let r = quantity(&refs);
            Ok((r.rhat, r.ess_bulk))
        })
        .collect::<Result<_, EngineError>>()?;
    let rhats: Vec<f64> = per_quantity
        .iter()
        .map(|r| r.0)
        .filter(|r| r.is_finite())
        .collect();
    let esses: Vec<f64> = per_quantity
        .iter()
        .map(|r| r.1)
        .filter(|r| r.is_finite())
        .collect();
    let rhat_max = rhats.iter().copied().fold(f64::NAN, f64::max);
    let above = rhats.iter().filter(|&&r| r > 1.1).count() as f64 / rhats.len().max(1) as f64;
    let picked = super::draws::pick(s.chains, m, s.stored_draws);
    let per_draw = n * classes;
    let mut kept = Vec::with_capacity(picked.len() * per_draw);
    for &(c, j) in &picked {
        kept.extend_from_slice(&chains[c].probs[j * per_draw..(j + 1) * per_draw]);
    }
    let draws = (!picked.is_empty()).then(|| super::Draws::quantize(&kept, per_draw));
    drop(kept);
    let diagnostics = Diagnostics {
        test_log_likelihood,
        predictive_quantities: rhats.len(),
        predictive_rhat_max: rhat_max,
        predictive_rhat_median: median(rhats.clone()),
        predictive_rhat_above_1_1: above,
        predictive_ess_bulk_min: esses.iter().copied().fold(f64::NAN, f64::min),
        predictive_ess_bulk_median: median(esses),
        acceptance: chains.iter().map(|c| c.acceptance).collect(),
        step_size: chains.iter().map(|c| c.step).collect(),
        leapfrog_steps: chains.iter().map(|c| c.leapfrog).collect(),
        divergent: chains.iter().map(|c| c.divergent).sum(),
        gradient_evaluations: chains.iter().map(|c| c.gradients).sum(),
        converged: test_log_likelihood.rhat < 1.1 && rhat_max < 1.1,
    };
    let scores = example_scores(&predictive, &data.test.y, classes, None);
    let nf = n.max(1) as f64;
    let meta = Meta {
        format: FORMAT,
        model: ModelKey::of(target),
        sampler: HmcSettings {
            stored_draws: picked.len(),
            ..*s
        },
        diagnostics,
        accuracy: scores.correct.iter().sum::<f64>() / nf,
        nll: scores.nll.iter().sum::<f64>() / nf,
        seconds: started.elapsed().as_secs_f64(),
        command: command.to_string(),
        machine: nrpt_sampling::machine::describe(),
        date: nrpt_sampling::machine::utc_now(),
        nrpt_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    Ok(ReferenceRun {
        reference: Reference {
            meta,
            predictive,
            source: "this run".to_string(),
            draws,
        },
        test_log_likelihood: chains.into_iter().map(|c| c.test_ll).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leapfrog_steps_cover_the_length() {
        assert_eq!(leapfrog_steps(1.0, 0.1, 100), 10);
        assert_eq!(leapfrog_steps(1.0, 0.3, 100), 4);
        assert_eq!(leapfrog_steps(1.0, 1e-9, 100), 100);
        assert_eq!(leapfrog_steps(1.0, 5.0, 100), 1);
        assert_eq!(leapfrog_steps(1.0, 0.0, 7), 7);
    }

    #[test]
    fn settings_are_checked() {
        assert!(HmcSettings::default().check().is_ok());
        for bad in [
            HmcSettings {
                chains: 1,
                ..HmcSettings::default()
            },
            HmcSettings {
                samples: 0,
                ..HmcSettings::default()
            },
            HmcSettings {
                trajectory_length: f64::NAN,
                ..HmcSettings::default()
            },
            HmcSettings {
                target_acceptance: 1.0,
                ..HmcSettings::default()
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
        assert_eq!(median(vec![3.0, 1.0, f64::NAN, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 2.5);
        assert!(median(vec![]).is_nan());
    }
}
