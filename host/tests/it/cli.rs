//! The `nrpt` binary end to end: JSON keys, output files, figures, errors and exit
//! codes, determinism across thread counts, and Ctrl-C.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common;
use common::{json_of, nrpt};

fn finite(v: &Value, key: &str) -> f64 {
    let x = v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` missing or not a number in {v}"));
    assert!(x.is_finite(), "`{key}` = {x}");
    x
}

#[test]
fn window_reports_the_model() {
    let v = json_of(&nrpt(&[
        "window",
        "--chains",
        "16",
        "--swap-rate",
        "0.4",
        "--json",
    ]));
    for key in [
        "w_exact",
        "w_paper",
        "x_star",
        "expected_round_trip_w1",
        "expected_round_trip_opt",
        "round_trips_per_1000_w1",
        "round_trips_per_1000_opt",
    ] {
        finite(&v, key);
    }
    assert!((finite(&v, "w_exact") - 7.413386).abs() < 1e-5);
    assert_eq!(v["w_paper"], 8);
    assert_eq!(v["w_opt"], 7);
    assert!((finite(&v, "round_trips_per_1000_w1") - 21.28).abs() < 0.01);
    let text = nrpt(&["window", "-p", "10", "-s", "0.005"]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("W = 626") && text.contains("603.8"), "{text}");
}

fn assert_usage_error(args: &[&str], names: &str) {
    let out = nrpt(args);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(names),
        "{args:?}: stderr does not name `{names}`: {err}"
    );
}

#[test]
fn bad_flags_name_the_flag_and_exit_with_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let o = out.to_str().unwrap();
    assert_usage_error(&["run", "--swap-rate", "1.5", "-o", o], "--swap-rate");
    assert_usage_error(&["run", "--chains", "1", "-o", o], "--chains");
    assert_usage_error(
        &["run", "--eta-min", "0.6", "--eta-max", "0.1", "-o", o],
        "--eta-max",
    );
    assert_usage_error(&["run", "--window", "eight", "-o", o], "--window");
    assert_usage_error(&["run", "--momentum", "1.2", "-o", o], "--momentum");
    assert_usage_error(&["run", "--iterations=-5", "-o", o], "--iterations");
    assert_usage_error(&["run", "--no-such-flag"], "--no-such-flag");
    assert_usage_error(
        &["run", "--config", "/no/such/file.toml", "-o", o],
        "--config",
    );
    assert_usage_error(
        &["window", "--chains", "16", "--swap-rate", "0"],
        "--swap-rate",
    );
    assert_usage_error(
        &["window", "--chains", "1", "--swap-rate", "0.4"],
        "--chains",
    );
    assert_usage_error(&["reproduce", "--ensembles", "0", "-o", o], "--ensembles");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "chians = 3\n").unwrap();
    assert_usage_error(
        &["run", "--config", bad.to_str().unwrap(), "-o", o],
        "chians",
    );
    assert!(!out.exists(), "nothing is written on bad input");
}

/// `--precision bf16|f16` is how the GPU stores its states: the CPU engine keeps f32
/// states, so with `--backend cpu` they are refused (status 2, the flag named, nothing
/// written) and `f32` runs; `nrpt run --help` says so.
#[test]
fn half_precision_states_are_refused_where_the_cpu_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let o = out.to_str().unwrap();
    let small = [
        "-p",
        "4",
        "-e",
        "2",
        "-n",
        "50",
        "--backend",
        "cpu",
        "-o",
        o,
    ];
    for p in ["bf16", "f16"] {
        let args = [
            &[
                "run",
                "--target",
                "sum-modes",
                "--dim",
                "8",
                "--precision",
                p,
            ][..],
            &small,
        ]
        .concat();
        let r = nrpt(&args);
        let err = common::stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{p}: {err}");
        assert!(
            err.contains(
                "precision (--precision): bf16/f16 state storage is a GPU option; the CPU \
                 engine keeps f32 states"
            ),
            "{p}: {err}"
        );
        assert!(!out.exists(), "{p}: nothing is written");
    }
    let args = [&["run", "--precision", "f32", "--json"][..], &small].concat();
    let v = json_of(&nrpt(&args));
    assert!(
        v["config"].get("precision").is_none(),
        "f32 is the default, not written"
    );
    let help = nrpt(&["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("--precision <PRECISION>"), "{help}");
    assert!(help.contains("the CPU engine keeps f32 states"), "{help}");
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn run_writes_every_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        "chains = 8\nensembles = 3\niterations = 600\nwindow = \"paper\"\n",
    )
    .unwrap();
    let v = json_of(&nrpt(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--seed",
        "4",
        "-o",
        out.to_str().unwrap(),
        "--json",
        "--quiet",
    ]));
    for key in [
        "round_trips_per_1000",
        "round_trips_per_1000_authors",
        "final_buffer_mean",
        "seconds",
        "chain_steps_per_sec",
    ] {
        finite(&v, key);
    }
    assert_eq!(v["config"]["chains"], 8, "the file's value");
    assert_eq!(v["config"]["seed"], 4, "the flag's value");
    finite(&v["accuracy"], "tv_distance");
    finite(&v["accuracy"], "tv_modes");
    for f in [
        "summary.json",
        "pairs.csv",
        "trace.csv",
        "ladder.csv",
        "samples.csv",
        "samples.npy",
    ] {
        let len = std::fs::metadata(out.join(f)).map(|m| m.len()).unwrap_or(0);
        assert!(len > 50, "{f} missing or empty");
    }
    // 50 samples (iterations 100, 110, …, 590) × 3 ensembles × 2 coordinates.
    let npy = std::fs::read(out.join("samples.npy")).unwrap();
    let hlen = u16::from_le_bytes([npy[8], npy[9]]) as usize;
    assert!(String::from_utf8_lossy(&npy[10..10 + hlen]).contains("(50, 3, 2)"));
    assert_eq!(npy.len(), 10 + hlen + 4 * 50 * 3 * 2);
    let csv = std::fs::read_to_string(out.join("samples.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 50 * 3);
    let pairs = std::fs::read_to_string(out.join("pairs.csv")).unwrap();
    assert_eq!(pairs.lines().count(), 1 + 7);
}

#[test]
fn same_seed_same_summary_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut summaries = Vec::new();
    for threads in ["1", "2"] {
        // The same relative output folder, so that the summaries may be equal byte
        // for byte (they record the configuration, folder included).
        let cwd = dir.path().join(format!("t{threads}"));
        std::fs::create_dir(&cwd).unwrap();
        let status = Command::new(env!("CARGO_BIN_EXE_nrpt"))
            .args([
                "run",
                "-e",
                "5",
                "-n",
                "500",
                "--seed",
                "9",
                "--threads",
                threads,
                "--quiet",
                "-o",
                "out",
            ])
            .current_dir(&cwd)
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        let out = cwd.join("out");
        summaries.push(std::fs::read(out.join("summary.json")).unwrap());
        assert_eq!(
            std::fs::read(out.join("samples.npy")).unwrap(),
            std::fs::read(dir.path().join("t1/out/samples.npy")).unwrap()
        );
    }
    assert_eq!(summaries[0], summaries[1]);
    let v = read_json(&dir.path().join("t1/out/summary.json"));
    assert!(
        v.get("seconds").is_none(),
        "timing stays out of summary.json"
    );
}

#[test]
fn reproduce_writes_results_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repro");
    let v = json_of(&nrpt(&[
        "reproduce",
        "--quick",
        "--iterations",
        "1500",
        "--ensembles",
        "2",
        "-o",
        out.to_str().unwrap(),
        "--json",
        "--quiet",
    ]));
    let methods = v["methods"].as_array().expect("methods");
    assert_eq!(methods.len(), 4);
    for m in methods {
        for key in [
            "name",
            "window",
            "round_trips_per_1000",
            "round_trips_per_1000_authors",
            "tv_distance",
        ] {
            assert!(m.get(key).is_some(), "{key} missing in {m}");
        }
        finite(m, "tv_distance");
        finite(m, "tv_modes");
    }
    for m in &methods[2..] {
        finite(m, "round_trips_per_1000");
        finite(m, "round_trips_per_1000_authors");
    }
    let w = v["w_sweep"].as_array().expect("w_sweep");
    assert_eq!(
        w.iter()
            .map(|p| p["window"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 4, 8, 16, 32]
    );
    for p in w {
        finite(p, "round_trips_per_1000");
    }
    assert_eq!(v["s_sweep"].as_array().map(Vec::len), Some(5));
    let figs = v["figures"].as_array().unwrap();
    assert!(figs.len() >= 6);
    for f in figs {
        let stem = f.as_str().unwrap();
        for (ext, min) in [("png", 1000), ("svg", 1000), ("csv", 100)] {
            let p = out.join(format!("{stem}.{ext}"));
            let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            assert!(len > min, "{} missing or nearly empty", p.display());
        }
    }
    assert_eq!(
        read_json(&out.join("results.json"))["methods"],
        v["methods"]
    );
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn backends_are_chosen_and_reported() {
    // Without a GPU (as in CI) `devices` says so and exits 0; with one it lists it.
    let v = json_of(&nrpt(&["devices", "--json"]));
    let devices = v["devices"].as_array().expect("devices");
    if devices.is_empty() {
        assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
        let out = nrpt(&["bench", "--backend", "cuda", "-e", "2", "-n", "10"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("no CUDA driver"));
        // `auto` falls back to the CPU and says which backend ran.
        let b = json_of(&nrpt(&[
            "bench",
            "--backend",
            "auto",
            "-e",
            "2",
            "-n",
            "10",
            "--json",
        ]));
        assert_eq!(b["backend"], "cpu");
    }
    let b = json_of(&nrpt(&[
        "bench",
        "--backend",
        "cpu",
        "-e",
        "4",
        "-n",
        "100",
        "--json",
    ]));
    assert_eq!(b["backend"], "cpu");
    finite(&b, "chain_steps_per_sec");
    assert_usage_error(&["bench", "--backend", "tpu"], "--backend");
}

#[test]
fn scale_sweeps_split_into_parts_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    let args = |out: &Path, shard: Option<&str>| {
        let mut a: Vec<String> = [
            "scale",
            "--chains",
            "4,8",
            "--window",
            "1,opt,2",
            "--swap-rate",
            "0.5",
            "--max-iterations",
            "40000",
            "--target-se",
            "0.05",
            "--ensembles",
            "8",
            "--quiet",
            "--json",
            "-o",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.push(out.to_str().unwrap().to_string());
        if let Some(s) = shard {
            a.push("--part".into());
            a.push(s.into());
        }
        a
    };
    let run = |a: Vec<String>| {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        json_of(&nrpt(&refs))
    };
    let v = run(args(&whole, None));
    assert_eq!(v["settings"]["simulator"], "bitsliced", "the default");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    for p in points {
        for key in [
            "chains",
            "window",
            "swap_rate",
            "round_trips_per_1000",
            "expected_round_trip",
            "model_expected_round_trip",
        ] {
            assert!(p.get(key).is_some(), "{key} missing in {p}");
        }
        let ratio = finite(p, "ratio");
        assert!((ratio - 1.0).abs() < 0.15, "{p}");
    }
    let fits = v["fits"].as_array().unwrap();
    assert_eq!(fits.len(), 3);
    for f in fits {
        finite(f, "slope");
    }
    for f in [
        "results.json",
        "points.csv",
        "et_vs_chains.png",
        "et_vs_chains.svg",
        "et_vs_chains.csv",
        "et_vs_window.png",
        "et_vs_window.csv",
    ] {
        assert!(whole.join(f).exists(), "{f} missing");
    }
    // Two parts, merged, give the very same points.
    let (s0, s1, merged) = (
        dir.path().join("s0"),
        dir.path().join("s1"),
        dir.path().join("m"),
    );
    let a = run(args(&s0, Some("0/2")));
    let b = run(args(&s1, Some("1/2")));
    assert_eq!(
        a["points"].as_array().unwrap().len() + b["points"].as_array().unwrap().len(),
        6
    );
    let m = json_of(&nrpt(&[
        "scale",
        "merge",
        s0.to_str().unwrap(),
        s1.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(points_without_seconds(&m), points_without_seconds(&v));
    assert_eq!(m["fits"], v["fits"]);
    // Every part exactly once, every value what the sweep could have written: else a
    // refusal (status 2) naming the problem, and no output.
    let refused = |inputs: &[&Path], needle: &str| {
        let out = dir.path().join("refused");
        let mut a = vec!["scale".to_string(), "merge".to_string()];
        a.extend(inputs.iter().map(|p| p.to_str().unwrap().to_string()));
        a.extend(["-o".to_string(), out.to_str().unwrap().to_string()]);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = nrpt(&refs);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{inputs:?}: {err}");
        assert!(
            err.contains(needle),
            "{inputs:?}: `{needle}` missing in {err}"
        );
        assert!(!out.exists(), "{inputs:?}");
    };
    refused(&[&s0, &s0], "given twice");
    refused(&[&s0], "1/2 of 2 are missing");
    refused(&[&s0, &s1, &s1], "given twice");
    refused(&[&s0, &whole], "another run");
    let tampered = dir.path().join("t0");
    std::fs::create_dir(&tampered).unwrap();
    let text = std::fs::read_to_string(s0.join("results.json")).unwrap();
    for (key, value, needle) in [
        ("swap_rate", json!(-1.0), "swap_rate = -1"),
        ("round_trips_per_1000", json!(3.0), "does not follow"),
        ("ratio", json!(7.0), "ratio = 7"),
        ("seconds", json!(-2.0), "seconds = -2"),
    ] {
        let mut r: Value = serde_json::from_str(&text).unwrap();
        r["points"][0][key] = value;
        std::fs::write(tampered.join("results.json"), r.to_string()).unwrap();
        refused(&[&tampered, &s1], needle);
    }
    assert_usage_error(&["scale", "--part", "2/2"], "--part");
    assert_usage_error(&["scale", "--chains", "1,8"], "--chains");
    assert_usage_error(&["scale", "--window", "seo"], "--window");
    assert_usage_error(&["scale", "--swap-rate", "1.2"], "--swap-rate");
}

/// A point without a round trip has an infinite E[T]: `"inf"` in results.json and on
/// stdout (nrpt's one convention for non-finite numbers), read back to the same value by
/// `scale merge`, as is the `null` that earlier releases wrote.
#[test]
fn non_finite_numbers_are_named_in_json_and_read_back_by_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let part = dir.path().join("part");
    let sweep = nrpt(&[
        "scale",
        "--target",
        "bernoulli",
        "--chains",
        "256",
        "--window",
        "1",
        "--max-iterations",
        "600",
        "--warmup",
        "0",
        "--ensembles",
        "8",
        "--part",
        "0/1",
        "--quiet",
        "--json",
        "-o",
        part.to_str().unwrap(),
    ]);
    let line = String::from_utf8(sweep.stdout.clone()).unwrap();
    assert!(line.contains(r#""expected_round_trip":"inf""#), "{line}");
    let written = std::fs::read_to_string(part.join("results.json")).unwrap();
    assert!(
        written.contains(r#""expected_round_trip": "inf""#),
        "{written}"
    );
    assert!(written.contains(r#""ratio": "inf""#), "{written}");
    let point = |v: &Value| {
        let mut p = v["points"][0].clone();
        p.as_object_mut().unwrap().remove("seconds");
        p
    };
    let whole = point(&json_of(&sweep));
    assert_eq!(whole["expected_round_trip"], "inf");
    let merged = |inputs: &Path, out: &str| {
        let out = dir.path().join(out);
        let o = nrpt(&[
            "scale",
            "merge",
            inputs.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--json",
        ]);
        point(&json_of(&o))
    };
    assert_eq!(merged(&part, "m"), whole);
    // The files of earlier releases: `null` for an infinite E[T], `shard` for `part`.
    let old = dir.path().join("old");
    std::fs::create_dir(&old).unwrap();
    let text = written
        .replace(r#""inf""#, "null")
        .replace(r#""part""#, r#""shard""#);
    std::fs::write(old.join("results.json"), text).unwrap();
    assert_eq!(merged(&old, "m-old"), whole);
}

/// Both simulators report pair-updates per second, each running whole groups (64
/// ensembles bit-sliced, 32 in SIMD lanes).
#[test]
fn bench_bernoulli_reports_pair_updates() {
    for (simulator, ensembles) in [("bitsliced", 64), ("lanes", 32)] {
        let v = json_of(&nrpt(&[
            "bench",
            "--target",
            "bernoulli",
            "--simulator",
            simulator,
            "-e",
            "20",
            "-p",
            "16",
            "-n",
            "2000",
            "--json",
        ]));
        assert!(finite(&v, "pair_updates_per_sec") > 0.0, "{v}");
        assert_eq!(v["simulator"], simulator, "{v}");
        assert_eq!(v["ensembles"], ensembles, "{v}");
    }
}

/// `nrpt scale --simulator lanes` runs the SIMD-lanes simulator and says so in its
/// settings (the bit-sliced one is the default); both agree with Lemma 1.
#[test]
fn scale_runs_either_simulator() {
    let dir = tempfile::tempdir().unwrap();
    for simulator in ["lanes", "bitsliced"] {
        let out = dir.path().join(simulator);
        let v = json_of(&nrpt(&[
            "scale",
            "--simulator",
            simulator,
            "--chains",
            "8",
            "--window",
            "opt",
            "--target-se",
            "0.02",
            "--ensembles",
            "16",
            "--quiet",
            "--json",
            "-o",
            out.to_str().unwrap(),
        ]));
        assert_eq!(v["settings"]["simulator"], simulator, "{v}");
        let p = &v["points"][0];
        assert_eq!(p["ensembles"], 16, "{v}");
        let ratio = finite(p, "ratio");
        assert!((ratio - 1.0).abs() < 0.1, "{simulator}: {p}");
    }
}

/// The spellings of the previous release (`--model`, `sampler`, `mlp`, `--seeds`, scale's
/// `--shard`) run exactly as today's do, each with a one-line note on stderr (none with
/// --quiet, none for today's spellings).
#[test]
fn old_spellings_run_as_the_new_ones_with_a_note() {
    let ran = |args: &[&str]| {
        let o = nrpt(args);
        assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
        (json_of(&o), common::stderr(&o))
    };
    let sizes = [
        "--backend",
        "cpu",
        "-e",
        "4",
        "-p",
        "4",
        "-n",
        "300",
        "--json",
    ];
    let with = |head: &[&'static str]| [head, &sizes[..]].concat();
    let (new, new_err) = ran(&with(&["bench", "--target", "modes2d"]));
    let (old, old_err) = ran(&with(&["bench", "--model", "sampler"]));
    // The same run: its round trips; the speed is the machine's.
    for key in [
        "target",
        "dim",
        "ensembles",
        "chains",
        "iterations",
        "window",
    ] {
        assert_eq!(old[key], new[key], "{key}");
    }
    assert_eq!(old["round_trips_per_1000"], new["round_trips_per_1000"]);
    assert!(
        old_err.contains(
            "note: `--model sampler` is now `--target modes2d`; the old spelling goes in the \
             next release"
        ),
        "{old_err}"
    );
    assert!(!new_err.contains("is now"), "{new_err}");
    let (_, quiet) = ran(&with(&["--quiet", "bench", "--model", "sampler"]));
    assert!(!quiet.contains("is now"), "{quiet}");

    let dir = tempfile::tempdir().unwrap();
    let sweep = |out: &str, head: &[&str]| {
        let o = dir.path().join(out);
        let mut a = vec![
            "scale",
            "--chains",
            "4,8",
            "--window",
            "1",
            "--max-iterations",
        ];
        a.extend(["4000", "--json", "-o", o.to_str().unwrap()]);
        a.extend(head);
        let (v, err) = ran(&a);
        let points = points_without_seconds(&v);
        (points, v["part"].clone(), err)
    };
    let today = ["--target", "bernoulli", "--ensembles", "2", "--part", "1/2"];
    let (new, new_part, new_err) = sweep("new", &today);
    let before = ["--model", "bernoulli", "--seeds", "2", "--shard", "1/2"];
    let (old, old_part, old_err) = sweep("old", &before);
    assert_eq!(new.len(), 1);
    assert_eq!((old, old_part), (new, new_part.clone()));
    assert_eq!(new_part, json!({"index": 1, "count": 2}));
    for note in [
        "`--model` is now `--target`",
        "`--seeds` is now `--ensembles`",
        "`--shard` is now `--part`",
    ] {
        assert!(old_err.contains(note), "{note} missing in {old_err}");
    }
    assert!(!new_err.contains("is now"), "{new_err}");
}

#[test]
fn scale_runs_the_full_sampler_too() {
    let dir = tempfile::tempdir().unwrap();
    let v = json_of(&nrpt(&[
        "scale",
        "--target",
        "modes2d",
        "--chains",
        "4,8",
        "--window",
        "1",
        "--max-iterations",
        "3000",
        "--ensembles",
        "2",
        "--quiet",
        "--json",
        "-o",
        dir.path().to_str().unwrap(),
    ]));
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for p in points {
        finite(p, "expected_round_trip");
        finite(p, "model_expected_round_trip");
        assert_eq!(p["capped"], true, "the full sampler runs a fixed length");
    }
}

// The book's reference pages that are generated from the code, so that they cannot drift:
// every command's `--help` and every configuration key. `NRPT_BLESS=1 cargo test -p
// nrpt-host --test it cli::reference` rewrites them after a change to the flags or keys.

/// `docs/src/reference/NAME` of the repository.
fn book_page(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/src/reference")
        .join(name)
}

/// Compares `page` with the text generated from the code, or rewrites it under
/// `NRPT_BLESS=1`.
fn check_generated(name: &str, generated: &str) {
    let path = book_page(name);
    if std::env::var_os("NRPT_BLESS").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::write(&path, generated).expect("the book's reference page is written");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "docs/src/reference/{name} differs from what the code generates (first at line \
             {}); run `NRPT_BLESS=1 cargo test -p nrpt-host --test it cli::reference` and \
             commit the page",
            line + 1
        );
    }
}

/// Every command path of `nrpt` (`[]`, `["run"]`, `["scale", "merge"]`, …), `help` left
/// out, in the order `nrpt --help` lists them.
fn command_paths(cmd: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(path.clone());
    let mut subs: Vec<_> = cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .collect();
    subs.sort_by_key(|s| s.get_display_order());
    for sub in subs {
        path.push(sub.get_name().to_string());
        command_paths(sub, path, out);
        path.pop();
    }
}

#[test]
fn reference_of_the_commands_is_their_help() {
    let mut paths = Vec::new();
    let mut cmd = nrpt::cli::command();
    cmd.build(); // numbers the subcommands in the order `nrpt --help` lists them
    command_paths(&cmd, &mut Vec::new(), &mut paths);
    let mut page = String::from(
        "# Commands and flags\n\n\
         <!-- Generated from the command's own `--help` by host/tests/it/cli.rs; do not edit.\n     \
         Regenerate: NRPT_BLESS=1 cargo test -p nrpt-host --test it cli::reference -->\n\n\
         What `nrpt <command> --help` prints, for every command. The \
         [command-line overview](command-line.md) says what the commands are for and what \
         every command has in common.\n\n",
    );
    for path in &paths {
        let name = std::iter::once("nrpt").chain(path.iter().map(String::as_str));
        let name = name.collect::<Vec<_>>().join(" ");
        page.push_str(&format!("- [`{name}`](#{})\n", name.replace(' ', "-")));
    }
    for path in &paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        // Plain text whatever the environment asks of colours.
        let out = common::command()
            .args(&args)
            .env("NO_COLOR", "1")
            .env_remove("CLICOLOR_FORCE")
            .output()
            .expect("the nrpt binary runs");
        assert!(out.status.success(), "nrpt {} failed", args.join(" "));
        let help = String::from_utf8(out.stdout).expect("help is UTF-8");
        let name = std::iter::once("nrpt").chain(path.iter().map(String::as_str));
        let name = name.collect::<Vec<_>>().join(" ");
        page.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
    }
    check_generated("commands.md", &page);
}

#[test]
fn reference_of_the_configuration_keys_is_their_declaration() {
    let mut page = String::from(
        "# Configuration keys\n\n\
         <!-- Generated from sampling/src/config/keys.rs by host/tests/it/cli.rs; do not edit.\n     \
         Regenerate: NRPT_BLESS=1 cargo test -p nrpt-host --test it cli::reference -->\n\n\
         Every key of `nrpt run`'s TOML file, in the order of its declaration, with its flag \
         and its help (the same text as `nrpt run --help`; a value in brackets is the \
         default of the 2D target, and each target may take its own). How the file and the \
         flags combine is in [the configuration chapter](configuration.md).\n\n\
         | key | flag | what |\n|---|---|---|\n",
    );
    for key in nrpt_sampling::config::KEYS {
        let help = key.help.split_whitespace().collect::<Vec<_>>().join(" ");
        let help = help.replace('|', "\\|");
        page.push_str(&format!("| `{}` | `{}` | {help} |\n", key.name, key.flag()));
    }
    check_generated("configuration-keys.md", &page);
}

/// The keywords of `nrpt.run` in the Python stubs that stand for configuration keys:
/// one per key that `nrpt run` has as a visible flag, but `out` (a Python run writes no
/// folder), in the order of the keys' declaration, annotated from the flag's values
/// (Python's own wider types for the data files, the hidden widths, the window and the
/// number of chains).
fn python_run_keywords() -> String {
    use std::any::TypeId;
    let mut cmd = nrpt::cli::command();
    cmd.build();
    let run = cmd.find_subcommand("run").expect("nrpt run");
    let mut out = String::new();
    for key in nrpt_sampling::config::KEYS {
        let arg = run
            .get_arguments()
            .find(|a| a.get_id() == key.name)
            .unwrap_or_else(|| panic!("key {} has no flag", key.name));
        if arg.is_hide_set() || key.name == "out" {
            continue;
        }
        let keyword = arg.get_long().expect("a long flag").replace('-', "_");
        let ty = arg.get_value_parser().type_id();
        let ints = [
            TypeId::of::<u8>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<usize>(),
        ];
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| format!("{:?}", v.get_name()))
            .collect();
        let annotation = match key.name {
            "data" | "labels" | "test_data" | "test_labels" => "_Data".to_string(),
            "hidden" => "Union[Sequence[int], str, None]".to_string(),
            "window" => "Optional[_Window]".to_string(),
            "chains" => "Union[int, Literal[\"auto\"], None]".to_string(),
            _ if ty == TypeId::of::<bool>() => "Optional[bool]".to_string(),
            _ if ints.iter().any(|&t| ty == t) => "Optional[int]".to_string(),
            _ if ty == TypeId::of::<f64>() => "Optional[float]".to_string(),
            _ if ty == TypeId::of::<std::path::PathBuf>() => "Optional[_Path]".to_string(),
            _ if !values.is_empty() => format!("Optional[Literal[{}]]", values.join(", ")),
            _ => "Optional[str]".to_string(),
        };
        out.push_str(&format!("    {keyword}: {annotation} = None,\n"));
    }
    out
}

#[test]
fn reference_python_stub_of_run_takes_every_configuration_key() {
    const BEGIN: &str = "--test it cli::reference):\n";
    const END: &str = "    # (end of the generated keys)";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/nrpt/__init__.pyi");
    let text = std::fs::read_to_string(&path).expect("the stubs read");
    let start = text.find(BEGIN).expect("the stubs mark the generated keys") + BEGIN.len();
    let stop = start + text[start..].find(END).expect("the generated keys end");
    let generated = format!(
        "{}{}{}",
        &text[..start],
        python_run_keywords(),
        &text[stop..]
    );
    if std::env::var_os("NRPT_BLESS").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::write(&path, generated).expect("the stubs are written");
        return;
    }
    assert!(
        generated == text,
        "python/nrpt/__init__.pyi: the keywords of run differ from the configuration keys \
         (sampling/src/config/keys.rs); run `NRPT_BLESS=1 cargo test -p nrpt-host --test it \
         cli::reference` and commit the stubs"
    );
}

/// Every spelling of the previous release that the command still reads is in the
/// vocabulary's table, with its new spelling.
#[test]
fn reference_vocabulary_lists_every_old_spelling() {
    let page = std::fs::read_to_string(book_page("vocabulary.md")).expect("the page reads");
    let all = nrpt::spellings::OLD_SPELLINGS;
    for s in all {
        let (before, now) = match s.value {
            // A value renamed, shown under the flag's old name (`--model sampler`).
            Some((old, new)) => {
                let flag = all
                    .iter()
                    .find(|r| r.value.is_none() && r.now == s.flag && r.flag != r.now)
                    .map_or(s.flag, |r| r.flag);
                (format!("{flag} {old}"), format!("{} {new}", s.now))
            }
            None => (s.flag.to_string(), s.now.to_string()),
        };
        let row = format!("| `{before}` | `{now}` |");
        assert!(page.contains(&row), "vocabulary.md lacks the row {row}");
    }
}

#[test]
fn reference_example_configuration_is_a_valid_configuration() {
    let page = std::fs::read_to_string(book_page("configuration.md")).expect("the page reads");
    let blocks: Vec<&str> = page
        .split("```toml\n")
        .skip(1)
        .map(|rest| rest.split("\n```").next().expect("the block closes"))
        .collect();
    assert!(!blocks.is_empty(), "configuration.md has no TOML example");
    for block in blocks {
        if let Err(e) = toml::from_str::<nrpt_sampling::config::RunConfig>(block) {
            panic!("a TOML example of configuration.md is not a configuration: {e}");
        }
    }
}

/// The points of a scale sweep's JSON without their timing (`seconds`), which differs
/// from run to run.
fn points_without_seconds(v: &Value) -> Vec<Value> {
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut p = p.clone();
            p.as_object_mut().unwrap().remove("seconds");
            p
        })
        .collect()
}
