//! log Z by the stepping stone, and its standard error by batch means.
//!
//! # Estimator
//!
//! With Z(β) = ∫ π₀ e^{βℓ} (the path's functions as given, see [`super::path`]), each
//! pair (l, l + 1) of the grid β_0 = 1 > … > β_{P−1} = 0 satisfies
//!
//! ```text
//! Z(β_l)/Z(β_{l+1}) = E_{π_{β_{l+1}}}[exp((β_l − β_{l+1}) ℓ(X))]           (forward)
//! Z(β_{l+1})/Z(β_l) = E_{π_{β_l}}[exp(−(β_l − β_{l+1}) ℓ(X))]              (reverse)
//! ```
//!
//! and the product over the pairs telescopes to Z(1)/Z(0). The *forward* stepping stone
//! (Xie, Lewis, Fan, Kuo and Chen, Syst. Biol. 2011; the form Syed et al. use) is
//!
//! ```text
//! log Ẑ₁/Ẑ₀ = Σ_l log( (1/N) Σ_{n<N} exp((β_l − β_{l+1}) ℓ(X_{l+1}^{(n)})) ),
//! ```
//!
//! X_{l+1}^{(n)} the state at level l + 1 after the exploration of iteration n (before the
//! swaps), over the N iterations of a round. The *reverse* estimator uses the states at
//! level l and the negated exponent, and estimates the same log Z₁/Z₀ as minus its sum.
//! Both are consistent; by Jensen's inequality the forward one is biased low and the
//! reverse one high, by O(1/N) each, so their difference is a check on the run.
//! Each mean is kept as a running log-sum-exp ([`LogMeanExp`]), exact in floating point
//! whatever the size of ℓ.
//!
//! # Standard error: batch means
//!
//! The states of one level are autocorrelated (an explorer moves a little per iteration, swaps
//! carry states between levels) and the pairs share states, so a per-pair iid variance
//! would understate the error. Instead the round is cut into B = [`BATCHES`] batches of
//! consecutive iterations (batch of round iteration i: ⌊i·B/N⌋, or one iteration per
//! batch when N < B), the same estimator is computed on each batch, and
//!
//! ```text
//! se = sd(batch estimates) / √B,
//! ```
//!
//! the batch-means error of the whole-round estimate (valid when a batch is long
//! against the autocorrelation time; by the delta method the estimator behaves as a
//! mean for large N). The estimate itself is the whole-round one, not the mean of the
//! batches (which carries B times the Jensen bias).

/// Number of batches of the batch-means standard error.
pub const BATCHES: usize = 32;

/// log of the mean of exp(v) over the values pushed, kept as a running maximum and a
/// sum of exp(v − max): exact scaling, no overflow.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LogMeanExp {
    max: f64,
    sum: f64,
    count: u64,
}

impl Default for LogMeanExp {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl LogMeanExp {
    /// No value yet.
    pub const EMPTY: LogMeanExp = LogMeanExp {
        max: f64::NEG_INFINITY,
        sum: 0.0,
        count: 0,
    };

    /// Adds one value. −∞ adds weight 0; NaN or +∞ make the result NaN or +∞.
    #[inline]
    pub fn push(&mut self, v: f64) {
        self.count += 1;
        if v.is_nan() || self.max.is_nan() {
            self.max = f64::NAN;
        } else if v > self.max {
            // The old terms scale by e^{max − v} ≤ 1 (0 when max was −∞).
            self.sum = self.sum * libm::exp(self.max - v) + 1.0;
            self.max = v;
        } else if v > f64::NEG_INFINITY {
            self.sum += libm::exp(v - self.max);
        }
    }

    /// Values pushed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// log((1/n) Σ e^{v_i}); −∞ when every value was −∞, NaN when empty or a value was
    /// NaN.
    pub fn log_mean(&self) -> f64 {
        if self.count == 0 || self.max.is_nan() {
            return f64::NAN;
        }
        if self.max == f64::NEG_INFINITY {
            return f64::NEG_INFINITY;
        }
        self.max + libm::log(self.sum) - libm::log(self.count as f64)
    }
}

/// An estimate with its standard error.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// Its standard error (NaN when it cannot be estimated, e.g. fewer than two batches).
    pub standard_error: f64,
}

/// The batch estimates of one round (at most [`BATCHES`]) and their standard error.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BatchMeans {
    values: [f64; BATCHES],
    len: usize,
}

impl Default for BatchMeans {
    fn default() -> Self {
        BatchMeans {
            values: [0.0; BATCHES],
            len: 0,
        }
    }
}

impl BatchMeans {
    /// Records one batch estimate (ignored past [`BATCHES`]).
    pub fn push(&mut self, v: f64) {
        if let Some(slot) = self.values.get_mut(self.len) {
            *slot = v;
            self.len += 1;
        }
    }

    /// The batch estimates so far.
    pub fn values(&self) -> &[f64] {
        // `len` ≤ BATCHES unless a deserialized value says otherwise.
        &self.values[..self.len.min(BATCHES)]
    }

    /// Batch estimates recorded (as saved: [`ExactTempering::resume`](super::ExactTempering::resume)
    /// refuses more than [`BATCHES`]).
    pub fn len(&self) -> usize {
        self.len
    }

    /// No batch estimate yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// sd/√B of the batch estimates (sample sd with B − 1); NaN for B < 2.
    pub fn standard_error(&self) -> f64 {
        let v = self.values();
        if v.len() < 2 {
            return f64::NAN;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
        libm::sqrt(ss / (n - 1.0) / n)
    }

    /// Forgets every batch.
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

/// The batch (0 … B − 1) of iteration `i` (from 0) of a round of `n` iterations:
/// ⌊i·B/n⌋ when n ≥ B, else i. `true` in the second field when iteration `i` is the
/// last of its batch.
pub fn batch_of(i: u64, n: u64) -> (usize, bool) {
    if n < BATCHES as u64 {
        return (i as usize, true);
    }
    let b = |j: u64| (u128::from(j) * BATCHES as u128 / u128::from(n)) as usize;
    let this = b(i);
    (this, i + 1 >= n || b(i + 1) != this)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_mean_exp_matches_the_naive_sum() {
        let values = [0.3, -2.0, 5.0, 1.0, f64::NEG_INFINITY, 4.9, -7.5];
        let mut acc = LogMeanExp::EMPTY;
        for &v in &values {
            acc.push(v);
        }
        let naive = libm::log(values.iter().map(|&v| libm::exp(v)).sum::<f64>() / 7.0);
        assert!((acc.log_mean() - naive).abs() < 1e-14);
        // Huge values do not overflow.
        let mut big = LogMeanExp::EMPTY;
        big.push(1000.0);
        big.push(1000.0);
        assert!((big.log_mean() - 1000.0).abs() < 1e-12);
        assert!(LogMeanExp::EMPTY.log_mean().is_nan());
        let mut dead = LogMeanExp::EMPTY;
        dead.push(f64::NEG_INFINITY);
        assert_eq!(dead.log_mean(), f64::NEG_INFINITY);
        dead.push(f64::NAN);
        dead.push(3.0);
        assert!(dead.log_mean().is_nan());
    }

    #[test]
    fn batches_cover_the_round_evenly() {
        for n in [1u64, 5, 31, 32, 33, 100, 1024, 1000] {
            let mut counts = [0u64; BATCHES];
            let mut ends = 0;
            for i in 0..n {
                let (b, last) = batch_of(i, n);
                counts[b] += 1;
                ends += usize::from(last);
            }
            let used = n.min(BATCHES as u64) as usize;
            assert_eq!(ends, used, "n {n}");
            let (lo, hi) = (
                counts[..used].iter().min().unwrap(),
                counts[..used].iter().max().unwrap(),
            );
            assert!(hi - lo <= 1, "n {n}: {counts:?}");
        }
    }

    #[test]
    fn batch_means_standard_error() {
        let mut b = BatchMeans::default();
        assert!(b.standard_error().is_nan());
        for v in [1.0, 2.0, 3.0, 4.0] {
            b.push(v);
        }
        // sd = sqrt(5/3), se = sd/2.
        assert!((b.standard_error() - libm::sqrt(5.0 / 3.0) / 2.0).abs() < 1e-15);
        for _ in 0..100 {
            b.push(0.0);
        }
        assert_eq!(b.values().len(), BATCHES);
        b.clear();
        assert!(b.values().is_empty());
    }
}
