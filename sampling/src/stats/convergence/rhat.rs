//! The pieces of R̂: moments of a chain, the classic R̂ of equal chains, and rank
//! normalization (the formulas are in the [parent's docs](super)).

/// Mean and sample variance (divisor len − 1) of a chain of at least 2 values; a constant
/// chain has its value as mean and variance 0 exactly (a computed mean of identical
/// values can be off by an ulp).
pub(super) fn moments(chain: &[f64]) -> (f64, f64) {
    let first = chain[0];
    if chain.iter().all(|&x| x == first) {
        return (first, 0.0);
    }
    let n = chain.len() as f64;
    let mean = chain.iter().sum::<f64>() / n;
    let ss: f64 = chain.iter().map(|x| (x - mean) * (x - mean)).sum();
    (mean, ss / (n - 1.0))
}

/// The classic R̂ of `chains` equal chains of at least 2 values each, stored one after
/// the other (BDA3 §11.4): √((B/W + n − 1)/n) with B = n · the variance of the chain
/// means and W the mean within-chain variance. 1 when every value is the same, +∞ when
/// only the chains' values differ (W = 0 < B).
pub(super) fn classic_rhat(values: &[f64], chains: usize) -> f64 {
    let len = values.len() / chains;
    let n = len as f64;
    let (mut within, mut mean, mut m2) = (0.0, 0.0, 0.0);
    for (c, chain) in values.chunks_exact(len).enumerate() {
        let (chain_mean, var) = moments(chain);
        within += var;
        // Welford's running variance of the chain means.
        let delta = chain_mean - mean;
        mean += delta / (c + 1) as f64;
        m2 += delta * (chain_mean - mean);
    }
    let within = within / chains as f64;
    let between = n * m2 / (chains - 1) as f64;
    if within == 0.0 {
        return if between == 0.0 { 1.0 } else { f64::INFINITY };
    }
    ((between / within + n - 1.0) / n).sqrt()
}

/// Rank normalization: `out[i]` = Φ⁻¹((rᵢ − 3/8)/(S + 1/4)) with rᵢ the rank of
/// `values[i]` among all S values, from 1, ties at their average rank.
pub(super) fn rank_normalize(values: &[f64], out: &mut Vec<f64>, order: &mut Vec<usize>) {
    let s = values.len();
    order.clear();
    order.extend(0..s);
    order.sort_unstable_by(|&a, &b| values[a].total_cmp(&values[b]));
    out.clear();
    out.resize(s, 0.0);
    let mut i = 0;
    while i < s {
        let value = values[order[i]];
        let mut j = i + 1;
        while j < s && values[order[j]] == value {
            j += 1;
        }
        // Ranks i + 1 … j share their average.
        let rank = (i + 1 + j) as f64 / 2.0;
        let z = normal_quantile((rank - 0.375) / (s as f64 + 0.25));
        for &k in &order[i..j] {
            out[k] = z;
        }
        i = j;
    }
}

/// Φ⁻¹(p), the standard normal quantile, for p in (0, 1): −√2 · erfc⁻¹(2p).
pub(super) fn normal_quantile(p: f64) -> f64 {
    -std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p)
}
