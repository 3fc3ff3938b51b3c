//! The mini-batch energy and gradient of a classifier, an energy oracle of the CPU
//! engine.
//!
//! nrpt-core defines the model ([`nrpt_core::model`]: the energy, its gradient, the
//! layout of θ, how mini-batches are drawn) and computes it one example at a time.
//! [`Batched`] computes the same thing a mini-batch at a time: the forward pass is one
//! matrix product per layer over the batch's examples, the backward pass two (the
//! weight gradient Aᵀδ and the input gradient δWᵀ), through [`super::matmul`]'s small
//! products ([`super::network`]), and the softmax is vectorized over each row of scores
//! (with [`nrpt_core::fastmath::exp`] and `ln`). It draws the same mini-batches from the
//! same words as nrpt-core's `Classifier`, so the two agree to rounding (sums run in
//! another order, exp and ln are not libm's), which the tests check.

use std::sync::Arc;

use nrpt_core::model::batch;
use nrpt_core::rng::Rng;
use nrpt_core::target::EnergyOracle;

use super::ClassifierTarget;
use super::matmul::{Kernel, padded};
use super::network::{Activations, Packed, backward, forward};
use super::softmax;
use crate::interrupt::Stopped;

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
    pub(super) fn new(target: Arc<ClassifierTarget>, kernel: Kernel) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::network::initial_parameters;
    use nrpt_core::model::{Architecture, DataView, mlp};
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
}
