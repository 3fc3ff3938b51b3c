//! Exact tempering told its log-likelihoods, and runs cut in two: the same bits as one
//! run that explores by itself.
//!
//! - A run told, iteration by iteration, the ℓ that a MALA run on the Gaussian path
//!   computed makes that run's swaps, grids, barrier knots, records and round reports,
//!   bit for bit (for vanilla DEO, a window of 4 and SEO): `tell` and `step` share the
//!   code after the exploration.
//! - A run saved ([`ExactTempering::progress`] and copies of its buffers) and resumed
//!   continues with the bits of one that never stopped, cut in mid-round, at a round's
//!   end and before the first iteration.

use nrpt_core::Error;
use nrpt_core::exact::{
    ExactExplorer, ExactOptions, ExactProgress, ExactReport, ExactTempering, GaussianPath,
    MalaOptions, NoPath, NoPathError, RoundReport,
};
use nrpt_core::window::Scheme;

use crate::common;
use common::ExactOwned;

/// Debug text of a value: compares floats by their shortest round-trip form, so NaN
/// (an early round's standard error, a told run's explorer acceptance) equals NaN and
/// every other difference of bits shows.
fn bits<T: core::fmt::Debug>(v: &T) -> String {
    format!("{v:?}")
}

/// A round report with the explorer's acceptance out (NaN in a told run: no explorer).
fn without_explorer(r: &RoundReport) -> RoundReport {
    RoundReport {
        explorer_acceptance: 0.0,
        ..*r
    }
}

fn report_without_explorer(r: &ExactReport) -> ExactReport {
    ExactReport {
        round_end: r.round_end.as_ref().map(without_explorer),
        ..*r
    }
}

fn options(scheme: Scheme) -> ExactOptions {
    ExactOptions {
        seed: 11,
        ensemble: 2,
        scheme,
        explorer: ExactExplorer::Mala(MalaOptions {
            steps_per_iteration: 2,
            ..MalaOptions::default()
        }),
        ..ExactOptions::default()
    }
}

/// What one iteration of a run leaves, for comparison.
#[derive(Debug, PartialEq)]
struct After {
    report: String,
    betas: String,
    replica_at: Vec<u32>,
    level_of: Vec<u32>,
    knots: String,
    pairs: String,
    stats: String,
}

fn after<P: nrpt_core::exact::AnnealingPath>(
    pt: &ExactTempering<'_, P>,
    report: &ExactReport,
) -> After {
    let b = pt.barrier();
    After {
        report: bits(&report_without_explorer(report)),
        betas: bits(&pt.betas()),
        replica_at: pt.replica_at().to_vec(),
        level_of: pt.level_of().to_vec(),
        knots: bits(&(b.betas(), b.knot_values())),
        pairs: bits(&pt.pairs()),
        stats: bits(&pt.stats()),
    }
}

/// `step` runs against `tell` runs on the recorded ℓ, for three schemes: every
/// iteration identical, and the rounds do close (Λ̂ and log Z finite).
#[test]
fn a_told_run_replays_a_mala_run_bit_for_bit() {
    const P: usize = 6;
    const D: usize = 3;
    const ROUNDS: u32 = 7; // 2 + 4 + … + 128 = 254 iterations
    for scheme in [Scheme::VANILLA_DEO, Scheme::Deo { window: 4 }, Scheme::Seo] {
        let o = options(scheme);
        let mut owned = ExactOwned::new(P, D);
        let path = GaussianPath::standard(D).unwrap();
        let mut pt = ExactTempering::new(o, path, owned.buffers()).unwrap();
        let mut ells = Vec::new();
        let mut seen = Vec::new();
        let mut rounds = 0;
        while rounds < ROUNDS {
            let Ok(report) = pt.step();
            ells.push(pt.log_likelihoods().to_vec());
            seen.push(after(&pt, &report));
            rounds += u32::from(report.round_end.is_some());
        }
        let last = *pt.last_round().unwrap();
        assert!(last.global_barrier.is_finite() && last.log_normalizer.value.is_finite());
        assert!(pt.stats().round_trips > 0, "{scheme:?}");

        let mut told = ExactOwned::told(P);
        let mut tt = ExactTempering::told(o, told.buffers()).unwrap();
        for (k, (ell, want)) in ells.iter().zip(&seen).enumerate() {
            let report = tt.tell(ell).unwrap();
            assert_eq!(&after(&tt, &report), want, "{scheme:?}, iteration {k}");
            if let Some(r) = report.round_end {
                assert!(r.explorer_acceptance.is_nan());
            }
        }
        assert_eq!(tt.iteration(), ells.len() as u64);
        assert_eq!(tt.round(), ROUNDS);
        assert_eq!(
            bits(&without_explorer(tt.last_round().unwrap())),
            bits(&without_explorer(&last))
        );
        assert!(tt.states().is_empty());
    }
}

/// A told run checks what it is told and refuses to explore.
#[test]
fn a_told_run_checks_its_input() {
    let mut told = ExactOwned::told(4);
    let mut tt = ExactTempering::told(ExactOptions::default(), told.buffers()).unwrap();
    let before = tt.progress();
    assert_eq!(
        tt.tell(&[0.0; 3]).unwrap_err(),
        Error::LengthMismatch {
            name: "log_likelihoods",
            expected: 4,
            found: 3
        }
    );
    assert_eq!(tt.progress(), before);
    // A non-finite ℓ never swaps and is counted; −∞ is a weight of zero.
    let r = tt.tell(&[0.0, f64::NAN, -1.0, f64::NEG_INFINITY]).unwrap();
    assert!(r.nonfinite_pairs >= 1, "{r:?}");
    assert!(tt.stats().nonfinite_energies >= 1);
    // No path: step stops with NoPathError, and tell still works.
    assert_eq!(tt.step().unwrap_err(), NoPathError);
    assert!(tt.tell(&[0.0, -1.0, -2.0, -3.0]).is_ok());
    // Buffers with states are not a told run's.
    let mut wrong = ExactOwned::new(4, 2);
    assert!(matches!(
        ExactTempering::told(ExactOptions::default(), wrong.buffers()),
        Err(Error::LengthMismatch { name: "states", .. })
    ));
    // Nor is a path of dimension 0 an exploring run's.
    let mut empty = ExactOwned::told(4);
    assert!(matches!(
        ExactTempering::new(ExactOptions::default(), NoPath, empty.buffers()),
        Err(Error::InvalidValue { name: "dim", .. })
    ));
}

/// Runs `total` iterations on the Gaussian path, cut after `cut` (saved, dropped,
/// resumed from copies of the buffers); returns the final buffers and progress.
fn run_cut(o: ExactOptions, total: u64, cut: Option<u64>) -> (ExactOwned, ExactProgress) {
    let (p, d) = (5, 2);
    let path = || GaussianPath::standard(d).unwrap();
    let mut owned = ExactOwned::new(p, d);
    let mut pt = ExactTempering::new(o, path(), owned.buffers()).unwrap();
    let mut done = 0;
    if let Some(cut) = cut {
        while done < cut {
            let Ok(_) = pt.step();
            done += 1;
        }
        let saved = pt.progress();
        let _ = pt.into_buffers();
        // A copy of the buffers, as a file would give them back; the originals go.
        let mut copy = owned.clone();
        drop(owned);
        let mut resumed = ExactTempering::resume(o, path(), copy.buffers(), saved).unwrap();
        while done < total {
            let Ok(_) = resumed.step();
            done += 1;
        }
        let progress = resumed.progress();
        let _ = resumed.into_buffers();
        return (copy, progress);
    }
    while done < total {
        let Ok(_) = pt.step();
        done += 1;
    }
    let progress = pt.progress();
    let _ = pt.into_buffers();
    (owned, progress)
}

/// Cut anywhere, a run continues with the bits of one that never stopped: states, ℓ,
/// grid, knots, records, permutation, counts and every round's estimates.
#[test]
fn a_resumed_run_keeps_the_bits_of_one_that_never_stopped() {
    let o = options(Scheme::VANILLA_DEO);
    let total = 300;
    let (whole, whole_progress) = run_cut(o, total, None);
    // 0: before the first iteration; 126 = 2 + … + 64: a round has just closed.
    for cut in [0, 1, 77, 126, 127, 299] {
        let (cut_run, progress) = run_cut(o, total, Some(cut));
        assert_eq!(bits(&progress), bits(&whole_progress), "cut at {cut}");
        assert_eq!(bits(&cut_run), bits(&whole), "cut at {cut}");
    }
    assert!(whole_progress.last_round.is_some() && whole_progress.round == 7);
}

/// A told run resumes the same way.
#[test]
fn a_resumed_told_run_keeps_its_bits() {
    let o = options(Scheme::Deo { window: 3 });
    let ell = |k: usize, r: usize| -(((k * 7 + r * 3) % 11) as f64) * 0.37;
    let run = |cut: usize| {
        let mut owned = ExactOwned::told(4);
        let mut tt = ExactTempering::told(o, owned.buffers()).unwrap();
        for k in 0..cut {
            tt.tell(&[ell(k, 0), ell(k, 1), ell(k, 2), ell(k, 3)])
                .unwrap();
        }
        let saved = tt.progress();
        let _ = tt.into_buffers();
        let mut copy = owned.clone();
        let mut tt = ExactTempering::resume_told(o, copy.buffers(), saved).unwrap();
        for k in cut..100 {
            tt.tell(&[ell(k, 0), ell(k, 1), ell(k, 2), ell(k, 3)])
                .unwrap();
        }
        let progress = tt.progress();
        let _ = tt.into_buffers();
        bits(&(copy, progress))
    };
    let whole = run(100);
    for cut in [0, 5, 30, 62] {
        assert_eq!(run(cut), whole, "cut at {cut}");
    }
}

/// A state that cannot be a run's is refused, with the field named.
#[test]
fn resume_refuses_impossible_states() {
    let o = ExactOptions::default();
    let mut owned = ExactOwned::told(4);
    let mut tt = ExactTempering::told(o, owned.buffers()).unwrap();
    for _ in 0..5 {
        tt.tell(&[-1.0, -2.0, -0.5, -3.0]).unwrap();
    }
    let saved = tt.progress();
    let _ = tt.into_buffers();
    let resume = |owned: &mut ExactOwned, p: ExactProgress| {
        ExactTempering::resume_told(o, owned.buffers(), p).map(|_| ())
    };
    assert_eq!(resume(&mut owned.clone(), saved), Ok(()));
    let name = |r: Result<(), Error>| match r {
        Err(Error::InvalidValue { name, .. }) => name,
        other => panic!("{other:?}"),
    };
    let mut bad = owned.clone();
    bad.at.swap(0, 1);
    assert_eq!(name(resume(&mut bad, saved)), "replica_at");
    let mut bad = owned.clone();
    bad.betas[1] = 2.0;
    assert_eq!(name(resume(&mut bad, saved)), "betas");
    let mut bad = owned.clone();
    bad.values[0] = f64::NAN;
    assert_eq!(name(resume(&mut bad, saved)), "cumulative");
    let past = ExactProgress {
        round_iteration: 1 << 20,
        iteration: 1 << 21,
        ..saved
    };
    assert_eq!(
        name(resume(&mut owned.clone(), past)),
        "progress.round_iteration"
    );
    let unstarted = ExactProgress {
        started: false,
        ..saved
    };
    assert_eq!(
        name(resume(&mut owned.clone(), unstarted)),
        "progress.started"
    );
}
