//! What the NVRTC test files share: skips that fail when the toolchain is required,
//! and the `ptxas -v` report read back per function.

use std::collections::HashMap;

use nrpt_cuda::kernels;

/// Says that a test was skipped and why, past the test harness's output capture (so
/// it shows under a plain `cargo test`).
#[allow(unused_macros)]
macro_rules! report {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// `true` when the environment variable `name` is set to anything but empty or `0`.
pub fn flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Reports a skip, or fails when one of `required_by` is set: the test suite sets
/// `NRPT_REQUIRE_NVRTC` after installing NVRTC and ptxas, scripts/gpu-check.sh sets
/// `NRPT_REQUIRE_GPU`, so that neither skips these checks silently.
pub fn report_skip(message: &str, required_by: &[&str]) {
    use std::io::Write;
    if let Some(var) = required_by.iter().find(|v| flag(v)) {
        panic!("{var} is set but {message}");
    }
    let _ = writeln!(std::io::stderr(), "{message}");
}

pub const ARCH: &str = "compute_90";

/// Whether NVRTC loads; a reported skip (or a failure, see [`report_skip`]) if not.
pub fn nvrtc_or_skip(test: &str) -> bool {
    if kernels::nvrtc_present() {
        true
    } else {
        report_skip(
            &format!(
                "{test}: skipped: NVRTC not found (libnvrtc.so.13 is not on LD_LIBRARY_PATH; \
                 `source scripts/nvrtc-env.sh` installs the pip wheel and sets it)"
            ),
            &[
                "NRPT_REQUIRE_NVRTC",
                "NRPT_REQUIRE_GPU",
                "NRPT_REQUIRE_SASS",
            ],
        );
        false
    }
}

/// Resources of one function from `ptxas -v`.
#[derive(Debug, Default)]
pub struct Resources {
    pub registers: u32,
    pub stack: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub lines: Vec<String>,
}

fn number_before(line: &str, unit: &str) -> Option<u32> {
    let i = line.find(unit)?;
    line[..i].split_whitespace().last()?.parse().ok()
}

/// Registers, stack and spills of every function of a `ptxas -v` report.
pub fn parse_ptxas(report: &str) -> HashMap<String, Resources> {
    let mut out: HashMap<String, Resources> = HashMap::new();
    let mut current: Option<String> = None;
    for line in report.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            current = Some(rest.trim().to_string());
            out.entry(rest.trim().to_string())
                .or_default()
                .lines
                .push(line.to_string());
        } else if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        } else if let Some(name) = &current {
            let r = out.entry(name.clone()).or_default();
            if line.contains("spill stores") {
                r.stack = number_before(line, "bytes stack frame").unwrap_or(0);
                r.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                r.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
                r.lines.push(line.to_string());
            } else if line.contains("Used ") && line.contains("registers") {
                r.registers = number_before(line, "registers").unwrap_or(0);
                r.lines.push(line.to_string());
            }
        }
    }
    out
}
