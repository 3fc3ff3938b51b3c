//! End-to-end runs of the tempering driver on the paper's 25-mode target.

use nrpt_core::driver::{InitialStates, Temperatures, Tempering, TemperingOptions};
use nrpt_core::error::Error;
use nrpt_core::explore::Explorer;
use nrpt_core::fixed::FixedTempering;
use nrpt_core::rng::Rng;
use nrpt_core::rules::{LadderUpdate, MomentumOnSwap, PairEnergies, Rules, StepEnergy};
use nrpt_core::swap::{SwapRule, flags};
use nrpt_core::target::{EnergyOracle, Modes2d, Noisy, Potential, SumModes};
use nrpt_core::window::Scheme;

use crate::common;
use common::Owned;

fn toy(window: u32, seed: u32) -> TemperingOptions {
    TemperingOptions {
        scheme: Scheme::Deo { window },
        seed,
        ..TemperingOptions::default()
    }
}

/// What a run of the paper's toy measured.
struct Toy {
    /// Standard round trips per 1000 iterations.
    trips: f64,
    /// Round trips in the authors' counting per 1000 iterations, with their divisor
    /// (the iterations asked for, not counting the extra iteration 0 of their loop).
    authors_trips: f64,
    /// Indicator rate of each pair over the second half of the run.
    rates: Vec<f64>,
    /// Smallest and largest buffer C over the last quarter of the run, and the last.
    buffer: (f64, f64, f64),
    ladder: Vec<f64>,
}

/// Runs the paper's toy (P = 16, f32, the noisy 25-mode target) for `iters` iterations,
/// plus one with the authors' iteration range.
fn run_toy(rules: Rules, window: u32, seed: u32, iters: u64) -> Toy {
    let total = iters + u64::from(rules == Rules::AUTHORS_CODE);
    let mut b = Owned::<f32>::new(16, 2);
    let opts = TemperingOptions {
        rules,
        ..toy(window, seed)
    };
    let mut t = Tempering::new(opts, Noisy::paper(Modes2d), b.lend()).unwrap();
    let mut half = Vec::new();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for k in 0..total {
        t.step().unwrap();
        if k + 1 == total / 2 {
            half = t
                .storage()
                .pair_stats()
                .iter()
                .map(|p| p.indicators)
                .collect();
        }
        if 4 * k >= 3 * total {
            lo = lo.min(t.buffer());
            hi = hi.max(t.buffer());
        }
    }
    let second = (total - total / 2) as f64;
    let rates = t
        .storage()
        .pair_stats()
        .iter()
        .zip(&half)
        .map(|(p, h)| (p.indicators - h) as f64 / second)
        .collect();
    let stats = t.stats();
    Toy {
        trips: stats.round_trips as f64 * 1000.0 / total as f64,
        authors_trips: stats.authors_round_trips as f64 * 1000.0 / iters as f64,
        rates,
        buffer: (lo, hi, t.buffer()),
        ladder: t.storage().ladder().to_vec(),
    }
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0.0);
    for x in v {
        s += x;
        n += 1.0;
    }
    s / n
}

/// The paper's rules on its toy, 8 seeds of 20,000 iterations per window. Measured
/// over 16 seeds (mean ± per-seed sd): standard round trips per 1000 iterations
/// 16.3 ± 0.85 at W = 1 and 41.4 ± 0.8 at W = 8; the in-place ladder of nrpt 0.1 gives
/// 17.0 at W = 1, W = 4 about 30. The bands below are about ±3 standard errors of an
/// 8-seed mean: the in-place ladder misses the first, a wrong window the second.
/// Every pair's indicator rate over the second half lies within ±0.07 of S and their
/// mean within ±0.01: the Jacobi update of the paper leaves pairs 2–4 near 0.42–0.45
/// (the crowded inner rates whose gaps it cannot reopen, see nrpt_core::adapt; pair 3
/// averages 0.44 and its largest of 8 seeds reaches 0.4625), which is why ±0.03 per
/// pair is asked of the in-place update only (next test).
#[test]
fn paper_rules_on_the_toy() {
    let seeds = 0..8;
    for (window, band) in [(1u32, 15.7..16.7), (8, 40.6..42.4)] {
        let runs: Vec<Toy> = seeds
            .clone()
            .map(|s| run_toy(Rules::PAPER, window, s, 20_000))
            .collect();
        let trips = mean(runs.iter().map(|r| r.trips));
        assert!(
            band.contains(&trips),
            "W = {window}: {trips} not in {band:?}"
        );
        for (i, r) in runs.iter().enumerate() {
            let avg = mean(r.rates.iter().copied());
            assert!(
                (avg - 0.4).abs() < 0.01,
                "W {window} seed {i}: mean rate {avg}"
            );
            for (l, &rate) in r.rates.iter().enumerate() {
                assert!(
                    (rate - 0.4).abs() < 0.07,
                    "W {window} seed {i} pair {l}: {rate}"
                );
            }
            // The buffer has settled: from 4 at the start, it moves by less than 0.2
            // over the last quarter (measured 0.09–0.13) and ends between 0.2 and 0.5.
            let (lo, hi, last) = r.buffer;
            assert!(
                hi - lo < 0.2 && (0.2..0.5).contains(&last),
                "C {:?}",
                r.buffer
            );
            assert_eq!((r.ladder[0], r.ladder[15]), (0.003, 0.6));
        }
    }
}

/// The in-place ladder (nrpt 0.1) brings every pair to within ±0.03 of S.
#[test]
fn in_place_ladder_equalizes_every_pair() {
    let rules = Rules {
        ladder_update: LadderUpdate::InPlace,
        ..Rules::PAPER
    };
    for seed in 0..4 {
        let r = run_toy(rules, 8, seed, 20_000);
        for (l, &rate) in r.rates.iter().enumerate() {
            assert!((rate - 0.4).abs() < 0.03, "seed {seed} pair {l}: {rate}");
        }
        assert!(r.ladder.windows(2).all(|w| w[0] <= w[1]), "{:?}", r.ladder);
    }
}

/// The shared-batch energies need an oracle that reports its loss: a toy target is
/// refused when the driver is built (and when it resumes), and the rule cannot be
/// combined with fresh energies per pair test.
#[test]
fn shared_batch_energies_need_a_data_target() {
    let rules = Rules {
        step_energy: StepEnergy::SharedBatchBeforeStep,
        ..Rules::PAPER
    };
    let mut b = Owned::<f32>::new(16, 2);
    let opts = TemperingOptions { rules, ..toy(1, 0) };
    assert!(matches!(
        Tempering::new(opts, Noisy::paper(Modes2d), b.lend()),
        Err(Error::Unsupported { .. })
    ));
    let both = Rules {
        pair_energies: PairEnergies::FreshPerTest,
        ..rules
    };
    assert!(matches!(both.validate(), Err(Error::Unsupported { .. })));
    assert!(Rules::AUTHORS_DEEP_CODE.validate().is_ok());
}

/// The authors'-code preset lands on its own figures, away from the paper's rules.
/// Measured over 16 seeds, in the authors' counting per 1000 iterations: 18.4 ± 0.65
/// (W = 1) and 42.4 ± 0.6 (W = 8), against 19.9 and 44.0 with the paper's rules. Their
/// notebook printed 17.4 and 43.75 from one run each (its W = 8 run started from the
/// ladder its W = 1 run had adapted).
#[test]
fn authors_preset_on_the_toy() {
    for (window, band) in [(1u32, 17.9..18.9), (8, 42.0..43.3)] {
        let trips =
            mean((0..8).map(|s| run_toy(Rules::AUTHORS_CODE, window, s, 20_000).authors_trips));
        assert!(
            band.contains(&trips),
            "W = {window}: {trips} not in {band:?}"
        );
    }
}

/// Vanilla DEO against the solver's window at equal cost, and the shape Lemma 1
/// predicts, on a shorter run (a cheap guard for every seed).
#[test]
fn optimal_window_beats_vanilla_deo_on_the_toy() {
    for seed in 10..12 {
        let w1 = run_toy(Rules::PAPER, 1, seed, 10_000).trips;
        let w8 = run_toy(Rules::PAPER, 8, seed, 10_000).trips;
        assert!(w8 > 2.0 * w1, "seed {seed}: W=8 {w8} vs W=1 {w1}");
    }
}

#[test]
fn adaptation_keeps_the_ends_fixed_and_the_target_mixing() {
    let mut b = Owned::<f64>::new(16, 2);
    let mut t = Tempering::new(toy(8, 7), Noisy::paper(Modes2d), b.lend()).unwrap();
    let mut centre = 0u64;
    for _ in 0..5_000 {
        t.step().unwrap();
        let x = t.target_state();
        centre += u64::from(x[0].abs() < 0.5 && x[1].abs() < 0.5);
        let ladder = t.storage().ladder();
        assert_eq!((ladder[0], ladder[15]), (0.003, 0.6));
        assert!(ladder.iter().all(|&e| e > 0.0 && e.is_finite()));
    }
    assert!(t.buffer().is_finite() && t.buffer() >= 0.0);
    // The centre mode holds about 1/9 of the mass; anything between 2% and 40% says
    // the target level samples the target rather than sitting in one mode.
    let share = centre as f64 / 5_000.0;
    assert!((0.02..0.4).contains(&share), "centre share {share}");
}

#[test]
fn same_seed_same_run_and_fixed_owner_agrees_with_slices() {
    let opts = toy(8, 3);
    let mut b = Owned::<f32>::new(16, 2);
    let mut t = Tempering::new(opts, Noisy::paper(Modes2d), b.lend()).unwrap();
    let mut f = FixedTempering::<f32, _, 16, 2>::new(opts, Noisy::paper(Modes2d)).unwrap();
    for _ in 0..3_000 {
        let a = t.step().unwrap();
        let c = f.step().unwrap();
        assert_eq!(a, c);
    }
    assert_eq!(t.stats(), f.stats());
    assert_eq!(t.storage().ladder(), f.ladder().as_slice());
    assert_eq!(t.storage().pair_stats(), f.pair_stats());
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
        let mut b = Owned::<f64>::new(8, 5);
        let mut t = Tempering::new(opts, Noisy::exact(SumModes { dim: 5 }), b.lend()).unwrap();
        t.run(2_000).unwrap();
        let swaps: u64 = t.storage().pair_stats().iter().map(|p| p.swaps).sum();
        assert!(swaps > 0, "{rule:?} {explorer:?} {temperatures:?}");
        assert!(
            t.storage().states().iter().all(|x| x.is_finite()),
            "{rule:?} {explorer:?} {temperatures:?} {:?}",
            t.storage().ladder()
        );
        if temperatures == Temperatures::FollowLadder {
            let s = t.storage();
            for l in 0..8 {
                assert!((s.temperatures()[l] - s.ladder()[l] / s.ladder()[0]).abs() < 1e-12);
            }
        }
    }
}

/// U(x) = |x|²/2, except that a state with x₀ ≥ 100 has a NaN energy and no gradient:
/// a replica put there stays there and can never be compared.
#[derive(Clone, Copy)]
struct Poisoned;

impl Potential<f64> for Poisoned {
    fn dim(&self) -> usize {
        2
    }
    fn energy(&self, x: &[f64]) -> f64 {
        if x[0] >= 100.0 {
            f64::NAN
        } else {
            0.5 * (x[0] * x[0] + x[1] * x[1])
        }
    }
    fn gradient(&self, x: &[f64], grad: &mut [f64]) {
        let far = x[0] >= 100.0;
        for (g, &xi) in grad.iter_mut().zip(x) {
            *g = if far { 0.0 } else { xi };
        }
    }
}

/// A replica whose energy is NaN never wins (or loses) a swap: it stays at its level
/// for the whole run, with both energies per level and fresh energies per pair test;
/// every test that touches it is flagged and counted.
#[test]
fn a_replica_with_nonfinite_energy_never_swaps() {
    for rules in [Rules::PAPER, Rules::AUTHORS_CODE] {
        let opts = TemperingOptions {
            init: InitialStates::Keep,
            scheme: Scheme::VANILLA_DEO,
            rules,
            ladder_min: 0.01,
            ladder_max: 0.5,
            ..toy(1, 3)
        };
        let mut b = Owned::<f64>::new(6, 2);
        for (r, x) in b.states.chunks_mut(2).enumerate() {
            x[0] = if r == 2 { 1000.0 } else { 0.1 * r as f64 };
        }
        let oracle = Noisy::new(Poisoned, 0.5, 0.5).unwrap();
        let mut t = Tempering::new(opts, oracle, b.lend()).unwrap();
        let mut swaps = 0;
        for _ in 0..2_000 {
            let report = t.step().unwrap();
            swaps += report.swaps;
            assert_eq!(t.storage().level_of()[2], 2, "{rules:?}");
            // Pairs (1, 2) and (2, 3) touch it: flagged, never swapped.
            for pair in [1, 2] {
                let f = t.storage().flags()[pair];
                assert_eq!(f & flags::NONFINITE, flags::NONFINITE);
                assert_eq!(f & (flags::INDICATOR | flags::SWAPPED), 0);
            }
        }
        // The other replicas do swap, and every non-finite value was counted.
        assert!(swaps > 100, "{rules:?}: {swaps}");
        let ps = t.storage().pair_stats();
        assert_eq!((ps[1].nonfinite, ps[2].nonfinite), (2_000, 2_000));
        let per_iteration = if rules == Rules::PAPER { 1 } else { 2 };
        assert_eq!(t.stats().nonfinite_energies, 2_000 * per_iteration);
    }
}

/// Learning rates far too large blow states up to infinity and NaN: counted, flagged,
/// and the run goes on without a panic.
#[test]
fn diverging_explorers_are_counted() {
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
    let mut b = Owned::<f32>::new(4, 2);
    let mut t = Tempering::new(opts, Noisy::paper(Modes2d), b.lend()).unwrap();
    t.run(200).unwrap();
    assert!(t.stats().nonfinite_energies > 0);
    let flagged: u64 = t.storage().pair_stats().iter().map(|p| p.nonfinite).sum();
    assert!(flagged > 0);
}

/// Momentum explorers: by default both replicas of a swap restart with zero velocity
/// (the authors' code re-creates their optimizers); `MomentumOnSwap::Carry` keeps it.
#[test]
fn momentum_is_reset_on_a_swap_unless_carried() {
    for carry in [false, true] {
        let opts = TemperingOptions {
            explorer: Explorer::MSGD,
            scheme: Scheme::Deo { window: 2 },
            ladder_min: 0.001,
            ladder_max: 0.02,
            rules: Rules {
                momentum_on_swap: if carry {
                    MomentumOnSwap::Carry
                } else {
                    MomentumOnSwap::Reset
                },
                ..Rules::PAPER
            },
            ..toy(2, 5)
        };
        let mut b = Owned::<f64>::new(6, 3);
        let oracle = Noisy::new(SumModes { dim: 3 }, 1.0, 1.0).unwrap();
        let mut t = Tempering::new(opts, oracle, b.lend()).unwrap();
        let (mut swapped, mut moving) = (0, 0);
        for _ in 0..3_000 {
            t.step().unwrap();
            let s = t.storage();
            for (pair, &f) in s.flags().iter().enumerate() {
                if f & flags::SWAPPED != 0 {
                    for level in [pair, pair + 1] {
                        let r = s.replica_at()[level] as usize;
                        let v = &s.momenta()[3 * r..3 * r + 3];
                        swapped += 1;
                        moving += usize::from(v.iter().any(|&vi| vi != 0.0));
                    }
                }
            }
        }
        assert!(swapped > 100, "{swapped}");
        if carry {
            assert_eq!(moving, swapped, "carried velocities are never exactly zero");
        } else {
            assert_eq!(moving, 0);
        }
    }
}

/// An oracle that fails at its `fail_at`-th gradient evaluation.
#[derive(Clone, Debug)]
struct Flaky {
    calls: u32,
    fail_at: u32,
}

#[derive(Clone, Debug, PartialEq)]
struct DataLost(u32);

impl EnergyOracle<f64> for Flaky {
    type Error = DataLost;
    fn dim(&self) -> usize {
        2
    }
    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[f64],
        grad: &mut [f64],
        _rng: &mut R,
    ) -> Result<(), DataLost> {
        self.calls += 1;
        if self.calls == self.fail_at {
            return Err(DataLost(self.calls));
        }
        grad.copy_from_slice(x);
        Ok(())
    }
    fn energy<R: Rng + ?Sized>(&mut self, x: &[f64], _rng: &mut R) -> Result<f64, DataLost> {
        Ok(0.5 * (x[0] * x[0] + x[1] * x[1]))
    }
}

/// An oracle error in the middle of an iteration (replicas half-stepped) stops the
/// sampler: that call and every later one return the error, nothing moves on.
#[test]
fn a_failing_oracle_stops_the_sampler() {
    let mut b = Owned::<f64>::new(4, 2);
    // Fails at the 2nd replica of iteration 3 (4 gradients per iteration).
    let oracle = Flaky {
        calls: 0,
        fail_at: 4 * 3 + 2,
    };
    let mut t = Tempering::new(toy(2, 1), oracle, b.lend()).unwrap();
    t.run(3).unwrap();
    assert_eq!(t.step(), Err(DataLost(14)));
    let (states, stats) = (t.storage().states().to_vec(), t.stats());
    assert_eq!(t.failure(), Some(&DataLost(14)));
    assert_eq!(t.step(), Err(DataLost(14)));
    assert_eq!(t.explore(), Err(DataLost(14)));
    assert_eq!(t.exchange().err(), Some(DataLost(14)));
    assert_eq!(t.run(5), Err(DataLost(14)));
    assert_eq!(t.iteration(), 3);
    assert_eq!(t.storage().states(), states.as_slice());
    assert_eq!(t.stats(), stats);
    assert_eq!(t.oracle().calls, 14, "the oracle is not called again");
}

#[test]
fn bad_input_gets_a_typed_error() {
    let oracle = Noisy::paper(Modes2d);
    let mut b = Owned::<f64>::new(1, 2);
    let e = Tempering::new(toy(8, 0), oracle, b.lend()).err();
    assert_eq!(e, Some(Error::TooFewChains { chains: 1 }));

    let mut b = Owned::<f64>::new(4, 2);
    let e = Tempering::new(toy(0, 0), oracle, b.lend()).err();
    assert_eq!(e, Some(Error::ZeroWindow));

    for s in [0.0, 1.0, -0.2, f64::NAN] {
        let mut o = toy(2, 0);
        o.adapt.target_swap_rate = s;
        let mut b = Owned::<f64>::new(4, 2);
        let e = Tempering::new(o, oracle, b.lend()).err();
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
        let mut b = Owned::<f64>::new(4, 2);
        let e = Tempering::new(o, oracle, b.lend()).err();
        assert!(
            matches!(e, Some(Error::LadderEnds { .. })),
            "{min} {max}: {e:?}"
        );
    }

    let o = TemperingOptions {
        initial_buffer: f64::NAN,
        ..toy(2, 0)
    };
    let mut b = Owned::<f64>::new(4, 2);
    assert!(matches!(
        Tempering::new(o, oracle, b.lend()).err(),
        Some(Error::InvalidValue {
            name: "initial_buffer",
            ..
        })
    ));

    let o = TemperingOptions {
        rule: SwapRule::Metropolis,
        ..toy(2, 0)
    };
    let mut b = Owned::<f64>::new(4, 2);
    assert!(matches!(
        Tempering::new(o, oracle, b.lend()).err(),
        Some(Error::InvalidValue {
            name: "temperatures",
            ..
        })
    ));

    // Buffer lengths that do not match P or D.
    let mut b = Owned::<f64>::new(4, 2);
    b.states.pop();
    assert!(matches!(
        Tempering::new(toy(2, 0), oracle, b.lend()).err(),
        Some(Error::LengthMismatch {
            name: "states",
            expected: 8,
            found: 7
        })
    ));
    let mut b = Owned::<f64>::new(4, 3);
    assert!(matches!(
        Tempering::new(toy(2, 0), oracle, b.lend()).err(),
        Some(Error::LengthMismatch { .. })
    ));
    let mut b = Owned::<f64>::new(4, 2);
    b.gates.push(true);
    assert!(matches!(
        Tempering::new(toy(2, 0), oracle, b.lend()).err(),
        Some(Error::LengthMismatch { name: "gates", .. })
    ));
    let mut b = Owned::<f64>::new(4, 2);
    b.momenta.clear();
    let o = TemperingOptions {
        explorer: Explorer::MSGD,
        ..toy(2, 0)
    };
    assert!(matches!(
        Tempering::new(o, oracle, b.lend()).err(),
        Some(Error::LengthMismatch {
            name: "momenta",
            ..
        })
    ));
    // The fixed owner checks the oracle's dimension.
    let e = FixedTempering::<f64, _, 4, 3>::new(toy(2, 0), oracle).err();
    assert!(matches!(e, Some(Error::LengthMismatch { .. })));
}

/// A run stopped after k iterations and resumed from its buffers and progress gives
/// the same bits as the run that never stopped; an inconsistent state is refused.
#[test]
fn a_resumed_run_is_the_uninterrupted_run() {
    let opts = TemperingOptions {
        explorer: Explorer::MSGD,
        ..toy(3, 9)
    };
    let mut whole = Owned::<f32>::new(6, 2);
    let (want_states, want_stats) = {
        let mut t = Tempering::new(opts, Noisy::paper(Modes2d), whole.lend()).unwrap();
        t.run(700).unwrap();
        (t.storage().states().to_vec(), t.stats())
    };

    let mut first = Owned::<f32>::new(6, 2);
    let progress = {
        let mut t = Tempering::new(opts, Noisy::paper(Modes2d), first.lend()).unwrap();
        t.run(300).unwrap();
        t.progress()
    };
    // The saved buffers, copied into fresh memory (as a checkpoint would restore them).
    let mut copy = Owned::<f32>::new(6, 2);
    copy.states.clone_from(&first.states);
    copy.momenta.clone_from(&first.momenta);
    copy.energies.clone_from(&first.energies);
    copy.ladder.clone_from(&first.ladder);
    copy.temperatures.clone_from(&first.temperatures);
    copy.replica_at.clone_from(&first.replica_at);
    copy.level_of.clone_from(&first.level_of);
    copy.trips.clone_from(&first.trips);
    copy.gates.clone_from(&first.gates);
    copy.flags.clone_from(&first.flags);
    copy.pair_stats.clone_from(&first.pair_stats);
    let mut t = Tempering::resume(opts, Noisy::paper(Modes2d), copy.lend(), progress).unwrap();
    t.run(400).unwrap();
    assert_eq!(t.iteration(), 700);
    assert_eq!(t.stats(), want_stats);
    assert_eq!(t.storage().states(), want_states.as_slice());

    let mut broken = Owned::<f32>::new(6, 2);
    broken.replica_at.clone_from(&first.replica_at);
    broken.level_of.clone_from(&first.level_of);
    broken.ladder.clone_from(&first.ladder);
    broken.level_of.swap(0, 1);
    assert!(Tempering::resume(opts, Noisy::paper(Modes2d), broken.lend(), progress).is_err());
}
