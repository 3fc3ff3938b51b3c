//! The classifier kernels (kernels/mlp.cu) compile through NVRTC for sm_90 in both
//! math modes (no FMA and no approximate math in the exact PTX), and `ptxas -v` reports
//! no spills for any of them, with the step kernel's registers within the budget of
//! its launch bounds. Needs libnvrtc (and ptxas for the report): `source
//! scripts/nvrtc-env.sh`. Without them the tests say they were skipped, or fail when
//! `NRPT_REQUIRE_NVRTC` is set.

use std::collections::HashMap;
use std::process::Command;

use nrpt_cuda::MathMode;
use nrpt_cuda::kernels;
use nrpt_cuda::mlp::{self, MlpKernel};

/// Prints past the test harness's output capture.
macro_rules! report {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

fn flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Reports a skip, or fails when one of `required_by` is set (as in nvrtc.rs: the test
/// suite sets `NRPT_REQUIRE_NVRTC`, scripts/gpu-check.sh `NRPT_REQUIRE_GPU`).
fn report_skip(message: &str, required_by: &[&str]) {
    if let Some(var) = required_by.iter().find(|v| flag(v)) {
        panic!("{var} is set but {message}");
    }
    report!("{message}");
}

const ARCH: &str = "compute_90";

fn nvrtc_or_skip(test: &str) -> bool {
    if kernels::nvrtc_present() {
        true
    } else {
        report_skip(
            &format!(
                "{test}: skipped: NVRTC not found (`source scripts/nvrtc-env.sh` installs it)"
            ),
            &["NRPT_REQUIRE_NVRTC", "NRPT_REQUIRE_GPU"],
        );
        false
    }
}

#[test]
fn classifier_kernels_compile_for_sm_90() {
    if !nvrtc_or_skip("classifier_kernels_compile_for_sm_90") {
        return;
    }
    for mode in [MathMode::Exact, MathMode::Fma] {
        let t = std::time::Instant::now();
        let ptx = mlp::compile_ptx(ARCH, mode).unwrap_or_else(|e| panic!("{e}"));
        report!(
            "NVRTC {mode:?}: {} bytes of PTX in {:.2?}",
            ptx.len(),
            t.elapsed()
        );
        for k in MlpKernel::ALL {
            assert!(
                ptx.contains(&format!(".entry {}(", k.name())),
                "{} missing from the PTX",
                k.name()
            );
        }
        if mode == MathMode::Exact {
            assert!(!ptx.contains("fma.rn.f32"), "fma.rn.f32 in exact PTX");
            assert!(!ptx.contains("fma.rn.f64"), "fma.rn.f64 in exact PTX");
            assert!(!ptx.contains(".approx"), "approximate math in exact PTX");
        } else {
            // The products contract into FMAs in the fast mode.
            assert!(ptx.contains("fma.rn.f32"), "no fma.rn.f32 in Fma PTX");
        }
    }
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
fn ptxas_reports_no_spills_in_the_classifier_kernels() {
    if !nvrtc_or_skip("ptxas_reports_no_spills_in_the_classifier_kernels") {
        return;
    }
    if Command::new("ptxas").arg("--version").output().is_err() {
        report_skip(
            "ptxas_reports_no_spills_in_the_classifier_kernels: skipped: ptxas not found on \
             PATH (`source scripts/nvrtc-env.sh`)",
            &["NRPT_REQUIRE_NVRTC"],
        );
        return;
    }
    // NRPT_MLP_KEEP=DIR keeps the PTX and cubins there (for cuobjdump -sass).
    let keep = std::env::var_os("NRPT_MLP_KEEP").map(std::path::PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("nrpt-mlp-ptxas-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).unwrap();
    for mode in [MathMode::Exact, MathMode::Fma] {
        let ptx = mlp::compile_ptx(ARCH, mode).unwrap_or_else(|e| panic!("{e}"));
        let src = dir.join(format!("mlp_{mode:?}.ptx"));
        let bin = dir.join(format!("mlp_{mode:?}.cubin"));
        std::fs::write(&src, &ptx).unwrap();
        let out = Command::new("ptxas")
            .args(["-arch=sm_90", "-v"])
            .arg(&src)
            .arg("-o")
            .arg(&bin)
            .output()
            .expect("ptxas runs");
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "ptxas failed:\n{text}");
        let resources = parse_ptxas(&text);
        report!("ptxas -arch=sm_90 -v, {mode:?} math:");
        let mut bad = Vec::new();
        for k in MlpKernel::ALL {
            let r = resources
                .get(k.name())
                .unwrap_or_else(|| panic!("{} not in the ptxas report:\n{text}", k.name()));
            report!(
                "  {:<18} {:>3} registers, {:>4} bytes stack, {} bytes spill stores, {} bytes spill loads",
                k.name(),
                r.registers,
                r.stack,
                r.spill_stores,
                r.spill_loads
            );
            for line in &r.lines {
                report!("      {}", line.trim());
            }
            if r.spill_stores > 0 || r.spill_loads > 0 {
                bad.push(k.name());
            }
        }
        // 160 threads per step block: three blocks per SM (the default network's
        // 60 KB of shared memory allows three) need at most 65536 / 480 = 136 registers.
        let step = &resources[MlpKernel::Step.name()];
        assert!(
            step.registers <= 128,
            "mlp_step uses {} registers ({mode:?})",
            step.registers
        );
        assert!(bad.is_empty(), "spills in {bad:?} ({mode:?})");
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
