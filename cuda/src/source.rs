//! Targets that bring their own CUDA source: the kernels' generic step
//! (`kernels/source_step.cuh`, entry point `step_source` in `kernels/source.cu`)
//! compiled by NVRTC with the target's energy and gradient, once per process, math
//! mode and source.
//!
//! A [`TargetSource`] is CUDA C that defines, in the operation order of the target's
//! Rust `Potential<f32>`,
//!
//! ```c
//! NRPT_HD float nrpt_target_energy(const float* x, nrpt_u32 dim);
//! NRPT_HD void nrpt_target_gradient(const float* x, float* g, nrpt_u32 dim);
//! ```
//!
//! (`NRPT_HD` is `__host__ __device__` on the GPU and `static inline` in a host
//! compiler, so the same text also compiles for the CPU: see [`TargetSource::host_program`]). The
//! kernels add the noise of [`crate::Noise`] and the exploration of nrpt-core around it,
//! with nrpt-core's random numbers, so a GPU run of the target is the CPU run of
//! `Noisy<its potential>` wherever its arithmetic is IEEE; the device's `exp`, `log`
//! and other library functions may differ from the host's by an ulp.
//!
//! The program is compiled at run time, so a source target needs NVRTC on the GPU
//! machine (precompiled PTX covers the built-in kernels only).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::CudaError;
use crate::kernels::{FILES, compile_options, inline_units};
use crate::params::MathMode;
pub use crate::params::TargetSource;

/// The entry point of the source step.
pub const STEP_KERNEL: &str = "step_source";

/// Largest D of a source target (`NRPT_SOURCE_MAX_DIM`: the gradient is held by each
/// thread).
pub const MAX_DIM: usize = 256;

/// The file name the target's code takes in the program.
const TARGET_FILE: &str = "nrpt_target.cuh";

impl TargetSource {
    /// The whole NVRTC program of the source step: `kernels/source.cu` with the kernels'
    /// headers and this code inlined.
    pub fn program(&self) -> String {
        let mut files: Vec<(&str, &str)> = FILES.to_vec();
        files.push((TARGET_FILE, &self.code));
        inline_units(&["source.cu"], &files)
    }

    /// The code with the kernels' per-thread headers and the generic step, for a host
    /// C++ compiler (the kernels' headers, the target's code, then `source_step.cuh`): what the tests
    /// compile to check a source against nrpt-core without a GPU.
    pub fn host_program(&self) -> String {
        let mut files: Vec<(&str, &str)> = FILES.to_vec();
        files.push((TARGET_FILE, &self.code));
        inline_units(&["chain.cuh", TARGET_FILE, "source_step.cuh"], &files)
    }

    /// A short stable digest of the code (the module cache's key).
    fn digest(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.code.hash(&mut h);
        h.finish()
    }
}

/// The source step compiled to PTX for `arch` (e.g. `compute_90`) under `mode`, once
/// per process and source.
///
/// # Errors
///
/// [`CudaError::NoNvrtc`] without NVRTC; [`CudaError::Compile`] with NVRTC's log when
/// the target's code does not compile (the log names lines of the whole program,
/// [`TargetSource::program`]).
pub fn compile_ptx(source: &TargetSource, arch: &str, mode: MathMode) -> Result<String, CudaError> {
    type Cache = Mutex<HashMap<(u64, String, MathMode), Arc<(String, String)>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (source.digest(), arch.to_string(), mode);
    if let Ok(guard) = cache.lock()
        && let Some(hit) = guard.get(&key)
        && hit.0 == source.code
    {
        return Ok(hit.1.clone());
    }
    let ptx = crate::ptx_cache::nvrtc_compile(
        &format!("nrpt_source_{}.cu", source.name),
        &source.program(),
        &compile_options(arch, mode),
    )
    .map_err(|e| match e {
        CudaError::Compile { options, log } => CudaError::Compile {
            options,
            log: format!("the CUDA source of target {}: {log}", source.name),
        },
        other => other,
    })?;
    if let Ok(mut guard) = cache.lock() {
        guard.insert(key, Arc::new((source.code.clone(), ptx.clone())));
    }
    Ok(ptx)
}
