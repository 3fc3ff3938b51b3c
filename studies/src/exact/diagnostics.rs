//! What an exact tempering run warns about, each warning with what to do, and the
//! Gaussian-swap correction of Λ̂ that the first of them quotes.
//!
//! # The warnings (DESIGN.md: "a run must say so rather than print a confident number")
//!
//! - A pair whose rejection rate r̂ (mean over ensembles) exceeds [`MAX_REJECTION`] while
//!   Λ̂ asks for more chains than the run had, or a pair that never swapped in the
//!   measured round of an ensemble: too few chains. Σ r̂ then underestimates Λ (each
//!   r̂ ≤ 1), the stepping stone rests on rare weights, and the warning gives the chains
//!   that Λ̂ (and its Gaussian-swap correction) suggest, as "at least" where Λ̂ only
//!   bounds the barrier ([`super::barrier_saturated`]). The condition on Λ̂ is there
//!   because `--chains auto`'s own rule, P − 1 ≈ 2Λ, puts the equal rejection Λ/(P − 1)
//!   at 0.5 give or take the rounding of P (0.517 for Λ = 3.62, P = 8): rejections a
//!   little above 0.5 at the P that Λ̂ recommends are the rule working, not a fault.
//! - No round trip in the measured round of an ensemble, or fewer than
//!   [`MIN_ROUND_TRIPS`]: log Z's standard error is then unreliable
//!   ([`super::log_z_error`]).
//! - Forward and reverse stepping stones more than [`STEPPING_STONE_SE`] combined
//!   standard errors apart (√(SE_f² + SE_r²): the two share their states, so the errors
//!   are positively correlated and this overstates the noise of the difference; the
//!   check errs towards silence).
//! - Measured round trips below [`ROUND_TRIP_SHARE`] of the prediction from the measured
//!   rejections (Syed et al.'s 1/(2 + 2Σ r̂/(1 − r̂)) for W = 1, Lemma 1 for W > 1; none
//!   for SEO, which the prediction does not describe): the explorers do not forget their
//!   state between swaps, as the theory assumes.
//!
//! # The Gaussian-swap correction
//!
//! Suppose the swap log-ratio log A = Δβ(ℓ(Y) − ℓ(X)) of a pair (X at the colder level,
//! Y at the hotter, Δβ the gap) is Gaussian. Along the path, `d/dβ E_β[ℓ] = Var_β(ℓ)`, so
//! with ℓ of variance σ² at both levels, log A ~ N(−μ, 2μ) with μ = Δβ²σ². Then
//!
//! ```text
//! E[min(1, e^{log A})] = 2Φ(−√(μ/2)),   r = 1 − 2Φ(−√(μ/2)) = 2Φ(√(μ/2)) − 1,
//! ```
//!
//! (the acceptance of a Gaussian log-ratio whose variance is twice its mean, as for
//! Gaussian energies: Predescu, Predescu and Ciobanu, J. Phys. Chem. B 2004), while the
//! pair's share of the barrier, ∫λ = Δβ·σ/√π (Syed et al.'s λ(β) = ½E|ℓ(X₁) − ℓ(X₂)|,
//! X₁, X₂ independent draws of π_β, is σ/√π for Gaussian ℓ), is √(μ/π). Inverting, √(μ/2) = Φ⁻¹((1 + r)/2), so the pair's barrier is
//!
//! ```text
//! Λ_pair = √(2/π) Φ⁻¹((1 + r)/2) = (2/√π) erf⁻¹(r)  ≥ r,
//! ```
//!
//! equal to r to first order as r → 0 and unbounded as r → 1, where r itself saturates.
//! Summed over the pairs it is [`gaussian_corrected_barrier`]. The assumption (Gaussian
//! ℓ of equal variance at both ends of a pair) holds for exponential families with many
//! degrees of freedom, as on the Gaussian path at large D (ℓ a scaled χ²_D); elsewhere
//! it is a diagnostic: a value far above Σ r̂ says the pairs are too far apart.

use nrpt_core::exact::{ExactExplorer, PairRecord, recommended_chains};

use super::{AUTO_RULE, ExactOutcome, MIN_ROUND_TRIPS, Pooled};

/// Pairs rejecting more than this share of their swaps give a warning.
pub const MAX_REJECTION: f64 = 0.5;

/// Forward and reverse stepping stones further apart than this many combined standard
/// errors give a warning.
pub const STEPPING_STONE_SE: f64 = 4.0;

/// Measured round trips below this share of the prediction give a warning.
pub const ROUND_TRIP_SHARE: f64 = 0.5;

/// Σ_l (2/√π) erf⁻¹(r_l) = Σ_l √(2/π) Φ⁻¹((1 + r_l)/2): the barrier of pairs with
/// rejection rates `rejections` if every swap log-ratio were Gaussian (see the [module
/// docs](self)). `None` when a rate is 1 (or above) or NaN: the correction is then
/// unbounded or undefined. Rates below 0 count as 0.
pub fn gaussian_corrected_barrier(rejections: &[f64]) -> Option<f64> {
    let mut sum = 0.0;
    for &r in rejections {
        if r.is_nan() || r >= 1.0 {
            return None;
        }
        sum += 2.0 / std::f64::consts::PI.sqrt() * statrs::function::erf::erf_inv(r.max(0.0));
    }
    Some(sum)
}

/// Whom the warnings advise, and so which settings they name: the command's flags and
/// its explorers, or the keyword arguments of a controller whose caller explores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Advice<'a> {
    /// `nrpt run` (`--chains auto`, `--iterations`, `--window 1`, …) with this explorer.
    Command(&'a ExactExplorer),
    /// A controller told the log-likelihoods ([`super::told::ExactController`], Python's
    /// `nrpt.ExactController`): `chains=`, `window=`, more iterations, and the caller's
    /// own sampler.
    Controller,
}

impl Advice<'_> {
    /// "use …" for more chains, `n` the number the run's Λ̂ suggests.
    fn more_chains(self, n: Option<usize>) -> String {
        match (self, n) {
            (Advice::Command(_), Some(n)) => format!("use --chains auto or --chains {n}"),
            (Advice::Command(_), None) => "use --chains auto".into(),
            (Advice::Controller, Some(n)) => format!("use chains={n}"),
            (Advice::Controller, None) => "use more chains".into(),
        }
    }

    /// The run's length, as the reader sets it.
    fn iterations(self) -> &'static str {
        match self {
            Advice::Command(_) => "--iterations",
            Advice::Controller => "iterations",
        }
    }

    /// A longer measured round, as the reader asks for it.
    fn longer_run(self) -> &'static str {
        match self {
            Advice::Command(_) => {
                "run more --iterations (the measured round is about half of them)"
            }
            Advice::Controller => "run more iterations (the last round is about half of them)",
        }
    }

    /// More chains or a longer run, as the reader asks for them.
    fn chains_or_iterations(self) -> &'static str {
        match self {
            Advice::Command(_) => "use more chains (--chains auto) or more --iterations",
            Advice::Controller => "use more chains or more iterations",
        }
    }

    /// The round the estimates come from.
    fn round(self) -> &'static str {
        match self {
            Advice::Command(_) => "the measured round",
            Advice::Controller => "the last round",
        }
    }

    /// The vanilla window, as the reader sets it.
    fn window_one(self) -> &'static str {
        match self {
            Advice::Command(_) => "--window 1",
            Advice::Controller => "window=1",
        }
    }
}

/// The warning of a window W > 1 with exact (Metropolis) swaps, which biases the levels.
pub fn window_warning(window: u32, advice: Advice<'_>) -> Option<String> {
    (window > 1).then(|| {
        format!(
            "window {window}: with exact (Metropolis) swaps, a pair rejected in a window tries \
             again at its next iteration, so its swaps are accepted with probability \
             1 − (1 − α)^k instead of α: the levels' distributions, log Z and Λ̂ are \
             biased (round trips still follow Lemma 1); use {} to estimate them",
            advice.window_one()
        )
    })
}

/// The warnings of a finished run (empty for a healthy one), each saying what to do in
/// the terms of `advice` (the run's explorer, for the command).
pub fn diagnostics(out: &ExactOutcome, pooled: &Pooled, advice: Advice<'_>) -> Vec<String> {
    let mut w = Vec::new();
    let ensembles = out.ensembles.len();
    if ensembles == 0 {
        w.extend(window_warning(out.window, advice));
        return w;
    }
    let pairs = out.chains.saturating_sub(1);
    let mean_rejection = |l: usize| {
        out.ensembles
            .iter()
            .map(|en| en.pairs.get(l).map_or(f64::NAN, PairRecord::rejection_rate))
            .sum::<f64>()
            / ensembles as f64
    };
    // Λ̂ asks for more chains (or cannot say).
    let too_few = recommended_chains(pooled.lambda, AUTO_RULE).map_or(true, |n| n > out.chains);
    let high: Vec<(usize, f64)> = (0..pairs)
        .map(|l| (l, mean_rejection(l)))
        .filter(|&(_, r)| r > MAX_REJECTION && too_few)
        .collect();
    let stuck: Vec<usize> = (0..pairs)
        .filter(|&l| {
            out.ensembles
                .iter()
                .any(|en| en.pairs.get(l).is_some_and(|p| p.accepted() == 0))
        })
        .collect();
    if !high.is_empty() || !stuck.is_empty() {
        w.push(too_few_chains(out, pooled, &high, &stuck, advice));
    }
    let measured = out
        .ensembles
        .first()
        .and_then(|e| e.last())
        .map_or(0, |r| r.iterations);
    let trips: Vec<u64> = out
        .ensembles
        .iter()
        .map(|en| en.last().map_or(0, |r| r.round_trips))
        .collect();
    let tripless = trips.iter().filter(|&&t| t == 0).count();
    let few = trips.iter().filter(|&&t| t < MIN_ROUND_TRIPS).count();
    let fewest = trips.iter().copied().min().unwrap_or(0);
    let more_chains = if high.is_empty() && stuck.is_empty() {
        ""
    } else {
        ", with more chains (above)"
    };
    if tripless > 0 {
        w.push(format!(
            "no round trip in {} ({measured} iterations) of {tripless} of {ensembles} \
             ensemble(s): no replica went from the reference (β = 0) to the target (β = 1) \
             and back, so nothing shows that the levels mix, and log Z's standard error is \
             unreliable (likely too small); run more {}{more_chains}",
            advice.round(),
            advice.iterations(),
        ));
    } else if few > 0 {
        w.push(format!(
            "only {fewest} round trip(s) in {} ({measured} iterations) of at least one of \
             {ensembles} ensemble(s), fewer than {MIN_ROUND_TRIPS}: the states are renewed \
             from the reference too rarely for log Z's standard error to be reliable (it is \
             likely too small); {}{more_chains}",
            advice.round(),
            advice.longer_run(),
        ));
    }
    let combined = pooled.log_z_forward_se.hypot(pooled.log_z_reverse_se);
    let gap = (pooled.log_z_forward - pooled.log_z_reverse).abs();
    if combined.is_finite() && gap > STEPPING_STONE_SE * combined {
        w.push(format!(
            "the forward and reverse stepping stones disagree: log Z = {:.4} ± {:.4} vs \
             {:.4} ± {:.4}, {:.1} combined standard errors apart (more than {STEPPING_STONE_SE}): \
             neighbouring levels overlap too little or are not at equilibrium, and both \
             errors understate the truth; {}",
            pooled.log_z_forward,
            pooled.log_z_forward_se,
            pooled.log_z_reverse,
            pooled.log_z_reverse_se,
            gap / combined,
            advice.chains_or_iterations()
        ));
    }
    let predicted = match out.window {
        0 => None,
        1 => Some(pooled.predicted_round_trips_per_1000),
        _ => pooled.lemma1_round_trips_per_1000,
    };
    if tripless == 0
        && let Some(predicted) = predicted
        && pooled.round_trips_per_1000 < ROUND_TRIP_SHARE * predicted
    {
        let lemma = if out.window > 1 {
            format!(" (Lemma 1, W = {})", out.window)
        } else {
            String::new()
        };
        let why = match advice {
            Advice::Command(explorer) => {
                let more = match explorer {
                    ExactExplorer::Mala(_) => "more --explorer-steps, or --explorer hmc",
                    ExactExplorer::Hmc(_) => "more --explorer-steps or --leapfrog-steps",
                };
                format!(
                    "the {} explorers (acceptance {:.2}) do not carry the replicas far enough \
                     between swaps; use {more}",
                    explorer.name(),
                    pooled.explorer_acceptance
                )
            }
            Advice::Controller => "the sampler does not carry the replicas far enough between \
                 tells (the prediction assumes each replica forgets its state between swaps); \
                 take more sampler steps per iteration"
                .into(),
        };
        w.push(format!(
            "round trips: {:.1} per 1000 iterations measured, less than half of the {predicted:.1} \
             that the rejections predict{lemma}: {why}",
            pooled.round_trips_per_1000,
        ));
    }
    w.extend(window_warning(out.window, advice));
    w
}

/// The warning of pairs that reject too often or never swap.
fn too_few_chains(
    out: &ExactOutcome,
    pooled: &Pooled,
    high: &[(usize, f64)],
    stuck: &[usize],
    advice: Advice<'_>,
) -> String {
    let pairs = out.chains - 1;
    let name = |l: usize| format!("{}–{}", l, l + 1);
    let mut what = Vec::new();
    if !high.is_empty() {
        let worst = high.iter().map(|&(_, r)| r).fold(0.0, f64::max);
        what.push(format!(
            "{} of {pairs} pairs reject more than half of their swaps (largest rejection \
             rate {worst:.3})",
            high.len()
        ));
    }
    if !stuck.is_empty() {
        let list: Vec<String> = stuck.iter().map(|&l| name(l)).collect();
        what.push(format!(
            "pair(s) {} never swapped in {} of at least one ensemble",
            list.join(", "),
            advice.round()
        ));
    }
    let by_lambda = recommended_chains(pooled.lambda, AUTO_RULE).ok();
    let by_corrected = pooled
        .barrier_gaussian_corrected
        .and_then(|c| recommended_chains(c, AUTO_RULE).ok());
    let bound = out.recommended(pooled).lower_bound;
    let mut verdict = format!(
        "{} chains are too few: Λ̂, log Z and the round trips are unreliable. Λ̂ = {:.3}",
        out.chains, pooled.lambda
    );
    if bound {
        verdict.push_str(&format!(
            " is only a lower bound of the barrier (each pair's rejection is at most 1, so \
             Σ r̂ ≤ P − 1 = {}, and it saturates when pairs reject this often)",
            out.chains - 1
        ));
    }
    if let Some(n) = by_lambda {
        if bound {
            verdict.push_str(&format!(": at least {n} chains (P − 1 ≈ 2Λ̂)"));
        } else {
            verdict.push_str(&format!(" suggests {n} chains (P − 1 ≈ 2Λ̂)"));
        }
    }
    if let (Some(c), Some(n)) = (pooled.barrier_gaussian_corrected, by_corrected)
        && by_lambda.is_none_or(|m| n > m)
    {
        verdict.push_str(&format!(
            "; Σ r̂ underestimates Λ when pairs reject this often, and its Gaussian-swap \
             correction {c:.3} suggests {}{n}",
            if bound { "at least " } else { "" }
        ));
    }
    let most = by_lambda.max(by_corrected).filter(|&n| n > out.chains);
    format!(
        "{}: {verdict}; {}",
        what.join("; "),
        advice.more_chains(most)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rejection rate of a Gaussian swap log-ratio N(−μ, 2μ), E[1 − min(1, e^X)],
    /// by Simpson's rule on (−μ − 14σ, 0) (the integrand is 0 for X > 0), without Φ.
    fn gaussian_rejection(mu: f64) -> f64 {
        let sd = (2.0 * mu).sqrt();
        let (lo, hi) = (-mu - 14.0 * sd, 0.0);
        let n = 20_000;
        let h = (hi - lo) / n as f64;
        let f = |x: f64| {
            let z = (x + mu) / sd;
            (1.0 - x.exp()) * (-0.5 * z * z).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt())
        };
        let mut s = f(lo) + f(hi);
        for i in 1..n {
            s += f(lo + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        s * h / 3.0
    }

    /// For Gaussian log-ratios the correction returns each pair's barrier √(μ/π)
    /// (module docs), from rejections computed by quadrature: relative error below 1e-9
    /// (the quadrature's, at 20,000 Simpson panels; erf⁻¹ itself is good to ~1e-15).
    #[test]
    fn the_correction_inverts_the_gaussian_rejection() {
        for mu in [1e-4, 0.01, 0.3, 1.0, 4.0, 16.0, 40.0] {
            let r = gaussian_rejection(mu);
            let want = (mu / std::f64::consts::PI).sqrt();
            let got = gaussian_corrected_barrier(&[r]).unwrap();
            assert!(
                (got / want - 1.0).abs() < 1e-9,
                "μ = {mu}: r = {r}, corrected {got}, √(μ/π) = {want}"
            );
            // Never below Σ r, equal to it to first order.
            assert!(got >= r, "μ = {mu}");
        }
        let small = gaussian_corrected_barrier(&[1e-6]).unwrap();
        assert!((small / 1e-6 - 1.0).abs() < 1e-9, "{small}");
        // Sums over pairs; undefined at r = 1 or NaN.
        let two = gaussian_corrected_barrier(&[0.2, 0.3]).unwrap();
        let one = |r| gaussian_corrected_barrier(&[r]).unwrap();
        assert!((two - one(0.2) - one(0.3)).abs() < 1e-15);
        assert_eq!(gaussian_corrected_barrier(&[0.2, 1.0]), None);
        assert_eq!(gaussian_corrected_barrier(&[f64::NAN]), None);
        assert_eq!(gaussian_corrected_barrier(&[]), Some(0.0));
    }
}
