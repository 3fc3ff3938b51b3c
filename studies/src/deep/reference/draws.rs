//! Single draws of the reference posterior: the predictive of some of the reference
//! run's kept HMC samples, one by one, for the exact-sampling baseline of `nrpt deep`
//! (what a model average of K genuine posterior draws scores against the reference,
//! [`crate::deep::exact_sampling`]).
//!
//! # The file
//!
//! `draws.npy.gz`: a gzip-compressed `.npy` array of `u16`, draws × test examples ×
//! classes, every probability p stored as round(p · 65535). A stored value is off by at
//! most 1/131070 ≈ 7.6·10⁻⁶ (half a step), a row's sum by at most C/131070 (C
//! classes): beside total variations of 10⁻², nothing a score can see. Quantized to 16
//! bits and compressed, 480 draws of the digits' 449 × 10 predictive take about a
//! megabyte where `f32` would take 8.6.
//!
//! # Which draws
//!
//! [`pick`]: the same number from every chain, evenly spaced over its kept
//! trajectories and ending with its last, chain by chain. The bundled reference keeps
//! 480 of its 5,000 (120 per chain, every 10th trajectory): its effective sample sizes
//! (over 2,600 for every probability from 5,000 draws) say draws ten trajectories apart
//! are close to independent.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

/// Name of the draws file in a reference folder.
pub(crate) const DRAWS_FILE: &str = "draws.npy.gz";

/// Draws a reference keeps by default (`nrpt reference --draws`).
pub const DEFAULT_DRAWS: usize = 480;

/// The largest stored value: probability 1.
const SCALE: f64 = 65535.0;

/// The most bytes the decompressed file may hold (10⁸ values).
const MAX_BYTES: u64 = 200 << 20;

/// The draws of a reference: `count` predictives of `per_draw` values each (test
/// examples × classes), every row a distribution within the quantization
/// ([`row_tolerance`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Draws {
    /// Draws held.
    pub count: usize,
    /// Their predictives, draw by draw, as the file stores them: round(p · 65535).
    values: Vec<u16>,
    /// Values per draw.
    per_draw: usize,
}

/// How far a row of a stored draw may sum from 1: half a step per class.
pub fn row_tolerance(classes: usize) -> f64 {
    classes as f64 * 0.5 / SCALE + 1e-12
}

/// The kept trajectories to store when `want` draws are asked of `chains` chains of
/// `samples` each: (chain, index among its kept) for ⌊want/chains⌋ per chain (at least
/// 1, at most `samples`), evenly spaced and ending with the last, chain by chain.
pub fn pick(chains: usize, samples: usize, want: usize) -> Vec<(usize, usize)> {
    if want == 0 || chains == 0 || samples == 0 {
        return Vec::new();
    }
    let per = (want / chains).clamp(1, samples);
    let step = samples / per;
    (0..chains)
        .flat_map(|c| (0..per).rev().map(move |j| (c, samples - 1 - j * step)))
        .collect()
}

impl Draws {
    /// Draws from their predictives (f32, draw by draw, `per_draw` values each),
    /// quantized.
    pub fn quantize(predictives: &[f32], per_draw: usize) -> Self {
        let values: Vec<u16> = predictives
            .iter()
            .map(|&p| (f64::from(p).clamp(0.0, 1.0) * SCALE).round() as u16)
            .collect();
        Draws {
            count: values.len().checked_div(per_draw).unwrap_or(0),
            values,
            per_draw,
        }
    }

    /// Draw `i`'s predictive (test examples × classes) as probabilities, `None` past the
    /// last.
    pub fn draw(&self, i: usize) -> Option<Vec<f32>> {
        let at = i.checked_mul(self.per_draw)?;
        let slice = self.values.get(at..at + self.per_draw)?;
        Some(
            slice
                .iter()
                .map(|&q| (f64::from(q) / SCALE) as f32)
                .collect(),
        )
    }

    /// The file's bytes: the `.npy` array (draws × `shape`) compressed.
    pub fn encode(&self, shape: [usize; 2]) -> Vec<u8> {
        let npy = nrpt_sampling::npy::encode_u16(&[self.count, shape[0], shape[1]], &self.values);
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        // Writing into a Vec cannot fail.
        let _ = gz.write_all(&npy);
        gz.finish().unwrap_or_default()
    }

    /// The draws from a file's bytes, checked: a gzip stream of a 3-dimensional `u16`
    /// array of `shape` per draw whose rows sum to 1 within [`row_tolerance`].
    pub fn decode(bytes: &[u8], shape: [usize; 2]) -> Result<Self, String> {
        let mut npy = Vec::new();
        MultiGzDecoder::new(bytes)
            .take(MAX_BYTES + 1)
            .read_to_end(&mut npy)
            .map_err(|e| format!("not a gzip stream: {e}"))?;
        if npy.len() as u64 > MAX_BYTES {
            return Err(format!("more than {MAX_BYTES} bytes once decompressed"));
        }
        let array = nrpt_sampling::npy::decode(&npy, 3).map_err(|e| e.to_string())?;
        if array.shape[1..] != shape {
            return Err(format!(
                "draws of shape {:?}, but the reference has {} test examples × {} classes",
                &array.shape[1..],
                shape[0],
                shape[1]
            ));
        }
        if array.shape[0] == 0 {
            return Err("no draw".into());
        }
        let mut values = Vec::with_capacity(array.values.len());
        for &v in &array.values {
            if !(0.0..=SCALE).contains(&v) || v.fract() != 0.0 {
                return Err(format!("a value {v} that is not a u16"));
            }
            values.push(v as u16);
        }
        let classes = shape[1].max(1);
        let tolerance = row_tolerance(classes);
        for (i, row) in values.chunks_exact(classes).enumerate() {
            let sum: f64 = row.iter().map(|&q| f64::from(q) / SCALE).sum();
            if (sum - 1.0).abs() > tolerance {
                let per = shape[0].max(1);
                return Err(format!(
                    "draw {}, test example {}: probabilities summing to {sum}",
                    i / per,
                    i % per
                ));
            }
        }
        Ok(Draws {
            count: array.shape[0],
            values,
            per_draw: shape[0] * shape[1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Evenly spaced per chain, ending with each chain's last kept trajectory; never
    /// more per chain than it kept, at least one.
    #[test]
    fn picks_are_even_per_chain_and_end_with_the_last() {
        assert_eq!(pick(2, 10, 4), vec![(0, 4), (0, 9), (1, 4), (1, 9)]);
        let p = pick(4, 1250, 480);
        assert_eq!(p.len(), 480);
        assert_eq!(p[0], (0, 1249 - 119 * 10));
        assert_eq!(p[119], (0, 1249));
        assert_eq!(p[479], (3, 1249));
        assert_eq!(pick(3, 5, 100).len(), 15);
        assert_eq!(pick(3, 5, 1), vec![(0, 4), (1, 4), (2, 4)]);
        assert!(pick(3, 5, 0).is_empty());
    }

    /// Quantized, written and read back: every probability within half a step, every
    /// row a distribution within the tolerance; damage is refused, saying what.
    #[test]
    fn draws_round_trip_within_half_a_step_and_damage_is_refused() {
        let (n, c) = (3, 4);
        let probs: Vec<f32> = [
            [0.1f32, 0.2, 0.3, 0.4],
            [1.0, 0.0, 0.0, 0.0],
            [0.25, 0.25, 0.25, 0.25],
            [0.7, 0.1, 0.1, 0.1],
            [1e-7, 0.5, 0.5 - 1e-7, 0.0],
            [0.3333, 0.3333, 0.3334, 0.0],
        ]
        .concat();
        let d = Draws::quantize(&probs, n * c);
        assert_eq!(d.count, 2);
        let back = Draws::decode(&d.encode([n, c]), [n, c]).unwrap();
        assert_eq!(back, d);
        for i in 0..2 {
            let got = back.draw(i).unwrap();
            for (g, want) in got.iter().zip(&probs[i * n * c..]) {
                assert!((f64::from(*g) - f64::from(*want)).abs() <= 0.5 / SCALE + 1e-7);
            }
        }
        assert!(back.draw(2).is_none());
        // Another shape, a row that is not a distribution, not gzip.
        assert!(
            Draws::decode(&d.encode([n, c]), [n, c + 1])
                .unwrap_err()
                .contains("shape")
        );
        let mut bad = probs.clone();
        bad[0] = 0.2;
        let e = Draws::decode(&Draws::quantize(&bad, n * c).encode([n, c]), [n, c]).unwrap_err();
        assert!(e.contains("draw 0, test example 0"), "{e}");
        assert!(
            Draws::decode(b"not gzip", [n, c])
                .unwrap_err()
                .contains("gzip")
        );
    }
}
