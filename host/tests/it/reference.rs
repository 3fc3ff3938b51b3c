//! `nrpt reference` end to end: a tiny reference posterior written, read back by
//! `nrpt deep --reference`, and its bounds.

use crate::common;
use common::{json_of, nrpt, number};

/// A few short HMC trajectories on a small network: the files and fields documented in
/// docs/src/reference/outputs.md, then `nrpt deep` scoring against that folder.
#[test]
fn a_reference_is_written_and_scores_a_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ref");
    let meta = json_of(&nrpt(&[
        "reference",
        "--hidden",
        "8",
        "--chains",
        "2",
        "--warmup",
        "10",
        "--samples",
        "8",
        "--max-leapfrog-steps",
        "8",
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]));
    for f in [
        "reference.json",
        "reference.npy",
        "trace_test_log_likelihood.csv",
        "trace_test_log_likelihood.png",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    assert_eq!(meta["model"]["layers"], serde_json::json!([64, 8, 10]));
    assert_eq!(meta["sampler"]["samples"], 8);
    let d = &meta["diagnostics"];
    assert_eq!(d["predictive_quantities"], 4490);
    assert_eq!(d["acceptance"].as_array().unwrap().len(), 2);
    assert!((0.0..=1.0).contains(&number(&meta, "accuracy")), "{meta}");
    assert!(number(&meta, "nll") > 0.0);
    assert!(
        meta["command"]
            .as_str()
            .unwrap()
            .starts_with("nrpt reference")
    );

    let deep = dir.path().join("deep");
    let v = json_of(&nrpt(&[
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
        "--reference",
        out.to_str().unwrap(),
        "-o",
        deep.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["reference"]["source"], out.to_str().unwrap());
    for r in v["methods"].as_array().unwrap() {
        number(r, "agreement");
        number(r, "total_variation");
    }
}

/// Bad settings and a run too large for `--max-memory` exit with status 2 before any
/// work, naming the flag; nothing is written.
#[test]
fn bad_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ref");
    for (args, flag) in [
        (&["--chains", "1"][..], "--chains"),
        (&["--trajectory-length", "0"][..], "--trajectory-length"),
        (&["--target-acceptance", "1"][..], "--target-acceptance"),
        (&["--samples", "2"][..], "--samples"),
        (
            &["--samples", "1000000", "--max-memory", "1G"][..],
            "--max-memory",
        ),
    ] {
        let mut a = vec!["reference", "-o", out.to_str().unwrap()];
        a.extend_from_slice(args);
        let o = nrpt(&a);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote {out:?}");
    }
}
