//! The kernels' math, compiled for the CPU from kernels/*.cuh, against nrpt-core:
//! Philox, uniforms and normals bit for bit; targets, one step and one energy bit for
//! bit (within 1e-6 relative for the block-reduced energy); the swap-and-adapt phase
//! decision for decision; and whole runs of the emulated GPU iteration against
//! nrpt-core's f32 engine. No GPU and no CUDA library is needed.

mod common;

use nrpt_core::adapt::{adapt_buffer, adapt_ladder_indicators};
use nrpt_core::driver::{InitialStates, Storage, Temperatures, TemperingOptions};
use nrpt_core::explore::Explorer;
use nrpt_core::index::{IndexStats, PairStats, observe_arrival};
use nrpt_core::rng::{
    PhiloxStream, Rng, UnitDraw, box_muller_f32, philox4x32_10, streams, uniform_f32, uniform_f64,
};
use nrpt_core::swap::{RuleInputs, SwapBuffers, SwapRule, SweepBuffers, flags, sweep};
use nrpt_core::target::{Modes2d, Noisy, Potential, SumModes};
use nrpt_core::window::Scheme;
use nrpt_core::{Tempering, fastmath};
use nrpt_cuda::host_math::{self as hm, EnsembleArrays, StepInput};
use nrpt_cuda::params::{GpuParams, IterConsts};
use nrpt_cuda::{GpuTarget, Noise};

/// A deterministic source of test words.
fn words(seed: u32) -> PhiloxStream {
    PhiloxStream::new(seed, 0xC0FFEE, 0, 0, 7)
}

#[test]
fn shared_blocks_have_the_same_layout() {
    let l = hm::layout();
    assert_eq!(l[0] as usize, size_of::<nrpt_core::driver::KernelParams>());
    assert_eq!(l[1] as usize, size_of::<GpuParams>());
    assert_eq!(l[2] as usize, std::mem::offset_of!(GpuParams, ensembles));
    assert_eq!(
        l[3] as usize,
        std::mem::offset_of!(nrpt_core::driver::KernelParams, seed)
    );
    assert_eq!(l[4] as usize, size_of::<nrpt_cuda::params::Arrays>());
    assert_eq!(l[5] as usize, size_of::<IterConsts>());
    assert_eq!(l[6] as usize, size_of::<PairStats>());
    assert_eq!(l[7] as usize, size_of::<IndexStats>());
    for (g, p) in [(1, 2), (32, 16), (3, 100), (1, 700)] {
        assert_eq!(
            hm::persistent_shared_bytes(g, p),
            nrpt_cuda::kernels::persistent_shared_bytes(g, p)
        );
    }
}

#[test]
fn philox_matches_core_and_random123() {
    // Random123 known-answer vectors (DESIGN.md).
    let kat: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
        (
            [0; 4],
            [0; 2],
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
        ),
        (
            [u32::MAX; 4],
            [u32::MAX; 2],
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
        ),
        (
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0],
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
        ),
    ];
    for (c, k, want) in kat {
        assert_eq!(hm::philox(c, k), want, "KAT {c:x?} {k:x?}");
    }
    let mut w = words(1);
    for _ in 0..100_000 {
        let c = [w.next_u32(), w.next_u32(), w.next_u32(), w.next_u32()];
        let k = [w.next_u32(), w.next_u32()];
        assert_eq!(hm::philox(c, k), philox4x32_10(c, k), "{c:x?} {k:x?}");
    }
    // The keyed-stream word layout, including the ensemble-wide replica.
    for (seed, ens, it, rep, st) in [
        (0u32, 0u32, 0u32, 0u32, streams::STEP),
        (7, 3, 12345, u32::MAX, streams::SWAP),
        (u32::MAX, 99, 4, 5, streams::INIT),
    ] {
        let s = PhiloxStream::new(seed, ens, it, rep, st);
        for i in [0u64, 1, 2, 3, 4, 5, 17, 1000, (1 << 34) - 1] {
            assert_eq!(hm::stream_word(seed, ens, it, rep, st, i), s.word(i));
        }
    }
}

#[test]
fn uniforms_and_normals_are_bit_identical() {
    let mut w = words(2);
    let edge = [
        0u32,
        1,
        0x1ff,
        0x200,
        0x7fff_ffff,
        0x8000_0000,
        u32::MAX - 1,
        u32::MAX,
    ];
    let pairs = edge
        .iter()
        .flat_map(|&a| edge.iter().map(move |&b| (a, b)))
        .chain((0..1_000_000).map(|_| (w.next_u32(), w.next_u32())));
    for (w0, w1) in pairs {
        assert_eq!(hm::uniform_f32(w0).to_bits(), uniform_f32(w0).to_bits());
        assert_eq!(hm::uniform_f64(w0).to_bits(), uniform_f64(w0).to_bits());
        let (a, b) = hm::box_muller_f32(w0, w1);
        let (c, d) = box_muller_f32(w0, w1);
        assert_eq!(
            (a.to_bits(), b.to_bits()),
            (c.to_bits(), d.to_bits()),
            "words {w0:#x} {w1:#x}"
        );
    }
}

#[test]
fn fastmath_is_bit_identical() {
    let mut w = words(3);
    for i in 0..2_000_000u32 {
        // Every exponent range: random bit patterns, plus the RNG's uniforms.
        let bits = w.next_u32();
        let x = f32::from_bits(bits);
        let (s, c) = hm::sin_cos_2pi(x);
        let (s2, c2) = fastmath::sin_cos_2pi(x);
        if x.is_finite() {
            assert_eq!(
                (s.to_bits(), c.to_bits()),
                (s2.to_bits(), c2.to_bits()),
                "{x:e}"
            );
        } else {
            assert!(s.is_nan() && c.is_nan() && s2.is_nan() && c2.is_nan());
        }
        let u = uniform_f32(bits);
        assert_eq!(hm::ln(u).to_bits(), fastmath::ln(u).to_bits(), "ln {u:e}");
        if x > 0.0 && x.is_normal() {
            assert_eq!(hm::ln(x).to_bits(), fastmath::ln(x).to_bits(), "ln {x:e}");
        }
        let y = (i as f32 - 1e6) * 1e-3;
        let (s, c) = hm::sin_cos_2pi(y);
        let (s2, c2) = fastmath::sin_cos_2pi(y);
        assert_eq!(
            (s.to_bits(), c.to_bits()),
            (s2.to_bits(), c2.to_bits()),
            "{y}"
        );
    }
}

/// The two places where core once called libm (Modes2d's cosines, the Metropolis log)
/// now use the branch-free functions: the kernels agree at every argument, including
/// far outside any run (no large-argument reduction is left to approximate).
#[test]
fn modes2d_energy_and_metropolis_log_are_bit_identical_everywhere() {
    let mut w = words(4);
    for _ in 0..2_000_000u32 {
        let (a, b) = (f32::from_bits(w.next_u32()), f32::from_bits(w.next_u32()));
        let got = hm::modes2d_energy(a, b);
        let want = Potential::<f32>::energy(&Modes2d, &[a, b]);
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "U({a:e}, {b:e}): {got:e} vs {want:e}"
        );
        let u = uniform_f32(w.next_u32());
        assert_eq!(
            hm::ln(u).to_bits(),
            <f32 as UnitDraw>::ln_uniform(u).to_bits(),
            "ln_uniform({u:e})"
        );
    }
}

#[test]
fn targets_are_bit_identical() {
    let mut w = words(5);
    let mut g = [0f32; 2];
    for _ in 0..500_000 {
        let a = (f32::uniform(w.next_u32()) - 0.5) * 14.0;
        let b = (f32::uniform(w.next_u32()) - 0.5) * 14.0;
        let e = Potential::<f32>::energy(&Modes2d, &[a, b]);
        assert_eq!(
            hm::modes2d_energy(a, b).to_bits(),
            e.to_bits(),
            "U({a}, {b})"
        );
        Potential::<f32>::gradient(&Modes2d, &[a, b], &mut g);
        let h = hm::modes2d_gradient(a, b);
        assert_eq!(
            (h[0].to_bits(), h[1].to_bits()),
            (g[0].to_bits(), g[1].to_bits())
        );
        // SumModes, one coordinate (the sum is checked by the step tests).
        let one = SumModes { dim: 1 };
        assert_eq!(
            hm::sum_modes_term(a).to_bits(),
            Potential::<f32>::energy(&one, &[a]).to_bits()
        );
        let mut g1 = [0f32];
        Potential::<f32>::gradient(&one, &[a], &mut g1);
        assert_eq!(hm::sum_modes_grad(a).to_bits(), g1[0].to_bits());
    }
}

#[test]
fn half_conversions_match_the_half_crate() {
    let mut w = words(6);
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        65504.0,
        65519.99,
        65520.0,
        1e-8,
        2.9802322e-8,
        5.9604645e-8,
        f32::INFINITY,
        f32::MIN_POSITIVE,
    ];
    let values = specials
        .into_iter()
        .chain((0..2_000_000).map(|_| f32::from_bits(w.next_u32())));
    for x in values {
        let h = hm::f32_to_f16(x);
        let r = half::f16::from_f32(x).to_bits();
        let b = hm::f32_to_bf16(x);
        let rb = half::bf16::from_f32(x).to_bits();
        if x.is_nan() {
            assert!(half::f16::from_bits(h).is_nan() && half::bf16::from_bits(b).is_nan());
            continue;
        }
        assert_eq!(h, r, "f16 of {x:e} ({:#x})", x.to_bits());
        assert_eq!(b, rb, "bf16 of {x:e}");
        assert_eq!(
            hm::f16_to_f32(h).to_bits(),
            half::f16::from_bits(h).to_f32().to_bits()
        );
        assert_eq!(
            hm::bf16_to_f32(b).to_bits(),
            half::bf16::from_bits(b).to_f32().to_bits()
        );
    }
}

// ---------------------------------------------------------------------------------
// The whole iteration: the kernels' per-replica step and per-ensemble swap phase,
// driven on the host exactly as the step and swap kernels drive them, against
// nrpt-core's engine.

/// The GPU's arrays of one ensemble, on the host.
struct Emulated {
    params: GpuParams,
    options: TemperingOptions,
    dim: usize,
    block: bool,
    states: Vec<f32>,
    momenta: Vec<f32>,
    energies: Vec<f32>,
    ladder: Vec<f64>,
    temps: Vec<f64>,
    at: Vec<u32>,
    of: Vec<u32>,
    trips: Vec<u8>,
    gates: Vec<u8>,
    flags: Vec<u8>,
    pairs: Vec<PairStats>,
    buffer: f64,
    stats: IndexStats,
    k: u64,
}

impl Emulated {
    /// Starts from a copy of core's freshly initialized storage (the init kernel's
    /// arithmetic is checked separately on a GPU).
    fn new(
        options: TemperingOptions,
        target: GpuTarget,
        noise: Noise,
        s: &Storage<'_, f32>,
    ) -> Self {
        let p = s.energies.len();
        let dim = target.dim();
        let params = GpuParams {
            core: options.params(p, dim),
            gradient_noise: noise.gradient,
            energy_noise: noise.energy,
            ensembles: 1,
            target: match target {
                GpuTarget::Modes2d => 0,
                GpuTarget::SumModes { .. } => 1,
            },
            ..GpuParams::default()
        };
        Emulated {
            params,
            options,
            dim,
            block: dim > 64,
            states: s.states.to_vec(),
            momenta: s.momenta.to_vec(),
            energies: s.energies.to_vec(),
            ladder: s.ladder.to_vec(),
            temps: s.temperatures.to_vec(),
            at: s.replica_at.to_vec(),
            of: s.level_of.to_vec(),
            trips: s.trips.to_vec(),
            gates: s.gates.iter().map(|&g| u8::from(g)).collect(),
            flags: s.flags.to_vec(),
            pairs: s.pair_stats.to_vec(),
            buffer: options.initial_buffer,
            stats: IndexStats::default(),
            k: 0,
        }
    }

    fn iterate(&mut self) {
        let p = self.energies.len();
        let d = self.dim;
        let key = self.options.ensemble;
        for r in 0..p {
            let level = self.of[r] as usize;
            let input = StepInput {
                ensemble_key: key,
                iteration: self.k,
                replica: r as u32,
                eta: self.ladder[level],
                temperature: self.temps[level],
            };
            let x = &mut self.states[r * d..(r + 1) * d];
            let v: &mut [f32] = if self.momenta.is_empty() {
                &mut []
            } else {
                &mut self.momenta[r * d..(r + 1) * d]
            };
            self.energies[level] = if self.block {
                hm::chain_step_block(&self.params, &input, x, v)
            } else {
                hm::chain_step(&self.params, &input, x, v)
            };
        }
        let ic = IterConsts::at(&self.options, self.k);
        hm::swap_and_adapt(
            &self.params,
            key,
            self.k,
            &ic,
            EnsembleArrays {
                energies: &mut self.energies,
                ladder: &mut self.ladder,
                temps: &mut self.temps,
                replica_at: &mut self.at,
                level_of: &mut self.of,
                trips: &mut self.trips,
                gates: &mut self.gates,
                flags: &mut self.flags,
                pairs: &mut self.pairs,
                stride: 1,
                buffer: &mut self.buffer,
                stats: &mut self.stats,
            },
        );
        self.k += 1;
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Runs core's f32 engine and the emulated kernels side by side for `iters`
/// iterations and demands identical states, energies, decisions and counts.
fn run_parity(options: TemperingOptions, target: GpuTarget, noise: Noise, p: usize, iters: u64) {
    let d = target.dim();
    let momentum = options.explorer.has_momentum();
    let mut owned = common::OwnedStorage::new(p, d, momentum);
    let storage = owned.storage();
    macro_rules! oracle {
        ($pot:expr) => {
            Noisy {
                potential: $pot,
                gradient_noise: noise.gradient,
                energy_noise: noise.energy,
            }
        };
    }
    macro_rules! compare {
        ($core:expr) => {{
            let mut core = $core;
            let mut emu = Emulated::new(options, target, noise, core.storage());
            let label = format!("{options:?} {target:?} {noise:?} P={p}");
            let mut swaps = 0;
            for k in 0..iters {
                let rep = core.step().expect("infallible oracle");
                swaps += rep.swaps;
                emu.iterate();
                let s = core.storage();
                assert_eq!(
                    bits(&emu.states),
                    bits(s.states),
                    "states, k = {k}, {label}"
                );
                assert_eq!(bits(&emu.momenta), bits(s.momenta), "momenta, k = {k}");
                assert_eq!(
                    bits(&emu.energies),
                    bits(s.energies),
                    "energies, k = {k}, {label}"
                );
                assert_eq!(emu.flags, s.flags, "flags, k = {k}, {label}");
                assert_eq!(emu.at, s.replica_at, "replica_at, k = {k}");
                assert_eq!(emu.of, s.level_of, "level_of, k = {k}");
                assert_eq!(emu.trips, s.trips, "trips, k = {k}");
                let g: Vec<u8> = s.gates.iter().map(|&g| u8::from(g)).collect();
                assert_eq!(emu.gates, g, "gates, k = {k}");
                assert_eq!(emu.pairs, s.pair_stats, "pair stats, k = {k}");
                assert_eq!(emu.ladder, s.ladder, "ladder, k = {k}, {label}");
                assert_eq!(emu.temps, s.temperatures, "temperatures, k = {k}");
                assert_eq!(
                    emu.buffer.to_bits(),
                    core.buffer().to_bits(),
                    "buffer, k = {k}"
                );
                assert_eq!(emu.stats, core.stats(), "stats, k = {k}");
            }
            assert!(
                swaps > 0,
                "no swap at all: the test would prove little ({label})"
            );
        }};
    }
    match target {
        GpuTarget::Modes2d => compare!(Tempering::new(options, oracle!(Modes2d), storage).unwrap()),
        GpuTarget::SumModes { dim } => {
            compare!(Tempering::new(options, oracle!(SumModes { dim }), storage).unwrap())
        }
    }
}

#[test]
fn paper_toy_runs_identically() {
    // DEO⋆-SGD×P16 (W = 8) and DEO-SGD (W = 1) on the 25-mode target, two ensembles.
    for (window, ensemble) in [(8, 0), (1, 5)] {
        let options = TemperingOptions {
            scheme: Scheme::Deo { window },
            seed: 2023,
            ensemble,
            ..TemperingOptions::default()
        };
        run_parity(options, GpuTarget::Modes2d, Noise::PAPER, 16, 2000);
    }
}

#[test]
fn seo_metropolis_momentum_and_follow_ladder_run_identically() {
    let base = TemperingOptions {
        seed: 77,
        ensemble: 3,
        ..TemperingOptions::default()
    };
    let cases = [
        // SEO with the buffered rule.
        TemperingOptions {
            scheme: Scheme::Seo,
            ..base
        },
        // Metropolis with geometric temperatures (uniforms from the SWAP stream).
        TemperingOptions {
            rule: SwapRule::Metropolis,
            temperatures: Temperatures::Geometric { max: 30.0 },
            scheme: Scheme::Deo { window: 3 },
            ..base
        },
        // Metropolis + SEO + temperatures following the adapted ladder.
        TemperingOptions {
            rule: SwapRule::Metropolis,
            temperatures: Temperatures::FollowLadder,
            scheme: Scheme::Seo,
            ..base
        },
        // Momentum SGD explorers with SGLD at the target.
        TemperingOptions {
            explorer: Explorer::MSGD,
            ..base
        },
        // Momentum with a constant temperature everywhere (Langevin noise at all levels).
        TemperingOptions {
            explorer: Explorer::Momentum { momentum: 0.5 },
            temperatures: Temperatures::Constant(0.3),
            ..base
        },
    ];
    for options in cases {
        run_parity(options, GpuTarget::Modes2d, Noise::PAPER, 12, 600);
    }
    // Exact oracle (no noise words at all) and an odd D.
    run_parity(base, GpuTarget::Modes2d, Noise::EXACT, 8, 300);
    let wide = TemperingOptions {
        ladder_min: 0.001,
        ladder_max: 0.05,
        ..base
    };
    run_parity(wide, GpuTarget::SumModes { dim: 5 }, Noise::PAPER, 6, 300);
    run_parity(
        TemperingOptions {
            temperatures: Temperatures::Constant(1.0),
            explorer: Explorer::MSGD,
            ..wide
        },
        GpuTarget::SumModes { dim: 33 },
        Noise::PAPER,
        4,
        100,
    );
    // Uniform initial states in another box.
    run_parity(
        TemperingOptions {
            init: InitialStates::Uniform {
                low: -3.0,
                high: 0.5,
            },
            ..base
        },
        GpuTarget::Modes2d,
        Noise::PAPER,
        16,
        300,
    );
}

/// The block-per-chain step (large D): states bit for bit, energy within 1e-6 of the
/// sum of the terms' magnitudes (the partials are added by a tree, not in order).
#[test]
fn block_step_matches_core_step() {
    for (d, momentum, temp) in [
        (1024usize, false, 1.0f64),
        (1000, true, 0.0),
        (300, false, 0.0),
    ] {
        let params = GpuParams {
            core: TemperingOptions {
                explorer: if momentum {
                    Explorer::MSGD
                } else {
                    Explorer::Langevin
                },
                ..TemperingOptions::default()
            }
            .params(4, d),
            gradient_noise: 2.0,
            energy_noise: 2.0,
            ensembles: 1,
            target: 1,
            ..GpuParams::default()
        };
        let mut w = words(d as u32);
        let x0: Vec<f32> = (0..d)
            .map(|_| (f32::uniform(w.next_u32()) - 0.5) * 6.0)
            .collect();
        let v0: Vec<f32> = (0..d).map(|_| f32::uniform(w.next_u32()) - 0.5).collect();
        let input = StepInput {
            ensemble_key: 9,
            iteration: 41,
            replica: 2,
            eta: 0.01,
            temperature: temp,
        };
        let (mut xa, mut va) = (x0.clone(), v0.clone());
        let (mut xb, mut vb) = (x0.clone(), v0.clone());
        let ea = hm::chain_step(
            &params,
            &input,
            &mut xa,
            if momentum { &mut va } else { &mut [] },
        );
        let eb = hm::chain_step_block(
            &params,
            &input,
            &mut xb,
            if momentum { &mut vb } else { &mut [] },
        );
        assert_eq!(bits(&xa), bits(&xb), "D = {d}");
        assert_eq!(bits(&va), bits(&vb), "D = {d}");
        let scale: f32 = xa.iter().map(|&x| hm::sum_modes_term(x).abs()).sum::<f32>() + 2.0 * 6.0;
        assert!(
            ((ea - eb) / scale).abs() < 1e-6,
            "D = {d}: sequential {ea}, tree {eb}"
        );
        // And the sequential step is core's, bit for bit (one iteration of a run).
        let mut core_x = x0.clone();
        let mut core_v = v0.clone();
        let e_core = core_one_step(&params, &input, &mut core_x, &mut core_v, momentum);
        assert_eq!(bits(&core_x), bits(&xa), "D = {d}");
        assert_eq!(e_core.to_bits(), ea.to_bits(), "D = {d}");
    }
}

/// One replica's step and energy as Engine::iterate computes it, from core's public
/// pieces.
fn core_one_step(
    params: &GpuParams,
    input: &StepInput,
    x: &mut [f32],
    v: &mut [f32],
    momentum: bool,
) -> f32 {
    use nrpt_core::explore::{langevin_step, momentum_step, noise_scale};
    use nrpt_core::rng::fill_normals;
    use nrpt_core::target::EnergyOracle;
    let d = x.len();
    let mut oracle = Noisy::paper(SumModes { dim: d });
    let mut rng = PhiloxStream::new(
        params.core.seed,
        input.ensemble_key,
        input.iteration as u32,
        input.replica,
        streams::STEP,
    );
    let mut grad = vec![0f32; d];
    let mut noise = vec![0f32; d];
    oracle.gradient(x, &mut grad, &mut rng).unwrap();
    let explorer = if momentum {
        Explorer::Momentum {
            momentum: params.core.momentum,
        }
    } else {
        Explorer::Langevin
    };
    let sigma = noise_scale(explorer, input.eta, input.temperature);
    if sigma > 0.0 {
        fill_normals(&mut rng, &mut noise);
    }
    let (eta, sigma) = (input.eta as f32, sigma as f32);
    if momentum {
        momentum_step(x, v, &grad, &noise, eta, params.core.momentum as f32, sigma);
    } else {
        langevin_step(x, &grad, &noise, eta, sigma);
    }
    oracle.energy(x, &mut rng).unwrap()
}

/// Half-precision storage: the step rounds the stored state; its energy is the energy
/// of the stored (rounded) state; f32 arithmetic throughout.
#[test]
fn half_storage_step_is_the_f32_step_rounded() {
    let d = 16;
    let params = GpuParams {
        core: TemperingOptions::default().params(4, d),
        gradient_noise: 2.0,
        energy_noise: 0.0,
        ensembles: 1,
        target: 1,
        ..GpuParams::default()
    };
    let input = StepInput {
        ensemble_key: 1,
        iteration: 3,
        replica: 0,
        eta: 0.003,
        temperature: 1.0,
    };
    let mut w = words(11);
    let x0: Vec<f32> = (0..d)
        .map(|_| (f32::uniform(w.next_u32()) - 0.5) * 4.0)
        .collect();
    for bf16 in [true, false] {
        let round = |x: f32| {
            if bf16 {
                half::bf16::from_f32(x).to_f32()
            } else {
                half::f16::from_f32(x).to_f32()
            }
        };
        let mut xf: Vec<f32> = x0.iter().map(|&x| round(x)).collect();
        let mut xh: Vec<u16> = x0
            .iter()
            .map(|&x| {
                if bf16 {
                    half::bf16::from_f32(x).to_bits()
                } else {
                    half::f16::from_f32(x).to_bits()
                }
            })
            .collect();
        hm::chain_step(&params, &input, &mut xf, &mut []);
        let e = hm::chain_step_half(&params, &input, bf16, &mut xh);
        let back: Vec<f32> = xh
            .iter()
            .map(|&h| {
                if bf16 {
                    half::bf16::from_bits(h).to_f32()
                } else {
                    half::f16::from_bits(h).to_f32()
                }
            })
            .collect();
        let want: Vec<f32> = xf.iter().map(|&x| round(x)).collect();
        assert_eq!(bits(&back), bits(&want), "bf16 = {bf16}");
        let e_want = back.iter().fold(0f32, |u, &x| u + hm::sum_modes_term(x));
        assert_eq!(e.to_bits(), e_want.to_bits());
    }
}

// ---------------------------------------------------------------------------------
// The swap-and-adapt phase on random inputs, against steps 3-6 of Engine::iterate
// written with nrpt-core's public functions.

struct Reference {
    energies: Vec<f32>,
    ladder: Vec<f64>,
    temps: Vec<f64>,
    at: Vec<u32>,
    of: Vec<u32>,
    trips: Vec<u8>,
    gates: Vec<bool>,
    flags: Vec<u8>,
    pairs: Vec<PairStats>,
    buffer: f64,
    stats: IndexStats,
}

impl Reference {
    fn step(&mut self, o: &TemperingOptions, k: u64) -> [u32; 3] {
        let p = self.energies.len();
        for e in &self.energies {
            if !e.is_finite() {
                self.stats.nonfinite_energies += 1;
            }
        }
        let rule = match o.rule {
            SwapRule::Buffered => RuleInputs::Buffered {
                buffer: self.buffer as f32,
            },
            SwapRule::Metropolis => RuleInputs::Metropolis {
                temperatures: &self.temps,
            },
        };
        let mut rng = PhiloxStream::new(o.seed, o.ensemble, k as u32, u32::MAX, streams::SWAP);
        let summary = sweep(
            k,
            o.scheme,
            rule,
            SweepBuffers {
                energies: &mut self.energies,
                swap: SwapBuffers {
                    replica_at: &mut self.at,
                    level_of: &mut self.of,
                    gates: &mut self.gates,
                    flags: &mut self.flags,
                },
            },
            &mut rng,
        );
        let gamma = o.adapt.schedule.gamma(k);
        let target = o.adapt.target_swap_rate;
        let fl = self.flags.clone();
        if o.adapt.adapt_ladder {
            adapt_ladder_indicators(&mut self.ladder, target, gamma, |l| {
                fl[l] & flags::INDICATOR != 0
            });
            if o.temperatures == Temperatures::FollowLadder {
                for l in 0..p {
                    self.temps[l] = self.ladder[l] / self.ladder[0];
                }
            }
        }
        if o.adapt.adapt_buffer && o.rule == SwapRule::Buffered {
            let mean = f64::from(summary.indicators) / (p - 1) as f64;
            self.buffer = adapt_buffer(self.buffer, mean, target, gamma, o.adapt.buffer_scale);
        }
        for (pair, (&f, st)) in self.flags.iter().zip(self.pairs.iter_mut()).enumerate() {
            st.indicators += u64::from(f & flags::INDICATOR != 0);
            st.attempts += u64::from(f & flags::ATTEMPT != 0);
            st.nonfinite += u64::from(f & flags::NONFINITE != 0);
            if f & flags::SWAPPED != 0 {
                st.swaps += 1;
                for level in [pair, pair + 1] {
                    let r = self.at[level] as usize;
                    let ev = observe_arrival(&mut self.trips[r], level, r, p - 1);
                    self.stats.record(ev);
                }
            }
        }
        [summary.indicators, summary.swaps, summary.nonfinite]
    }
}

#[test]
fn swap_and_adapt_decides_as_core_on_random_inputs() {
    let mut w = words(12);
    let mut total_swaps = 0u32;
    for case in 0..400u32 {
        let p = 2 + (w.next_u32() % 20) as usize;
        let scheme = match w.next_u32() % 4 {
            0 => Scheme::Seo,
            1 => Scheme::Deo { window: 1 },
            _ => Scheme::Deo {
                window: 1 + w.next_u32() % 12,
            },
        };
        let metropolis = w.next_u32().is_multiple_of(3);
        let follow = metropolis && w.next_u32().is_multiple_of(2);
        let options = TemperingOptions {
            scheme,
            rule: if metropolis {
                SwapRule::Metropolis
            } else {
                SwapRule::Buffered
            },
            temperatures: if follow {
                Temperatures::FollowLadder
            } else if metropolis {
                Temperatures::Geometric { max: 10.0 }
            } else {
                Temperatures::SgdExplorers
            },
            seed: w.next_u32(),
            ensemble: w.next_u32(),
            initial_buffer: f64::from(f32::uniform(w.next_u32())) * 3.0,
            ..TemperingOptions::default()
        };
        let params = GpuParams {
            core: options.params(p, 2),
            ensembles: 1,
            ..GpuParams::default()
        };
        let mut ladder = vec![0.0; p];
        nrpt_core::adapt::geometric_ladder(0.003, 0.6, &mut ladder).unwrap();
        let mut temps = vec![0.0; p];
        options.temperatures.fill(&ladder, &mut temps);
        let mut at: Vec<u32> = (0..p as u32).collect();
        let mut of = at.clone();
        let mut trips = vec![0u8; p];
        nrpt_core::index::init_identity(&mut at, &mut of, &mut trips);
        let mut reference = Reference {
            energies: vec![0.0; p],
            ladder,
            temps,
            at,
            of,
            trips,
            gates: vec![true; p - 1],
            flags: vec![0; p - 1],
            pairs: vec![PairStats::default(); p - 1],
            buffer: options.initial_buffer,
            stats: IndexStats::default(),
        };
        // The kernel side, interleaved with a stride of 3 as in the persistent kernel's
        // shared memory (slots 1 and 2 of each triple hold garbage that must survive).
        let stride = 3usize;
        let lay = |n: usize| vec![0u8; n * stride];
        let mut k_en = vec![f32::NAN; p * stride];
        let mut k_ladder = vec![-1.0; p * stride];
        let mut k_temps = vec![-1.0; p * stride];
        let mut k_at = vec![u32::MAX; p * stride];
        let mut k_of = vec![u32::MAX; p * stride];
        let mut k_trips = lay(p);
        let mut k_gates = lay(p - 1);
        let mut k_flags = lay(p - 1);
        let mut k_pairs = vec![PairStats::default(); (p - 1) * stride];
        for l in 0..p {
            k_ladder[l * stride] = reference.ladder[l];
            k_temps[l * stride] = reference.temps[l];
            k_at[l * stride] = reference.at[l];
            k_of[l * stride] = reference.of[l];
            k_trips[l * stride] = reference.trips[l];
        }
        for q in 0..p - 1 {
            k_gates[q * stride] = 1;
        }
        let mut k_buffer = options.initial_buffer;
        let mut k_stats = IndexStats::default();
        let k_start = u64::from(w.next_u32() % 50);
        for k in k_start..k_start + 60 {
            // Random energies: mostly finite, sometimes NaN or ±inf, often close pairs.
            for l in 0..p {
                let u = w.next_u32();
                let e = match u % 64 {
                    0 => f32::NAN,
                    1 => f32::INFINITY,
                    2 => f32::NEG_INFINITY,
                    _ => (f32::uniform(w.next_u32()) - 0.5) * 12.0,
                };
                reference.energies[l] = e;
                k_en[l * stride] = e;
            }
            let want = reference.step(&options, k);
            total_swaps += want[1];
            let ic = IterConsts::at(&options, k);
            let got = hm::swap_and_adapt(
                &params,
                options.ensemble,
                k,
                &ic,
                EnsembleArrays {
                    energies: &mut k_en,
                    ladder: &mut k_ladder,
                    temps: &mut k_temps,
                    replica_at: &mut k_at,
                    level_of: &mut k_of,
                    trips: &mut k_trips,
                    gates: &mut k_gates,
                    flags: &mut k_flags,
                    pairs: &mut k_pairs,
                    stride: stride as u32,
                    buffer: &mut k_buffer,
                    stats: &mut k_stats,
                },
            );
            let label = format!("case {case}, k = {k}, P = {p}, {options:?}");
            assert_eq!(got, want, "summary, {label}");
            let pick = |v: &[u8], n: usize| (0..n).map(|i| v[i * stride]).collect::<Vec<_>>();
            assert_eq!(pick(&k_flags, p - 1), reference.flags, "flags, {label}");
            let gates: Vec<u8> = reference.gates.iter().map(|&g| u8::from(g)).collect();
            assert_eq!(pick(&k_gates, p - 1), gates, "gates, {label}");
            assert_eq!(pick(&k_trips, p), reference.trips, "trips, {label}");
            for l in 0..p {
                assert_eq!(k_at[l * stride], reference.at[l], "replica_at, {label}");
                assert_eq!(k_of[l * stride], reference.of[l], "level_of, {label}");
                assert_eq!(
                    k_en[l * stride].to_bits(),
                    reference.energies[l].to_bits(),
                    "energies, {label}"
                );
                // The ladder is exact: its growth factors come from the host.
                assert_eq!(k_ladder[l * stride], reference.ladder[l], "ladder, {label}");
                assert_eq!(k_temps[l * stride], reference.temps[l], "temps, {label}");
            }
            for q in 0..p - 1 {
                assert_eq!(k_pairs[q * stride], reference.pairs[q], "pairs, {label}");
            }
            assert_eq!(
                k_buffer.to_bits(),
                reference.buffer.to_bits(),
                "buffer, {label}"
            );
            assert_eq!(k_stats, reference.stats, "stats, {label}");
            // The interleaved neighbours were not touched.
            assert!(k_en[1].is_nan() && k_ladder[1] == -1.0 && k_at[2] == u32::MAX);
        }
    }
    assert!(total_swaps > 1000, "{total_swaps}");
}
