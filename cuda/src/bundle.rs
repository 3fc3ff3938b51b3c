//! Every NVRTC program nrpt-cuda loads, for precompiling them ahead of time
//! (`gpu_bench --emit-ptx DIR`, run by `scripts/gpu-build.sh`) into the folder that
//! [`PTX_DIR_ENV`](crate::ptx_cache::PTX_DIR_ENV) names.

use std::path::{Path, PathBuf};

use crate::error::CudaError;
use crate::params::MathMode;
use crate::{kernels, ptx_cache};

/// One NVRTC program nrpt-cuda loads: its file stem in a folder of precompiled PTX,
/// NVRTC's name for it, its source and its options.
pub struct Program {
    /// `DIR/STEM.ptx`.
    pub stem: String,
    /// The program's file name in NVRTC's messages.
    pub name: &'static str,
    /// The CUDA source NVRTC compiles.
    pub source: String,
    /// The NVRTC options.
    pub options: Vec<String>,
}

/// Every program nrpt-cuda loads for `arch`: the kernels of `kernels/` and the MLP
/// kernels in every math mode ([`MathMode::ALL`]), and the micro-kernels of [`crate::limits`]. Each
/// module that loads a program reads it from [`PTX_DIR_ENV`](crate::ptx_cache::PTX_DIR_ENV) under the same stem.
pub fn programs(arch: &str) -> Vec<Program> {
    let mut out = Vec::new();
    for mode in MathMode::ALL {
        out.push(Program {
            stem: kernels::kernels_stem(arch, mode),
            name: "nrpt_kernels.cu",
            source: kernels::program_source(),
            options: kernels::compile_options(arch, mode),
        });
        out.push(Program {
            stem: crate::mlp::program_stem(arch, mode),
            name: crate::mlp::PROGRAM_NAME,
            source: crate::mlp::program_source(),
            options: crate::mlp::compile_options(arch, mode),
        });
    }
    let (stem, source, options) = crate::limits::program(arch);
    out.push(Program {
        stem,
        name: crate::limits::PROGRAM_NAME,
        source: source.to_string(),
        options,
    });
    out
}

/// Compiles every program of [`programs`] for `arch` with NVRTC and writes each to
/// `dir` with its manifest. Returns the files written. Needs NVRTC, not a GPU.
pub fn emit_all(dir: &Path, arch: &str) -> Result<Vec<PathBuf>, CudaError> {
    let compiler = match ptx_cache::nvrtc_version() {
        Some((major, minor)) => format!("NVRTC {major}.{minor}"),
        None => "NVRTC".to_string(),
    };
    let mut written = Vec::new();
    for p in programs(arch) {
        let ptx = ptx_cache::nvrtc_compile(p.name, &p.source, &p.options)?;
        let path = ptx_cache::write(dir, &p.stem, &p.source, &p.options, &ptx, &compiler).map_err(
            |e| {
                CudaError::Unsupported(format!(
                    "cannot write {}/{}.ptx: {e}",
                    dir.display(),
                    p.stem
                ))
            },
        )?;
        written.push(path);
    }
    Ok(written)
}
