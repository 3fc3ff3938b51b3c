//! Accuracy of target-level samples on the 2D toy: total-variation distances to the
//! true density on a grid and over the 25 mode cells.

use nrpt_core::target::{Modes2d, Potential};
use serde::Serialize;

/// The grid of the paper's figures: 50 × 50 cells on [−2.5, 2.5]².
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    /// Cells per side.
    pub n: usize,
    /// Lower edge of both axes.
    pub lo: f64,
    /// Upper edge of both axes.
    pub hi: f64,
}

impl Grid {
    /// 50 × 50 on [−2.5, 2.5]².
    pub const PAPER: Grid = Grid {
        n: 50,
        lo: -2.5,
        hi: 2.5,
    };

    fn cell(&self, v: f64) -> Option<usize> {
        if !(v >= self.lo && v < self.hi) {
            return None;
        }
        let i = ((v - self.lo) / (self.hi - self.lo) * self.n as f64) as usize;
        Some(i.min(self.n - 1))
    }

    /// Histogram of 2D points (`[x0, y0, x1, y1, …]`): cell masses (row = y, column = x)
    /// normalized over the points inside the grid, and the share of points outside.
    pub fn histogram(&self, points: &[f32]) -> (Vec<f64>, f64) {
        let mut h = vec![0.0; self.n * self.n];
        let (mut inside, mut total) = (0usize, 0usize);
        for p in points.chunks_exact(2) {
            total += 1;
            if let (Some(i), Some(j)) = (self.cell(f64::from(p[0])), self.cell(f64::from(p[1]))) {
                h[j * self.n + i] += 1.0;
                inside += 1;
            }
        }
        if inside > 0 {
            h.iter_mut().for_each(|v| *v /= inside as f64);
        }
        let outside = if total == 0 {
            0.0
        } else {
            (total - inside) as f64 / total as f64
        };
        (h, outside)
    }

    /// The true mass of every cell under π ∝ exp(−U) of the 25-mode target, normalized
    /// over the grid: exp(−U) averaged over `sub × sub` points inside each cell.
    pub(crate) fn true_masses(&self, sub: usize) -> Vec<f64> {
        let width = (self.hi - self.lo) / self.n as f64;
        let mut m = vec![0.0; self.n * self.n];
        for j in 0..self.n {
            for i in 0..self.n {
                let mut acc = 0.0;
                for a in 0..sub {
                    for b in 0..sub {
                        let x = self.lo + width * (i as f64 + (a as f64 + 0.5) / sub as f64);
                        let y = self.lo + width * (j as f64 + (b as f64 + 0.5) / sub as f64);
                        acc += (-Potential::<f64>::energy(&Modes2d, &[x, y])).exp();
                    }
                }
                m[j * self.n + i] = acc;
            }
        }
        let total: f64 = m.iter().sum();
        m.iter_mut().for_each(|v| *v /= total);
        m
    }
}

/// Total-variation distance ½ Σ |p_i − q_i| of two distributions on the same cells.
pub fn total_variation(p: &[f64], q: &[f64]) -> f64 {
    0.5 * p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

/// Masses of the 5 × 5 mode cells (unit squares centred on the integer points of
/// [−2, 2]²) from masses on the 50 × 50 paper grid, whose cells are 0.1 wide.
pub(crate) fn mode_cells(fine: &[f64]) -> Vec<f64> {
    let n = Grid::PAPER.n;
    let mut m = vec![0.0; 25];
    for j in 0..n {
        for i in 0..n {
            m[(j / 10) * 5 + i / 10] += fine[j * n + i];
        }
    }
    m
}

/// How well a set of 2D samples matches the 25-mode target.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Accuracy {
    /// TV distance on the 50 × 50 grid.
    pub tv_distance: f64,
    /// TV distance between the masses of the 25 mode cells.
    pub tv_modes: f64,
    /// Share of samples outside [−2.5, 2.5]².
    pub outside_share: f64,
    /// Samples used.
    pub samples: usize,
}

/// The truth on the paper grid, computed once and shared.
#[derive(Clone, Debug)]
pub struct Truth {
    /// Cell masses on the 50 × 50 grid.
    pub fine: Vec<f64>,
    /// Masses of the 25 mode cells.
    pub modes: Vec<f64>,
}

impl Truth {
    /// Computes the truth (5 × 5 points per cell).
    pub fn new() -> Self {
        let fine = Grid::PAPER.true_masses(5);
        let modes = mode_cells(&fine);
        Truth { fine, modes }
    }

    /// Accuracy of `points` (`[x0, y0, x1, y1, …]`).
    pub fn accuracy(&self, points: &[f32]) -> Accuracy {
        let (h, outside) = Grid::PAPER.histogram(points);
        Accuracy {
            tv_distance: total_variation(&h, &self.fine),
            tv_modes: total_variation(&mode_cells(&h), &self.modes),
            outside_share: outside,
            samples: points.len() / 2,
        }
    }
}

impl Default for Truth {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_core::rng::{PhiloxStream, Rng, uniform_f64};

    #[test]
    fn truth_is_normalized_and_symmetric() {
        let t = Truth::new();
        assert!((t.fine.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((t.modes.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // The centre mode is the heaviest; corners the lightest; symmetric.
        let c = t.modes[12];
        assert!(t.modes.iter().all(|&m| m <= c));
        assert!((t.modes[0] - t.modes[24]).abs() < 1e-12);
        assert!((t.modes[4] - t.modes[20]).abs() < 1e-12);
        // Corner mode: U(2, 2) − U(0, 0) = 1.6, so about exp(−1.6) ≈ 0.2 of the centre.
        assert!(
            t.modes[0] < 0.25 * c && t.modes[0] > 0.15 * c,
            "{:?}",
            t.modes
        );
    }

    #[test]
    fn exact_samples_have_a_small_distance_and_wrong_ones_a_large_one() {
        // Rejection sampling from the truth as an independent check of the metric.
        let t = Truth::new();
        let g = Grid::PAPER;
        let max = t.fine.iter().cloned().fold(0.0, f64::max);
        let mut rng = PhiloxStream::new(1, 2, 3, 4, 5);
        let mut pts = Vec::new();
        while pts.len() < 2 * 200_000 {
            let cell = (uniform_f64(rng.next_u32()) * 2500.0) as usize;
            if uniform_f64(rng.next_u32()) * max < t.fine[cell] {
                let (i, j) = (cell % 50, cell / 50);
                let w = (g.hi - g.lo) / 50.0;
                pts.push((g.lo + w * (i as f64 + uniform_f64(rng.next_u32()))) as f32);
                pts.push((g.lo + w * (j as f64 + uniform_f64(rng.next_u32()))) as f32);
            }
        }
        let good = t.accuracy(&pts);
        // 200,000 samples on 2,500 cells: expected TV about sqrt(cells / (2π n)) ≈ 0.04.
        assert!(good.tv_distance < 0.06, "{good:?}");
        assert!(good.tv_modes < 0.01, "{good:?}");
        assert_eq!(good.outside_share, 0.0);
        // All mass in the centre mode.
        let bad: Vec<f32> = (0..1000)
            .flat_map(|i| [(i % 7) as f32 * 0.01, 0.0])
            .collect();
        let b = t.accuracy(&bad);
        assert!(b.tv_modes > 0.5, "{b:?}");
        let out = t.accuracy(&[9.0, 9.0, 0.0, 0.0]);
        assert_eq!(out.outside_share, 0.5);
    }

    #[test]
    fn total_variation_of_disjoint_distributions_is_one() {
        assert_eq!(total_variation(&[1.0, 0.0], &[0.0, 1.0]), 1.0);
        assert_eq!(total_variation(&[0.5, 0.5], &[0.5, 0.5]), 0.0);
    }
}
