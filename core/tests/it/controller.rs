//! The swap controller makes the driver's decisions: a [`Controller`] told the energies
//! that a [`Tempering`] run computed (by replica) swaps the same replicas, adapts the
//! ladder and the buffer to the same bits and counts the same round trips, for every
//! rule it accepts, in `f32` and `f64`, across resumes; and a caller that explores its
//! own states with [`explore_replica`] reproduces the whole run.

use nrpt_core::driver::{
    Controller, InitialStates, NonfinitePairs, ReplicaError, ReplicaStep, Temperatures, Tempering,
    TemperingOptions, explore_replica, initial_state,
};
use nrpt_core::error::Error;
use nrpt_core::explore::Explorer;
use nrpt_core::index::IndexStats;
use nrpt_core::rng::{Rng, UnitDraw};
use nrpt_core::rules::{
    BufferProjection, InitialLadder, LadderUpdate, MomentumOnSwap, PairEnergies, Rules, SweepOrder,
};
use nrpt_core::swap::{SwapRule, flags};
use nrpt_core::target::{EnergyOracle, Modes2d, Noisy, SumModes};
use nrpt_core::window::Scheme;

use crate::common;
use common::{Owned as Run, OwnedController as Ctl};

fn bits<F: UnitDraw>(v: &[F]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn bits64(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// An oracle whose every 11th energy is not finite (NaN, +∞, −∞ in turn): the
/// controller must count and refuse them exactly as the driver does.
#[derive(Clone, Debug)]
struct Flaky<O> {
    inner: O,
    calls: u64,
}

impl<F: UnitDraw, O: EnergyOracle<F>> EnergyOracle<F> for Flaky<O> {
    type Error = O::Error;
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[F],
        grad: &mut [F],
        rng: &mut R,
    ) -> Result<(), O::Error> {
        self.inner.gradient(x, grad, rng)
    }
    fn gaussian_gradient(&mut self, x: &[F], grad: &mut [F]) -> Result<Option<f64>, O::Error> {
        self.inner.gaussian_gradient(x, grad)
    }
    fn energy<R: Rng + ?Sized>(&mut self, x: &[F], rng: &mut R) -> Result<F, O::Error> {
        let e = self.inner.energy(x, rng)?;
        self.calls += 1;
        Ok(match (self.calls % 11, self.calls / 11 % 3) {
            (0, 0) => F::from_f64(f64::NAN),
            (0, 1) => F::from_f64(f64::INFINITY),
            (0, _) => F::from_f64(f64::NEG_INFINITY),
            _ => e,
        })
    }
}

/// Runs `iterations` of a driver and, beside it, a controller told the driver's
/// energies by replica; every buffer, count and report must agree after every
/// iteration. The controller is taken apart and resumed every `resume_every`
/// iterations. Returns the driver's counts (so callers can see the run did something).
fn same_decisions<F, O>(
    options: TemperingOptions,
    oracle: O,
    p: usize,
    iterations: u64,
) -> IndexStats
where
    F: UnitDraw,
    O: EnergyOracle<F>,
    O::Error: core::fmt::Debug,
{
    let d = oracle.dim();
    let mut run = Run::<F>::new(p, d);
    let mut t = Tempering::new(options, oracle, run.lend()).expect("driver");
    let mut ctl_buffers = Ctl::<F>::new(p);
    let mut progress = None;
    let resume_every = 37;
    let mut told = vec![F::ZERO; p];
    for k in 0..iterations {
        // A controller lives over its buffers; take it apart and resume it now and then
        // (as a Python object or a checkpoint does) to prove resume is exact.
        let mut c = match progress {
            None => Controller::new(options, ctl_buffers.lend()).expect("controller"),
            Some(pr) => Controller::resume(options, ctl_buffers.lend(), pr).expect("resume"),
        };
        if k == 0 {
            assert_eq!(bits64(t.storage().ladder()), bits64(c.buffers().ladder()));
            assert_eq!(
                bits64(t.storage().temperatures()),
                bits64(c.buffers().temperatures())
            );
        }
        loop {
            let k = c.iteration();
            t.explore().expect("explore");
            let s = t.storage();
            for (r, e) in told.iter_mut().enumerate() {
                *e = s.energies()[s.level_of()[r] as usize];
            }
            let rt = t.exchange().expect("exchange");
            let rc = c.tell(&told).expect("tell");
            assert_eq!(rt, rc, "report at iteration {k}");
            let (s, cs) = (t.storage(), c.buffers());
            assert_eq!(s.replica_at(), cs.replica_at(), "replica_at at {k}");
            assert_eq!(s.level_of(), cs.level_of(), "level_of at {k}");
            assert_eq!(s.flags(), cs.flags(), "flags at {k}");
            assert_eq!(s.gates(), cs.gates(), "gates at {k}");
            assert_eq!(s.trips(), cs.trips(), "trips at {k}");
            assert_eq!(s.pair_stats(), cs.pair_stats(), "pair counts at {k}");
            assert_eq!(bits64(s.ladder()), bits64(cs.ladder()), "ladder at {k}");
            assert_eq!(
                bits64(s.temperatures()),
                bits64(cs.temperatures()),
                "temperatures at {k}"
            );
            assert_eq!(bits(s.energies()), bits(cs.energies()), "energies at {k}");
            let (pt, pc) = (t.progress(), c.progress());
            assert_eq!(pt.iteration, pc.iteration);
            assert_eq!(pt.buffer.to_bits(), pc.buffer.to_bits(), "buffer at {k}");
            assert_eq!(pt.stats, pc.stats, "counts at {k}");
            // Momentum: the driver zeroed exactly the velocities the controller says to
            // reset (when the rules reset them).
            let reset = options.rules.momentum_on_swap == MomentumOnSwap::Reset;
            for r in 0..p {
                let level = s.level_of()[r] as usize;
                let swapped = (level > 0 && s.flags()[level - 1] & flags::SWAPPED != 0)
                    || (level < p - 1 && s.flags()[level] & flags::SWAPPED != 0);
                assert_eq!(c.swapped(r), swapped, "replica {r} at {k}");
                assert_eq!(c.momentum_reset(r), swapped && reset, "replica {r} at {k}");
                assert_eq!(c.learning_rate(r), Some(s.ladder()[level]));
                assert_eq!(c.temperature(r), Some(s.temperatures()[level]));
                if options.explorer.has_momentum() && reset && swapped {
                    assert!(
                        s.momenta()[r * d..(r + 1) * d]
                            .iter()
                            .all(|v| *v == F::ZERO),
                        "replica {r} kept its velocity at {k}"
                    );
                }
            }
            if c.iteration() >= iterations || c.iteration() % resume_every == 0 {
                break;
            }
        }
        progress = Some(c.progress());
        let _ = c.into_buffers();
        if progress.is_some_and(|p| p.iteration >= iterations) {
            break;
        }
    }
    assert_eq!(t.iteration(), iterations);
    t.stats()
}

fn toy(window: u32, seed: u32) -> TemperingOptions {
    TemperingOptions {
        scheme: Scheme::Deo { window },
        seed,
        ..TemperingOptions::default()
    }
}

#[test]
fn the_paper_rules_in_f32_and_f64() {
    for (window, seed) in [(8, 0), (1, 1), (7, 2), (2, 3)] {
        let stats = same_decisions::<f32, _>(toy(window, seed), Noisy::paper(Modes2d), 16, 3_000);
        assert!(stats.round_trips > 10, "W {window}: {stats:?}");
        assert!(stats.authors_round_trips > 10, "W {window}: {stats:?}");
        same_decisions::<f64, _>(toy(window, seed), Noisy::paper(Modes2d), 16, 1_500);
    }
}

#[test]
fn seo_and_other_chain_counts() {
    let seo = TemperingOptions {
        scheme: Scheme::Seo,
        ..toy(1, 4)
    };
    same_decisions::<f32, _>(seo, Noisy::paper(Modes2d), 16, 1_000);
    for p in [2, 3, 5, 9] {
        let oracle = Noisy {
            potential: SumModes { dim: 3 },
            gradient_noise: 1.0,
            energy_noise: 1.0,
        };
        same_decisions::<f64, _>(toy(3, p as u32), oracle, p, 800);
    }
}

#[test]
fn every_variant_of_the_rules_a_controller_accepts() {
    let variants = [
        Rules {
            sweep_order: SweepOrder::Sequential,
            ..Rules::PAPER
        },
        Rules {
            ladder_update: LadderUpdate::InPlace,
            ..Rules::PAPER
        },
        Rules {
            buffer_projection: BufferProjection::Unprojected,
            initial_ladder: InitialLadder::RoundedGeometric {
                decimals: 3,
                unit: 1,
            },
            ..Rules::PAPER
        },
        // The authors' code with one energy per level: everything else of the preset.
        Rules {
            pair_energies: PairEnergies::PerLevel,
            ..Rules::AUTHORS_CODE
        },
    ];
    for (i, rules) in variants.into_iter().enumerate() {
        let options = TemperingOptions {
            rules,
            ..toy(8, 10 + i as u32)
        };
        same_decisions::<f32, _>(options, Noisy::paper(Modes2d), 16, 1_500);
    }
}

#[test]
fn metropolis_with_known_temperatures() {
    for (temperatures, adapt) in [
        (Temperatures::FollowLadder, true),
        (Temperatures::Geometric { max: 20.0 }, true),
        (Temperatures::Constant(2.0), false),
    ] {
        let mut options = TemperingOptions {
            rule: SwapRule::Metropolis,
            temperatures,
            ..toy(4, 21)
        };
        options.adapt.adapt_ladder = adapt;
        same_decisions::<f64, _>(options, Noisy::paper(Modes2d), 8, 1_500);
        same_decisions::<f32, _>(options, Noisy::paper(Modes2d), 8, 1_500);
    }
}

#[test]
fn momentum_explorers_reset_or_carry() {
    for momentum_on_swap in [MomentumOnSwap::Reset, MomentumOnSwap::Carry] {
        let options = TemperingOptions {
            explorer: Explorer::MSGD,
            ladder_min: 0.001,
            ladder_max: 0.05,
            rules: Rules {
                momentum_on_swap,
                ..Rules::PAPER
            },
            ..toy(5, 30)
        };
        same_decisions::<f32, _>(options, Noisy::paper(Modes2d), 10, 1_500);
    }
}

#[test]
fn non_finite_energies_are_counted_and_never_swap() {
    let oracle = Flaky {
        inner: Noisy::paper(Modes2d),
        calls: 0,
    };
    let options = toy(3, 40);
    for stats in [
        same_decisions::<f32, _>(options, oracle.clone(), 16, 1_000),
        same_decisions::<f64, _>(options, oracle, 16, 1_000),
    ] {
        assert!(stats.nonfinite_energies > 1_000, "{stats:?}");
        assert!(stats.round_trips > 0, "{stats:?}");
    }
}

/// With [`NonfinitePairs::Exclude`], iterations of non-finite energies leave the
/// ladder and the buffer where they were; finite iterations make the default's
/// decisions bit for bit; the non-finite pairs are still counted.
#[test]
fn excluded_non_finite_pairs_do_not_move_the_adaptation() {
    const P: usize = 6;
    let options = toy(4, 7);
    let (mut a, mut b) = (Ctl::<f64>::new(P), Ctl::<f64>::new(P));
    let mut plain = Controller::new(options, a.lend()).unwrap();
    let mut excl = Controller::new(options, b.lend()).unwrap();
    excl.set_nonfinite_pairs(NonfinitePairs::Exclude);
    assert_eq!(plain.nonfinite_pairs(), NonfinitePairs::Adapt);
    let energies = |k: u64| -> [f64; P] {
        core::array::from_fn(|r| ((k * 7 + 3 * r as u64) % 11) as f64 * 0.3)
    };
    for k in 0..60 {
        let e = energies(k);
        plain.tell(&e).unwrap();
        excl.tell(&e).unwrap();
    }
    assert_eq!(
        bits64(plain.buffers().ladder()),
        bits64(excl.buffers().ladder())
    );
    assert_eq!(plain.buffer().to_bits(), excl.buffer().to_bits());
    // Fifty all-NaN tells: the ladder and the buffer stay; counted by pair.
    let (ladder, buffer) = (excl.buffers().ladder().to_vec(), excl.buffer());
    for _ in 0..50 {
        let r = excl.tell(&[f64::NAN; P]).unwrap();
        assert_eq!(r.nonfinite_pairs, (P - 1) as u32);
        assert_eq!(r.swaps, 0);
    }
    assert_eq!(bits64(excl.buffers().ladder()), bits64(&ladder));
    assert_eq!(excl.buffer().to_bits(), buffer.to_bits());
    assert!(
        excl.buffers()
            .pair_stats()
            .iter()
            .all(|s| s.nonfinite == 50)
    );
    assert_eq!(excl.stats().nonfinite_energies, 50 * P as u64);
    // The default lets them push the buffer down.
    let before = plain.buffer();
    for _ in 0..50 {
        plain.tell(&[f64::NAN; P]).unwrap();
    }
    assert!(plain.buffer() < before, "{} -> {}", before, plain.buffer());
    // One diverged replica: the pairs beside it are left out, the others adapt.
    let mut e = energies(3);
    e[0] = f64::INFINITY;
    let ladder = excl.buffers().ladder().to_vec();
    excl.tell(&e).unwrap();
    assert_ne!(bits64(excl.buffers().ladder()), bits64(&ladder));
}

#[test]
fn without_adaptation() {
    let mut options = toy(6, 50);
    options.adapt.adapt_ladder = false;
    options.adapt.adapt_buffer = false;
    same_decisions::<f64, _>(options, Noisy::paper(Modes2d), 12, 1_000);
}

/// The ask/tell loop a user writes: states kept by the caller, stepped with the
/// driver's own exploration of one replica at the learning rate and temperature the
/// controller gives, energies told by replica. States and decisions are those of the
/// driver, bit for bit.
#[test]
fn a_caller_that_explores_reproduces_the_driver() {
    for options in [
        toy(7, 60),
        TemperingOptions {
            explorer: Explorer::MSGD,
            ladder_min: 0.001,
            ladder_max: 0.05,
            ..toy(5, 61)
        },
    ] {
        let (p, oracle) = (16, Noisy::paper(Modes2d));
        let d = 2;
        let mut run = Run::<f32>::new(p, d);
        let mut t = Tempering::new(options, oracle, run.lend()).unwrap();
        let mut cb = Ctl::<f32>::new(p);
        let mut c = Controller::new(options, cb.lend()).unwrap();
        let mut oracle = oracle;
        let mut states = vec![0.0f32; p * d];
        let mut momenta = vec![0.0f32; p * d];
        let mut scratch = vec![0.0f32; 2 * d];
        for (r, x) in states.chunks_mut(d).enumerate() {
            initial_state(&options, r as u32, x);
        }
        assert_eq!(bits(&states), bits(t.storage().states()));
        let mut energies = vec![0.0f32; p];
        for k in 0..3_000u64 {
            for r in 0..p {
                let step = ReplicaStep {
                    iteration: k,
                    replica: r as u32,
                    eta: c.learning_rate(r).unwrap(),
                    temperature: c.temperature(r).unwrap(),
                };
                let (x, v) = (
                    &mut states[r * d..(r + 1) * d],
                    &mut momenta[r * d..(r + 1) * d],
                );
                let e = explore_replica(&options, &mut oracle, step, x, v, &mut scratch, true);
                energies[r] = e.unwrap().unwrap();
            }
            c.tell(&energies).unwrap();
            for r in 0..p {
                if options.explorer.has_momentum() && c.momentum_reset(r) {
                    momenta[r * d..(r + 1) * d].fill(0.0);
                }
            }
            t.step().unwrap();
            assert_eq!(bits(&states), bits(t.storage().states()), "states at {k}");
            assert_eq!(
                bits(&momenta),
                bits(t.storage().momenta()),
                "momenta at {k}"
            );
            assert_eq!(t.storage().replica_at(), c.buffers().replica_at());
            assert_eq!(bits64(t.storage().ladder()), bits64(c.buffers().ladder()));
        }
        assert_eq!(t.stats(), c.stats());
        assert!(c.stats().round_trips > 0);
    }
}

#[test]
fn refusals_are_errors_that_change_nothing() {
    // The authors' code draws fresh energies for every pair test: not ask/tell.
    let mut cb = Ctl::<f64>::new(16);
    let authors = TemperingOptions {
        rules: Rules::AUTHORS_CODE,
        ..toy(8, 0)
    };
    match Controller::new(authors, cb.lend()) {
        Err(Error::Unsupported { what }) => assert!(what.contains("fresh energies"), "{what}"),
        other => panic!("{other:?}"),
    }
    // P < 2.
    let mut one = Ctl::<f64>::new(1);
    assert_eq!(
        Controller::new(toy(8, 0), one.lend()).err(),
        Some(Error::TooFewChains { chains: 1 })
    );
    // Buffers of the wrong length.
    let mut bad = Ctl::<f64>::new(4);
    bad.gates.pop();
    assert!(matches!(
        Controller::new(toy(8, 0), bad.lend()),
        Err(Error::LengthMismatch { name: "gates", .. })
    ));
    // Bad options are the driver's errors.
    let zero_window = TemperingOptions {
        scheme: Scheme::Deo { window: 0 },
        ..toy(8, 0)
    };
    assert_eq!(
        Controller::new(zero_window, cb.lend()).err(),
        Some(Error::ZeroWindow)
    );
    // Energies of the wrong length change nothing.
    let mut c = Controller::new(toy(1, 0), cb.lend()).unwrap();
    c.tell(&[1.0; 16]).unwrap();
    let before = (c.progress(), c.buffers().replica_at().to_vec());
    let e = c.tell(&[0.0; 15]).unwrap_err();
    assert_eq!(
        e,
        Error::LengthMismatch {
            name: "energies",
            expected: 16,
            found: 15
        }
    );
    assert_eq!(
        e.to_string(),
        "buffer `energies` must have length 16, got 15"
    );
    assert_eq!((c.progress(), c.buffers().replica_at().to_vec()), before);
    // A resumed controller checks its state.
    let progress = c.progress();
    let _ = c.into_buffers();
    cb.level_of.swap(0, 1);
    assert!(Controller::resume(toy(1, 0), cb.lend(), progress).is_err());
    // The explorer and the initial states of the options are not the controller's.
    let kept = TemperingOptions {
        init: InitialStates::Keep,
        explorer: Explorer::MSGD,
        ..toy(8, 0)
    };
    let mut fresh = Ctl::<f32>::new(16);
    let c = Controller::new(kept, fresh.lend()).unwrap();
    assert_eq!(c.options().explorer, Explorer::MSGD);
    assert_eq!(c.buffers().states(), &[] as &[f32]);
}

#[test]
fn explore_replica_refuses_buffers_of_the_wrong_length() {
    let msgd = TemperingOptions {
        explorer: Explorer::MSGD,
        ..toy(1, 0)
    };
    let mut oracle = Noisy::paper(Modes2d);
    let step = ReplicaStep {
        iteration: 0,
        replica: 0,
        eta: 0.01,
        temperature: 1.0,
    };
    let (mut x, mut v, mut scratch) = ([0.5f64; 2], [0.0f64; 2], [0.0f64; 4]);
    let mut call = |o: &TemperingOptions, x: &mut [f64], v: &mut [f64], s: &mut [f64]| {
        explore_replica(o, &mut oracle, step, x, v, s, true)
    };
    let name = |r: Result<Option<f64>, ReplicaError<_>>| match r {
        Err(ReplicaError::Buffers(Error::LengthMismatch { name, .. })) => name,
        other => panic!("{other:?}"),
    };
    assert_eq!(name(call(&msgd, &mut x[..1], &mut v, &mut scratch)), "x");
    assert_eq!(
        name(call(&msgd, &mut x, &mut v, &mut scratch[..3])),
        "scratch"
    );
    assert_eq!(name(call(&msgd, &mut x, &mut [], &mut scratch)), "v");
    // Nothing was touched; then the right buffers step (Langevin needs no velocity).
    assert_eq!(x, [0.5; 2]);
    let e = call(&toy(1, 0), &mut x, &mut [], &mut scratch).unwrap();
    assert!(e.is_some_and(f64::is_finite) && x != [0.5; 2]);
    let e = call(&msgd, &mut x, &mut v, &mut [0.0; 5]).unwrap();
    assert!(e.is_some());
}
