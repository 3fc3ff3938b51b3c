//! Fast mode's functions (`MathMode::Fast`, kernels/fastmath.cuh with NRPT_FAST_MATH=1)
//! in their host build (`HostMath::Fast`), where each hardware instruction is emulated:
//! within the documented errors of an f64 reference (and no closer than the emulation
//! moves them: they are not exact mode's bits), the special values of `ln` kept, and the
//! argument reduction holding its accuracy over the whole range the kernels use (the
//! targets' coordinates, far beyond one period). Exact mode's build is unchanged
//! (`host_parity.rs` compares it with nrpt-core bit for bit).

use nrpt_core::rng::{PhiloxStream, Rng};
use nrpt_cuda::host_math::{self as hm, HostMath};

/// lg2.approx.f32: 2^-22.6 absolute on the mantissa, emulated as 2^-22 = 2.38e-7
/// (relative beyond |lg2| = 1; ln 2 < 1 only shrinks it), plus the roundings of lg2 and
/// of the product by ln 2 to f32 (2^-24 relative each): relative to max(|ln x|, 1).
const LN_ERR: f64 = 2.38e-7 + 2.0 * 6.0e-8;
/// sin/cos.approx.f32: 2^-20.5 in [−π, π], emulated as 2^-20 = 9.54e-7, plus the
/// argument's errors (2π rounded to f32: π · 2^-24 relative; the product 2π·r rounded:
/// half an ulp of π, 1.2e-7; r = x − rint x is exact) and the result's rounding.
const SIN_ERR: f64 = 9.54e-7 + 0.9e-7 + 1.2e-7 + 3.0e-8;

fn words(seed: u32) -> PhiloxStream {
    PhiloxStream::new(seed, 0xFA57, 0, 0, 3)
}

#[test]
fn fast_ln_is_within_the_documented_error_and_keeps_the_special_values() {
    let mut w = words(1);
    let mut worst = 0.0f64;
    let mut differs = 0;
    for i in 0..200_000u32 {
        // The uniforms Box–Muller and the Metropolis test take, and spread magnitudes.
        let x = if i % 2 == 0 {
            nrpt_core::rng::uniform_f32(w.next_u32())
        } else {
            f32::from_bits(0x0080_0000 + w.next_u32() % 0x7e00_0000)
        };
        let got = f64::from(hm::ln_in(HostMath::Fast, x));
        let want = f64::from(x).ln();
        let err = (got - want).abs() / want.abs().max(1.0);
        worst = worst.max(err);
        differs += usize::from(hm::ln_in(HostMath::Fast, x) != hm::ln(x));
        assert!(err <= LN_ERR, "ln({x:e}) = {got:e}, want {want:e}");
    }
    eprintln!(
        "fast ln: worst error {worst:.3e} (bound {LN_ERR:e}); {differs} of 200000 differ from exact mode"
    );
    assert!(
        differs > 100_000,
        "fast ln is mostly exact mode's bits: not the emulation"
    );
    assert!(f64::from(hm::ln_in(HostMath::Fast, 1.0)).abs() <= LN_ERR);
    assert_eq!(hm::ln_in(HostMath::Fast, 0.0), f32::NEG_INFINITY);
    assert_eq!(hm::ln_in(HostMath::Fast, f32::INFINITY), f32::INFINITY);
    assert!(hm::ln_in(HostMath::Fast, -1.0).is_nan());
    assert!(hm::ln_in(HostMath::Fast, f32::NAN).is_nan());
}

#[test]
fn fast_sin_cos_2pi_holds_its_accuracy_over_the_targets_range() {
    let mut w = words(2);
    let mut worst = 0.0f64;
    for i in 0..200_000u32 {
        // Uniforms (Box–Muller), then coordinates up to ±64 (the targets' states, the
        // init kernel's range and beyond: the reduction must not lose accuracy).
        let u = nrpt_core::rng::uniform_f32(w.next_u32());
        let x = if i % 2 == 0 { u } else { (u - 0.5) * 128.0 };
        let (s, c) = hm::sin_cos_2pi_in(HostMath::Fast, x);
        let t = 2.0 * std::f64::consts::PI * f64::from(x);
        let (es, ec) = (
            (f64::from(s) - t.sin()).abs(),
            (f64::from(c) - t.cos()).abs(),
        );
        worst = worst.max(es).max(ec);
        assert!(
            es <= SIN_ERR && ec <= SIN_ERR,
            "sin/cos 2π·{x:e}: {s:e} {c:e}"
        );
    }
    eprintln!("fast sin/cos 2πx: worst error {worst:.3e} (bound {SIN_ERR:e})");
    // Non-finite arguments give NaN, as in exact mode.
    for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
        let (s, c) = hm::sin_cos_2pi_in(HostMath::Fast, x);
        assert!(s.is_nan() && c.is_nan(), "{x}");
    }
}

#[test]
fn fast_box_muller_is_close_to_exact_modes_normals() {
    let mut w = words(3);
    let mut worst = 0.0f64;
    let (mut sum, mut sum2, n) = (0.0f64, 0.0f64, 100_000);
    for _ in 0..n {
        let (w0, w1) = (w.next_u32(), w.next_u32());
        let (a0, a1) = hm::box_muller_f32_in(HostMath::Fast, w0, w1);
        let (b0, b1) = hm::box_muller_f32(w0, w1);
        // r = √t, t = −2 ln u ≤ 33.3 for u ≥ 2^-24: |Δz| ≤ |Δr| + r |Δ(sin, cos)| with
        // r |Δ(sin, cos)| ≤ 5.8 · SIN_ERR and |Δr| ≤ min(√|Δt|, |Δt| / 2r) (plus
        // rsqrt's 2^-22 relative), |Δt| ≤ 2 ln 2 · 2^-22 · max(|lg2 u|, 1) ≤ 8e-6,
        // which near u = 1 (r → 0) is ≤ 4e-7.
        let r = f64::from(b0).hypot(f64::from(b1));
        let dt: f64 = if r < 1.0 { 4e-7 } else { 8e-6 };
        let dr = dt.sqrt().min(dt / (2.0 * r)) + 2.5e-7 * r;
        let tol = dr + 5.8 * SIN_ERR + 1e-6;
        let d = (f64::from(a0) - f64::from(b0))
            .abs()
            .max((f64::from(a1) - f64::from(b1)).abs());
        worst = worst.max(d);
        assert!(
            d <= tol,
            "words {w0:#x} {w1:#x}: ({a0}, {a1}) vs ({b0}, {b1})"
        );
        for z in [a0, a1] {
            sum += f64::from(z);
            sum2 += f64::from(z) * f64::from(z);
        }
    }
    let m = sum / f64::from(2 * n);
    let v = sum2 / f64::from(2 * n) - m * m;
    eprintln!("fast Box–Muller: worst |Δz| {worst:.3e}; mean {m:.4}, variance {v:.4}");
    // Five standard errors of the mean (1/√(2n)) and of the variance (√(2/(2n))).
    assert!(m.abs() < 5.0 / f64::from(2 * n).sqrt(), "mean {m}");
    assert!(
        (v - 1.0).abs() < 5.0 * (2.0 / f64::from(2 * n)).sqrt(),
        "variance {v}"
    );
    // A word pair whose u1 is the largest uniform (lg2 near 0): r is 0 or tiny, finite.
    let (z0, z1) = hm::box_muller_f32_in(HostMath::Fast, u32::MAX, 12345);
    assert!(z0.is_finite() && z1.is_finite() && z0.abs() < 1e-3 && z1.abs() < 1e-3);
}

#[test]
fn fast_and_exact_builds_agree_on_what_does_not_use_the_approximations() {
    // The 2D energy at points where only the approximations differ: within the
    // emulated errors (2 · 2 · SIN_ERR from the two cosines, and the sum's roundings).
    let mut w = words(4);
    for _ in 0..10_000 {
        let a = (nrpt_core::rng::uniform_f32(w.next_u32()) - 0.5) * 8.0;
        let b = (nrpt_core::rng::uniform_f32(w.next_u32()) - 0.5) * 8.0;
        let fast = f64::from(hm::modes2d_energy_in(HostMath::Fast, a, b));
        let exact = f64::from(hm::modes2d_energy(a, b));
        assert!(
            (fast - exact).abs() <= 4.0 * SIN_ERR + 1e-5,
            "U({a}, {b}): {fast} vs {exact}"
        );
    }
    assert_eq!(
        HostMath::of(nrpt_cuda::MathMode::Fast),
        Some(HostMath::Fast)
    );
    assert_eq!(
        HostMath::of(nrpt_cuda::MathMode::Exact),
        Some(HostMath::Exact)
    );
    assert_eq!(HostMath::of(nrpt_cuda::MathMode::Fma), None);
}
