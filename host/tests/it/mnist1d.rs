//! The bundled MNIST-1D through the command line: `--dataset mnist1d` for `nrpt deep`
//! and for `nrpt run --target classifier` (flag and TOML key), and the errors of a
//! `--dataset` combined with users' files.

use crate::common;
use common::{json_of, nrpt, number, stderr};

/// `nrpt deep --dataset mnist1d --quick` takes the flag and runs on 12,800 + 3,200
/// signals of 40 values (cut to one seed, two chains and two epochs, the fewest that
/// keep a tempering sample: the quick run itself is for release builds).
#[test]
fn deep_runs_on_mnist1d() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deep");
    let v = json_of(&nrpt(&[
        "deep",
        "--dataset",
        "mnist1d",
        "--quick",
        "--backend",
        "cpu",
        "--ensembles",
        "1",
        "--epochs",
        "2",
        "--pretrain-epochs",
        "1",
        "--chains",
        "2",
        "--hidden",
        "8",
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["examples"], serde_json::json!([12800, 3200]));
    assert_eq!(v["layers"], serde_json::json!([40, 8, 10]));
    assert!(
        v["data"].as_str().unwrap().starts_with("MNIST-1D"),
        "{}",
        v["data"]
    );
    for r in v["methods"].as_array().unwrap() {
        // Two epochs from one of pre-training: above chance (10 %), far from 100 %.
        let acc = number(r, "accuracy");
        assert!((0.15..0.9).contains(&acc), "{r}");
    }
    assert!(out.join("results.json").exists());
}

/// `nrpt run --target classifier --dataset mnist1d`, from the flag and from a TOML
/// file; the configuration records the key.
#[test]
fn run_takes_the_dataset_as_a_flag_and_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let common = [
        "--backend",
        "cpu",
        "--target",
        "classifier",
        "--hidden",
        "0",
        "-n",
        "200",
        "-e",
        "1",
        "-p",
        "2",
        "--warmup",
        "100",
        "--json",
    ];
    let out = dir.path().join("flag");
    let mut args = vec!["run", "--dataset", "mnist1d", "-o", out.to_str().unwrap()];
    args.extend(common);
    let v = json_of(&nrpt(&args));
    assert_eq!(v["config"]["dataset"], "mnist1d");
    // Softmax regression on MNIST-1D after 200 mini-batches: above chance (10 %) and
    // below what linear models reach on it (about 32 %, the package's README).
    let acc = number(&v["classifier"], "accuracy");
    assert!((0.15..0.45).contains(&acc), "{}", v["classifier"]);

    let toml = dir.path().join("run.toml");
    std::fs::write(&toml, "dataset = \"mnist1d\"\n").unwrap();
    let out = dir.path().join("toml");
    let mut args = vec![
        "run",
        "--config",
        toml.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(common);
    let w = json_of(&nrpt(&args));
    assert_eq!(w["config"]["dataset"], "mnist1d");
    assert_eq!(w["classifier"]["accuracy"], v["classifier"]["accuracy"]);
}

/// `--dataset` with a file flag, an unknown name, and the key on a target that reads
/// no data: each answer names what is wrong.
#[test]
fn dataset_errors_name_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("train.csv");
    std::fs::write(&csv, "1,2,0\n3,4,1\n5,6,0\n7,8,1\n").unwrap();
    let csv = csv.to_str().unwrap();
    for args in [
        vec!["deep", "--dataset", "mnist1d", "--data", csv],
        vec!["deep", "--dataset", "digits", "--test-data", csv],
        vec![
            "run",
            "--target",
            "classifier",
            "--dataset",
            "mnist1d",
            "--data",
            csv,
        ],
    ] {
        let o = nrpt(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("--dataset") && e.contains("cannot be combined with --"),
            "{args:?}: {e}"
        );
    }
    let o = nrpt(&["deep", "--dataset", "mnist"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("digits or mnist1d"), "{}", stderr(&o));

    let toml = dir.path().join("bad.toml");
    std::fs::write(&toml, "target = \"classifier\"\ndataset = \"cifar\"\n").unwrap();
    let o = nrpt(&["run", "--config", toml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("mnist1d"), "{}", stderr(&o));

    // On the 2D toy the key does nothing: a warning, an error with --strict.
    let out = dir.path().join("toy");
    let o = nrpt(&[
        "run",
        "--dataset",
        "mnist1d",
        "-n",
        "50",
        "-e",
        "1",
        "--strict",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--dataset has no effect"),
        "{}",
        stderr(&o)
    );
}
