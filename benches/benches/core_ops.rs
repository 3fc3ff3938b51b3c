//! nrpt-core's hot operations, each beside a reference in the same run: Philox in
//! lanes against the scalar function, the branch-free `f32` math against libm, and one
//! swap sweep plus ladder update of a 16-chain ensemble.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use nrpt_core::adapt::adapt_ladder_indicators;
use nrpt_core::fastmath::{ln, sin_cos_2pi};
use nrpt_core::index::init_identity;
use nrpt_core::rng::{ENSEMBLE_WIDE, philox4x32_10, philox4x32_10_lanes, streams};
use nrpt_core::rules::{LadderUpdate, SweepOrder};
use nrpt_core::swap::{RuleInputs, SwapBuffers, SweepBuffers, sweep};
use nrpt_core::window::Scheme;

fn philox(c: &mut Criterion) {
    let mut g = c.benchmark_group("philox: 16 blocks");
    g.bench_function("scalar", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for r in 0..16u32 {
                acc ^= philox4x32_10([black_box(7), r, 0, 0], [1, 2])[0];
            }
            acc
        })
    });
    g.bench_function("lanes", |b| {
        let mut rep = [0u32; 16];
        for (i, r) in rep.iter_mut().enumerate() {
            *r = i as u32;
        }
        b.iter(|| philox4x32_10_lanes([[black_box(7); 16], rep, [0; 16], [0; 16]], [1, 2])[0][3])
    });
    g.finish();
}

fn math(c: &mut Criterion) {
    let xs: Vec<f32> = (0..1024).map(|i| i as f32 * 0.013 - 6.0).collect();
    let us: Vec<f32> = (1..=1024).map(|i| i as f32 / 1025.0).collect();
    let mut g = c.benchmark_group("f32 math: 1024 values");
    g.bench_function("sin_cos_2pi (fastmath)", |b| {
        b.iter(|| xs.iter().map(|&x| sin_cos_2pi(black_box(x)).1).sum::<f32>())
    });
    g.bench_function("cos(2πx) (libm)", |b| {
        b.iter(|| xs.iter().map(|&x| libm_cos(black_box(x))).sum::<f32>())
    });
    g.bench_function("ln (fastmath)", |b| {
        b.iter(|| us.iter().map(|&u| ln(black_box(u))).sum::<f32>())
    });
    g.bench_function("ln (std)", |b| {
        b.iter(|| us.iter().map(|&u| black_box(u).ln()).sum::<f32>())
    });
    g.finish();
}

fn libm_cos(x: f32) -> f32 {
    (std::f32::consts::TAU * x).cos()
}

fn sweep_and_adapt(c: &mut Criterion) {
    let mut energies = [0.0f64; 16];
    let (mut at, mut of, mut trips) = ([0u32; 16], [0u32; 16], [0u8; 16]);
    init_identity(&mut at, &mut of, &mut trips);
    let (mut gates, mut flags) = ([true; 15], [0u8; 15]);
    let mut ladder = [0.0; 16];
    nrpt_core::adapt::geometric_ladder(0.003, 0.6, &mut ladder).unwrap();
    let mut k = 0u64;
    c.bench_function("sweep + ladder update, P = 16", |b| {
        b.iter(|| {
            for (l, e) in energies.iter_mut().enumerate() {
                *e = ((k as f64 * 0.37 + l as f64 * 1.7).sin()) * 3.0;
            }
            let mut rng = nrpt_core::rng::PhiloxStream::new(0, 0, k, ENSEMBLE_WIDE, streams::SWAP);
            let s = sweep(
                k,
                Scheme::Deo { window: 7 },
                SweepOrder::Simultaneous,
                RuleInputs::Buffered { buffer: 0.5 },
                SweepBuffers {
                    energies: &mut energies,
                    swap: SwapBuffers {
                        replica_at: &mut at,
                        level_of: &mut of,
                        gates: &mut gates,
                        flags: &mut flags,
                    },
                },
                &mut rng,
            );
            adapt_ladder_indicators(&mut ladder, LadderUpdate::Jacobi, 0.4, 0.01, |l| {
                flags[l] & 1 != 0
            });
            k += 1;
            s.map_or(0, |s| s.swaps)
        })
    });
}

criterion_group!(benches, philox, math, sweep_and_adapt);
criterion_main!(benches);
