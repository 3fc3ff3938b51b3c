//! What the command's test files share: running the `nrpt` binary, reading its JSON,
//! and the rule for skipping a GPU test.
#![allow(dead_code)] // each test file uses its own part

use std::process::{Command, Output};

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
