//! Summaries over independent repetitions (ensembles, seeds): mean and sample
//! standard deviation, one implementation for every command.

/// Mean and sample standard deviation (divisor n − 1; 0 for one value; NaN mean for
/// none).
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (mean, (ss / (n - 1.0)).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_sd() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sum of squares 32, sample sd √(32/7).
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-15);
        assert_eq!(mean_sd(&[3.0]), (3.0, 0.0));
        assert!(mean_sd(&[]).0.is_nan());
    }
}
