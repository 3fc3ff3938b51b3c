//! Branch-free `f32` logarithm, exponential and sine/cosine of 2πx: the same bits on
//! every IEEE-754 machine, vectorizable on the CPU, and written out operation by
//! operation so that the CUDA kernels reproduce them exactly (compiled without FMA
//! contraction; [`exp`] serves the host's batched softmax and has no CUDA twin).
//!
//! Platform math libraries (and CUDA's `logf`/`cosf`) differ from each other by an ulp
//! here and there, which is enough to flip a swap decision between a CPU and a GPU run
//! of the same seed. These functions use only `+ − × ÷`, comparisons and bit
//! manipulation, each rounded once as IEEE-754 prescribes, so their results are
//! identical wherever they run. Accuracy (checked against `f64` libm in the tests):
//! [`ln`] within 2.5 ulp of max(1, |ln x|) over the positive numbers; [`exp`] within
//! 2⁻²³ relative down to e^−87 (0 below); [`sin_cos_2pi`] within 3·10⁻⁷ absolute over
//! every finite `f32`.

/// 2²³: adding it to a non-negative `f32` below 2²³ and subtracting it again rounds the
/// value to the nearest integer (ties to even), since the sum lies in [2²³, 2²⁴) where
/// the spacing of `f32` is exactly 1.
const ROUND_MAGIC: f32 = 8_388_608.0;

/// Nearest integer of `x`, ties to even, for every `f32` (values of magnitude 2²³ or
/// more are integers already and come back unchanged; NaN stays NaN). Rounds |x| and
/// restores the sign, so that every half-integer below 2²³ rounds correctly.
#[inline(always)]
pub fn round_nearest(x: f32) -> f32 {
    let a = x.abs();
    let n = if a < ROUND_MAGIC {
        (a + ROUND_MAGIC) - ROUND_MAGIC
    } else {
        a
    };
    n.copysign(x)
}

/// 2²³, to lift subnormal arguments of [`ln`] into the normal range.
const TWO_POW_23: f32 = 8_388_608.0;

/// Natural logarithm of an `f32`, defined everywhere as IEEE-754 `log` is: `ln(0) = −∞`,
/// `ln(+∞) = +∞`, NaN for negative numbers and NaN, and the logarithm for every positive
/// number, subnormals included (what [`crate::rng::uniform_f32`] produces is always
/// positive and normal).
///
/// `x = 2^e · m` with m in [√½, √2); `ln x = e ln 2 + 2 atanh(s)` with
/// `s = (m − 1)/(m + 1)`, |s| ≤ 0.1716, and `2 atanh(s) = 2s (1 + s²/3 + s⁴/5 + s⁶/7 +
/// s⁸/9)` (truncation below 10⁻⁹). Special values are selected at the end, without
/// branches, so that the function still vectorizes.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    // A subnormal x is scaled by 2²³ first and 23 taken off its exponent.
    let subnormal = x < f32::MIN_POSITIVE;
    let xs = if subnormal { x * TWO_POW_23 } else { x };
    let y = ln_scaled(xs, if subnormal { 150 } else { 127 });
    // The special values: +∞ → +∞, 0 → −∞, negative or NaN → NaN.
    let y = if x == f32::INFINITY { x } else { y };
    let y = if x == 0.0 { f32::NEG_INFINITY } else { y };
    if x >= 0.0 { y } else { f32::NAN }
}

/// [`ln`] of a positive normal finite `x` (what [`crate::rng::uniform_f32`] gives): the
/// same bits, without the subnormal scaling and the special values' selects.
#[inline(always)]
pub fn ln_normal(x: f32) -> f32 {
    ln_scaled(x, 127)
}

/// The logarithm of a positive normal `xs` whose exponent has bias `bias` (127, or 150
/// for a subnormal scaled by 2²³).
#[inline(always)]
fn ln_scaled(xs: f32, bias: i32) -> f32 {
    let bits = xs.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - bias;
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
    // ln 2 split in two parts so that e · LN2_HI is exact.
    let ef = e as f32;
    ef * LN2_HI + (ln_m + ef * LN2_LO)
}

/// ln 2 in two parts: the high part has 9 significant bits, so that n · `LN2_HI` is
/// exact for |n| < 2¹⁵, and `LN2_HI + LN2_LO` is ln 2 to f32 precision.
pub const LN2_HI: f32 = 0.693_359_4;
/// See [`LN2_HI`].
pub const LN2_LO: f32 = -2.121_944_4e-4;

/// 1.5 · 2²³: `x + EXP_MAGIC` rounds x to the nearest integer (ties to even) for
/// |x| < 2²², and that integer can be read from the sum's low bits.
pub const EXP_MAGIC: f32 = 12_582_912.0;

/// The arguments below which [`exp`] is 0 and above which it is +∞: it computes with x
/// clamped to them, which keeps n in [−126, 128] and every intermediate value normal.
pub const EXP_RANGE: (f32, f32) = (-87.0, 89.0);

/// Cephes' `expf` polynomial P, highest degree first: `e^r ≈ 1 + r + r² P(r)` for
/// |r| ≤ ½ ln 2 (Cephes 2.2, `expf.c`; its last coefficient, 5.0000001201e-1, is ½ in
/// `f32`).
pub const EXP_POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
    0.5,
];

/// `e^x` for every `f32`: `+∞` above ln(`f32::MAX`), `exp(+∞) = +∞`, NaN for NaN, and
/// 0 below x = −87 (e^−87 ≈ 1.6·10⁻³⁸, just above `f32::MIN_POSITIVE`) and for −∞:
/// no result is subnormal, since subnormals cost a microcode assist per vector on x86
/// (a softmax whose −∞ padding underflowed ran its exponentials at half the speed).
///
/// Cody–Waite reduction `x = n ln 2 + r` with |r| ≤ ½ ln 2 ([`LN2_HI`], [`LN2_LO`]),
/// then Cephes' `expf` polynomial ([`EXP_POLY`]), then `· 2ⁿ` as two exact powers of
/// two (2¹²⁸ itself is not an `f32`). Branch-free and without float-to-integer
/// conversions, so that a loop over it vectorizes.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // Outside EXP_RANGE the result is 0 or +∞ already; comparisons leave NaN alone.
    let (low, high) = EXP_RANGE;
    let xc = if x < low { low } else { x };
    let xc = if xc > high { high } else { xc };
    let t = xc * core::f32::consts::LOG2_E + EXP_MAGIC;
    let n = t - EXP_MAGIC;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let mut p = EXP_POLY[0];
    for c in &EXP_POLY[1..] {
        p = p * r + c;
    }
    let y = p * (r * r) + r + 1.0;
    // n in [−126, 128] as an integer (same exponent as EXP_MAGIC: the difference of the
    // bits is the difference of the values), split in two halves in [−63, 64] whose
    // powers of two are normal numbers.
    let ni = (t.to_bits() as i32).wrapping_sub(EXP_MAGIC.to_bits() as i32);
    let n1 = ni >> 1;
    let n2 = ni - n1;
    let pow2 = |k: i32| f32::from_bits(((k + 127) << 23) as u32);
    let v = (y * pow2(n1)) * pow2(n2);
    if x < low { 0.0 } else { v }
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
    sin_cos_2pi_with(x, round_nearest)
}

/// [`sin_cos_2pi`] with the nearest-integer function `round` (ties to even; the sign of
/// a zero result does not matter): [`round_nearest`], or the processor's instruction
/// where one is at hand (`f32::round_ties_even` in std, one `vroundps` on x86), which
/// gives the same bits.
#[inline(always)]
pub fn sin_cos_2pi_with(x: f32, round: impl Fn(f32) -> f32) -> (f32, f32) {
    let r = x - round(x);
    let q = round(4.0 * r);
    let f = r - 0.25 * q;
    let (sin, cos) = quarter_turns(f, q);
    if x.is_finite() {
        (sin, cos)
    } else {
        (f32::NAN, f32::NAN)
    }
}

/// `sin_cos_2pi(uniform_f32(word))`, the same bits, with the argument reduced on the
/// word's bits: u = t·2⁻²⁴ with t = 2⌊word/2⁹⌋ + 1 odd, so r = u − round(u) is
/// (t − 2²⁴·𝟙(t > 2²³))·2⁻²⁴ (t read as a signed 24-bit number), the quarter turn
/// q = round(4r) is an integer shift (no ties: the numerator is odd) and f = r − q/4
/// is exact; no special values.
#[inline(always)]
pub fn sin_cos_2pi_uniform(word: u32) -> (f32, f32) {
    let (f, q) = quarter_turn_uniform(word);
    quarter_turns(f, q)
}

/// The reduction of [`sin_cos_2pi_uniform`]: `(f, q)` with 2πu = 2πf + qπ/2 for
/// u = `uniform_f32(word)`, f ∈ [−⅛, ⅛] and q ∈ {−2, …, 2} (as `f32`), exactly what
/// [`sin_cos_2pi`]'s reduction of u gives (for engines with their own polynomials).
#[inline(always)]
pub fn quarter_turn_uniform(word: u32) -> (f32, f32) {
    // t · 2⁸ = (word with its low 9 bits cleared) + 2⁸; an arithmetic shift back
    // extends bit 23 of t as its sign.
    let r = (((word & !0x1ff) | 0x100) as i32) >> 8;
    let q = (r + (1 << 21)) >> 22;
    let f = (r - (q << 22)) as f32 * (1.0 / 16_777_216.0);
    (f, q as f32)
}

/// The Taylor polynomials at f ∈ [−⅛, ⅛] rotated by q ∈ {−2, …, 2} quarter turns.
#[inline(always)]
fn quarter_turns(f: f32, q: f32) -> (f32, f32) {
    let f2 = f * f;
    let s = f * (S1 + f2 * (S3 + f2 * (S5 + f2 * (S7 + f2 * S9))));
    let c = 1.0 + f2 * (C2 + f2 * (C4 + f2 * (C6 + f2 * (C8 + f2 * C10))));
    rotate_quarter_turns(s, c, q)
}

/// `(sin, cos)` of an angle q quarter turns past the one whose sine and cosine are
/// `(s, c)`, q ∈ {−2, −1, 0, 1, 2} (as `f32`).
#[inline(always)]
pub fn rotate_quarter_turns(s: f32, c: f32, q: f32) -> (f32, f32) {
    // Odd q swaps sine and cosine, and the signs follow the quadrant. Selects on
    // floats only (no float to integer conversion), so that the compiler can
    // vectorize it.
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
    (sin, cos)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reductions that give the same bits: on a uniform's word, and with the
    /// standard library's rounding; and `ln_normal` on every uniform.
    #[test]
    fn specialised_forms_give_the_same_bits() {
        let bits = |(s, c): (f32, f32)| (s.to_bits(), c.to_bits());
        for m in 0..1u32 << 23 {
            // The low nine bits of a word do not reach the uniform.
            let w = (m << 9) | (m % 512);
            let u = crate::rng::uniform_f32(w);
            assert_eq!(
                bits(sin_cos_2pi_uniform(w)),
                bits(sin_cos_2pi(u)),
                "word {w:#x}"
            );
            assert_eq!(ln_normal(u).to_bits(), ln(u).to_bits(), "{u}");
        }
        // std's round_ties_even is round_nearest, on a spread of every f32 pattern.
        let mut x = 0u32;
        loop {
            let f = f32::from_bits(x);
            let (a, b) = (f.round_ties_even(), round_nearest(f));
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{f:e}"
            );
            assert_eq!(
                bits(sin_cos_2pi_with(f, f32::round_ties_even)),
                bits(sin_cos_2pi(f))
            );
            match x.checked_add(4099) {
                Some(n) => x = n,
                None => break,
            }
        }
    }

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
        // Subnormals: the same tolerance.
        for bits in [1u32, 2, 3, 1000, 0x0040_0000, 0x007f_ffff] {
            let v = f32::from_bits(bits);
            let (got, want) = (f64::from(ln(v)), libm::log(f64::from(v)));
            assert!(
                (got - want).abs() <= tol(want),
                "ln({v:e}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn exp_matches_libm_within_2_pow_minus_23() {
        // Relative error within 2⁻²³ (one ulp of [1, 2)) over [−87, 87].
        let ulp = f64::from(f32::EPSILON);
        let mut worst: f64 = 0.0;
        for x in points(400_000, 1.0) {
            let xf = (x * 87.0) as f32;
            let want = libm::exp(f64::from(xf));
            let rel = (f64::from(exp(xf)) - want).abs() / want;
            worst = worst.max(rel);
            assert!(rel <= ulp, "exp({xf}) = {}, want {want}", exp(xf));
        }
        assert!(worst > 0.0);
        for x in [88.0f32, 88.5, 88.72, -86.9, -0.0, 1e-8, -1e-8] {
            let want = libm::exp(f64::from(x));
            let got = f64::from(exp(x));
            assert!(
                (got - want).abs() <= ulp * want,
                "exp({x}) = {got}, want {want}"
            );
        }
        assert_eq!(exp(0.0), 1.0);
    }

    /// The flush to 0 below −87, overflow and the special values.
    #[test]
    fn exp_edges() {
        let ulp = f64::from(f32::EPSILON);
        for x in [-87.0f32, -86.99, -86.5] {
            let want = libm::exp(f64::from(x));
            let got = exp(x);
            assert!(got.is_normal(), "exp({x}) = {got:e}");
            assert!(
                (f64::from(got) - want).abs() <= ulp * want,
                "exp({x}) = {got:e}, want {want:e}"
            );
        }
        for x in [-87.001f32, -87.3, -95.0, -104.0, -1000.0, f32::NEG_INFINITY] {
            assert_eq!(exp(x).to_bits(), 0, "exp({x})");
        }
        assert_eq!(exp(88.8), f32::INFINITY);
        assert_eq!(exp(1000.0), f32::INFINITY);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert!(exp(f32::NAN).is_nan());
    }

    /// IEEE-754 `log` at the edges of its domain.
    #[test]
    fn ln_special_values() {
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert_eq!(ln(-0.0), f32::NEG_INFINITY);
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
        for x in [-1.0f32, -1e-40, f32::NEG_INFINITY, f32::NAN, -f32::NAN] {
            assert!(ln(x).is_nan(), "ln({x})");
        }
        let want = libm::log(f64::from(f32::MAX));
        assert!((f64::from(ln(f32::MAX)) - want).abs() < 2.5 * f64::from(f32::EPSILON) * want);
    }

    /// Half-integers are cos 2πx = −1 and sin 2πx = 0 wherever they exist, including
    /// 2²² ≤ |x| < 2²³ where `f32` has no finer values; integers give (0, 1).
    #[test]
    fn sin_cos_2pi_at_large_integers_and_half_integers() {
        for base in [
            1.0f32,
            1024.0,
            4_194_303.0,
            4_194_304.0,
            6_000_000.0,
            8_388_606.0,
        ] {
            for sign in [1.0f32, -1.0] {
                let n = sign * base;
                let (s, c) = sin_cos_2pi(n);
                assert_eq!((s.abs(), c), (0.0, 1.0), "x = {n}");
                let h = n + sign * 0.5;
                let (s, c) = sin_cos_2pi(h);
                assert_eq!((s.abs(), c), (0.0, -1.0), "x = {h}");
            }
        }
        for x in [8_388_608.0f32, 1.0e9, -3.0e12, f32::MAX] {
            assert_eq!(sin_cos_2pi(x).1, 1.0, "x = {x}");
        }
        // Quarter turns just below 2²²: 4_194_303.25 → (1, 0), .75 → (−1, 0).
        assert_eq!(sin_cos_2pi(4_194_303.0 + 0.25), (1.0, 0.0));
        assert_eq!(sin_cos_2pi(4_194_303.0 + 0.75).0, -1.0);
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        assert_eq!(round_nearest(2.5), 2.0);
        assert_eq!(round_nearest(-2.5), -2.0);
        assert_eq!(round_nearest(2.6), 3.0);
        assert_eq!(round_nearest(-0.4), -0.0);
        assert_eq!(round_nearest(1.0e9), 1.0e9);
        // The range where only integers and half-integers exist.
        assert_eq!(round_nearest(4_194_304.5), 4_194_304.0);
        assert_eq!(round_nearest(4_194_305.5), 4_194_306.0);
        assert_eq!(round_nearest(-6_000_001.5), -6_000_002.0);
        assert_eq!(round_nearest(8_388_607.5), 8_388_608.0);
        assert!(round_nearest(f32::NAN).is_nan());
        assert_eq!(round_nearest(f32::NEG_INFINITY), f32::NEG_INFINITY);
    }
}
