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
//! `targets::classifier::matmul::product` in `f64`; the tests check both against nrpt-core's
//! one-example-at-a-time reference ([`nrpt_core::model::mlp`]).

use nrpt_core::exact::AnnealingPath;
use nrpt_core::model::Architecture;
use nrpt_core::rng::{Rng, fill_normals};

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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use nrpt_core::model::{DataView, mlp};
    use nrpt_core::rng::{PhiloxStream, streams};

    use super::*;
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
}
