//! Every kernel compiles through NVRTC for sm_90, and `ptxas -v` reports no spills for
//! the step, swap and persistent kernels. Needs libnvrtc (and ptxas for the spill
//! report) on the library path / PATH: `source scripts/nvrtc-env.sh`. Without them
//! the tests say that they were skipped and why.

use std::collections::HashMap;
use std::process::Command;

use nrpt_cuda::MathMode;
use nrpt_cuda::kernels::{self, Kernel};

/// Says that a test was skipped and why, past the test harness's output capture (so
/// it shows under a plain `cargo test`).
macro_rules! report {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// Reports a skip, or fails when `NRPT_REQUIRE_NVRTC` is set (the test suite sets it
/// after installing NVRTC and ptxas, so that CI never skips these checks silently).
fn report_skip(message: &str) {
    use std::io::Write;
    if std::env::var_os("NRPT_REQUIRE_NVRTC").is_some() {
        panic!("NRPT_REQUIRE_NVRTC is set but {message}");
    }
    let _ = writeln!(std::io::stderr(), "{message}");
}

const ARCH: &str = "compute_90";

fn nvrtc_or_skip(test: &str) -> bool {
    if kernels::nvrtc_present() {
        true
    } else {
        report_skip(&format!(
            "{test}: skipped: NVRTC not found (libnvrtc.so.13 is not on LD_LIBRARY_PATH; \
             `source scripts/nvrtc-env.sh` installs the pip wheel and sets it)"
        ));
        false
    }
}

#[test]
fn every_kernel_compiles_for_sm_90() {
    if !nvrtc_or_skip("every_kernel_compiles_for_sm_90") {
        return;
    }
    for mode in [MathMode::Exact, MathMode::Fma] {
        let t = std::time::Instant::now();
        let ptx = kernels::compile_ptx(ARCH, mode).unwrap_or_else(|e| panic!("{e}"));
        report!(
            "NVRTC {mode:?}: {} bytes of PTX in {:.2?}",
            ptx.len(),
            t.elapsed()
        );
        for k in Kernel::ALL {
            assert!(
                ptx.contains(&format!(".entry {}(", k.name())),
                "{} missing from the PTX",
                k.name()
            );
        }
        if mode == MathMode::Exact {
            // No contraction anywhere: not a single fused multiply-add in the PTX.
            assert!(!ptx.contains("fma.rn.f32"), "fma.rn.f32 in exact PTX");
            assert!(!ptx.contains("fma.rn.f64"), "fma.rn.f64 in exact PTX");
            assert!(!ptx.contains(".approx"), "approximate math in exact PTX");
        }
    }
    // Cached: the second call is free.
    let t = std::time::Instant::now();
    kernels::compile_ptx(ARCH, MathMode::Exact).unwrap();
    assert!(t.elapsed().as_millis() < 50);
}

/// Resources of one function from `ptxas -v`.
#[derive(Debug, Default)]
struct Resources {
    registers: u32,
    stack: u32,
    spill_stores: u32,
    spill_loads: u32,
    lines: Vec<String>,
}

fn number_before(line: &str, unit: &str) -> Option<u32> {
    let i = line.find(unit)?;
    line[..i].split_whitespace().last()?.parse().ok()
}

fn parse_ptxas(report: &str) -> HashMap<String, Resources> {
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

#[test]
fn ptxas_reports_no_spills() {
    if !nvrtc_or_skip("ptxas_reports_no_spills") {
        return;
    }
    if Command::new("ptxas").arg("--version").output().is_err() {
        report_skip(
            "ptxas_reports_no_spills: skipped: ptxas not found on PATH (it comes with the \
             nvidia-cuda-nvcc wheel; `source scripts/nvrtc-env.sh`)",
        );
        return;
    }
    for mode in [MathMode::Exact, MathMode::Fma] {
        let ptx = kernels::compile_ptx(ARCH, mode).unwrap_or_else(|e| panic!("{e}"));
        let dir = std::env::temp_dir().join(format!("nrpt-cuda-ptxas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join(format!("kernels_{mode:?}.ptx"));
        let bin = dir.join(format!("kernels_{mode:?}.cubin"));
        std::fs::write(&src, &ptx).unwrap();
        let out = Command::new("ptxas")
            .args(["-arch=sm_90", "-v"])
            .arg(&src)
            .arg("-o")
            .arg(&bin)
            .output()
            .expect("ptxas runs");
        let report = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "ptxas failed:\n{report}");
        let resources = parse_ptxas(&report);
        report!("ptxas -arch=sm_90 -v, {mode:?} math:");
        let mut bad = Vec::new();
        for k in Kernel::ALL {
            let r = resources
                .get(k.name())
                .unwrap_or_else(|| panic!("{} not in the ptxas report:\n{report}", k.name()));
            report!(
                "  {:<16} {:>3} registers, {:>4} bytes stack, {} bytes spill stores, {} bytes spill loads{}",
                k.name(),
                r.registers,
                r.stack,
                r.spill_stores,
                r.spill_loads,
                if k.is_hot() { "" } else { "  (setup/probe)" }
            );
            for line in &r.lines {
                report!("      {}", line.trim());
            }
            if k.is_hot() && (r.spill_stores > 0 || r.spill_loads > 0) {
                bad.push(k.name());
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(bad.is_empty(), "spills in {bad:?} ({mode:?})");
    }
}
