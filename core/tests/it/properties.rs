//! Property tests of the public API: random options (NaN, infinities and nonsense
//! included), random buffer lengths and random call sequences. Every call returns a
//! value or a typed error; nothing panics (proptest reports a panic as a failure), and
//! the driver's own state stays consistent whatever the caller does.

use nrpt_core::Error;
use nrpt_core::adapt::{
    AdaptOptions, StepSchedule, StepSize, adapt_buffer, adapt_ladder, initial_ladder,
};
use nrpt_core::bernoulli::IndexProcess;
use nrpt_core::driver::{InitialStates, Temperatures, Tempering, TemperingOptions};
use nrpt_core::explore::Explorer;
use nrpt_core::fastmath;
use nrpt_core::fixed::FixedTempering;
use nrpt_core::optimal;
use nrpt_core::rng::PhiloxStream;
use nrpt_core::rules::{
    BufferProjection, InitialLadder, LadderUpdate, MomentumOnSwap, PairEnergies, Rules, StepEnergy,
    SweepOrder,
};
use nrpt_core::swap::{RuleInputs, SwapBuffers, SwapRule, SweepBuffers, sweep};
use nrpt_core::target::{Modes2d, Noisy, SumModes};
use nrpt_core::window::Scheme;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// Floats a careless or hostile caller might pass: ordinary values of both signs,
/// zero, tiny and huge magnitudes, infinities and NaN.
fn any_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -2.0f64..2.0,
        2 => 0.0f64..1.0,
        1 => Just(0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(1e300),
        1 => Just(-1e-300),
        1 => 1.0f64..1e6,
    ]
}

/// Mostly valid values of a parameter, sometimes anything (with about 20 such
/// parameters, a third of the generated options are valid throughout).
fn mostly(valid: std::ops::Range<f64>) -> impl Strategy<Value = f64> {
    prop_oneof![50 => valid, 1 => any_float()]
}

fn any_rules() -> impl Strategy<Value = Rules> {
    (
        prop_oneof![
            Just(PairEnergies::PerLevel),
            Just(PairEnergies::FreshPerTest)
        ],
        prop_oneof![Just(SweepOrder::Simultaneous), Just(SweepOrder::Sequential)],
        prop_oneof![Just(LadderUpdate::Jacobi), Just(LadderUpdate::InPlace)],
        prop_oneof![
            Just(BufferProjection::NonNegative),
            Just(BufferProjection::Unprojected)
        ],
        prop_oneof![Just(MomentumOnSwap::Reset), Just(MomentumOnSwap::Carry)],
        prop_oneof![
            Just(InitialLadder::Geometric),
            (0u8..16, 1u32..100_000)
                .prop_map(|(decimals, unit)| InitialLadder::RoundedGeometric { decimals, unit })
        ],
    )
        .prop_map(
            |(
                pair_energies,
                sweep_order,
                ladder_update,
                buffer_projection,
                momentum_on_swap,
                initial_ladder,
            )| Rules {
                pair_energies,
                sweep_order,
                ladder_update,
                buffer_projection,
                momentum_on_swap,
                initial_ladder,
                // The shared-batch energies need a data target: the driver tests cover
                // them.
                step_energy: StepEnergy::AfterStep,
            },
        )
}

fn any_options() -> impl Strategy<Value = TemperingOptions> {
    let scheme = prop_oneof![
        (0u32..12).prop_map(|window| Scheme::Deo { window }),
        Just(Scheme::Seo)
    ];
    let rule = prop_oneof![Just(SwapRule::Buffered), Just(SwapRule::Metropolis)];
    let explorer = prop_oneof![
        Just(Explorer::Langevin),
        mostly(0.0..0.99).prop_map(|momentum| Explorer::Momentum { momentum })
    ];
    let temperatures = prop_oneof![
        Just(Temperatures::SgdExplorers),
        mostly(0.1..3.0).prop_map(Temperatures::Constant),
        mostly(1.5..50.0).prop_map(|max| Temperatures::Geometric { max }),
        Just(Temperatures::FollowLadder),
    ];
    let adapt = (
        mostly(0.05..0.95),
        mostly(1.0..100.0),
        mostly(0.5..1.0),
        mostly(1.0..1000.0),
        any::<bool>(),
        any::<bool>(),
        mostly(0.5..20.0),
    )
        .prop_map(|(s, a, alpha, b, ladder, buffer, scale)| AdaptOptions {
            target_swap_rate: s,
            schedule: StepSchedule { a, alpha, b },
            adapt_ladder: ladder,
            adapt_buffer: buffer,
            buffer_scale: scale,
        });
    let init = prop_oneof![
        (mostly(-2.0..0.0), mostly(0.5..3.0))
            .prop_map(|(low, high)| InitialStates::Uniform { low, high }),
        Just(InitialStates::Keep),
    ];
    (
        (scheme, rule, explorer, temperatures),
        (mostly(0.0001..0.01), mostly(0.05..1.0), mostly(0.0..5.0)),
        adapt,
        any_rules(),
        init,
        (any::<u32>(), any::<u32>()),
    )
        .prop_map(
            |(
                (scheme, rule, explorer, temperatures),
                (min, max, buffer),
                adapt,
                rules,
                init,
                (seed, ensemble),
            )| {
                TemperingOptions {
                    scheme,
                    rule,
                    explorer,
                    temperatures,
                    ladder_min: min,
                    ladder_max: max,
                    initial_buffer: buffer,
                    adapt,
                    rules,
                    init,
                    seed,
                    ensemble,
                }
            },
        )
}

use crate::common;
use common::Owned;

/// Length offsets: mostly all exact, sometimes some one off.
fn deltas() -> impl Strategy<Value = [i8; 12]> {
    prop_oneof![
        4 => Just([0i8; 12]),
        1 => proptest::array::uniform12(prop_oneof![
            8 => Just(0i8),
            1 => Just(-1i8),
            1 => Just(1i8)
        ]),
    ]
}

/// One call a user may make on a running sampler.
#[derive(Clone, Debug)]
enum Call {
    Step,
    Explore,
    Exchange,
    ExchangeWith(f64),
    /// Write a value into state, momentum and energy slot `i` (modulo their lengths).
    Write(usize, f64),
    Read,
}

fn calls() -> impl Strategy<Value = Vec<Call>> {
    proptest::collection::vec(
        prop_oneof![
            6 => Just(Call::Step),
            1 => Just(Call::Explore),
            1 => Just(Call::Exchange),
            1 => any_float().prop_map(Call::ExchangeWith),
            1 => (0usize..64, any_float()).prop_map(|(i, v)| Call::Write(i, v)),
            1 => Just(Call::Read),
        ],
        0..40,
    )
}

/// The driver's own invariants: a permutation and its inverse, pair counts that add
/// up, the iteration counter.
fn check_consistent<F: nrpt_core::rng::UnitDraw, O: nrpt_core::target::EnergyOracle<F>>(
    t: &Tempering<'_, F, O>,
    iterations: u64,
) -> Result<(), TestCaseError> {
    let s = t.storage();
    let p = s.chains();
    for (level, &r) in s.replica_at().iter().enumerate() {
        prop_assert!((r as usize) < p);
        prop_assert_eq!(s.level_of()[r as usize] as usize, level);
    }
    for ps in s.pair_stats() {
        prop_assert!(ps.swaps <= ps.attempts && ps.attempts <= iterations);
        prop_assert!(ps.indicators <= iterations && ps.nonfinite <= iterations);
    }
    prop_assert_eq!(t.iteration(), iterations);
    prop_assert!(s.ladder().iter().all(|e| e.is_finite() && *e > 0.0));
    prop_assert!(t.buffer().is_finite());
    Ok(())
}

/// How many generated cases got past `Tempering::new` (the test requires a fair share,
/// so that the call sequences are exercised, not only the checks).
static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn drive<F: nrpt_core::rng::UnitDraw>(
    options: TemperingOptions,
    p: usize,
    d: usize,
    delta: [i8; 12],
    noise: f64,
    calls: &[Call],
) -> Result<(), TestCaseError> {
    let mut owned = Owned::<F>::with_offsets(p, d, &delta, F::from_f64(0.25));
    let oracle = Noisy {
        potential: SumModes { dim: d },
        gradient_noise: noise,
        energy_noise: noise,
    };
    let mut t = match Tempering::new(options, oracle, owned.lend()) {
        Ok(t) => t,
        Err(e) => {
            // A typed error, with a message.
            prop_assert!(!e.to_string().is_empty());
            return Ok(());
        }
    };
    STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut iterations = 0;
    for call in calls {
        match *call {
            Call::Step => {
                let Ok(_) = t.step();
                iterations += 1;
            }
            Call::Explore => {
                let Ok(()) = t.explore();
            }
            Call::Exchange => {
                let Ok(_) = t.exchange();
                iterations += 1;
            }
            Call::ExchangeWith(g) => match StepSize::new(g) {
                Ok(gamma) => {
                    let Ok(_) = t.exchange_with_gamma(gamma);
                    iterations += 1;
                }
                Err(e) => {
                    let gamma_error = matches!(e, Error::InvalidValue { name: "gamma", .. });
                    prop_assert!(gamma_error);
                }
            },
            Call::Write(i, v) => {
                let view = t.explore_view();
                let n = view.states.len();
                view.states[i % n] = F::from_f64(v);
                let n = view.energies.len();
                view.energies[i % n] = F::from_f64(v);
                if !view.momenta.is_empty() {
                    let n = view.momenta.len();
                    view.momenta[i % n] = F::from_f64(v);
                }
            }
            Call::Read => {
                let _ = t.target_state();
                let s = t.storage();
                let _ = (s.state(i64::MAX as usize), s.state_at_level(usize::MAX));
                let _ = (t.stats(), t.buffer(), t.failure());
            }
        }
        check_consistent(&t, iterations)?;
    }
    Ok(())
}

/// The random driver runs, and a check that enough of them started.
#[test]
fn the_slice_driver_never_panics() {
    random_slice_drivers();
    let started = STARTED.load(std::sync::atomic::Ordering::Relaxed);
    assert!(started >= 100, "only {started} of 512 runs started");
}

proptest! {
    // A fixed seed: the suite checks the same cases on every run (set
    // PROPTEST_RNG_SEED or PROPTEST_CASES to explore further).
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: RngSeed::Fixed(0x6e72_7074),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random options, lengths and calls on the slice driver, f64 and f32 (run by
    /// `the_slice_driver_never_panics`).
    fn random_slice_drivers(
        options in any_options(),
        p in prop_oneof![9 => 2usize..7, 1 => 0usize..2],
        d in 0usize..4,
        delta in deltas(),
        noise in mostly(0.0..3.0),
        calls in calls(),
    ) {
        drive::<f64>(options, p, d, delta, noise, &calls)?;
        drive::<f32>(options, p, d, delta, noise, &calls)?;
    }

    /// The fixed-size owner with random options.
    #[test]
    fn the_fixed_owner_never_panics(options in any_options(), steps in 0usize..30) {
        match FixedTempering::<f32, _, 5, 2>::new(options, Noisy::paper(Modes2d)) {
            Ok(mut t) => {
                for _ in 0..steps {
                    let Ok(_) = t.step();
                }
                let _ = (t.target_state(), t.state(4), t.state(5), t.ladder(), t.pair_stats());
                prop_assert!(t.state(5).is_none());
                prop_assert_eq!(t.iteration(), steps as u64);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// The public sweep on arbitrary buffers: a result or a typed error.
    #[test]
    fn sweep_checks_its_buffers(
        energies in proptest::collection::vec(any_float(), 0..8),
        at in proptest::collection::vec(0u32..9, 0..8),
        of in proptest::collection::vec(0u32..9, 0..8),
        gates in proptest::collection::vec(any::<bool>(), 0..8),
        temps in proptest::collection::vec(any_float(), 0..8),
        k in any::<u64>(),
        window in 0u32..5,
        metropolis in any::<bool>(),
        sequential in any::<bool>(),
    ) {
        let (mut energies, mut at, mut of, mut gates) = (energies, at, of, gates);
        let mut fl = vec![0u8; gates.len()];
        let rule = if metropolis {
            RuleInputs::Metropolis { temperatures: &temps }
        } else {
            RuleInputs::Buffered { buffer: 0.5 }
        };
        let order = if sequential { SweepOrder::Sequential } else { SweepOrder::Simultaneous };
        let scheme = if window == 0 { Scheme::Seo } else { Scheme::Deo { window } };
        let mut rng = PhiloxStream::new(1, 2, k, 3, 1);
        let out = sweep(
            k,
            scheme,
            order,
            rule,
            SweepBuffers {
                energies: &mut energies,
                swap: SwapBuffers { replica_at: &mut at, level_of: &mut of, gates: &mut gates, flags: &mut fl },
            },
            &mut rng,
        );
        if out.is_ok() {
            // Still a permutation and its inverse.
            for (level, &r) in at.iter().enumerate() {
                prop_assert_eq!(of[r as usize] as usize, level);
            }
        }
    }

    /// Ladder, buffer and solver functions on arbitrary numbers.
    #[test]
    fn numeric_functions_never_panic(
        ladder in proptest::collection::vec(any_float(), 0..8),
        target in any_float(),
        gamma in any_float(),
        min in any_float(),
        max in any_float(),
        decimals in 0u8..20,
        chains in 0usize..5000,
        window in any_float(),
        rate in any_float(),
        x in any::<f32>(),
    ) {
        let mut l = ladder.clone();
        for update in [LadderUpdate::Jacobi, LadderUpdate::InPlace] {
            adapt_ladder(&mut l, update, target, gamma, |i| ladder.get(i).copied().unwrap_or(0.0));
        }
        let _ = adapt_buffer(min, max, target, gamma, rate, BufferProjection::NonNegative);
        let mut out = vec![0.0; chains % 40];
        let _ = initial_ladder(InitialLadder::RoundedGeometric { decimals, unit: 1 }, min, max, &mut out);
        let _ = optimal::optimal_window(chains, rate);
        let _ = optimal::paper_window(chains, rate);
        let _ = optimal::w_star(chains, rate);
        let _ = optimal::expected_round_trip(chains, window, rate);
        let _ = optimal::round_trip_rate_u32(chains, window as u32, rate);
        let _ = optimal::stationarity(chains, rate);
        let _ = optimal::lambert_w_m1(rate);
        let (s, c) = fastmath::sin_cos_2pi(x);
        prop_assert!(!x.is_finite() || (s.abs() <= 1.0 && c.abs() <= 1.0));
        let y = fastmath::ln(x);
        prop_assert!(x > 0.0 || y.is_nan() || y == f32::NEG_INFINITY);
    }

    /// The index process on arbitrary lengths and rates.
    #[test]
    fn index_process_never_panics(
        p in 0usize..6,
        delta in deltas(),
        window in 0u32..4,
        rates in proptest::collection::vec(any_float(), 0..6),
        steps in 0usize..50,
    ) {
        let mut o = Owned::<f32>::with_offsets(p, 1, &delta, 0.0);
        let scheme = if window == 0 { Scheme::Seo } else { Scheme::Deo { window } };
        let swap = SwapBuffers { replica_at: &mut o.replica_at, level_of: &mut o.level_of, gates: &mut o.gates, flags: &mut o.flags };
        if let Ok(mut ip) = IndexProcess::new(scheme, swap, &mut o.trips, 7, 1) {
            for _ in 0..steps {
                ip.step(|l| rates.get(l).copied().unwrap_or(0.5));
            }
            prop_assert_eq!(ip.iteration(), steps as u64);
        }
    }
}
