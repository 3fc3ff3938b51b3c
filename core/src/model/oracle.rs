//! The classifier's posterior as an energy oracle.

use rand_core::Rng;

use super::arch::Architecture;
use super::data::DataView;
use super::{batch, mlp};
use crate::error::{Error, check_len, check_positive};
use crate::float::Float;
use crate::rng::UnitDraw;
use crate::target::EnergyOracle;

/// The posterior of a classifier's parameters θ (the sampler's state, D = the number
/// of parameters) on a training set, seen through mini-batches of `batch` examples:
/// each gradient and each energy draws its own mini-batch from the stream the driver
/// hands in (`batch` words, before anything else it draws).
///
/// Scratch and index buffers are the caller's: [`Architecture::scratch_len`] values
/// and `batch` indices.
#[derive(Debug)]
pub struct Classifier<'a, F> {
    arch: Architecture,
    data: DataView<'a>,
    prior_sigma: f64,
    scratch: &'a mut [F],
    indices: &'a mut [u32],
    /// The data term of the last gradient's evaluation.
    last_loss: Option<F>,
}

impl<'a, F: Float> Classifier<'a, F> {
    /// Checks the architecture against the data, the prior's σ (finite, > 0), the
    /// batch (`indices.len()` examples, at least 1) and the scratch length.
    pub fn new(
        arch: Architecture,
        data: DataView<'a>,
        prior_sigma: f64,
        scratch: &'a mut [F],
        indices: &'a mut [u32],
    ) -> Result<Self, Error> {
        check_len("features", data.features(), arch.features())?;
        check_len("classes", data.classes(), arch.classes())?;
        check_positive("prior_sigma", prior_sigma)?;
        check_len("scratch", scratch.len(), arch.scratch_len())?;
        if indices.is_empty() {
            return Err(Error::InvalidValue {
                name: "batch",
                value: 0.0,
                allowed: ">= 1 example",
            });
        }
        Ok(Classifier {
            arch,
            data,
            prior_sigma,
            scratch,
            indices,
            last_loss: None,
        })
    }

    /// The architecture.
    pub fn architecture(&self) -> &Architecture {
        &self.arch
    }

    /// The training set.
    pub fn data(&self) -> &DataView<'a> {
        &self.data
    }

    /// Examples per mini-batch.
    pub fn batch(&self) -> usize {
        self.indices.len()
    }

    fn evaluate<R: Rng + ?Sized>(
        &mut self,
        theta: &[F],
        grad: Option<&mut [F]>,
        rng: &mut R,
    ) -> Result<mlp::EnergyParts<F>, Error> {
        batch::draw(rng, self.data.len() as u32, self.indices);
        let sigma = F::from_f64(self.prior_sigma);
        mlp::energy_parts(
            &self.arch,
            theta,
            &self.data,
            self.indices,
            sigma,
            grad,
            self.scratch,
        )
    }
}

impl<F: Float + UnitDraw> EnergyOracle<F> for Classifier<'_, F> {
    type Error = Error;

    fn dim(&self) -> usize {
        self.arch.parameters()
    }

    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[F],
        grad: &mut [F],
        rng: &mut R,
    ) -> Result<(), Error> {
        let parts = self.evaluate(x, Some(grad), rng)?;
        self.last_loss = Some(parts.data);
        Ok(())
    }

    fn energy<R: Rng + ?Sized>(&mut self, x: &[F], rng: &mut R) -> Result<F, Error> {
        self.evaluate(x, None, rng).map(|p| p.data + p.prior)
    }

    fn reports_loss(&self) -> bool {
        true
    }

    fn last_loss(&self) -> Option<F> {
        self.last_loss
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{Buffers, InitialStates, Temperatures, Tempering, TemperingOptions};
    use crate::explore::Explorer;
    use crate::rng::{PhiloxStream, UnitDraw};
    use std::vec::Vec;

    /// Two well-separated classes on a line: x ~ U(0, 1) + 2y.
    fn separable(n: usize) -> (Vec<f32>, Vec<u32>) {
        let mut rng = PhiloxStream::new(3, 0, 0, 0, 0);
        let y: Vec<u32> = (0..n).map(|i| (i % 2) as u32).collect();
        let x = y
            .iter()
            .map(|&c| f32::uniform(rng.next_u32()) + 2.0 * c as f32)
            .collect();
        (x, y)
    }

    #[test]
    fn data_view_checks() {
        let (x, y) = separable(4);
        assert!(DataView::new(&x, &y, 1, 2).is_ok());
        assert!(DataView::new(&x[..3], &y, 1, 2).is_err());
        assert!(DataView::new(&x, &y, 1, 1).is_err());
        assert!(DataView::new(&x, &[0, 1, 2, 0], 1, 2).is_err());
        assert!(DataView::new(&[f32::NAN; 4], &y, 1, 2).is_err());
        assert!(DataView::new(&[], &[], 1, 2).is_err());
    }

    /// The authors' deep-code energies: every replica's gradient from one mini-batch
    /// per iteration (the ensemble-wide stream), its energy the data term of that batch
    /// at the state before the step, without the prior.
    #[test]
    fn shared_batch_energies_are_the_losses_before_the_step() {
        use crate::driver::{ReplicaStep, explore_replica};
        use crate::rng::{ENSEMBLE_WIDE, streams};
        use crate::rules::{Rules, StepEnergy};
        let (x, y) = separable(40);
        let data = DataView::new(&x, &y, 1, 2).unwrap();
        let arch = Architecture::new(&[1, 3, 2]).unwrap();
        let d = arch.parameters();
        let mut scratch = vec![0.0f64; arch.scratch_len()];
        let mut idx = vec![0u32; 8];
        let mut oracle = Classifier::new(arch, data, 2.0, &mut scratch, &mut idx).unwrap();
        assert!(oracle.reports_loss() && oracle.last_loss().is_none());
        let options = TemperingOptions {
            explorer: Explorer::MSGD,
            temperatures: Temperatures::Constant(0.0),
            rules: Rules {
                step_energy: StepEnergy::SharedBatchBeforeStep,
                ..Rules::PAPER
            },
            seed: 9,
            ensemble: 2,
            ..TemperingOptions::default()
        };
        let k = 17;
        let mut batch = vec![0u32; 8];
        batch::draw(
            &mut PhiloxStream::new(9, 2, k, ENSEMBLE_WIDE, streams::STEP),
            40,
            &mut batch,
        );
        let mut s = vec![0.0f64; arch.scratch_len()];
        for r in 0..3u32 {
            let mut theta: Vec<f64> = (0..d)
                .map(|j| ((j as f64) * 0.37 + f64::from(r)).sin())
                .collect();
            let want = mlp::energy_parts(&arch, &theta, &data, &batch, 2.0, None, &mut s)
                .unwrap()
                .data;
            let mut v = vec![0.0f64; d];
            let mut sc = vec![0.0f64; 2 * d];
            let step = ReplicaStep {
                iteration: k,
                replica: r,
                eta: 1e-2,
                temperature: 0.0,
            };
            let before = theta.clone();
            let e = explore_replica(
                &options,
                &mut oracle,
                step,
                &mut theta,
                &mut v,
                &mut sc,
                true,
            )
            .unwrap()
            .unwrap();
            assert_eq!(e.to_bits(), want.to_bits(), "replica {r}");
            assert_ne!(theta, before, "the replica stepped");
        }
    }

    /// The driver samples the posterior of a logistic regression on separable data
    /// with momentum-SGD explorers: the target level ends up classifying every
    /// training example correctly.
    #[test]
    fn tempering_a_classifier_learns_the_data() {
        let (x, y) = separable(40);
        let data = DataView::new(&x, &y, 1, 2).unwrap();
        let arch = Architecture::new(&[1, 2]).unwrap();
        let (p, d) = (4usize, arch.parameters());
        let mut scratch = vec![0.0f64; arch.scratch_len()];
        let mut idx = vec![0u32; 8];
        let oracle = Classifier::new(arch, data, 10.0, &mut scratch, &mut idx).unwrap();
        let (mut st, mut mo, mut en) = (vec![0.0f64; p * d], vec![0.0; p * d], vec![0.0; p]);
        let (mut la, mut te, mut ra, mut lo, mut tr) = (
            vec![0.0; p],
            vec![0.0; p],
            vec![0u32; p],
            vec![0u32; p],
            vec![0u8; p],
        );
        let (mut ga, mut fl, mut ps) = (
            vec![true; p - 1],
            vec![0u8; p - 1],
            vec![Default::default(); p - 1],
        );
        let mut sc = vec![0.0; 2 * d];
        let buffers = Buffers {
            states: &mut st,
            momenta: &mut mo,
            energies: &mut en,
            ladder: &mut la,
            temperatures: &mut te,
            replica_at: &mut ra,
            level_of: &mut lo,
            trips: &mut tr,
            gates: &mut ga,
            flags: &mut fl,
            pair_stats: &mut ps,
            scratch: &mut sc,
        };
        let options = TemperingOptions {
            explorer: Explorer::MSGD,
            temperatures: Temperatures::Constant(0.0),
            ladder_min: 1e-3,
            ladder_max: 1e-2,
            initial_buffer: 1.0,
            init: InitialStates::Uniform {
                low: -0.1,
                high: 0.1,
            },
            ..TemperingOptions::default()
        };
        let mut t = Tempering::new(options, oracle, buffers).unwrap();
        t.run(500).unwrap();
        let theta: Vec<f64> = t.target_state().to_vec();
        let mut s = vec![0.0f64; arch.scratch_len()];
        for i in 0..40 {
            let (xi, yi) = data.example(i);
            let loss = mlp::example_loss(&arch, &theta, xi, yi, &mut s);
            assert!(loss < 0.69, "example {i}: loss {loss} (ln 2 = chance)");
        }
    }
}
