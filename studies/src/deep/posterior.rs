//! A classifier's posterior as an annealing path for nrpt-core's exact samplers: from
//! its Gaussian prior, which is drawn exactly, to its posterior on the whole training
//! set, with exact (full-batch) gradients in `f64`.
//!
//! For parameters θ ∈ R^D of the network [F, hidden…, C] (layout of
//! [`nrpt_core::model::Architecture`]) and N training examples (x_i, y_i):
//!
//! ```text
//! π₀(θ) = N(θ; 0, σ² I_D),  log π₀(θ) = −|θ|²/(2σ²) − (D/2) log(2πσ²),
//! ℓ(θ) = Σ_i log p(y_i | x_i, θ) = −Σ_i [logsumexp(s_i) − s_{i,y_i}],   s_i = f_θ(x_i),
//! π_β ∝ π₀ e^{βℓ}:  β = 1 is the posterior, whose energy −log π₁ is the SGD
//! methods' Ũ with B = N plus a constant.
//! ```
//!
//! π₀ is normalized, so the stepping stone of exact tempering on this path estimates
//! log Z(1) = log ∫ π₀ e^ℓ, the model's log evidence.
//!
//! The forward pass is one matrix product per layer over all N examples, the backward
//! pass two (Aᵀδ for the weights, δWᵀ for the inputs), through
//! `targets::classifier::matmul::product` in `f64`; the tests check both against
//! nrpt-core's one-example-at-a-time reference ([`nrpt_core::model::mlp`]).
//!
//! [`run_exact`] runs exact tempering on this path (`nrpt run --target classifier
//! --exact`) and [`predictive`] scores the target level's samples on the test set.

use nrpt_core::exact::AnnealingPath;
use nrpt_core::model::Architecture;
use nrpt_core::rng::{Rng, fill_normals};

use serde::Serialize;

use super::fidelity::example_scores;
use crate::exact::{self, ClosedForm, ExactOutcome, ExactSettings};
use nrpt_sampling::engine::OnProgress;
use nrpt_sampling::interrupt::Stopped;
use nrpt_sampling::targets::classifier::ClassifierTarget;
use nrpt_sampling::targets::classifier::matmul::{Operand, product};

/// The posterior path of a classifier target (see the [module docs](self)), with its
/// workspace. The training features are copied once into `f64`.
#[derive(Clone, Debug)]
pub struct ClassifierPath {
    arch: Architecture,
    sigma: f64,
    x: Vec<f64>,
    y: Vec<u32>,
    /// Every layer's outputs over the last input (rows × out_l).
    layers: Vec<Vec<f64>>,
    delta: Vec<f64>,
    below: Vec<f64>,
    /// Examples the buffers are sized for.
    rows: usize,
}

impl ClassifierPath {
    /// The path of `target`'s model on its training set.
    pub fn new(target: &ClassifierTarget) -> Self {
        let train = &target.data.train;
        ClassifierPath {
            arch: target.arch,
            sigma: target.prior_sigma,
            x: train.x.iter().map(|&v| f64::from(v)).collect(),
            y: train.y.clone(),
            layers: Vec::new(),
            delta: Vec::new(),
            below: Vec::new(),
            rows: 0,
        }
    }

    /// Sizes the buffers for `rows` examples.
    fn reserve(&mut self, rows: usize) {
        if self.rows == rows {
            return;
        }
        self.layers = self
            .arch
            .iter()
            .map(|l| vec![0.0; rows * l.outputs])
            .collect();
        let widest = self.arch.widest();
        self.delta = vec![0.0; rows * widest];
        self.below = vec![0.0; rows * widest];
        self.rows = rows;
    }

    /// The forward pass of θ over `x` (`rows` examples): every layer's outputs.
    fn forward(&mut self, theta: &[f64], x: &[f64], rows: usize) {
        self.reserve(rows);
        let last = self.arch.layers() - 1;
        for (l, layer) in self.arch.iter().enumerate() {
            let (before, rest) = self.layers.split_at_mut(l);
            let out = &mut rest[0];
            let input = if l == 0 { x } else { &before[l - 1][..] };
            let w = &theta[layer.weights..layer.biases];
            let bias = &theta[layer.biases..layer.biases + layer.outputs];
            for row in out.chunks_exact_mut(layer.outputs) {
                row.copy_from_slice(bias);
            }
            product(
                out,
                layer.outputs,
                Operand::new(input, rows, layer.inputs),
                Operand::new(w, layer.inputs, layer.outputs),
                true,
                1,
            );
            if l < last {
                for v in out.iter_mut() {
                    *v = v.max(0.0);
                }
            }
        }
    }

    /// ℓ(θ) on the training set, and its gradient into `grad` when given.
    fn likelihood(&mut self, theta: &[f64], grad: Option<&mut [f64]>) -> f64 {
        let rows = self.y.len();
        let x = std::mem::take(&mut self.x);
        self.forward(theta, &x, rows);
        let c = self.arch.classes();
        let scores = &self.layers[self.arch.layers() - 1];
        let mut ll = 0.0;
        let want = grad.is_some();
        for (e, (s, &y)) in scores.chunks_exact(c).zip(&self.y).enumerate() {
            let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lse = m + s.iter().map(|&v| (v - m).exp()).sum::<f64>().ln();
            ll -= lse - s[y as usize];
            if want {
                // δ of the energy −ℓ at the scores: softmax − e_y.
                for (j, (dj, &v)) in self.delta[e * c..(e + 1) * c].iter_mut().zip(s).enumerate() {
                    let p = (v - lse).exp();
                    *dj = if j == y as usize { p - 1.0 } else { p };
                }
            }
        }
        if let Some(g) = grad {
            self.backward(theta, &x, rows, g);
            // ∇ℓ = −∇(energy).
            for v in g.iter_mut() {
                *v = -*v;
            }
        }
        self.x = x;
        ll
    }

    /// The gradient of Σ_i loss_i from δ at the scores (set by [`Self::likelihood`]).
    fn backward(&mut self, theta: &[f64], x: &[f64], rows: usize, grad: &mut [f64]) {
        let mut delta = std::mem::take(&mut self.delta);
        let mut below = std::mem::take(&mut self.below);
        for l in (0..self.arch.layers()).rev() {
            let Some(layer) = self.arch.layer(l) else {
                break;
            };
            let (i_n, o_n) = (layer.inputs, layer.outputs);
            let input = if l == 0 { x } else { &self.layers[l - 1][..] };
            let d = &delta[..rows * o_n];
            product(
                &mut grad[layer.weights..layer.biases],
                o_n,
                Operand::new(input, rows, i_n).t(),
                Operand::new(d, rows, o_n),
                false,
                1,
            );
            let gb = &mut grad[layer.biases..layer.biases + o_n];
            gb.fill(0.0);
            for row in d.chunks_exact(o_n) {
                for (g, &v) in gb.iter_mut().zip(row) {
                    *g += v;
                }
            }
            if l > 0 {
                let w = &theta[layer.weights..layer.biases];
                let out = &mut below[..rows * i_n];
                product(
                    out,
                    i_n,
                    Operand::new(d, rows, o_n),
                    Operand::new(w, i_n, o_n).t(),
                    false,
                    1,
                );
                for (v, &a) in out.iter_mut().zip(input) {
                    if a <= 0.0 {
                        *v = 0.0;
                    }
                }
                std::mem::swap(&mut delta, &mut below);
            }
        }
        self.delta = delta;
        self.below = below;
    }

    /// The class probabilities of θ on every example of `x` (n × F, `f32` as the data
    /// holds it), written into `probs` (n × C).
    pub fn probabilities(&mut self, theta: &[f64], x: &[f32], probs: &mut [f64]) {
        let f = self.arch.features();
        let c = self.arch.classes();
        let rows = x.len() / f.max(1);
        let wide: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        self.forward(theta, &wide, rows);
        let scores = &self.layers[self.arch.layers() - 1];
        for (s, p) in scores.chunks_exact(c).zip(probs.chunks_exact_mut(c)) {
            let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut sum = 0.0;
            for (pj, &v) in p.iter_mut().zip(s) {
                *pj = (v - m).exp();
                sum += *pj;
            }
            for pj in p.iter_mut() {
                *pj /= sum;
            }
        }
    }
}

/// Every full-batch evaluation of ℓ first looks at the stop request (Ctrl-C, SIGTERM:
/// [`nrpt_sampling::interrupt`]) and answers [`Stopped`] once it came: one evaluation is a pass
/// over the whole training set, so a long HMC trajectory (the reference's, or exact
/// tempering's) stops within one pass.
impl AnnealingPath for ClassifierPath {
    type Error = Stopped;

    fn dim(&self) -> usize {
        self.arch.parameters()
    }

    fn log_reference(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Stopped> {
        let inv = 1.0 / (self.sigma * self.sigma);
        let mut sq = 0.0;
        for (g, &v) in grad.iter_mut().zip(x) {
            *g = -v * inv;
            sq += v * v;
        }
        let d = x.len() as f64;
        Ok(-0.5 * sq * inv - 0.5 * d * (2.0 * std::f64::consts::PI * self.sigma * self.sigma).ln())
    }

    fn log_likelihood_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Stopped> {
        nrpt_sampling::interrupt::check()?;
        Ok(self.likelihood(x, Some(grad)))
    }

    fn log_likelihood(&mut self, x: &[f64]) -> Result<f64, Stopped> {
        nrpt_sampling::interrupt::check()?;
        Ok(self.likelihood(x, None))
    }

    fn sample_reference<R: Rng + ?Sized>(
        &mut self,
        x: &mut [f64],
        rng: &mut R,
    ) -> Result<(), Stopped> {
        fill_normals(rng, x);
        for v in x.iter_mut() {
            *v *= self.sigma;
        }
        Ok(())
    }
}

/// Target-level states kept per ensemble for the posterior predictive (evenly spaced
/// over the measurement round).
pub const KEPT_SAMPLES: usize = 100;

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

/// Exact tempering of `target`'s posterior on this path with the settings `s` (one path
/// per ensemble and pilot, of dimension `s.dim`), keeping [`KEPT_SAMPLES`] target-level
/// states of each ensemble for the [`predictive`]; the path has no closed forms, NaN in
/// the outcome. `progress` hears of the iterations done and may stop the run.
///
/// # Errors
///
/// As [`exact::run_path`].
pub fn run_exact(
    target: &ClassifierTarget,
    s: &ExactSettings,
    progress: OnProgress<'_>,
) -> crate::error::Result<ExactOutcome> {
    let none = ClosedForm {
        lambda: f64::NAN,
        log_z: f64::NAN,
        limit_round_trip_rate: f64::NAN,
    };
    exact::run_path(
        s,
        none,
        &|| Ok(ClassifierPath::new(target)),
        KEPT_SAMPLES,
        progress,
    )
}

/// The posterior predictive of every ensemble's kept samples on the test set.
pub fn predictive(target: &ClassifierTarget, out: &ExactOutcome) -> Predictive {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use nrpt_core::model::{DataView, mlp};
    use nrpt_core::rng::{PhiloxStream, streams};

    use nrpt_core::exact::{ExactExplorer, HmcOptions};

    use super::*;
    use crate::exact::Chains;
    use nrpt_sampling::config::WindowSpec;
    use nrpt_sampling::targets::classifier::initial_parameters;

    fn target(sizes: &[usize], sigma: f64) -> ClassifierTarget {
        ClassifierTarget {
            data: Arc::new(nrpt_sampling::data::digits()),
            arch: Architecture::new(sizes).unwrap(),
            batch: 32,
            prior_sigma: sigma,
        }
    }

    fn start(arch: &Architecture) -> Vec<f64> {
        let mut theta = vec![0.0f32; arch.parameters()];
        initial_parameters(arch, 5, 0, 2, &mut theta);
        theta.iter().map(|&v| f64::from(v)).collect()
    }

    /// ℓ and its gradient against nrpt-core's per-example reference in f64 over every
    /// training example (its energy is N/N · Σ loss + |θ|²/(2σ²)): within 1e-10
    /// relative (the same sums in another order).
    #[test]
    fn full_batch_likelihood_matches_the_core_reference() {
        for sizes in [&[64usize, 10][..], &[64, 16, 10][..], &[64, 12, 8, 10][..]] {
            let t = target(sizes, 0.7);
            let arch = t.arch;
            let theta = start(&arch);
            let mut path = ClassifierPath::new(&t);
            let mut g = vec![0.0; theta.len()];
            let ll = path.log_likelihood_gradient(&theta, &mut g).unwrap();
            assert_eq!(ll.to_bits(), path.log_likelihood(&theta).unwrap().to_bits());
            let train = &t.data.train;
            let view = DataView::new(&train.x, &train.y, 64, 10).unwrap();
            let all: Vec<u32> = (0..train.len() as u32).collect();
            let mut want = vec![0.0f64; theta.len()];
            let mut scratch = vec![0.0f64; arch.scratch_len()];
            let sigma = 1e150; // the prior term vanishes
            let energy = mlp::energy(
                &arch,
                &theta,
                &view,
                &all,
                sigma,
                Some(&mut want),
                &mut scratch,
            )
            .unwrap();
            assert!(
                (ll + energy).abs() <= 1e-10 * energy.abs(),
                "{sizes:?}: {ll} vs {energy}"
            );
            let top = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (k, (a, b)) in g.iter().zip(&want).enumerate() {
                assert!(
                    (a + b).abs() <= 1e-10 * top,
                    "{sizes:?} θ[{k}]: {a} vs {}",
                    -b
                );
            }
        }
    }

    /// The prior: the normalized Gaussian's log density and gradient, and draws with
    /// its variance.
    #[test]
    fn the_reference_is_the_normalized_prior() {
        let t = target(&[64, 10], 0.5);
        let mut path = ClassifierPath::new(&t);
        let d = path.dim();
        let x: Vec<f64> = (0..d).map(|i| (i % 7) as f64 * 0.1 - 0.3).collect();
        let mut g = vec![0.0; d];
        let lp = path.log_reference(&x, &mut g).unwrap();
        let want: f64 = x
            .iter()
            .map(|v| -v * v / (2.0 * 0.25) - 0.5 * (2.0 * std::f64::consts::PI * 0.25).ln())
            .sum();
        assert!((lp - want).abs() < 1e-9 * want.abs());
        assert!(g.iter().zip(&x).all(|(g, x)| (g + x / 0.25).abs() < 1e-15));
        let mut rng = PhiloxStream::new(1, 0, 0, 0, streams::INIT);
        let mut draw = vec![0.0; d];
        path.sample_reference(&mut draw, &mut rng).unwrap();
        // 650 draws of N(0, 0.25): the sample variance within 4 standard errors
        // (s.e. of a variance estimate: σ²√(2/n) ≈ 0.014).
        let var = draw.iter().map(|v| v * v).sum::<f64>() / d as f64;
        assert!(
            (var - 0.25).abs() < 4.0 * 0.25 * (2.0 / d as f64).sqrt(),
            "{var}"
        );
    }

    /// Probabilities are distributions and match the loss of the training pass.
    #[test]
    fn probabilities_match_the_likelihood() {
        let t = target(&[64, 16, 10], 1.0);
        let theta = start(&t.arch);
        let mut path = ClassifierPath::new(&t);
        let train = &t.data.train;
        let mut probs = vec![0.0; train.len() * 10];
        path.probabilities(&theta, &train.x, &mut probs);
        let ll: f64 = probs
            .chunks_exact(10)
            .zip(&train.y)
            .map(|(p, &y)| p[y as usize].ln())
            .sum();
        let want = path.log_likelihood(&theta).unwrap();
        assert!((ll - want).abs() < 1e-9 * want.abs(), "{ll} vs {want}");
        // Again after a test-set pass (other row count).
        let mut test_probs = vec![0.0; t.data.test.len() * 10];
        path.probabilities(&theta, &t.data.test.x, &mut test_probs);
        assert_eq!(
            path.log_likelihood(&theta).unwrap().to_bits(),
            want.to_bits()
        );
    }

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
            reference: nrpt_sampling::config::ReferenceKind::Fixed,
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
