//! A vectorized exploration phase for any potential behind noise (nrpt-core's
//! [`Noisy`] oracle over a [`LanePotential`]): 16 replicas of one ensemble at a time
//! in SIMD lanes, the same bits as nrpt-core's driver.
//!
//! nrpt-core steps one replica after the other with scalar code. Here the Philox
//! blocks, Box–Muller normals, gradients, steps and energies of 16 replicas are
//! computed lane by lane over fixed-size arrays (the target's own lane math:
//! [`LanePotential`]), which the compiler turns into SIMD (AVX2 when the processor has
//! it, chosen at run time). Every value is computed by the operations nrpt-core
//! performs, in the same order, from the same words of each replica's STEP stream, so
//! results are identical (the tests compare whole runs bit for bit). The gradient
//! noise and the step's sampling noise are one normal vector (nrpt-core's
//! `merged_noise_scale`); a lane whose scale is 0 (no gradient noise, T = 0) draws
//! none and reads its energy's words from the start of its stream.
//!
//! Applies to Langevin (SGD/SGLD) and momentum explorers; with energies per level the
//! energy is computed here, with fresh energies per pair test it is left to the driver.

// Lane loops index several arrays with one lane index on purpose: that is the shape the
// vectorizer turns into SIMD.
#![allow(clippy::needless_range_loop)]

use std::cell::RefCell;

use nrpt_core::driver::Tempering;
use nrpt_core::explore::{Explorer, merged_noise_scale, noise_scale};
use nrpt_core::rng::{counter, philox4x32_10_lanes, streams};
use nrpt_core::rules::PairEnergies;
use nrpt_core::target::{LanePotential, Noisy};

use super::simd::{Simd, box_muller};

/// Replicas per vector pass.
const LANES: usize = 16;

type F32s = [f32; LANES];

/// `true` when [`explore`] applies to runs with this explorer.
pub fn applies(explorer: Explorer) -> bool {
    matches!(explorer, Explorer::Langevin | Explorer::Momentum { .. })
}

/// The words of the STEP streams of 16 replicas, read in stream order (word `i` is
/// lane `i % 4` of block `i / 4`), one Philox block of all lanes at a time.
struct LaneWords {
    key: [u32; 2],
    iteration: u64,
    first: u32,
    block: Option<u32>,
    words: [[u32; LANES]; 4],
}

impl LaneWords {
    fn new(key: [u32; 2], iteration: u64, first: u32) -> Self {
        LaneWords {
            key,
            iteration,
            first,
            block: None,
            words: [[0; LANES]; 4],
        }
    }

    /// Word `pos` of every lane's stream.
    #[inline(always)]
    fn word(&mut self, pos: u64) -> [u32; LANES] {
        let block = (pos / 4) as u32;
        if self.block != Some(block) {
            let mut c = [[0u32; LANES]; 4];
            for i in 0..LANES {
                let w = counter(
                    self.iteration,
                    self.first.wrapping_add(i as u32),
                    streams::STEP,
                    block,
                );
                for (row, v) in c.iter_mut().zip(w) {
                    row[i] = v;
                }
            }
            self.words = philox4x32_10_lanes(c, self.key);
            self.block = Some(block);
        }
        self.words[(pos % 4) as usize]
    }

    /// A normal pair of every lane from words `pos` and `pos + 1` (nrpt-core's
    /// Box–Muller, in its lane form).
    #[inline(always)]
    fn normals(&mut self, pos: u64) -> (F32s, F32s) {
        let (w0, w1) = (self.word(pos), self.word(pos + 1));
        let (mut z0, mut z1) = ([0.0f32; LANES], [0.0f32; LANES]);
        for i in 0..LANES {
            (z0[i], z1[i]) = box_muller(w0[i], w1[i]);
        }
        (z0, z1)
    }
}

/// What one vector pass works on: `dim` rows of lanes for the states, gradients and
/// velocities.
#[derive(Default)]
struct Scratch {
    x: Vec<F32s>,
    g: Vec<F32s>,
    v: Vec<F32s>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The bytes of the scratch one thread holds while [`explore`] steps an ensemble of
/// `job`: the states, gradients and (for momentum) velocities of 16 replicas, D rows
/// of lanes each (64 bytes per coordinate and vector); 0 where [`explore`] does not
/// apply. The engine counts it once per worker thread in use and frees it when a
/// thread's ensembles are done ([`release_scratch`]).
pub fn scratch_bytes(job: &super::Job) -> u64 {
    let explorer = job.options.explorer;
    if !applies(explorer) {
        return 0;
    }
    let vectors = 2 + u64::from(explorer.has_momentum());
    vectors
        .saturating_mul(std::mem::size_of::<F32s>() as u64)
        .saturating_mul(job.target.dim() as u64)
}

/// Frees this thread's scratch (a worker of a long-lived pool would otherwise keep
/// [`scratch_bytes`] until the process ends, while the run writes its outputs).
pub(crate) fn release_scratch() {
    SCRATCH.with_borrow_mut(|s| *s = Scratch::default());
}

/// One vector pass: the exact gradient, the step with one normal vector of scale
/// `scale` in the lanes where `draw` holds (the gradient noise and the level's sampling
/// noise merged, nrpt-core's `merged_noise_scale`), and (when `energy`) the energy with
/// its noise, of the states in `s.x` (and velocities in `s.v` for momentum), exactly as
/// the driver draws and computes them for a `Noisy` oracle.
#[inline(always)]
fn pass<P: LanePotential>(
    oracle: &Noisy<P>,
    explorer: Explorer,
    s: &mut Scratch,
    eta: &F32s,
    noise: (&F32s, &[bool; LANES]),
    words: &mut LaneWords,
    energy: bool,
) -> F32s {
    let (scale, draw) = noise;
    let d = s.x.len();
    oracle.potential.gradient_lanes(&s.x, &mut s.g);
    // The step's noise (`fill_normals` over D values from word 0) in the lanes that
    // draw; the others step without it, as the driver's `sigma == 0` branch does.
    let any = draw.iter().any(|&v| v);
    let mut pos = 0u64;
    for j in (0..d).step_by(2) {
        let (z0, z1) = if any {
            let z = words.normals(pos);
            pos += 2;
            z
        } else {
            ([0.0; LANES], [0.0; LANES])
        };
        for (jj, z) in [(j, z0), (j + 1, z1)] {
            if jj >= d {
                break;
            }
            let g = &s.g[jj];
            match explorer {
                Explorer::Langevin => {
                    let x = &mut s.x[jj];
                    for i in 0..LANES {
                        let stepped = x[i] - eta[i] * g[i];
                        x[i] = if scale[i] != 0.0 {
                            stepped + scale[i] * z[i]
                        } else {
                            stepped
                        };
                    }
                }
                Explorer::Momentum { momentum } => {
                    let mu = momentum as f32;
                    let (x, v) = (&mut s.x[jj], &mut s.v[jj]);
                    for i in 0..LANES {
                        let moved = mu * v[i] - eta[i] * g[i];
                        v[i] = if scale[i] != 0.0 {
                            moved + scale[i] * z[i]
                        } else {
                            moved
                        };
                        x[i] += v[i];
                    }
                }
            }
        }
    }
    if !energy {
        return [0.0; LANES];
    }
    let mut u = oracle.potential.energy_lanes(&s.x);
    if oracle.energy_noise != 0.0 {
        let sd = oracle.energy_noise as f32;
        // Lanes that drew take the words after their step's noise, the others word 0.
        let (after, _) = words.normals(pos);
        let (first, _) = if any && !draw.iter().all(|&v| v) {
            words.normals(0)
        } else {
            (after, after)
        };
        for i in 0..LANES {
            let z = if draw[i] { after[i] } else { first[i] };
            u[i] += sd * z;
        }
    }
    u
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn pass_avx2<P: LanePotential>(
    oracle: &Noisy<P>,
    explorer: Explorer,
    s: &mut Scratch,
    lanes: (&F32s, &F32s, &[bool; LANES]),
    words: &mut LaneWords,
    energy: bool,
) -> F32s {
    pass(
        oracle,
        explorer,
        s,
        lanes.0,
        (lanes.1, lanes.2),
        words,
        energy,
    )
}

/// [`pass`] with the instruction set `simd` (already resolved for this processor);
/// `lanes` holds every lane's learning rate, merged noise scale and whether it draws.
fn pass_dispatch<P: LanePotential>(
    oracle: &Noisy<P>,
    explorer: Explorer,
    s: &mut Scratch,
    lanes: (&F32s, &F32s, &[bool; LANES]),
    words: &mut LaneWords,
    energy: bool,
    simd: Simd,
) -> F32s {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::resolve` returns Auto or Avx2 only where AVX2 is present.
        Simd::Auto | Simd::Avx2 => unsafe { pass_avx2(oracle, explorer, s, lanes, words, energy) },
        _ => pass(
            oracle,
            explorer,
            s,
            lanes.0,
            (lanes.1, lanes.2),
            words,
            energy,
        ),
    }
}

/// Phases 1–2 of the current iteration of `t` (the exploration step of every replica
/// and, with energies per level, its energy), written into `t`'s storage exactly as
/// nrpt-core's `explore` would; follow with `t.exchange()`. For explorers where
/// [`applies`] holds (any other explorer is stepped by nrpt-core).
pub fn explore<P: LanePotential + Copy>(t: &mut Tempering<'_, f32, Noisy<P>>, simd: Simd) {
    let opts = *t.options();
    if !applies(opts.explorer) {
        let Ok(()) = t.explore();
        return;
    }
    let k = t.iteration();
    let key = [opts.seed, opts.ensemble];
    let oracle = *t.oracle();
    let energy = opts.rules.pair_energies == PairEnergies::PerLevel;
    let momentum = opts.explorer.has_momentum();
    let d = t.storage().dim();
    let view = t.explore_view();
    let p = view.energies.len();
    SCRATCH.with_borrow_mut(|s| {
        s.x.resize(d, [0.0; LANES]);
        s.g.resize(d, [0.0; LANES]);
        s.v.resize(if momentum { d } else { 0 }, [0.0; LANES]);
        for r0 in (0..p).step_by(LANES) {
            let n = LANES.min(p - r0);
            let (mut eta, mut scale) = ([0.0f32; LANES], [0.0f32; LANES]);
            let mut draw = [false; LANES];
            for i in 0..n {
                let r = r0 + i;
                let level = view.level_of[r] as usize;
                let (lr, t) = (view.ladder[level], view.temperatures[level]);
                eta[i] = lr as f32;
                let sigma = noise_scale(opts.explorer, lr, t);
                let merged = merged_noise_scale(lr, oracle.gradient_noise, sigma);
                scale[i] = merged as f32;
                draw[i] = merged > 0.0;
                for j in 0..d {
                    s.x[j][i] = view.states[r * d + j];
                    if momentum {
                        s.v[j][i] = view.momenta[r * d + j];
                    }
                }
            }
            let mut words = LaneWords::new(key, k, r0 as u32);
            let u = pass_dispatch(
                &oracle,
                opts.explorer,
                s,
                (&eta, &scale, &draw),
                &mut words,
                energy,
                simd,
            );
            for i in 0..n {
                let r = r0 + i;
                for j in 0..d {
                    view.states[r * d + j] = s.x[j][i];
                    if momentum {
                        view.momenta[r * d + j] = s.v[j][i];
                    }
                }
                if energy {
                    view.energies[view.level_of[r] as usize] = u[i];
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use nrpt_core::driver::{InitialStates, Tempering, TemperingOptions};
    use nrpt_core::target::{Modes2d, Noisy, SumModes};

    use super::*;
    use crate::engine::EnsembleBuffers;

    /// Every state, velocity and energy after each exploration phase equals
    /// nrpt-core's, bit for bit, over many iterations.
    fn same_as_core<P: LanePotential + Copy>(potential: P, options: TemperingOptions, noise: f64) {
        let d = Potential::<f32>::dim(&potential);
        let oracle = Noisy {
            potential,
            gradient_noise: noise,
            energy_noise: noise,
        };
        for chains in [16usize, 21, 5] {
            let momentum = options.explorer.has_momentum();
            let (mut b1, mut b2) = (
                EnsembleBuffers::<f32>::new(chains, d, momentum),
                EnsembleBuffers::<f32>::new(chains, d, momentum),
            );
            let mut fast = Tempering::new(options, oracle, b1.lend()).unwrap();
            let mut core = Tempering::new(options, oracle, b2.lend()).unwrap();
            for k in 0..150 {
                explore(&mut fast, Simd::Auto.resolve());
                let Ok(()) = core.explore();
                let (f, c) = (fast.storage(), core.storage());
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(f.states()), bits(c.states()), "states, iteration {k}");
                assert_eq!(bits(f.energies()), bits(c.energies()), "energies, {k}");
                assert_eq!(bits(f.momenta()), bits(c.momenta()), "momenta, {k}");
                assert_eq!(fast.exchange(), core.exchange());
            }
        }
    }

    use nrpt_core::target::Potential;

    fn options(window: u32) -> TemperingOptions {
        TemperingOptions {
            scheme: nrpt_core::window::Scheme::Deo { window },
            init: InitialStates::Uniform {
                low: -6.0,
                high: 6.0,
            },
            seed: 31,
            ensemble: 4,
            ..TemperingOptions::default()
        }
    }

    #[test]
    fn the_2d_toy_equals_the_core_driver_bit_for_bit() {
        // The states start wide, across the wall at |x|² = 20.
        same_as_core(Modes2d, options(7), 2.0);
        same_as_core(Modes2d, options(1), 0.0);
    }

    #[test]
    fn sum_modes_equals_the_core_driver_bit_for_bit() {
        for d in [1usize, 3, 8, 9, 17, 64] {
            same_as_core(SumModes { dim: d }, options(3), 2.0);
        }
        let msgd = TemperingOptions {
            explorer: Explorer::MSGD,
            ladder_max: 0.05,
            ..options(2)
        };
        same_as_core(SumModes { dim: 5 }, msgd, 1.0);
        // SGLD at every level: every lane hot.
        let sgld = TemperingOptions {
            temperatures: nrpt_core::driver::Temperatures::FollowLadder,
            ..options(3)
        };
        same_as_core(SumModes { dim: 6 }, sgld, 2.0);
        same_as_core(Modes2d, sgld, 2.0);
        let fresh = TemperingOptions {
            rules: nrpt_core::Rules::AUTHORS_CODE,
            ..options(4)
        };
        same_as_core(SumModes { dim: 4 }, fresh, 2.0);
    }
}
