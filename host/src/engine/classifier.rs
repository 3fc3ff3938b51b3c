//! Classifiers on data as targets of the CPU engine: the posterior of a softmax
//! regression or MLP's parameters on a training set, seen through mini-batches.
//!
//! nrpt-core defines the model ([`nrpt_core::model`]: the energy, its gradient, the
//! layout of θ, how mini-batches are drawn) and computes it one example at a time.
//! [`Batched`] computes the same thing a mini-batch at a time: the forward pass is one
//! matrix product per layer over the batch's examples, the backward pass two (the
//! weight gradient Aᵀδ and the input gradient δWᵀ), through [`super::matmul`]. It draws
//! the same mini-batches from the same words as nrpt-core's `Classifier`, so the two
//! agree to rounding (sums run in another order), which the tests check.

use std::sync::Arc;

use nrpt_core::model::{Architecture, batch};
use nrpt_core::rng::Rng;
use nrpt_core::target::EnergyOracle;
use serde::Serialize;

use super::matmul::{Operand, product};
use crate::data::Dataset;

/// A classifier target: the data, the network and how it is seen.
#[derive(Clone, Debug)]
pub struct ClassifierTarget {
    /// The training and test sets.
    pub data: Arc<Dataset>,
    /// The network: [F, hidden…, C].
    pub arch: Architecture,
    /// Examples per mini-batch.
    pub batch: usize,
    /// Standard deviation σ of the Gaussian prior on every parameter.
    pub prior_sigma: f64,
}

impl PartialEq for ClassifierTarget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
            && self.arch == other.arch
            && self.batch == other.batch
            && self.prior_sigma == other.prior_sigma
    }
}

impl Serialize for ClassifierTarget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ClassifierTarget", 6)?;
        st.serialize_field("data", &self.data.name)?;
        st.serialize_field("layers", &self.arch.sizes().collect::<Vec<_>>())?;
        st.serialize_field("parameters", &self.arch.parameters())?;
        st.serialize_field("batch", &self.batch)?;
        st.serialize_field("prior_sigma", &self.prior_sigma)?;
        st.serialize_field("train_examples", &self.data.train.len())?;
        st.end()
    }
}

impl ClassifierTarget {
    /// Parameters D (the dimension of a state).
    pub fn dim(&self) -> usize {
        self.arch.parameters()
    }

    /// Training examples N.
    pub fn examples(&self) -> usize {
        self.data.train.len()
    }

    /// Mini-batch iterations per pass over the training set: N / |B|.
    pub fn iterations_per_epoch(&self) -> f64 {
        self.examples() as f64 / self.batch as f64
    }

    /// A batched oracle over this target, with its own workspace.
    pub fn oracle(self: &Arc<Self>) -> Batched {
        Batched::new(Arc::clone(self))
    }

    /// The floating-point operations of one chain-step of the batched oracle: the
    /// gradient pass (forward 2·B·M, backward 4·B·M less the first layer's input
    /// gradient 2·B·F·H₁) and the energy's forward pass (2·B·M), with M = Σ in·out;
    /// biases, activations and the softmax not counted. The NumPy reference counts the
    /// same way.
    pub fn flops_per_chain_step(&self) -> f64 {
        let b = self.batch as f64;
        let m = self.arch.multiply_adds() as f64;
        // No input gradient is needed for the first layer.
        let first = self
            .arch
            .layer(0)
            .map_or(0.0, |l| (l.inputs * l.outputs) as f64);
        2.0 * b * m + (4.0 * b * m - 2.0 * b * first) + 2.0 * b * m
    }
}

/// The activations of a batch through the network.
#[derive(Clone, Debug, Default)]
struct Activations {
    /// The batch's inputs, B × F (gathered rows).
    input: Vec<f32>,
    /// Outputs of every layer, B × out_l (ReLU applied to hidden layers; the last
    /// holds the scores).
    layers: Vec<Vec<f32>>,
}

/// The mini-batch energy and gradient of a [`ClassifierTarget`], computed with matrix
/// products (see the module docs); an [`EnergyOracle`] for nrpt-core's driver.
#[derive(Clone, Debug)]
pub struct Batched {
    target: Arc<ClassifierTarget>,
    indices: Vec<u32>,
    acts: Activations,
    delta: Vec<f32>,
    below: Vec<f32>,
}

impl Batched {
    fn new(target: Arc<ClassifierTarget>) -> Self {
        let b = target.batch;
        let widest = target.arch.widest();
        Batched {
            indices: vec![0; b],
            acts: Activations {
                input: vec![0.0; b * target.arch.features()],
                layers: target
                    .arch
                    .iter()
                    .map(|l| vec![0.0; b * l.outputs])
                    .collect(),
            },
            delta: vec![0.0; b * widest],
            below: vec![0.0; b * widest],
            target,
        }
    }

    /// The target.
    pub fn target(&self) -> &Arc<ClassifierTarget> {
        &self.target
    }

    /// The energy of θ on the examples in `self.indices`, and its gradient when asked.
    fn evaluate(&mut self, theta: &[f32], grad: Option<&mut [f32]>) -> f32 {
        let t = &self.target;
        let (arch, data) = (&t.arch, &t.data.train);
        let (b, f) = (self.indices.len(), arch.features());
        // Indices are drawn below N (batch::draw), so every row exists.
        for (row, &i) in self.acts.input.chunks_exact_mut(f).zip(&self.indices) {
            let i = i as usize;
            row.copy_from_slice(&data.x[i * f..(i + 1) * f]);
        }
        forward(arch, theta, &mut self.acts, b);
        // Loss: −log softmax(s)_y per example; δ at the scores: scale·(softmax − e_y).
        let c = arch.classes();
        let scale = data.len() as f32 / b as f32;
        let scores = &self.acts.layers[arch.layers() - 1];
        let mut loss = 0.0f32;
        let want_grad = grad.is_some();
        for (e, (s, &i)) in scores.chunks_exact(c).zip(&self.indices).enumerate() {
            let y = data.y[i as usize] as usize;
            let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = s.iter().map(|&v| (v - m).exp()).sum();
            let lse = m + sum.ln();
            loss += lse - s[y];
            if want_grad {
                let d = &mut self.delta[e * c..(e + 1) * c];
                for (j, (dj, &v)) in d.iter_mut().zip(s).enumerate() {
                    let p = (v - lse).exp();
                    *dj = scale * if j == y { p - 1.0 } else { p };
                }
            }
        }
        let inv_var = (1.0 / (t.prior_sigma * t.prior_sigma)) as f32;
        let sq = sum_of_squares(theta);
        if let Some(g) = grad {
            backward(
                arch,
                theta,
                &self.acts,
                &mut self.delta,
                &mut self.below,
                b,
                g,
            );
            for (gi, &v) in g.iter_mut().zip(theta) {
                *gi += v * inv_var;
            }
        }
        scale * loss + 0.5 * sq * inv_var
    }
}

/// Σ θ², in 16 partial sums (one sequential sum would chain every addition and run
/// several times slower than the matrix products it sits beside).
fn sum_of_squares(theta: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    let chunks = theta.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v * v;
        }
    }
    acc.iter().sum::<f32>() + rest.iter().map(|v| v * v).sum::<f32>()
}

/// The forward pass of `b` examples (`acts.input` filled): every layer's outputs.
fn forward(arch: &Architecture, theta: &[f32], acts: &mut Activations, b: usize) {
    let last = arch.layers() - 1;
    for (l, layer) in arch.iter().enumerate() {
        let (before, rest) = acts.layers.split_at_mut(l);
        let out = &mut rest[0];
        let input = if l == 0 {
            &acts.input[..]
        } else {
            &before[l - 1][..]
        };
        let w = &theta[layer.weights..layer.biases];
        let bias = &theta[layer.biases..layer.biases + layer.outputs];
        for row in out.chunks_exact_mut(layer.outputs) {
            row.copy_from_slice(bias);
        }
        product(
            out,
            Operand::new(input, b, layer.inputs),
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

/// The backward pass from `delta` (B × C, set by the loss) into `grad` (overwritten).
fn backward(
    arch: &Architecture,
    theta: &[f32],
    acts: &Activations,
    delta: &mut [f32],
    below: &mut [f32],
    b: usize,
    grad: &mut [f32],
) {
    let mut delta = delta;
    let mut below = below;
    for l in (0..arch.layers()).rev() {
        let Some(layer) = arch.layer(l) else { break };
        let (i_n, o_n) = (layer.inputs, layer.outputs);
        let input = if l == 0 {
            &acts.input[..]
        } else {
            &acts.layers[l - 1][..]
        };
        let d = &delta[..b * o_n];
        // ∂W = Aᵀ δ (in × out), ∂b = Σ_examples δ.
        product(
            &mut grad[layer.weights..layer.biases],
            Operand::new(input, b, i_n).t(),
            Operand::new(d, b, o_n),
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
            // δ below = (δ Wᵀ) ⊙ 1[a > 0].
            let w = &theta[layer.weights..layer.biases];
            let out = &mut below[..b * i_n];
            product(
                out,
                Operand::new(d, b, o_n),
                Operand::new(w, i_n, o_n).t(),
                false,
                1,
            );
            // Branch-free, so that it vectorizes.
            for (v, &a) in out.iter_mut().zip(input) {
                *v = if a > 0.0 { *v } else { 0.0 };
            }
            std::mem::swap(&mut delta, &mut below);
        }
    }
}

impl EnergyOracle<f32> for Batched {
    type Error = std::convert::Infallible;

    fn dim(&self) -> usize {
        self.target.dim()
    }

    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[f32],
        grad: &mut [f32],
        rng: &mut R,
    ) -> Result<(), Self::Error> {
        batch::draw(rng, self.target.examples() as u32, &mut self.indices);
        self.evaluate(x, Some(grad));
        Ok(())
    }

    fn energy<R: Rng + ?Sized>(&mut self, x: &[f32], rng: &mut R) -> Result<f32, Self::Error> {
        batch::draw(rng, self.target.examples() as u32, &mut self.indices);
        Ok(self.evaluate(x, None))
    }
}

/// Class probabilities of `theta` on every example of `x` (n × F), written into
/// `probs` (n × C): the forward pass in chunks of `chunk` examples.
pub fn predict(target: &ClassifierTarget, theta: &[f32], x: &[f32], probs: &mut [f32]) {
    let arch = &target.arch;
    let (f, c) = (arch.features(), arch.classes());
    let n = x.len() / f;
    const CHUNK: usize = 256;
    let mut acts = Activations {
        input: Vec::new(),
        layers: arch.iter().map(|l| vec![0.0; CHUNK * l.outputs]).collect(),
    };
    for start in (0..n).step_by(CHUNK) {
        let m = CHUNK.min(n - start);
        acts.input.clear();
        acts.input.extend_from_slice(&x[start * f..(start + m) * f]);
        forward(arch, theta, &mut acts, m);
        let scores = &acts.layers[arch.layers() - 1][..m * c];
        for (s, p) in scores
            .chunks_exact(c)
            .zip(probs[start * c..(start + m) * c].chunks_exact_mut(c))
        {
            let mx = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0;
            for (pj, &v) in p.iter_mut().zip(s) {
                *pj = (v - mx).exp();
                sum += *pj;
            }
            for pj in p.iter_mut() {
                *pj /= sum;
            }
        }
    }
}

/// Initial parameters: W ~ N(0, 1/in) (He-like scaling for ReLU would be 2/in; 1/in
/// keeps the scores of a fresh network small), biases 0, from the INIT stream of
/// (seed, ensemble, replica).
pub fn initial_parameters(
    arch: &Architecture,
    seed: u32,
    ensemble: u32,
    replica: u32,
    out: &mut [f32],
) {
    use nrpt_core::rng::{PhiloxStream, fill_normals, streams};
    let mut rng = PhiloxStream::new(seed, ensemble, 0, replica, streams::INIT);
    out.fill(0.0);
    for layer in arch.iter() {
        let w = &mut out[layer.weights..layer.biases];
        fill_normals(&mut rng, w);
        let s = (1.0 / layer.inputs as f64).sqrt() as f32;
        for v in w.iter_mut() {
            *v *= s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_core::model::{DataView, mlp};
    use nrpt_core::rng::{PhiloxStream, streams};

    fn target(sizes: &[usize], batch: usize) -> Arc<ClassifierTarget> {
        Arc::new(ClassifierTarget {
            data: Arc::new(crate::data::digits()),
            arch: Architecture::new(sizes).unwrap(),
            batch,
            prior_sigma: 1.0,
        })
    }

    /// The batched oracle against nrpt-core's per-example reference on the same
    /// mini-batch: energies within 1e-5 relative, gradients within 1e-4 of the largest
    /// component (f32 sums of 64 examples in another order).
    #[test]
    fn batched_equals_the_core_reference() {
        for sizes in [&[64usize, 10][..], &[64, 32, 10][..], &[64, 16, 8, 10][..]] {
            let t = target(sizes, 48);
            let arch = t.arch;
            let mut theta = vec![0.0f32; arch.parameters()];
            initial_parameters(&arch, 3, 0, 1, &mut theta);
            let mut o = t.oracle();
            let mut g = vec![0.0f32; theta.len()];
            let mut rng = PhiloxStream::new(1, 2, 3, 4, streams::STEP);
            o.gradient(&theta, &mut g, &mut rng).unwrap();
            let train = &t.data.train;
            let view = DataView::new(&train.x, &train.y, t.data.features, t.data.classes).unwrap();
            let mut want = vec![0.0f32; theta.len()];
            let mut scratch = vec![0.0f32; arch.scratch_len()];
            let e_ref = mlp::energy(
                &arch,
                &theta,
                &view,
                &o.indices,
                1.0,
                Some(&mut want),
                &mut scratch,
            )
            .unwrap();
            let e = o.evaluate(&theta, None);
            assert!(
                (e - e_ref).abs() <= 1e-5 * e_ref.abs(),
                "{sizes:?}: {e} vs {e_ref}"
            );
            let top = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            for (k, (a, b)) in g.iter().zip(&want).enumerate() {
                assert!((a - b).abs() <= 1e-4 * top, "{sizes:?} θ[{k}]: {a} vs {b}");
            }
        }
    }

    #[test]
    fn predictions_are_distributions_and_match_the_loss() {
        let t = target(&[64, 20, 10], 32);
        let mut theta = vec![0.0f32; t.arch.parameters()];
        initial_parameters(&t.arch, 1, 0, 0, &mut theta);
        let test = &t.data.test;
        let mut probs = vec![0.0f32; test.len() * 10];
        predict(&t, &theta, &test.x, &mut probs);
        for (i, p) in probs.chunks_exact(10).enumerate() {
            let s: f32 = p.iter().sum();
            assert!((s - 1.0).abs() < 1e-5, "example {i}: {s}");
            let mut acts = vec![0.0f32; t.arch.scratch_len()];
            let x = test.row(i, 64).unwrap();
            let loss = mlp::example_loss(&t.arch, &theta, x, test.y[i], &mut acts);
            let ours = -p[test.y[i] as usize].ln();
            assert!(
                (ours - loss).abs() < 1e-4 * loss.max(1.0),
                "{ours} vs {loss}"
            );
        }
    }
}
