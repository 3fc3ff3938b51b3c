//! The lane math of every target equals its scalar `f32` math, lane by lane, bit for bit.

use std::vec::Vec;

use super::{LanePotential, Modes2d, SumModes};
use crate::rng::{PhiloxStream, Rng, UnitDraw};

/// `L` states of `dim` coordinates, spread over `[-width, width)` (past the 2D toy's wall
/// at |x|² = 20 for width 6).
fn states<const L: usize>(dim: usize, width: f32, seed: u32) -> Vec<[f32; L]> {
    let mut w = PhiloxStream::new(seed, 0, 0, 0, 0);
    (0..dim)
        .map(|_| core::array::from_fn(|_| (f32::uniform(w.next_u32()) * 2.0 - 1.0) * width))
        .collect()
}

fn check<P: LanePotential, const L: usize>(p: &P, x: &[[f32; L]]) {
    let d = x.len();
    let mut grad = vec![[0.0f32; L]; d];
    p.gradient_lanes(x, &mut grad);
    let u = p.energy_lanes(x);
    for i in 0..L {
        let xi: Vec<f32> = x.iter().map(|row| row[i]).collect();
        let mut g = vec![0.0f32; d];
        p.gradient(&xi, &mut g);
        for j in 0..d {
            assert_eq!(
                grad[j][i].to_bits(),
                g[j].to_bits(),
                "lane {i}, coordinate {j}"
            );
        }
        assert_eq!(u[i].to_bits(), p.energy(&xi).to_bits(), "lane {i}");
    }
}

#[test]
fn modes2d_lanes_equal_the_scalar_math() {
    for seed in 0..20 {
        check::<_, 16>(&Modes2d, &states::<16>(2, 6.0, seed));
        check::<_, 3>(&Modes2d, &states::<3>(2, 0.5, seed));
    }
}

#[test]
fn sum_modes_lanes_equal_the_scalar_math() {
    for (d, seed) in [
        (1, 1),
        (2, 2),
        (3, 3),
        (8, 4),
        (31, 5),
        (64, 6),
        (65, 7),
        (1000, 8),
    ] {
        check::<_, 16>(&SumModes { dim: d }, &states::<16>(d, 3.0, seed));
        check::<_, 8>(&SumModes { dim: d }, &states::<8>(d, 3.0, seed + 100));
    }
}
