//! Reliability of the `nrpt` binary under interruption and bad input: output folders
//! are all or nothing (Ctrl-C and SIGTERM during the computation and during the
//! writing), a run killed with SIGKILL and resumed from its checkpoint gives the same
//! bytes as the run never interrupted, unusable output paths are refused before any
//! computation, and random argument vectors and configuration files get exit status 0
//! or 2 with a message, never a panic (101) or a signal.

use crate::common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use common::{PAUSE, files, siblings, signal, stderr, wait, wait_for};

fn nrpt() -> std::process::Command {
    common::command()
}

fn output(args: &[&str]) -> Output {
    nrpt().args(args).output().expect("the nrpt binary runs")
}

/// A run that would take hours, writing to `out`, started (stderr kept).
fn long_run(out: &Path) -> std::process::Child {
    nrpt()
        .args([
            "run",
            "-e",
            "4",
            "-n",
            "100000000",
            "--thin",
            "0",
            "--quiet",
            "-o",
        ])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// An output folder from an earlier run: one file with known contents.
/// An output folder of an earlier run: its summary and nrpt's marker listing it.
fn old_folder(out: &Path) {
    std::fs::create_dir_all(out).unwrap();
    std::fs::write(out.join("summary.json"), "old").unwrap();
    std::fs::write(out.join(MARKER), OLD_MARKER).unwrap();
}

const MARKER: &str = ".nrpt-output.json";
const OLD_MARKER: &str =
    r#"{"written_by":"nrpt","version":"0.1.0","command":"run","files":["summary.json"]}"#;

fn assert_old_folder_intact(out: &Path) {
    let mut names: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [MARKER, "summary.json"],
        "the old folder changed: {names:?}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join(MARKER)).unwrap(),
        OLD_MARKER
    );
    assert_eq!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        "old"
    );
    assert!(siblings(out).is_empty(), "left behind: {:?}", siblings(out));
}

#[test]
fn interruption_while_computing_keeps_the_old_folder() {
    for sig in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        old_folder(&out);
        let mut child = long_run(&out);
        // The sibling exists once the command has checked --out and started computing.
        wait_for("the temporary sibling", || !siblings(&out).is_empty());
        std::thread::sleep(Duration::from_millis(200));
        signal(&child, sig);
        let status = wait(&mut child, Duration::from_secs(30), sig);
        let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
        assert_eq!(status.code(), Some(130), "SIG{sig}: {err}");
        assert!(
            err.contains("interrupted") && err.contains("nothing was written"),
            "{err}"
        );
        assert_old_folder_intact(&out);
        // And where there was nothing, nothing stays.
        let fresh = dir.path().join("fresh");
        let mut child = long_run(&fresh);
        wait_for("the temporary sibling", || !siblings(&fresh).is_empty());
        signal(&child, sig);
        assert_eq!(
            wait(&mut child, Duration::from_secs(30), sig).code(),
            Some(130)
        );
        assert!(!fresh.exists() && siblings(&fresh).is_empty());
    }
}

#[test]
fn interruption_while_writing_keeps_the_old_folder() {
    for sig in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        old_folder(&out);
        let mut child = nrpt()
            .env(PAUSE, "30000")
            .args(["run", "-n", "300", "--quiet", "-o"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Every file is written into the sibling; the command waits before the swap.
        wait_for("the written outputs", || {
            siblings(&out)
                .iter()
                .any(|s| s.join("summary.json").exists())
        });
        signal(&child, sig);
        let status = wait(&mut child, Duration::from_secs(30), sig);
        let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
        assert_eq!(status.code(), Some(130), "SIG{sig}: {err}");
        assert!(
            err.contains("before the outputs were put in place") && err.contains("as it was"),
            "{err}"
        );
        assert_old_folder_intact(&out);
    }
    // Uninterrupted, the same command replaces the old folder whole.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    old_folder(&out);
    let o = output(&["run", "-n", "300", "--quiet", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        "old"
    );
    assert!(out.join("samples.npy").exists() && siblings(&out).is_empty());
}

#[test]
fn a_killed_run_resumes_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    // The same output name in two parents: the configurations (which hold --out) agree.
    let run = |parent: &Path, extra: &[&str]| {
        nrpt()
            .current_dir(parent)
            .args(["run", "-n", "40000", "-e", "3", "--quiet", "-o", "out"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut whole = run(&a, &["--checkpoint-every", "2500"]);
    assert!(wait(&mut whole, Duration::from_secs(120), "uninterrupted").success());
    assert!(
        !a.join("out.checkpoint").exists(),
        "the checkpoint is removed at the end"
    );

    // Killed 150 ms after its first checkpoint: mid-computation, or, on a fast machine
    // that finished the 40,000 iterations by then, in the pause before the outputs are
    // put in place (it never commits before the kill).
    let mut killed = {
        let mut c = nrpt();
        c.env(PAUSE, "60000")
            .current_dir(&b)
            .args(["run", "-n", "40000", "-e", "3", "--quiet", "-o", "out"])
            .args(["--checkpoint-every", "2500"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let ckpt = b.join("out.checkpoint");
    wait_for("the first checkpoint", || ckpt.exists());
    std::thread::sleep(Duration::from_millis(150));
    signal(&killed, "KILL");
    let _ = killed.wait();
    assert!(
        !b.join("out").exists(),
        "a killed run put no outputs in place"
    );
    assert!(ckpt.exists());
    // Flags that change the run are refused; the same ones are accepted.
    let o = nrpt()
        .current_dir(&b)
        .args(["run", "--resume", "out", "--seed", "9"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));
    let o = nrpt()
        .current_dir(&b)
        .args(["run", "--resume", "out", "-n", "40000", "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "resume failed: {}", stderr(&o));
    assert!(
        !ckpt.exists(),
        "the checkpoint is removed once the outputs are in place"
    );
    assert!(siblings(&b.join("out")).is_empty());
    let (x, y) = (files(&a.join("out")), files(&b.join("out")));
    assert_eq!(
        x.iter().map(|f| &f.0).collect::<Vec<_>>(),
        y.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, p), (_, q)) in x.iter().zip(&y) {
        assert!(p == q, "{name} differs after the resume");
    }
}

#[test]
fn checkpoints_of_other_versions_or_damaged_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let ckpt = dir.path().join("out.checkpoint");
    // Nothing to resume.
    let o = output(&["run", "--resume", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing to resume"), "{}", stderr(&o));
    // A checkpoint made by an interrupted run (kept because SIGINT stopped it).
    let mut child = nrpt()
        .args(common::FOREVER)
        .args(["--checkpoint-every", "200", "--quiet", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("a checkpoint", || ckpt.exists());
    std::thread::sleep(Duration::from_millis(100));
    signal(&child, "INT");
    let status = wait(&mut child, Duration::from_secs(30), "INT");
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("--resume"),
        "the message says how to continue: {err}"
    );
    let good = std::fs::read(&ckpt).unwrap();
    let refused = |bytes: &[u8], says: &str| {
        std::fs::write(&ckpt, bytes).unwrap();
        let o = output(&["run", "--resume", out.to_str().unwrap(), "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{says}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(says),
            "expected `{says}`: {}",
            stderr(&o)
        );
    };
    refused(&good[..good.len() / 2], "damaged");
    refused(b"something else entirely", "not a checkpoint");
    let mut other = good.clone();
    other[8] ^= 0x40; // the format number
    refused(&other, "written by another version of nrpt");
    let mut other = good.clone();
    // The version string follows the magic (8), the format (4), the payload's length (8)
    // and its own length (4): any change fails the checksum.
    other[24] = b'X';
    refused(&other, "checksum does not match");
}

#[test]
fn unusable_output_paths_are_refused_before_computing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let sub = file.join("sub");
    let f = file.to_str().unwrap();
    let s = sub.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "-n", "100000000", "-o", f],
        vec!["run", "-n", "100000000", "-o", s],
        vec!["run", "-n", "100000000", "-o", ""],
        vec!["reproduce", "-o", f],
        vec!["deep", "-o", f],
        vec!["scale", "-o", f],
        vec!["scale", "merge", "-o", f, "whatever"],
    ];
    for args in cases {
        let mut child = nrpt()
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A command that computed first would run for minutes.
        let status = wait(&mut child, Duration::from_secs(30), &format!("{args:?}"));
        let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--out"), "{args:?} does not name --out: {err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    }
}

#[test]
fn thread_counts_are_bounded() {
    for args in [
        vec!["window", "-p", "16", "-s", "0.4", "--threads", "100000"],
        vec!["run", "--threads", "100000"],
        vec!["run", "--threads", "0"],
        vec!["bench", "--threads", "5000"],
    ] {
        let o = output(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--threads"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn runs_that_are_not_what_was_meant_give_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let o = output(&[
        "run",
        "-n",
        "2000",
        "--eta-max",
        "1e3",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = v["warnings"].as_array().unwrap();
    assert!(
        w.iter().any(|w| w.as_str().unwrap().contains("not finite")),
        "{v}"
    );
    assert!(stderr(&o).contains("warning:"), "warnings go to stderr too");
    let o = output(&[
        "run",
        "-n",
        "2000",
        "--eta-max",
        "1e3",
        "--strict",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        out.join("summary.json").exists(),
        "--strict still writes the outputs"
    );
    // Flags without effect, and runs that keep no sample.
    let o = output(&[
        "run",
        "-n",
        "100",
        "--dim",
        "5",
        "--momentum",
        "0.5",
        "--warmup",
        "500",
        "--quiet",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = v["warnings"].to_string();
    for needle in ["--dim", "--momentum", "no samples"] {
        assert!(text.contains(needle), "{needle} missing in {text}");
    }
    // A clean run has none.
    let o = output(&[
        "run",
        "-n",
        "500",
        "--quiet",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["warnings"], serde_json::json!([]));
}

/// splitmix64: the fuzz cases are the same on every run.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// Values that are valid somewhere, invalid elsewhere, or no values at all.
const ANY: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "-1",
    "0.4",
    "1.5",
    "-0.5",
    "1e-300",
    "1e300",
    "nan",
    "inf",
    "-inf",
    "",
    "abc",
    "opt",
    "paper",
    "seo",
    "1,2",
    "8,16",
    "0/2",
    "1/2",
    "3/2",
    "18446744073709551616",
    "4294967296",
    "65537",
    "1e3",
    "0.0",
    "true",
    "☃",
];

/// Values that a flag accepts (some of them), for draws that get past the checks.
fn plausible(flag: &str) -> Option<&'static [&'static str]> {
    Some(match flag {
        "--target" => &["modes2d", "sum-modes", "gaussian-path"],
        "--dim" => &["1", "3"],
        "-p" | "--chains" => &["2", "4", "16", "auto"],
        "--window" | "-w" => &["1", "3", "opt", "paper", "seo"],
        "--rule" => &["buffered", "metropolis"],
        "-s" | "--swap-rate" => &["0.1", "0.4", "0.9"],
        "--eta-min" => &["0.001", "0.01"],
        "--eta-max" => &["0.5", "2", "1e3"],
        "--explorer" => &["sgd", "sgld", "msgd", "mala", "hmc"],
        "--explorer-steps" => &["1", "2"],
        "--leapfrog-steps" => &["1", "5"],
        "--momentum" => &["0", "0.9"],
        "--buffer" | "--noise" => &["0", "1", "10"],
        "--adapt-ladder" | "--adapt-buffer" | "--inclusive-iterations" => &["true", "false"],
        "--gamma-a" | "--gamma-alpha" | "--gamma-b" | "--buffer-scale" | "--target-se" => {
            &["0.5", "1", "100"]
        }
        "--seed" => &["0", "7"],
        "--preset" => &["paper", "authors-code"],
        "--thin" | "--warmup" => &["0", "1", "30"],
        "--pair-energies" => &["per-level", "fresh-per-test"],
        "--sweep-order" => &["simultaneous", "sequential"],
        "--ladder-update" => &["jacobi", "in-place"],
        "--buffer-projection" => &["non-negative", "unprojected"],
        "--momentum-on-swap" => &["reset", "carry"],
        "--ladder-decimals" => &["0", "3"],
        "--threads" => &["1", "2"],
        "--backend" => &["cpu", "auto"],
        "--shard" | "--part" => &["0/2", "1/2"],
        _ => return None,
    })
}

/// Runs `args` (bounded in time) and checks the answer: 0, or 2 with a message (1
/// for `--strict` with warnings).
fn check_answer(args: &[String], config: Option<&Path>, dir: &Path) -> i32 {
    let mut child = nrpt()
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait(&mut child, Duration::from_secs(60), &format!("{args:?}"));
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    let shown = config
        .map(|c| std::fs::read_to_string(c).unwrap_or_default())
        .unwrap_or_default();
    match status.code() {
        Some(0) => 0,
        Some(2) => {
            assert!(
                err.contains("error"),
                "{args:?} {shown}: exit 2 without a message: {err}"
            );
            2
        }
        // --strict with warnings: the outputs written, status 1, the reason given.
        Some(1) if args.iter().any(|a| a == "--strict") && err.contains("--strict:") => 1,
        // --backend cuda on a machine without a CUDA driver: a failure the machine
        // decides (status 1, docs/src/reference/outputs.md), not bad input; the reason given.
        Some(1) if args.iter().any(|a| a == "cuda") && err.contains("cuda backend:") => 1,
        other => {
            panic!("{args:?}\n{shown}\nexit {other:?} (a panic is 101, a signal None):\n{err}")
        }
    }
}

#[test]
fn random_command_lines_get_a_clear_answer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let mut d = Draw(0x6e72_7074);
    // Flags of each command with the values they take; numbers that make long runs
    // are kept small (the cases run in a debug build) by the fixed flags.
    // The configuration's own flags (from its one declaration), less the ones that
    // name files or make long runs, and a few others.
    let skip = [
        "out",
        "data",
        "labels",
        "test_data",
        "test_labels",
        "hidden",
        "batch",
        "prior_sigma",
        "iterations",
        "ensembles",
    ];
    let names: Vec<String> = nrpt_sampling::config::KEYS
        .iter()
        .filter(|k| !skip.contains(&k.name))
        .map(|k| k.flag())
        .chain(["--threads", "--backend", "--strict", "--bogus"].map(String::from))
        .collect();
    let run_flags: Vec<&str> = names.iter().map(String::as_str).collect();
    let run_flags: &[&str] = &run_flags;
    let words: &[&str] = &[
        "modes2d",
        "sum-modes",
        "buffered",
        "metropolis",
        "sgd",
        "sgld",
        "msgd",
        "paper",
        "authors-code",
        "per-level",
        "fresh-per-test",
        "simultaneous",
        "sequential",
        "jacobi",
        "in-place",
        "non-negative",
        "unprojected",
        "reset",
        "carry",
        "cpu",
        "auto",
        "cuda",
    ];
    let scale_flags: &[&str] = &[
        "--target",
        "-w",
        "-s",
        "--target-se",
        "--warmup",
        "--seed",
        "--dim",
        "--part",
        "--threads",
        "--rates-file",
    ];
    let mut ran = 0;
    for _ in 0..300 {
        let command = d.pick(&[
            "run",
            "run",
            "run",
            "window",
            "scale",
            "bench",
            "deep",
            "reproduce",
        ]);
        let mut args: Vec<String> = vec![command.into()];
        let flags = match command {
            "run" => {
                args.extend(
                    ["-n", d.pick(&["1", "5", "60"]), "-e", d.pick(&["1", "2"])].map(String::from),
                );
                args.extend(["-o", "out", "--quiet"].map(String::from));
                run_flags
            }
            "window" => &["-p", "-s", "--json"][..],
            "scale" => {
                args.extend(
                    [
                        "-p",
                        d.pick(&["2", "4", "8,1", "x"]),
                        "--max-iterations",
                        d.pick(&["1", "10", "300"]),
                    ]
                    .map(String::from),
                );
                args.extend(
                    ["-e", d.pick(&["1", "8", "0"]), "-o", "out", "--quiet"].map(String::from),
                );
                scale_flags
            }
            "bench" => {
                args.extend(
                    [
                        "-n",
                        d.pick(&["1", "20", "0"]),
                        "-e",
                        d.pick(&["1", "3", "0"]),
                        "--quiet",
                    ]
                    .map(String::from),
                );
                &["--target", "-p", "-w", "--scalar", "--threads", "--backend"][..]
            }
            // Long commands: an --out that is a file stops them before any computation,
            // after their flags have been read.
            _ => {
                args.extend(["-o", "file"].map(String::from));
                &[
                    "--quick",
                    "-e",
                    "-n",
                    "-p",
                    "-s",
                    "--epochs",
                    "--seed",
                    "--hidden",
                    "--batch",
                    "--threads",
                ][..]
            }
        };
        for _ in 0..(d.next() % 4) {
            let flag = d.pick(flags);
            args.push(flag.into());
            if matches!(
                flag,
                "--strict" | "--scalar" | "--quick" | "--json" | "--bogus"
            ) {
                continue;
            }
            let value = if flag == "--target" {
                // `classifier` is a long benchmark in a debug build.
                d.pick(&[
                    "sampler",
                    "bernoulli",
                    "modes2d",
                    "sum-modes",
                    "gaussian-path",
                    "nope",
                ])
            } else if d.chance(0.6)
                && let Some(good) = plausible(flag)
            {
                d.pick(good)
            } else if d.chance(0.4) {
                d.pick(words)
            } else {
                d.pick(ANY)
            };
            if !value.is_empty() || d.chance(0.5) {
                args.push(value.into());
            }
        }
        ran += usize::from(check_answer(&args, None, dir.path()) == 0);
    }
    eprintln!("{ran} of 300 command lines ran");
    // The draws reach both the computation and the refusals.
    assert!((50..=250).contains(&ran), "{ran} of 300 cases ran");
}

#[test]
fn random_configuration_files_get_a_clear_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Draw(0x746f_6d6c);
    // Every key of the configuration's declaration, and one misspelt.
    let names: Vec<&str> = nrpt_sampling::config::KEYS
        .iter()
        .map(|k| k.name)
        .chain(["chians"])
        .collect();
    let keys: &[&str] = &names;
    let values: &[&str] = &[
        "0",
        "1",
        "2",
        "-3",
        "0.4",
        "1e-9",
        "1e300",
        "nan",
        "inf",
        "true",
        "false",
        "\"opt\"",
        "\"seo\"",
        "\"paper\"",
        "\"modes2d\"",
        "\"sum-modes\"",
        "\"sgld\"",
        "\"msgd\"",
        "\"authors-code\"",
        "\"carry\"",
        "\"x\"",
        "[]",
        "[4]",
        "[1, 2]",
        "{ a = 1 }",
        "18446744073709551615",
        "9223372036854775807",
        "\"\"",
        "1979-05-27",
        "\"classifier\"",
        "\"gaussian-path\"",
    ];
    let mut ran = 0;
    for i in 0..200 {
        let mut text = String::new();
        for _ in 0..(d.next() % 6) {
            let key = d.pick(keys);
            let value = d.pick(values);
            if d.chance(0.05) {
                text.push_str(&format!("{key} = = {value}\n"));
            } else {
                text.push_str(&format!("{key} = {value}\n"));
            }
        }
        let path = dir.path().join(format!("c{i}.toml"));
        std::fs::write(&path, &text).unwrap();
        // -n, -e and the classifier's size keep every run short; the file's own
        // values are still read and checked first.
        let mut args: Vec<String> = ["run", "-c", path.to_str().unwrap(), "-n", "3", "-e", "1"]
            .map(String::from)
            .to_vec();
        if text.contains("classifier") {
            args.extend(["--hidden", "", "--backend", "cpu"].map(String::from));
        }
        args.extend(["-o", "out", "--quiet"].map(String::from));
        ran += usize::from(check_answer(&args, Some(&path), dir.path()) == 0);
    }
    eprintln!("{ran} of 200 configuration files ran");
    assert!((25..=175).contains(&ran), "{ran} of 200 files ran");
}
