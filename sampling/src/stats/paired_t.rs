//! The interval of a mean difference over paired repetitions: Student's t interval of
//! the per-seed differences d_s = a_s − b_s of two methods run on the same seeds,
//! mean(d) ± t_{1−α/2, n−1} · sd(d)/√n (Student, "The probable error of a mean",
//! Biometrika 6(1), 1908; any textbook's paired t interval). It covers what a seed
//! changes (initial networks, mini-batches, noise), where the bootstrap over test
//! examples ([`super::bootstrap`]) covers the finite test set: the two answer different
//! questions, and a comparison is settled only where both exclude 0.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{Interval, StatsError, mean_sd};

/// The `level` t interval of mean(a − b) over paired repetitions (`a[s]` and `b[s]`
/// from the same seed s). Needs at least two pairs, equal lengths, finite values and a
/// level in (0, 1); n pairs whose differences are all equal give a zero-width interval.
pub fn paired_t_interval(a: &[f64], b: &[f64], level: f64) -> Result<Interval, StatsError> {
    if !(level > 0.0 && level < 1.0) {
        return Err(StatsError::Level { level });
    }
    if a.len() != b.len() {
        return Err(StatsError::UnpairedRepetitions {
            first: a.len(),
            second: b.len(),
        });
    }
    if a.len() < 2 {
        return Err(StatsError::TooFewRepetitions {
            repetitions: a.len(),
        });
    }
    let mut d = Vec::with_capacity(a.len());
    for (index, (x, y)) in a.iter().zip(b).enumerate() {
        let value = x - y;
        if !value.is_finite() {
            return Err(StatsError::NonFiniteValue { index, value });
        }
        d.push(value);
    }
    let n = d.len() as f64;
    let (mean, sd) = mean_sd(&d);
    let half = t_quantile(n - 1.0, level, d.len())? * sd / n.sqrt();
    Ok(Interval {
        lower: mean - half,
        upper: mean + half,
    })
}

/// The two-sided `level` quantile of Student's t with `df` degrees of freedom, t such
/// that P(|T| ≤ t) = `level`; an error naming `repetitions` when `df` is not positive.
pub(super) fn t_quantile(df: f64, level: f64, repetitions: usize) -> Result<f64, StatsError> {
    Ok(StudentsT::new(0.0, 1.0, df)
        .map_err(|_| StatsError::TooFewRepetitions { repetitions })?
        .inverse_cdf(0.5 + level / 2.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: differences 1, 2, 3, 4 (n = 4): mean 2.5, sd √(5/3), t_{0.975, 3} =
    /// 3.182446305284263 (R's `qt(0.975, 3)`); half-width 3.1824463 · 1.2909944 / 2.
    /// Tolerance 1e-9: statrs inverts the t CDF numerically (about 1e-11 off here).
    #[test]
    fn four_differences_by_hand() {
        let i = paired_t_interval(&[11.0, 12.0, 13.0, 14.0], &[10.0; 4], 0.95).unwrap();
        let half = 3.182446305284263 * (5.0f64 / 3.0).sqrt() / 2.0;
        assert!((i.lower - (2.5 - half)).abs() < 1e-9, "{i:?}");
        assert!((i.upper - (2.5 + half)).abs() < 1e-9, "{i:?}");
    }

    /// t_{0.975, 9} = 2.262157162740992 (R's `qt(0.975, 9)`), the ten seeds of `nrpt deep`
    /// (tolerance as above).
    #[test]
    fn ten_seeds_use_the_t_quantile_of_nine_degrees() {
        let a: Vec<f64> = (0..10).map(|s| f64::from(s % 3)).collect();
        let b = vec![0.0; 10];
        let i = paired_t_interval(&a, &b, 0.95).unwrap();
        let (mean, sd) = mean_sd(&a);
        let half = 2.262157162740992 * sd / 10f64.sqrt();
        assert!(
            (i.lower - (mean - half)).abs() < 1e-9,
            "{i:?} vs {}",
            mean - half
        );
        assert!(
            (i.upper - (mean + half)).abs() < 1e-9,
            "{i:?} vs {}",
            mean + half
        );
    }

    /// The same shift on every seed: a zero-width interval at the shift.
    #[test]
    fn equal_differences_give_a_point() {
        let i = paired_t_interval(&[1.5, 2.5, 3.5], &[1.0, 2.0, 3.0], 0.95).unwrap();
        assert_eq!((i.lower, i.upper), (0.5, 0.5));
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(matches!(
            paired_t_interval(&[1.0], &[0.0], 0.95),
            Err(StatsError::TooFewRepetitions { repetitions: 1 })
        ));
        assert!(matches!(
            paired_t_interval(&[1.0, 2.0], &[0.0], 0.95),
            Err(StatsError::UnpairedRepetitions {
                first: 2,
                second: 1
            })
        ));
        assert!(matches!(
            paired_t_interval(&[1.0, f64::NAN], &[0.0, 0.0], 0.95),
            Err(StatsError::NonFiniteValue { index: 1, .. })
        ));
        assert!(matches!(
            paired_t_interval(&[1.0, 2.0], &[0.0, 0.0], 1.0),
            Err(StatsError::Level { .. })
        ));
    }
}
