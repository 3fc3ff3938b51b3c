//! nrpt used as an adversary would: output folders it did not write, the current
//! directory, folders holding its inputs, links, modes, mount points, names it cannot
//! use; corrupted, truncated and spliced checkpoints, changed data between a crash and
//! its resume; decompression bombs, devices, FIFOs; closed and full standard output;
//! runs too large for the memory; thread counts from the environment. Every case ends
//! with exit status 0 and the right outputs, or a refusal (2) that says why, or the
//! status of a signal or a closed pipe, never a panic (101), and nothing nrpt did not
//! write is ever lost.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{FOREVER, command, files, finish, siblings, signal, start_in, stderr, wait, wait_for};

fn run_in(dir: &Path, args: &[&str]) -> Output {
    command()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the nrpt binary runs")
}

/// Exit status 2 with a message containing every one of `needles`.
fn refused(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` missing in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

/// A small classifier data set as CSV: two features and a label, 40 rows.
fn write_csv(path: &Path) {
    let mut text = String::from("a,b,label\n");
    for i in 0..40 {
        let y = i % 2;
        text.push_str(&format!(
            "{},{},{y}\n",
            i as f64 * 0.1,
            (i * 7 % 5) as f64 + y as f64
        ));
    }
    std::fs::write(path, text).unwrap();
}

/// The names in a folder, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn folders_nrpt_did_not_write_are_refused_before_computing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("keep"), "x").unwrap();
    let started = Instant::now();
    let o = run_in(dir.path(), &["run", "-n", "100", "-o", "d"]);
    refused(&o, &["--out", "keep", "--force"]);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(std::fs::read_to_string(d.join("keep")).unwrap(), "x");
    assert!(siblings(&d).is_empty(), "{:?}", siblings(&d));
    // The same for every command that writes a folder.
    for args in [
        vec!["reproduce", "-o", "d"],
        vec!["deep", "-o", "d"],
        vec!["scale", "-o", "d"],
        vec!["run", "--target", "gaussian-path", "-o", "d"],
    ] {
        refused(&run_in(dir.path(), &args), &["--out", "keep"]);
    }
    // A configuration file's `out =` is refused the same way.
    std::fs::write(dir.path().join("c.toml"), "out = \"d\"\niterations = 100\n").unwrap();
    refused(&run_in(dir.path(), &["run", "-c", "c.toml"]), &["keep"]);
    // --force replaces it, and the folder is nrpt's from then on.
    let o = run_in(
        dir.path(),
        &["run", "-n", "100", "-q", "-o", "d", "--force"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join("keep").exists() && d.join("summary.json").exists());
    let o = run_in(dir.path(), &["run", "-n", "100", "-q", "-o", "d"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A file added to an output folder makes it the user's again.
    std::fs::write(d.join("notes.txt"), "mine").unwrap();
    refused(
        &run_in(dir.path(), &["run", "-n", "100", "-o", "d"]),
        &["notes.txt"],
    );
    assert!(d.join("notes.txt").exists());
}

/// The three ways an earlier version deleted a user's files without `--force`: a file
/// named like the checkpoint, a folder that merely looked like an output folder, and a
/// file added to the output folder while the command ran.
#[test]
fn nothing_the_user_wrote_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    // (a) `<out>.checkpoint` is nrpt's only when nrpt wrote it.
    std::fs::write(here.join("p1.checkpoint"), "notes").unwrap();
    let o = run_in(
        here,
        &["run", "-n", "200", "-e", "1", "-p", "4", "-o", "p1"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_in(
        here,
        &[
            "run",
            "-n",
            "200",
            "-e",
            "1",
            "-p",
            "4",
            "-o",
            "p1",
            "--checkpoint-every",
            "50",
        ],
    );
    refused(&o, &["--out", "p1.checkpoint", "did not write", "--force"]);
    assert_eq!(
        std::fs::read_to_string(here.join("p1.checkpoint")).unwrap(),
        "notes"
    );
    std::fs::create_dir(here.join("p2.checkpoint")).unwrap();
    let o = run_in(
        here,
        &[
            "run",
            "-n",
            "200",
            "-o",
            "p2",
            "--checkpoint-every",
            "50",
            "--force",
        ],
    );
    refused(&o, &["p2.checkpoint", "is a folder"]);
    assert!(!here.join("p2").exists());
    // A run with checkpoints removes its own at the end, and only its own.
    let o = run_in(
        here,
        &[
            "run",
            "-n",
            "200",
            "-p",
            "4",
            "-o",
            "p3",
            "--checkpoint-every",
            "50",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!here.join("p3.checkpoint").exists());
    // (b) Names like nrpt's outputs, without nrpt's marker, are a person's files.
    let paper = here.join("mypaper");
    std::fs::create_dir(&paper).unwrap();
    std::fs::write(paper.join("results.json"), r#"{"accuracy":0.93}"#).unwrap();
    std::fs::write(paper.join("table.csv"), "a,b\n").unwrap();
    std::fs::write(paper.join("figure1_final.png"), "PNG").unwrap();
    refused(
        &run_in(here, &["run", "-n", "200", "-o", "mypaper"]),
        &["results.json", "table.csv", "--force"],
    );
    let only = here.join("only");
    std::fs::create_dir(&only).unwrap();
    std::fs::write(only.join("results.json"), "{}").unwrap();
    refused(
        &run_in(here, &["scale", "-p", "8", "-o", "only"]),
        &["results.json"],
    );
    assert_eq!(
        names(&paper),
        ["figure1_final.png", "results.json", "table.csv"]
    );
    assert_eq!(
        std::fs::read_to_string(only.join("results.json")).unwrap(),
        "{}"
    );
    // (c) A file added while the command runs is kept, and the outputs go beside it.
    let o = run_in(here, &["run", "-n", "200", "-p", "4", "-o", "p4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut child = command()
        .current_dir(here)
        .env(common::PAUSE, "3000")
        .args(["run", "-n", "300", "-p", "4", "-o", "p4"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the written outputs", || {
        siblings(&here.join("p4"))
            .iter()
            .any(|s| s.join("summary.json").exists())
    });
    // Within the 3 s the command waits, every output written, before it commits.
    std::fs::write(here.join("p4/notes.txt"), "mine").unwrap();
    let (status, err) = finish(&mut child, Duration::from_secs(60), "the diverted run");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("notes.txt") && err.contains("p4.1"), "{err}");
    assert_eq!(
        std::fs::read_to_string(here.join("p4/notes.txt")).unwrap(),
        "mine"
    );
    assert!(here.join("p4/summary.json").exists());
    assert!(here.join("p4.1/summary.json").exists());
    assert!(siblings(&here.join("p4")).is_empty());
}

#[test]
fn the_working_directory_home_and_input_folders_are_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path().canonicalize().unwrap();
    std::fs::write(here.join("summary.json"), "{}").unwrap();
    // Looks like an old output folder, but it is where the user works: never, even forced.
    for out in [".", here.to_str().unwrap()] {
        refused(
            &run_in(&here, &["run", "-n", "100", "-o", out, "--force"]),
            &["current directory"],
        );
    }
    let sub = here.join("sub");
    std::fs::create_dir(&sub).unwrap();
    refused(
        &run_in(&sub, &["run", "-n", "100", "-o", "..", "--force"]),
        &["holds the current directory"],
    );
    let home = here.join("home");
    std::fs::create_dir(&home).unwrap();
    let o = command()
        .current_dir(&sub)
        .env("HOME", &home)
        .args(["run", "-n", "100", "--force", "-o"])
        .arg(&home)
        .output()
        .unwrap();
    refused(&o, &["home folder"]);
    // The folder of an input file: the data, and the configuration file.
    let d = here.join("d");
    std::fs::create_dir(&d).unwrap();
    write_csv(&d.join("train.csv"));
    refused(
        &run_in(
            &here,
            &[
                "run",
                "--target",
                "classifier",
                "--data",
                "d/train.csv",
                "-o",
                "d",
                "--force",
            ],
        ),
        &["holds the input d/train.csv"],
    );
    assert!(d.join("train.csv").exists());
    std::fs::write(d.join("c.toml"), "iterations = 10\n").unwrap();
    refused(
        &run_in(&here, &["run", "-c", "d/c.toml", "-o", "d", "--force"]),
        &["holds the input"],
    );
    refused(
        &run_in(&here, &["scale", "merge", "d", "-o", "d", "--force"]),
        &["holds the input"],
    );
    assert!(d.join("c.toml").exists());
}

#[test]
fn links_modes_and_groups_of_output_folders_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    let o = run_in(here, &["run", "-n", "100", "-q", "-o", "real"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let real = here.join("real");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o2700)).unwrap();
    let o = run_in(here, &["run", "-n", "100", "-q", "-o", "real"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o2700, "mode {mode:o}");
    // A link is followed and kept.
    std::os::unix::fs::symlink("real", here.join("link")).unwrap();
    let o = run_in(here, &["run", "-n", "120", "-q", "-o", "link"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::symlink_metadata(here.join("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let summary = std::fs::read_to_string(real.join("summary.json")).unwrap();
    assert!(summary.contains("\"iterations\": 120"));
    // A read-only old folder is replaced, and nothing is left beside it.
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o555)).unwrap();
    let o = run_in(here, &["run", "-n", "100", "-q", "-o", "real"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(names(here), ["link", "real"]);
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn unusable_output_names_are_refused_before_computing() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let bad = std::ffi::OsStr::from_bytes(b"out\xff");
    let o = command()
        .current_dir(dir.path())
        .args(["run", "-n", "100000000", "-o"])
        .arg(bad)
        .output()
        .unwrap();
    refused(&o, &["--out", "UTF-8"]);
    let long = "x".repeat(230);
    refused(
        &run_in(dir.path(), &["run", "-n", "100000000", "-o", &long]),
        &["--out", "shorter name"],
    );
    // A mount point cannot be renamed; the root is never an output folder.
    if let Some(m) = mount_point() {
        refused(
            &run_in(
                dir.path(),
                &["run", "-n", "100000000", "-o", m.to_str().unwrap()],
            ),
            &["--out", "mount point"],
        );
    }
    refused(
        &run_in(
            dir.path(),
            &["run", "-n", "100000000", "-o", "/", "--force"],
        ),
        &["--out", "root"],
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A folder that is a mount point on this machine (`/proc` or `/sys` on Linux), if any.
fn mount_point() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    ["/proc", "/sys"]
        .iter()
        .find(|m| mounts.lines().any(|l| l.split(' ').nth(1) == Some(**m)))
        .map(PathBuf::from)
}

/// A run with checkpoints, stopped by SIGINT after its first checkpoint: returns the
/// checkpoint's bytes. `extra` are more flags.
fn interrupted_run(dir: &Path, extra: &[&str]) -> Vec<u8> {
    let mut child = command()
        .current_dir(dir)
        .args(FOREVER)
        .args(["--checkpoint-every", "150", "-q", "-o", "out"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ckpt = dir.join("out.checkpoint");
    wait_for("a checkpoint", || ckpt.exists());
    std::thread::sleep(Duration::from_millis(50));
    signal(&child, "INT");
    assert_eq!(
        wait(&mut child, Duration::from_secs(30), "INT").code(),
        Some(130)
    );
    std::fs::read(&ckpt).unwrap()
}

/// Flipped bytes, truncations and splices of a real checkpoint (a bounded, fixed set):
/// each is refused with exit 2 naming the checkpoint (its SHA-256 finds any change, so
/// none resumes into other results), never a panic; the undamaged one resumes.
#[test]
fn damaged_checkpoints_are_refused_or_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    let good = interrupted_run(here, &["-e", "2", "-p", "4"]);
    let ckpt = here.join("out.checkpoint");
    let resume = |bytes: &[u8]| -> Output {
        std::fs::write(&ckpt, bytes).unwrap();
        command()
            .current_dir(here)
            .args(["run", "--resume", "out", "-q"])
            .output()
            .unwrap()
    };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for _ in 0..24 {
        let mut b = good.clone();
        let i = next(b.len());
        b[i] ^= 1 << next(8);
        cases.push((format!("bit flipped in byte {i}"), b));
    }
    for cut in [
        0,
        7,
        12,
        20,
        21,
        good.len() / 2,
        good.len() - 33,
        good.len() - 1,
    ] {
        cases.push((format!("truncated to {cut} bytes"), good[..cut].to_vec()));
    }
    for _ in 0..6 {
        let (a, b) = (next(good.len()), next(good.len()));
        let (from, to) = (a.min(b), a.max(b));
        let mut s = good[..from].to_vec();
        s.extend_from_slice(&good[to..]);
        s.extend_from_slice(&good[from..to]);
        cases.push((format!("bytes {from}..{to} moved to the end"), s));
    }
    let mut extended = good.clone();
    extended.extend_from_slice(b"more");
    cases.push(("extended".into(), extended));
    for (what, bytes) in &cases {
        let o = resume(bytes);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains("out.checkpoint"), "{what}: {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
    // The undamaged one still resumes.
    std::fs::write(&ckpt, &good).unwrap();
    let mut child = start_in(here, &["run", "--resume", "out", "-q"]);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "INT");
    let (status, err) = finish(&mut child, Duration::from_secs(30), "resume");
    assert_eq!(status.code(), Some(130), "{err}");
}

#[test]
fn a_resume_with_other_data_or_other_flags_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    write_csv(&here.join("train.csv"));
    let data = [
        "--target",
        "classifier",
        "--data",
        "train.csv",
        "--hidden",
        "0",
        "--batch",
        "8",
    ];
    interrupted_run(here, &data);
    // The data changed between the crash and the resume.
    let mut text = std::fs::read_to_string(here.join("train.csv")).unwrap();
    text.push_str("9,9,1\n");
    std::fs::write(here.join("train.csv"), &text).unwrap();
    refused(
        &run_in(here, &["run", "--resume", "out"]),
        &["--resume", "changed", "train.csv"],
    );
    // Another --out, and a cadence of 0.
    refused(
        &run_in(here, &["run", "--resume", "out", "-o", "elsewhere"]),
        &["--out", "resume"],
    );
    refused(
        &run_in(here, &["run", "--resume", "out", "--checkpoint-every", "0"]),
        &["--checkpoint-every"],
    );
    assert!(!here.join("elsewhere").exists());
}

#[test]
fn stale_temporary_files_are_cleaned_and_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    // A run killed while it computed leaves its sibling and lock; a checkpoint writer
    // killed while writing leaves its temporary file.
    let mut child = start_in(here, &[&FOREVER[..], &["-q", "-o", "out"]].concat());
    let out = here.join("out");
    wait_for("the sibling", || siblings(&out).len() == 2);
    // A second, live run on the same folder keeps the first one's sibling.
    let o = run_in(here, &["run", "-n", "50", "-q", "-o", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(siblings(&out).len(), 2, "a live run's sibling was removed");
    signal(&child, "KILL");
    let _ = child.wait();
    assert_eq!(siblings(&out).len(), 2);
    std::fs::write(here.join(".out.checkpoint.0123456789abcdef.tmp"), "half").unwrap();
    let o = run_in(
        here,
        &[
            "run",
            "-n",
            "300",
            "-q",
            "-o",
            "out",
            "--checkpoint-every",
            "100",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(names(here), ["out"], "left behind");
}

/// Inputs that an earlier version got wrong: a pipe's data format, the flag an error
/// names, paths that are the same folder, refusals that must exit with 2 and leave
/// nothing behind, and labels that imply absurdly many classes.
#[test]
fn inputs_are_read_once_and_refusals_name_their_flag() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    write_csv(&here.join("d.csv"));
    // The data format from the content, when a pipe's name says nothing; gzip or not.
    let gz = {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&std::fs::read(here.join("d.csv")).unwrap())
            .unwrap();
        enc.finish().unwrap()
    };
    let plain = std::fs::read(here.join("d.csv")).unwrap();
    for (name, bytes) in [("plain", plain), ("gzip", gz.clone())] {
        let fifo = here.join(format!("pipe-{name}"));
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, bytes))
        };
        let out = format!("out-{name}");
        let o = run_in(
            here,
            &[
                "--allow-special-files",
                "run",
                "--target",
                "classifier",
                "--hidden",
                "0",
                "--batch",
                "10",
                "-n",
                "40",
                "--data",
                fifo.to_str().unwrap(),
                "-o",
                &out,
            ],
        );
        writer.join().unwrap().unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(here.join(&out).join("summary.json").exists());
    }
    // A configuration file is read once too; a pipe cannot be a checkpointed run's
    // data (a resume reads the data again).
    let fifo = here.join("config-pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, "iterations = 100\nchains = 4\n"))
    };
    let o = run_in(
        here,
        &[
            "--allow-special-files",
            "run",
            "-c",
            fifo.to_str().unwrap(),
            "-o",
            "piped",
        ],
    );
    writer.join().unwrap().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    refused(
        &run_in(
            here,
            &[
                "--allow-special-files",
                "run",
                "--target",
                "classifier",
                "--data",
                fifo.to_str().unwrap(),
                "--checkpoint-every",
                "10",
                "-o",
                "x",
            ],
        ),
        &["--checkpoint-every", "cannot be read twice"],
    );
    // A `.npy` file given as CSV data is named as one; an error about a test file names
    // its flag.
    std::fs::write(here.join("data.bin"), b"\x93NUMPY\x01\x00garbage").unwrap();
    std::fs::write(here.join("t.csv"), "1,2,3\n1,2\n").unwrap();
    for (flags, needles) in [
        (
            vec!["--data", "data.bin"],
            vec!["--data", "NumPy", "--labels"],
        ),
        (
            vec!["--data", "d.csv", "--test-data", "t.csv"],
            vec!["--test-data", "t.csv line 2"],
        ),
    ] {
        let mut args = vec![
            "run",
            "--target",
            "classifier",
            "--batch",
            "10",
            "-n",
            "40",
            "-o",
            "x",
        ];
        args.extend(flags);
        refused(&run_in(here, &args), &needles);
    }
    // `--resume out` with `--out ./out` is the same folder.
    let o = run_in(
        here,
        &[
            "run",
            "-n",
            "100",
            "-p",
            "4",
            "-o",
            "r",
            "--checkpoint-every",
            "40",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_in(here, &["run", "--resume", "r", "--out", "./r"]);
    let err = stderr(&o);
    assert!(!err.contains("leave out"), "{err}");
    // Refusals of settings exit with 2 whichever command, and create no folder.
    for (args, needles) in [
        (
            vec![
                "--max-memory",
                "64M",
                "scale",
                "--target",
                "modes2d",
                "-p",
                "1024",
                "-e",
                "1000",
                "-o",
                "a/b/c",
            ],
            vec!["--max-memory"],
        ),
        (
            vec![
                "--max-memory",
                "64M",
                "run",
                "-e",
                "1000",
                "-p",
                "64",
                "-n",
                "30000",
                "-o",
                "a/b/c",
            ],
            vec!["--max-memory"],
        ),
        (
            vec!["reference", "--quick", "-c", "0", "-o", "a/b/c"],
            vec!["--chains", "between 2 and 64"],
        ),
        (
            vec!["deep", "--epochs", "0", "-o", "a/b/c"],
            vec!["--epochs", "above 0"],
        ),
    ] {
        refused(&run_in(here, &args), &needles);
        assert!(!here.join("a").exists(), "{args:?} created a folder");
    }
    // Labels that imply far more classes than examples: a warning before the work.
    let mut text = std::fs::read_to_string(here.join("d.csv")).unwrap();
    text.push_str("0.5,1.5,900\n");
    std::fs::write(here.join("ids.csv"), text).unwrap();
    let o = run_in(
        here,
        &[
            "run",
            "--target",
            "classifier",
            "--hidden",
            "0",
            "--batch",
            "10",
            "-n",
            "4",
            "--data",
            "ids.csv",
            "-o",
            "ids",
        ],
    );
    let err = stderr(&o);
    assert!(
        err.contains("901 classes for") && err.contains("renumber"),
        "{err}"
    );
}

#[test]
fn special_and_oversized_inputs_are_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    std::os::unix::fs::symlink("/dev/zero", here.join("zero.csv")).unwrap();
    let fifo = here.join("fifo.csv");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // A gzip bomb: 400 MiB of zeros and commas.
    let bomb = here.join("bomb.csv.gz");
    {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&bomb).unwrap(),
            flate2::Compression::best(),
        );
        let block = b"0,0,0,0,0,0,0,1\n".repeat(1 << 16);
        for _ in 0..400 {
            enc.write_all(&block).unwrap();
        }
        enc.finish().unwrap();
    }
    for (args, says) in [
        (vec!["--data", "zero.csv"], "character device"),
        (vec!["--data", "fifo.csv"], "FIFO"),
        (vec!["--data", "bomb.csv.gz"], "decompression bomb"),
    ] {
        let started = Instant::now();
        let mut full = vec!["run", "--target", "classifier", "-o", "x"];
        full.extend(args);
        refused(&run_in(here, &full), &["--data", says]);
        assert!(started.elapsed() < Duration::from_secs(10), "{says}");
    }
    for args in [
        vec!["run", "--config", "zero.csv"],
        vec!["scale", "merge", "zero.csv", "-o", "m"],
        vec!["scale", "--rates-file", "fifo.csv", "-o", "m"],
    ] {
        refused(&run_in(here, &args), &["not a regular file"]);
    }
    // Allowed, a FIFO without a writer is waited for, and SIGTERM stops the wait.
    let mut child = start_in(
        here,
        &[
            "scale",
            "merge",
            "fifo.csv",
            "-o",
            "m",
            "--allow-special-files",
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "TERM");
    let status = wait(&mut child, Duration::from_secs(10), "merge of a FIFO");
    assert_eq!(status.code(), Some(130));
    // Allowed, /dev/zero is read up to its cap.
    let o = run_in(
        here,
        &[
            "run",
            "--config",
            "zero.csv",
            "--allow-special-files",
            "-o",
            "x",
        ],
    );
    refused(&o, &["larger than"]);
    assert!(!here.join("x").exists() && !here.join("m").exists());
}

#[test]
fn runs_larger_than_the_memory_limit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    let o = run_in(
        here,
        &[
            "run",
            "-p",
            "4096",
            "-e",
            "32",
            "-n",
            "400",
            "--max-memory",
            "256M",
            "-o",
            "x",
        ],
    );
    refused(&o, &["--max-memory", "records"]);
    refused(
        &run_in(here, &["run", "--max-memory", "1K"]),
        &["--max-memory"],
    );
    // The estimate against the peaks of real runs: memory_estimate.rs.
}

#[test]
fn rayon_num_threads_cannot_pass_the_thread_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = command()
        .current_dir(dir.path())
        .env("RAYON_NUM_THREADS", "5000")
        .args(FOREVER)
        .args(["-e", "64", "-o", "out"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = dir.path().join("out");
    wait_for("the run to start", || !siblings(&out).is_empty());
    std::thread::sleep(Duration::from_millis(200));
    let proc_status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    signal(&child, "INT");
    let (status, err) = finish(&mut child, Duration::from_secs(30), "run");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("RAYON_NUM_THREADS"), "{err}");
    if let Some(threads) = proc_status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|t| t.trim().parse::<usize>().ok())
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(threads <= cores + 8, "{threads} threads for {cores} cores");
    }
}

#[test]
fn closed_or_full_standard_output_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    // A reader that went away: exit 141, the outputs written.
    let mut child = command()
        .current_dir(here)
        .args(["run", "-n", "100", "-o", "out"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let (status, err) = finish(&mut child, Duration::from_secs(30), "closed stdout");
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(here.join("out/summary.json").exists());
    // A full disk behind stdout: exit 1, and the message says the outputs are written.
    if Path::new("/dev/full").exists() {
        for args in [
            vec!["run", "-n", "100", "-o", "out"],
            vec![
                "run", "-n", "100", "-o", "out", "--strict", "--warmup", "1000",
            ],
            vec!["window", "-p", "16", "-s", "0.4"],
            vec!["scale", "-p", "4", "--max-iterations", "1000", "-o", "s"],
        ] {
            let o = command()
                .current_dir(here)
                .args(&args)
                .stdout(std::fs::File::create("/dev/full").unwrap())
                .output()
                .unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.contains("standard output"), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            if args.contains(&"-o") {
                assert!(err.contains("outputs are complete"), "{args:?}: {err}");
            }
        }
    }
    // A full stderr: the warnings and notes are dropped, the run succeeds.
    if Path::new("/dev/full").exists() {
        let o = command()
            .current_dir(here)
            .args(["run", "-n", "100", "-o", "out2", "--warmup", "1000"])
            .stderr(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert!(o.status.success(), "{:?}", o.status);
        assert!(
            files(&here.join("out2"))
                .iter()
                .any(|(n, _)| n == "summary.json")
        );
    }
}
