//! The stabilized two-leg ladder (`exact::two_leg`): the middle exchange follows the
//! joined ladder's windows, ℓ stays each leg's own after an exchange, the legs must be
//! one ladder, and on the Gaussian path the variational leg's barrier vanishes while
//! both legs estimate the closed-form log Z.

use nrpt_core::exact::{
    AnnealingPath, ExactOptions, ExactTempering, GaussianPath, TwoLegTempering,
    VARIATIONAL_LEG_ENSEMBLE, VariationalOptions, VariationalPath,
};
use nrpt_core::window::Scheme;

use crate::common::ExactOwned;

type Fitted = VariationalPath<GaussianPath, Vec<f64>>;

fn fitted(d: usize) -> Fitted {
    let inner = GaussianPath::standard(d).unwrap();
    VariationalPath::new(
        inner,
        vec![0.0; Fitted::buffer_len(d)],
        VariationalOptions::default(),
    )
    .unwrap()
}

fn options(scheme: Scheme, ensemble: u32) -> ExactOptions {
    ExactOptions {
        scheme,
        seed: 5,
        ensemble,
        ..ExactOptions::default()
    }
}

/// Every replica's stored ℓ is its leg's ℓ of its state.
fn assert_consistent<P: AnnealingPath + Clone>(pt: &ExactTempering<'_, P>, d: usize)
where
    P::Error: std::fmt::Debug,
{
    let mut path = pt.path().clone();
    for (r, x) in pt.states().chunks(d).enumerate() {
        let want = path.log_likelihood(x).unwrap();
        assert_eq!(
            pt.log_likelihoods()[r].to_bits(),
            want.to_bits(),
            "replica {r}"
        );
    }
}

/// With DEO_W the target levels exchange at the first iteration of each window of
/// parity 0 (the legs' pair 0 swaps in the others), trading states bit for bit, and
/// each leg's ℓ is then its own path's; SEO exchanges about half the time.
#[test]
fn the_targets_exchange_in_the_middle_pairs_windows() {
    let d = 3;
    for window in [1u32, 3] {
        let mut a = ExactOwned::new(6, d);
        let mut b = ExactOwned::new(4, d);
        let scheme = Scheme::Deo { window };
        let f = ExactTempering::new(
            options(scheme, 0),
            GaussianPath::standard(d).unwrap(),
            a.buffers(),
        )
        .unwrap();
        let v = ExactTempering::new(
            options(scheme, VARIATIONAL_LEG_ENSEMBLE),
            fitted(d),
            b.buffers(),
        )
        .unwrap();
        let mut two = TwoLegTempering::new(f, v, 0).unwrap();
        let mut expected = 0;
        for k in 0..200u64 {
            let report = two.step().unwrap();
            let w = k / u64::from(window);
            let want = k % u64::from(window) == 0 && w % 2 == 0;
            assert_eq!(report.exchanged, want, "W = {window}, k = {k}");
            expected += u64::from(want);
            assert_consistent(two.fixed(), d);
            assert_consistent(two.variational(), d);
        }
        assert_eq!(two.exchanges(), expected);
        assert_eq!(
            two.round_trips(),
            two.fixed().stats().round_trips + two.variational().stats().round_trips
        );
    }
    // SEO: an exchange with probability 1/2 per iteration (2,000 iterations: 1,000 ± 22,
    // the band is 5 sd).
    let mut a = ExactOwned::new(4, d);
    let mut b = ExactOwned::new(4, d);
    let f = ExactTempering::new(
        options(Scheme::Seo, 0),
        GaussianPath::standard(d).unwrap(),
        a.buffers(),
    )
    .unwrap();
    let v = ExactTempering::new(
        options(Scheme::Seo, VARIATIONAL_LEG_ENSEMBLE),
        fitted(d),
        b.buffers(),
    )
    .unwrap();
    let mut two = TwoLegTempering::new(f, v, 0).unwrap();
    for _ in 0..2000 {
        two.step().unwrap();
    }
    assert!(
        (two.exchanges() as i64 - 1000).abs() < 112,
        "{}",
        two.exchanges()
    );
}

/// An exchange moves the two target states between the legs, nothing else.
#[test]
fn an_exchange_trades_the_target_states() {
    let d = 2;
    let mut a = ExactOwned::new(3, d);
    let mut b = ExactOwned::new(3, d);
    let scheme = Scheme::Deo { window: 1 };
    let f = ExactTempering::new(
        options(scheme, 0),
        GaussianPath::standard(d).unwrap(),
        a.buffers(),
    )
    .unwrap();
    let v = ExactTempering::new(
        options(scheme, VARIATIONAL_LEG_ENSEMBLE),
        fitted(d),
        b.buffers(),
    )
    .unwrap();
    // The same iteration of the legs alone, against the joined run: k = 0 exchanges.
    let mut c = ExactOwned::new(3, d);
    let mut e = ExactOwned::new(3, d);
    let mut f_alone = ExactTempering::new(
        options(scheme, 0),
        GaussianPath::standard(d).unwrap(),
        c.buffers(),
    )
    .unwrap();
    let mut v_alone = ExactTempering::new(
        options(scheme, VARIATIONAL_LEG_ENSEMBLE),
        fitted(d),
        e.buffers(),
    )
    .unwrap();
    f_alone.step().unwrap();
    v_alone.step().unwrap();
    let mut two = TwoLegTempering::new(f, v, 0).unwrap();
    assert!(two.step().unwrap().exchanged);
    assert_eq!(two.fixed().state_at_level(0), v_alone.state_at_level(0));
    assert_eq!(
        two.variational().state_at_level(0),
        f_alone.state_at_level(0)
    );
    for level in 1..3 {
        assert_eq!(
            two.fixed().state_at_level(level),
            f_alone.state_at_level(level)
        );
        assert_eq!(
            two.variational().state_at_level(level),
            v_alone.state_at_level(level)
        );
    }
}

#[test]
fn legs_that_are_not_one_ladder_are_refused() {
    let d = 2;
    let deo = Scheme::VANILLA_DEO;
    // The variational leg's (dimension, scheme, ensemble, first round); the fixed leg has
    // (2, vanilla DEO, 0, 2).
    let cases: [(usize, Scheme, u32, u64); 4] = [
        (2, deo, 0, 2),                                // the same key on both legs
        (3, deo, VARIATIONAL_LEG_ENSEMBLE, 2),         // other dimensions
        (2, Scheme::Seo, VARIATIONAL_LEG_ENSEMBLE, 2), // other schemes
        (2, deo, VARIATIONAL_LEG_ENSEMBLE, 4),         // other rounds
    ];
    for (vd, scheme, ensemble, first) in cases {
        let mut a = ExactOwned::new(3, d);
        let mut b = ExactOwned::new(3, vd);
        let f = ExactTempering::new(
            options(deo, 0),
            GaussianPath::standard(d).unwrap(),
            a.buffers(),
        )
        .unwrap();
        let mut o = options(scheme, ensemble);
        o.schedule.first_round = first;
        let v = ExactTempering::new(o, fitted(vd), b.buffers()).unwrap();
        assert!(
            TwoLegTempering::new(f, v, 0).is_err(),
            "{vd} {scheme:?} {ensemble} {first}"
        );
    }
    // One ladder is accepted.
    let (mut a, mut b) = (ExactOwned::new(3, d), ExactOwned::new(5, d));
    let f = ExactTempering::new(
        options(deo, 0),
        GaussianPath::standard(d).unwrap(),
        a.buffers(),
    )
    .unwrap();
    let v = ExactTempering::new(
        options(deo, VARIATIONAL_LEG_ENSEMBLE),
        fitted(d),
        b.buffers(),
    )
    .unwrap();
    assert!(TwoLegTempering::new(f, v, 0).is_ok());
}

/// On N(0, I₁₀) → N(0, I₁₀/10): the fixed leg keeps the path's barrier (Λ = 2.83), the
/// variational leg's falls below 0.1 once fitted, and both legs' stepping stones give
/// the closed form log Z = 5 ln(0.2π) = −2.3235 within 3 of their standard errors.
#[test]
fn on_a_gaussian_target_the_variational_leg_vanishes_and_both_legs_agree() {
    let (d, p, q) = (10, 8, 4);
    let rounds = 12; // 2 + 4 + … + 4096 iterations
    let mut a = ExactOwned::new(p, d);
    let mut b = ExactOwned::new(q, d);
    let deo = Scheme::VANILLA_DEO;
    let f = ExactTempering::new(
        options(deo, 0),
        GaussianPath::standard(d).unwrap(),
        a.buffers(),
    )
    .unwrap();
    let v = ExactTempering::new(
        options(deo, VARIATIONAL_LEG_ENSEMBLE),
        fitted(d),
        b.buffers(),
    )
    .unwrap();
    let mut two = TwoLegTempering::new(f, v, 0).unwrap();
    let mut last = None;
    for r in 0..rounds {
        if r + 1 == rounds {
            two.set_adapt_grid(false);
            two.set_adapt_steps(false);
        }
        last = Some(two.run_round().unwrap());
    }
    let (fl, vl) = last.unwrap();
    let closed = GaussianPath::standard(d).unwrap().log_evidence();
    println!(
        "fixed leg: Λ̂ = {:.4}, log Z = {:.4} ± {:.4}, {} round trips; variational leg: Λ̂ = {:.4}, \
         log Z = {:.4} ± {:.4}, {} round trips; {} exchanges; closed form {closed:.4}",
        fl.global_barrier,
        fl.log_normalizer.value,
        fl.log_normalizer.standard_error,
        fl.round_trips,
        vl.global_barrier,
        vl.log_normalizer.value,
        vl.log_normalizer.standard_error,
        vl.round_trips,
        two.exchanges()
    );
    assert!(two.variational().path().fits() >= 5);
    assert!(
        (fl.global_barrier - 2.83).abs() < 0.3,
        "{}",
        fl.global_barrier
    );
    assert!(vl.global_barrier < 0.1, "{}", vl.global_barrier);
    for leg in [fl, vl] {
        let (v, se) = (leg.log_normalizer.value, leg.log_normalizer.standard_error);
        assert!(
            se > 0.0 && (v - closed).abs() < 3.0 * se.max(1e-3),
            "{v} ± {se}"
        );
    }
    // Tours end on both legs: the variational leg, short, makes most of them.
    assert!(vl.round_trips > fl.round_trips && fl.round_trips > 0);
}
