//! On a GPU: the kernels against nrpt-core's f32 engine for the same seed (Philox
//! streams identical, the first 100 iterations' swap decisions identical, energies
//! within 1e-5 relative — in fact bit for bit — for the persistent and the step/swap
//! paths). Without a driver every test says it was skipped and why, and checks that
//! the API answers with a typed error instead of panicking; with `NRPT_REQUIRE_GPU=1`
//! (scripts/gpu-check.sh sets it) a missing driver, device or NVRTC fails every test
//! instead, naming what is missing.

mod common;

use std::sync::Arc;

use cudarc::driver::{LaunchConfig, PushKernelArg};
use nrpt_core::driver::TemperingOptions;
use nrpt_core::index::{IndexStats, PairStats};
use nrpt_core::rng::{PhiloxStream, Rng, box_muller_f32, philox4x32_10, uniform_f32};
use nrpt_core::rules::{BufferProjection, InitialLadder, LadderUpdate, MomentumOnSwap, Rules};
use nrpt_core::target::{Modes2d, Noisy, SumModes};
use nrpt_core::window::Scheme;
use nrpt_core::{Tempering, fastmath};
use nrpt_cuda::kernels::Kernel;
use nrpt_cuda::{
    CudaError, EnsembleConfig, ExecutionPath, Gpu, GpuEnsembles, GpuTarget, MathMode, Noise,
    Precision,
};

/// `true` when `NRPT_REQUIRE_GPU` is set (to anything but empty or `0`): then a test
/// that cannot reach a GPU fails instead of being skipped.
fn gpu_required() -> bool {
    std::env::var_os("NRPT_REQUIRE_GPU").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Says that a test was skipped and why, past the test harness's output capture (so
/// it shows under a plain `cargo test`); a failure instead under `NRPT_REQUIRE_GPU`.
fn report_skip(test: &str, why: &str) {
    use std::io::Write;
    if gpu_required() {
        panic!("{test}: NRPT_REQUIRE_GPU is set, but no GPU can be used: {why}");
    }
    let _ = writeln!(std::io::stderr(), "{test}: skipped: {why}");
}

fn gpu_or_skip(test: &str) -> Option<Arc<Gpu>> {
    match Gpu::open(0) {
        Ok(gpu) => {
            println!(
                "{test}: on {} ({}; kernels: {})",
                gpu.info().name,
                gpu.arch(),
                nrpt_cuda::ptx_cache::kernel_origin()
            );
            Some(Arc::new(gpu))
        }
        Err(e) => {
            report_skip(test, &e.to_string());
            None
        }
    }
}

#[test]
fn no_driver_is_a_typed_error_not_a_panic() {
    match nrpt_cuda::device::driver_present() {
        Err(e) => {
            assert!(matches!(e, CudaError::NoDriver { .. }), "{e:?}");
            assert!(matches!(Gpu::open(0), Err(CudaError::NoDriver { .. })));
            assert!(matches!(Gpu::list(), Err(CudaError::NoDriver { .. })));
            println!("no_driver_is_a_typed_error_not_a_panic: no driver here: {e}");
            assert!(!gpu_required(), "NRPT_REQUIRE_GPU is set, but {e}");
        }
        Ok(()) => {
            let list = Gpu::list().expect("a driver lists its devices");
            for d in &list {
                println!(
                    "device {}: {} cc {:?}, {} MiB",
                    d.ordinal,
                    d.name,
                    d.compute_capability,
                    d.memory_bytes >> 20
                );
            }
            assert!(matches!(
                Gpu::open(list.len() + 3),
                Err(CudaError::NoSuchDevice { .. } | CudaError::NoDriver { .. })
            ));
        }
    }
}

#[test]
fn philox_and_normals_on_the_device_are_core_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("philox_and_normals_on_the_device_are_core_bit_for_bit") else {
        return;
    };
    let s = gpu.stream();
    let n = 1 << 16;
    let mut w = PhiloxStream::new(5, 6, 7, 8, 9);
    let mut input: Vec<u32> = (0..6 * n).map(|_| w.next_u32()).collect();
    // The Random123 known-answer vectors first.
    input[..6].copy_from_slice(&[0, 0, 0, 0, 0, 0]);
    input[6..12].copy_from_slice(&[u32::MAX; 6]);
    let d_in = s.clone_htod(&input).unwrap();
    let mut d_out = s.alloc_zeros::<u32>(4 * n).unwrap();
    let f = gpu.function(Kernel::PhiloxProbe, MathMode::Exact).unwrap();
    let n32 = n as u32;
    let mut b = s.launch_builder(&f);
    b.arg(&d_in).arg(&mut d_out).arg(&n32);
    // SAFETY: philox_probe(const u32*, u32*, u32): 6n words in, 4n out, guarded i < n.
    unsafe { b.launch(LaunchConfig::for_num_elems(n32)) }.unwrap();
    let out = s.clone_dtoh(&d_out).unwrap();
    assert_eq!(out[..4], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
    assert_eq!(out[4..8], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]);
    for i in 0..n {
        let q = &input[6 * i..6 * i + 6];
        let want = philox4x32_10([q[0], q[1], q[2], q[3]], [q[4], q[5]]);
        assert_eq!(out[4 * i..4 * i + 4], want, "item {i}");
    }
    let m = 2 * n;
    let d_words = s.clone_htod(&input[..2 * m]).unwrap();
    let mut d_math = s.alloc_zeros::<f32>(5 * m).unwrap();
    let f = gpu.function(Kernel::MathProbe, MathMode::Exact).unwrap();
    let m32 = m as u32;
    let mut b = s.launch_builder(&f);
    b.arg(&d_words).arg(&mut d_math).arg(&m32);
    // SAFETY: math_probe(const u32*, float*, u32): 2m words in, 5m floats out.
    unsafe { b.launch(LaunchConfig::for_num_elems(m32)) }.unwrap();
    let got = s.clone_dtoh(&d_math).unwrap();
    for i in 0..m {
        let (w0, w1) = (input[2 * i], input[2 * i + 1]);
        let (z0, z1) = box_muller_f32(w0, w1);
        let (sin, cos) = fastmath::sin_cos_2pi(uniform_f32(w1) * 8.0);
        let want = [z0, z1, fastmath::ln(uniform_f32(w0)), sin, cos];
        let g = &got[5 * i..5 * i + 5];
        for j in 0..5 {
            assert_eq!(
                g[j].to_bits(),
                want[j].to_bits(),
                "item {i} value {j}: {} vs {}",
                g[j],
                want[j]
            );
        }
    }
}

/// What the CPU engine did, per ensemble.
struct CpuRun {
    flags: Vec<Vec<u8>>,
    states: Vec<f32>,
    momenta: Vec<f32>,
    initial_states: Vec<f32>,
    energies: Vec<f32>,
    ladder: Vec<f64>,
    buffer: f64,
    stats: IndexStats,
    pairs: Vec<PairStats>,
    level_of: Vec<u32>,
}

fn cpu_run(
    options: TemperingOptions,
    target: GpuTarget,
    noise: Noise,
    p: usize,
    iters: u64,
) -> CpuRun {
    let d = target.dim();
    let mom = options.explorer.has_momentum();
    let mut owned = common::OwnedStorage::new(p, d, mom);
    let buffers = owned.buffers();
    macro_rules! go {
        ($pot:expr) => {{
            let oracle = Noisy {
                potential: $pot,
                gradient_noise: noise.gradient,
                energy_noise: noise.energy,
            };
            let mut t = Tempering::new(options, oracle, buffers).unwrap();
            let initial_states = t.storage().states().to_vec();
            let mut flags = Vec::new();
            for _ in 0..iters {
                t.step().unwrap();
                flags.push(t.storage().flags().to_vec());
            }
            let s = t.storage();
            CpuRun {
                flags,
                states: s.states().to_vec(),
                momenta: s.momenta().to_vec(),
                initial_states,
                energies: s.energies().to_vec(),
                ladder: s.ladder().to_vec(),
                buffer: t.buffer(),
                stats: t.stats(),
                pairs: s.pair_stats().to_vec(),
                level_of: s.level_of().to_vec(),
            }
        }};
    }
    match target {
        GpuTarget::Modes2d => go!(Modes2d),
        GpuTarget::SumModes { dim } => go!(SumModes { dim }),
        GpuTarget::Source { source, .. } => panic!(
            "these parity checks run the kernels' built-in potentials; target {}'s own \
             source is checked with its Rust potential in the workspace's tests/",
            source.name
        ),
    }
}

fn rel(a: f32, b: f32) -> f64 {
    let (a, b) = (f64::from(a), f64::from(b));
    (a - b).abs() / a.abs().max(b.abs()).max(1e-30)
}

/// Runs E ensembles on the GPU and each on the CPU for `iters` iterations; compares
/// the swap flags of every iteration, the states, energies, ladder, buffer, counts.
/// `exact_energy`: false for the block-reduced step (energies within 1e-5 only).
fn parity(gpu: &Arc<Gpu>, config: EnsembleConfig, iters: u64, exact_energy: bool) {
    let (e, p, d) = (config.ensembles, config.chains, config.target.dim());
    let mut run = GpuEnsembles::new(gpu, &config).unwrap();
    let label = format!(
        "{:?} D={d} P={p} E={e} persistent={} {:?}",
        config.target,
        run.uses_persistent_kernel(),
        config.options.scheme
    );
    let start = run.states().unwrap();
    run.record_flags(true);
    run.advance(iters).unwrap();
    let flags = run.take_recorded_flags();
    assert_eq!(flags.len() as u64, iters * (e * (p - 1)) as u64);
    let states = run.states().unwrap();
    let momenta = run.momenta().unwrap();
    let snap = run.snapshot().unwrap();
    let mut worst = 0f64;
    for ens in 0..e {
        let options = TemperingOptions {
            ensemble: config.options.ensemble + ens as u32,
            ..config.options
        };
        let cpu = cpu_run(options, config.target.clone(), config.noise, p, iters);
        let chains = ens * p * d..(ens + 1) * p * d;
        assert_eq!(
            start[chains.clone()],
            cpu.initial_states[..],
            "initial states, {label}"
        );
        for k in 0..iters as usize {
            let off = (k * e + ens) * (p - 1);
            assert_eq!(
                flags[off..off + p - 1],
                cpu.flags[k][..],
                "swap flags at iteration {k}, ensemble {ens}, {label}"
            );
        }
        let s = &snap.ensembles[ens];
        for (l, (&g, &c)) in s.energies.iter().zip(&cpu.energies).enumerate() {
            worst = worst.max(rel(g, c));
            assert!(
                rel(g, c) <= 1e-5,
                "energy at level {l}: {g} vs {c}, {label}"
            );
            if exact_energy {
                assert_eq!(
                    g.to_bits(),
                    c.to_bits(),
                    "energy bits at level {l}, {label}"
                );
            }
        }
        if exact_energy {
            let gs: Vec<u32> = states[chains].iter().map(|x| x.to_bits()).collect();
            let cs: Vec<u32> = cpu.states.iter().map(|x| x.to_bits()).collect();
            assert_eq!(gs, cs, "states, ensemble {ens}, {label}");
            if !cpu.momenta.is_empty() {
                let gm: Vec<u32> = momenta[ens * p * d..(ens + 1) * p * d]
                    .iter()
                    .map(|x| x.to_bits())
                    .collect();
                let cm: Vec<u32> = cpu.momenta.iter().map(|x| x.to_bits()).collect();
                assert_eq!(gm, cm, "momenta, ensemble {ens}, {label}");
            }
            assert_eq!(s.ladder, cpu.ladder, "ladder, {label}");
            assert_eq!(s.buffer.to_bits(), cpu.buffer.to_bits(), "buffer, {label}");
            assert_eq!(s.stats, cpu.stats, "stats, {label}");
            assert_eq!(s.pair_stats, cpu.pairs, "pair stats, {label}");
            assert_eq!(s.level_of, cpu.level_of, "level_of, {label}");
        }
    }
    println!("parity ok: {label}, {iters} iterations, worst energy rel. diff {worst:e}");
}

#[test]
fn gpu_runs_match_the_cpu_engine() {
    let Some(gpu) = gpu_or_skip("gpu_runs_match_the_cpu_engine") else {
        return;
    };
    let paper = TemperingOptions {
        seed: 2023,
        ensemble: 10,
        ..TemperingOptions::default()
    };
    for path in [ExecutionPath::Persistent, ExecutionPath::StepSwap] {
        for scheme in [
            Scheme::Deo { window: 8 },
            Scheme::Deo { window: 1 },
            Scheme::Seo,
        ] {
            let config = EnsembleConfig {
                path,
                ..EnsembleConfig::new(
                    TemperingOptions { scheme, ..paper },
                    GpuTarget::Modes2d,
                    40,
                    16,
                )
            };
            parity(&gpu, config, 100, true);
        }
        // Momentum explorers on the 2D toy: the persistent kernel resets the velocity
        // registers of swapped replicas, the swap kernel the momenta in memory; with
        // MomentumOnSwap::Carry neither does.
        for momentum_on_swap in [MomentumOnSwap::Reset, MomentumOnSwap::Carry] {
            let options = TemperingOptions {
                explorer: nrpt_core::explore::Explorer::MSGD,
                scheme: Scheme::Deo { window: 1 },
                rules: Rules {
                    momentum_on_swap,
                    ..Rules::PAPER
                },
                ..paper
            };
            let config = EnsembleConfig {
                path,
                ..EnsembleConfig::new(options, GpuTarget::Modes2d, 40, 16)
            };
            parity(&gpu, config, 100, true);
        }
    }
    // The rule variants the kernels implement besides the paper's.
    let variants = TemperingOptions {
        rules: Rules {
            ladder_update: LadderUpdate::InPlace,
            buffer_projection: BufferProjection::Unprojected,
            initial_ladder: InitialLadder::RoundedGeometric {
                decimals: 3,
                unit: 1,
            },
            ..Rules::PAPER
        },
        ..paper
    };
    parity(
        &gpu,
        EnsembleConfig::new(variants, GpuTarget::Modes2d, 40, 16),
        100,
        true,
    );
    let small = TemperingOptions {
        ladder_min: 0.001,
        ladder_max: 0.05,
        explorer: nrpt_core::explore::Explorer::MSGD,
        ..paper
    };
    parity(
        &gpu,
        EnsembleConfig::new(small, GpuTarget::SumModes { dim: 7 }, 5, 8),
        100,
        true,
    );
    // The cooperative block step for large D: the energy is a tree sum.
    parity(
        &gpu,
        EnsembleConfig::new(small, GpuTarget::SumModes { dim: 1024 }, 2, 4),
        1,
        false,
    );
}

#[test]
fn half_storage_runs() {
    let Some(gpu) = gpu_or_skip("half_storage_runs") else {
        return;
    };
    for precision in [Precision::Bf16, Precision::F16] {
        let options = TemperingOptions {
            ladder_min: 0.001,
            ladder_max: 0.05,
            ..TemperingOptions::default()
        };
        let config = EnsembleConfig {
            precision,
            ..EnsembleConfig::new(options, GpuTarget::SumModes { dim: 1024 }, 8, 8)
        };
        let mut run = GpuEnsembles::new(&gpu, &config).unwrap();
        run.advance(50).unwrap();
        let x = run.states().unwrap();
        assert!(x.iter().all(|v| v.is_finite()), "{precision:?}");
        let snap = run.snapshot().unwrap();
        assert!(
            snap.ensembles
                .iter()
                .all(|e| e.energies.iter().all(|v| v.is_finite()))
        );
        println!(
            "{precision:?}: 50 iterations, energy at level 0 of ensemble 0: {}",
            snap.ensembles[0].energies[0]
        );
    }
}

/// Device timing (CUDA events around each chunk's launches) changes no result: a timed
/// run ends in the same bits as an untimed one, on both paths; its seconds are
/// positive, add up over calls, and `advance_timed` returns those of its own
/// iterations.
#[test]
fn device_timing_leaves_results_alone() {
    let Some(gpu) = gpu_or_skip("device_timing_leaves_results_alone") else {
        return;
    };
    for path in [ExecutionPath::Persistent, ExecutionPath::StepSwap] {
        let config = EnsembleConfig {
            path,
            ..EnsembleConfig::new(TemperingOptions::default(), GpuTarget::Modes2d, 64, 16)
        };
        let mut plain = GpuEnsembles::new(&gpu, &config).unwrap();
        plain.advance(300).unwrap();
        let mut timed = GpuEnsembles::new(&gpu, &config).unwrap();
        timed.time_device(true);
        timed.advance(100).unwrap();
        let first = timed.device_seconds();
        let own = timed.advance_timed(200).unwrap();
        let total = timed.device_seconds();
        assert!(first > 0.0 && own > 0.0, "{path:?}: {first} s, {own} s");
        assert!(
            (total - (first + own)).abs() <= 1e-9 * total.max(1.0),
            "{path:?}: {total} s is not {first} s + {own} s"
        );
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        assert_eq!(
            bits(plain.states().unwrap()),
            bits(timed.states().unwrap()),
            "{path:?}: timing changed the states"
        );
        timed.time_device(false);
        timed.advance(10).unwrap();
        assert_eq!(
            timed.device_seconds(),
            0.0,
            "{path:?}: timing off still counts"
        );
        println!("{path:?}: 300 iterations of 64 × 16 chains: {total:.3e} s on the device");
    }
}
