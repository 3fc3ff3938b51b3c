//! The CUDA sources of `kernels/`, assembled into one NVRTC program, the names of its
//! entry points, and the compile step (cached once per process and architecture).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::error::CudaError;
use crate::params::MathMode;

/// The headers and kernel files of `kernels/`, embedded at build time. They are read through
/// `cuda/kernels`, a link to the repository's `kernels/` inside this crate's folder, so that
/// a packaged copy of the crate (`cargo package`, the Python package's sdist) carries them.
pub(crate) const FILES: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../kernels/common.cuh")),
    ("philox.cuh", include_str!("../kernels/philox.cuh")),
    ("fastmath.cuh", include_str!("../kernels/fastmath.cuh")),
    ("targets.cuh", include_str!("../kernels/targets.cuh")),
    ("storage.cuh", include_str!("../kernels/storage.cuh")),
    ("chain.cuh", include_str!("../kernels/chain.cuh")),
    ("swap.cuh", include_str!("../kernels/swap.cuh")),
    ("warp_swap.cuh", include_str!("../kernels/warp_swap.cuh")),
    ("init.cu", include_str!("../kernels/init.cu")),
    ("step.cu", include_str!("../kernels/step.cu")),
    ("swap.cu", include_str!("../kernels/swap.cu")),
    ("persistent.cu", include_str!("../kernels/persistent.cu")),
    // The step of targets with their own source (crate::source), a program of its own.
    (
        "source_step.cuh",
        include_str!("../kernels/source_step.cuh"),
    ),
    ("source.cu", include_str!("../kernels/source.cu")),
];

/// The translation units, in program order.
const UNITS: &[&str] = &["init.cu", "step.cu", "swap.cu", "persistent.cu"];

/// Every kernel entry point of the program.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Ladder, permutation, gates, counts (one thread per chain).
    InitEnsembles,
    /// Uniform initial states, f32 storage.
    InitStatesF32,
    /// Uniform initial states, bf16 storage.
    InitStatesBf16,
    /// Uniform initial states, f16 storage.
    InitStatesF16,
    /// Philox blocks of given counters and keys.
    PhiloxProbe,
    /// Box–Muller, ln and sin/cos 2πx of given words.
    MathProbe,
    /// Plain device-to-device copy (bandwidth yardstick).
    Copy,
    /// D = 2 step, one thread per chain.
    Step2d,
    /// SumModes step, one thread per chain, f32.
    StepSeqF32,
    /// SumModes step, one thread per chain, bf16.
    StepSeqBf16,
    /// SumModes step, one thread per chain, f16.
    StepSeqF16,
    /// SumModes step, one block per chain, f32.
    StepBlockF32,
    /// SumModes step, one block per chain, bf16.
    StepBlockBf16,
    /// SumModes step, one block per chain, f16.
    StepBlockF16,
    /// Swap and adapt, one thread per ensemble.
    SwapAdapt,
    /// Persistent 2D kernel (swap phase by a team of lanes through shared memory, any P
    /// that fits a block).
    Persistent2d,
    /// Persistent 2D kernel for P ≤ 32: one level per lane, the swap phase in
    /// registers and shuffles (kernels/warp_swap.cuh).
    Persistent2dWarp,
}

impl Kernel {
    /// Every kernel.
    pub const ALL: [Kernel; 17] = [
        Kernel::InitEnsembles,
        Kernel::InitStatesF32,
        Kernel::InitStatesBf16,
        Kernel::InitStatesF16,
        Kernel::PhiloxProbe,
        Kernel::MathProbe,
        Kernel::Copy,
        Kernel::Step2d,
        Kernel::StepSeqF32,
        Kernel::StepSeqBf16,
        Kernel::StepSeqF16,
        Kernel::StepBlockF32,
        Kernel::StepBlockBf16,
        Kernel::StepBlockF16,
        Kernel::SwapAdapt,
        Kernel::Persistent2d,
        Kernel::Persistent2dWarp,
    ];

    /// The `extern "C"` name.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::InitEnsembles => "init_ensembles",
            Kernel::InitStatesF32 => "init_states_f32",
            Kernel::InitStatesBf16 => "init_states_bf16",
            Kernel::InitStatesF16 => "init_states_f16",
            Kernel::PhiloxProbe => "philox_probe",
            Kernel::MathProbe => "math_probe",
            Kernel::Copy => "copy_kernel",
            Kernel::Step2d => "step_2d",
            Kernel::StepSeqF32 => "step_seq_f32",
            Kernel::StepSeqBf16 => "step_seq_bf16",
            Kernel::StepSeqF16 => "step_seq_f16",
            Kernel::StepBlockF32 => "step_block_f32",
            Kernel::StepBlockBf16 => "step_block_bf16",
            Kernel::StepBlockF16 => "step_block_f16",
            Kernel::SwapAdapt => "swap_adapt",
            Kernel::Persistent2d => "persistent_2d",
            Kernel::Persistent2dWarp => "persistent_2d_warp",
        }
    }

    /// The kernels whose spill report must be zero: every step, swap and persistent
    /// kernel.
    pub fn is_hot(self) -> bool {
        matches!(
            self,
            Kernel::Step2d
                | Kernel::StepSeqF32
                | Kernel::StepSeqBf16
                | Kernel::StepSeqF16
                | Kernel::StepBlockF32
                | Kernel::StepBlockBf16
                | Kernel::StepBlockF16
                | Kernel::SwapAdapt
                | Kernel::Persistent2d
                | Kernel::Persistent2dWarp
        )
    }
}

/// The program's source: the translation units with every `#include "x.cuh"` replaced
/// by the header's text (each header once), since NVRTC has no file system here.
pub fn program_source() -> String {
    inline_units(UNITS, FILES)
}

/// The translation units `units` with every `#include "x.cuh"` replaced by the text of
/// that file of `files` (name, text), each file once, and `#pragma once` dropped: the
/// one source NVRTC compiles.
pub(crate) fn inline_units(units: &[&str], files: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut seen = Vec::new();
    for unit in units {
        inline(unit, files, &mut out, &mut seen);
    }
    out
}

fn inline<'a>(name: &'a str, files: &[(&str, &'a str)], out: &mut String, seen: &mut Vec<&'a str>) {
    if seen.contains(&name) {
        return;
    }
    seen.push(name);
    let text = files
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, t)| *t);
    out.push_str(&format!("// ---- {name}\n"));
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("#include \"") {
            inline(rest.trim_end_matches('"'), files, out, seen);
        } else if trimmed != "#pragma once" {
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// The NVRTC options for a virtual architecture such as `compute_90`.
pub fn compile_options(arch: &str, mode: MathMode) -> Vec<String> {
    let fmad = match mode {
        MathMode::Exact => "--fmad=false",
        MathMode::Fma | MathMode::Fast => "--fmad=true",
    };
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        fmad.to_string(),
        "--prec-sqrt=true".to_string(),
        "--prec-div=true".to_string(),
        "--ftz=false".to_string(),
        "--std=c++17".to_string(),
        "-default-device".to_string(),
    ];
    // Fast mode: the hardware approximations of kernels/fastmath.cuh, selected in the
    // source so that exact and FMA modes compile the same text as before.
    if mode == MathMode::Fast {
        options.push("-DNRPT_FAST_MATH=1".to_string());
    }
    options
}

pub use crate::ptx_cache::nvrtc_present;

/// The file stem of the kernels of `kernels/` for `arch` (e.g. `compute_90`) and `mode`.
pub fn kernels_stem(arch: &str, mode: MathMode) -> String {
    format!("nrpt_kernels.{arch}.{}", mode.name())
}

/// The kernels of `kernels/` for `arch` and `mode` from `dir`, checked ([`ptx_cache::load`](crate::ptx_cache::load)).
pub fn load_kernels(
    dir: &std::path::Path,
    arch: &str,
    mode: MathMode,
) -> Result<String, CudaError> {
    crate::ptx_cache::load(
        dir,
        &kernels_stem(arch, mode),
        &program_source(),
        &compile_options(arch, mode),
    )
}

type Cache = Mutex<HashMap<(String, MathMode), String>>;

/// Compiles the program to PTX for `arch` (e.g. `compute_90`) under `mode`, once per
/// process: later calls return the cached text. Where `NRPT_CUDA_PTX_DIR` names a
/// folder of precompiled PTX ([`crate::ptx_cache`]), the PTX is read from there
/// (checked against this source and these options) and NVRTC is not needed.
pub fn compile_ptx(arch: &str, mode: MathMode) -> Result<String, CudaError> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (arch.to_string(), mode);
    if let Ok(guard) = cache.lock()
        && let Some(ptx) = guard.get(&key)
    {
        return Ok(ptx.clone());
    }
    let text = match crate::ptx_cache::dir_from_env() {
        Some(dir) => load_kernels(&dir, arch, mode)?,
        None => nvrtc_ptx(arch, mode)?,
    };
    if let Ok(mut guard) = cache.lock() {
        guard.insert(key, text.clone());
    }
    Ok(text)
}

/// The program compiled by NVRTC for `arch` under `mode`, uncached and never from
/// `NRPT_CUDA_PTX_DIR`: what the precompiled PTX must equal.
pub fn nvrtc_ptx(arch: &str, mode: MathMode) -> Result<String, CudaError> {
    crate::ptx_cache::nvrtc_compile(
        "nrpt_kernels.cu",
        &program_source(),
        &compile_options(arch, mode),
    )
}

/// Dynamic shared memory of the persistent kernel for `g` ensembles of `p` chains
/// (the formula of `nrpt_persistent_shared_bytes` in kernels/common.cuh).
pub fn persistent_shared_bytes(g: u32, p: u32) -> u32 {
    g * (32 * (p - 1) + 16 * p + 8 + 32 + 12 * p + 3 * p)
}
