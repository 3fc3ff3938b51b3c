//! Independent reference for the optimal-window root `x⋆`: bisection to the last bit on `g`.
//!
//! `g(x) = (1 − x)(1 + (P − 2)x) + (P − 1) x ln x` (Deng et al., AAAI 2023) is evaluated here
//! by its closed form only (none of the solver's code: no Lambert W, no Halley, no series
//! near 1), and the root is found by bisection over the *bit patterns* of positive doubles,
//! which ends with two adjacent doubles `lo < hi`, `g(lo) > 0 ≥ g(hi)`. The sign of `g`
//! is what bisection needs, and it is decided as follows:
//!
//! * In plain `f64` (with the platform's `ln`, not `libm`) when `|g|` exceeds `1e-12` times
//!   the size of its terms: the rounding error of that evaluation is below
//!   `8ε(|t₁| + |t₂|) ≈ 2e-15(|t₁| + |t₂|)`, so the sign is certain.
//! * Otherwise in double-double arithmetic (about 106 bits): `t₁` and `t₂` are formed with
//!   error-free two-sum and two-product (`f64::mul_add`), and `ln x` is the `f64` logarithm
//!   `y` plus one Newton correction, `ln x = y + ln(x e^{−y}) ≈ y + c − c²/2` with
//!   `c = x e^{−y} − 1`, where `e^{−y}` is a double-double exponential (argument reduction
//!   by `ln 2` in double-double, Taylor series at `s = r/2¹⁰`, ten squarings). Next to the
//!   root, `|g|` at a double is at least `|g'| · ulp(x)/2 ≈ 1e-17` while the double-double
//!   error is about `1e-30`, so the sign is certain there too.
//!
//! The f64 filter keeps the test fast in debug builds (double-double is needed only for
//! the last few bisection steps); the test counts how often it is used.

use nrpt_core::optimal::{self, XStar};

/// Double-double number `hi + lo` with `|lo| ≤ ulp(hi)/2`.
#[derive(Clone, Copy, Debug)]
struct Dd {
    hi: f64,
    lo: f64,
}

fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    Dd { hi: s, lo: err }
}

fn quick_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd {
        hi: s,
        lo: b - (s - a),
    }
}

fn two_prod(a: f64, b: f64) -> Dd {
    let p = a * b;
    Dd {
        hi: p,
        lo: a.mul_add(b, -p),
    }
}

impl Dd {
    fn from(a: f64) -> Dd {
        Dd { hi: a, lo: 0.0 }
    }

    fn add(self, b: Dd) -> Dd {
        let s = two_sum(self.hi, b.hi);
        let t = two_sum(self.lo, b.lo);
        let s = quick_two_sum(s.hi, s.lo + t.hi);
        quick_two_sum(s.hi, s.lo + t.lo)
    }

    fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }

    fn sub(self, b: Dd) -> Dd {
        self.add(b.neg())
    }

    fn mul(self, b: Dd) -> Dd {
        let p = two_prod(self.hi, b.hi);
        quick_two_sum(p.hi, p.lo + (self.hi * b.lo + self.lo * b.hi))
    }

    fn mul_f(self, b: f64) -> Dd {
        let p = two_prod(self.hi, b);
        quick_two_sum(p.hi, p.lo + self.lo * b)
    }

    /// Division by a double (used only with small integers).
    fn div_f(self, b: f64) -> Dd {
        let q1 = self.hi / b;
        let r = self.sub(two_prod(q1, b));
        let q2 = r.hi / b;
        let r = r.sub(two_prod(q2, b));
        let q3 = r.hi / b;
        quick_two_sum(q1, q2).add(Dd::from(q3))
    }

    /// Multiplication by 2^k, exact (no overflow or underflow in this test's range).
    fn ldexp(self, k: i32) -> Dd {
        let half = k / 2;
        let a = 2f64.powi(half);
        let b = 2f64.powi(k - half);
        Dd {
            hi: self.hi * a * b,
            lo: self.lo * a * b,
        }
    }
}

/// ln 2 in double-double.
const LN2: Dd = Dd {
    hi: std::f64::consts::LN_2,
    lo: 2.319_046_813_846_299_6e-17,
};

/// `e^a` in double-double for a double `|a| < 700`.
fn dd_exp(a: f64) -> Dd {
    let k = (a / LN2.hi).round();
    // r = a − k ln 2, |r| ≤ 0.35; k·LN2 is formed exactly-enough in double-double.
    let r = Dd::from(a).sub(LN2.mul_f(k));
    let s = r.ldexp(-10);
    // expm1(s) = s (1 + s/2 (1 + s/3 (1 + …))), |s| < 3.4e-4: ten terms reach 1e-40.
    let mut inner = Dd::from(1.0);
    for n in (2..=11).rev() {
        inner = Dd::from(1.0).add(s.mul(inner).div_f(f64::from(n)));
    }
    let mut em1 = s.mul(inner);
    // expm1(2s) = expm1(s) (expm1(s) + 2), ten times.
    for _ in 0..10 {
        em1 = em1.mul(em1.add(Dd::from(2.0)));
    }
    Dd::from(1.0).add(em1).ldexp(k as i32)
}

/// `ln x` in double-double for a positive normal double `x`.
fn dd_ln(x: f64) -> Dd {
    let y = x.ln();
    let c = dd_exp(-y).mul_f(x).sub(Dd::from(1.0));
    Dd::from(y).add(c).sub(Dd::from(0.5 * c.hi * c.hi))
}

/// The sign of `g(x)` (+1, −1 or 0), and whether double-double was needed.
fn sign_g(p: usize, x: f64) -> (i32, bool) {
    let pm1 = (p - 1) as f64;
    let pm2 = (p - 2) as f64;
    let t1 = (1.0 - x) * (1.0 + pm2 * x);
    let t2 = pm1 * x * x.ln();
    let g = t1 + t2;
    if g.abs() > 1e-12 * (t1.abs() + t2.abs()) {
        return (if g > 0.0 { 1 } else { -1 }, false);
    }
    let one_minus_x = two_sum(1.0, -x);
    let t1 = one_minus_x.mul(two_sum(1.0, 0.0).add(two_prod(pm2, x)));
    let t2 = two_prod(pm1, x).mul(dd_ln(x));
    let g = t1.add(t2);
    let sign = if g.hi > 0.0 {
        1
    } else if g.hi < 0.0 {
        -1
    } else {
        0
    };
    (sign, true)
}

/// Adjacent doubles `lo < hi` with `g(lo) > 0 ≥ g(hi)`, and the number of double-double
/// evaluations used.
fn reference_root(p: usize) -> (f64, f64, usize) {
    // x⋆ lies far inside this bracket for 4 ≤ P ≤ 10⁶ (x⋆ ≥ 6e-8, x⋆ ≤ 0.355); the signs at
    // its ends are checked, not assumed.
    let (mut lo, mut hi) = (1e-30_f64.to_bits(), 0.999_f64.to_bits());
    assert_eq!(
        sign_g(p, f64::from_bits(lo)).0,
        1,
        "P = {p}: g(lo) must be > 0"
    );
    assert_eq!(
        sign_g(p, f64::from_bits(hi)).0,
        -1,
        "P = {p}: g(hi) must be < 0"
    );
    let mut dd_used = 0;
    // Positive doubles are ordered like their bit patterns.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let (sign, dd) = sign_g(p, f64::from_bits(mid));
        dd_used += usize::from(dd);
        if sign > 0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (f64::from_bits(lo), f64::from_bits(hi), dd_used)
}

/// The distance from `x` to the bracket `[lo, hi]`, in ulps of `lo`.
fn ulps_outside(x: f64, lo: f64, hi: f64) -> f64 {
    let ulp = f64::from_bits(lo.to_bits() + 1) - lo;
    if x < lo {
        (lo - x) / ulp
    } else if x > hi {
        (x - hi) / ulp
    } else {
        0.0
    }
}

fn check(p: usize, worst_ulps: &mut f64, worst_rel: &mut f64, dd_total: &mut usize) {
    let (lo, hi, dd) = reference_root(p);
    *dd_total += dd;
    let x = match optimal::x_star(p) {
        Ok(XStar::Root(x)) => x,
        other => panic!("P = {p}: expected a root, got {other:?}"),
    };
    let rel = ((x - lo) / lo).abs();
    assert!(
        rel < 1e-9,
        "P = {p}: solver {x:e}, reference [{lo:e}, {hi:e}], rel {rel:e}"
    );
    *worst_rel = worst_rel.max(rel);
    *worst_ulps = worst_ulps.max(ulps_outside(x, lo, hi));
}

#[test]
fn double_double_primitives_match_mpmath() {
    // mpmath 1.3 at 300 bits, split into (hi, lo).
    let logs = [
        (0.3, -1.203_972_804_325_936_1, 8.935_521_583_403_776e-17),
        (1e-20, -46.051_701_859_880_914, 7.339_520_394_182_075e-16),
        (
            0.999,
            -0.001_000_500_333_583_534_4,
            -2.564_477_700_367_779_8e-20,
        ),
        (0.75, -0.287_682_072_451_780_9, -2.607_160_616_442_564e-17),
        (
            2f64.powi(-60),
            -41.588_830_833_596_72,
            -1.835_517_298_157_842_5e-15,
        ),
    ];
    for (x, hi, lo) in logs {
        let l = dd_ln(x);
        let err = (l.hi - hi) + (l.lo - lo);
        // Absolute accuracy about 1e-32 (the exponential's relative error), so relative
        // only where |ln x| ≥ 1.
        assert!(
            err.abs() <= 1e-30 * hi.abs().max(1.0),
            "ln({x}): error {err:e}"
        );
    }
    let exps = [
        (0.5, 1.648_721_270_700_128_2, -4.731_568_479_435_833e-17),
        (10.0, 22_026.465_794_806_718, -1.378_013_470_051_737_2e-12),
        (45.3, 4.715_633_347_319_357_4e19, -635.060_379_856_634_7),
    ];
    for (a, hi, lo) in exps {
        let e = dd_exp(a);
        let err = (e.hi - hi) + (e.lo - lo);
        assert!(err.abs() <= 1e-30 * hi, "exp({a}): error {err:e}");
    }
}

#[test]
fn x_star_matches_bisection_for_every_p_up_to_10000_and_sampled_to_a_million() {
    let start = std::time::Instant::now();
    let (mut worst_ulps, mut worst_rel, mut dd_total) = (0.0_f64, 0.0_f64, 0_usize);
    let mut count = 0;
    for p in 4..=10_000 {
        check(p, &mut worst_ulps, &mut worst_rel, &mut dd_total);
        count += 1;
    }
    // 40 values from 10⁴ to 10⁶, geometric.
    for i in 1..=40 {
        let p = (1e4 * 100f64.powf(f64::from(i) / 40.0)).round() as usize;
        check(p, &mut worst_ulps, &mut worst_rel, &mut dd_total);
        count += 1;
    }
    eprintln!(
        "{count} values of P: worst relative error {worst_rel:e}, worst {worst_ulps} ulp outside \
         the reference bracket, {dd_total} double-double evaluations, {:?}",
        start.elapsed()
    );
    // The solver claims a few ulp; the brief's bound is 1e-9.
    assert!(worst_ulps <= 8.0, "worst {worst_ulps} ulp");
}

#[test]
fn two_and_three_chains_have_no_root() {
    for p in [2, 3] {
        assert_eq!(optimal::x_star(p), Ok(XStar::NoInteriorRoot));
        assert_eq!(optimal::optimal_window(p, 0.4), Ok(1));
        assert_eq!(optimal::w_star(p, 0.4), Ok(1.0));
        // g > 0 on (0, 1): a geometric grid towards 0 and towards 1, and a uniform one.
        // (Towards 1 only to ε = 2⁻⁴⁰: for P = 3, g ≈ ε³/3 ≈ 2e-37 there, still far above
        // the double-double error of about 1e-32 · 3ε ≈ 3e-44.)
        for k in 1..=60 {
            let near_zero = 2f64.powi(-k);
            assert_eq!(sign_g(p, near_zero).0, 1, "P = {p}, x = {near_zero:e}");
            if k <= 40 {
                let near_one = 1.0 - 2f64.powi(-k);
                assert_eq!(sign_g(p, near_one).0, 1, "P = {p}, x = {near_one:e}");
            }
        }
        for i in 1..1000 {
            let x = f64::from(i) / 1000.0;
            assert_eq!(sign_g(p, x).0, 1, "P = {p}, x = {x}");
        }
    }
    // Whereas for P = 4, g < 0 next to 1 (g ≈ −ε²/2).
    for k in 2..=25 {
        assert_eq!(sign_g(4, 1.0 - 2f64.powi(-k)).0, -1);
    }
}
