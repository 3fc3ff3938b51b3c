//! The softmax loss of a batch and its δ, around their exponentials: each row's
//! maximum m, e_j = exp(s_j − m) and their sum, in 8-wide steps, with AVX2 where the
//! processor has it and the same operations in plain Rust elsewhere (the same bits:
//! the tests compare them).
//!
//! The rows lie one after the other without padding, and the exponentials run over
//! the whole batch as one flat array (each value less its row's maximum, spread out
//! beside it first): with 10 classes, 80 vectors for a batch of 64 where rows padded
//! to 16 took 128.
//!
//! Written with intrinsics because the compiler's own vectorization of these loops was
//! fragile: of three plain formulations one ran the exponential lane by lane and
//! another stored the e_j as vectors and summed them back in pieces, stalling on every
//! row (a third of the classifier's time outside its matrix products at hidden width
//! 32, measured with `perf`).

use nrpt_core::fastmath;

use super::matmul::Kernel;

/// The values `exps_and_sums` reads or writes past the `rows · c` of a batch: its
/// slices hold at least `rows · c + SLACK` values.
pub(crate) const SLACK: usize = 8;

/// For each of `rows` rows of `c` values, stored one after the other in `scores`: its
/// largest value m into `maxes`, exp(s_j − m) into `exps` (the same layout) and the
/// row's sum of those into `sums`; `spread` is scratch (each row's m beside its
/// values). NaN scores are passed over by the maximum (as `f32::max` does) and make
/// the row's sum NaN.
///
/// The maximum and the sum run lane-wise over the row's 8-wide steps (lanes past the
/// row's end left out), then over the eight lanes in the fixed tree of [`lanes_max`]
/// and [`lanes_sum`]. `scores`, `exps` and `spread` hold `rows · c + SLACK` values; the
/// slack of `exps` is overwritten.
#[allow(clippy::too_many_arguments)]
pub(crate) fn exps_and_sums(
    kernel: Kernel,
    scores: &[f32],
    c: usize,
    rows: usize,
    exps: &mut [f32],
    spread: &mut [f32],
    maxes: &mut [f32],
    sums: &mut [f32],
) {
    let len = rows * c + SLACK;
    assert!(c > 0, "rows of no values");
    let (scores, exps, spread) = (&scores[..len], &mut exps[..len], &mut spread[..len]);
    let (maxes, sums) = (&mut maxes[..rows], &mut sums[..rows]);
    #[cfg(target_arch = "x86_64")]
    if kernel.is_tiles() {
        // SAFETY: the tiles kernel exists only where AVX2 and FMA are present; the
        // slices hold rows · c + 8 values (sliced above).
        unsafe { avx2::exps_and_sums(scores, c, exps, spread, maxes, sums) };
        return;
    }
    let _ = kernel;
    let steps = c.div_ceil(8);
    for (e, m) in maxes.iter_mut().enumerate() {
        let row = &scores[e * c..(e + 1) * c];
        let mut top = [f32::NEG_INFINITY; 8];
        for (j, &v) in row.iter().enumerate() {
            top[j % 8] = v.max(top[j % 8]);
        }
        *m = lanes_max(top);
        for k in 0..steps {
            spread[e * c + 8 * k..e * c + 8 * k + 8].fill(*m);
        }
    }
    let flat = (rows * c).div_ceil(8) * 8;
    for ((x, &v), &m) in exps[..flat].iter_mut().zip(scores).zip(spread.iter()) {
        *x = fastmath::exp(v - m);
    }
    for (e, total) in sums.iter_mut().enumerate() {
        let mut sum = [0.0f32; 8];
        for k in 0..steps {
            for (l, a) in sum.iter_mut().enumerate() {
                let j = 8 * k + l;
                *a += if j < c { exps[e * c + j] } else { 0.0 };
            }
        }
        *total = lanes_sum(sum);
    }
}

/// Σ over the batch of `−log softmax(s)_y`, from `rows` rows of `c` scores one after
/// the other; e_j = exp(s_j − max s) goes to `exps` (the same layout), which holds δ =
/// scale·(softmax − e_y) at the end with `want_delta`. `per_row` is scratch of
/// 3 · rows + rows · c + [`SLACK`] values.
///
/// In passes over all rows, so that rows overlap instead of waiting on each other:
/// maxima m, e_j and their sums S ([`exps_and_sums`]), then `log Σ exp = m +
/// ln S` (vectorized across rows) and softmax_j = e_j · (1 / S).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn loss(
    kernel: Kernel,
    scores: &[f32],
    c: usize,
    rows: usize,
    labels: impl Iterator<Item = usize>,
    scale: f32,
    exps: &mut [f32],
    per_row: &mut [f32],
    want_delta: bool,
) -> f32 {
    let (maxes, rest) = per_row.split_at_mut(rows);
    let (sums, rest) = rest.split_at_mut(rows);
    let (factors, spread) = rest.split_at_mut(rows);
    exps_and_sums(kernel, scores, c, rows, exps, spread, maxes, sums);
    if want_delta {
        for (f, &total) in factors.iter_mut().zip(sums.iter()) {
            *f = scale / total;
        }
    }
    for v in sums.iter_mut() {
        *v = fastmath::ln(*v);
    }
    let mut loss = 0.0f32;
    for (e, ((&m, &ln_sum), y)) in maxes.iter().zip(sums.iter()).zip(labels).enumerate() {
        loss += m + ln_sum - scores[e * c + y];
        if want_delta {
            let d = &mut exps[e * c..(e + 1) * c];
            let f = factors[e];
            for x in d.iter_mut() {
                *x *= f;
            }
            d[y] -= scale;
        }
    }
    loss
}

/// The largest of eight lanes: lanes i and i + 4, then i and i + 2, then the two left
/// (NaN lanes are passed over, as `f32::max` does).
#[inline(always)]
fn lanes_max(v: [f32; 8]) -> f32 {
    let a = [
        v[0].max(v[4]),
        v[1].max(v[5]),
        v[2].max(v[6]),
        v[3].max(v[7]),
    ];
    a[0].max(a[2]).max(a[1].max(a[3]))
}

/// The sum of eight lanes in the tree of [`lanes_max`].
#[inline(always)]
fn lanes_sum(v: [f32; 8]) -> f32 {
    let a = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
    (a[0] + a[2]) + (a[1] + a[3])
}

/// The AVX2 twin: the same IEEE operations in the same order (no FMA: the
/// exponential's products and sums are rounded one by one, as in
/// [`fastmath::exp`]).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use nrpt_core::fastmath::{EXP_MAGIC, EXP_POLY, EXP_RANGE, LN2_HI, LN2_LO};

    /// [`fastmath::exp`](nrpt_core::fastmath::exp) on eight lanes.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn exp8(x: __m256) -> __m256 {
        let (low, high) = (_mm256_set1_ps(EXP_RANGE.0), _mm256_set1_ps(EXP_RANGE.1));
        // x < low ? low : x, then > high ? high : x. max_ps and min_ps return their
        // second operand where one is NaN, so NaN stays, as the comparisons of
        // fastmath::exp leave it.
        let xc = _mm256_max_ps(low, x);
        let xc = _mm256_min_ps(high, xc);
        let magic = _mm256_set1_ps(EXP_MAGIC);
        let t = _mm256_add_ps(
            _mm256_mul_ps(xc, _mm256_set1_ps(std::f32::consts::LOG2_E)),
            magic,
        );
        let n = _mm256_sub_ps(t, magic);
        let r = _mm256_sub_ps(
            _mm256_sub_ps(xc, _mm256_mul_ps(n, _mm256_set1_ps(LN2_HI))),
            _mm256_mul_ps(n, _mm256_set1_ps(LN2_LO)),
        );
        let mut p = _mm256_set1_ps(EXP_POLY[0]);
        for &c in &EXP_POLY[1..] {
            p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
        }
        let y = _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r),
            _mm256_set1_ps(1.0),
        );
        let ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
        let n1 = _mm256_srai_epi32::<1>(ni);
        let n2 = _mm256_sub_epi32(ni, n1);
        let bias = _mm256_set1_epi32(127);
        let pow2 =
            |k: __m256i| _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(k, bias)));
        let v = _mm256_mul_ps(_mm256_mul_ps(y, pow2(n1)), pow2(n2));
        // x < low ? 0 : v.
        _mm256_andnot_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(x, low), v)
    }

    /// Lanes i and i + 4, i and i + 2, then the two left: `lanes_max`'s tree.
    #[target_feature(enable = "avx2,fma")]
    fn hmax(v: __m256) -> f32 {
        let a = _mm_max_ps(_mm256_extractf128_ps::<1>(v), _mm256_castps256_ps128(v));
        let b = _mm_max_ps(_mm_movehl_ps(a, a), a);
        _mm_cvtss_f32(_mm_max_ss(_mm_movehdup_ps(b), b))
    }

    /// `lanes_sum`'s tree.
    #[target_feature(enable = "avx2,fma")]
    fn hsum(v: __m256) -> f32 {
        let a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let b = _mm_add_ps(a, _mm_movehl_ps(a, a));
        _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)))
    }

    /// See [`super::exps_and_sums`].
    ///
    /// # Safety
    /// AVX2 is present; `scores`, `exps` and `spread` hold `maxes.len() · c + 8` values.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn exps_and_sums(
        scores: &[f32],
        c: usize,
        exps: &mut [f32],
        spread: &mut [f32],
        maxes: &mut [f32],
        sums: &mut [f32],
    ) {
        let rows = maxes.len();
        let steps = c.div_ceil(8);
        // The lanes of a row's last step that are inside the row.
        let tail = (c - 8 * (steps - 1)) as i32;
        let inside = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(tail),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        );
        let inside = _mm256_castsi256_ps(inside);
        let neg_inf = _mm256_set1_ps(f32::NEG_INFINITY);
        let (s, x, sp) = (scores.as_ptr(), exps.as_mut_ptr(), spread.as_mut_ptr());
        // Three passes (maxima, exponentials, sums), so that the rows' dependency
        // chains (an exponential is some 30 dependent operations) overlap.
        //
        // SAFETY (all loads and stores): a row's steps reach at most 7 values past
        // rows · c, within the 8 of slack; the flat pass stops at rows · c rounded up
        // to 8.
        unsafe {
            for (e, m) in maxes.iter_mut().enumerate() {
                let row = s.add(e * c);
                let mut top = neg_inf;
                for k in 0..steps - 1 {
                    // max(v, top) returns top where v is NaN.
                    top = _mm256_max_ps(_mm256_loadu_ps(row.add(8 * k)), top);
                }
                let last = _mm256_loadu_ps(row.add(8 * (steps - 1)));
                top = _mm256_max_ps(_mm256_blendv_ps(neg_inf, last, inside), top);
                *m = hmax(top);
                let mv = _mm256_set1_ps(*m);
                for k in 0..steps {
                    _mm256_storeu_ps(sp.add(e * c + 8 * k), mv);
                }
            }
            for i in (0..rows * c).step_by(8) {
                let v = _mm256_sub_ps(_mm256_loadu_ps(s.add(i)), _mm256_loadu_ps(sp.add(i)));
                _mm256_storeu_ps(x.add(i), exp8(v));
            }
            for (e, total) in sums.iter_mut().enumerate() {
                let row = x.add(e * c);
                let mut sum = _mm256_setzero_ps();
                for k in 0..steps - 1 {
                    sum = _mm256_add_ps(sum, _mm256_loadu_ps(row.add(8 * k)));
                }
                let last = _mm256_loadu_ps(row.add(8 * (steps - 1)));
                sum = _mm256_add_ps(sum, _mm256_and_ps(last, inside));
                *total = hsum(sum);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 exponential gives fastmath's bits on every input class: the normal
    /// range, the subnormal results, both clamps, ±0, ±∞ and NaN.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_exp_is_fastmath_exp_bit_for_bit() {
        use std::arch::x86_64::*;
        if !Kernel::detect().is_tiles() {
            return;
        }
        let mut xs: Vec<f32> = (0..200_000u32)
            .map(|i| ((f64::from(i) * 0.618_033_988_749_894_9).fract() * 220.0 - 115.0) as f32)
            .collect();
        xs.extend([
            0.0, -0.0, 1e-30, -1e-30, 88.72, 88.73, -86.99, -87.0, -87.01, -1e4, 1e4,
        ]);
        xs.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN,
        ]);
        while !xs.len().is_multiple_of(8) {
            xs.push(0.5);
        }
        for c in xs.chunks_exact(8) {
            let mut got = [0.0f32; 8];
            // SAFETY: AVX2 and FMA are present (checked above); 8 values each way.
            unsafe {
                let v = avx2::exp8(_mm256_loadu_ps(c.as_ptr()));
                _mm256_storeu_ps(got.as_mut_ptr(), v);
            }
            for (&x, &g) in c.iter().zip(&got) {
                let want = fastmath::exp(x);
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "exp({x}): {g} vs {want}"
                );
            }
        }
    }

    /// Both paths against each other bit for bit, and against f64 arithmetic, for row
    /// lengths below, at and past whole vectors, with −∞, large spreads, a NaN and a
    /// negative zero among the scores.
    #[test]
    fn both_paths_agree_and_match_f64() {
        let rows = 37usize;
        for c in [1usize, 2, 7, 8, 10, 19, 24] {
            let len = rows * c + SLACK;
            let mut scores: Vec<f32> = (0..len)
                .map(|i| {
                    let u = ((i * 7919) % 2003) as f32 / 2003.0 - 0.5;
                    u * if i % 5 == 0 { 120.0 } else { 9.0 }
                })
                .collect();
            if c > 1 {
                // (A row of −∞ alone has no softmax: −∞ − (−∞) is NaN.)
                scores[2 * c] = f32::NEG_INFINITY;
            }
            scores[3 * c + c / 2] = f32::NAN;
            scores[5 * c] = -0.0;
            let mut kernels = vec![Kernel::GEMM];
            if Kernel::detect().is_tiles() {
                kernels.push(Kernel::detect());
            }
            let mut results = Vec::new();
            for kernel in kernels {
                let (mut exps, mut spread) = (vec![7.0f32; len], vec![0.0f32; len]);
                let (mut maxes, mut sums) = (vec![0.0f32; rows], vec![0.0f32; rows]);
                exps_and_sums(
                    kernel,
                    &scores,
                    c,
                    rows,
                    &mut exps,
                    &mut spread,
                    &mut maxes,
                    &mut sums,
                );
                for r in 0..rows {
                    let s = &scores[r * c..(r + 1) * c];
                    if r == 3 {
                        assert!(sums[r].is_nan(), "c = {c}: a NaN score makes the sum NaN");
                        continue;
                    }
                    let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    assert_eq!(maxes[r], m, "c = {c}, row {r}");
                    let want: f64 = s.iter().map(|&v| f64::from(v - m).exp()).sum();
                    assert!(
                        (f64::from(sums[r]) - want).abs() <= 1e-6 * want,
                        "c = {c}, row {r}: {} vs {want}",
                        sums[r]
                    );
                    for (j, &e) in exps[r * c..(r + 1) * c].iter().enumerate() {
                        let w = f64::from(s[j] - m).exp();
                        // 2⁻²³ relative, and exp flushes to 0 below e^−87 ≈ 1.65·10⁻³⁸.
                        assert!(
                            (f64::from(e) - w).abs() <= 1.2e-7 * w + 1.65e-38,
                            "c = {c}, row {r}, {j}: {e} vs {w}"
                        );
                    }
                }
                exps.truncate(rows * c);
                results.push((exps, maxes, sums));
            }
            if let [a, b] = &results[..] {
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&a.0), bits(&b.0), "c = {c}: exponentials");
                assert_eq!(bits(&a.1), bits(&b.1), "c = {c}: maxima");
                assert_eq!(bits(&a.2), bits(&b.2), "c = {c}: sums");
            }
        }
    }
}
