//! The classifier kernels (kernels/mlp.cu) compile through NVRTC for sm_90 in both
//! math modes (no FMA and no approximate math in the exact PTX), and `ptxas -v` reports
//! no spills for any of them, with the step kernel's registers within the budget of
//! its launch bounds. Needs libnvrtc (and ptxas for the report): `source
//! scripts/nvrtc-env.sh`. Without them the tests say they were skipped, or fail when
//! `NRPT_REQUIRE_NVRTC` is set.

use std::process::Command;

use nrpt_cuda::MathMode;
use nrpt_cuda::mlp::{self, MlpKernel};

#[macro_use]
mod toolchain;
use toolchain::{ARCH, nvrtc_or_skip, parse_ptxas, report_skip};

#[test]
fn classifier_kernels_compile_for_sm_90() {
    if !nvrtc_or_skip("classifier_kernels_compile_for_sm_90") {
        return;
    }
    for mode in MathMode::ALL {
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
            // The products contract into FMAs in the FMA and fast modes.
            assert!(ptx.contains("fma.rn.f32"), "no fma.rn.f32 in {mode:?} PTX");
        }
        if mode == MathMode::Fast {
            // The prior's Box–Muller draw takes the hardware log and square root.
            assert!(
                ptx.contains("lg2.approx.ftz.f32"),
                "no lg2.approx in fast PTX"
            );
            assert!(
                ptx.contains("rsqrt.approx.ftz.f32"),
                "no rsqrt.approx in fast PTX"
            );
        }
    }
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
    for mode in MathMode::ALL {
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
        // 60 KB of shared memory allows three; the kernel's launch bound asks for
        // three) need at most 65536 / 480 = 136 registers (sm_90: registers allocated
        // per warp in units of 256).
        let step = &resources[MlpKernel::Step.name()];
        let per_warp = (step.registers * 32).div_ceil(256) * 256;
        let fit = 65_536 / (per_warp * 5);
        report!(
            "  mlp_step: {} registers, {fit} blocks of 160 threads per SM by registers",
            step.registers
        );
        assert!(
            fit >= 3,
            "mlp_step uses {} registers: {fit} blocks of 160 threads per SM ({mode:?})",
            step.registers
        );
        assert!(bad.is_empty(), "spills in {bad:?} ({mode:?})");
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
