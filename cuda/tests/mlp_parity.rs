//! The classifier kernels (kernels/mlp.cuh), compiled for the CPU and run phase by phase
//! for every thread of a block, against nrpt-core's per-example reference
//! (`model::mlp`, `model::Classifier`, `Tempering<f32, Classifier<f32>>`), bit for bit:
//! libm's expf/logf as ported; the energy and every gradient entry of a state on a
//! mini-batch for softmax regression and MLPs of one to three hidden layers, odd and
//! even batches, features with exact zeros and ReLU units that are off; and whole runs
//! of the emulated GPU iteration (step of every chain, exchange of every ensemble):
//! states, momenta, energies, ladders, buffers, permutations, trip states and every
//! count, for momentum SGD (the deep experiment), SGHMC and SGLD explorers. No GPU is
//! needed.

mod common;

use common::OwnedStorage;
use nrpt_core::Float;
use nrpt_core::adapt::{AdaptOptions, StepSchedule};
use nrpt_core::driver::{InitialStates, Temperatures, TemperingOptions};
use nrpt_core::explore::Explorer;
use nrpt_core::model::{Architecture, Classifier, DataView};
use nrpt_core::rng::{PhiloxStream, Rng, UnitDraw, fill_normals, streams};
use nrpt_core::rules::Rules;
use nrpt_core::swap::SwapRule;
use nrpt_core::window::Scheme;
use nrpt_core::{Tempering, index::TripState};
use nrpt_cuda::mlp::{self as gpu_mlp, HostMlp, MlpConfig, MlpModel};
use nrpt_cuda::{CudaError, MathMode};

/// f32 equality of bits, any NaN equal to any NaN (payloads differ across machines).
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn assert_same(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| !same(got[i], want[i])) {
        panic!(
            "{what}[{i}]: kernels {} ({:#010x}) vs nrpt-core {} ({:#010x})",
            got[i],
            got[i].to_bits(),
            want[i],
            want[i].to_bits()
        );
    }
}

#[test]
fn block_layout_is_the_rust_mirror() {
    assert_eq!(
        gpu_mlp::host::sizes(),
        [
            size_of::<gpu_mlp::MlpLayer>() as u32,
            size_of::<gpu_mlp::MlpParams>() as u32,
            size_of::<gpu_mlp::MlpArrays>() as u32,
            gpu_mlp::THREADS,
            gpu_mlp::EXCHANGE_THREADS,
        ]
    );
}

/// libm's expf and logf as ported to the kernels give libm's bits: the special values,
/// both sides of every branch threshold, subnormals, and a million spread inputs.
#[test]
fn expf_and_logf_are_libms() {
    let mut xs: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        1e-45,
        88.72283,
        88.72284,
        -87.33655,
        -103.972084,
        -103.97209,
        -150.0,
        0.346_573_6,
        1.0397208,
    ];
    for bits in [
        0x42aeac50u32,
        0x42b17218,
        0x42cff1b5,
        0x3eb17218,
        0x3f851592,
        0x39000000,
        0x3f3504f3,
        0x00800000,
        0x3f800000,
    ] {
        for d in [-2i32, -1, 0, 1, 2] {
            let b = bits.wrapping_add_signed(d);
            xs.push(f32::from_bits(b));
            xs.push(-f32::from_bits(b));
        }
    }
    let mut rng = PhiloxStream::new(9, 9, 0, 0, 9);
    for _ in 0..500_000 {
        xs.push(f32::from_bits(rng.next_u32())); // every exponent
        xs.push((f32::uniform(rng.next_u32()) - 0.5) * 240.0); // exp's range
    }
    for &x in &xs {
        let (e, l) = (gpu_mlp::host::expf(x), gpu_mlp::host::logf(x));
        assert!(
            same(e, Float::exp(x)),
            "expf({x:e}): {e:e} vs {:e}",
            Float::exp(x)
        );
        assert!(
            same(l, Float::ln(x)),
            "logf({x:e}): {l:e} vs {:e}",
            Float::ln(x)
        );
    }
}

/// A training set of `n` examples with `f` features in about [−2, 2], a third of them
/// exactly 0 (core skips those inputs), and labels below `c`.
fn data(n: usize, f: usize, c: usize, seed: u32) -> (Vec<f32>, Vec<u32>) {
    let mut rng = PhiloxStream::new(seed, 1, 0, 0, 0);
    let x = (0..n * f)
        .map(|_| {
            let u = f32::uniform(rng.next_u32());
            if rng.next_u32().is_multiple_of(3) {
                0.0
            } else {
                4.0 * u - 2.0
            }
        })
        .collect();
    let y = (0..n).map(|_| rng.next_u32() % c as u32).collect();
    (x, y)
}

/// θ with normal weights of scale `1/√in` (some ReLU units off) and small biases.
fn theta(arch: &Architecture, seed: u32) -> Vec<f32> {
    let mut rng = PhiloxStream::new(seed, 2, 0, 0, 0);
    let mut t = vec![0.0f32; arch.parameters()];
    fill_normals(&mut rng, &mut t);
    for layer in arch.iter() {
        let s = 1.0 / (layer.inputs as f32).sqrt();
        for v in &mut t[layer.weights..layer.biases] {
            *v *= s;
        }
        for v in &mut t[layer.biases..layer.biases + layer.outputs] {
            *v *= 0.1;
        }
    }
    t
}

fn config(arch: Architecture, batch: usize, prior_sigma: f64) -> MlpConfig {
    MlpConfig {
        options: deep_options(),
        model: MlpModel {
            arch,
            batch,
            prior_sigma,
        },
        ensembles: 1,
        chains: 2,
        math: MathMode::Exact,
    }
}

/// The energy and gradient of a state on a mini-batch, through the step kernel's
/// phases, equal nrpt-core's `mlp::energy` in every bit.
#[test]
fn energy_and_gradient_are_cores_bit_for_bit() {
    let cases: [(&[usize], usize, f64); 7] = [
        (&[64, 10], 64, 1.0),
        (&[64, 64, 10], 64, 1.0),
        (&[64, 64, 10], 33, 0.7),
        (&[64, 128, 10], 48, 1.0),
        (&[64, 16, 8, 10], 7, 2.5),
        (&[5, 7, 4, 3, 2], 1, 1.0),
        (&[13, 9, 3], 100, 0.3),
    ];
    for (i, &(sizes, batch, sigma)) in cases.iter().enumerate() {
        let arch = Architecture::new(sizes).unwrap();
        let (f, c) = (arch.features(), arch.classes());
        let n = 301;
        let (x, y) = data(n, f, c, i as u32);
        let view = DataView::new(&x, &y, f, c).unwrap();
        let params = config(arch, batch, sigma).params(n, f, c).unwrap();
        let mut rng = PhiloxStream::new(i as u32, 3, 0, 0, 0);
        for s in 0..3 {
            let th = theta(&arch, 10 * i as u32 + s);
            let idx: Vec<u32> = (0..batch)
                .map(|_| nrpt_core::model::batch::index(rng.next_u32(), n as u32))
                .collect();
            let mut want = vec![0.0f32; th.len()];
            let mut scratch = vec![0.0f32; arch.scratch_len()];
            let e_core = nrpt_core::model::mlp::energy(
                &arch,
                &th,
                &view,
                &idx,
                sigma as f32,
                Some(&mut want),
                &mut scratch,
            )
            .unwrap();
            let mut got = vec![f32::NAN; th.len()];
            let e = gpu_mlp::host::evaluate(&params, &th, &idx, &x, &y, Some(&mut got)).unwrap();
            let what = format!("{sizes:?} batch {batch} state {s}");
            assert!(same(e, e_core), "{what}: energy {e} vs {e_core}");
            assert_same(&format!("{what}: gradient"), &got, &want);
            let e_only = gpu_mlp::host::evaluate(&params, &th, &idx, &x, &y, None).unwrap();
            assert!(same(e_only, e_core), "{what}: energy without gradient");
        }
    }
}

/// The deep experiment's options: momentum SGD at every level, T = 0, the buffered
/// rule with adaptation, a short window so that pairs swap often.
fn deep_options() -> TemperingOptions {
    TemperingOptions {
        scheme: Scheme::Deo { window: 2 },
        rule: SwapRule::Buffered,
        explorer: Explorer::MSGD,
        temperatures: Temperatures::Constant(0.0),
        ladder_min: 0.005 / 300.0,
        ladder_max: 0.05 / 300.0,
        initial_buffer: 0.0,
        adapt: AdaptOptions {
            target_swap_rate: 0.4,
            schedule: StepSchedule {
                a: 50.0,
                alpha: 0.8,
                b: 100.0,
            },
            adapt_ladder: true,
            adapt_buffer: true,
            buffer_scale: 1.0,
        },
        rules: Rules::PAPER,
        init: InitialStates::Uniform {
            low: -0.3,
            high: 0.3,
        },
        seed: 11,
        ensemble: 3,
    }
}

/// Runs `config` for `iterations` on the emulated GPU and on nrpt-core's driver (one
/// `Tempering<f32, Classifier<f32>>` per ensemble, key `options.ensemble + e`), and
/// compares every array bit for bit.
fn compare_runs(config: &MlpConfig, sizes: &[usize], iterations: u64, initial: Option<&[f32]>) {
    let arch = config.model.arch;
    let (f, c) = (arch.features(), arch.classes());
    let n = 257;
    let (x, y) = data(n, f, c, 77);
    let view = DataView::new(&x, &y, f, c).unwrap();
    let mut gpu = HostMlp::new(config, &view, initial).unwrap();
    gpu.advance(iterations);
    let (p, d) = (config.chains, arch.parameters());
    let momentum = config.options.explorer.has_momentum();
    let mut total_swaps = 0;
    for e in 0..config.ensembles {
        let mut store = OwnedStorage::new(p, d, momentum);
        let mut scratch = vec![0.0f32; arch.scratch_len()];
        let mut idx = vec![0u32; config.model.batch];
        let oracle =
            Classifier::new(arch, view, config.model.prior_sigma, &mut scratch, &mut idx).unwrap();
        let buffers = store.buffers();
        if let Some(given) = initial {
            buffers
                .states
                .copy_from_slice(&given[e * p * d..(e + 1) * p * d]);
        }
        let options = TemperingOptions {
            ensemble: config.options.ensemble + e as u32,
            ..config.options
        };
        let mut t = Tempering::new(options, oracle, buffers).unwrap();
        t.run(iterations).unwrap();
        let s = t.storage();
        let what = |name: &str| format!("{sizes:?}, ensemble {e}, {iterations} iterations: {name}");
        let (lv, pr) = (e * p..(e + 1) * p, e * (p - 1)..(e + 1) * (p - 1));
        assert_same(
            &what("states"),
            &gpu.states()[e * p * d..(e + 1) * p * d],
            s.states(),
        );
        if momentum {
            assert_same(
                &what("momenta"),
                &gpu.momenta()[e * p * d..(e + 1) * p * d],
                s.momenta(),
            );
        }
        assert_same(&what("energies"), &gpu.energies()[lv.clone()], s.energies());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&gpu.ladder()[lv.clone()]),
            bits(s.ladder()),
            "{}",
            what("ladder")
        );
        assert_eq!(
            bits(&gpu.temperatures()[lv.clone()]),
            bits(s.temperatures()),
            "{}",
            what("temperatures")
        );
        assert_eq!(
            gpu.buffers()[e].to_bits(),
            t.buffer().to_bits(),
            "{}",
            what("buffer")
        );
        assert_eq!(
            &gpu.replica_at()[lv.clone()],
            s.replica_at(),
            "{}",
            what("replica_at")
        );
        assert_eq!(
            &gpu.level_of()[lv.clone()],
            s.level_of(),
            "{}",
            what("level_of")
        );
        let trips: &[TripState] = s.trips();
        assert_eq!(&gpu.trips()[lv], trips, "{}", what("trips"));
        let gates: Vec<u8> = s.gates().iter().map(|&g| u8::from(g)).collect();
        assert_eq!(&gpu.gates()[pr.clone()], &gates[..], "{}", what("gates"));
        assert_eq!(&gpu.flags()[pr.clone()], s.flags(), "{}", what("flags"));
        assert_eq!(
            &gpu.pair_stats()[pr],
            s.pair_stats(),
            "{}",
            what("pair counts")
        );
        assert_eq!(gpu.index_stats()[e], t.stats(), "{}", what("index stats"));
        total_swaps += s.pair_stats().iter().map(|q| q.swaps).sum::<u64>();
    }
    // The comparison means something only if replicas moved.
    assert!(
        total_swaps > 0,
        "{sizes:?}: no swap in {iterations} iterations"
    );
}

#[test]
fn runs_of_the_deep_experiments_sampler_are_cores() {
    let sizes = [64, 16, 10];
    let cfg = MlpConfig {
        options: deep_options(),
        model: MlpModel {
            arch: Architecture::new(&sizes).unwrap(),
            batch: 32,
            prior_sigma: 1.0,
        },
        ensembles: 3,
        chains: 5,
        math: MathMode::Exact,
    };
    compare_runs(&cfg, &sizes, 40, None);
}

#[test]
fn runs_of_the_default_network_are_cores() {
    let sizes = [64, 64, 10];
    let cfg = MlpConfig {
        options: deep_options(),
        model: MlpModel {
            arch: Architecture::new(&sizes).unwrap(),
            batch: 64,
            prior_sigma: 1.0,
        },
        ensembles: 2,
        chains: 4,
        math: MathMode::Exact,
    };
    compare_runs(&cfg, &sizes, 12, None);
}

/// SGHMC (momentum with T > 0 following the ladder: the Langevin noise is drawn after
/// the mini-batch) and SGLD at the target with SGD explorers, from given states.
#[test]
fn runs_with_noise_and_given_states_are_cores() {
    let sizes = [12, 6, 3];
    let arch = Architecture::new(&sizes).unwrap();
    let sghmc = MlpConfig {
        options: TemperingOptions {
            temperatures: Temperatures::FollowLadder,
            init: InitialStates::Keep,
            ..deep_options()
        },
        model: MlpModel {
            arch,
            batch: 9,
            prior_sigma: 0.8,
        },
        ensembles: 2,
        chains: 4,
        math: MathMode::Exact,
    };
    let (p, d) = (sghmc.chains, arch.parameters());
    let mut given = vec![0.0f32; 2 * p * d];
    fill_normals(
        &mut PhiloxStream::new(5, 5, 0, 0, streams::INIT),
        &mut given,
    );
    compare_runs(&sghmc, &sizes, 30, Some(&given));
    let sgld = MlpConfig {
        options: TemperingOptions {
            explorer: Explorer::Langevin,
            temperatures: Temperatures::SgdExplorers,
            scheme: Scheme::Deo { window: 1 },
            ..deep_options()
        },
        ..sghmc
    };
    compare_runs(&sgld, &sizes, 30, None);
}

/// Configurations the kernels cannot run are typed errors, never panics.
#[test]
fn bad_configurations_are_errors() {
    let arch = Architecture::new(&[8, 4, 3]).unwrap();
    let ok = config(arch, 4, 1.0);
    assert!(ok.params(10, 8, 3).is_ok());
    let authors = MlpConfig {
        options: TemperingOptions {
            rules: Rules::AUTHORS_CODE,
            ..deep_options()
        },
        ..ok
    };
    assert!(matches!(
        authors.params(10, 8, 3),
        Err(CudaError::Options(_))
    ));
    assert!(ok.params(10, 9, 3).is_err(), "features");
    assert!(ok.params(10, 8, 4).is_err(), "classes");
    assert!(ok.params(0, 8, 3).is_err(), "no examples");
    let zero_batch = MlpConfig {
        model: MlpModel {
            batch: 0,
            ..ok.model
        },
        ..ok
    };
    assert!(zero_batch.params(10, 8, 3).is_err());
    let bad_sigma = MlpConfig {
        model: MlpModel {
            prior_sigma: f64::NAN,
            ..ok.model
        },
        ..ok
    };
    assert!(bad_sigma.params(10, 8, 3).is_err());
    let one_chain = MlpConfig { chains: 1, ..ok };
    assert!(one_chain.params(10, 8, 3).is_err());
    let no_ensemble = MlpConfig { ensembles: 0, ..ok };
    assert!(no_ensemble.params(10, 8, 3).is_err());
    // Given states of the wrong length.
    let keep = MlpConfig {
        options: TemperingOptions {
            init: InitialStates::Keep,
            ..deep_options()
        },
        ..ok
    };
    assert!(gpu_mlp::Start::new(&keep, Some(&[0.0; 3])).is_err());
    // The host evaluation checks its inputs.
    let params = ok.params(10, 8, 3).unwrap();
    let (x, y) = data(10, 8, 3, 1);
    let th = vec![0.0f32; arch.parameters()];
    assert!(gpu_mlp::host::evaluate(&params, &th, &[0, 1, 2, 10], &x, &y, None).is_err());
    assert!(gpu_mlp::host::evaluate(&params, &th[1..], &[0, 1, 2, 3], &x, &y, None).is_err());
    assert!(gpu_mlp::host::evaluate(&params, &th, &[0, 1, 2, 3], &x, &y, None).is_ok());
}
