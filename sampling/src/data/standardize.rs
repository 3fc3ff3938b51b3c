//! Standardization of users' features: each feature minus its training mean, divided by
//! its training standard deviation (the population one, dividing by n), so that on the
//! training split every feature has mean 0 and standard deviation 1. A feature that is
//! constant on the training split becomes 0 everywhere. The test split uses the training
//! split's statistics: it is data the model has not seen.
//!
//! The sums run on rescaled values, so columns of any magnitude a file can hold (1e300 or
//! 1e-300) neither overflow nor underflow: with `m = max |x|` and `u = x / m`,
//! `w = (u - mean(u)) / max |u - mean(u)|` lies in [-1, 1] with at least one `|w| = 1`,
//! so `mean(w²) ≥ 1/n > 0`, and the standardized value is `w / sqrt(mean(w²))`.

use super::Split;
use super::error::DataError;
use super::split::Table;

/// One feature's statistics on the training split, in the rescaled form above.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Feature {
    /// `max |x|` on the training split.
    magnitude: f64,
    /// The mean of `x / magnitude`.
    mean: f64,
    /// `max |x / magnitude - mean|`; 0 for a constant feature.
    spread: f64,
    /// `sqrt(mean(w²))` with `w = (x / magnitude - mean) / spread`.
    rms: f64,
}

/// The training split's per-feature statistics.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Standardizer {
    features: Vec<Feature>,
}

impl Standardizer {
    /// Measures every feature of `train` (which has at least one example).
    pub fn fit(train: &Table) -> Standardizer {
        let d = train.features;
        let n = train.len() as f64;
        let features = (0..d)
            .map(|j| {
                let column = || train.x.iter().skip(j).step_by(d.max(1)).copied();
                let (lo, hi) = column().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                    (lo.min(v), hi.max(v))
                });
                if lo >= hi {
                    return Feature {
                        magnitude: 1.0,
                        mean: lo,
                        spread: 0.0,
                        rms: 1.0,
                    };
                }
                let magnitude = lo.abs().max(hi.abs());
                let mean = column().map(|v| v / magnitude).sum::<f64>() / n;
                let spread = column()
                    .map(|v| (v / magnitude - mean).abs())
                    .fold(0.0, f64::max);
                let ms = column()
                    .map(|v| ((v / magnitude - mean) / spread).powi(2))
                    .sum::<f64>()
                    / n;
                Feature {
                    magnitude,
                    mean,
                    spread,
                    rms: ms.sqrt(),
                }
            })
            .collect();
        Standardizer { features }
    }

    /// Standardizes `table` (as wide as the training split) into `f32` features.
    ///
    /// Fails only for a test value so far from the training data that its standardized
    /// value is not a finite `f32`.
    pub fn apply(&self, table: &Table) -> Result<Split, DataError> {
        let d = self.features.len();
        let mut x = Vec::with_capacity(table.x.len());
        for (k, &v) in table.x.iter().enumerate() {
            let f = self.features[k % d.max(1)];
            let z = if f.spread == 0.0 {
                0.0
            } else {
                ((v / f.magnitude - f.mean) / f.spread / f.rms) as f32
            };
            if !z.is_finite() {
                return Err(DataError::OutOfRange {
                    file: table.file.clone(),
                    location: table.locate(k / d.max(1), k % d.max(1)),
                    value: v,
                });
            }
            x.push(z);
        }
        Ok(Split {
            x,
            y: table.y.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `columns`, each a feature.
    fn table(columns: &[&[f64]]) -> Table {
        let n = columns[0].len();
        let mut t = Table::new("t.csv", columns.len(), true);
        for i in 0..n {
            t.x.extend(columns.iter().map(|c| c[i]));
            t.y.push(0);
            t.origin.push(i + 1);
        }
        t
    }

    /// Mean and population standard deviation of feature `j`, in plain f64 arithmetic.
    fn moments(s: &Split, d: usize, j: usize) -> (f64, f64) {
        let col: Vec<f64> =
            s.x.iter()
                .skip(j)
                .step_by(d)
                .map(|&v| f64::from(v))
                .collect();
        let n = col.len() as f64;
        let mean = col.iter().sum::<f64>() / n;
        let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt())
    }

    #[test]
    fn training_features_get_mean_0_and_sd_1() {
        let a: Vec<f64> = (0..50).map(|i| f64::from(i).sin() * 3.0 + 7.0).collect();
        let b: Vec<f64> = (0..50).map(|i| f64::from(i * i) * 1e300 / 2500.0).collect();
        let c: Vec<f64> = (0..50).map(|i| f64::from(i % 7) * 1e-300).collect();
        let d: Vec<f64> = (0..50).map(|i| if i == 3 { -1.0 } else { 0.0 }).collect();
        let t = table(&[&a, &b, &c, &d]);
        let s = Standardizer::fit(&t).apply(&t).unwrap();
        for j in 0..4 {
            let (mean, sd) = moments(&s, 4, j);
            // f32 output: the tolerance is a few f32 roundings.
            assert!(mean.abs() < 1e-6, "feature {j}: mean {mean}");
            assert!((sd - 1.0).abs() < 1e-6, "feature {j}: sd {sd}");
        }
    }

    #[test]
    fn agrees_with_the_textbook_formula() {
        let a = [1.0, 2.0, 4.0, 8.0];
        let (mean, sd) = (
            3.75,
            (((2.75f64).powi(2) + 1.75f64.powi(2) + 0.25f64.powi(2) + 4.25f64.powi(2)) / 4.0)
                .sqrt(),
        );
        let t = table(&[&a]);
        let s = Standardizer::fit(&t).apply(&t).unwrap();
        for (z, v) in s.x.iter().zip(a) {
            let want = ((v - mean) / sd) as f32;
            assert!((z - want).abs() <= 2.0 * f32::EPSILON, "{v}: {z} vs {want}");
        }
    }

    #[test]
    fn constant_features_become_zero_in_both_splits() {
        let t = table(&[
            &[0.1, 0.1, 0.1],
            &[1.0, 2.0, 3.0],
            &[-5e300, -5e300, -5e300],
        ]);
        let fit = Standardizer::fit(&t);
        let s = fit.apply(&t).unwrap();
        assert_eq!([s.x[0], s.x[3], s.x[6]], [0.0; 3]);
        assert_eq!([s.x[2], s.x[5], s.x[8]], [0.0; 3]);
        let test = table(&[&[9.0], &[2.0], &[1.0]]);
        assert_eq!(fit.apply(&test).unwrap().x, [0.0, 0.0, 0.0]);
    }

    #[test]
    fn test_split_uses_training_statistics() {
        let train = table(&[&[0.0, 2.0]]);
        let test = table(&[&[4.0, 1.0]]);
        let s = Standardizer::fit(&train).apply(&test).unwrap();
        assert_eq!(s.x, [3.0, 0.0]);
    }

    #[test]
    fn test_values_beyond_f32_are_an_error_naming_the_place() {
        let train = table(&[&[0.0, 1e-300]]);
        let test = table(&[&[0.0, 1e-200]]);
        let e = Standardizer::fit(&train)
            .apply(&test)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.csv line 2, field 1: feature 1e-200"),
            "{e}"
        );
    }
}
