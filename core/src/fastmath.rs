//! Branch-free `f32` logarithm and sine/cosine of 2πx: the same bits on every IEEE-754
//! machine, vectorizable on the CPU, and written out operation by operation so that the
//! CUDA kernels reproduce them exactly (compiled without FMA contraction).
//!
//! Platform math libraries (and CUDA's `logf`/`cosf`) differ from each other by an ulp
//! here and there, which is enough to flip a swap decision between a CPU and a GPU run
//! of the same seed. These functions use only `+ − × ÷`, comparisons and bit
//! manipulation, each rounded once as IEEE-754 prescribes, so their results are
//! identical wherever they run. Accuracy (checked against `f64` libm in the tests):
//! [`ln`] within 2.5 ulp of max(1, |ln x|) over the normal numbers; [`sin_cos_2pi`] within 3·10⁻⁷ absolute.

/// 1.5 · 2²³: adding and subtracting it rounds an `f32` of magnitude below 2²² to the
/// nearest integer (ties to even).
const ROUND_MAGIC: f32 = 12_582_912.0;

/// Nearest integer of `x` for |x| < 2²² (larger `f32` values are integers or half
/// integers already, and are returned nearly unchanged).
#[inline(always)]
pub fn round_nearest(x: f32) -> f32 {
    if x.abs() < 4_194_304.0 {
        (x + ROUND_MAGIC) - ROUND_MAGIC
    } else {
        x
    }
}

/// Natural logarithm of a positive normal `f32` (what [`crate::rng::uniform_f32`]
/// produces); 0, subnormals, negatives, infinities and NaN give unspecified finite or
/// non-finite values.
///
/// `x = 2^e · m` with m in [√½, √2); `ln x = e ln 2 + 2 atanh(s)` with
/// `s = (m − 1)/(m + 1)`, |s| ≤ 0.1716, and `2 atanh(s) = 2s (1 + s²/3 + s⁴/5 + s⁶/7 +
/// s⁸/9)` (truncation below 10⁻⁹).
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    let bits = x.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 127;
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    // Move m from [1, 2) to [√½, √2) so that |s| stays small.
    if m > core::f32::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let p = 1.0 + s2 * (1.0 / 3.0 + s2 * (0.2 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0))));
    let ln_m = 2.0 * s * p;
    // ln 2 split in two parts so that e · LN2_HI is exact for |e| < 2^8.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let ef = e as f32;
    ef * LN2_HI + (ln_m + ef * LN2_LO)
}

// Taylor coefficients of sin(2πf) and cos(2πf) in powers of f, for |f| ≤ 1/8.
const S1: f32 = f32::from_bits(0x40c90fdb); // 2π = 6.28318531
const S3: f32 = f32::from_bits(0xc2255de7); // −(2π)³/3! = -41.3417022
const S5: f32 = f32::from_bits(0x42a335e3); // (2π)⁵/5! = 81.6052493
const S7: f32 = f32::from_bits(0xc2996966); // −(2π)⁷/7! = -76.7058598
const S9: f32 = f32::from_bits(0x42283c1a); // (2π)⁹/9! = 42.0586939
const C2: f32 = f32::from_bits(0xc19de9e6); // −(2π)²/2! = -19.7392088
const C4: f32 = f32::from_bits(0x4281e0f8); // (2π)⁴/4! = 64.939394
const C6: f32 = f32::from_bits(0xc2aae9e4); // −(2π)⁶/6! = -85.4568172
const C8: f32 = f32::from_bits(0x4270fa83); // (2π)⁸/8! = 60.2446414
const C10: f32 = f32::from_bits(0xc1d368f9); // −(2π)¹⁰/10! = -26.4262568

/// `(sin 2πx, cos 2πx)` for any finite `f32` (NaN for non-finite `x`).
///
/// The period is 1, so the argument reduction is exact: `r = x − round(x)` in
/// [−½, ½], then a quarter turn `q = round(4r)` and `f = r − q/4` in [−⅛, ⅛]; Taylor
/// polynomials of degree 9 (sine) and 10 (cosine) in f, then a rotation by q quarter
/// turns.
#[inline(always)]
pub fn sin_cos_2pi(x: f32) -> (f32, f32) {
    let r = x - round_nearest(x);
    let q = round_nearest(4.0 * r);
    let f = r - 0.25 * q;
    let f2 = f * f;
    let s = f * (S1 + f2 * (S3 + f2 * (S5 + f2 * (S7 + f2 * S9))));
    let c = 1.0 + f2 * (C2 + f2 * (C4 + f2 * (C6 + f2 * (C8 + f2 * C10))));
    // q in {−2, −1, 0, 1, 2}; rotate (s, c) by q quarter turns: odd q swaps sine and
    // cosine, and the signs follow the quadrant. Selects on floats only (no float to
    // integer conversion), so that the compiler can vectorize it.
    let odd = q.abs() == 1.0;
    let half = q.abs() == 2.0;
    let sin = if odd {
        if q > 0.0 { c } else { -c }
    } else if half {
        -s
    } else {
        s
    };
    let cos = if odd {
        if q > 0.0 { -s } else { s }
    } else if half {
        -c
    } else {
        c
    };
    if x.is_finite() {
        (sin, cos)
    } else {
        (f32::NAN, f32::NAN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic spread of test points (a Weyl sequence).
    fn points(n: u32, scale: f64) -> impl Iterator<Item = f64> {
        (0..n).map(move |i| {
            let t = (f64::from(i) * 0.618_033_988_749_894_9).fract();
            (2.0 * t - 1.0) * scale
        })
    }

    #[test]
    fn coefficients_are_the_taylor_coefficients() {
        let tau = core::f64::consts::TAU;
        let fact = |n: i32| (1..=n).map(f64::from).product::<f64>();
        let s = [S1, S3, S5, S7, S9];
        for (k, &c) in s.iter().enumerate() {
            let n = 2 * k as i32 + 1;
            let want = (-1f64).powi(k as i32) * tau.powi(n) / fact(n);
            assert!(
                (f64::from(c) / want - 1.0).abs() < 1e-7,
                "sin coefficient {n}"
            );
        }
        let c = [C2, C4, C6, C8, C10];
        for (k, &v) in c.iter().enumerate() {
            let n = 2 * k as i32 + 2;
            let want = (-1f64).powi(k as i32 + 1) * tau.powi(n) / fact(n);
            assert!(
                (f64::from(v) / want - 1.0).abs() < 1e-7,
                "cos coefficient {n}"
            );
        }
    }

    #[test]
    fn sin_cos_2pi_matches_libm_within_3e_7() {
        let mut worst: f64 = 0.0;
        for scale in [0.6, 3.0, 40.0, 5000.0] {
            for x in points(200_000, scale) {
                let xf = x as f32;
                let xd = f64::from(xf);
                let (s, c) = sin_cos_2pi(xf);
                let arg = core::f64::consts::TAU * (xd - libm::round(xd));
                let es = (f64::from(s) - libm::sin(arg)).abs();
                let ec = (f64::from(c) - libm::cos(arg)).abs();
                worst = worst.max(es).max(ec);
                assert!(
                    es < 3e-7 && ec < 3e-7,
                    "x = {xf}: sin err {es}, cos err {ec}"
                );
            }
        }
        assert!(worst > 0.0);
        // Exact values at the quarter turns.
        assert_eq!(sin_cos_2pi(0.0), (0.0, 1.0));
        assert_eq!(sin_cos_2pi(0.25), (1.0, 0.0));
        assert_eq!(sin_cos_2pi(-0.5).1, -1.0);
        assert_eq!(sin_cos_2pi(3.0).1, 1.0);
        assert!(sin_cos_2pi(f32::INFINITY).0.is_nan());
        assert!(sin_cos_2pi(f32::NAN).1.is_nan());
    }

    #[test]
    fn ln_matches_libm() {
        // On the uniforms of the RNG: error under 2.5 ulp of max(1, |ln u|).
        let tol = |want: f64| 2.5 * f64::from(f32::EPSILON) * want.abs().max(1.0);
        for w in (0..=u32::MAX).step_by(4099) {
            let u = crate::rng::uniform_f32(w);
            let got = f64::from(ln(u));
            let want = libm::log(f64::from(u));
            assert!(
                (got - want).abs() <= tol(want),
                "ln({u}) = {got}, want {want}"
            );
        }
        // Relative error of about 2 ulp over the normal range.
        for x in points(100_000, 1.0) {
            let v = libm::exp(x * 80.0) as f32;
            let got = f64::from(ln(v));
            let want = libm::log(f64::from(v));
            assert!(
                (got - want).abs() <= tol(want),
                "ln({v}) = {got}, want {want}"
            );
        }
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        assert_eq!(round_nearest(2.5), 2.0);
        assert_eq!(round_nearest(-2.5), -2.0);
        assert_eq!(round_nearest(2.6), 3.0);
        assert_eq!(round_nearest(-0.4), -0.0);
        assert_eq!(round_nearest(1.0e9), 1.0e9);
    }
}
