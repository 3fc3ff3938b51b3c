//! The lane exchange against the scalar driver: L ensembles stored by level, told the
//! energies each driver explored, end every iteration with the drivers' ladders,
//! buffers, permutations, trip states, gates, flags and counts, bit for bit.

use crate::common;

use nrpt_core::Error;
use nrpt_core::driver::{Temperatures, Tempering, TemperingOptions};
use nrpt_core::index::IndexStats;
use nrpt_core::lanes::{LaneExchange, LaneRules, ON, PairLanes, mask, pack, replica_of, trip_of};
use nrpt_core::rules::{BufferProjection, LadderUpdate, PairEnergies, Rules, SweepOrder};
use nrpt_core::swap::{SwapRule, flags};
use nrpt_core::target::{Modes2d, Noisy};
use nrpt_core::window::Scheme;

use common::Owned;

/// Lanes of L ensembles, stored by level.
struct Lanes<const L: usize> {
    energies: Vec<[f32; L]>,
    ladder: Vec<[f64; L]>,
    replica: Vec<[u32; L]>,
    gates: Vec<[u32; L]>,
    indicator: Vec<[u32; L]>,
    swapped: Vec<[u32; L]>,
    pairs: Vec<PairLanes<L>>,
    buffer: [f64; L],
    stats: [IndexStats; L],
}

impl<const L: usize> Lanes<L> {
    fn exchange(&mut self) -> LaneExchange<'_, f32, L> {
        LaneExchange {
            energies: &self.energies,
            ladder: &mut self.ladder,
            replica: &mut self.replica,
            gates: &mut self.gates,
            indicator: &mut self.indicator,
            swapped: &mut self.swapped,
            pairs: &mut self.pairs,
            buffer: &mut self.buffer,
            stats: &mut self.stats,
        }
    }
}

fn options(rules: Rules, window: u32, ensemble: u32) -> TemperingOptions {
    TemperingOptions {
        scheme: Scheme::Deo { window },
        rules,
        seed: 2023,
        ensemble,
        ..TemperingOptions::default()
    }
}

/// A non-finite energy for some (iteration, lane, level), told to both sides when
/// `corrupt`: NaN, +∞ and −∞ each about once in 50 energies.
fn corrupted(corrupt: bool, k: u64, i: usize, l: usize) -> Option<f32> {
    let h = (k as usize * 31 + i * 7 + l * 13) % 150;
    match h {
        _ if !corrupt => None,
        0..=2 => Some(f32::NAN),
        3..=5 => Some(f32::INFINITY),
        6..=8 => Some(f32::NEG_INFINITY),
        _ => None,
    }
}

/// Runs L drivers and the lanes side by side for `iters` iterations and compares
/// everything after each one; with `corrupt`, some energies are made non-finite.
fn compare<const L: usize>(rules: Rules, window: u32, p: usize, iters: u64) {
    compare_with::<L>(rules, window, p, iters, false);
}

fn compare_with<const L: usize>(rules: Rules, window: u32, p: usize, iters: u64, corrupt: bool) {
    let mut owned: Vec<Owned<f32>> = (0..L).map(|_| Owned::new(p, 2)).collect();
    let mut runs: Vec<_> = owned
        .iter_mut()
        .enumerate()
        .map(|(e, b)| {
            let o = options(rules, window, e as u32);
            Tempering::new(o, Noisy::paper(Modes2d), b.lend()).unwrap()
        })
        .collect();
    let o = options(rules, window, 0);
    let lane_rules = LaneRules::of(&o).unwrap();
    let by_level = |f: &dyn Fn(usize, usize) -> f64| -> Vec<[f64; L]> {
        (0..p).map(|l| std::array::from_fn(|i| f(i, l))).collect()
    };
    let mut lanes = Lanes::<L> {
        energies: vec![[0.0; L]; p],
        ladder: by_level(&|i, l| runs[i].storage().ladder()[l]),
        replica: (0..p)
            .map(|l| std::array::from_fn(|i| pack(l as u32, runs[i].storage().trips()[l])))
            .collect(),
        gates: vec![[ON; L]; p - 1],
        indicator: vec![[0; L]; p - 1],
        swapped: vec![[0; L]; p - 1],
        pairs: vec![PairLanes::default(); p - 1],
        buffer: std::array::from_fn(|i| runs[i].buffer()),
        stats: [IndexStats::default(); L],
    };
    for k in 0..iters {
        let gamma = o.adapt.schedule.step_size(k).unwrap().get();
        for (i, t) in runs.iter_mut().enumerate() {
            t.explore().unwrap();
            let view = t.explore_view();
            for l in 0..p {
                if let Some(bad) = corrupted(corrupt, k, i, l) {
                    view.energies[l] = bad;
                }
            }
            for l in 0..p {
                lanes.energies[l][i] = t.storage().energies()[l];
            }
            t.exchange().unwrap();
        }
        lanes
            .exchange()
            .run(&lane_rules, k, gamma, &mut ())
            .unwrap();
        for (i, t) in runs.iter().enumerate() {
            let s = t.storage();
            let at = |what: &str| format!("{what}, lane {i}, iteration {k}, P = {p}, W = {window}");
            for l in 0..p {
                assert_eq!(
                    lanes.ladder[l][i].to_bits(),
                    s.ladder()[l].to_bits(),
                    "{}",
                    at("ladder")
                );
                let r = s.replica_at()[l];
                let w = lanes.replica[l][i];
                assert_eq!(replica_of(w), r, "{}", at("replica"));
                assert_eq!(trip_of(w), s.trips()[r as usize], "{}", at("trips"));
            }
            for l in 0..p - 1 {
                let f = s.flags()[l];
                assert_eq!(lanes.gates[l][i], mask(s.gates()[l]), "{}", at("gates"));
                assert_eq!(
                    lanes.indicator[l][i],
                    mask(f & flags::INDICATOR != 0),
                    "{}",
                    at("indicator")
                );
                assert_eq!(
                    lanes.swapped[l][i],
                    mask(f & flags::SWAPPED != 0),
                    "{}",
                    at("swap")
                );
                assert_eq!(
                    lanes.pairs[l].lane(i),
                    Some(s.pair_stats()[l]),
                    "{}",
                    at("pairs")
                );
            }
            assert_eq!(
                lanes.buffer[i].to_bits(),
                t.buffer().to_bits(),
                "{}",
                at("buffer")
            );
            assert_eq!(lanes.stats[i], t.stats(), "{}", at("stats"));
        }
    }
    // The runs were long enough to swap, adapt and complete round trips.
    assert!(lanes.stats.iter().all(|s| s.round_trips > 0 || p > 8));
    assert!(
        lanes
            .pairs
            .iter()
            .all(|c| (0..L).any(|i| c.lane(i).is_some_and(|s| s.swaps > 0)))
    );
}

/// The paper's rules, the authors' buffer and the in-place ladder, with their pair
/// energies tested simultaneously (the lanes' sweep).
fn rule_variants() -> [Rules; 3] {
    let lanes = Rules {
        pair_energies: PairEnergies::PerLevel,
        sweep_order: SweepOrder::Simultaneous,
        ..Rules::default()
    };
    [
        lanes,
        Rules {
            buffer_projection: BufferProjection::Unprojected,
            ..lanes
        },
        Rules {
            ladder_update: LadderUpdate::InPlace,
            ..lanes
        },
    ]
}

#[test]
fn one_lane_is_the_scalar_driver() {
    for rules in rule_variants() {
        for (window, p) in [(1, 2), (1, 3), (3, 5), (8, 16)] {
            compare::<1>(rules, window, p, 1_500);
        }
    }
}

#[test]
fn every_lane_is_its_own_ensemble() {
    for rules in rule_variants() {
        compare::<4>(rules, 7, 16, 1_500);
    }
    compare::<8>(Rules::default(), 2, 6, 1_000);
    // The widths the engines compile (AVX2 and AVX-512 registers, two of them).
    compare::<16>(Rules::default(), 3, 9, 600);
    compare::<32>(Rules::default(), 4, 16, 600);
}

#[test]
fn non_finite_energies_count_and_never_swap_as_in_the_driver() {
    for rules in rule_variants() {
        for (window, p) in [(1, 2), (1, 3), (3, 7), (5, 16)] {
            compare_with::<8>(rules, window, p, 800, true);
        }
    }
    compare_with::<32>(Rules::default(), 2, 12, 400, true);
}

#[test]
fn the_lanes_refuse_what_they_do_not_implement() {
    let o = options(Rules::default(), 4, 0);
    assert!(LaneRules::of(&o).is_ok());
    let seo = TemperingOptions {
        scheme: Scheme::Seo,
        ..o
    };
    let metropolis = TemperingOptions {
        rule: SwapRule::Metropolis,
        temperatures: Temperatures::FollowLadder,
        ..o
    };
    let sequential = TemperingOptions {
        rules: Rules::AUTHORS_CODE,
        ..o
    };
    for bad in [seo, metropolis, sequential] {
        let out = LaneRules::of(&bad);
        assert!(matches!(out, Err(Error::Unsupported { .. })), "{out:?}");
    }
    let zero_window = options(Rules::default(), 0, 0);
    assert_eq!(LaneRules::of(&zero_window), Err(Error::ZeroWindow));
}

#[test]
fn wrong_lengths_are_errors_and_change_nothing() {
    let p = 4;
    let mut lanes = Lanes::<2> {
        energies: vec![[1.0; 2]; p],
        ladder: vec![[0.5; 2]; p],
        replica: vec![[0; 2]; p],
        gates: vec![[ON; 2]; p - 1],
        indicator: vec![[0; 2]; p - 1],
        swapped: vec![[0; 2]; p - 1],
        pairs: vec![PairLanes::default(); p],
        buffer: [4.0; 2],
        stats: [IndexStats::default(); 2],
    };
    let rules = LaneRules::of(&options(Rules::default(), 1, 0)).unwrap();
    let out = lanes.exchange().run(&rules, 0, 0.1, &mut ());
    assert_eq!(
        out,
        Err(Error::LengthMismatch {
            name: "pairs",
            expected: 3,
            found: 4
        })
    );
    assert_eq!(lanes.buffer, [4.0; 2]);
    lanes.energies.truncate(1);
    lanes.pairs.truncate(0);
    let out = lanes.exchange().run(&rules, 0, 0.1, &mut ());
    assert_eq!(out, Err(Error::TooFewChains { chains: 1 }));
}
