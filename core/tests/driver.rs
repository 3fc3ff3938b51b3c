//! End-to-end runs of the tempering driver on the paper's 25-mode target.

use nrpt_core::driver::{InitialStates, Storage, Temperatures, Tempering, TemperingOptions};
use nrpt_core::error::Error;
use nrpt_core::explore::Explorer;
use nrpt_core::fixed::FixedTempering;
use nrpt_core::index::{PairStats, TripState};
use nrpt_core::swap::SwapRule;
use nrpt_core::target::{Modes2d, Noisy, SumModes};
use nrpt_core::window::Scheme;

/// Owned buffers for the slice-based driver.
struct Buffers<F> {
    states: Vec<F>,
    momenta: Vec<F>,
    energies: Vec<F>,
    ladder: Vec<f64>,
    temperatures: Vec<f64>,
    replica_at: Vec<u32>,
    level_of: Vec<u32>,
    trips: Vec<TripState>,
    gates: Vec<bool>,
    flags: Vec<u8>,
    pair_stats: Vec<PairStats>,
    scratch: Vec<F>,
}

impl<F: nrpt_core::Float> Buffers<F> {
    fn new(p: usize, d: usize) -> Self {
        Buffers {
            states: vec![F::ZERO; p * d],
            momenta: vec![F::ZERO; p * d],
            energies: vec![F::ZERO; p],
            ladder: vec![0.0; p],
            temperatures: vec![0.0; p],
            replica_at: vec![0; p],
            level_of: vec![0; p],
            trips: vec![0; p],
            gates: vec![false; p.saturating_sub(1)],
            flags: vec![0; p.saturating_sub(1)],
            pair_stats: vec![PairStats::default(); p.saturating_sub(1)],
            scratch: vec![F::ZERO; 2 * d],
        }
    }

    fn storage(&mut self) -> Storage<'_, F> {
        Storage {
            states: &mut self.states,
            momenta: &mut self.momenta,
            energies: &mut self.energies,
            ladder: &mut self.ladder,
            temperatures: &mut self.temperatures,
            replica_at: &mut self.replica_at,
            level_of: &mut self.level_of,
            trips: &mut self.trips,
            gates: &mut self.gates,
            flags: &mut self.flags,
            pair_stats: &mut self.pair_stats,
            scratch: &mut self.scratch,
        }
    }
}

fn toy(window: u32, seed: u32) -> TemperingOptions {
    TemperingOptions {
        scheme: Scheme::Deo { window },
        seed,
        ..TemperingOptions::default()
    }
}

/// Runs the paper's toy and returns (round trips per 1000 iterations, final ladder,
/// final buffer, share of target samples within 0.5 of the centre mode).
fn run_toy(window: u32, seed: u32, iters: u64) -> (f64, Vec<f64>, f64, f64) {
    let mut b = Buffers::<f64>::new(16, 2);
    let mut t = Tempering::new(toy(window, seed), Noisy::paper(Modes2d), b.storage()).unwrap();
    let mut centre = 0u64;
    for _ in 0..iters {
        t.step().unwrap();
        let x = t.target_state();
        centre += u64::from(x[0].abs() < 0.5 && x[1].abs() < 0.5);
    }
    let trips = t.stats().round_trips as f64 * 1000.0 / iters as f64;
    let buffer = t.buffer();
    let ladder = t.storage().ladder.to_vec();
    (trips, ladder, buffer, centre as f64 / iters as f64)
}

#[test]
fn optimal_window_beats_vanilla_deo_on_the_toy() {
    let iters = 20_000;
    let (mut w1, mut w8) = (0.0, 0.0);
    for seed in 0..2 {
        w1 += run_toy(1, seed, iters).0 / 2.0;
        w8 += run_toy(8, seed, iters).0 / 2.0;
    }
    // The paper reports 18 and 45 per 1000 iterations (its own counting); the index
    // model of Lemma 1 gives 21 and 50. Require the ordering with a clear margin.
    assert!(w8 > 1.5 * w1, "W=8: {w8} vs W=1: {w1}");
    assert!(w1 > 3.0 && w8 > 15.0, "W=1: {w1}, W=8: {w8}");
}

#[test]
fn adaptation_keeps_the_ladder_ordered_and_the_ends_fixed() {
    let (_, ladder, buffer, centre) = run_toy(8, 7, 5_000);
    assert_eq!(ladder[0], 0.003);
    assert_eq!(ladder[15], 0.6);
    assert!(ladder.windows(2).all(|w| w[0] <= w[1]), "{ladder:?}");
    assert!(buffer.is_finite() && buffer >= 0.0);
    // The centre mode holds about 1/9 of the mass; anything between 2% and 40% says
    // the target level samples the target rather than sitting in one mode.
    assert!((0.02..0.4).contains(&centre), "centre share {centre}");
}

#[test]
fn same_seed_same_run_and_fixed_owner_agrees_with_slices() {
    let opts = toy(8, 3);
    let mut b = Buffers::<f32>::new(16, 2);
    let mut t = Tempering::new(opts, Noisy::paper(Modes2d), b.storage()).unwrap();
    let mut f = FixedTempering::<f32, _, 16, 2>::new(opts, Noisy::paper(Modes2d)).unwrap();
    for _ in 0..3_000 {
        let a = t.step().unwrap();
        let c = f.step().unwrap();
        assert_eq!(a, c);
    }
    assert_eq!(t.stats(), f.stats());
    assert_eq!(t.storage().ladder, f.ladder().as_slice());
    assert_eq!(t.storage().pair_stats, f.pair_stats());
    assert_eq!(t.target_state(), f.target_state().as_slice());
    assert_eq!(t.buffer(), f.buffer());
    let total_swaps: u64 = f.pair_stats().iter().map(|p| p.swaps).sum();
    assert!(total_swaps > 0);
    // A different seed gives a different run.
    let mut g = FixedTempering::<f32, _, 16, 2>::new(toy(8, 4), Noisy::paper(Modes2d)).unwrap();
    for _ in 0..3_000 {
        g.step().unwrap();
    }
    assert_ne!(g.target_state(), f.target_state());
}

#[test]
fn every_explorer_and_rule_runs() {
    let variants = [
        (
            SwapRule::Buffered,
            Explorer::MSGD,
            Temperatures::SgdExplorers,
            Scheme::Seo,
        ),
        (
            SwapRule::Metropolis,
            Explorer::Langevin,
            Temperatures::FollowLadder,
            Scheme::VANILLA_DEO,
        ),
        (
            SwapRule::Metropolis,
            Explorer::Langevin,
            Temperatures::Geometric { max: 20.0 },
            Scheme::Deo { window: 4 },
        ),
        (
            SwapRule::Buffered,
            Explorer::Langevin,
            Temperatures::Constant(1.0),
            Scheme::Deo { window: 2 },
        ),
    ];
    for (rule, explorer, temperatures, scheme) in variants {
        let opts = TemperingOptions {
            rule,
            explorer,
            temperatures,
            scheme,
            ladder_min: 0.001,
            ladder_max: 0.05,
            ..TemperingOptions::default()
        };
        let mut b = Buffers::<f64>::new(8, 5);
        let mut t = Tempering::new(opts, Noisy::exact(SumModes { dim: 5 }), b.storage()).unwrap();
        t.run(2_000).unwrap();
        let swaps: u64 = t.storage().pair_stats.iter().map(|p| p.swaps).sum();
        assert!(swaps > 0, "{rule:?} {explorer:?} {temperatures:?}");
        assert!(t.storage().states.iter().all(|x| x.is_finite()));
        if temperatures == Temperatures::FollowLadder {
            let s = t.storage();
            for l in 0..8 {
                assert!((s.temperatures[l] - s.ladder[l] / s.ladder[0]).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn nonfinite_energies_are_counted_and_never_win() {
    // Learning rates far too large blow the states up to infinity and NaN.
    let opts = TemperingOptions {
        ladder_min: 1.0,
        ladder_max: 1e6,
        adapt: nrpt_core::adapt::AdaptOptions {
            adapt_ladder: false,
            ..Default::default()
        },
        init: InitialStates::Uniform {
            low: 3.0,
            high: 4.0,
        },
        ..toy(1, 0)
    };
    let mut b = Buffers::<f32>::new(4, 2);
    let mut t = Tempering::new(opts, Noisy::paper(Modes2d), b.storage()).unwrap();
    t.run(200).unwrap();
    assert!(t.stats().nonfinite_energies > 0);
    let s = t.storage();
    let flagged: u64 = s.pair_stats.iter().map(|p| p.nonfinite).sum();
    assert!(flagged > 0);
}

#[test]
fn bad_input_gets_a_typed_error() {
    let oracle = Noisy::paper(Modes2d);
    let mut b = Buffers::<f64>::new(1, 2);
    let e = Tempering::new(toy(8, 0), oracle, b.storage()).err();
    assert_eq!(e, Some(Error::TooFewChains { chains: 1 }));

    let mut b = Buffers::<f64>::new(4, 2);
    let e = Tempering::new(toy(0, 0), oracle, b.storage()).err();
    assert_eq!(e, Some(Error::ZeroWindow));

    for s in [0.0, 1.0, -0.2, f64::NAN] {
        let mut o = toy(2, 0);
        o.adapt.target_swap_rate = s;
        let mut b = Buffers::<f64>::new(4, 2);
        let e = Tempering::new(o, oracle, b.storage()).err();
        assert!(
            matches!(e, Some(Error::SwapRateOutOfRange { .. })),
            "{s}: {e:?}"
        );
    }

    for (min, max) in [
        (0.6, 0.003),
        (0.1, 0.1),
        (f64::NAN, 1.0),
        (0.1, f64::INFINITY),
        (-1.0, 1.0),
    ] {
        let o = TemperingOptions {
            ladder_min: min,
            ladder_max: max,
            ..toy(2, 0)
        };
        let mut b = Buffers::<f64>::new(4, 2);
        let e = Tempering::new(o, oracle, b.storage()).err();
        assert!(
            matches!(e, Some(Error::LadderEnds { .. })),
            "{min} {max}: {e:?}"
        );
    }

    let o = TemperingOptions {
        initial_buffer: f64::NAN,
        ..toy(2, 0)
    };
    let mut b = Buffers::<f64>::new(4, 2);
    assert!(matches!(
        Tempering::new(o, oracle, b.storage()).err(),
        Some(Error::InvalidValue {
            name: "initial_buffer",
            ..
        })
    ));

    let o = TemperingOptions {
        rule: SwapRule::Metropolis,
        ..toy(2, 0)
    };
    let mut b = Buffers::<f64>::new(4, 2);
    assert!(matches!(
        Tempering::new(o, oracle, b.storage()).err(),
        Some(Error::InvalidValue {
            name: "temperatures",
            ..
        })
    ));

    // Buffer lengths that do not match P or D.
    let mut b = Buffers::<f64>::new(4, 2);
    b.states.pop();
    assert!(matches!(
        Tempering::new(toy(2, 0), oracle, b.storage()).err(),
        Some(Error::LengthMismatch {
            name: "states",
            expected: 8,
            found: 7
        })
    ));
    let mut b = Buffers::<f64>::new(4, 3);
    assert!(matches!(
        Tempering::new(toy(2, 0), oracle, b.storage()).err(),
        Some(Error::LengthMismatch { .. })
    ));
    let mut b = Buffers::<f64>::new(4, 2);
    b.gates.push(true);
    assert!(matches!(
        Tempering::new(toy(2, 0), oracle, b.storage()).err(),
        Some(Error::LengthMismatch { name: "gates", .. })
    ));
    let mut b = Buffers::<f64>::new(4, 2);
    b.momenta.clear();
    let o = TemperingOptions {
        explorer: Explorer::MSGD,
        ..toy(2, 0)
    };
    assert!(matches!(
        Tempering::new(o, oracle, b.storage()).err(),
        Some(Error::LengthMismatch {
            name: "momenta",
            ..
        })
    ));
    // The fixed owner checks the oracle's dimension.
    let e = FixedTempering::<f64, _, 4, 3>::new(toy(2, 0), oracle).err();
    assert!(matches!(e, Some(Error::LengthMismatch { .. })));
}

#[test]
fn kernel_params_are_a_plain_96_byte_block() {
    let p = TemperingOptions::default().params(16, 2);
    assert_eq!(core::mem::size_of_val(&p), 96);
    let bytes: &[u8] = bytemuck::bytes_of(&p);
    assert_eq!(bytes.len(), 96);
    assert_eq!(p.window, 8);
    assert_eq!(p.adapt_flags, 0b011);
    assert_eq!(p.chains, 16);
}
