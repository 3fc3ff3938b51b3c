//! The communication barrier from swap rejection rates: Λ̂, the cumulative Λ̂(β), the
//! local λ̂(β), and the β grid at equal barrier.
//!
//! # Estimator
//!
//! Syed, Bouchard-Côté, Deligiannidis and Doucet (JRSS-B 2022) show that the
//! rejection rate of the swap between β and β′ is `r(β, β′) = |Λ(β′) − Λ(β)| + O(|β′ − β|³)`
//! with Λ(β) = ∫₀^β λ the cumulative barrier. So on a grid β_0 = 1 > … > β_{P−1} = 0
//! with pair rejection rates r_l (pair (l, l + 1)),
//!
//! ```text
//! Λ̂(β_l) = Σ_{j ≥ l} r_j  (Λ̂(β_{P−1}) = Λ̂(0) = 0),      Λ̂ = Λ̂(1) = Σ_l r_l,
//! ```
//!
//! whose error is O(P · (1/P)³) = O(1/P²) for a grid of mesh O(1/P).
//!
//! # Interpolation: monotone cubic Hermite
//!
//! Between the knots, Λ̂(β) is the monotone piecewise cubic Hermite interpolant of
//! Fritsch and Carlson (SIAM J. Numer. Anal. 1980), with the tangents of Fritsch and
//! Butland (SIAM J. Sci. Stat. Comput. 1984; MATLAB's `pchip`): at an interior knot the
//! weighted harmonic mean `(w₁ + w₂)/(w₁/δ_{i−1} + w₂/δ_i)`, `w₁ = 2h_i + h_{i−1}`,
//! `w₂ = h_i + 2h_{i−1}`, of the neighbouring secants δ (0 where one of them is 0); at
//! the ends the one-sided three-point formula clamped to [0, 3δ]. Every tangent lies in
//! [0, 3δ] of both its segments, inside Fritsch and Carlson's monotonicity region, so
//! Λ̂(β) is non-decreasing, and strictly increasing where every r_l > 0.
//!
//! Why not piecewise linear: Λ is typically strongly concave (the barrier piles up near
//! the reference: λ(β) ∝ 1/τ_β for the Gaussian path), so a chord underestimates Λ
//! between the knots and a linear λ̂ would be a step function; the cubic is C¹, gives a
//! continuous λ̂(β) = dΛ̂/dβ, and its error between knots is O(h³) where linear is O(h²).
//! Why these tangents: each is a function of its two neighbouring secants only, so the
//! interpolant is evaluated from the knots alone, with no stored tangent (no buffer).
//! Pigeons.jl (`Interpolations.jl`'s Fritsch–Carlson) uses the same family; its tangents
//! differ (three-point means, then limited), so values between knots differ slightly.
//!
//! # The equal-barrier grid
//!
//! Syed et al. show the round-trip rate is best when all r_l are equal; the grid of Q
//! points with `Λ̂(β′_j) = Λ̂ · (Q − 1 − j)/(Q − 1)` (j = 0 … Q − 1, so β′_0 = 1 and
//! β′_{Q−1} = 0) makes each pair reject about Λ̂/(Q − 1). Λ̂ is monotone on each
//! segment, so each β′_j is found by bisection on its segment (to adjacent doubles).

use crate::error::{Error, check_chains, check_len};

use super::schedule::check_grid;

/// The cumulative barrier at the knots of a grid, in level order, from the rejection
/// rate of each pair: `out[l] = Σ_{j ≥ l} rejections[j]`, `out[P − 1] = 0`. Returns
/// Λ̂ = `out[0]`.
///
/// # Errors
///
/// [`Error::LengthMismatch`] unless `out.len() = rejections.len() + 1 ≥ 2`;
/// [`Error::InvalidValue`] (`"rejections"`) for a rate outside [0, 1] or NaN.
pub fn cumulative_from_rejections(rejections: &[f64], out: &mut [f64]) -> Result<f64, Error> {
    check_chains(out.len())?;
    check_len("rejections", rejections.len(), out.len() - 1)?;
    if let Some(&bad) = rejections.iter().find(|r| !(0.0..=1.0).contains(*r)) {
        return Err(Error::InvalidValue {
            name: "rejections",
            value: bad,
            allowed: "in [0, 1]",
        });
    }
    let mut acc = 0.0;
    let p = out.len();
    out[p - 1] = 0.0;
    for l in (0..p - 1).rev() {
        acc += rejections[l];
        out[l] = acc;
    }
    Ok(acc)
}

/// The interpolated cumulative barrier Λ̂(β) through knots `(β_l, Λ̂(β_l))` in level
/// order (see the [module docs](self)). Borrows the knots; evaluation is O(log P).
#[derive(Clone, Copy, Debug)]
pub struct Barrier<'a> {
    betas: &'a [f64],
    cumulative: &'a [f64],
}

impl<'a> Barrier<'a> {
    /// Knots in level order: `betas` strictly decreasing from 1 to 0, `cumulative`
    /// finite, non-increasing, with `cumulative[P − 1] = 0` (as
    /// [`cumulative_from_rejections`] writes them).
    pub fn new(betas: &'a [f64], cumulative: &'a [f64]) -> Result<Self, Error> {
        let p = check_grid(betas)?;
        check_len("cumulative", cumulative.len(), p)?;
        for (l, &c) in cumulative.iter().enumerate() {
            let ok = c.is_finite()
                && match cumulative.get(l + 1) {
                    Some(&next) => c >= next,
                    None => c == 0.0,
                };
            if !ok {
                return Err(Error::InvalidValue {
                    name: "cumulative",
                    value: c,
                    allowed: "finite, non-increasing by level, 0 at the last level",
                });
            }
        }
        Ok(Barrier { betas, cumulative })
    }

    /// Knots the caller knows to be valid (the driver's own).
    pub(crate) fn from_checked(betas: &'a [f64], cumulative: &'a [f64]) -> Self {
        Barrier { betas, cumulative }
    }

    /// Number of knots P.
    pub fn knots(&self) -> usize {
        self.betas.len()
    }

    /// The knots' β, in level order.
    pub fn betas(&self) -> &'a [f64] {
        self.betas
    }

    /// Λ̂ at the knots, in level order.
    pub fn knot_values(&self) -> &'a [f64] {
        self.cumulative
    }

    /// The global barrier Λ̂ = Λ̂(1) = Σ_l r_l.
    pub fn global(&self) -> f64 {
        self.cumulative[0]
    }

    /// The rejection rate of pair (l, l + 1) the knots were built from.
    pub fn pair_rejection(&self, pair: usize) -> Option<f64> {
        Some(self.cumulative.get(pair)? - self.cumulative.get(pair + 1)?)
    }

    // Knot i in ascending β: level P − 1 − i.
    fn x(&self, i: usize) -> f64 {
        self.betas[self.betas.len() - 1 - i]
    }

    fn y(&self, i: usize) -> f64 {
        self.cumulative[self.cumulative.len() - 1 - i]
    }

    fn secant(&self, i: usize) -> f64 {
        (self.y(i + 1) - self.y(i)) / (self.x(i + 1) - self.x(i))
    }

    fn width(&self, i: usize) -> f64 {
        self.x(i + 1) - self.x(i)
    }

    /// Tangent at ascending knot i (Fritsch–Butland).
    fn tangent(&self, i: usize) -> f64 {
        let n = self.knots();
        if n == 2 {
            return self.secant(0);
        }
        let end = |near: usize, far: usize| {
            let (h0, h1) = (self.width(near), self.width(far));
            let (d0, d1) = (self.secant(near), self.secant(far));
            let m = ((2.0 * h0 + h1) * d0 - h0 * d1) / (h0 + h1);
            if d0 > 0.0 {
                m.clamp(0.0, 3.0 * d0)
            } else {
                0.0
            }
        };
        if i == 0 {
            end(0, 1)
        } else if i == n - 1 {
            end(n - 2, n - 3)
        } else {
            let (d0, d1) = (self.secant(i - 1), self.secant(i));
            if d0 > 0.0 && d1 > 0.0 {
                let (h0, h1) = (self.width(i - 1), self.width(i));
                let (w1, w2) = (2.0 * h1 + h0, h1 + 2.0 * h0);
                (w1 + w2) / (w1 / d0 + w2 / d1)
            } else {
                0.0
            }
        }
    }

    /// The ascending segment i with x(i) ≤ β ≤ x(i + 1), for β in [0, 1].
    fn segment(&self, beta: f64) -> usize {
        let (mut lo, mut hi) = (0, self.knots() - 1);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.x(mid) <= beta {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Value and derivative of the Hermite cubic of segment i at β.
    fn hermite(&self, i: usize, beta: f64) -> (f64, f64) {
        let h = self.width(i);
        let t = (beta - self.x(i)) / h;
        let (y0, y1) = (self.y(i), self.y(i + 1));
        let (m0, m1) = (self.tangent(i), self.tangent(i + 1));
        let t2 = t * t;
        let t3 = t2 * t;
        // y0·h00 + y1·h01 written as y0 + (y1 − y0)·h01: exact on flat segments.
        let value = y0
            + (y1 - y0) * (3.0 * t2 - 2.0 * t3)
            + h * m0 * (t3 - 2.0 * t2 + t)
            + h * m1 * (t3 - t2);
        let slope = (y1 - y0) * (6.0 * t - 6.0 * t2) / h
            + m0 * (3.0 * t2 - 4.0 * t + 1.0)
            + m1 * (3.0 * t2 - 2.0 * t);
        (value, slope)
    }

    /// Λ̂(β), β clamped to [0, 1] (NaN gives NaN).
    pub fn cumulative(&self, beta: f64) -> f64 {
        if beta.is_nan() {
            return f64::NAN;
        }
        let b = beta.clamp(0.0, 1.0);
        self.hermite(self.segment(b), b).0
    }

    /// λ̂(β) = dΛ̂/dβ, β clamped to [0, 1] (NaN gives NaN).
    pub fn local(&self, beta: f64) -> f64 {
        if beta.is_nan() {
            return f64::NAN;
        }
        let b = beta.clamp(0.0, 1.0);
        self.hermite(self.segment(b), b).1
    }

    /// A β with Λ̂(β) = `level` (clamped to [0, Λ̂]); where Λ̂ is flat at that level, the
    /// smallest knot of the flat stretch. NaN gives NaN.
    pub fn inverse(&self, level: f64) -> f64 {
        if level.is_nan() {
            return f64::NAN;
        }
        let v = level.clamp(0.0, self.global());
        let n = self.knots();
        // First ascending knot whose value exceeds v (v < y(n − 1)), else the end.
        let (mut lo, mut hi) = (0, n - 1);
        if v >= self.y(n - 1) {
            // v = Λ̂: the first knot that reaches it.
            let mut i = n - 1;
            while i > 0 && self.y(i - 1) >= v {
                i -= 1;
            }
            return self.x(i);
        }
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.y(mid) <= v {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        // y(lo) ≤ v < y(lo + 1): the cubic of segment lo crosses v.
        if self.y(lo) == v {
            while lo > 0 && self.y(lo - 1) == v {
                lo -= 1;
            }
            return self.x(lo);
        }
        let (mut a, mut b) = (self.x(lo), self.x(lo + 1));
        for _ in 0..200 {
            let mid = 0.5 * (a + b);
            if mid <= a || mid >= b {
                break;
            }
            if self.hermite(lo, mid).0 < v {
                a = mid;
            } else {
                b = mid;
            }
        }
        0.5 * (a + b)
    }

    /// Writes the grid of `out.len() = Q ≥ 2` points at equal barrier, in level order
    /// (β′_0 = 1, β′_{Q−1} = 0, Λ̂(β′_j) = Λ̂ (Q − 1 − j)/(Q − 1)). Q may differ from P.
    ///
    /// # Errors
    ///
    /// [`Error::TooFewChains`] for Q < 2; [`Error::InvalidValue`] (`"global_barrier"`) when
    /// Λ̂ = 0 (no rejection: no grid is better than another) or when the points would
    /// not be strictly decreasing (a degenerate barrier); `out` is then unspecified.
    pub fn equal_barrier_grid(&self, out: &mut [f64]) -> Result<(), Error> {
        check_chains(out.len())?;
        let total = self.global();
        if total.is_nan() || total <= 0.0 {
            return Err(Error::InvalidValue {
                name: "global_barrier",
                value: total,
                allowed: "> 0 to place a grid at equal barrier",
            });
        }
        let q = out.len();
        let top = (q - 1) as f64;
        for (j, b) in out.iter_mut().enumerate() {
            *b = match j {
                0 => 1.0,
                j if j == q - 1 => 0.0,
                j => self.inverse(total * ((q - 1 - j) as f64 / top)),
            };
        }
        check_grid(out).map_err(|_| Error::InvalidValue {
            name: "global_barrier",
            value: total,
            allowed: "a barrier whose inverse gives a strictly decreasing grid",
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn knots_of(f: impl Fn(f64) -> f64, betas: &[f64]) -> Vec<f64> {
        betas.iter().map(|&b| f(b) - f(0.0)).collect()
    }

    fn grid(p: usize, warp: impl Fn(f64) -> f64) -> Vec<f64> {
        (0..p)
            .map(|l| warp(1.0 - l as f64 / (p - 1) as f64))
            .collect()
    }

    #[test]
    fn linear_data_is_reproduced_exactly() {
        let betas = grid(7, |t| t);
        let rej = [0.1; 6];
        let mut cum = [0.0; 7];
        let total = cumulative_from_rejections(&rej, &mut cum).unwrap();
        assert!((total - 0.6).abs() < 1e-15);
        let b = Barrier::new(&betas, &cum).unwrap();
        for k in 0..=100 {
            let beta = k as f64 / 100.0;
            assert!((b.cumulative(beta) - 0.6 * beta).abs() < 1e-14, "β {beta}");
            assert!((b.local(beta) - 0.6).abs() < 1e-12, "β {beta}");
            assert!((b.inverse(0.6 * beta) - beta).abs() < 1e-14);
        }
        assert!((b.pair_rejection(2).unwrap() - 0.1).abs() < 1e-15);
        assert_eq!(b.pair_rejection(6), None);
    }

    /// Monotone through the knots on uneven data (a rate of 0 included), and exact at the
    /// knots; the inverse is a right inverse.
    #[test]
    fn interpolant_is_monotone_and_interpolates() {
        let betas = [1.0, 0.9, 0.85, 0.5, 0.45, 0.2, 0.0];
        let rej = [0.3, 0.0, 0.05, 0.4, 0.01, 0.2];
        let mut cum = [0.0; 7];
        cumulative_from_rejections(&rej, &mut cum).unwrap();
        let b = Barrier::new(&betas, &cum).unwrap();
        for (l, &beta) in betas.iter().enumerate() {
            assert!((b.cumulative(beta) - cum[l]).abs() < 1e-15);
        }
        let mut last = -1.0;
        for k in 0..=10_000 {
            let beta = k as f64 / 10_000.0;
            let v = b.cumulative(beta);
            assert!(v >= last, "β {beta}: {v} < {last}");
            assert!(b.local(beta) >= -1e-12);
            last = v;
        }
        for k in 0..=1000 {
            let v = b.global() * k as f64 / 1000.0;
            assert!((b.cumulative(b.inverse(v)) - v).abs() < 1e-13, "level {v}");
        }
        // Flat stretch between β = 0.85 and 0.9: the inverse of its level is its start.
        assert_eq!(b.inverse(cum[1]), 0.85);
    }

    /// On knots of a smooth concave Λ(β) = ln(1 + 9β), the equal-barrier grid of 9
    /// points is close to the exact one, β′_j = (10^{(8−j)/8} − 1)/9, and λ̂ to 9/(1 + 9β).
    #[test]
    fn equal_barrier_grid_inverts_a_smooth_barrier() {
        let f = |b: f64| libm::log(1.0 + 9.0 * b);
        let betas = grid(60, |t| (libm::pow(10.0, t) - 1.0) / 9.0);
        let cum = knots_of(f, &betas);
        let b = Barrier::new(&betas, &cum).unwrap();
        let mut out = [0.0; 9];
        b.equal_barrier_grid(&mut out).unwrap();
        for (j, &beta) in out.iter().enumerate() {
            let exact = (libm::pow(10.0, (8 - j) as f64 / 8.0) - 1.0) / 9.0;
            assert!((beta - exact).abs() < 1e-5, "j {j}: {beta} vs {exact}");
        }
        for beta in [0.05, 0.2, 0.5, 0.8] {
            let exact = 9.0 / (1.0 + 9.0 * beta);
            assert!((b.local(beta) / exact - 1.0).abs() < 1e-3, "β {beta}");
        }
    }

    #[test]
    fn bad_knots_are_errors() {
        let betas = [1.0, 0.5, 0.0];
        assert!(
            Barrier::new(&betas, &[0.5, 0.2, 0.1]).is_err(),
            "last must be 0"
        );
        assert!(
            Barrier::new(&betas, &[0.1, 0.2, 0.0]).is_err(),
            "must not increase by level"
        );
        assert!(Barrier::new(&betas, &[f64::NAN, 0.2, 0.0]).is_err());
        assert!(Barrier::new(&betas, &[0.3, 0.0]).is_err());
        assert!(Barrier::new(&[1.0, 0.6, 0.6, 0.0], &[0.3, 0.2, 0.1, 0.0]).is_err());
        let mut out = [0.0; 3];
        assert!(cumulative_from_rejections(&[0.1, 1.5], &mut out).is_err());
        assert!(cumulative_from_rejections(&[0.1, f64::NAN], &mut out).is_err());
        assert!(cumulative_from_rejections(&[0.1], &mut out).is_err());
        let zero = Barrier::new(&betas, &[0.0, 0.0, 0.0]).unwrap();
        assert!(zero.equal_barrier_grid(&mut out).is_err());
        let b = Barrier::new(&betas, &[0.3, 0.1, 0.0]).unwrap();
        assert!(b.equal_barrier_grid(&mut out[..1]).is_err());
        assert!(b.equal_barrier_grid(&mut out).is_ok());
        assert!(b.cumulative(f64::NAN).is_nan() && b.inverse(f64::NAN).is_nan());
    }
}
