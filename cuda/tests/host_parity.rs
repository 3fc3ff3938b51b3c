//! The kernels' math, compiled for the CPU from kernels/*.cuh, against nrpt-core:
//! Philox (with the 64-bit iteration in its counter), uniforms and normals bit for bit;
//! targets, one step and one energy bit for bit, for every D and every block shape of
//! the block kernel (the energies follow nrpt-core's summation tree,
//! `nrpt_core::reduce`); the ladder (Jacobi and in place), the buffer (projected or
//! not), the authors' round-trip counting and the whole swap-and-adapt phase decision
//! for decision, its team steps run forwards and backwards; the momentum reset on a
//! swap. No GPU and no CUDA library is needed.
//!
//! Whole runs of these functions, driven as the step/swap and persistent kernels drive
//! them, are compared with every CPU engine path in the parity matrix of the
//! workspace's `tests/` crate (`tests/tests/it/parity.rs`).

use nrpt_core::adapt::{adapt_buffer, adapt_ladder_indicators, geometric_ladder, growth_factors};
use nrpt_core::driver::{Temperatures, TemperingOptions};
use nrpt_core::explore::Explorer;
use nrpt_core::fastmath;
use nrpt_core::index::{IndexStats, PairStats, authors_pass, init_identity, observe_arrival};
use nrpt_core::params::{KernelParams, adapt_flags};
use nrpt_core::rng::{
    ENSEMBLE_WIDE, MAX_REPLICAS, PhiloxStream, Rng, UnitDraw, box_muller_f32, counter,
    philox4x32_10, streams, uniform_f32, uniform_f64,
};
use nrpt_core::rules::{
    BufferProjection, InitialLadder, LadderUpdate, MomentumOnSwap, PairEnergies, Rules, SweepOrder,
};
use nrpt_core::swap::{RuleInputs, SwapBuffers, SwapRule, SweepBuffers, flags, sweep};
use nrpt_core::target::{Modes2d, Noisy, Potential, SumModes};
use nrpt_core::window::Scheme;
use nrpt_cuda::host_math::{self as hm, EnsembleArrays, StepInput};
use nrpt_cuda::params::{BlockShape, GpuParams, IterConsts};
use nrpt_cuda::{CudaError, EnsembleConfig, GpuTarget, Noise, Precision};

/// A deterministic source of test words.
fn words(seed: u32) -> PhiloxStream {
    PhiloxStream::new(seed, 0xC0FFEE, 0, 0, 7)
}

/// The iterations around the 32-bit boundary of the Philox counter's first word.
const PAST_2_POW_32: [u64; 4] = [(1 << 32) - 1, 1 << 32, (1 << 32) + 1, u64::MAX];

/// The parameter block the kernels get for one ensemble of `p` chains, built by the
/// same code path as a GPU run (`EnsembleConfig::params`).
fn gpu_params(options: TemperingOptions, target: GpuTarget, noise: Noise, p: usize) -> GpuParams {
    EnsembleConfig {
        noise,
        ..EnsembleConfig::new(options, target, 1, p)
    }
    .params()
    .unwrap_or_else(|e| panic!("{e}: {options:?}"))
}

#[test]
fn shared_blocks_have_the_same_layout() {
    let l = hm::layout();
    assert_eq!(l[0] as usize, size_of::<KernelParams>());
    assert_eq!(l[1] as usize, size_of::<GpuParams>());
    assert_eq!(l[2] as usize, std::mem::offset_of!(GpuParams, ensembles));
    assert_eq!(l[3] as usize, std::mem::offset_of!(KernelParams, seed));
    assert_eq!(l[4] as usize, size_of::<nrpt_cuda::params::Arrays>());
    assert_eq!(l[5] as usize, size_of::<IterConsts>());
    assert_eq!(l[6] as usize, size_of::<PairStats>());
    assert_eq!(l[7] as usize, size_of::<IndexStats>());
    assert_eq!(l[8] as usize, std::mem::offset_of!(GpuParams, coord_bytes));
    assert_eq!(
        l[9] as usize,
        std::mem::offset_of!(KernelParams, adapt_flags)
    );
    for (g, p) in [(1, 2), (32, 16), (3, 100), (1, 700)] {
        assert_eq!(
            hm::persistent_shared_bytes(g, p),
            nrpt_cuda::kernels::persistent_shared_bytes(g, p)
        );
    }
}

/// The kernels refuse, without a device, what they do not implement (nrpt-core's
/// `TemperingOptions::params` decides), and pass the variants they do implement as
/// the bits of `adapt_flags`.
#[test]
fn host_only_rules_are_refused_and_the_others_reach_the_flags() {
    let base = TemperingOptions::default();
    for rules in [
        Rules::AUTHORS_CODE,
        Rules {
            pair_energies: PairEnergies::FreshPerTest,
            ..Rules::PAPER
        },
        Rules {
            sweep_order: SweepOrder::Sequential,
            ..Rules::PAPER
        },
    ] {
        let config = EnsembleConfig::new(
            TemperingOptions { rules, ..base },
            GpuTarget::Modes2d,
            4,
            16,
        );
        assert!(
            matches!(
                config.params(),
                Err(CudaError::Options(nrpt_core::Error::Unsupported { .. }))
            ),
            "{rules:?}: {:?}",
            config.params()
        );
    }
    let paper = gpu_params(base, GpuTarget::Modes2d, Noise::PAPER, 16);
    assert_eq!(
        paper.core.adapt_flags,
        adapt_flags::LADDER | adapt_flags::BUFFER
    );
    assert_eq!(paper.coord_bytes, 4);
    let variants = TemperingOptions {
        rules: Rules {
            ladder_update: LadderUpdate::InPlace,
            buffer_projection: BufferProjection::Unprojected,
            momentum_on_swap: MomentumOnSwap::Carry,
            initial_ladder: InitialLadder::RoundedGeometric {
                decimals: 3,
                unit: 1,
            },
            ..Rules::PAPER
        },
        ..base
    };
    let config = EnsembleConfig::new(variants, GpuTarget::Modes2d, 4, 16);
    assert_eq!(
        config.params().unwrap().core.adapt_flags,
        adapt_flags::LADDER
            | adapt_flags::BUFFER
            | adapt_flags::LADDER_IN_PLACE
            | adapt_flags::BUFFER_UNPROJECTED
            | adapt_flags::MOMENTUM_CARRY
    );
    // The rounded initial ladder of the authors' notebook reaches the kernels.
    let (ladder, _) = config.initial_levels().unwrap();
    assert_eq!(&ladder[..4], &[0.003, 0.004, 0.006, 0.009]);
    // Replica indices must fit the 24 bits of the counter; noise scales must be sane.
    let too_many = EnsembleConfig::new(base, GpuTarget::Modes2d, 1, MAX_REPLICAS + 1);
    assert!(matches!(too_many.params(), Err(CudaError::Options(_))));
    let noisy = EnsembleConfig {
        noise: Noise {
            gradient: -1.0,
            energy: 2.0,
        },
        ..EnsembleConfig::new(base, GpuTarget::Modes2d, 1, 16)
    };
    assert!(matches!(noisy.params(), Err(CudaError::Options(_))));
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
    // The keyed-stream word layout, including the ensemble-wide replica and a replica
    // index with bits above the 24 of its field (masked off on both sides).
    for (seed, ens, it, rep, st) in [
        (0u32, 0u32, 0u64, 0u32, streams::STEP),
        (7, 3, 12345, ENSEMBLE_WIDE, streams::SWAP),
        (7, 3, 12345, u32::MAX, streams::SWAP),
        (u32::MAX, 99, 4, 5, streams::INIT),
    ] {
        let s = PhiloxStream::new(seed, ens, it, rep, st);
        for i in [0u64, 1, 2, 3, 4, 5, 17, 1000, (1 << 34) - 1] {
            assert_eq!(hm::stream_word(seed, ens, it, rep, st, i), s.word(i));
        }
    }
}

/// The iteration fills two counter words (`rng::counter`): at 2³² − 1, 2³², 2³² + 1
/// and 2⁶⁴ − 1 the kernels' stream words are core's, for every stream and for
/// per-replica and ensemble-wide draws, and they differ from those of the iteration
/// modulo 2³² (a 32-bit counter would repeat them).
#[test]
fn stream_words_use_the_full_64_bit_iteration() {
    let mut w = words(20);
    for &k in &PAST_2_POW_32 {
        for (rep, st) in [
            (0u32, streams::STEP),
            (9, streams::STEP),
            (MAX_REPLICAS as u32 - 1, streams::STEP),
            (ENSEMBLE_WIDE, streams::SWAP),
            (3, streams::INIT),
        ] {
            let (seed, ens) = (w.next_u32(), w.next_u32());
            let s = PhiloxStream::new(seed, ens, k, rep, st);
            let c = counter(k, rep, st, 0);
            assert_eq!(c[..2], [k as u32, (k >> 32) as u32]);
            assert_eq!(hm::philox(c, [seed, ens]), s.block(0));
            let low = PhiloxStream::new(seed, ens, k & 0xFFFF_FFFF, rep, st);
            for i in [0u64, 1, 3, 4, 7, 1 << 20] {
                let got = hm::stream_word(seed, ens, k, rep, st, i);
                assert_eq!(
                    got,
                    s.word(i),
                    "k = {k:#x}, replica {rep:#x}, stream {st}, word {i}"
                );
                if k >> 32 != 0 {
                    assert_ne!(got, low.word(i), "k = {k:#x} repeats k mod 2^32");
                }
            }
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
        // ln of every bit pattern: negatives, subnormals, ±0, ±inf and NaN included
        // (both sides return the same NaN, so the bits agree there too).
        assert_eq!(
            hm::ln(x).to_bits(),
            fastmath::ln(x).to_bits(),
            "ln {x:e} ({bits:#x})"
        );
        assert_eq!(
            hm::round_nearest(x).to_bits(),
            fastmath::round_nearest(x).to_bits(),
            "round {x:e}"
        );
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

/// `round_nearest` rounds |x| through 2²³ and restores the sign: between 2²² and 2²³,
/// where f32 holds only integers and half-integers, and beyond, both signs, the
/// kernels' rounding and sine/cosine are core's (half-integers give cos 2πx = −1).
#[test]
fn fastmath_between_2_pow_22_and_2_pow_23_and_beyond() {
    let check = |x: f32| {
        assert_eq!(
            hm::round_nearest(x).to_bits(),
            fastmath::round_nearest(x).to_bits(),
            "round {x}"
        );
        let (s, c) = hm::sin_cos_2pi(x);
        let (s2, c2) = fastmath::sin_cos_2pi(x);
        assert_eq!(
            (s.to_bits(), c.to_bits()),
            (s2.to_bits(), c2.to_bits()),
            "sin_cos_2pi({x})"
        );
    };
    // Every 5th f32 from 2²¹ to 2²⁵, both signs: quarters, halves, integers, evens.
    for bits in (0x4A00_0000u32..0x4C00_0000).step_by(5) {
        let x = f32::from_bits(bits);
        check(x);
        check(-x);
    }
    for base in [
        4_194_303.0f32,
        4_194_304.0,
        4_194_305.0,
        6_000_000.0,
        8_388_606.0,
        8_388_607.0,
    ] {
        for sign in [1.0f32, -1.0] {
            let n = sign * base;
            let h = n + sign * 0.5;
            check(n);
            check(h);
            assert_eq!(hm::sin_cos_2pi(h).1, -1.0, "cos 2π·{h}");
            assert_eq!(hm::sin_cos_2pi(n).1, 1.0, "cos 2π·{n}");
        }
    }
    for x in [8_388_608.0f32, 8_388_609.0, 1.0e9, 3.0e12, f32::MAX] {
        check(x);
        check(-x);
        assert_eq!(hm::round_nearest(-x), -x);
    }
    assert_eq!(hm::round_nearest(4_194_305.5), 4_194_306.0);
    assert_eq!(hm::round_nearest(-6_000_001.5), -6_000_002.0);
    assert_eq!(hm::round_nearest(8_388_607.5), 8_388_608.0);
    assert_eq!(hm::round_nearest(-0.4).to_bits(), (-0.0f32).to_bits());
}

/// `ln` at the edges of its domain, as IEEE-754 `log`: −∞ at ±0, +∞ at +∞, NaN for
/// negatives and NaN, and every subnormal through the 2²³ scaling.
#[test]
fn fastmath_ln_special_values_and_subnormals() {
    let check = |x: f32| {
        assert_eq!(
            hm::ln(x).to_bits(),
            fastmath::ln(x).to_bits(),
            "ln({x:e}) ({:#x})",
            x.to_bits()
        );
    };
    for x in [
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xffc1_2345),
        -1.0,
        -1e-40,
        -f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        1.0,
    ] {
        check(x);
    }
    assert_eq!(hm::ln(0.0), f32::NEG_INFINITY);
    assert_eq!(hm::ln(-0.0), f32::NEG_INFINITY);
    assert_eq!(hm::ln(f32::INFINITY), f32::INFINITY);
    assert!(hm::ln(-1.0).is_nan() && hm::ln(f32::NAN).is_nan());
    // Every 3rd subnormal, both signs, and the extremes.
    for bits in (1u32..0x0080_0000)
        .step_by(3)
        .chain([1, 2, 0x0040_0000, 0x007f_ffff])
    {
        check(f32::from_bits(bits));
        check(-f32::from_bits(bits));
    }
    // Negatives of every magnitude.
    let mut w = words(21);
    for _ in 0..200_000 {
        check(-f32::from_bits(w.next_u32() & 0x7fff_ffff));
    }
}

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

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Shapes the block kernel takes for D coordinates: the launcher's, and others with
/// more or fewer threads and coordinates per thread, several passes included.
fn block_shapes(d: usize) -> Vec<BlockShape> {
    let mut shapes = vec![BlockShape::for_dim(d).unwrap()];
    for chunk in [4u32, 8, 16, 64] {
        for threads in [32u32, 64, 256, 1024] {
            let s = BlockShape { threads, chunk };
            // The fewest warps that cover D, or power-of-two passes.
            let fit = BlockShape {
                threads: (d.div_ceil(chunk as usize) as u32).next_multiple_of(32),
                chunk,
            };
            for s in [s, fit] {
                if s.valid_for(d) && !shapes.contains(&s) {
                    shapes.push(s);
                }
            }
        }
    }
    shapes
}

/// The block kernel's step, for every block shape, is the per-thread step and core's
/// step bit for bit (states, momenta, energy), for D just past one warp's chunks, a
/// quad short of 1024, 1024 and more, with and without momentum and Langevin noise,
/// and for bf16/f16 storage against the per-thread step on the same storage.
#[test]
fn block_step_matches_core_step() {
    for (d, momentum, temp) in [
        (1024usize, false, 1.0f64),
        (1024, true, 0.3),
        (1000, true, 0.0),
        (1022, false, 1.0),
        (300, false, 0.0),
        (65, true, 1.0),
        (129, false, 1.0),
        (4099, false, 0.5),
        (20_000, true, 0.0),
    ] {
        let options = TemperingOptions {
            explorer: if momentum {
                Explorer::MSGD
            } else {
                Explorer::Langevin
            },
            ..TemperingOptions::default()
        };
        let params = gpu_params(options, GpuTarget::SumModes { dim: d }, Noise::PAPER, 4);
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
        let ea = hm::chain_step(
            &params,
            &input,
            &mut xa,
            if momentum { &mut va } else { &mut [] },
        );
        // The per-thread step is core's, bit for bit (one iteration of a run).
        let mut core_x = x0.clone();
        let mut core_v = v0.clone();
        let e_core = core_one_step(&params, &input, &mut core_x, &mut core_v, momentum);
        assert_eq!(bits(&core_x), bits(&xa), "D = {d}");
        assert_eq!(bits(&core_v), bits(&va), "D = {d}");
        assert_eq!(e_core.to_bits(), ea.to_bits(), "D = {d}");
        for shape in block_shapes(d) {
            let (mut xb, mut vb) = (x0.clone(), v0.clone());
            let eb = hm::chain_step_block(
                &params,
                &input,
                shape,
                &mut xb,
                if momentum { &mut vb } else { &mut [] },
            );
            assert_eq!(bits(&xa), bits(&xb), "D = {d}, {shape:?}");
            assert_eq!(bits(&va), bits(&vb), "D = {d}, {shape:?}");
            assert_eq!(
                ea.to_bits(),
                eb.to_bits(),
                "D = {d}, {shape:?}: {ea} vs {eb}"
            );
        }
        if !momentum {
            for bf16 in [true, false] {
                let enc = |x: &f32| {
                    if bf16 {
                        half::bf16::from_f32(*x).to_bits()
                    } else {
                        half::f16::from_f32(*x).to_bits()
                    }
                };
                let hp = EnsembleConfig {
                    precision: if bf16 {
                        Precision::Bf16
                    } else {
                        Precision::F16
                    },
                    ..EnsembleConfig::new(options, GpuTarget::SumModes { dim: d }, 1, 4)
                }
                .params()
                .unwrap();
                let mut xs: Vec<u16> = x0.iter().map(enc).collect();
                let es = hm::chain_step_half(&hp, &input, bf16, &mut xs);
                for shape in block_shapes(d) {
                    let mut xb: Vec<u16> = x0.iter().map(enc).collect();
                    let eb = hm::chain_step_block_half(&hp, &input, shape, bf16, &mut xb);
                    assert_eq!(xs, xb, "D = {d}, bf16 {bf16}, {shape:?}");
                    assert_eq!(
                        es.to_bits(),
                        eb.to_bits(),
                        "D = {d}, bf16 {bf16}, {shape:?}"
                    );
                }
            }
        }
    }
}

/// The summation order, alone: the kernels' tree accumulator (one thread stepping
/// coordinates in order) and the block kernel's chunk/warp/block trees give
/// nrpt-core's `reduce::tree_sum` bit for bit, for D = 2, 64, 65, 1024 and others,
/// every block shape, on values of mixed magnitudes where the order shows.
#[test]
fn energy_sums_follow_core_s_tree_for_every_d() {
    use nrpt_core::reduce::tree_sum_slice;
    let mut w = words(30);
    let mut differs_from_sequential = 0;
    for d in [
        1usize, 2, 3, 5, 63, 64, 65, 100, 1000, 1023, 1024, 1025, 5000,
    ] {
        for _ in 0..20 {
            let x: Vec<f32> = (0..d)
                .map(|i| (f32::uniform(w.next_u32()) - 0.5) * [1.0, 1e4, 1e-3, 50.0][i % 4])
                .collect();
            let want = tree_sum_slice(&x);
            assert_eq!(hm::tree_sum(&x).to_bits(), want.to_bits(), "D = {d}");
            for shape in block_shapes(d).into_iter().filter(|s| s.passes(d) == 1) {
                // Each thread's aligned chunk as a tree (core's tree of the chunk), then
                // the kernel's shuffle trees.
                let k = shape.chunk as usize;
                let mut partial: Vec<f32> = (0..shape.threads as usize)
                    .map(|t| {
                        let lo = (t * k).min(d);
                        tree_sum_slice(&x[lo..((t + 1) * k).min(d)])
                    })
                    .collect();
                let got = hm::block_tree(&mut partial, shape.chunk, d as u32);
                assert_eq!(got.to_bits(), want.to_bits(), "D = {d}, {shape:?}");
            }
            let seq = x.iter().fold(0f32, |a, &v| a + v);
            differs_from_sequential += usize::from(seq.to_bits() != want.to_bits());
        }
    }
    assert!(differs_from_sequential > 100, "{differs_from_sequential}");
}

/// The launcher's block shapes: whole warps, at most 256 threads, power-of-two chunks
/// of at least 4 covering D with the fewest warps, D = 1024 in 256 threads of 4; and
/// the swap phase's team width is the kernels' (`nrpt_team_width`).
#[test]
fn block_shapes_and_team_widths() {
    assert_eq!(
        BlockShape::for_dim(1024),
        Some(BlockShape {
            threads: 256,
            chunk: 4
        })
    );
    assert_eq!(
        BlockShape::for_dim(65),
        Some(BlockShape {
            threads: 32,
            chunk: 4
        })
    );
    assert_eq!(BlockShape::for_dim(300).unwrap().threads, 96);
    assert_eq!(BlockShape::for_dim((1 << 20) + 1), None);
    assert_eq!(BlockShape::MAX_DIM, 1 << 20);
    let mut w = words(31);
    for d in (1..5000)
        .chain([1 << 14, (1 << 14) + 1, 1 << 16, 100_003, 1 << 20])
        .chain((0..2000).map(|_| 1 + (w.next_u32() as usize % (1 << 20))))
    {
        let s = BlockShape::for_dim(d).unwrap();
        let (t, k) = (s.threads as usize, s.chunk as usize);
        assert!(s.valid_for(d), "{d}: {s:?}");
        assert!(hm::block_shape_ok(s, d as u32), "{d}: {s:?}");
        assert!(
            t % 32 == 0 && t <= 256 && k.is_power_of_two() && k >= 4,
            "{d}: {s:?}"
        );
        if s.passes(d) == 1 {
            assert!(t * k >= d && (t - 32) * k < d, "{d}: {s:?}");
        } else {
            assert_eq!((t, k), (256, 64), "{d}");
        }
    }
    // The Rust check is the kernels' own.
    for d in [1usize, 65, 1000, 1024, 5000, 20_000, 1 << 20] {
        for threads in [0u32, 1, 32, 96, 100, 256, 1024, 1056] {
            for chunk in [0u32, 2, 4, 6, 8, 64, 128] {
                let s = BlockShape { threads, chunk };
                assert_eq!(s.valid_for(d), hm::block_shape_ok(s, d as u32), "{d} {s:?}");
            }
        }
    }
    for p in 2..70u32 {
        for threads in [1u32, 2, 3, 16, 31, 32, 64, 128, 512] {
            let w = nrpt_cuda::ensembles::team_width(p, threads);
            assert_eq!(w, hm::team_width(p, threads), "P = {p}, {threads} threads");
            assert!(w.is_power_of_two() && w <= 32 && w <= threads.max(1));
            assert!(w >= (p - 1).min(32) || 2 * w > threads, "P = {p}: {w}");
        }
    }
    // The swap kernel's blocks (128 threads) hold whole teams.
    for p in 2..200 {
        assert_eq!(128 % nrpt_cuda::ensembles::team_width(p, 128), 0);
    }
    // Persistent blocks stay within the kernel's launch bound of 512 threads, and
    // always hold at least one whole team.
    for p in 2..=600u32 {
        for e in [1u32, 3, 64, 10_000] {
            match nrpt_cuda::ensembles::persistent_group(p, e) {
                Some(g) => {
                    assert!(p <= 512 && g >= 1 && g * p <= 512 && g <= e, "P {p}, E {e}");
                    assert!(hm::team_width(p, g * p) <= g * p);
                }
                None => assert!(
                    p > 512 || nrpt_cuda::kernels::persistent_shared_bytes(1, p) > 48 * 1024
                ),
            }
        }
    }
}

/// One replica's step and energy as the driver computes it (nrpt-core's
/// `explore_replica`, the Noisy oracle of the paper's noise).
fn core_one_step(
    params: &GpuParams,
    input: &StepInput,
    x: &mut [f32],
    v: &mut [f32],
    momentum: bool,
) -> f32 {
    use nrpt_core::driver::{ReplicaStep, explore_replica};
    let d = x.len();
    let options = TemperingOptions {
        explorer: if momentum {
            Explorer::Momentum {
                momentum: params.core.momentum,
            }
        } else {
            Explorer::Langevin
        },
        seed: params.core.seed,
        ensemble: input.ensemble_key,
        ..TemperingOptions::default()
    };
    let step = ReplicaStep {
        iteration: input.iteration,
        replica: input.replica,
        eta: input.eta,
        temperature: input.temperature,
    };
    let mut scratch = vec![0f32; 2 * d];
    let energy = explore_replica(
        &options,
        &mut Noisy::paper(SumModes { dim: d }),
        step,
        x,
        if momentum { v } else { &mut [] },
        &mut scratch,
        true,
    );
    energy.unwrap().unwrap()
}

/// Half-precision storage: the step rounds the stored state; its energy is the energy
/// of the stored (rounded) state; f32 arithmetic throughout.
#[test]
fn half_storage_step_is_the_f32_step_rounded() {
    let d = 16;
    let noise = Noise {
        gradient: 2.0,
        energy: 0.0,
    };
    let params = gpu_params(
        TemperingOptions::default(),
        GpuTarget::SumModes { dim: d },
        noise,
        4,
    );
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
        let terms: Vec<f32> = back.iter().map(|&x| hm::sum_modes_term(x)).collect();
        let e_want = nrpt_core::reduce::tree_sum_slice(&terms);
        assert_eq!(e.to_bits(), e_want.to_bits());
    }
}

/// One replica's step at iterations 2³² − 1, 2³², 2³² + 1 and 2⁶⁴ − 1 (the 64-bit
/// counter of its STEP stream): the kernels' per-thread step for D = 2 (step_2d's code,
/// as the persistent kernel runs it) and D = 5 (step_seq), with and without momentum
/// and Langevin noise, is core's bit for bit.
#[test]
fn steps_past_2_pow_32_iterations_are_core_steps() {
    let mut w = words(22);
    for &k in &PAST_2_POW_32 {
        for (d, momentum, temp) in [(2usize, false, 1.0f64), (2, true, 0.0), (5, true, 0.7)] {
            let options = TemperingOptions {
                explorer: if momentum {
                    Explorer::MSGD
                } else {
                    Explorer::Langevin
                },
                seed: w.next_u32(),
                ..TemperingOptions::default()
            };
            let params = gpu_params(options, GpuTarget::SumModes { dim: d }, Noise::PAPER, 4);
            let x0: Vec<f32> = (0..d)
                .map(|_| (f32::uniform(w.next_u32()) - 0.5) * 6.0)
                .collect();
            let v0: Vec<f32> = (0..d).map(|_| f32::uniform(w.next_u32()) - 0.5).collect();
            let input = StepInput {
                ensemble_key: w.next_u32(),
                iteration: k,
                replica: 3,
                eta: 0.02,
                temperature: temp,
            };
            let (mut xa, mut va) = (x0.clone(), v0.clone());
            let ea = hm::chain_step(
                &params,
                &input,
                &mut xa,
                if momentum { &mut va } else { &mut [] },
            );
            let (mut xc, mut vc) = (x0.clone(), v0.clone());
            let ec = core_one_step(&params, &input, &mut xc, &mut vc, momentum);
            let label = format!("k = {k:#x}, D = {d}, momentum {momentum}");
            assert_eq!(bits(&xa), bits(&xc), "states, {label}");
            assert_eq!(bits(&va), bits(&vc), "momenta, {label}");
            assert_eq!(ea.to_bits(), ec.to_bits(), "energy, {label}");
            // The iteration modulo 2³² draws other noise (no 32-bit truncation).
            if k >> 32 != 0 {
                let mut xl = x0.clone();
                let low = StepInput {
                    iteration: k & 0xFFFF_FFFF,
                    ..input
                };
                let mut vl = v0.clone();
                hm::chain_step(
                    &params,
                    &low,
                    &mut xl,
                    if momentum { &mut vl } else { &mut [] },
                );
                assert_ne!(bits(&xl), bits(&xa), "{label}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// The swap-and-adapt phase on random inputs, against steps 3-6 of Engine::exchange
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
    /// Engine::exchange for energies per level and simultaneous pair tests (the rules
    /// the kernels implement), momentum aside.
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
        let mut rng = PhiloxStream::new(o.seed, o.ensemble, k, ENSEMBLE_WIDE, streams::SWAP);
        let summary = sweep(
            k,
            o.scheme,
            SweepOrder::Simultaneous,
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
        )
        .unwrap();
        let gamma = o.adapt.schedule.gamma(k);
        let target = o.adapt.target_swap_rate;
        let fl = self.flags.clone();
        if o.adapt.adapt_ladder {
            adapt_ladder_indicators(
                &mut self.ladder,
                o.rules.ladder_update,
                target,
                gamma,
                |l| fl[l] & flags::INDICATOR != 0,
            );
            if o.temperatures == Temperatures::FollowLadder {
                o.temperatures.fill(&self.ladder, &mut self.temps);
            }
        }
        if o.adapt.adapt_buffer && o.rule == SwapRule::Buffered {
            let mean = f64::from(summary.indicators) / (p - 1) as f64;
            self.buffer = adapt_buffer(
                self.buffer,
                mean,
                target,
                gamma,
                o.adapt.buffer_scale,
                o.rules.buffer_projection,
            );
        }
        for (pair, (&f, st)) in self.flags.iter().zip(self.pairs.iter_mut()).enumerate() {
            st.indicators += u64::from(f & flags::INDICATOR != 0);
            st.attempts += u64::from(f & flags::ATTEMPT != 0);
            st.nonfinite += u64::from(f & flags::NONFINITE != 0);
            if f & flags::SWAPPED != 0 {
                st.swaps += 1;
                for level in [pair, pair + 1] {
                    let r = self.at[level] as usize;
                    let ev = observe_arrival(&mut self.trips[r], level, p - 1);
                    self.stats.record(ev);
                }
            }
        }
        self.stats.authors_round_trips +=
            u64::from(authors_pass(&mut self.trips, &self.at, &self.flags));
        [summary.indicators, summary.swaps, summary.nonfinite]
    }
}

/// Runs the swap phase of core (`Reference`) and of the kernels side by side at the
/// iterations `ks` on random energies and compares everything after each; the kernel
/// side's arrays are interleaved with a stride of 3, as in the persistent kernel's
/// shared memory (slots 1 and 2 of each triple hold garbage that must survive).
/// Returns the swaps made.
fn swap_phase_parity(
    options: TemperingOptions,
    p: usize,
    ks: impl Iterator<Item = u64>,
    w: &mut PhiloxStream,
    case: &str,
) -> u32 {
    let params = gpu_params(options, GpuTarget::Modes2d, Noise::PAPER, p);
    let config = EnsembleConfig::new(options, GpuTarget::Modes2d, 1, p);
    let (ladder, temps) = config.initial_levels().unwrap();
    let mut at = vec![0u32; p];
    let mut of = vec![0u32; p];
    let mut trips = vec![0u8; p];
    init_identity(&mut at, &mut of, &mut trips);
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
    let mut swaps = 0;
    for k in ks {
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
        let levels_before = reference.of.clone();
        let want = reference.step(&options, k);
        swaps += want[1];
        let ic = IterConsts::at(&options, k);
        // The team's items forwards and backwards on alternate iterations.
        let got = hm::swap_and_adapt_ordered(
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
            k % 2 == 1,
        );
        let label = format!("{case}, k = {k}, P = {p}, {options:?}");
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
            assert_eq!(
                k_ladder[l * stride].to_bits(),
                reference.ladder[l].to_bits(),
                "ladder, {label}"
            );
            assert_eq!(k_temps[l * stride], reference.temps[l], "temps, {label}");
            // The persistent kernel's momentum reset reads the strided flags: a
            // replica is reset exactly when this sweep moved it.
            let r = reference.at[l] as usize;
            assert_eq!(
                hm::swapped_at_level(&k_flags, stride as u32, l as u32, p as u32),
                levels_before[r] as usize != l,
                "momentum reset of the replica at level {l}, {label}"
            );
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
        assert!(k_trips[1] == 0 && k_flags[2] == 0 && k_pairs[1] == PairStats::default());
    }
    swaps
}

/// Random options, rules and energies: the kernels' swap phase decides as core's,
/// counts as core's (authors' trips included) and adapts as core's.
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
        let rules = Rules {
            ladder_update: if w.next_u32().is_multiple_of(2) {
                LadderUpdate::Jacobi
            } else {
                LadderUpdate::InPlace
            },
            buffer_projection: if w.next_u32().is_multiple_of(2) {
                BufferProjection::NonNegative
            } else {
                BufferProjection::Unprojected
            },
            momentum_on_swap: if w.next_u32().is_multiple_of(2) {
                MomentumOnSwap::Reset
            } else {
                MomentumOnSwap::Carry
            },
            ..Rules::PAPER
        };
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
            rules,
            seed: w.next_u32(),
            ensemble: w.next_u32(),
            // Small buffers reach zero, where the projection acts.
            initial_buffer: f64::from(f32::uniform(w.next_u32()))
                * if w.next_u32().is_multiple_of(2) {
                    3.0
                } else {
                    0.05
                },
            ..TemperingOptions::default()
        };
        let k_start = u64::from(w.next_u32() % 50);
        total_swaps += swap_phase_parity(
            options,
            p,
            k_start..k_start + 60,
            &mut w,
            &format!("case {case}"),
        );
    }
    assert!(total_swaps > 1000, "{total_swaps}");
}

/// The swap phase at iterations around 2³² and at 2⁶⁴ − 1: the SEO parity and the
/// Metropolis uniforms come from the SWAP stream of the full 64-bit iteration, and
/// the window's gates and parity from the full iteration too.
#[test]
fn swap_phase_past_2_pow_32_iterations_is_core_s() {
    let mut w = words(23);
    let mut total_swaps = 0;
    for (i, scheme) in [
        Scheme::Seo,
        Scheme::Deo { window: 3 },
        Scheme::Deo { window: 1 },
    ]
    .into_iter()
    .enumerate()
    {
        for rule in [SwapRule::Metropolis, SwapRule::Buffered] {
            let options = TemperingOptions {
                scheme,
                rule,
                temperatures: if rule == SwapRule::Metropolis {
                    Temperatures::Geometric { max: 10.0 }
                } else {
                    Temperatures::SgdExplorers
                },
                seed: 1000 + i as u32,
                ensemble: 4,
                ..TemperingOptions::default()
            };
            let start = (1u64 << 32) - 5;
            total_swaps += swap_phase_parity(options, 9, start..start + 10, &mut w, "2^32");
            total_swaps +=
                swap_phase_parity(options, 9, u64::MAX - 9..=u64::MAX, &mut w, "2^64 - 1");
        }
    }
    assert!(total_swaps > 50, "{total_swaps}");
}

/// The ladder update alone, both rules, on ladders that are ordered, disordered (as
/// the Jacobi rule can leave them) or iterated many times, with step sizes from 0 to
/// far beyond the paper's (so that the Jacobi guard acts at both ends): every rate is
/// core's to the bit.
#[test]
fn ladder_updates_jacobi_and_in_place_match_core() {
    let mut w = words(24);
    let (mut floors, mut ceilings, mut differ) = (0, 0, 0);
    for case in 0..4000u32 {
        let p = 2 + (w.next_u32() % 18) as usize;
        let mut ladder = vec![0.0; p];
        geometric_ladder(0.003, 0.6, &mut ladder).unwrap();
        if case % 2 == 1 {
            // Inner rates moved by up to a factor 2 either way: often out of order.
            for eta in &mut ladder[1..p - 1] {
                *eta *= 0.5 + 1.5 * f64::uniform(w.next_u32());
            }
        }
        let target = 0.05 + 0.9 * f64::uniform(w.next_u32());
        let gamma = [0.0, 1e-3, 0.1, 1.0, 10.0, 60.0][(w.next_u32() % 6) as usize];
        let steps = if case % 5 == 0 { 50 } else { 1 };
        let mut jacobi_in_place = Vec::new();
        for update in [LadderUpdate::Jacobi, LadderUpdate::InPlace] {
            let mut core = ladder.clone();
            let mut kern = ladder.clone();
            let mut v = words(case);
            for _ in 0..steps {
                let ind: Vec<bool> = (0..p - 1).map(|_| v.next_u32() % 5 < 2).collect();
                adapt_ladder_indicators(&mut core, update, target, gamma, |l| ind[l]);
                // The other flag bits must not matter, only INDICATOR.
                let mut fl: Vec<u8> = ind
                    .iter()
                    .map(|&i| {
                        let other = (v.next_u32() as u8) & !flags::INDICATOR;
                        other | if i { flags::INDICATOR } else { 0 }
                    })
                    .collect();
                let (up, down) = growth_factors(target, gamma);
                hm::adapt_ladder(
                    &mut kern,
                    &mut fl,
                    update == LadderUpdate::InPlace,
                    up,
                    down,
                );
                let cb: Vec<u64> = core.iter().map(|x| x.to_bits()).collect();
                let kb: Vec<u64> = kern.iter().map(|x| x.to_bits()).collect();
                assert_eq!(kb, cb, "case {case}, {update:?}, γ = {gamma}, P = {p}");
            }
            if update == LadderUpdate::Jacobi && p > 2 {
                let floor = ladder[0] * nrpt_core::adapt::JACOBI_GUARD;
                let ceiling = ladder[p - 1] / nrpt_core::adapt::JACOBI_GUARD;
                floors += kern[1..p - 1].iter().filter(|&&x| x == floor).count();
                ceilings += kern[1..p - 1].iter().filter(|&&x| x == ceiling).count();
            }
            jacobi_in_place.push(kern);
        }
        differ += usize::from(jacobi_in_place[0] != jacobi_in_place[1]);
    }
    assert!(
        floors > 0 && ceilings > 0,
        "guard never acted: {floors} {ceilings}"
    );
    assert!(
        differ > 1000,
        "Jacobi and in place differ in {differ} cases only"
    );
}

/// The buffer update, projected (C ≥ 0, the default) and unprojected (the authors'
/// code): core's bits, and the projection does act.
#[test]
fn buffer_update_projected_and_unprojected_match_core() {
    let mut w = words(25);
    let (mut clamped, mut negative) = (0, 0);
    for _ in 0..200_000 {
        let buffer = 2.0 * f64::uniform(w.next_u32()) - 0.2;
        let mean = f64::from(w.next_u32() % 16) / 15.0;
        let target = f64::uniform(w.next_u32());
        let gamma = [0.0, 0.01, 0.1, 1.0, 3.0][(w.next_u32() % 5) as usize];
        let scale = 0.1 + 10.0 * f64::uniform(w.next_u32());
        for projection in [BufferProjection::NonNegative, BufferProjection::Unprojected] {
            let want = adapt_buffer(buffer, mean, target, gamma, scale, projection);
            let got = hm::adapt_buffer(
                buffer,
                mean,
                target,
                gamma,
                scale,
                projection == BufferProjection::Unprojected,
            );
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "C = {buffer}, mean {mean}, S = {target}, γ = {gamma}, c = {scale}, {projection:?}"
            );
            match projection {
                BufferProjection::NonNegative => clamped += usize::from(got == 0.0),
                BufferProjection::Unprojected => negative += usize::from(got < 0.0),
            }
        }
    }
    assert!(clamped > 1000 && negative > 1000, "{clamped} {negative}");
}

/// The authors' round-trip counting of one iteration (`index::authors_pass`) on
/// random swap patterns (disjoint pairs, as a sweep makes them) and random trip
/// states: the kernels count the same trips and leave the same bits.
#[test]
fn authors_pass_counts_as_core() {
    let mut w = words(26);
    for p in [2usize, 3, 4, 5, 7, 16, 33] {
        for start in 0..3 {
            let mut at = vec![0u32; p];
            let mut of = vec![0u32; p];
            let mut trips = vec![0u8; p];
            init_identity(&mut at, &mut of, &mut trips);
            if start > 0 {
                // Every combination of phase and "seen" bits.
                for t in &mut trips {
                    *t = (w.next_u32() % 16) as u8;
                }
            }
            let mut k_trips = trips.clone();
            let (mut total, mut k_total) = (0u64, 0u64);
            for k in 0..5000u32 {
                // A random set of non-adjacent pairs swaps, most often those of the
                // window's parity.
                let parity = (k & 1) as usize;
                let mut fl = vec![0u8; p - 1];
                let mut last = None;
                for pair in 0..p - 1 {
                    let allowed = last != Some(pair.wrapping_sub(1))
                        && (start == 2 || (pair + 1) % 2 == parity);
                    if allowed && !w.next_u32().is_multiple_of(3) {
                        fl[pair] = flags::SWAPPED | flags::ATTEMPT | flags::INDICATOR;
                        let (a, b) = (at[pair], at[pair + 1]);
                        at.swap(pair, pair + 1);
                        of[a as usize] = (pair + 1) as u32;
                        of[b as usize] = pair as u32;
                        last = Some(pair);
                    } else {
                        fl[pair] = (w.next_u32() as u8) & (flags::INDICATOR | flags::NONFINITE);
                    }
                }
                total += u64::from(authors_pass(&mut trips, &at, &fl));
                let mut k_at = at.clone();
                k_total += u64::from(hm::authors_pass(&mut k_trips, &mut k_at, &mut fl));
                assert_eq!(k_total, total, "P {p}, start {start}, k {k}");
                assert_eq!(k_trips, trips, "P {p}, start {start}, k {k}");
            }
            assert!(total > 0, "P {p}");
        }
    }
}

/// The swap kernel's momentum reset alone: after random sweeps, both replicas of
/// every executed swap (exactly the replicas whose level changed) have all D momenta
/// zeroed, the others keep theirs, for f32 and for half-precision momenta; nothing
/// moves with `MomentumOnSwap::Carry` or without a momentum explorer.
#[test]
fn swap_kernel_zeroes_the_momenta_of_swapped_replicas() {
    let mut w = words(27);
    for (explorer, on_swap) in [
        (Explorer::MSGD, MomentumOnSwap::Reset),
        (Explorer::MSGD, MomentumOnSwap::Carry),
        (Explorer::Langevin, MomentumOnSwap::Reset),
    ] {
        let (p, d) = (9usize, 5usize);
        let options = TemperingOptions {
            explorer,
            rules: Rules {
                momentum_on_swap: on_swap,
                ..Rules::PAPER
            },
            ..TemperingOptions::default()
        };
        let params = gpu_params(options, GpuTarget::SumModes { dim: d }, Noise::PAPER, p);
        let half_params = EnsembleConfig {
            precision: Precision::Bf16,
            ..EnsembleConfig::new(options, GpuTarget::SumModes { dim: d }, 1, p)
        }
        .params()
        .unwrap();
        let mut at = vec![0u32; p];
        let mut of = vec![0u32; p];
        let mut trips = vec![0u8; p];
        init_identity(&mut at, &mut of, &mut trips);
        let mut gates = vec![true; p - 1];
        let mut fl = vec![0u8; p - 1];
        let mut energies = vec![0f32; p];
        let mut resets = 0;
        for k in 0..300u64 {
            for e in &mut energies {
                *e = f32::uniform(w.next_u32()) * 4.0;
            }
            let before = of.clone();
            sweep(
                k,
                Scheme::Deo { window: 2 },
                SweepOrder::Simultaneous,
                RuleInputs::Buffered { buffer: 0.5 },
                SweepBuffers {
                    energies: &mut energies,
                    swap: SwapBuffers {
                        replica_at: &mut at,
                        level_of: &mut of,
                        gates: &mut gates,
                        flags: &mut fl,
                    },
                },
                &mut w,
            )
            .unwrap();
            let momenta: Vec<f32> = (0..p * d)
                .map(|_| f32::uniform(w.next_u32()) - 0.5)
                .collect();
            let mut got = momenta.clone();
            hm::zero_swapped_momenta(&params, &mut at, &mut fl, &mut got);
            let half: Vec<u16> = momenta
                .iter()
                .map(|&m| half::bf16::from_f32(m).to_bits())
                .collect();
            let mut got_half = half.clone();
            hm::zero_swapped_momenta_half(&half_params, &mut at, &mut fl, &mut got_half);
            for r in 0..p {
                let moved = before[r] != of[r];
                let reset = moved && explorer.has_momentum() && on_swap == MomentumOnSwap::Reset;
                let row = r * d..(r + 1) * d;
                if reset {
                    assert!(
                        got[row.clone()].iter().all(|v| v.to_bits() == 0),
                        "k {k} replica {r}"
                    );
                    assert!(got_half[row].iter().all(|&h| h == 0), "k {k} replica {r}");
                    resets += 1;
                } else {
                    assert_eq!(
                        bits(&got[row.clone()]),
                        bits(&momenta[row.clone()]),
                        "k {k} replica {r}"
                    );
                    assert_eq!(got_half[row.clone()], half[row], "k {k} replica {r}");
                }
            }
        }
        assert_eq!(
            resets > 0,
            explorer.has_momentum() && on_swap == MomentumOnSwap::Reset,
            "{explorer:?} {on_swap:?}"
        );
    }
}

/// The warp-wide swap phase of `persistent_2d_warp` (`nrpt_warp_exchange`, one level
/// per lane, shuffles emulated lane by lane) against the team phase (proven equal to
/// core above) followed by the persistent kernel's momentum reset, over runs of
/// iterations of random ensembles: every P from 2 to 32, the buffered and Metropolis
/// rules, SEO and DEO with windows, every combination of the adaptation bits, momentum
/// or none, non-finite energies. Every array, the buffer, the counts, the recorded
/// flags and the replicas' states and velocities must agree in every bit.
#[test]
fn warp_swap_phase_is_the_team_phase_bit_for_bit() {
    let mut w = words(32);
    let (mut swaps, mut trips) = (0u64, 0u64);
    for case in 0..300u32 {
        let p = 2 + (case % 31) as usize;
        let options = TemperingOptions {
            seed: w.next_u32(),
            ..TemperingOptions::default()
        };
        let mut params = gpu_params(options, GpuTarget::Modes2d, Noise::PAPER, p);
        params.core.window = match w.next_u32() % 3 {
            0 => 0,
            _ => 1 + w.next_u32() % 8,
        };
        params.core.rule = u32::from(w.next_u32().is_multiple_of(3));
        params.core.explorer = w.next_u32() % 2;
        params.core.adapt_flags = w.next_u32() & 63;
        let key = w.next_u32();
        let unit = |w: &mut PhiloxStream| f64::from(f32::uniform(w.next_u32()));
        // One ensemble's arrays, twice.
        let mut at: Vec<u32> = (0..p as u32).collect();
        for i in (1..p).rev() {
            at.swap(i, (w.next_u32() as usize) % (i + 1));
        }
        let mut of = vec![0u32; p];
        for (l, &r) in at.iter().enumerate() {
            of[r as usize] = l as u32;
        }
        let mut ladder = vec![1.0f64; p];
        for l in 1..p {
            ladder[l] = ladder[l - 1] * (1.0 + 2.0 * unit(&mut w));
        }
        let mut temps: Vec<f64> = ladder.iter().map(|e| e / ladder[0]).collect();
        temps.iter_mut().for_each(|t| *t += 0.1 * unit(&mut w));
        let mut trips_a: Vec<u8> = (0..p).map(|_| (w.next_u32() & 15) as u8).collect();
        let mut gates: Vec<u8> = (0..p - 1).map(|_| (w.next_u32() & 1) as u8).collect();
        let mut flags: Vec<u8> = (0..p - 1).map(|_| (w.next_u32() & 15) as u8).collect();
        let mut pairs: Vec<PairStats> = (0..p - 1)
            .map(|_| PairStats {
                indicators: u64::from(w.next_u32() % 100),
                attempts: u64::from(w.next_u32() % 100),
                swaps: u64::from(w.next_u32() % 100),
                nonfinite: u64::from(w.next_u32() % 100),
            })
            .collect();
        let mut buffer = 3.0 * unit(&mut w);
        let mut stats = IndexStats::default();
        let mut states: Vec<f32> = (0..2 * p).map(|_| (100.0 * unit(&mut w)) as f32).collect();
        let mut sines: Vec<f32> = states.iter().map(|x| x * 0.5).collect();
        let mut momenta: Vec<f32> = if params.core.explorer != 0 {
            (0..2 * p).map(|i| 1.0 + i as f32).collect()
        } else {
            Vec::new()
        };
        let mut team = (
            at.clone(),
            of.clone(),
            ladder.clone(),
            temps.clone(),
            trips_a.clone(),
            gates.clone(),
            flags.clone(),
            pairs.clone(),
            buffer,
            stats,
            momenta.clone(),
        );
        let k0 = u64::from(w.next_u32() % 1000);
        for k in k0..k0 + 40 {
            let ic = IterConsts {
                gamma: 0.01 + 0.1 * unit(&mut w),
                up: 1.0 + 0.2 * unit(&mut w),
                down: 1.0 - 0.2 * unit(&mut w),
            };
            let mut energies: Vec<f32> = (0..p)
                .map(|_| {
                    if w.next_u32().is_multiple_of(40) {
                        f32::NAN
                    } else {
                        (40.0 * unit(&mut w) - 20.0) as f32
                    }
                })
                .collect();
            let mut team_energies = energies.clone();
            // The team phase, then the persistent kernel's reset.
            let (
                t_at,
                t_of,
                t_ladder,
                t_temps,
                t_trips,
                t_gates,
                t_flags,
                t_pairs,
                t_buf,
                t_stats,
                t_mom,
            ) = &mut team;
            hm::swap_and_adapt(
                &params,
                key,
                k,
                &ic,
                EnsembleArrays {
                    energies: &mut team_energies,
                    ladder: t_ladder,
                    temps: t_temps,
                    replica_at: t_at,
                    level_of: t_of,
                    trips: t_trips,
                    gates: t_gates,
                    flags: t_flags,
                    pairs: t_pairs,
                    stride: 1,
                    buffer: t_buf,
                    stats: t_stats,
                },
            );
            let carry = params.core.adapt_flags & adapt_flags::MOMENTUM_CARRY != 0;
            if !t_mom.is_empty() && !carry {
                for r in 0..p {
                    if hm::swapped_at_level(t_flags, 1, t_of[r], p as u32) {
                        t_mom[2 * r..2 * r + 2].fill(0.0);
                    }
                }
            }
            // The warp phase.
            let mut record = vec![0u8; p - 1];
            let before = states.clone();
            hm::warp_exchange(
                &params,
                key,
                k,
                &ic,
                EnsembleArrays {
                    energies: &mut energies,
                    ladder: &mut ladder,
                    temps: &mut temps,
                    replica_at: &mut at,
                    level_of: &mut of,
                    trips: &mut trips_a,
                    gates: &mut gates,
                    flags: &mut flags,
                    pairs: &mut pairs,
                    stride: 1,
                    buffer: &mut buffer,
                    stats: &mut stats,
                },
                hm::WarpReplicas {
                    states: &mut states,
                    momenta: &mut momenta,
                    sines: &mut sines,
                },
                Some(&mut record),
            );
            let ctx = format!("case {case}, P = {p}, k = {k}, params {:?}", params.core);
            let bits32 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits32(&energies), bits32(&team_energies), "energies, {ctx}");
            assert_eq!(bits64(&ladder), bits64(t_ladder), "ladder, {ctx}");
            assert_eq!(bits64(&temps), bits64(t_temps), "temperatures, {ctx}");
            assert_eq!(&at, t_at, "permutation, {ctx}");
            assert_eq!(&of, t_of, "levels, {ctx}");
            assert_eq!(&trips_a, t_trips, "trip states, {ctx}");
            assert_eq!(&gates, t_gates, "gates, {ctx}");
            assert_eq!(&flags, t_flags, "flags, {ctx}");
            assert_eq!(&record, t_flags, "recorded flags, {ctx}");
            assert_eq!(&pairs, t_pairs, "pair counts, {ctx}");
            assert_eq!(buffer.to_bits(), t_buf.to_bits(), "buffer, {ctx}");
            assert_eq!(&stats, t_stats, "counts, {ctx}");
            assert_eq!(bits32(&momenta), bits32(t_mom), "velocities, {ctx}");
            // States and sines stay with their replicas (stored by replica).
            assert_eq!(bits32(&states), bits32(&before), "states, {ctx}");
            swaps += t_flags.iter().filter(|&&f| f & 4 != 0).count() as u64;
        }
        trips += stats.round_trips + stats.authors_round_trips;
    }
    assert!(
        swaps > 10_000 && trips > 100,
        "swaps {swaps}, trips {trips}"
    );
}
