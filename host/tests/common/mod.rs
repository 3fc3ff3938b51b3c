//! What the command's test files share: running the `nrpt` binary, reading its JSON,
//! and the rule for skipping a GPU test.
#![allow(dead_code)] // each test file uses its own part

use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Runs the `nrpt` binary of this build with `args`.
pub fn nrpt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nrpt"))
        .args(args)
        .output()
        .expect("the nrpt binary runs")
}

/// The JSON object on stdout of a run that must have succeeded.
pub fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "nrpt failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

/// The number at `key` of `v`.
pub fn number(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` missing or not a number in {v}"))
}

/// `true` when `NRPT_REQUIRE_GPU` is set (to anything but empty or `0`): then a test
/// that cannot reach a GPU fails instead of being skipped.
pub fn gpu_required() -> bool {
    std::env::var_os("NRPT_REQUIRE_GPU").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Says that a test was skipped and why, past the test harness's output capture.
pub fn report(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// The test hook of `OutDir::commit` (sampling/src/output/folder.rs), removed from every
/// command unless a test sets it.
pub const PAUSE: &str = "NRPT_PAUSE_BEFORE_COMMIT_MS";

/// The `nrpt` binary of this build as a command to configure and spawn.
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nrpt"));
    c.env_remove(PAUSE);
    c
}

/// Its standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Waits for `child` at most `limit`, then kills it and fails.
pub fn wait(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: nrpt still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `cond` holds (at most 60 s).
pub fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} never happened"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends signal `sig` (`INT`, `TERM`, `KILL`) to `child`.
pub fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(ok.success(), "kill -{sig} failed");
}

/// The hidden siblings `.NAME.nrpt-…` (temporary folders and their locks) of `out`
/// that exist now.
pub fn siblings(out: &std::path::Path) -> Vec<std::path::PathBuf> {
    let name = out.file_name().unwrap().to_string_lossy().into_owned();
    let prefix = format!(".{name}.nrpt-");
    std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&prefix)
        })
        .collect()
}

/// Starts `nrpt ARGS` in `dir`, stdout discarded, stderr kept for [`finish`].
pub fn start_in(dir: &std::path::Path, args: &[&str]) -> Child {
    command()
        .current_dir(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the nrpt binary starts")
}

/// Waits for `child` (at most `limit`) and returns its status and standard error.
pub fn finish(child: &mut Child, limit: Duration, what: &str) -> (ExitStatus, String) {
    let status = wait(child, limit, what);
    let err = child
        .stderr
        .take()
        .map(|e| std::io::read_to_string(e).unwrap_or_default())
        .unwrap_or_default();
    (status, err)
}

/// Every file of a folder, by name, with its bytes (sorted).
pub fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// `nrpt run` for hours (10⁸ iterations), keeping no sample: what the tests interrupt.
pub const FOREVER: [&str; 5] = ["run", "-n", "100000000", "--thin", "0"];
