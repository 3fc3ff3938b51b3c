//! Round-trip rates predicted from rejection rates, and how many chains to run.
//!
//! # The rate
//!
//! Syed, Bouchard-Côté, Deligiannidis and Doucet (JRSS-B 2022) show that
//! under efficient local exploration, DEO (W = 1) with pair rejection rates r_l makes
//!
//! ```text
//! τ = 1 / (2 + 2 Σ_l r_l/(1 − r_l))
//! ```
//!
//! round trips per iteration, all replicas together ([`round_trip_rate`]; with no
//! rejection, τ = 1/2: every replica completes a trip every 2P iterations). This is the
//! W = 1 case of Deng et al.'s Lemma 1 (see [`crate::optimal`]) when all r_l are equal.
//! With P chains at equal rejection r = Λ/(P − 1) (an equal-barrier grid),
//!
//! ```text
//! τ(P) = 1 / (2 + 2(P − 1) r/(1 − r)) = 1 / (2 + 2(P − 1)Λ/(P − 1 − Λ))   (P − 1 > Λ),
//! ```
//!
//! ([`equal_rejection_rate`]), which increases with P towards `τ∞ = 1/(2 + 2Λ)`
//! ([`limit_rate`]); for P − 1 ≤ Λ no grid can make every r < 1 and τ(P) = 0.
//!
//! # How many chains ([`recommended_chains`])
//!
//! Two rules, for two ways of paying for chains (n = P − 1 below):
//!
//! - [`ChainRule::NearLimit`] `{ tolerance: ε }`, for parallel hardware (a core or a GPU
//!   thread per chain, so more chains cost no time): the smallest P whose rate is
//!   within ε of the limit, τ(P) ≥ (1 − ε) τ∞. Solving
//!   `2 + 2nΛ/(n − Λ) ≤ (2 + 2Λ)/(1 − ε)` for n gives
//!   `n ≥ Λ(Λ + ε)/(ε(1 + Λ))`, so `P = 1 + max(1, ⌈Λ(Λ + ε)/(ε(1 + Λ))⌉)` (about Λ/ε:
//!   20Λ for ε = 5 %, since τ(P) approaches its limit only like 1 − Λ/n).
//! - [`ChainRule::CostOptimal`], for chains that share one processor (cost ∝ P per
//!   iteration): the P with the most round trips per chain-iteration, the minimizer of
//!   P/τ(P). With m = n − Λ, `P/τ(P) = 2[(1 + Λ)m + (1 + Λ)Λ²/m + (1 + Λ)² + Λ²]`,
//!   convex in m with its minimum at m = Λ: n = 2Λ, the "about 2Λ chains" that
//!   Pigeons.jl's reports suggest; the rule takes the better of ⌊2Λ⌋ and ⌈2Λ⌉ (with
//!   n > Λ and n ≥ 1). It gives half the limit rate, τ(2Λ + 1) = 1/(2 + 4Λ).

use crate::error::{Error, check_chains};

/// `1/(2 + 2Σ r_l/(1 − r_l))` (Syed et al.): predicted round trips per iteration of DEO
/// with these pair rejection rates; 0 when some r_l = 1.
///
/// # Errors
///
/// [`Error::InvalidValue`] (`"rejections"`) for an empty slice or a rate outside [0, 1].
pub fn round_trip_rate(rejections: &[f64]) -> Result<f64, Error> {
    if rejections.is_empty() {
        return Err(Error::InvalidValue {
            name: "rejections",
            value: 0.0,
            allowed: "at least one pair",
        });
    }
    if let Some(&bad) = rejections.iter().find(|r| !(0.0..=1.0).contains(*r)) {
        return Err(Error::InvalidValue {
            name: "rejections",
            value: bad,
            allowed: "in [0, 1]",
        });
    }
    Ok(rate_of(rejections.iter().copied()))
}

/// `1/(2 + 2Σ r/(1 − r))` for rates in [0, 1] (clamped), 0 when one is 1.
pub(crate) fn rate_of(rejections: impl Iterator<Item = f64>) -> f64 {
    let mut sum = 0.0;
    for r in rejections {
        let r = r.clamp(0.0, 1.0);
        if r == 1.0 {
            return 0.0;
        }
        sum += r / (1.0 - r);
    }
    1.0 / (2.0 + 2.0 * sum)
}

/// `1/(2 + 2Λ)`: the round-trip rate of DEO as the number of chains grows.
///
/// # Errors
///
/// [`Error::InvalidValue`] (`"global_barrier"`) unless Λ is finite and ≥ 0.
pub fn limit_rate(global_barrier: f64) -> Result<f64, Error> {
    check_barrier(global_barrier)?;
    Ok(1.0 / (2.0 + 2.0 * global_barrier))
}

/// τ(P) with equal rejections r = Λ/(P − 1): `1/(2 + 2(P − 1)r/(1 − r))`, 0 when r ≥ 1.
///
/// # Errors
///
/// As [`limit_rate`], and [`Error::TooFewChains`] for P < 2.
pub fn equal_rejection_rate(global_barrier: f64, chains: usize) -> Result<f64, Error> {
    check_barrier(global_barrier)?;
    check_chains(chains)?;
    let n = (chains - 1) as f64;
    if global_barrier >= n {
        return Ok(0.0);
    }
    Ok(1.0 / (2.0 + 2.0 * n * global_barrier / (n - global_barrier)))
}

/// How [`recommended_chains`] trades chains for round trips (see the
/// [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ChainRule {
    /// The fewest chains whose round-trip rate is within `tolerance` (relative, in
    /// (0, 1)) of the limit 1/(2 + 2Λ): for chains that run in parallel.
    NearLimit {
        /// ε: τ(P) ≥ (1 − ε)/(2 + 2Λ).
        tolerance: f64,
    },
    /// The most round trips per chain-iteration, P ≈ 2Λ + 1: for chains that share a
    /// processor.
    CostOptimal,
}

impl ChainRule {
    /// Within 5 % of the limit.
    pub const NEAR_LIMIT_5_PERCENT: ChainRule = ChainRule::NearLimit { tolerance: 0.05 };
}

/// The number of chains P ≥ 2 that `rule` recommends for the global barrier Λ.
///
/// # Errors
///
/// [`Error::InvalidValue`] for Λ not finite or < 0, or a tolerance outside (0, 1), or a
/// P too large for `usize`.
pub fn recommended_chains(global_barrier: f64, rule: ChainRule) -> Result<usize, Error> {
    check_barrier(global_barrier)?;
    let lam = global_barrier;
    let n = match rule {
        ChainRule::NearLimit { tolerance: eps } => {
            if !(eps > 0.0 && eps < 1.0) {
                return Err(Error::InvalidValue {
                    name: "tolerance",
                    value: eps,
                    allowed: "in (0, 1)",
                });
            }
            let bound = lam * (lam + eps) / (eps * (1.0 + lam));
            let mut n = to_count(libm::ceil(bound))?.max(1);
            // Guard the rounding of the bound: the rule is τ(n + 1) ≥ (1 − ε)τ∞.
            let ok = |n: usize| {
                let nf = n as f64;
                nf > lam && 2.0 + 2.0 * nf * lam / (nf - lam) <= (2.0 + 2.0 * lam) / (1.0 - eps)
            };
            while n > 1 && ok(n - 1) {
                n -= 1;
            }
            while !ok(n) {
                n = n.checked_add(1).ok_or(too_large(lam))?;
            }
            n
        }
        ChainRule::CostOptimal => {
            // P/τ(P) ∝ (n + 1)(1 + nΛ/(n − Λ)), convex in n > Λ, least at n = 2Λ.
            let cost = |n: usize| {
                let nf = n as f64;
                (nf + 1.0) * (1.0 + nf * lam / (nf - lam))
            };
            let lo = to_count(libm::floor(2.0 * lam))?;
            let first = if (lo as f64) > lam && lo >= 1 {
                lo
            } else {
                lo + 1
            };
            let second = to_count(libm::ceil(2.0 * lam))?.max(first);
            if cost(second) < cost(first) {
                second
            } else {
                first
            }
        }
    };
    n.checked_add(1).ok_or(too_large(lam))
}

fn check_barrier(global_barrier: f64) -> Result<(), Error> {
    if global_barrier.is_finite() && global_barrier >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidValue {
            name: "global_barrier",
            value: global_barrier,
            allowed: "finite and >= 0",
        })
    }
}

fn too_large(lam: f64) -> Error {
    Error::InvalidValue {
        name: "global_barrier",
        value: lam,
        allowed: "small enough that the number of chains fits in usize",
    }
}

fn to_count(x: f64) -> Result<usize, Error> {
    if (0.0..1e15).contains(&x) {
        Ok(x as usize)
    } else {
        Err(too_large(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(round_trip_rate(&[0.0; 5]), Ok(0.5));
        assert_eq!(round_trip_rate(&[0.5, 1.0]), Ok(0.0));
        // r = 1/2 everywhere: r/(1 − r) = 1.
        assert!((round_trip_rate(&[0.5; 4]).unwrap() - 0.1).abs() < 1e-15);
        assert!(round_trip_rate(&[]).is_err());
        assert!(round_trip_rate(&[0.2, f64::NAN]).is_err());
        assert_eq!(limit_rate(1.0), Ok(0.25));
        assert_eq!(equal_rejection_rate(3.0, 4), Ok(0.0));
        let r = equal_rejection_rate(2.0, 5).unwrap();
        assert!((r - round_trip_rate(&[0.5; 4]).unwrap()).abs() < 1e-15);
        assert!(limit_rate(-1.0).is_err() && limit_rate(f64::INFINITY).is_err());
        assert!(equal_rejection_rate(1.0, 1).is_err());
    }

    /// Both rules against a brute-force scan of their definitions.
    #[test]
    fn rules_match_a_scan() {
        for k in 0..=400 {
            let lam = k as f64 * 0.05;
            let limit = limit_rate(lam).unwrap();
            for eps in [0.01, 0.05, 0.2] {
                let p = recommended_chains(lam, ChainRule::NearLimit { tolerance: eps }).unwrap();
                // The fewest: P reaches the threshold, P − 1 does not (up to rounding).
                let threshold = (1.0 - eps) * limit;
                assert!(
                    equal_rejection_rate(lam, p).unwrap() >= threshold * (1.0 - 1e-12),
                    "Λ {lam} ε {eps}"
                );
                if p > 2 {
                    assert!(
                        equal_rejection_rate(lam, p - 1).unwrap() < threshold * (1.0 + 1e-12),
                        "Λ {lam} ε {eps}"
                    );
                }
            }
            let p = recommended_chains(lam, ChainRule::CostOptimal).unwrap();
            let per_chain = |p: usize| equal_rejection_rate(lam, p).unwrap() / p as f64;
            let best = (2..10_000)
                .max_by(|&a, &b| per_chain(a).total_cmp(&per_chain(b)))
                .unwrap();
            assert!(
                per_chain(p) >= per_chain(best) * (1.0 - 1e-12),
                "Λ {lam}: {p} vs {best}"
            );
        }
        assert!(recommended_chains(1.0, ChainRule::NearLimit { tolerance: 0.0 }).is_err());
        assert!(recommended_chains(f64::NAN, ChainRule::CostOptimal).is_err());
        assert!(recommended_chains(1e300, ChainRule::CostOptimal).is_err());
    }
}
