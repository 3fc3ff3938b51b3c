//! The controller's tests: replays of core runs (fixed and variational references),
//! bad input, and its saved versions.

use super::*;
use nrpt_core::exact::{ExactExplorer, GaussianPath, MalaOptions, StartStates, VariationalOptions};

/// The controller told a MALA run's ℓ reaches that run's rounds, bit for bit, and
/// its encoding continues it exactly.
#[test]
fn a_controller_replays_a_core_run_and_survives_encoding() {
    let (p, d) = (5, 2);
    let settings = ControllerSettings {
        seed: 9,
        ensemble: 1,
        ..ControllerSettings::new(p)
    };
    let options = ExactOptions {
        explorer: ExactExplorer::Mala(MalaOptions::default()),
        start: StartStates::Reference,
        ..settings.options(InitialGrid::Uniform)
    };
    let mut o = super::super::Owned::new(p, d, &options.explorer).unwrap();
    let mut run =
        ExactTempering::new(options, GaussianPath::standard(d).unwrap(), o.view()).unwrap();
    let mut ctl = ExactController::new(settings, None).unwrap();
    let mut saved = None;
    for k in 0..300 {
        let Ok(want) = run.step();
        if k == 150 {
            let bytes = ctl.encode();
            ctl = ExactController::decode(&bytes).unwrap();
            // Bit for bit: the decoded controller encodes to the same bytes.
            assert_eq!(ctl.encode(), bytes);
            saved = Some(bytes);
        }
        let got = ctl.tell(run.log_likelihoods()).unwrap();
        assert_eq!((got.swaps, got.round_trips), (want.swaps, want.round_trips));
        assert_eq!(ctl.replica_at(), run.replica_at(), "iteration {k}");
        assert_eq!(ctl.betas(), run.betas());
        if let (Some(a), Some(b)) = (got.round_end, want.round_end) {
            assert_eq!(a.log_normalizer, b.log_normalizer);
            assert_eq!(a.global_barrier, b.global_barrier);
        }
    }
    assert_eq!(ctl.round(), run.round());
    assert!(ctl.pooled().is_some());
    // Other bytes are refused with a reason.
    let bytes = saved.unwrap();
    assert!(matches!(
        ExactController::decode(&bytes[..bytes.len() / 2]),
        Err(SavedError::Format(_))
    ));
    let mut other = ctl.clone();
    other.b.at.swap(0, 1);
    assert!(matches!(
        ExactController::decode(&other.encode()),
        Err(SavedError::State(_))
    ));
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        ExactController::decode(&longer),
        Err(SavedError::Format(_))
    ));
}

/// Bytes saved by an earlier nrpt (version 1: the tag and the version as now, then
/// the controller encoded by `bincode`) are refused by their version, before the
/// rest is read, with a message that says what to do; a later version is named.
#[test]
fn an_earlier_version_is_refused_with_what_to_do() {
    let ctl = ExactController::new(ControllerSettings::new(4), None).unwrap();
    let bytes = ctl.encode();
    let head = b"\x14nrpt.ExactController";
    assert!(
        bytes.starts_with(head) && bytes[head.len()] == 3,
        "{bytes:?}"
    );
    let mut old = bytes.clone();
    old[head.len()] = 1;
    old.truncate(head.len() + 1);
    old.extend_from_slice(&[0xff; 9]);
    let e = ExactController::decode(&old).unwrap_err();
    assert!(matches!(e, SavedError::OlderFormat { found: 1 }), "{e:?}");
    let message = e.to_string();
    assert!(
        message.contains("written by an earlier nrpt in an older format")
            && message.contains("version 1; this nrpt reads versions 2 to 3")
            && message.contains("start the controller again"),
        "{message}"
    );
    let mut later = bytes;
    later[head.len()] = 4;
    assert!(matches!(
        ExactController::decode(&later),
        Err(SavedError::Version { found: 4 })
    ));
}

/// Bytes of version 2 (the controller alone, before references) decode as a
/// controller with a fixed reference, which continues as the one that wrote them.
#[test]
fn a_version_2_controller_decodes_with_a_fixed_reference() {
    let mut ctl = ExactController::new(ControllerSettings::new(4), None).unwrap();
    for k in 0..9 {
        ctl.tell(&[-1.0, -2.0 - k as f64, -3.0, -0.5]).unwrap();
    }
    let v2 = postcard::to_stdvec(&(FORMAT, 2u32, &ctl)).unwrap();
    let mut old = ExactController::decode(&v2).unwrap();
    assert_eq!(old.encode(), ctl.encode());
    assert_eq!(old.reference_kind(), ReferenceKind::Fixed);
    assert_eq!(old.summary().reference, "fixed");
    old.tell(&[0.0; 4]).unwrap();
    ctl.tell(&[0.0; 4]).unwrap();
    assert_eq!(old.encode(), ctl.encode());
}

type Fitted = nrpt_core::exact::VariationalPath<GaussianPath, Vec<f64>>;

/// A variational controller told a core run's states and the ℓ its iterations used
/// (the run's path fitting its own reference: nrpt-core's `VariationalPath`) reaches
/// that run's rounds, grids and fitted reference bit for bit, and its encoding
/// continues it exactly.
#[test]
fn a_variational_controller_replays_a_core_runs_fits() {
    use nrpt_core::exact::{AnnealingPath, VariationalPath};
    let (p, d) = (5, 3);
    let settings = ControllerSettings {
        seed: 4,
        ensemble: 2,
        ..ControllerSettings::new(p)
    };
    let options = ExactOptions {
        explorer: ExactExplorer::Mala(MalaOptions::default()),
        start: StartStates::Reference,
        ..settings.options(InitialGrid::Uniform)
    };
    let mut o = super::super::Owned::new(p, d, &options.explorer).unwrap();
    let inner = GaussianPath::standard(d).unwrap();
    let path: Fitted =
        VariationalPath::new(inner, vec![0.0; Fitted::buffer_len(d)], Default::default()).unwrap();
    let mut run = ExactTempering::new(options, path, o.view()).unwrap();
    let mut ctl =
        ExactController::with_reference(settings, None, ReferenceKind::Variational, d).unwrap();
    assert!(ctl.reference_mean().is_none() && ctl.reference_fits() == 0);
    let mut round_ends = 0;
    // Rounds of 2, 4, …, 256 iterations: the first fit at the end of round 3 (2 + 4 +
    // 8 < 16 states before it), then one per round.
    for k in 0..510 {
        let before = run.path().clone();
        let Ok(want) = run.step();
        // The ℓ this iteration used: the path before its round-end refit.
        let mut used = before.clone();
        let states = run.states().to_vec();
        let ells: Vec<f64> = states
            .chunks(d)
            .map(|x| {
                let Ok(ell) = used.log_likelihood(x);
                ell
            })
            .collect();
        if run.path().fits() == before.fits() {
            assert_eq!(ells, run.log_likelihoods(), "iteration {k}");
        }
        if k == 300 {
            let bytes = ctl.encode();
            ctl = ExactController::decode(&bytes).unwrap();
            assert_eq!(ctl.encode(), bytes);
        }
        let got = ctl.tell_states(&ells, Some(&states)).unwrap();
        assert_eq!((got.swaps, got.round_trips), (want.swaps, want.round_trips));
        assert_eq!(ctl.replica_at(), run.replica_at(), "iteration {k}");
        assert_eq!(ctl.betas(), run.betas());
        assert_eq!(ctl.reference_fits(), run.path().fits(), "iteration {k}");
        if let (Some(a), Some(b)) = (got.round_end, want.round_end) {
            round_ends += 1;
            assert_eq!(a.log_normalizer, b.log_normalizer);
            assert_eq!(a.log_normalizer_reverse, b.log_normalizer_reverse);
            assert_eq!(a.global_barrier, b.global_barrier);
            assert_eq!(a.round_trips, b.round_trips);
        }
    }
    assert_eq!(round_ends, 8);
    assert_eq!(ctl.reference_fits(), 5);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(ctl.reference_mean().unwrap()), bits(run.path().mean()));
    assert_eq!(
        bits(ctl.reference_scale().unwrap()),
        bits(run.path().scale())
    );
    // log q and its gradient are the run's reference's.
    let x = [0.3, -0.2, 0.1];
    let (mut g, mut gq) = ([0.0; 3], [0.0; 3]);
    let lq = ctl.reference_log_density(&x, Some(&mut g)).unwrap();
    let mut q = run.path().clone();
    let Ok(want) = q.log_reference(&x, &mut gq);
    assert_eq!((lq.to_bits(), bits(&g)), (want.to_bits(), bits(&gq)));
    let s = ctl.summary();
    assert_eq!((s.reference, s.reference_fits), ("variational", 5));
}

/// A variational reference needs D ≥ 1 and P·D states every tell (nothing changes
/// otherwise); a fixed one takes none; a state with a non-finite coordinate is not
/// gathered; log q needs a fit and D values; damaged fits are refused on decoding.
#[test]
fn a_variational_reference_checks_its_input() {
    let settings = ControllerSettings {
        first_round: 16,
        ..ControllerSettings::new(3)
    };
    let variational = ReferenceKind::Variational;
    assert!(matches!(
        ExactController::with_reference(settings, None, variational, 0),
        Err(nrpt_core::Error::InvalidValue { name: "dim", .. })
    ));
    let mut fixed = ExactController::new(settings, None).unwrap();
    assert!(matches!(
        fixed.tell_states(&[0.0; 3], Some(&[0.0; 6])),
        Err(nrpt_core::Error::Unsupported { .. })
    ));
    assert!(fixed.reference_log_density(&[0.0], None).is_err());
    assert_eq!(fixed.reference_dim(), None);
    let mut c = ExactController::with_reference(settings, None, variational, 2).unwrap();
    let before = c.encode();
    for states in [None, Some(&[0.0; 5][..]), Some(&[0.0; 7][..])] {
        assert!(matches!(
            c.tell_states(&[0.0; 3], states),
            Err(nrpt_core::Error::LengthMismatch { expected: 6, .. })
        ));
    }
    assert!(c.tell(&[0.0; 3]).is_err());
    assert!(c.tell_states(&[0.0; 2], Some(&[0.0; 6])).is_err());
    assert_eq!(c.encode(), before);
    assert!(c.reference_log_density(&[0.0, 0.0], None).is_err());
    // 16 iterations (round 0) whose posterior level holds NaN for the first 10: only
    // 6 states are gathered, too few for a fit (16).
    for k in 0..16 {
        let v = if k < 10 { f64::NAN } else { k as f64 };
        c.tell_states(&[-1.0, -2.0, -3.0], Some(&[v, -v, v, -v, v, -v]))
            .unwrap();
    }
    assert_eq!((c.round(), c.reference_fits()), (1, 0));
    assert!(c.reference_mean().is_none());
    for k in 0..32 {
        let v = k as f64;
        c.tell_states(&[-1.0, -2.0, -3.0], Some(&[v, -v, v, -v, v, -v]))
            .unwrap();
    }
    assert_eq!((c.round(), c.reference_fits()), (2, 1));
    let (m, s) = (c.reference_mean().unwrap(), c.reference_scale().unwrap());
    assert!(m.iter().chain(s).all(|v| v.is_finite()) && s.iter().all(|&v| v > 0.0));
    assert!(matches!(
        c.reference_log_density(&[0.0], None),
        Err(nrpt_core::Error::LengthMismatch { name: "x", .. })
    ));
    assert!(matches!(
        c.reference_log_density(&[0.0, 1.0], Some(&mut [0.0; 3])),
        Err(nrpt_core::Error::LengthMismatch { name: "grad", .. })
    ));
    // A fit with a negative scale is refused.
    let mut damaged = c.clone();
    if let Reference::Variational(q) = &damaged.reference {
        let (count, fits) = q.saved();
        let mut buffer = q.buffer().to_vec();
        buffer[2] = -1.0; // the first scale
        damaged.reference = Reference::Variational(
            GaussianFit::new(2, buffer.clone(), VariationalOptions::default()).unwrap(),
        );
        let bytes = postcard::to_stdvec(&(
            FORMAT,
            VERSION,
            &damaged,
            SavedReference::Variational {
                dim: 2,
                buffer: &buffer[..],
                count,
                fits,
            },
        ))
        .unwrap();
        assert!(matches!(
            ExactController::decode(&bytes),
            Err(SavedError::State(_))
        ));
    }
    let bytes = c.encode();
    assert_eq!(ExactController::decode(&bytes).unwrap().encode(), bytes);
}

#[test]
fn settings_are_checked() {
    assert!(ExactController::new(ControllerSettings::new(1), None).is_err());
    let bad_round = ControllerSettings {
        first_round: 0,
        ..ControllerSettings::new(4)
    };
    assert!(ExactController::new(bad_round, None).is_err());
    assert!(ExactController::new(ControllerSettings::new(4), Some(&[1.0, 0.5, 0.0])).is_err());
    assert!(ExactController::new(ControllerSettings::new(4), Some(&[1.0, 0.2, 0.5, 0.0])).is_err());
    let c = ExactController::new(ControllerSettings::new(4), Some(&[1.0, 0.5, 0.1, 0.0])).unwrap();
    assert_eq!(c.betas(), [1.0, 0.5, 0.1, 0.0]);
    let mut c = c;
    assert!(c.tell(&[0.0; 3]).is_err());
    assert_eq!(c.iteration(), 0);
    // A window above 1 is named before any round ends; none for W = 1.
    let w = ExactController::new(
        ControllerSettings {
            window: 4,
            ..ControllerSettings::new(4)
        },
        None,
    )
    .unwrap();
    assert_eq!(w.warnings().len(), 1);
    assert!(w.warnings()[0].contains("window=1"), "{:?}", w.warnings());
    assert!(c.warnings().is_empty());
    assert!(c.pooled().is_none() && c.barrier().is_none());
}
