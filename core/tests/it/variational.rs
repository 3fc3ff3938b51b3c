//! The variational reference (`exact::variational`): its densities against the formulas
//! and finite differences, its draws, the fit, a run that it leaves bit for bit alone
//! until it fits, and the Gaussian target it recovers (the barrier of the path from the
//! fitted reference vanishes, log Z stays the evidence).

use nrpt_core::exact::{
    AnnealingPath, ExactOptions, ExactTempering, GaussianPath, RoundReport, VariationalOptions,
    VariationalPath,
};
use nrpt_core::rng::{PhiloxStream, streams};

use crate::common::ExactOwned;

type Fitted = VariationalPath<GaussianPath, Vec<f64>>;

fn variational(d: usize, options: VariationalOptions) -> Fitted {
    let inner = GaussianPath::standard(d).unwrap();
    VariationalPath::new(inner, vec![0.0; Fitted::buffer_len(d)], options).unwrap()
}

/// A path fitted to the given states (one round).
fn fitted_to(d: usize, states: &[Vec<f64>]) -> Fitted {
    let mut path = variational(d, VariationalOptions::default());
    for x in states {
        path.observe_target(x);
    }
    let Ok(changed) = path.end_round();
    assert!(changed);
    path
}

/// Deterministic states with known moments: coordinate i of state j is
/// i + 0.5 + (i + 1)·(j − 9.5)/10, j = 0 … 19: mean i + 0.5, sd (i + 1)·√35/10
/// (the sample sd of 0 … 19 over 10).
fn spread_states(d: usize) -> Vec<Vec<f64>> {
    (0..20)
        .map(|j| {
            (0..d)
                .map(|i| i as f64 + 0.5 + (i as f64 + 1.0) * (j as f64 - 9.5) / 10.0)
                .collect()
        })
        .collect()
}

#[test]
fn the_fit_is_the_sample_mean_and_standard_deviation() {
    let d = 3;
    let path = fitted_to(d, &spread_states(d));
    assert_eq!(path.fits(), 1);
    let sd_of_0_to_19 = (35.0f64).sqrt();
    for i in 0..d {
        assert!(
            (path.mean()[i] - (i as f64 + 0.5)).abs() < 1e-12,
            "mean {i}"
        );
        let want = (i as f64 + 1.0) * sd_of_0_to_19 / 10.0;
        assert!(
            (path.scale()[i] - want).abs() < 1e-12,
            "scale {i}: {}",
            path.scale()[i]
        );
    }
}

/// log q, ℓ_q and their gradients against the formulas of the module docs and central
/// differences (tolerance 1e-6 relative: a step of 1e-5 on smooth quadratics).
#[test]
fn densities_and_gradients_match_the_formulas() {
    let d = 3;
    let mut path = fitted_to(d, &spread_states(d));
    let mut inner = GaussianPath::standard(d).unwrap();
    let (m, s) = (path.mean().to_vec(), path.scale().to_vec());
    let log_q = |x: &[f64]| -> f64 {
        (0..d)
            .map(|i| {
                let z = (x[i] - m[i]) / s[i];
                -0.5 * z * z - s[i].ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
            })
            .sum()
    };
    let x = [0.3, -1.2, 2.5];
    let mut g = [0.0; 3];
    let mut gi = [0.0; 3];
    let Ok(lq) = path.log_reference(&x, &mut g);
    assert!((lq - log_q(&x)).abs() < 1e-12);
    for i in 0..d {
        assert!((g[i] + (x[i] - m[i]) / (s[i] * s[i])).abs() < 1e-12);
    }
    // ℓ_q = log π₀ + ℓ − log q, with and without the gradient.
    let Ok(l0) = inner.log_reference(&x, &mut gi);
    let Ok(l) = inner.log_likelihood(&x);
    let want = l0 + l - log_q(&x);
    let Ok(ell) = path.log_likelihood(&x);
    let Ok(ell_g) = path.log_likelihood_gradient(&x, &mut g);
    assert!((ell - want).abs() < 1e-12);
    assert_eq!(ell.to_bits(), ell_g.to_bits());
    let h = 1e-5;
    for i in 0..d {
        let (mut up, mut down) = (x, x);
        up[i] += h;
        down[i] -= h;
        let Ok(a) = path.log_likelihood(&up);
        let Ok(b) = path.log_likelihood(&down);
        let numeric = (a - b) / (2.0 * h);
        assert!(
            (g[i] - numeric).abs() < 1e-6 * (1.0 + numeric.abs()),
            "coordinate {i}: {} against {numeric}",
            g[i]
        );
    }
}

/// Draws from q: mean and variance of 20,000 draws within 4 standard errors of m and s².
#[test]
fn reference_draws_follow_the_fitted_gaussian() {
    let d = 2;
    let mut path = fitted_to(d, &spread_states(d));
    let n = 20_000;
    let (mut sum, mut sq) = ([0.0; 2], [0.0; 2]);
    let mut x = [0.0; 2];
    for k in 0..n {
        let mut rng = PhiloxStream::new(5, 0, k, 0, streams::EXACT_EXPLORE);
        let Ok(()) = path.sample_reference(&mut x, &mut rng);
        for i in 0..d {
            sum[i] += x[i];
            sq[i] += x[i] * x[i];
        }
    }
    for i in 0..d {
        let (m, s) = (path.mean()[i], path.scale()[i]);
        let mean = sum[i] / n as f64;
        let var = sq[i] / n as f64 - mean * mean;
        assert!((mean - m).abs() < 4.0 * s / (n as f64).sqrt(), "mean {i}");
        // sd of a sample variance of normals: s²·√(2/n).
        assert!(
            (var - s * s).abs() < 4.0 * s * s * (2.0 / n as f64).sqrt(),
            "variance {i}"
        );
    }
}

#[test]
fn bad_settings_and_buffers_are_refused() {
    let inner = GaussianPath::standard(2).unwrap();
    assert!(VariationalPath::new(inner, vec![0.0; 9], VariationalOptions::default()).is_err());
    for options in [
        VariationalOptions {
            min_samples: 1,
            ..VariationalOptions::default()
        },
        VariationalOptions {
            min_scale: 0.0,
            ..VariationalOptions::default()
        },
        VariationalOptions {
            min_scale: f64::NAN,
            ..VariationalOptions::default()
        },
    ] {
        assert!(VariationalPath::new(inner, vec![0.0; 10], options).is_err());
    }
    // Too few states: no fit, the reference stays the wrapped path's.
    let mut path = variational(2, VariationalOptions::default());
    for _ in 0..15 {
        path.observe_target(&[1.0, 2.0]);
    }
    path.observe_target(&[f64::NAN, 0.0]);
    let Ok(changed) = path.end_round();
    assert!(!changed && !path.is_fitted());
    // A resumed path with a broken reference is refused.
    let mut buffer = vec![0.0; 10];
    buffer[2] = -1.0; // a negative scale
    assert!(VariationalPath::resume(inner, buffer, VariationalOptions::default(), 0, 1).is_err());
}

/// Runs `rounds` rounds of `p` chains, MALA, seed 11; returns every round's report.
fn run<A: AnnealingPath + Clone>(path: A, p: usize, d: usize, rounds: u32) -> (Vec<RoundReport>, A)
where
    A::Error: std::fmt::Debug,
{
    let mut owned = ExactOwned::new(p, d);
    let options = ExactOptions {
        seed: 11,
        ..ExactOptions::default()
    };
    let mut pt = ExactTempering::new(options, path, owned.buffers()).unwrap();
    let mut reports = Vec::new();
    for r in 0..rounds {
        if r + 1 == rounds {
            // The measuring round: a fixed kernel, and the reference as it is.
            pt.set_adapt_grid(false);
            pt.set_adapt_steps(false);
        }
        reports.push(pt.run_round().unwrap());
    }
    let path = pt.path().clone();
    (reports, path)
}

/// A reference that never gathers enough states leaves the run bit for bit the wrapped
/// path's: the hooks change nothing until the first fit.
#[test]
fn before_its_first_fit_the_path_is_the_wrapped_one() {
    let (d, p) = (4, 6);
    let never = VariationalOptions {
        min_samples: u64::MAX,
        ..VariationalOptions::default()
    };
    let (plain, _) = run(GaussianPath::standard(d).unwrap(), p, d, 6);
    let (wrapped, path) = run(variational(d, never), p, d, 6);
    assert!(!path.is_fitted());
    assert_eq!(plain, wrapped);
}

/// On the Gaussian path N(0, I) → N(0, I/10), D = 10, the reference fitted to the target
/// level is the target: after 12 rounds (the last fit from 2,048 iterations) the barrier
/// of the path from it is below 0.1 (against Λ = 2.83 from the fixed reference), and
/// log Z stays the evidence (5 ln(0.2π) = −2.3235) within 3 standard errors.
#[test]
fn a_fitted_reference_recovers_a_gaussian_target() {
    let (d, p) = (10, 8);
    let rounds = 12; // 2 + 4 + … + 4096 iterations
    let (fixed, _) = run(GaussianPath::standard(d).unwrap(), p, d, rounds);
    let (reports, path) = run(variational(d, VariationalOptions::default()), p, d, rounds);
    let last = reports.last().unwrap();
    let fixed_last = fixed.last().unwrap();
    let closed = GaussianPath::standard(d).unwrap().log_evidence();
    println!(
        "fixed: Λ̂ = {:.4}, log Z = {:.4} ± {:.4}; variational ({} fits): Λ̂ = {:.4} ± {:.4}, \
         log Z = {:.4} ± {:.4}; closed form {closed:.4}",
        fixed_last.global_barrier,
        fixed_last.log_normalizer.value,
        fixed_last.log_normalizer.standard_error,
        path.fits(),
        last.global_barrier,
        last.global_barrier_standard_error,
        last.log_normalizer.value,
        last.log_normalizer.standard_error,
    );
    assert!(path.fits() >= 5, "{} fits", path.fits());
    assert!(fixed_last.global_barrier > 2.5);
    assert!(last.global_barrier < 0.1, "Λ̂ = {}", last.global_barrier);
    let se = last.log_normalizer.standard_error;
    assert!(se > 0.0 && se < 0.05, "standard error {se}");
    assert!(
        (last.log_normalizer.value - closed).abs() < 3.0 * se.max(1e-3),
        "log Z = {} ± {se} against {closed}",
        last.log_normalizer.value
    );
    for i in 0..d {
        assert!(path.mean()[i].abs() < 0.1, "mean {i}: {}", path.mean()[i]);
        let want = 0.1f64.sqrt();
        assert!(
            (path.scale()[i] - want).abs() < 0.1 * want,
            "scale {i}: {}",
            path.scale()[i]
        );
    }
}
