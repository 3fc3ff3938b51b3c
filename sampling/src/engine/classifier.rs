//! Classifiers on data as targets of the CPU engine: the posterior of a softmax
//! regression or MLP's parameters on a training set, seen through mini-batches.
//!
//! nrpt-core defines the model ([`nrpt_core::model`]: the energy, its gradient, the
//! layout of θ, how mini-batches are drawn) and computes it one example at a time.
//! [`Batched`] computes the same thing a mini-batch at a time: the forward pass is one
//! matrix product per layer over the batch's examples, the backward pass two (the
//! weight gradient Aᵀδ and the input gradient δWᵀ), through `engine::matmul`'s small
//! products, and the softmax is vectorized over each row of scores (with
//! [`nrpt_core::fastmath::exp`] and `ln`). It draws the same mini-batches from the same
//! words as nrpt-core's `Classifier`, so the two agree to rounding (sums run in another
//! order, exp and ln are not libm's), which the tests check.
//!
//! The inputs of every layer are kept in rows with one more column, of ones: the
//! weight gradient's product Aᵀδ then gives the bias gradient 1ᵀδ as its last row,
//! which is where θ keeps the bias, after the weights. Hidden layers' rows are padded
//! to whole vectors of 8 (the tiles read whole vectors); the scores and their δ lie in
//! rows of C, one after the other, which the softmax takes as one flat array.

use std::sync::Arc;

use nrpt_core::model::{Architecture, batch};
use nrpt_core::rng::Rng;
use nrpt_core::target::EnergyOracle;
use serde::Serialize;

pub use super::matmul::Kernel;
use super::matmul::{Epilogue, Operand, padded, small_product};
use super::softmax;
use crate::data::Dataset;
use crate::error::ConfigError;
use crate::interrupt::Stopped;

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
    /// The network [F, `hidden`…, C] on `data` (features F and classes C come from the
    /// data), mini-batches of `batch` examples and a N(0, `prior_sigma`²) prior; the
    /// error names the setting at fault (`hidden`, `batch`, `prior_sigma`).
    pub fn new(
        data: Arc<Dataset>,
        hidden: &[usize],
        batch: usize,
        prior_sigma: f64,
    ) -> Result<Self, ConfigError> {
        let mut sizes = vec![data.features];
        sizes.extend_from_slice(hidden);
        sizes.push(data.classes);
        let arch =
            Architecture::new(&sizes).map_err(|e| ConfigError::new("hidden", e.to_string()))?;
        if batch == 0 || batch > data.train.len() {
            return Err(ConfigError::new(
                "batch",
                format!(
                    "must be between 1 and the {} training examples, got {batch}",
                    data.train.len()
                ),
            ));
        }
        if !(prior_sigma.is_finite() && prior_sigma > 0.0) {
            return Err(ConfigError::new(
                "prior_sigma",
                format!("must be a finite number > 0, got {prior_sigma}"),
            ));
        }
        Ok(ClassifierTarget {
            data,
            arch,
            batch,
            prior_sigma,
        })
    }

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

    /// A batched oracle over this target, with its own workspace, computing with the
    /// fastest kernel of this processor.
    pub fn oracle(self: &Arc<Self>) -> Batched {
        self.oracle_with(Kernel::detect())
    }

    /// A batched oracle whose matrix products run on `kernel` (for comparisons: each
    /// kernel sums in its own order).
    pub fn oracle_with(self: &Arc<Self>, kernel: Kernel) -> Batched {
        Batched::new(Arc::clone(self), kernel)
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
    /// The batch's inputs (gathered rows): B rows of F values and a 1, at stride F + 1.
    input: Vec<f32>,
    /// Outputs of every layer, B rows at the stride of [`stride`]: a hidden layer's
    /// values (ReLU applied) and a 1; the last layer's scores, with the softmax's slack
    /// after them.
    layers: Vec<Vec<f32>>,
}

impl Activations {
    fn new(arch: &Architecture, rows: usize) -> Self {
        let f = arch.features();
        let mut input = vec![0.0; rows * (f + 1)];
        for row in input.chunks_exact_mut(f + 1) {
            row[f] = 1.0;
        }
        let layers = arch
            .iter()
            .enumerate()
            .map(|(l, layer)| {
                let ld = stride(arch, l);
                let mut out = vec![0.0; rows * ld + softmax::SLACK];
                if l + 1 < arch.layers() {
                    for row in out.chunks_exact_mut(ld) {
                        row[layer.outputs] = 1.0;
                    }
                }
                out
            })
            .collect();
        Activations { input, layers }
    }

    /// Layer l's inputs and their row stride (its values, then the column of ones).
    fn input_of(&self, arch: &Architecture, l: usize) -> (&[f32], usize) {
        if l == 0 {
            (&self.input, arch.features() + 1)
        } else {
            (&self.layers[l - 1], stride(arch, l - 1))
        }
    }
}

/// The row stride of layer l's outputs: for a hidden layer, its values and the column
/// of ones rounded up to whole vectors (the tiles read δ's rows, which share the
/// stride, as their right operand, to whole vectors); the classes themselves for the
/// scores (the softmax reads them as one flat array).
fn stride(arch: &Architecture, l: usize) -> usize {
    let out = arch.layer(l).map_or(0, |layer| layer.outputs);
    if l + 1 == arch.layers() {
        out
    } else {
        padded(out + 1)
    }
}

/// Weights and biases copied into the layouts the tiles read: a layer's weights in
/// rows padded to whole vectors where θ's own rows cannot be read that far, Wᵀ for the
/// backward pass, and the bias padded to whole vectors.
#[derive(Clone, Debug, Default)]
struct Packed {
    weights: Vec<f32>,
    bias: Vec<f32>,
}

impl Packed {
    fn new(arch: &Architecture) -> Self {
        let weights = arch
            .iter()
            .map(|l| (l.inputs * padded(l.outputs)).max(l.outputs * padded(l.inputs)))
            .max()
            .unwrap_or(0);
        Packed {
            weights: vec![0.0; weights],
            bias: vec![0.0; padded(arch.widest())],
        }
    }
}

/// The mini-batch energy and gradient of a [`ClassifierTarget`], computed with matrix
/// products (see the module docs); an [`EnergyOracle`] for nrpt-core's driver.
#[derive(Clone, Debug)]
pub struct Batched {
    target: Arc<ClassifierTarget>,
    kernel: Kernel,
    indices: Vec<u32>,
    acts: Activations,
    /// δ of the layer being differentiated and of the one below: B rows at the
    /// stride of that layer's outputs.
    delta: Vec<f32>,
    below: Vec<f32>,
    /// The softmax's maxima, sums and factors (one per example), and its spread maxima.
    per_row: Vec<f32>,
    packed: Packed,
    /// The data term (N/B)·Σ loss of the last evaluation, before the prior: the energy
    /// of the `SharedBatchBeforeStep` rule.
    last_loss: Option<f32>,
}

impl Batched {
    fn new(target: Arc<ClassifierTarget>, kernel: Kernel) -> Self {
        let b = target.batch;
        let arch = &target.arch;
        let widest = padded(arch.widest() + 1);
        Batched {
            kernel,
            indices: vec![0; b],
            acts: Activations::new(arch, b),
            delta: vec![0.0; b * widest + softmax::SLACK],
            below: vec![0.0; b * widest + softmax::SLACK],
            per_row: vec![0.0; 3 * b + b * arch.classes() + softmax::SLACK],
            packed: Packed::new(arch),
            last_loss: None,
            target,
        }
    }

    /// The energy of θ on the examples in `self.indices`, and its gradient when asked.
    fn evaluate(&mut self, theta: &[f32], grad: Option<&mut [f32]>) -> f32 {
        #[cfg(target_arch = "x86_64")]
        if self.kernel.is_tiles() {
            // SAFETY: the tiles kernel exists only where AVX2 and FMA are present.
            return unsafe { evaluate_avx2(self, theta, grad) };
        }
        evaluate(self, theta, grad)
    }
}

/// [`evaluate`] compiled for AVX2: the loops around the products (the logarithms, δ,
/// the prior's terms) in 8-wide vectors; the same operations, so the same bits, as the
/// baseline build.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn evaluate_avx2(o: &mut Batched, theta: &[f32], grad: Option<&mut [f32]>) -> f32 {
    evaluate(o, theta, grad)
}

/// See [`Batched::evaluate`].
#[inline(always)]
fn evaluate(o: &mut Batched, theta: &[f32], grad: Option<&mut [f32]>) -> f32 {
    let t = &o.target;
    let (arch, data) = (&t.arch, &t.data.train);
    let (b, f) = (o.indices.len(), arch.features());
    // Indices are drawn below N (batch::draw), so every row exists.
    for (row, &i) in o.acts.input.chunks_exact_mut(f + 1).zip(&o.indices) {
        let i = i as usize;
        row[..f].copy_from_slice(&data.x[i * f..(i + 1) * f]);
    }
    forward(o.kernel, arch, theta, &mut o.acts, &mut o.packed, b);
    // Loss: −log softmax(s)_y per example; δ at the scores: scale·(softmax − e_y).
    let scale = data.len() as f32 / b as f32;
    let scores = &o.acts.layers[arch.layers() - 1];
    let labels = o.indices.iter().map(|&i| data.y[i as usize] as usize);
    let c = arch.classes();
    let inv_var = (1.0 / (t.prior_sigma * t.prior_sigma)) as f32;
    let (exps, per_row) = (&mut o.delta, &mut o.per_row);
    let loss = match grad {
        None => softmax::loss(o.kernel, scores, c, b, labels, scale, exps, per_row, false),
        Some(g) => {
            let loss = softmax::loss(o.kernel, scores, c, b, labels, scale, exps, per_row, true);
            backward(
                o.kernel,
                arch,
                theta,
                &o.acts,
                &mut o.delta,
                &mut o.below,
                &mut o.packed,
                b,
                g,
            );
            for (gi, &v) in g.iter_mut().zip(theta) {
                *gi += v * inv_var;
            }
            loss
        }
    };
    let data_term = scale * loss;
    o.last_loss = Some(data_term);
    data_term + 0.5 * sum_of_squares(theta) * inv_var
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
fn forward(
    kernel: Kernel,
    arch: &Architecture,
    theta: &[f32],
    acts: &mut Activations,
    packed: &mut Packed,
    b: usize,
) {
    let last = arch.layers() - 1;
    for (l, layer) in arch.iter().enumerate() {
        let (i_n, o_n) = (layer.inputs, layer.outputs);
        let op = padded(o_n);
        let ldc = stride(arch, l);
        let (before, rest) = acts.layers.split_at_mut(l);
        let out = &mut rest[0];
        let input = if l == 0 {
            Operand::strided(&acts.input, b, i_n, i_n + 1)
        } else {
            Operand::strided(&before[l - 1], b, i_n, stride(arch, l - 1))
        };
        // The tiles read W's rows to `op` columns: θ's own rows can be, the last one
        // reading on into the bias, unless that runs past the end of θ.
        let tail = &theta[layer.weights..];
        let w = if tail.len() >= (i_n - 1) * o_n + op {
            Operand::strided(tail, i_n, o_n, o_n)
        } else {
            let w = &mut packed.weights[..i_n * op];
            for (dst, src) in w.chunks_exact_mut(op).zip(tail.chunks_exact(o_n)) {
                dst[..o_n].copy_from_slice(src);
            }
            Operand::strided(w, i_n, o_n, op)
        };
        packed.bias[..o_n].copy_from_slice(&theta[layer.biases..layer.biases + o_n]);
        let epilogue = Epilogue::Bias {
            bias: &packed.bias,
            relu: l < last,
        };
        small_product(kernel, out, ldc, input, w, epilogue);
    }
}

/// The backward pass from `delta` (B rows of C, set by the loss) into `grad`
/// (overwritten).
#[allow(clippy::too_many_arguments)]
fn backward(
    kernel: Kernel,
    arch: &Architecture,
    theta: &[f32],
    acts: &Activations,
    delta: &mut [f32],
    below: &mut [f32],
    packed: &mut Packed,
    b: usize,
    grad: &mut [f32],
) {
    let mut delta = delta;
    let mut below = below;
    for l in (0..arch.layers()).rev() {
        let Some(layer) = arch.layer(l) else { break };
        let (i_n, o_n) = (layer.inputs, layer.outputs);
        let (ip, op) = (padded(i_n), stride(arch, l));
        let (input, ld) = acts.input_of(arch, l);
        // The tiles read δ's rows to whole vectors: the last row reads into the slack.
        let d = &delta[..b * op + softmax::SLACK];
        // [∂W; ∂b] = [A 1]ᵀ δ ((in + 1) × out: the bias follows the weights in θ).
        small_product(
            kernel,
            &mut grad[layer.weights..layer.biases + o_n],
            o_n,
            Operand::strided(input, b, i_n + 1, ld).t(),
            Operand::strided(d, b, o_n, op),
            Epilogue::Set,
        );
        if l > 0 {
            // δ below = (δ Wᵀ) ⊙ 1[a > 0], with Wᵀ copied into rows of `ip` (the tiles
            // read their right operand row by row).
            let wt = &mut packed.weights[..o_n * ip];
            let w = &theta[layer.weights..layer.biases];
            for (h, row) in w.chunks_exact(o_n).enumerate() {
                for (c, &v) in row.iter().enumerate() {
                    wt[c * ip + h] = v;
                }
            }
            small_product(
                kernel,
                &mut below[..b * ld],
                ld,
                Operand::strided(d, b, o_n, op),
                Operand::strided(wt, o_n, i_n, ip),
                Epilogue::Gate(input),
            );
            std::mem::swap(&mut delta, &mut below);
        }
    }
}

/// Every evaluation (a mini-batch pass, at least microseconds) first looks at the stop
/// request and answers [`Stopped`] once it came: an iteration of a large network's
/// chains, seconds long, stops within one chain-step.
impl EnergyOracle<f32> for Batched {
    type Error = Stopped;

    fn dim(&self) -> usize {
        self.target.dim()
    }

    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[f32],
        grad: &mut [f32],
        rng: &mut R,
    ) -> Result<(), Self::Error> {
        crate::interrupt::check()?;
        batch::draw(rng, self.target.examples() as u32, &mut self.indices);
        self.evaluate(x, Some(grad));
        Ok(())
    }

    fn energy<R: Rng + ?Sized>(&mut self, x: &[f32], rng: &mut R) -> Result<f32, Self::Error> {
        crate::interrupt::check()?;
        batch::draw(rng, self.target.examples() as u32, &mut self.indices);
        Ok(self.evaluate(x, None))
    }

    fn reports_loss(&self) -> bool {
        true
    }

    fn last_loss(&self) -> Option<f32> {
        self.last_loss
    }
}

/// Class probabilities of `theta` on every example of `x` (n × F), written into
/// `probs` (n × C): the forward pass in chunks of `chunk` examples.
pub fn predict(target: &ClassifierTarget, theta: &[f32], x: &[f32], probs: &mut [f32]) {
    let arch = &target.arch;
    let (f, c) = (arch.features(), arch.classes());
    let n = x.len() / f;
    const CHUNK: usize = 256;
    let kernel = Kernel::detect();
    let mut acts = Activations::new(arch, CHUNK);
    let mut packed = Packed::new(arch);
    for start in (0..n).step_by(CHUNK) {
        let m = CHUNK.min(n - start);
        let rows = x[start * f..(start + m) * f].chunks_exact(f);
        for (row, src) in acts.input.chunks_exact_mut(f + 1).zip(rows) {
            row[..f].copy_from_slice(src);
        }
        forward(kernel, arch, theta, &mut acts, &mut packed, m);
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
    /// mini-batch, with each kernel: energies within 1e-5 relative, gradients within
    /// 1e-4 of the largest component (f32 sums of 48 examples in another order). The
    /// widths cover whole and partial vectors of 8 and tiles of 6 rows, and a network
    /// without hidden layers.
    #[test]
    fn batched_equals_the_core_reference() {
        let mut kernels = vec![Kernel::GEMM];
        if Kernel::detect().is_tiles() {
            kernels.push(Kernel::detect());
        }
        let shapes: [&[usize]; 5] = [
            &[64, 10],
            &[64, 32, 10],
            &[64, 20, 10],
            &[64, 16, 8, 10],
            &[64, 128, 10],
        ];
        for (kernel, sizes) in kernels
            .iter()
            .flat_map(|k| shapes.iter().map(move |s| (*k, *s)))
        {
            let t = target(sizes, 48);
            let arch = t.arch;
            let mut theta = vec![0.0f32; arch.parameters()];
            initial_parameters(&arch, 3, 0, 1, &mut theta);
            let mut o = t.oracle_with(kernel);
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
                "{kernel:?} {sizes:?}: {e} vs {e_ref}"
            );
            let top = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            for (k, (a, b)) in g.iter().zip(&want).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-4 * top,
                    "{kernel:?} {sizes:?} θ[{k}]: {a} vs {b}"
                );
            }
        }
    }

    /// The same seed gives the same bits, call after call and oracle after oracle (no
    /// state leaks from one evaluation into the next through the workspaces).
    #[test]
    fn evaluations_are_repeatable() {
        let t = target(&[64, 20, 10], 64);
        let mut theta = vec![0.0f32; t.arch.parameters()];
        initial_parameters(&t.arch, 5, 0, 2, &mut theta);
        let run = |o: &mut Batched| {
            let mut rng = PhiloxStream::new(7, 0, 1, 2, streams::STEP);
            let mut g = vec![0.0f32; theta.len()];
            o.gradient(&theta, &mut g, &mut rng).unwrap();
            let e = o.energy(&theta, &mut rng).unwrap();
            (
                e.to_bits(),
                g.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            )
        };
        let mut o = t.oracle();
        let first = run(&mut o);
        assert_eq!(run(&mut o), first);
        assert_eq!(run(&mut t.oracle()), first);
    }

    /// The loss the shared-batch swap energy uses: the energy of the same batch less
    /// the prior's ½|θ|²/σ² (to f32 rounding of the sum), for the gradient's batch as
    /// for the energy's; none before the first evaluation.
    #[test]
    fn the_last_loss_is_the_energy_without_the_prior() {
        let t = target(&[64, 20, 10], 64);
        let mut theta = vec![0.0f32; t.arch.parameters()];
        initial_parameters(&t.arch, 5, 0, 2, &mut theta);
        let prior = 0.5 * theta.iter().map(|v| v * v).sum::<f32>();
        let mut o = t.oracle();
        assert!(o.reports_loss() && o.last_loss().is_none());
        let rng = || PhiloxStream::new(7, 0, 1, 2, streams::STEP);
        let e = o.energy(&theta, &mut rng()).unwrap();
        let from_energy = o.last_loss().unwrap();
        assert!(
            (from_energy + prior - e).abs() <= 1e-5 * e.abs(),
            "{from_energy} + {prior} vs {e}"
        );
        let mut g = vec![0.0f32; theta.len()];
        o.gradient(&theta, &mut g, &mut rng()).unwrap();
        assert_eq!(o.last_loss().unwrap().to_bits(), from_energy.to_bits());
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
