//! Intervals that compare two sets of independent repetitions that are not paired:
//!
//! - [`welch_interval`]: the difference of two means with unequal variances (Welch,
//!   "The generalization of 'Student's' problem when several different population
//!   variances are involved", Biometrika 34, 1947), mean(a) − mean(b) ±
//!   t_{1−α/2, ν} · √(s_a²/n_a + s_b²/n_b) with the Welch–Satterthwaite degrees of
//!   freedom ν = (s_a²/n_a + s_b²/n_b)² / ((s_a²/n_a)²/(n_a − 1) + (s_b²/n_b)²/(n_b − 1)):
//!   a method's seeds against independent realisations of exact sampling;
//! - [`fieller_ratio_interval`]: the ratio of two means over paired repetitions
//!   (Fieller, "Some problems in interval estimation", JRSS B 16, 1954): the set of ρ
//!   with (ā − ρ b̄)² ≤ t²_{1−α/2, n−1} · (s_a² − 2ρ s_ab + ρ² s_b²)/n, a quadratic
//!   inequality in ρ; bounded only when b̄ is clearly away from 0 (otherwise
//!   [`RatioInterval::Unbounded`]): the round trips of DEO⋆ over DEO's, seed by seed.

use super::paired_t::t_quantile;
use super::{Interval, StatsError, mean_sd};

/// Checks a level and that every value is finite.
fn check(values: &[&[f64]], level: f64) -> Result<(), StatsError> {
    if !(level > 0.0 && level < 1.0) {
        return Err(StatsError::Level { level });
    }
    for v in values {
        if v.len() < 2 {
            return Err(StatsError::TooFewRepetitions {
                repetitions: v.len(),
            });
        }
        if let Some((index, &value)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(StatsError::NonFiniteValue { index, value });
        }
    }
    Ok(())
}

/// The `level` Welch interval of mean(a) − mean(b), `a` and `b` independent
/// repetitions (at least two each, finite). Two samples without spread give a point.
pub fn welch_interval(a: &[f64], b: &[f64], level: f64) -> Result<Interval, StatsError> {
    check(&[a, b], level)?;
    let (ma, sa) = mean_sd(a);
    let (mb, sb) = mean_sd(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (sa * sa / na, sb * sb / nb);
    let centre = ma - mb;
    if va + vb == 0.0 {
        return Ok(Interval {
            lower: centre,
            upper: centre,
        });
    }
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let half = t_quantile(df, level, a.len().min(b.len()))? * (va + vb).sqrt();
    Ok(Interval {
        lower: centre - half,
        upper: centre + half,
    })
}

/// A Fieller interval of a ratio of means.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RatioInterval {
    /// The ratio lies in [lower, upper].
    Bounded(Interval),
    /// The denominator's mean is not clearly away from 0 at this level: the set of
    /// ratios the data allow is unbounded (all of ℝ, or the outside of an interval).
    Unbounded,
}

/// The `level` Fieller interval of mean(a)/mean(b) over paired repetitions (`a[s]` and
/// `b[s]` from the same seed s; at least two, equal lengths, finite).
pub fn fieller_ratio_interval(
    a: &[f64],
    b: &[f64],
    level: f64,
) -> Result<RatioInterval, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::UnpairedRepetitions {
            first: a.len(),
            second: b.len(),
        });
    }
    check(&[a, b], level)?;
    let n = a.len() as f64;
    let (ma, sa) = mean_sd(a);
    let (mb, sb) = mean_sd(b);
    let sab = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - ma) * (y - mb))
        .sum::<f64>()
        / (n - 1.0);
    let t2 = t_quantile(n - 1.0, level, a.len())?.powi(2);
    // (ā − ρ b̄)² − t² (s_a² − 2ρ s_ab + ρ² s_b²)/n ≤ 0, i.e. A ρ² + B ρ + C ≤ 0 with:
    let qa = mb * mb - t2 * sb * sb / n;
    let qb = -2.0 * (ma * mb - t2 * sab / n);
    let qc = ma * ma - t2 * sa * sa / n;
    if qa <= 0.0 {
        return Ok(RatioInterval::Unbounded);
    }
    let disc = qb * qb - 4.0 * qa * qc;
    // A > 0 and the mean ratio satisfies the inequality, so the discriminant is ≥ 0 up
    // to rounding.
    let root = disc.max(0.0).sqrt();
    Ok(RatioInterval::Bounded(Interval {
        lower: (-qb - root) / (2.0 * qa),
        upper: (-qb + root) / (2.0 * qa),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal sizes and equal spreads: ν = 2(n − 1) exactly, here 8, and
    /// t_{0.975, 8} = 2.306004135033371 (R's `qt(0.975, 8)`); the half-width is
    /// t · √(2 s²/n). Tolerance 1e-9 (statrs inverts the t CDF numerically).
    #[test]
    fn equal_spreads_use_twice_n_minus_one_degrees() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [11.0, 12.0, 13.0, 14.0, 15.0];
        let i = welch_interval(&a, &b, 0.95).unwrap();
        let (_, s) = mean_sd(&a);
        let half = 2.306004135033371 * (2.0 * s * s / 5.0).sqrt();
        assert!((i.lower - (-10.0 - half)).abs() < 1e-9, "{i:?}");
        assert!((i.upper - (-10.0 + half)).abs() < 1e-9, "{i:?}");
    }

    /// One side without spread: ν = n_a − 1 (the other's variance term vanishes), the
    /// one-sample t interval of a shifted by mean(b): t_{0.975, 3} = 3.182446305284263.
    #[test]
    fn a_side_without_spread_is_a_one_sample_interval() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let i = welch_interval(&a, &[0.5; 6], 0.95).unwrap();
        let half = 3.182446305284263 * (5.0f64 / 3.0).sqrt() / 2.0;
        assert!((i.lower - (2.0 - half)).abs() < 1e-9, "{i:?}");
        assert!((i.upper - (2.0 + half)).abs() < 1e-9, "{i:?}");
        let p = welch_interval(&[1.0; 3], &[0.25; 2], 0.95).unwrap();
        assert_eq!((p.lower, p.upper), (0.75, 0.75));
        assert!(matches!(
            welch_interval(&[1.0], &[1.0, 2.0], 0.95),
            Err(StatsError::TooFewRepetitions { repetitions: 1 })
        ));
        assert!(matches!(
            welch_interval(&[1.0, f64::INFINITY], &[1.0, 2.0], 0.95),
            Err(StatsError::NonFiniteValue { index: 1, .. })
        ));
    }

    /// Whether ρ satisfies Fieller's inequality, written out again from the definition.
    fn inside(a: &[f64], b: &[f64], rho: f64, t: f64) -> bool {
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - rho * y).collect();
        let (m, s) = mean_sd(&d);
        m * m <= t * t * s * s / d.len() as f64
    }

    /// The interval's ends against a scan of the inequality in its own form (the
    /// differences a − ρb, their mean and sd): every ρ inside the interval passes, and
    /// points just outside do not. t_{0.975, 5} = 2.570581835636314 (R's `qt(0.975, 5)`).
    #[test]
    fn fieller_matches_the_inequality_it_solves() {
        let a = [23.0, 25.5, 21.0, 24.0, 22.5, 26.0];
        let b = [8.0, 9.5, 7.0, 8.5, 10.0, 8.0];
        let RatioInterval::Bounded(i) = fieller_ratio_interval(&a, &b, 0.95).unwrap() else {
            panic!("unbounded");
        };
        let t = 2.570581835636314;
        let ratio = mean_sd(&a).0 / mean_sd(&b).0;
        assert!(i.lower < ratio && ratio < i.upper, "{i:?} {ratio}");
        for j in 0..=1000 {
            let rho = i.lower + (i.upper - i.lower) * f64::from(j) / 1000.0;
            let shrink = rho.clamp(i.lower + 1e-9, i.upper - 1e-9);
            assert!(inside(&a, &b, shrink, t), "{rho}");
        }
        assert!(!inside(&a, &b, i.lower - 1e-6, t));
        assert!(!inside(&a, &b, i.upper + 1e-6, t));
    }

    /// A denominator whose mean is not clearly positive gives no bounded interval;
    /// unpaired input is refused.
    #[test]
    fn a_denominator_near_zero_is_unbounded() {
        let a = [3.0, 4.0, 5.0];
        let b = [-1.0, 0.5, 1.0];
        assert_eq!(
            fieller_ratio_interval(&a, &b, 0.95).unwrap(),
            RatioInterval::Unbounded
        );
        assert!(matches!(
            fieller_ratio_interval(&a, &b[..2], 0.95),
            Err(StatsError::UnpairedRepetitions { .. })
        ));
    }
}
