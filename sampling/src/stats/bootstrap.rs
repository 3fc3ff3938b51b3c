//! Paired percentile bootstrap over test examples.
//!
//! A [`Bootstrap`] draws, once, B resamples of the n test examples with replacement
//! (Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 6 and 13) and
//! keeps each resample as its weights: how many times each example was drawn. Every
//! statistic is then computed on the same resamples, so the intervals of several methods
//! evaluated on one test set are *paired*: the interval of a difference between two
//! methods ([`Bootstrap::difference`], or any statistic through
//! [`Bootstrap::interval_with`]) keeps the correlation that the shared test examples
//! induce, and is much narrower than the two intervals combined as if independent.
//!
//! The interval at level 1 − α is the percentile interval: the α/2 and 1 − α/2 quantiles
//! of the B resampled statistics (linear interpolation between order statistics,
//! Hyndman and Fan's type 7, NumPy's default).
//!
//! # Resamples from a seed
//!
//! Resample r is drawn from Philox4x32-10 (nrpt-core's [`Philox4x32`]) keyed by the
//! seed's two little-endian 32-bit halves, starting at block r · 2⁶⁴: each resample has
//! its own stream, so resample r is the same whatever B is (a bootstrap of 2,000
//! resamples extends one of 1,000), and resamples are drawn in parallel. Each of the n
//! draws takes 32-bit words `w` of that stream and maps them to an example in 0 … n − 1
//! by Lemire's multiply-and-reject ("Fast random integer generation in an interval",
//! ACM TOMS 2019): `m = w · n` (64 bits); if `m mod 2³² < (2³² − n) mod n` the word is
//! rejected and the next one taken; else the example is `m div 2³²`. Every example is
//! then exactly equally likely. The formula is written here rather than taken from
//! `rand`, whose range sampling may change between versions: the weights of a seed are
//! part of a report's reproducibility.

use nrpt_core::rng::{Philox4x32, Rng, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;

use super::{StatsError, sorted_quantile};

/// A percentile interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// The α/2 quantile of the resampled statistics.
    pub lower: f64,
    /// The 1 − α/2 quantile.
    pub upper: f64,
}

impl Interval {
    /// `upper − lower`.
    pub fn width(&self) -> f64 {
        self.upper - self.lower
    }
}

/// B resamples of n examples, as weights drawn once from a seed (see the
/// [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bootstrap {
    examples: usize,
    /// Resample after resample, `examples` counts each.
    weights: Vec<u32>,
}

impl Bootstrap {
    /// Draws `resamples` resamples of `examples` examples from `seed`.
    ///
    /// Errors: no examples, more than `u32::MAX` examples, no resamples. Memory:
    /// 4 · examples · resamples bytes (40 MB for 10,000 examples and 1,000 resamples).
    pub fn new(examples: usize, resamples: usize, seed: u64) -> Result<Self, StatsError> {
        if examples == 0 {
            return Err(StatsError::NoExamples);
        }
        let n = u32::try_from(examples).map_err(|_| StatsError::TooManyExamples {
            examples,
            max: u32::MAX as usize,
        })?;
        if resamples == 0 {
            return Err(StatsError::NoResamples);
        }
        let mut weights = vec![0u32; examples * resamples];
        weights
            .par_chunks_exact_mut(examples)
            .enumerate()
            .for_each(|(r, counts)| {
                let mut rng = Philox4x32::from_seed(seed.to_le_bytes());
                rng.seek_block((r as u128) << 64);
                for _ in 0..examples {
                    counts[below(&mut rng, n) as usize] += 1;
                }
            });
        Ok(Bootstrap { examples, weights })
    }

    /// Test examples, n.
    pub fn examples(&self) -> usize {
        self.examples
    }

    /// Resamples, B.
    pub fn resamples(&self) -> usize {
        self.weights.len() / self.examples
    }

    /// Each resample's weights, in order: how many times each example was drawn (they
    /// sum to n). For statistics computed several at a time in one pass.
    pub fn weights(&self) -> impl ExactSizeIterator<Item = &[u32]> {
        self.weights.chunks_exact(self.examples)
    }

    /// The percentile interval at `level` (e.g. 0.95) of the mean of `per_example`
    /// values (one per test example: a log-likelihood, a 0/1 correctness, a Brier
    /// score).
    ///
    /// Constant values give a zero-width interval at that value.
    pub fn interval(&self, per_example: &[f64], level: f64) -> Result<Interval, StatsError> {
        self.check_values(per_example)?;
        self.interval_with(|w| weighted_mean(per_example, w), level)
    }

    /// The percentile interval at `level` of the mean of `a − b` over the same
    /// resamples: the paired comparison of two methods evaluated on the same examples.
    pub fn difference(&self, a: &[f64], b: &[f64], level: f64) -> Result<Interval, StatsError> {
        self.check_values(a)?;
        self.check_values(b)?;
        self.interval_with(|w| weighted_mean(a, w) - weighted_mean(b, w), level)
    }

    /// The percentile interval at `level` of any statistic of the examples given their
    /// weights (e.g. an expected calibration error, whose bins count each example as
    /// often as its weight says). `stat` is called once per resample, in order; it may
    /// keep scratch space between calls. A NaN statistic is an error; infinities are
    /// ordered like other values.
    pub fn interval_with(
        &self,
        mut stat: impl FnMut(&[u32]) -> f64,
        level: f64,
    ) -> Result<Interval, StatsError> {
        check_level(level)?;
        let mut values = Vec::with_capacity(self.resamples());
        for (resample, weights) in self.weights().enumerate() {
            let value = stat(weights);
            if value.is_nan() {
                return Err(StatsError::NanStatistic { resample });
            }
            values.push(value);
        }
        percentile_interval(&mut values, level)
    }

    fn check_values(&self, values: &[f64]) -> Result<(), StatsError> {
        if values.len() != self.examples {
            return Err(StatsError::LengthMismatch {
                expected: self.examples,
                got: values.len(),
            });
        }
        match values.iter().position(|v| !v.is_finite()) {
            Some(index) => Err(StatsError::NonFiniteValue {
                index,
                value: values[index],
            }),
            None => Ok(()),
        }
    }
}

/// Σ wᵢ xᵢ / Σ wᵢ, kept within [min x, max x] (where it lies exactly; rounding could move
/// it out by an ulp, and constant values then give exactly their value). NaN when the
/// weights sum to 0 or the lengths differ.
pub fn weighted_mean(values: &[f64], weights: &[u32]) -> f64 {
    if values.len() != weights.len() {
        return f64::NAN;
    }
    let (mut sum, mut total, mut lo, mut hi) = (0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY);
    for (&x, &w) in values.iter().zip(weights) {
        if w > 0 {
            sum += f64::from(w) * x;
            total += f64::from(w);
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    if total == 0.0 {
        return f64::NAN;
    }
    (sum / total).clamp(lo, hi)
}

/// The percentile interval at `level` of resampled statistics (sorted in place): their
/// (1 − level)/2 and (1 + level)/2 quantiles, type 7. For statistics computed outside a
/// [`Bootstrap`] (several at once over [`Bootstrap::weights`]).
///
/// Errors: `level` outside (0, 1), no values, a NaN.
pub fn percentile_interval(values: &mut [f64], level: f64) -> Result<Interval, StatsError> {
    check_level(level)?;
    if values.is_empty() {
        return Err(StatsError::NoResamples);
    }
    if let Some(resample) = values.iter().position(|v| v.is_nan()) {
        return Err(StatsError::NanStatistic { resample });
    }
    values.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Ok(Interval {
        lower: sorted_quantile(values, tail),
        upper: sorted_quantile(values, 1.0 - tail),
    })
}

fn check_level(level: f64) -> Result<(), StatsError> {
    if level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(StatsError::Level { level })
    }
}

/// An integer uniform in 0 … n − 1 (n ≥ 1) by Lemire's multiply-and-reject (see the
/// [module docs](self)).
fn below(rng: &mut Philox4x32, n: u32) -> u32 {
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = u64::from(rng.next_u32()) * u64::from(n);
        if (m as u32) >= threshold {
            return (m >> 32) as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_core::rng::fill_normals;

    /// n standard normal draws (a fixed Philox stream), scaled and shifted.
    fn normals(n: usize, key: u32) -> Vec<f64> {
        let mut rng = Philox4x32::from_key([key, 0x5EED]);
        let mut out = vec![0.0f64; n];
        fill_normals(&mut rng, &mut out);
        out
    }

    #[test]
    fn the_interval_of_a_mean_matches_the_normal_interval() {
        // n = 2000 normal draws; the 95% percentile interval of their mean should be
        // mean ± 1.96 s/√n. With B = 4000 resamples each endpoint's Monte Carlo standard
        // error is about 0.04 s/√n (√(p (1 − p)/B) / φ(z_p)); the plug-in standard
        // deviation (divisor n) differs from s by 0.03%. Tolerance: 0.15 s/√n (3.5
        // Monte Carlo standard errors; the seed is fixed, so the test is deterministic).
        let x: Vec<f64> = normals(2000, 1).iter().map(|z| 3.0 + 2.0 * z).collect();
        let (mean, sd) = super::super::mean_sd(&x);
        let se = sd / (x.len() as f64).sqrt();
        let boot = Bootstrap::new(x.len(), 4000, 7).expect("valid");
        let interval = boot.interval(&x, 0.95).expect("valid");
        let z = 1.959963984540054;
        for (got, want) in [
            (interval.lower, mean - z * se),
            (interval.upper, mean + z * se),
        ] {
            assert!(
                (got - want).abs() < 0.15 * se,
                "endpoint {got}, normal interval {want} (s/√n = {se})"
            );
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_resamples_and_more_resamples_extend_them() {
        let a = Bootstrap::new(300, 200, 42).expect("valid");
        assert_eq!(a, Bootstrap::new(300, 200, 42).expect("valid"));
        let longer = Bootstrap::new(300, 500, 42).expect("valid");
        assert!(a.weights().eq(longer.weights().take(200)));
        let other = Bootstrap::new(300, 200, 43).expect("valid");
        assert!(a.weights().zip(other.weights()).all(|(x, y)| x != y));
        assert_eq!(
            (a.examples(), a.resamples(), a.weights().len()),
            (300, 200, 200)
        );
        for w in longer.weights() {
            assert_eq!(w.iter().map(|&c| c as usize).sum::<usize>(), 300);
        }
        let x = normals(300, 2);
        assert_eq!(
            a.interval(&x, 0.9),
            Bootstrap::new(300, 200, 42)
                .expect("valid")
                .interval(&x, 0.9)
        );
    }

    #[test]
    fn resamples_draw_every_example_equally_often() {
        // 7 examples, 20,000 resamples: each example's count has mean 1 and variance
        // (1 − 1/7); its average over the resamples has standard error 0.0065.
        let boot = Bootstrap::new(7, 20_000, 3).expect("valid");
        for e in 0..7 {
            let mean = boot.weights().map(|w| f64::from(w[e])).sum::<f64>() / 20_000.0;
            assert!((mean - 1.0).abs() < 0.03, "example {e}: mean count {mean}");
        }
    }

    #[test]
    fn paired_differences_are_narrower_than_independent_ones() {
        // Two methods' per-example scores share the example's difficulty x; they differ
        // by small independent noise and a shift of 0.2.
        let n = 1000;
        let (x, e1, e2) = (normals(n, 3), normals(n, 4), normals(n, 5));
        let a: Vec<f64> = (0..n).map(|i| x[i] + 0.1 * e1[i]).collect();
        let b: Vec<f64> = (0..n).map(|i| x[i] + 0.2 + 0.1 * e2[i]).collect();
        let boot = Bootstrap::new(n, 1000, 11).expect("valid");
        let (ia, ib) = (
            boot.interval(&a, 0.95).expect("a"),
            boot.interval(&b, 0.95).expect("b"),
        );
        let paired = boot.difference(&a, &b, 0.95).expect("a − b");
        let naive = ia.width().hypot(ib.width());
        // sd(a − b) = 0.1 √2 against √2 for independent: about ten times narrower.
        assert!(
            paired.width() < naive / 5.0,
            "paired {paired:?}, naive width {naive}"
        );
        assert!(paired.lower < -0.2 && -0.2 < paired.upper, "{paired:?}");
        // The general form over the same resamples gives the same interval.
        let general = boot
            .interval_with(|w| weighted_mean(&a, w) - weighted_mean(&b, w), 0.95)
            .expect("valid");
        assert_eq!(general, paired);
        // And so do statistics collected in one pass over the weights.
        let mut diffs: Vec<f64> = boot
            .weights()
            .map(|w| weighted_mean(&a, w) - weighted_mean(&b, w))
            .collect();
        assert_eq!(percentile_interval(&mut diffs, 0.95), Ok(paired));
    }

    #[test]
    fn constant_values_give_a_zero_width_interval() {
        let boot = Bootstrap::new(500, 300, 5).expect("valid");
        let interval = boot.interval(&[0.1; 500], 0.95).expect("valid");
        assert_eq!(
            interval,
            Interval {
                lower: 0.1,
                upper: 0.1
            }
        );
        assert_eq!(interval.width(), 0.0);
        assert_eq!(
            boot.difference(&[0.3; 500], &[0.3; 500], 0.5)
                .expect("valid")
                .width(),
            0.0
        );
    }

    #[test]
    fn wrong_inputs_are_errors() {
        assert_eq!(Bootstrap::new(0, 10, 1), Err(StatsError::NoExamples));
        assert_eq!(Bootstrap::new(10, 0, 1), Err(StatsError::NoResamples));
        let boot = Bootstrap::new(3, 10, 1).expect("valid");
        assert_eq!(
            boot.interval(&[1.0, 2.0], 0.95),
            Err(StatsError::LengthMismatch {
                expected: 3,
                got: 2
            })
        );
        let err = boot.interval(&[1.0, f64::NAN, 2.0], 0.95).expect_err("NaN");
        assert!(matches!(err, StatsError::NonFiniteValue { index: 1, .. }));
        let err = boot
            .difference(&[1.0; 3], &[1.0, 2.0, f64::INFINITY], 0.95)
            .expect_err("inf");
        assert!(matches!(err, StatsError::NonFiniteValue { index: 2, .. }));
        for level in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            let err = boot.interval(&[1.0; 3], level).expect_err("level");
            assert!(matches!(err, StatsError::Level { .. }), "{level}: {err}");
        }
        assert_eq!(
            boot.interval_with(|w| if w[0] == 0 { f64::NAN } else { 1.0 }, 0.9),
            Err(StatsError::NanStatistic {
                resample: boot
                    .weights()
                    .position(|w| w[0] == 0)
                    .expect("some resample skips example 0")
            })
        );
        assert_eq!(
            percentile_interval(&mut [], 0.9),
            Err(StatsError::NoResamples)
        );
        assert!(weighted_mean(&[1.0], &[0]).is_nan());
        assert!(weighted_mean(&[1.0, 2.0], &[1]).is_nan());
    }

    #[test]
    fn percentiles_interpolate_between_order_statistics() {
        // 0 … 100: the 2.5% and 97.5% quantiles are 2.5 and 97.5 (type 7), up to the
        // rounding of (1 − 0.95)/2.
        let mut v: Vec<f64> = (0..=100).rev().map(f64::from).collect();
        let i = percentile_interval(&mut v, 0.95).expect("valid");
        assert!(
            (i.lower - 2.5).abs() < 1e-12 && (i.upper - 97.5).abs() < 1e-12,
            "{i:?}"
        );
        let i = percentile_interval(&mut v, 0.5).expect("valid");
        assert_eq!(
            i,
            Interval {
                lower: 25.0,
                upper: 75.0
            }
        );
        let mut one = [4.0];
        assert_eq!(
            percentile_interval(&mut one, 0.95),
            Ok(Interval {
                lower: 4.0,
                upper: 4.0
            })
        );
    }
}
