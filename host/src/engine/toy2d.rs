//! A vectorized exploration phase for the paper's 2D toy (25-mode target, noisy
//! oracle, SGD/SGLD explorers, `f32`): the same bits as nrpt-core's driver, 16
//! replicas at a time in SIMD lanes.
//!
//! nrpt-core steps one replica after the other with scalar code. Here the Philox
//! blocks, Box–Muller normals, gradients, steps and energies of 16 replicas are
//! computed lane by lane over fixed-size arrays, which the compiler turns into SIMD
//! (AVX2 when the processor has it, chosen at run time). Every operation is the one
//! nrpt-core performs, in the same order, with the same branch-free `f32` functions
//! ([`nrpt_core::fastmath`]) and a correctly rounded square root, so results are
//! identical (the tests compare whole runs bit for bit). A replica whose level has a
//! temperature above 0 draws extra Langevin noise; it is redone with nrpt-core's
//! scalar code after the vector pass.

use nrpt_core::driver::Tempering;
use nrpt_core::explore::{Explorer, langevin_step, noise_scale};
use nrpt_core::fastmath::{ln, sin_cos_2pi};
use nrpt_core::rng::{
    PhiloxStream, counter, fill_normals, philox4x32_10_lanes, streams, uniform_f32,
};
use nrpt_core::target::{EnergyOracle, Noisy};

use nrpt_core::target::Modes2d;

use super::cpu::Simd;

/// Replicas per vector pass.
const LANES: usize = 16;

/// `true` when [`explore`] applies to a run of the 2D toy with `explorer` and noise
/// scale `noise` (the noise must be drawn, i.e. above 0).
pub fn applies(explorer: Explorer, noise: f64) -> bool {
    explorer == Explorer::Langevin && noise > 0.0
}

/// One lane group: states in, states out, energies out.
struct Group {
    a: [f32; LANES],
    b: [f32; LANES],
    eta: [f32; LANES],
    energy: [f32; LANES],
}

/// The 16-lane computation; `#[inline(always)]` so that it is compiled inside each
/// target-feature variant below. Lanes are indexed explicitly: one index runs over
/// several arrays, which is the shape the vectorizer wants.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn group_step(g: &mut Group, k: u64, r0: u32, key: [u32; 2], noise: f32) {
    let mut ctr = [[0u32; LANES]; 4];
    for i in 0..LANES {
        let c = counter(k, r0.wrapping_add(i as u32), streams::STEP, 0);
        for (w, &cw) in ctr.iter_mut().zip(&c) {
            w[i] = cw;
        }
    }
    let w = philox4x32_10_lanes(ctr, key);
    let (wall, slope_in, slope_out) = (20.0f32, 0.4f32, 2.4f32);
    let four_pi = (4.0 * std::f64::consts::PI) as f32;
    let (q, two) = (0.2f32, 2.0f32);
    for i in 0..LANES {
        // Gradient noise: Box–Muller of words 0 and 1.
        let r = (-2.0 * ln(uniform_f32(w[0][i]))).sqrt();
        let (s, c) = sin_cos_2pi(uniform_f32(w[1][i]));
        let (z0, z1) = (r * c, r * s);
        // ∇U of the 25-mode target, plus noise, then the SGD step x ← x − η g.
        let (a, b) = (g.a[i], g.b[i]);
        let r2 = a * a + b * b;
        let slope = if r2 > wall { slope_out } else { slope_in };
        let mut ga = slope * a + four_pi * sin_cos_2pi(a).0;
        let mut gb = slope * b + four_pi * sin_cos_2pi(b).0;
        ga += noise * z0;
        gb += noise * z1;
        let a = a - g.eta[i] * ga;
        let b = b - g.eta[i] * gb;
        // Energy at the new state plus noise from words 2 and 3 (first value).
        let r2 = a * a + b * b;
        let (ca, cb) = (sin_cos_2pi(a).1, sin_cos_2pi(b).1);
        let mut u = q * r2 - two * (ca + cb);
        if r2 > wall {
            u += r2 - wall;
        }
        let re = (-2.0 * ln(uniform_f32(w[2][i]))).sqrt();
        let ce = sin_cos_2pi(uniform_f32(w[3][i])).1;
        g.energy[i] = u + noise * (re * ce);
        g.a[i] = a;
        g.b[i] = b;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn group_step_avx2(g: &mut Group, k: u64, r0: u32, key: [u32; 2], noise: f32) {
    group_step(g, k, r0, key, noise);
}

fn group_step_dispatch(g: &mut Group, k: u64, r0: u32, key: [u32; 2], noise: f32, simd: Simd) {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::resolve` returns Auto or Avx2 only where AVX2 is present.
        Simd::Auto | Simd::Avx2 => unsafe { group_step_avx2(g, k, r0, key, noise) },
        _ => group_step(g, k, r0, key, noise),
    }
}

/// Phases 1–2 of the current iteration of `t` (the exploration step of every replica
/// and its energy), written into `t`'s storage exactly as nrpt-core's `step` would;
/// follow with `t.exchange()`. Only for runs where [`applies`] holds.
pub fn explore(t: &mut Tempering<'_, f32, Noisy<Modes2d>>, simd: Simd) {
    let opts = *t.options();
    let k = t.iteration();
    let key = [opts.seed, opts.ensemble];
    let oracle = *t.oracle();
    let noise = oracle.gradient_noise as f32;
    let s = t.explore_view();
    let p = s.energies.len();
    let mut scratch = [0.0f32; 4];
    let mut group = Group {
        a: [0.0; LANES],
        b: [0.0; LANES],
        eta: [0.0; LANES],
        energy: [0.0; LANES],
    };
    for r0 in (0..p).step_by(LANES) {
        let n = LANES.min(p - r0);
        for i in 0..n {
            let r = r0 + i;
            group.a[i] = s.states[2 * r];
            group.b[i] = s.states[2 * r + 1];
            group.eta[i] = s.ladder[s.level_of[r] as usize] as f32;
        }
        group_step_dispatch(&mut group, k, r0 as u32, key, noise, simd);
        for i in 0..n {
            let r = r0 + i;
            let level = s.level_of[r] as usize;
            if s.temperatures[level] > 0.0 {
                let sigma = noise_scale(Explorer::Langevin, s.ladder[level], s.temperatures[level]);
                // Langevin noise shifts the energy's words: redo this replica with
                // nrpt-core's own scalar code (its state is still untouched).
                let x = &mut s.states[2 * r..2 * r + 2];
                let mut rng =
                    PhiloxStream::new(opts.seed, opts.ensemble, k, r as u32, streams::STEP);
                let mut o = oracle;
                let (grad, noise_buf) = scratch.split_at_mut(2);
                let Ok(()) = o.gradient(x, grad, &mut rng);
                fill_normals(&mut rng, noise_buf);
                langevin_step(x, grad, noise_buf, s.ladder[level] as f32, sigma as f32);
                let Ok(e) = o.energy(x, &mut rng);
                s.energies[level] = e;
            } else {
                s.states[2 * r] = group.a[i];
                s.states[2 * r + 1] = group.b[i];
                s.energies[level] = group.energy[i];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use nrpt_core::driver::{InitialStates, Tempering, TemperingOptions};
    use nrpt_core::target::Noisy;

    use super::*;
    use crate::engine::EnsembleBuffers;

    /// Every state and energy after each exploration phase equals nrpt-core's, bit for
    /// bit, over many iterations (the states start wide, across the wall at |x|² = 20).
    #[test]
    fn exploration_equals_the_core_driver_bit_for_bit() {
        for (chains, window) in [(16usize, 7u32), (21, 1), (5, 3)] {
            let options = TemperingOptions {
                scheme: nrpt_core::window::Scheme::Deo { window },
                init: InitialStates::Uniform {
                    low: -6.0,
                    high: 6.0,
                },
                seed: 31,
                ensemble: 4,
                ..TemperingOptions::default()
            };
            let oracle = Noisy {
                potential: Modes2d,
                gradient_noise: 2.0,
                energy_noise: 2.0,
            };
            let (mut b1, mut b2) = (
                EnsembleBuffers::<f32>::new(chains, 2, false),
                EnsembleBuffers::<f32>::new(chains, 2, false),
            );
            let mut fast = Tempering::new(options, oracle, b1.lend()).unwrap();
            let mut core = Tempering::new(options, oracle, b2.lend()).unwrap();
            for k in 0..400 {
                explore(&mut fast, Simd::Auto.resolve());
                let Ok(()) = core.explore();
                let (f, c) = (fast.storage(), core.storage());
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(f.states()), bits(c.states()), "states, iteration {k}");
                assert_eq!(
                    bits(f.energies()),
                    bits(c.energies()),
                    "energies, iteration {k}"
                );
                assert_eq!(fast.exchange(), core.exchange());
            }
        }
    }
}
