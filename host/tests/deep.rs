//! Data targets end to end: `nrpt deep`, `nrpt run --target classifier`,
//! `nrpt bench --model mlp`, and users' data files with their errors.

mod common;
use common::{json_of, nrpt, number};

/// A tiny comparison: every method has a row with the documented fields, the
/// tempering rows their round trips and swap rates; the figures and table are written.
#[test]
fn deep_reports_every_method() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deep");
    let v = json_of(&nrpt(&[
        "deep",
        "--backend",
        "cpu",
        "--seeds",
        "2",
        "--epochs",
        "3",
        "--pretrain-epochs",
        "2",
        "--chains",
        "4",
        "--hidden",
        "16",
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
            "DEO⋆-mSGD×P4",
            "DEO-mSGD×P4",
            "mSGD×P4",
            "cycSGHMC×T4",
            "SWAG×T4"
        ]
    );
    for r in rows {
        let acc = number(r, "accuracy");
        assert!((0.5..=1.0).contains(&acc), "{r}");
        assert!(number(r, "nll") > 0.0 && number(r, "ece") >= 0.0);
        assert!(number(r, "seconds") >= 0.0);
        assert!(r["samples"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["per_seed"].as_array().unwrap().len(), 2);
    }
    for r in &rows[..2] {
        number(r, "round_trips_per_100_epochs");
        assert_eq!(r["pair_indicator_rates"].as_array().unwrap().len(), 3);
        assert!(r["window"].as_u64().unwrap() >= 1);
    }
    assert_eq!(rows[1]["window"], 1);
    assert!(rows[2]["round_trips_per_100_epochs"].is_null());
    assert_eq!(v["swap_sweep"].as_array().unwrap().len(), 1);
    assert_eq!(v["examples"], serde_json::json!([1348, 449]));
    assert_eq!(v["layers"], serde_json::json!([64, 16, 10]));
    for f in [
        "results.json",
        "table.csv",
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
        "--model",
        "mlp",
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
