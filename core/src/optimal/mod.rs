//! The optimal swap window for windowed DEO: expected round-trip time and its minimiser.
//!
//! # Model
//!
//! Deng, Zhang, Feng, Liang and Lin, "Non-reversible Parallel Tempering for Deep Posterior
//! Approximation", AAAI 2023, Lemma 1: with `P` chains, swaps attempted by the windowed
//! deterministic even–odd scheme with a window of `W` iterations, and every adjacent pair
//! rejecting a swap with the same probability `r = 1 − S` (`S` the swap rate), the
//! expected round-trip time of the index process is, in iterations,
//!
//! ```text
//! E[T](P, W, r) = 2 W P · (1 + (P − 1) · r^W / (1 − r^W)),
//! ```
//!
//! and an ensemble of `P` chains completes `P / E[T]` round trips per iteration
//! ([`expected_round_trip`], [`round_trip_rate`]).
//!
//! # The optimal window
//!
//! Treat `W > 0` as continuous and put `x = r^W ∈ (0, 1)`, so `W ln r = ln x`. Then
//!
//! ```text
//! dE[T]/dW = 2P · g(x) / (1 − x)²,   g(x) = (1 − x)² + (P − 1) · x · (1 − x + ln x)
//!                                         = (1 − x)(1 + (P − 2)x) + (P − 1) x ln x,
//! ```
//!
//! so the stationary windows are `W = ln x / ln r` for the roots `x` of `g`, which depend on
//! `P` alone ([`stationarity`], [`x_star`]). With `g'(x) = 2(P − 2)(1 − x) + (P − 1) ln x`
//! and `g''(x) = (P − 1)/x − 2(P − 2)`:
//!
//! * `P ≥ 4`: `g''` is positive below `x_c = (P − 1)/(2(P − 2)) ≤ 3/4` and negative above,
//!   and `g'(1) = 0`, so `g' > 0` on `[x_c, 1)`; below `x_c`, `g'` increases from `−∞`.
//!   Hence `g` falls from `g(0⁺) = 1` to a single minimum and then rises to `g(1) = 0`
//!   (near 1, `g ≈ ε²(3 − P)/2 < 0` with `ε = 1 − x`). It has exactly one root `x⋆` in
//!   `(0, 1)`, where it is convex and decreasing; `E[T]` decreases in `W` up to
//!   `W⋆ = ln x⋆ / ln r` and increases after it.
//! * `P = 2, 3`: `g(x) = ε²(3 − P)/2 + (P − 1) Σ_{k≥3} ε^k / (k(k − 1)) > 0` on all of
//!   `(0, 1)` (for `P = 3`, `g ≈ ε³/3` near 1). There is no stationary window: `E[T]` increases
//!   with `W`, and the best window is the smallest one, one iteration.
//!
//! Windows are at least one iteration, so [`w_star`] returns the minimiser over `W ≥ 1`,
//! `max(1, W⋆)` (and `1` for `P ≤ 3`), [`stationary_window`] the unconstrained `W⋆` (if
//! any), and [`optimal_window`] the better integer window by `E[T]`.
//!
//! The paper's code uses the large-`P` form `ln(1/x⋆) ≈ ln P + ln ln P`:
//! `W_paper = ⌈(ln P + ln ln P) / (−ln(1 − S))⌉` ([`paper_window`]). For `P = 16`,
//! `S = 0.4` it gives 8 where `W⋆ ≈ 7.41` (and 7 is the better integer window); for `P = 10`,
//! `S = 0.005` it gives 626 where `W⋆ ≈ 603.8`.
//!
//! # Solving for `x⋆`
//!
//! For small `x` the equation is dominated by `1 + (P − 1) x ln x ≈ 0`, whose solution is
//! `x₀ = exp(W₋₁(−1/(P − 1)))` with `W₋₁` the lower branch of Lambert's W
//! ([`lambert_w_m1`]). At `x₀`, `g(x₀) = x₀((P − 3) − (P − 2)x₀) > 0`, so `x₀` lies left of
//! the root in the convex, decreasing part of `g`. Halley's iteration runs from there
//! inside a bracket `[lo, hi]` with `g(lo) > 0 ≥ g(hi)`, falling back to bisection if a
//! step leaves it, until the step is below two ulp. Near `x = 1`, `g` is evaluated from its
//! series in `ε = 1 − x` so that its sign is right where the two terms cancel.
//!
//! Kept whole past 600 lines: the model and its minimiser are about 380 lines; the rest
//! are their tests against the paper's numbers.

mod lambert;

pub use lambert::lambert_w_m1;

use crate::error::{Error, check_chains, check_positive, check_rate};

/// The root `x⋆` of the stationarity function [`stationarity`], or the reason there is none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum XStar {
    /// `P ≥ 4`: the unique root `x⋆ ∈ (0, 1)`; the stationary window is `ln x⋆ / ln r`.
    Root(f64),
    /// `P = 2` or `P = 3`: `g > 0` on all of `(0, 1)`, so `E[T]` increases with the window
    /// and the best window is the smallest, one iteration.
    NoInteriorRoot,
}

impl XStar {
    /// The root, if there is one.
    pub fn root(self) -> Option<f64> {
        match self {
            XStar::Root(x) => Some(x),
            XStar::NoInteriorRoot => None,
        }
    }
}

/// Expected round-trip time `E[T] = 2WP(1 + (P − 1) r^W / (1 − r^W))`, in iterations, for
/// `chains = P` chains, a window of `window = W` iterations (any real `W > 0`) and the
/// common adjacent swap rate `swap_rate = S = 1 − r` (Deng et al. 2023, Lemma 1).
///
/// Computed as `2P(W + (P − 1) W / expm1(−W ln r))`, which stays accurate for small
/// `W |ln r|` (as `W → 0`, `E[T] → 2P(P − 1)/(−ln r)`). Saturates at `+∞` if the time
/// exceeds the `f64` range.
///
/// # Errors
///
/// [`Error::TooFewChains`] for `chains < 2`, [`Error::InvalidValue`] (`"window"`) unless
/// `window` is finite and `> 0`, [`Error::SwapRateOutOfRange`] (`"swap_rate"`) unless
/// `0 < swap_rate < 1`.
pub fn expected_round_trip(chains: usize, window: f64, swap_rate: f64) -> Result<f64, Error> {
    check_chains(chains)?;
    check_positive("window", window)?;
    check_rate("swap_rate", swap_rate)?;
    Ok(expected_unchecked(chains, window, neg_log_r(swap_rate)))
}

/// [`expected_round_trip`] for an integer window of `window ≥ 1` iterations.
///
/// # Errors
///
/// [`Error::ZeroWindow`] for `window == 0`; otherwise as [`expected_round_trip`].
pub fn expected_round_trip_u32(chains: usize, window: u32, swap_rate: f64) -> Result<f64, Error> {
    if window == 0 {
        return Err(Error::ZeroWindow);
    }
    expected_round_trip(chains, f64::from(window), swap_rate)
}

/// Round trips per iteration of the whole ensemble, `P / E[T]` (multiply by 1000 for round
/// trips per 1000 iterations). For `P = 16`, `S = 0.4`: about `0.0213` at `W = 1` and
/// `0.0498` at `W = 8`.
///
/// # Errors
///
/// As [`expected_round_trip`].
pub fn round_trip_rate(chains: usize, window: f64, swap_rate: f64) -> Result<f64, Error> {
    let time = expected_round_trip(chains, window, swap_rate)?;
    Ok(chains as f64 / time)
}

/// [`round_trip_rate`] for an integer window of `window ≥ 1` iterations.
///
/// # Errors
///
/// [`Error::ZeroWindow`] for `window == 0`; otherwise as [`expected_round_trip`].
pub fn round_trip_rate_u32(chains: usize, window: u32, swap_rate: f64) -> Result<f64, Error> {
    let time = expected_round_trip_u32(chains, window, swap_rate)?;
    Ok(chains as f64 / time)
}

/// The stationarity function `g(x) = (1 − x)² + (P − 1) x (1 − x + ln x)` for
/// `chains = P`, on `0 ≤ x ≤ 1` (with `g(0) = 1`, its limit, and `g(1) = 0`).
///
/// With `x = r^W`, `dE[T]/dW` has the sign of `g(x)`. For `x ≥ 3/4`, `g` is summed from its
/// series in `ε = 1 − x`, `g = ε²(3 − P)/2 + (P − 1) Σ_{k≥3} ε^k / (k(k − 1))`, so that
/// its sign is exact where the closed form cancels (`g = O(ε²)`, or `O(ε³)` for `P = 3`).
///
/// # Errors
///
/// [`Error::TooFewChains`] for `chains < 2`; [`Error::InvalidValue`] (`"x"`) unless
/// `0 ≤ x ≤ 1`.
pub fn stationarity(chains: usize, x: f64) -> Result<f64, Error> {
    check_chains(chains)?;
    if !(0.0..=1.0).contains(&x) {
        return Err(Error::InvalidValue {
            name: "x",
            value: x,
            allowed: "in [0, 1]",
        });
    }
    Ok(Poly::new(chains).g(x))
}

/// The root `x⋆ ∈ (0, 1)` of [`stationarity`] for `chains = P` chains: the value of `r^W`
/// at the stationary window. It depends on `P` alone (`x⋆ ≈ 0.35499` for `P = 4`,
/// `0.0226647` for `P = 16`, about `1/(P ln P)` for large `P`), and is accurate to a few ulp
/// (at most 3 from a double-double bisection, for every `P` up to 10⁴).
///
/// Returns [`XStar::NoInteriorRoot`] for `P = 2, 3`, where `g > 0` on `(0, 1)`.
///
/// # Errors
///
/// [`Error::TooFewChains`] for `chains < 2`.
pub fn x_star(chains: usize) -> Result<XStar, Error> {
    check_chains(chains)?;
    if chains <= 3 {
        return Ok(XStar::NoInteriorRoot);
    }
    Ok(XStar::Root(solve_x_star(&Poly::new(chains))))
}

/// The unconstrained stationary window `W⋆ = ln x⋆ / ln(1 − S)` (a real number of
/// iterations, possibly below 1 when `S` is close to 1), or `None` for `P = 2, 3`, where
/// `E[T]` increases with `W` and there is none.
///
/// # Errors
///
/// [`Error::TooFewChains`] for `chains < 2`; [`Error::SwapRateOutOfRange`]
/// (`"swap_rate"`) unless `0 < swap_rate < 1`.
pub fn stationary_window(chains: usize, swap_rate: f64) -> Result<Option<f64>, Error> {
    check_chains(chains)?;
    check_rate("swap_rate", swap_rate)?;
    Ok(x_star(chains)?
        .root()
        .map(|x| -libm::log(x) / neg_log_r(swap_rate)))
}

/// The continuous window `W ≥ 1` that minimises [`expected_round_trip`]: `max(1, W⋆)` for
/// `P ≥ 4` (`E[T]` is unimodal in `W`), and `1` for `P = 2, 3` (`E[T]` increases with `W`,
/// so the smallest window, one iteration, is best). About `7.41` for `P = 16`, `S = 0.4`
/// and `603.8` for `P = 10`, `S = 0.005`.
///
/// # Errors
///
/// As [`stationary_window`].
pub fn w_star(chains: usize, swap_rate: f64) -> Result<f64, Error> {
    Ok(match stationary_window(chains, swap_rate)? {
        Some(w) if w > 1.0 => w,
        _ => 1.0,
    })
}

/// The integer window `W ≥ 1` that minimises [`expected_round_trip`]: whichever of
/// `⌊W⋆⌋` and `⌈W⋆⌉` has the smaller `E[T]` (the smaller window on a tie), and `1` when
/// `W⋆ ≤ 1` or `P = 2, 3`. For `P = 16`, `S = 0.4` this is 7 (`W⋆ ≈ 7.41`).
///
/// # Errors
///
/// As [`stationary_window`], and [`Error::WindowTooLong`] when the swap rate
/// is so small that the window does not fit in a `u32`.
pub fn optimal_window(chains: usize, swap_rate: f64) -> Result<u32, Error> {
    let w = w_star(chains, swap_rate)?;
    if w <= 1.0 {
        return Ok(1);
    }
    if w >= f64::from(u32::MAX) {
        return Err(window_overflow(swap_rate, w));
    }
    let lower = libm::floor(w);
    let lr = neg_log_r(swap_rate);
    let below = expected_unchecked(chains, lower, lr);
    let above = expected_unchecked(chains, lower + 1.0, lr);
    // `lower` is an integer in [1, u32::MAX − 1]: the conversion is exact.
    let lower = lower as u32;
    Ok(if above < below { lower + 1 } else { lower })
}

/// The window used in the paper's code, from the large-`P` asymptotics of `x⋆`:
/// `⌈(ln P + ln ln P) / (−ln(1 − S))⌉` (8 for `P = 16`, `S = 0.4`; 626 for `P = 10`,
/// `S = 0.005`). Always at least 1.
///
/// # Errors
///
/// [`Error::TooFewChains`] for `chains < 2`; [`Error::SwapRateOutOfRange`]
/// (`"swap_rate"`) unless `0 < swap_rate < 1`; [`Error::WindowTooLong`] when
/// the window does not fit in a `u32`.
pub fn paper_window(chains: usize, swap_rate: f64) -> Result<u32, Error> {
    check_chains(chains)?;
    check_rate("swap_rate", swap_rate)?;
    let ln_p = libm::log(chains as f64);
    // ln P + ln ln P > 0 for P ≥ 2 (P ln P > 1), so the ratio is positive.
    let w = libm::ceil((ln_p + libm::log(ln_p)) / neg_log_r(swap_rate));
    if w > f64::from(u32::MAX) {
        return Err(window_overflow(swap_rate, w));
    }
    Ok((w as u32).max(1))
}

/// `−ln r = −ln(1 − S) > 0`, accurate for small `S`.
fn neg_log_r(swap_rate: f64) -> f64 {
    -libm::log1p(-swap_rate)
}

fn window_overflow(swap_rate: f64, window: f64) -> Error {
    Error::WindowTooLong { swap_rate, window }
}

/// `E[T]` for validated input, with `lr = −ln r > 0`.
fn expected_unchecked(chains: usize, window: f64, lr: f64) -> f64 {
    let p = chains as f64;
    let pm1 = (chains - 1) as f64;
    let a = window * lr; // −ln x = −W ln r
    // W x/(1 − x) = W / expm1(a) = (a / expm1(a)) / lr; for a below the normal range
    // a / expm1(a) = 1 to the last bit, and W / a would lose precision (a subnormal or 0).
    let tail = if a >= f64::MIN_POSITIVE {
        window / libm::expm1(a)
    } else {
        1.0 / lr
    };
    2.0 * p * (window + pm1 * tail)
}

/// `g` and its derivatives for a fixed number of chains.
struct Poly {
    /// `P − 1`.
    pm1: f64,
    /// `P − 2`.
    pm2: f64,
}

impl Poly {
    fn new(chains: usize) -> Self {
        Poly {
            pm1: (chains - 1) as f64,
            pm2: (chains - 2) as f64,
        }
    }

    /// `g(x)` for `0 ≤ x ≤ 1`.
    fn g(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 1.0;
        }
        if x < 0.75 {
            return (1.0 - x) * (1.0 + self.pm2 * x) + self.pm1 * x * libm::log(x);
        }
        // ε = 1 − x is exact here (Sterbenz). g = ε²(3 − P)/2 + (P − 1) n(ε) with
        // n(ε) = (1 − ε) ln(1 − ε) + ε − ε²/2 = Σ_{k≥3} ε^k / (k(k − 1)), all terms positive.
        let e = 1.0 - x;
        let mut power = e * e * e;
        let mut n = power / 6.0;
        let mut k = 4.0;
        while k < 64.0 {
            power *= e;
            let term = power / (k * (k - 1.0));
            n += term;
            if term <= 1e-18 * n {
                break;
            }
            k += 1.0;
        }
        0.5 * (1.0 - self.pm2) * e * e + self.pm1 * n
    }

    /// `g'(x) = 2(P − 2)(1 − x) + (P − 1) ln x`.
    fn d1(&self, x: f64) -> f64 {
        2.0 * self.pm2 * (1.0 - x) + self.pm1 * libm::log(x)
    }

    /// `g''(x) = (P − 1)/x − 2(P − 2)`.
    fn d2(&self, x: f64) -> f64 {
        self.pm1 / x - 2.0 * self.pm2
    }
}

/// Cap on solver steps; Halley from the Lambert start needs three or four.
const MAX_STEPS: usize = 200;

/// The root of `g` for `P ≥ 4`: Halley's iteration from the Lambert-W start, safeguarded
/// by a bracket and bisection.
fn solve_x_star(poly: &Poly) -> f64 {
    // Bracket: g(lo) > 0 (g(0) = 1), and g < 0 on (x⋆, 1) with g(1) = 0, so hi = 1 works.
    let mut lo = 0.0_f64;
    let mut hi = 1.0_f64;
    // −1/(P − 1) ∈ [−1/3, 0) for P ≥ 4, inside W₋₁'s domain.
    let mut x = match lambert_w_m1(-1.0 / poly.pm1) {
        Ok(w) => libm::exp(w),
        Err(_) => 0.5,
    };
    if !(x > lo && x < hi) {
        x = 0.5;
    }
    let mut gx = poly.g(x);
    for _ in 0..MAX_STEPS {
        if gx > 0.0 {
            lo = x;
        } else if gx < 0.0 {
            hi = x;
        } else {
            return x;
        }
        let d1 = poly.d1(x);
        let d2 = poly.d2(x);
        let step = 2.0 * gx * d1 / (2.0 * d1 * d1 - gx * d2);
        let mut next = x - step;
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if next == x || !(next > lo && next < hi) {
            // The bracket holds adjacent doubles.
            break;
        }
        let moved = (next - x).abs();
        x = next;
        gx = poly.g(x);
        if moved <= 2.0 * f64::EPSILON * x {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 200-bit mpmath reference values of x⋆ (`findroot` on `g`).
    const X_STAR: [(usize, f64); 7] = [
        (4, 0.354_992_548_665_415_6),
        (5, 0.195_478_165_206_491_9),
        (10, 0.048_479_141_662_361_52),
        (16, 0.022_664_676_888_994_01),
        (100, 0.001_912_560_150_103_246_5),
        (10_000, 9.463_197_390_562_123e-6),
        (1_000_000, 6.426_646_684_098_189e-8),
    ];

    #[test]
    fn x_star_matches_mpmath() {
        for &(p, expected) in &X_STAR {
            let x = x_star(p).unwrap().root().unwrap();
            let rel = ((x - expected) / expected).abs();
            assert!(rel < 1e-14, "P = {p}: {x:e} vs {expected:e} (rel {rel:e})");
            assert!(stationarity(p, x).unwrap().abs() < 1e-14);
        }
    }

    #[test]
    fn reference_table() {
        // P = 16, S = 0.4: W⋆ ≈ 7.41 (mpmath 7.41338624...), paper window 8.
        let w = w_star(16, 0.4).unwrap();
        assert!((w - 7.41).abs() < 0.005, "{w}");
        assert!((w - 7.413_386_240_724_872).abs() < 1e-12, "{w}");
        assert_eq!(paper_window(16, 0.4), Ok(8));
        assert_eq!(optimal_window(16, 0.4), Ok(7));
        // P = 10, S = 0.005: W⋆ ≈ 603.8 (mpmath 603.80975339...), paper window 626.
        let w = w_star(10, 0.005).unwrap();
        assert!((w - 603.8).abs() < 0.05, "{w}");
        assert!((w - 603.809_753_396_138_8).abs() < 1e-9, "{w}");
        assert_eq!(paper_window(10, 0.005), Ok(626));
        assert_eq!(optimal_window(10, 0.005), Ok(604));
    }

    #[test]
    fn round_trip_rates() {
        // P = 16, S = 0.4: 21.3 round trips per 1000 iterations at W = 1, 49.7 at W = 8
        // (exactly 16/752 = 0.0212766 and 0.0497514).
        let at1 = 1000.0 * round_trip_rate_u32(16, 1, 0.4).unwrap();
        let at8 = 1000.0 * round_trip_rate_u32(16, 8, 0.4).unwrap();
        assert!((at1 - 21.3).abs() < 0.1, "{at1}");
        assert!((at8 - 49.7).abs() < 0.1, "{at8}");
        assert!((expected_round_trip_u32(16, 1, 0.4).unwrap() - 752.0).abs() < 1e-9);
        assert!((at8 - 49.751_388_143_318_16).abs() < 1e-9);
        assert_eq!(
            round_trip_rate(16, 8.0, 0.4),
            round_trip_rate_u32(16, 8, 0.4)
        );
    }

    #[test]
    fn stationary_window_is_the_continuous_minimum() {
        for (p, s) in [(4, 0.3), (16, 0.4), (10, 0.005), (100, 0.7), (5000, 0.05)] {
            let w = stationary_window(p, s).unwrap().unwrap();
            let e = expected_round_trip(p, w, s).unwrap();
            for f in [0.99, 0.999, 1.001, 1.01] {
                assert!(
                    expected_round_trip(p, w * f, s).unwrap() > e,
                    "P = {p}, S = {s}"
                );
            }
        }
    }

    #[test]
    fn optimal_window_beats_its_neighbours() {
        for (p, s) in [
            (4, 0.3),
            (16, 0.4),
            (10, 0.005),
            (100, 0.7),
            (5000, 0.05),
            (8, 0.9),
        ] {
            let w = optimal_window(p, s).unwrap();
            let e = expected_round_trip_u32(p, w, s).unwrap();
            assert!(expected_round_trip_u32(p, w + 1, s).unwrap() >= e);
            if w > 1 {
                assert!(expected_round_trip_u32(p, w - 1, s).unwrap() >= e);
            }
        }
    }

    #[test]
    fn small_stationary_window_clamps_to_one() {
        // P = 4, S = 0.99: W⋆ = ln 0.355 / ln 0.01 ≈ 0.225.
        let w = stationary_window(4, 0.99).unwrap().unwrap();
        assert!(w > 0.2 && w < 0.25, "{w}");
        assert_eq!(w_star(4, 0.99), Ok(1.0));
        assert_eq!(optimal_window(4, 0.99), Ok(1));
    }

    #[test]
    fn two_and_three_chains_prefer_the_smallest_window() {
        for p in [2, 3] {
            assert_eq!(x_star(p), Ok(XStar::NoInteriorRoot));
            assert_eq!(x_star(p).unwrap().root(), None);
            for s in [0.01, 0.4, 0.99] {
                assert_eq!(stationary_window(p, s), Ok(None));
                assert_eq!(w_star(p, s), Ok(1.0));
                assert_eq!(optimal_window(p, s), Ok(1));
                // E[T] strictly increases with W.
                // (From W = 0.05: below that, for P = 3 the increase is O(W²) relative to
                // E[T] and drowns in rounding.)
                let mut previous = expected_round_trip(p, 0.05, s).unwrap();
                let mut w = 0.05;
                while w < 1e4 {
                    w *= 1.5;
                    let e = expected_round_trip(p, w, s).unwrap();
                    assert!(e > previous, "P = {p}, S = {s}, W = {w}");
                    previous = e;
                }
            }
            // g > 0 everywhere inside (0, 1), including next to 1.
            for k in 1..=40 {
                let x = 1.0 - libm::ldexp(1.0, -k);
                assert!(stationarity(p, x).unwrap() > 0.0, "P = {p}, x = 1 - 2^-{k}");
                let x = libm::ldexp(1.0, -k);
                assert!(stationarity(p, x).unwrap() > 0.0);
            }
        }
        // P = 3 near 1: g ≈ ε³/3.
        let e = 1e-4;
        let g = stationarity(3, 1.0 - e).unwrap();
        assert!((g / (e * e * e / 3.0) - 1.0).abs() < 1e-3, "{g}");
    }

    #[test]
    fn stationarity_near_one() {
        // For P ≥ 4, g ≈ ε²(3 − P)/2 < 0 near 1.
        for p in [4, 16, 1000] {
            for k in 3..=40 {
                let e = libm::ldexp(1.0, -k);
                let g = stationarity(p, 1.0 - e).unwrap();
                let leading = 0.5 * (3.0 - p as f64) * e * e;
                assert!(g < 0.0);
                assert!((g / leading - 1.0).abs() < 2.0 * e * p as f64);
            }
            assert_eq!(stationarity(p, 1.0), Ok(0.0));
            assert_eq!(stationarity(p, 0.0), Ok(1.0));
        }
        // The series and closed forms agree across x = 3/4.
        for p in [2, 3, 4, 50] {
            let poly = Poly::new(p);
            let below = poly.g(0.75 - 1e-12);
            let above = poly.g(0.75);
            assert!((below - above).abs() < 1e-10 * p as f64, "P = {p}");
        }
    }

    #[test]
    fn small_window_limit() {
        // As W → 0, E[T] → 2P(P − 1)/(−ln r).
        let limit = 2.0 * 16.0 * 15.0 / -libm::log1p(-0.4);
        let e = expected_round_trip(16, 1e-300, 0.4).unwrap();
        assert!((e / limit - 1.0).abs() < 1e-12);
        let e = expected_round_trip(16, f64::from_bits(1), 0.4).unwrap();
        assert!((e / limit - 1.0).abs() < 1e-12);
        assert_eq!(expected_round_trip(16, 1e308, 0.4), Ok(f64::INFINITY));
    }

    #[test]
    fn rejects_bad_input() {
        for chains in [0, 1] {
            let err = Err(Error::TooFewChains { chains });
            assert_eq!(expected_round_trip(chains, 1.0, 0.5), err);
            assert_eq!(round_trip_rate(chains, 1.0, 0.5), err);
            assert_eq!(x_star(chains), err.map(|_: f64| XStar::NoInteriorRoot));
            assert_eq!(w_star(chains, 0.5), err);
            assert_eq!(optimal_window(chains, 0.5), err.map(|_: f64| 1));
            assert_eq!(paper_window(chains, 0.5), err.map(|_: f64| 1));
            assert_eq!(stationarity(chains, 0.5), err);
        }
        for s in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
            let bad = |r: Result<f64, Error>| {
                matches!(
                    r,
                    Err(Error::SwapRateOutOfRange {
                        name: "swap_rate",
                        ..
                    })
                )
            };
            assert!(bad(expected_round_trip(16, 1.0, s)));
            assert!(bad(round_trip_rate_u32(16, 1, s)));
            assert!(bad(w_star(16, s)));
            assert!(bad(w_star(3, s)));
            assert!(bad(optimal_window(16, s).map(f64::from)));
            assert!(bad(paper_window(16, s).map(f64::from)));
            assert!(bad(stationary_window(16, s).map(|_| 0.0)));
        }
        for w in [0.0, -1.0, f64::NAN, f64::INFINITY, -0.0] {
            assert!(matches!(
                expected_round_trip(16, w, 0.4),
                Err(Error::InvalidValue { name: "window", .. })
            ));
            assert!(round_trip_rate(16, w, 0.4).is_err());
        }
        assert_eq!(expected_round_trip_u32(16, 0, 0.4), Err(Error::ZeroWindow));
        assert_eq!(round_trip_rate_u32(16, 0, 0.4), Err(Error::ZeroWindow));
        for x in [-0.1, 1.1, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                stationarity(16, x),
                Err(Error::InvalidValue { name: "x", .. })
            ));
        }
        // A swap rate so small that the window overflows u32, with readable numbers.
        let e = optimal_window(16, 1e-12).unwrap_err();
        assert!(matches!(e, Error::WindowTooLong { .. }), "{e:?}");
        let text = std::format!("{e}");
        assert!(
            text.contains("1e-12") && text.contains("3.787e12"),
            "{text}"
        );
        assert!(matches!(
            paper_window(16, 1e-12),
            Err(Error::WindowTooLong { .. })
        ));
    }
}
