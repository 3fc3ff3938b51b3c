//! With the test-only feature `host-shims` (Cargo.toml), builds the kernels' per-thread
//! math (kernels/*.cuh) for the host, without FMA contraction, into static libraries the
//! tests compare with nrpt-core (`host_math`, `mlp::host`). Without it (every build of the
//! command and of the Python package) this script compiles nothing. `kernels` is this
//! crate's link to the repository's `kernels/` (see src/kernels.rs).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "host-shims")]
    host_shims();
}

/// The three C++ libraries of the feature `host-shims`.
#[cfg(feature = "host-shims")]
fn host_shims() {
    println!("cargo:rerun-if-changed=csrc/host_math.cpp");
    println!("cargo:rerun-if-changed=kernels");
    if let Ok(entries) = std::fs::read_dir("kernels") {
        for entry in entries.flatten() {
            println!("cargo:rerun-if-changed={}", entry.path().display());
        }
    }
    cc::Build::new()
        .cpp(true)
        .file("csrc/host_math.cpp")
        .include("kernels")
        .opt_level(2)
        .flag("-ffp-contract=off")
        .flag_if_supported("-fno-fast-math")
        .flag_if_supported("-fexcess-precision=standard")
        .warnings(true)
        .compile("nrpt_kernel_host");

    // ---- the same shims for MathMode::Fast (host_math_fast.cpp: NRPT_FAST_MATH=1, the
    // hardware approximations emulated), named nrpt_fast_host_*. Every function of the
    // headers is `static inline` on the host, so the two builds share no symbol.
    println!("cargo:rerun-if-changed=csrc/host_math_fast.cpp");
    cc::Build::new()
        .cpp(true)
        .file("csrc/host_math_fast.cpp")
        .include("kernels")
        .include("csrc")
        .opt_level(2)
        .flag("-ffp-contract=off")
        .flag_if_supported("-fno-fast-math")
        .flag_if_supported("-fexcess-precision=standard")
        .warnings(true)
        .compile("nrpt_kernel_host_fast");

    // ---- the classifier kernels (kernels/mlp.cuh) for the host: nrpt_cuda::mlp::host.
    println!("cargo:rerun-if-changed=csrc/mlp_host.cpp");
    cc::Build::new()
        .cpp(true)
        .file("csrc/mlp_host.cpp")
        .include("kernels")
        .opt_level(2)
        .flag("-ffp-contract=off")
        .flag_if_supported("-fno-fast-math")
        .flag_if_supported("-fexcess-precision=standard")
        .flag_if_supported("-std=c++17")
        .warnings(true)
        .compile("nrpt_mlp_host");
}
