//! `nrpt reproduce --shard i/n` and `nrpt reproduce merge`: a run cut into shards and
//! merged gives the whole run's outputs to the byte (but for its wall-clock seconds),
//! and the merge refuses, by name, any set of folders that is not every shard of one run
//! exactly once.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::common;
use common::{json_of, nrpt};

/// Output files whose bytes may differ between a whole run and its merged shards: none
/// but the JSON fields listed in [`VARYING_FIELDS`] (and the ownership marker, which
/// names the command that wrote the folder).
const MARKER: &str = ".nrpt-output.json";
/// Fields of results.json that legitimately differ: wall-clock time (the merge reports
/// the shards' seconds added up).
const VARYING_FIELDS: [&str; 1] = ["seconds"];

fn run(args: &[&str]) -> Value {
    json_of(&nrpt(args))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The small reproduction every test here runs: 3 seeds, 240 iterations.
fn reproduce(out: &Path, shard: Option<&str>) -> Value {
    let mut a = vec![
        "reproduce",
        "--iterations",
        "240",
        "--ensembles",
        "3",
        "--seed",
        "7",
        "--backend",
        "cpu",
        "-o",
        s(out),
        "--json",
        "--quiet",
    ];
    if let Some(sh) = shard {
        a.extend(["--shard", sh]);
    }
    run(&a)
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `results.json` without the fields that may differ.
fn stable_json(path: &Path) -> Value {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for f in VARYING_FIELDS {
        v.as_object_mut().unwrap().remove(f);
    }
    v
}

/// Every file of `whole` is in `merged` with the same bytes (results.json: the same
/// JSON but for [`VARYING_FIELDS`]), and nothing more.
fn assert_same_outputs(whole: &Path, merged: &Path) {
    assert_eq!(files(whole), files(merged));
    let mut compared = 0;
    for name in files(whole) {
        if name == MARKER {
            continue;
        }
        let (a, b) = (whole.join(&name), merged.join(&name));
        if name == "results.json" {
            assert_eq!(stable_json(&a), stable_json(&b), "{name} differs");
        } else {
            assert!(
                std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
                "{name} differs between the whole run and the merged shards"
            );
        }
        compared += 1;
    }
    // Tables, figures (PNG, SVG, CSV) and results.json.
    assert!(compared >= 19, "only {compared} files compared");
}

fn merge(inputs: &[&Path], out: &Path) -> std::process::Output {
    let mut a = vec!["reproduce", "merge"];
    a.extend(inputs.iter().map(|p| s(p)));
    a.extend(["-o", s(out), "--json", "--quiet"]);
    nrpt(&a)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The merge fails with status 2 (bad input), its message holding every one of `names`, and writes
/// nothing.
fn assert_refused(o: std::process::Output, out: &Path, names: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    for n in names {
        assert!(err.contains(n), "the error does not name `{n}`: {err}");
    }
    assert!(!out.exists(), "a refused merge wrote {}", out.display());
}

/// The runs the tests share: the whole run, its 2 shards and its 3 shards, made once
/// (side by side) in a fresh folder of the build's scratch space.
struct Shards {
    root: PathBuf,
    whole: PathBuf,
    two: [PathBuf; 2],
    three: [PathBuf; 3],
}

fn shards() -> &'static Shards {
    static SHARDS: OnceLock<Shards> = OnceLock::new();
    SHARDS.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shards-reproduce");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let t = Shards {
            whole: root.join("whole"),
            two: [root.join("a0"), root.join("a1")],
            three: [root.join("b0"), root.join("b1"), root.join("b2")],
            root,
        };
        let mut runs: Vec<(&Path, Option<String>)> = vec![(&t.whole, None)];
        runs.extend(
            t.two
                .iter()
                .enumerate()
                .map(|(i, p)| (p.as_path(), Some(format!("{i}/2")))),
        );
        runs.extend(
            t.three
                .iter()
                .enumerate()
                .map(|(i, p)| (p.as_path(), Some(format!("{i}/3")))),
        );
        std::thread::scope(|scope| {
            for (out, shard) in &runs {
                scope.spawn(move || {
                    let v = reproduce(out, shard.as_deref());
                    assert_eq!(v["shard"]["shard"].as_str(), shard.as_deref());
                });
            }
        });
        t
    })
}

#[test]
fn reproduce_shards_merge_to_the_whole_run_byte_for_byte() {
    let t = shards();
    // The shards' summaries: blocks of 2 + 1 seeds, one configuration.
    let summary = |p: &Path| -> Value {
        serde_json::from_slice(&std::fs::read(p.join("shard.json")).unwrap()).unwrap()
    };
    let (s0, s1) = (summary(&t.two[0]), summary(&t.two[1]));
    assert_eq!(s0["seeds"], serde_json::json!([0, 2]));
    assert_eq!(s1["seeds"], serde_json::json!([2, 3]));
    assert_eq!(s0["config_hash"], s1["config_hash"]);
    assert_eq!(s0["command"], "reproduce");
    // A shard without seed 0 has no index paths to draw (Figure 6).
    assert!(t.two[0].join("fig6_index_paths.csv").exists());
    assert!(!t.two[1].join("fig6_index_paths.csv").exists());

    let m2 = t.root.join("m2");
    let v = json_of(&merge(&[&t.two[1], &t.two[0]], &m2));
    assert!(v.get("shard").is_none(), "a merge is a whole run");
    assert_same_outputs(&t.whole, &m2);
    let m3 = t.root.join("m3");
    json_of(&merge(&[&t.three[0], &t.three[1], &t.three[2]], &m3));
    assert_same_outputs(&t.whole, &m3);
}

#[test]
fn reproduce_merge_refuses_what_is_not_every_shard_of_one_run() {
    let t = shards();
    let out = t.root.join("refused");
    // A shard missing.
    assert_refused(
        merge(&[&t.three[0], &t.three[2]], &out),
        &out,
        &["1/3", "missing"],
    );
    // The same shard twice.
    assert_refused(
        merge(&[&t.two[0], &t.two[1], &t.two[0]], &out),
        &out,
        &["0/2", "twice", s(&t.two[0])],
    );
    // Shards of two cuts of the run.
    assert_refused(
        merge(&[&t.two[0], &t.three[1], &t.three[2]], &out),
        &out,
        &[s(&t.three[1]), "another run"],
    );
    // A folder that is not a shard (the whole run's).
    assert_refused(
        merge(&[&t.two[0], &t.whole], &out),
        &out,
        &[s(&t.whole), "not a shard"],
    );
    // Shards of another configuration (another seed).
    let other = t.root.join("other");
    run(&[
        "reproduce",
        "--iterations",
        "240",
        "--ensembles",
        "3",
        "--seed",
        "8",
        "--backend",
        "cpu",
        "--shard",
        "1/2",
        "-o",
        s(&other),
        "--json",
        "--quiet",
    ]);
    assert_refused(
        merge(&[&t.two[0], &other], &out),
        &out,
        &[s(&other), "another run"],
    );
    // A shard whose records were tampered with.
    let bad = t.root.join("bad");
    std::fs::create_dir(&bad).unwrap();
    for f in ["shard.json", "records.json"] {
        std::fs::copy(t.two[1].join(f), bad.join(f)).unwrap();
    }
    let records = bad.join("records.json");
    let mut r: Value = serde_json::from_slice(&std::fs::read(&records).unwrap()).unwrap();
    r["jobs"][3][0]["trace"]["ladder"]
        .as_array_mut()
        .unwrap()
        .pop();
    std::fs::write(&records, serde_json::to_vec(&r).unwrap()).unwrap();
    assert_refused(
        merge(&[&t.two[0], &bad], &out),
        &out,
        &[s(&bad), "records.json", "trace entries"],
    );
    // The merge never replaces a folder nrpt did not write.
    let mine = t.root.join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep me").unwrap();
    let o = merge(&[&t.two[0], &t.two[1]], &mine);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "keep me"
    );
}

#[test]
fn bad_shards_are_usage_errors_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    for bad in ["3/2", "2/2", "a/b", "0/0", "1"] {
        let o = nrpt(&["reproduce", "--shard", bad, "-o", s(&out)]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("--shard") && err.contains("is not a shard"),
            "{bad}: {err}"
        );
    }
    // More shards than seeds.
    for command in ["reproduce", "deep"] {
        let o = nrpt(&[command, "--ensembles", "2", "--shard", "2/3", "-o", s(&out)]);
        assert_eq!(o.status.code(), Some(2), "{command}: {}", stderr(&o));
        assert!(stderr(&o).contains("at most 2 shards"), "{}", stderr(&o));
        assert!(!out.exists());
    }
    let o = nrpt(&["deep", "--shard", "3/2", "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--shard") && stderr(&o).contains("is not a shard"));
}

// `nrpt deep --shard i/n` and `nrpt deep merge`.

/// Fields of a deep results.json that legitimately differ between a whole run and its
/// merged shards: wall-clock seconds (of the run and of every row), and what names the
/// command line, the machine and the date.
const DEEP_VARYING_FIELDS: [&str; 4] = ["seconds", "command", "machine", "date"];
/// The rows of a deep results.json, each with its own `seconds`.
const DEEP_ROWS: [&str; 3] = ["methods", "eta_sweep", "swap_sweep"];

/// The tiny comparison the deep tests run: 3 seeds of 4 chains, 2 epochs of sampling
/// and at most 2 of pre-training, 4 samples, one learning-rate factor and one swap rate
/// swept (every group of rows).
fn deep(out: &Path, seed: &str, shard: Option<&str>) -> Value {
    let mut a = vec![
        "deep",
        "--ensembles",
        "3",
        "--epochs",
        "2",
        "--pretrain-epochs",
        "2",
        "--chains",
        "4",
        "--samples",
        "4",
        "--eta-sweep",
        "0.5",
        "--swap-sweep",
        "0.2",
        "--seed",
        seed,
        "--backend",
        "cpu",
        "-o",
        s(out),
        "--json",
        "--quiet",
    ];
    if let Some(sh) = shard {
        a.extend(["--shard", sh]);
    }
    run(&a)
}

/// A deep results.json without the fields that may differ.
fn deep_stable_json(path: &Path) -> Value {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let o = v.as_object_mut().unwrap();
    for f in DEEP_VARYING_FIELDS {
        assert!(o.remove(f).is_some(), "results.json lacks `{f}`");
    }
    for group in DEEP_ROWS {
        for row in o[group].as_array_mut().unwrap() {
            assert!(row.as_object_mut().unwrap().remove("seconds").is_some());
        }
    }
    v
}

/// table.csv without its last column, `seconds`.
fn without_seconds(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.lines().next().unwrap().ends_with(",seconds"), "{text}");
    text.lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect()
}

/// Every file of the whole comparison `whole` is in `merged` with the same bytes
/// (results.json and table.csv: the same but for [`DEEP_VARYING_FIELDS`]).
fn assert_same_deep_outputs(whole: &Path, merged: &Path) {
    assert_eq!(files(whole), files(merged));
    let mut compared = 0;
    for name in files(whole) {
        let (a, b) = (whole.join(&name), merged.join(&name));
        match name.as_str() {
            MARKER => continue,
            "results.json" => {
                let (a, b) = (deep_stable_json(&a), deep_stable_json(&b));
                let keys: Vec<&String> = a.as_object().unwrap().keys().collect();
                assert_eq!(keys, b.as_object().unwrap().keys().collect::<Vec<_>>());
                for k in keys {
                    assert!(a[k] == b[k], "results.json differs in `{k}`");
                }
            }
            "table.csv" => assert_eq!(without_seconds(&a), without_seconds(&b)),
            _ => assert!(
                std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
                "{name} differs between the whole comparison and the merged shards"
            ),
        }
        compared += 1;
    }
    // results.json, table.csv, the sample curves and Figure 7's panels with their data.
    assert!(compared >= 12, "only {compared} files compared");
}

fn deep_merge(inputs: &[&Path], out: &Path) -> std::process::Output {
    let mut a = vec!["deep", "merge"];
    a.extend(inputs.iter().map(|p| s(p)));
    a.extend(["-o", s(out), "--json", "--quiet"]);
    nrpt(&a)
}

#[test]
fn deep_shards_merge_to_the_whole_comparison_and_refuse_what_is_not_one() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shards-deep");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let (whole, a0, a1, other) = (
        root.join("whole"),
        root.join("a0"),
        root.join("a1"),
        root.join("other"),
    );
    let runs: [(&Path, &str, Option<&str>); 4] = [
        (&whole, "7", None),
        (&a0, "7", Some("0/2")),
        (&a1, "7", Some("1/2")),
        (&other, "8", Some("1/2")),
    ];
    std::thread::scope(|scope| {
        for (out, seed, shard) in runs {
            scope.spawn(move || {
                let v = deep(out, seed, shard);
                assert_eq!(v["shard"]["shard"].as_str(), shard);
            });
        }
    });
    let summary = |p: &Path| -> Value {
        serde_json::from_slice(&std::fs::read(p.join("shard.json")).unwrap()).unwrap()
    };
    let (s0, s1) = (summary(&a0), summary(&a1));
    assert_eq!(s0["command"], "deep");
    assert_eq!(s0["seeds"], serde_json::json!([0, 2]));
    assert_eq!(s1["seeds"], serde_json::json!([2, 3]));
    assert_eq!(s0["config_hash"], s1["config_hash"]);
    // A shard's own results are of its seeds.
    let r1: Value =
        serde_json::from_slice(&std::fs::read(a1.join("results.json")).unwrap()).unwrap();
    assert_eq!(r1["methods"][1]["per_seed"].as_array().unwrap().len(), 1);

    let merged = root.join("merged");
    let v = json_of(&deep_merge(&[&a1, &a0], &merged));
    assert!(v.get("shard").is_none(), "a merge is a whole run");
    assert_same_deep_outputs(&whole, &merged);

    let out = root.join("refused");
    // A shard missing.
    assert_refused(deep_merge(&[&a0], &out), &out, &["1/2", "missing"]);
    // A folder that is not a shard (the whole run's).
    assert_refused(
        deep_merge(&[&a0, &whole], &out),
        &out,
        &[s(&whole), "not a shard"],
    );
    // A shard of another configuration (another seed).
    assert_refused(
        deep_merge(&[&a0, &other], &out),
        &out,
        &[s(&other), "another run"],
    );
    // A shard of another command (its summary says so).
    let foreign = root.join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    let mut summary1 = s1.clone();
    summary1["command"] = "reproduce".into();
    std::fs::write(
        foreign.join("shard.json"),
        serde_json::to_vec(&summary1).unwrap(),
    )
    .unwrap();
    assert_refused(
        deep_merge(&[&a0, &foreign], &out),
        &out,
        &[s(&foreign), "nrpt reproduce, not of nrpt deep"],
    );
    // A shard whose records were tampered with.
    let bad = root.join("bad");
    std::fs::create_dir(&bad).unwrap();
    for f in ["shard.json", "records.json"] {
        std::fs::copy(a1.join(f), bad.join(f)).unwrap();
    }
    let records = bad.join("records.json");
    let mut r: Value = serde_json::from_slice(&std::fs::read(&records).unwrap()).unwrap();
    r["methods"][3]["seeds"][0]["predictive"]
        .as_array_mut()
        .unwrap()
        .pop();
    std::fs::write(&records, serde_json::to_vec(&r).unwrap()).unwrap();
    assert_refused(
        deep_merge(&[&a0, &bad], &out),
        &out,
        &[s(&bad), "records.json", "seed 2", "a predictive of"],
    );
}
