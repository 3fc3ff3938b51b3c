//! Exact tempering of a classifier's posterior from the command line: `nrpt run --target
//! classifier --exact` reports Λ̂, the log evidence log Z with its standard error and the
//! test accuracy of its posterior samples; `--exact` elsewhere is refused.

use crate::common;
use common::{json_of, nrpt, number, stderr};

/// A tiny softmax regression run (3 chains, 32 iterations, HMC with 3 leapfrog steps):
/// finite estimates, no closed form, and a predictive far above chance (0.1 on digits).
#[test]
fn exact_softmax_regression_reports_lambda_log_z_and_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c");
    let args = &[
        "run",
        "--target",
        "classifier",
        "--exact",
        "--hidden",
        "0",
        "-p",
        "3",
        "-n",
        "32",
        "-e",
        "1",
        "--leapfrog-steps",
        "3",
        "--seed",
        "2",
        "--json",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ];
    let v = json_of(&nrpt(args));
    let lambda = number(&v, "lambda");
    assert!(lambda.is_finite() && lambda > 0.0, "{v}");
    let (z, se) = (number(&v, "log_z"), number(&v, "log_z_se"));
    assert!(
        z.is_finite() && z < 0.0 && se.is_finite() && se > 0.0,
        "{v}"
    );
    assert!(v["closed_form"].is_null(), "{v}");
    assert_eq!(v["explorer"]["name"], "hmc");
    assert_eq!(v["window"], 1);
    let p = &v["predictive"];
    assert!(number(p, "samples") >= 1.0, "{v}");
    let acc = number(p, "accuracy");
    assert!(acc > 0.6 && acc <= 1.0, "accuracy {acc}: {v}");
    assert!(number(p, "nll").is_finite(), "{v}");
    // The default reference: two legs, and the tables and figure of both.
    assert_eq!(v["reference"], "stabilized");
    assert_eq!(v["fixed_leg"]["chains"], 3, "{v}");
    for file in [
        "summary.json",
        "lambda.csv",
        "grid.csv",
        "rounds.csv",
        "fixed-leg-grid.csv",
        "fixed-leg-rounds.csv",
        "lambda.svg",
    ] {
        assert!(out.join(file).is_file(), "{file}");
    }
}

/// `--ais`: the summary holds the AIS estimate beside the exact one and their agreement
/// (the difference and combined error as the exact and AIS figures give them), with one
/// log weight per particle; `--ais 1` is refused with status 2 before anything runs.
#[test]
fn ais_estimates_log_z_beside_the_exact_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a");
    let mut args = vec![
        "run",
        "--target",
        "classifier",
        "--exact",
        "--hidden",
        "0",
        "-p",
        "3",
        "-n",
        "32",
        "-e",
        "2",
        "--leapfrog-steps",
        "3",
        "--ais",
        "3",
        "--ais-steps",
        "20",
        "--json",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ];
    let v = json_of(&nrpt(&args));
    let a = &v["ais"];
    let (z, se) = (number(a, "log_z"), number(a, "log_z_se"));
    assert!(z.is_finite() && z < 0.0 && se.is_finite(), "{a}");
    assert_eq!(a["log_weights"].as_array().map(Vec::len), Some(3), "{a}");
    assert_eq!(a["particles"], 3);
    assert_eq!(a["explorer"], "hmc");
    let g = &a["agreement"];
    let (ez, ese) = (number(&v, "log_z"), number(&v, "log_z_se"));
    assert_eq!(number(g, "difference"), ez - z, "{g}");
    assert_eq!(number(g, "combined_se"), ese.hypot(se), "{g}");
    let apart = number(g, "standard_errors_apart");
    assert_eq!(g["agree"], apart <= 2.576, "{g}");
    // Two ensembles: the stated error names its source.
    assert!(v["log_z_se_between_ensembles"].is_number(), "{v}");
    let one = out.to_str().unwrap().to_string() + "1";
    args.truncate(args.len() - 1);
    args.push(&one);
    let i = args.iter().position(|a| *a == "--ais").unwrap();
    args[i + 1] = "1";
    let o = nrpt(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("ais"), "{}", stderr(&o));
}

#[test]
fn exact_is_refused_on_other_targets() {
    let dir = tempfile::tempdir().unwrap();
    for target in ["modes2d", "gaussian-path"] {
        let out = dir.path().join(target);
        let o = nrpt(&[
            "run",
            "--target",
            target,
            "--exact",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{target}: {}", stderr(&o));
        assert!(stderr(&o).contains("exact"), "{target}: {}", stderr(&o));
    }
    // `--quick` without `--exact`.
    let o = nrpt(&[
        "run",
        "--target",
        "classifier",
        "--quick",
        "--quiet",
        "-o",
        dir.path().join("q").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
