//! The bit-serial Bernoulli comparison: 64 swap indicators of one pair at once, each
//! bit of a random word read as the next binary digit of one ensemble's uniform.
//!
//! nrpt-core's index process draws a 32-bit word w per pair and sets the indicator to
//! `u64::from(w) < t` with `t = indicator_threshold(s)` ([`indicator_threshold`]), so
//! that P(indicator) = t/2³², the rate s truncated to 2⁻³². Here ensemble e reads the
//! digits of its w from bit e of successive words r₁, r₂, …, most significant first
//! (w = 0.r₁r₂…r₃₂ in binary), against the digits of t = 0.b₁b₂…b₃₂: the first digit at
//! which they differ decides, w < t where bⱼ = 1 and rⱼ = 0, w > t where bⱼ = 0 and
//! rⱼ = 1; where they agree the ensemble stays undecided. So, word by word:
//!
//! ```text
//! ones      |= undecided & B & !r      // B = all ones where bⱼ = 1, else 0
//! undecided &= !(r ^ B)                // still equal to t's digits so far
//! ```
//!
//! until no ensemble is undecided or t has no 1 digit left (ensembles still equal to t
//! then have w ≥ t: indicator 0). Each word decides about half of the undecided
//! ensembles, so 64 take about log₂ 64 + 1.3 words; the result is exactly
//! `u64::from(w) < t` for the w formed from the bits read, whatever the number of words
//! it took (the tests check it on constructed words).
//!
//! [`indicator_threshold`]: nrpt_core::bernoulli::indicator_threshold

use super::words::WIDTH;

/// The words the comparison reads at most for threshold `t`: up to the last 1 digit of
/// t's 32-bit expansion; 0 for t = 0 (never) and for t ≥ 2³² (always), which need no
/// word.
pub fn rounds(t: u64) -> u32 {
    if t == 0 || t >= 1 << 32 {
        0
    } else {
        32 - (t as u32).trailing_zeros()
    }
}

/// The ensembles of `undecided` whose indicator is 1 under threshold `t` (the bits of
/// [`indicator_threshold`](nrpt_core::bernoulli::indicator_threshold): 0 to 2³², where
/// t ≥ 2³² means every ensemble), reading bit e of the words `next_word()` returns as
/// the digits of ensemble e's uniform w, most significant first: the answer is
/// `u64::from(w) < t` for the w formed from the bits read. The first digit at which
/// w differs from t decides (w < t where t's digit is 1 and w's 0); where they agree
/// the ensemble reads on. Takes at most [`rounds`]`(t)` words, fewer once every
/// ensemble is decided (about log₂ 64 + 1.3 for 64); ensembles outside `undecided` stay
/// 0.
pub fn indicator_lanes(t: u64, undecided: u64, mut next_word: impl FnMut() -> u64) -> u64 {
    if t >= 1 << 32 {
        return undecided;
    }
    let mut und = undecided;
    let mut ones = 0;
    for j in 0..rounds(t) {
        if und == 0 {
            break;
        }
        let r = next_word();
        let b = 0u64.wrapping_sub((t >> (31 - j)) & 1);
        ones |= und & b & !r;
        und &= !(r ^ b);
    }
    ones
}

/// [`indicator_lanes`] for the [`WIDTH`] pairs of a batch in lockstep: pair i reads
/// word i of each `next()`; `rounds` is the most [`rounds`] of the batch's thresholds.
/// Pair i's answer is `indicator_lanes(t[i], undecided[i], …)` on its own words (it
/// ignores the words drawn after it is decided, or after its own rounds, when another
/// pair needs more): branch-free lane logic that compilers vectorize, one exit test per
/// word.
#[inline(always)]
pub(crate) fn indicator_batch(
    t: &[u64; WIDTH],
    undecided: [u64; WIDTH],
    rounds: u32,
    mut next: impl FnMut() -> [u64; WIDTH],
) -> [u64; WIDTH] {
    let mut und = undecided;
    let mut ones = [0u64; WIDTH];
    // t's digits from the top bit down: digit j is the sign of `digits << j`.
    let mut digits = [0u64; WIDTH];
    for i in 0..WIDTH {
        // t ≥ 2³²: every undecided ensemble, with no word.
        let all = 0u64.wrapping_sub(u64::from(t[i] >> 32 != 0));
        ones[i] = und[i] & all;
        und[i] &= !all;
        digits[i] = t[i] << 32;
    }
    for _ in 0..rounds.min(32) {
        if und.iter().fold(0, |a, &u| a | u) == 0 {
            break;
        }
        let r = next();
        for i in 0..WIDTH {
            let b = ((digits[i] as i64) >> 63) as u64;
            digits[i] <<= 1;
            ones[i] |= und[i] & b & !r[i];
            und[i] &= !(r[i] ^ b);
        }
    }
    ones
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_core::bernoulli::indicator_threshold;
    use nrpt_core::rng::{PhiloxStream, Rng, uniform_f64};

    /// The 32-bit uniform of ensemble e formed from 32 words: bit e of word j is its
    /// digit j (most significant first).
    fn uniform_of(words: &[u64; 32], e: u32) -> u32 {
        words
            .iter()
            .fold(0u32, |w, &r| (w << 1) | ((r >> e) & 1) as u32)
    }

    /// Words whose ensemble e has the uniform `w[e]` (the inverse of `uniform_of`).
    fn words_of(w: &[u32; 64]) -> [u64; 32] {
        let mut words = [0u64; 32];
        for (j, word) in words.iter_mut().enumerate() {
            for (e, &we) in w.iter().enumerate() {
                *word |= u64::from((we >> (31 - j)) & 1) << e;
            }
        }
        words
    }

    /// Checks both the scalar and the batched comparison on `words` against
    /// `u64::from(w) < t` for every ensemble, with every ensemble undecided and with
    /// `mask` undecided; and that the scalar one reads at most `rounds(t)` words.
    fn check(t: u64, words: &[u64; 32], mask: u64, what: &str) {
        for und in [u64::MAX, mask] {
            let mut want = 0u64;
            for e in 0..64 {
                if und >> e & 1 == 1 && u64::from(uniform_of(words, e)) < t {
                    want |= 1 << e;
                }
            }
            let mut used = 0;
            let got = indicator_lanes(t, und, || {
                used += 1;
                words[used - 1]
            });
            assert_eq!(got, want, "{what}: t {t:#x} undecided {und:#x}");
            assert!(
                used <= rounds(t) as usize,
                "{what}: t {t:#x} read {used} words"
            );
            // The batch: pair i gets the same words as pair 0, rotated by i bits, and
            // thresholds that differ (t, then others), so that pairs need different
            // numbers of words.
            let ts: [u64; WIDTH] = std::array::from_fn(|i| {
                if i % 2 == 0 {
                    t
                } else {
                    (t + i as u64) >> (i % 3)
                }
            });
            let mut n = 0;
            let batch = indicator_batch(
                &ts,
                [und; WIDTH],
                ts.iter().map(|&x| rounds(x)).max().unwrap_or(0),
                || {
                    n += 1;
                    std::array::from_fn(|i| {
                        words.get(n - 1).map_or(!0, |w| w.rotate_left(i as u32))
                    })
                },
            );
            for (i, &ti) in ts.iter().enumerate() {
                let rotated: [u64; 32] = std::array::from_fn(|j| words[j].rotate_left(i as u32));
                let mut k = 0;
                let want_i = indicator_lanes(ti, und, || {
                    k += 1;
                    rotated[k - 1]
                });
                assert_eq!(batch[i], want_i, "{what}: batch pair {i}, t {ti:#x}");
            }
        }
    }

    /// Rates at the edges and inside: 0, 1, tiny ones (below 2⁻³³ the threshold is 0),
    /// 1 − 2⁻³² and nearer to 1 (2³² − 1, then 2³²), NaN and out of range.
    const RATES: [f64; 21] = [
        0.0,
        1.0,
        1e-12,
        1.0 / 8_589_934_592.0,        // 2⁻³³: t = 0
        1.0 / 4_294_967_296.0,        // 2⁻³²: t = 1
        3.0 / 8_589_934_592.0,        // 1.5 · 2⁻³²: t = 1
        5.0 / 4_294_967_296.0,        // t = 5
        1.0 - 1.0 / 4_294_967_296.0,  // t = 2³² − 1
        1.0 - 1.0 / 8_589_934_592.0,  // t = 2³² − 1
        1.0 - 1.0 / 17_179_869_184.0, // t = 2³²
        0.5,
        0.25,
        0.4,
        0.1,
        0.9,
        0.999,
        0.001,
        f64::NAN,
        -0.5,
        1.5,
        0.123_456_789,
    ];

    /// The decided bits equal `u64::from(w) < indicator_threshold(rate)`, on random
    /// words and on words built so that the ensembles' uniforms sit at and around the
    /// threshold (t − 2 … t + 2, 0, 2³² − 1, and t with each single digit flipped).
    #[test]
    fn bit_serial_comparison_is_the_threshold_comparison() {
        let mut rng = PhiloxStream::new(36, 5, 0, 0, 0);
        let mut rates: Vec<f64> = RATES.to_vec();
        rates.extend((0..200).map(|_| uniform_f64(rng.next_u32())));
        for &rate in &rates {
            let t = indicator_threshold(rate);
            for _ in 0..50 {
                let words: [u64; 32] = std::array::from_fn(|_| rng.next_u64());
                check(t, &words, rng.next_u64(), &format!("rate {rate}, random"));
            }
            let near = |e: usize| -> u32 {
                let tt = t.min(u64::from(u32::MAX)) as i64;
                let v = match e {
                    0..=4 => tt + e as i64 - 2,
                    5 => 0,
                    6 => i64::from(u32::MAX),
                    7..=38 => tt ^ (1 << (e - 7)),
                    _ => tt + (e as i64 - 40) * 977,
                };
                v.clamp(0, i64::from(u32::MAX)) as u32
            };
            let w: [u32; 64] = std::array::from_fn(near);
            check(
                t,
                &words_of(&w),
                0x5555_5555_5555_5555,
                &format!("rate {rate}, constructed"),
            );
        }
    }

    /// The comparison takes about log₂ 64 + 1.3 words for 64 undecided ensembles (the
    /// most of 64 geometric(½) digits), at s = 0.4.
    #[test]
    fn about_eight_words_per_64_indicators() {
        let mut rng = PhiloxStream::new(1, 2, 3, 4, 5);
        let t = indicator_threshold(0.4);
        let n = 20_000;
        let mut words = 0usize;
        let mut ones = 0u32;
        for _ in 0..n {
            ones += indicator_lanes(t, u64::MAX, || {
                words += 1;
                rng.next_u64()
            })
            .count_ones();
        }
        let per = words as f64 / n as f64;
        assert!((7.0..8.0).contains(&per), "{per} words per 64 indicators");
        let share = f64::from(ones) / (64.0 * n as f64);
        assert!((share - 0.4).abs() < 0.003, "indicator share {share}");
    }
}
