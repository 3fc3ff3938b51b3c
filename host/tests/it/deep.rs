//! Data targets end to end: `nrpt deep`, `nrpt run --target classifier`,
//! `nrpt bench --target classifier`, and users' data files with their errors.

use crate::common;
use common::{json_of, nrpt, number};

/// A tiny comparison on the default model (so the bundled reference scores it): every
/// method has a row with the documented fields and intervals, the fidelity to the
/// reference among them; the tempering rows their round trips and swap rates; the
/// pre-trained ensemble its own row; the figures and tables are written.
#[test]
fn deep_reports_every_method() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deep");
    let v = json_of(&nrpt(&[
        "deep",
        "--backend",
        "cpu",
        "--ensembles",
        "2",
        "--epochs",
        "2",
        "--pretrain-epochs",
        "2",
        "--chains",
        "4",
        "--samples",
        "4",
        "--swap-sweep",
        "0.2",
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]));
    let rows = v["methods"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "pre-trained×P4",
            "DEO⋆-mSGD×P4",
            "DEO-mSGD×P4",
            "mSGD×P4",
            "cycSGHMC×T4",
            "SWAG×T4",
            "DEO⋆-SGHMC×P4",
            "cycSGHMC×P4",
            "MultiSWAG×P4",
            "HMC draws (exact)×K4",
        ]
    );
    // Exact sampling: the bundled reference's 480 draws in 120 realisations of K = 4.
    let exact = &v["exact_sampling"];
    assert_eq!(
        (&exact["draws"], &exact["samples"], &exact["realisations"]),
        (
            &serde_json::json!(480),
            &serde_json::json!(4),
            &serde_json::json!(120)
        ),
        "{exact}"
    );
    let reference_entropy = number(&v["reference"], "entropy");
    assert!(reference_entropy > 0.0, "{}", v["reference"]);
    let reference = &v["reference"];
    assert!(reference.is_object(), "{reference}");
    assert!(
        number(&reference["diagnostics"]["test_log_likelihood"], "rhat") < 1.1,
        "{reference}"
    );
    for r in rows {
        let acc = number(r, "accuracy");
        assert!((0.5..=1.0).contains(&acc), "{r}");
        assert!(number(r, "nll") > 0.0 && number(r, "ece") >= 0.0);
        assert!(number(r, "seconds") >= 0.0);
        assert!(r["samples"].as_u64().unwrap() > 0, "{r}");
        let exact = r["exact_sampling"].as_bool().unwrap();
        let repetitions = if exact { 120 } else { 2 };
        assert_eq!(r["per_seed"].as_array().unwrap().len(), repetitions);
        assert!(number(r, "gradient_evaluations") > 0.0, "{r}");
        assert!(number(r, "entropy") >= 0.0, "{r}");
        if !exact {
            // Every method beside exact sampling at its own K: the excess is its TV
            // minus exact sampling's, inside its interval.
            let excess = number(r, "total_variation_excess");
            let tv_exact = number(r, "exact_total_variation");
            assert!((excess - (number(r, "total_variation") - tv_exact)).abs() < 1e-12);
            let ci = r["total_variation_excess_ci"].as_array().unwrap();
            assert!(ci[0].as_f64().unwrap() <= excess && excess <= ci[1].as_f64().unwrap());
        }
        let agreement = number(r, "agreement");
        assert!((0.5..=1.0).contains(&agreement), "{r}");
        let tv = number(r, "total_variation");
        assert!((0.0..=0.5).contains(&tv), "{r}");
        for (key, value) in [
            ("accuracy", acc),
            ("nll", number(r, "nll")),
            ("ece", number(r, "ece")),
            ("agreement", agreement),
            ("total_variation", tv),
        ] {
            let ci = r[format!("{key}_ci")].as_array().unwrap();
            let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
            // The interval is of the mean over seeds of each example's score: it holds
            // the value (the same mean over all examples).
            assert!(
                lo <= value + 1e-12 && value <= hi + 1e-12,
                "{key}: {lo} {value} {hi}"
            );
        }
    }
    // Compute counted: the methods from P pre-trained networks cost more than those
    // from one, by the pre-training of the other P − 1 (the same sampling budget).
    let grads = |i: usize| number(&rows[i], "gradient_evaluations");
    assert!(grads(1) > grads(4) && grads(1) == grads(3) && grads(8) == grads(1));
    assert!(grads(0) < grads(1));
    for i in [1, 2, 6] {
        let r = &rows[i];
        let steady = number(r, "steady_round_trips_per_100_epochs");
        assert!(steady >= 0.0, "{r}");
        assert!(number(r, "lemma1_round_trips_per_100_epochs") > 0.0, "{r}");
        assert_eq!(
            r["steady_pair_indicator_rates"].as_array().unwrap().len(),
            3
        );
    }
    assert!(
        v["round_trip_ratio"].is_object(),
        "{}",
        v["round_trip_ratio"]
    );
    for r in &rows[1..3] {
        number(r, "round_trips_per_100_epochs");
        assert_eq!(r["pair_indicator_rates"].as_array().unwrap().len(), 3);
        assert!(r["window"].as_u64().unwrap() >= 1);
    }
    assert_eq!(rows[2]["window"], 1);
    assert!(rows[3]["round_trips_per_100_epochs"].is_null());
    assert_eq!(v["swap_sweep"].as_array().unwrap().len(), 1);
    assert_eq!(v["examples"], serde_json::json!([1348, 449]));
    assert_eq!(v["layers"], serde_json::json!([64, 64, 10]));
    for f in [
        "results.json",
        "table.csv",
        "samples_curves.csv",
        "samples_total_variation.png",
        "fig7a_round_trips.png",
        "fig7a_round_trips.svg",
        "fig7a_round_trips.csv",
        "fig7b_accuracy_by_level.png",
        "fig7c_learning_rates.png",
        "fig7d_swap_rates.svg",
        "fig7cd_ladder_and_rates.csv",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
}

/// Another network than the bundled reference's: no reference, so no fidelity columns,
/// and a note that says why; a reference folder of another model is refused.
#[test]
fn deep_without_a_matching_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deep");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "deep",
            "--backend",
            "cpu",
            "--ensembles",
            "1",
            "--epochs",
            "1",
            "--pretrain-epochs",
            "1",
            "--chains",
            "3",
            "--samples",
            "2",
            "--hidden",
            "8",
            "-o",
            out.to_str().unwrap(),
            "--force",
            "--json",
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let a = args(&[]);
    let v = json_of(&nrpt(&a.iter().map(String::as_str).collect::<Vec<_>>()));
    assert!(v["reference"].is_null(), "{}", v["reference"]);
    for r in v["methods"].as_array().unwrap() {
        assert!(
            r["agreement"].is_null() && r["total_variation_ci"].is_null(),
            "{r}"
        );
    }
    // The bundled reference belongs to MLP [64]: given explicitly, it is refused.
    let bundled = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/reference/digits-mlp64"
    );
    let a = args(&["--reference", bundled]);
    let o = nrpt(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let stderr = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("reference"), "{stderr}");
}

/// `--preset authors-code` takes the authors' deep trainer for every tempering run:
/// the shared pre-step batch loss as the energy, and their ladder rounded to 4 decimals
/// per example (not of the η/N the sampler runs, which would round to 0).
#[test]
fn deep_runs_the_authors_rules() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deep");
    let v = json_of(&nrpt(&[
        "deep",
        "--backend",
        "cpu",
        "--ensembles",
        "1",
        "--epochs",
        "2",
        "--pretrain-epochs",
        "1",
        "--chains",
        "3",
        "--samples",
        "2",
        "--hidden",
        "8",
        "--preset",
        "authors-code",
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]));
    let rules = &v["rules"];
    assert_eq!(rules["step_energy"], "shared-batch", "{rules}");
    assert_eq!(rules["sweep_order"], "sequential", "{rules}");
    assert_eq!(rules["ladder_decimals"], 4, "{rules}");
    assert!(number(&v["methods"][1], "nll") > 0.0);
}

/// `nrpt run` samples a classifier's posterior on the bundled digits and scores it.
#[test]
fn run_accepts_a_classifier() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let v = json_of(&nrpt(&[
        "run",
        "--backend",
        "cpu",
        "--target",
        "classifier",
        "--hidden",
        "0",
        "-n",
        "300",
        "-e",
        "2",
        "-p",
        "4",
        "--warmup",
        "100",
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]));
    let s = &v["classifier"];
    // Softmax regression on the digits after 300 mini-batches: far above chance (10%).
    assert!(number(s, "accuracy") > 0.8, "{s}");
    assert_eq!(v["config"]["target"], "classifier");
    assert!(out.join("samples.npy").exists());
    assert!(
        !out.join("samples.csv").exists(),
        "650 coordinates go to .npy only"
    );
}

/// Users' files: a CSV round trip, and errors that name the file, line and field with
/// exit status 2.
#[test]
fn users_data_and_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    // Two separable classes in 3 features.
    let mut text = String::from("a,b,c,label\n");
    for i in 0..80 {
        let y = i % 2;
        text.push_str(&format!(
            "{},{},{},{y}\n",
            y as f64 + 0.01 * i as f64,
            1.0 - y as f64,
            0.5
        ));
    }
    std::fs::write(&train, &text).unwrap();
    let out = dir.path().join("o");
    let v = json_of(&nrpt(&[
        "run",
        "--backend",
        "cpu",
        "--target",
        "classifier",
        "--data",
        train.to_str().unwrap(),
        "--hidden",
        "0",
        "--batch",
        "8",
        "-n",
        "200",
        "-e",
        "1",
        "-p",
        "3",
        "--warmup",
        "50",
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert!(number(&v["classifier"], "accuracy") > 0.9);
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "1,2,0\n3,x,1\n").unwrap();
    let o = nrpt(&[
        "run",
        "--target",
        "classifier",
        "--data",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.csv") && err.contains("line 2") && err.contains("field 2"),
        "{err}"
    );
    let o = nrpt(&[
        "deep",
        "--data",
        dir.path().join("missing.npy").to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--labels"));
}

/// The bench reports the rates the issue asks for, beside the machine's.
#[test]
fn bench_mlp_reports_rates_and_the_machine() {
    let v = json_of(&nrpt(&[
        "bench",
        "--target",
        "classifier",
        "-e",
        "2",
        "-p",
        "2",
        "-n",
        "5",
        "--hidden",
        "32",
        "--machine-size",
        "128",
        "--json",
    ]));
    for key in [
        "chain_steps_per_sec",
        "examples_per_sec",
        "gflops",
        "machine_gflops",
        "efficiency",
    ] {
        assert!(number(&v, key) > 0.0, "{key}: {v}");
    }
    assert_eq!(v["layers"], serde_json::json!([64, 32, 10]));
}
