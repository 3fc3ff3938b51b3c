//! The kernels' per-thread math, compiled for the CPU from the same headers
//! (`kernels/*.cuh`, built by `build.rs` with `-ffp-contract=off`), so tests can
//! compare it with nrpt-core without a GPU. The GPU runs exactly these functions.
//! Test-only: this module and the C++ it calls exist with the feature `host-shims`.
//!
//! Kept whole past 600 lines: the bindings of both builds of the shims (exact and fast)
//! and their safe wrappers, one per function of the kernels' headers, side by side so
//! that a function added to the headers is bound in one place.

use nrpt_core::index::{IndexStats, PairStats};

use crate::params::{BlockShape, GpuParams, IterConsts};

/// The extern declarations of one build of the shims: `nrpt_host_*` (exact mode,
/// host_math.cpp) or `nrpt_fast_host_*` (fast mode, host_math_fast.cpp), each under the
/// exact build's Rust name.
macro_rules! shims {
    ($(#[$attr:meta])* $module:ident, $prefix:literal) => {
        $(#[$attr])*
        mod $module {
            use core::ffi::c_void;
            unsafe extern "C" {
                #[link_name = concat!($prefix, "philox")]
                pub fn nrpt_host_philox(counter: *const u32, key: *const u32, out: *mut u32);
                #[link_name = concat!($prefix, "stream_word")]
                pub fn nrpt_host_stream_word(
                    seed: u32,
                    ensemble: u32,
                    iteration: u64,
                    replica: u32,
                    stream: u32,
                    index: u64,
                ) -> u32;
                #[link_name = concat!($prefix, "uniform_f32")]
                pub fn nrpt_host_uniform_f32(w: u32) -> f32;
                #[link_name = concat!($prefix, "other_rules_count")]
                pub fn nrpt_host_other_rules_count() -> u64;
                #[link_name = concat!($prefix, "uniform_f64")]
                pub fn nrpt_host_uniform_f64(w: u32) -> f64;
                #[link_name = concat!($prefix, "box_muller_f32")]
                pub fn nrpt_host_box_muller_f32(w0: u32, w1: u32, out: *mut f32);
                #[link_name = concat!($prefix, "ln")]
                pub fn nrpt_host_ln(x: f32) -> f32;
                #[link_name = concat!($prefix, "round_nearest")]
                pub fn nrpt_host_round_nearest(x: f32) -> f32;
                #[link_name = concat!($prefix, "sin_cos_2pi")]
                pub fn nrpt_host_sin_cos_2pi(x: f32, out: *mut f32);
                #[link_name = concat!($prefix, "modes2d_energy")]
                pub fn nrpt_host_modes2d_energy(a: f32, b: f32) -> f32;
                #[link_name = concat!($prefix, "modes2d_gradient")]
                pub fn nrpt_host_modes2d_gradient(a: f32, b: f32, out: *mut f32);
                #[link_name = concat!($prefix, "sum_modes_term")]
                pub fn nrpt_host_sum_modes_term(x: f32) -> f32;
                #[link_name = concat!($prefix, "sum_modes_grad")]
                pub fn nrpt_host_sum_modes_grad(x: f32) -> f32;
                #[link_name = concat!($prefix, "f32_to_bf16")]
                pub fn nrpt_host_f32_to_bf16(x: f32) -> u16;
                #[link_name = concat!($prefix, "bf16_to_f32")]
                pub fn nrpt_host_bf16_to_f32(h: u16) -> f32;
                #[link_name = concat!($prefix, "f32_to_f16")]
                pub fn nrpt_host_f32_to_f16(x: f32) -> u16;
                #[link_name = concat!($prefix, "f16_to_f32")]
                pub fn nrpt_host_f16_to_f32(h: u16) -> f32;
                #[link_name = concat!($prefix, "persistent_shared_bytes")]
                pub fn nrpt_host_persistent_shared_bytes(g: u32, p: u32) -> u32;
                #[link_name = concat!($prefix, "chain_step")]
                pub fn nrpt_host_chain_step(
                    p: *const super::GpuParams,
                    ensemble_key: u32,
                    k: u64,
                    replica: u32,
                    eta: f64,
                    temp: f64,
                    x: *mut c_void,
                    v: *mut c_void,
                    storage: u32,
                ) -> f32;
                #[link_name = concat!($prefix, "chain_step_2d_sin")]
                pub fn nrpt_host_chain_step_2d_sin(
                    p: *const super::GpuParams,
                    ensemble_key: u32,
                    k: u64,
                    replica: u32,
                    eta: f64,
                    temp: f64,
                    x: *mut f32,
                    v: *mut f32,
                    s: *mut f32,
                ) -> f32;
                #[link_name = concat!($prefix, "sines")]
                pub fn nrpt_host_sines(x0: f32, x1: f32, out: *mut f32);
                #[link_name = concat!($prefix, "chain_step_block")]
                pub fn nrpt_host_chain_step_block(
                    p: *const super::GpuParams,
                    ensemble_key: u32,
                    k: u64,
                    replica: u32,
                    eta: f64,
                    temp: f64,
                    x: *mut c_void,
                    v: *mut c_void,
                    storage: u32,
                    threads: u32,
                    chunk: u32,
                ) -> f32;
                #[link_name = concat!($prefix, "tree_sum")]
                pub fn nrpt_host_tree_sum(x: *const f32, n: u32) -> f32;
                #[link_name = concat!($prefix, "block_tree")]
                pub fn nrpt_host_block_tree(partial: *mut f32, threads: u32, chunk: u32, d: u32) -> f32;
                #[link_name = concat!($prefix, "team_width")]
                pub fn nrpt_host_team_width(chains: u32, threads: u32) -> u32;
                #[link_name = concat!($prefix, "block_shape_ok")]
                pub fn nrpt_host_block_shape_ok(threads: u32, chunk: u32, d: u32) -> u32;
                #[link_name = concat!($prefix, "swap_and_adapt")]
                pub fn nrpt_host_swap_and_adapt(
                    p: *const super::GpuParams,
                    ensemble_key: u32,
                    k: u64,
                    ic: *const super::IterConsts,
                    energies: *mut f32,
                    ladder: *mut f64,
                    temps: *mut f64,
                    replica_at: *mut u32,
                    level_of: *mut u32,
                    trips: *mut u8,
                    gates: *mut u8,
                    flags: *mut u8,
                    pairs: *mut super::PairStats,
                    stride: u32,
                    buffer: *mut f64,
                    stats: *mut super::IndexStats,
                    summary: *mut u32,
                    reverse: u32,
                );
                #[link_name = concat!($prefix, "adapt_ladder")]
                pub fn nrpt_host_adapt_ladder(
                    ladder: *mut f64,
                    flags: *mut u8,
                    chains: u32,
                    in_place: u32,
                    up: f64,
                    down: f64,
                );
                #[link_name = concat!($prefix, "adapt_buffer")]
                pub fn nrpt_host_adapt_buffer(
                    buffer: f64,
                    mean_rate: f64,
                    target: f64,
                    gamma: f64,
                    scale: f64,
                    unprojected: u32,
                ) -> f64;
                #[link_name = concat!($prefix, "authors_pass")]
                pub fn nrpt_host_authors_pass(
                    trips: *mut u8,
                    replica_at: *mut u32,
                    flags: *mut u8,
                    chains: u32,
                ) -> u32;
                #[link_name = concat!($prefix, "zero_swapped_momenta")]
                pub fn nrpt_host_zero_swapped_momenta(
                    p: *const super::GpuParams,
                    replica_at: *mut u32,
                    flags: *mut u8,
                    momenta: *mut c_void,
                );
                #[link_name = concat!($prefix, "swapped_at_level")]
                pub fn nrpt_host_swapped_at_level(
                    flags: *const u8,
                    stride: u32,
                    level: u32,
                    chains: u32,
                ) -> u32;
                #[link_name = concat!($prefix, "layout")]
                pub fn nrpt_host_layout(out: *mut u32);
                #[link_name = concat!($prefix, "warp_exchange")]
                pub fn nrpt_host_warp_exchange(
                    p: *const super::GpuParams,
                    ensemble_key: u32,
                    k: u64,
                    ic: *const super::IterConsts,
                    energies: *mut f32,
                    ladder: *mut f64,
                    temps: *mut f64,
                    replica_at: *mut u32,
                    level_of: *mut u32,
                    trips: *mut u8,
                    gates: *mut u8,
                    flags: *mut u8,
                    pairs: *mut super::PairStats,
                    buffer: *mut f64,
                    stats: *mut super::IndexStats,
                    states: *mut f32,
                    momenta: *mut f32,
                    sines: *mut f32,
                    record: *mut u8,
                );
                #[link_name = concat!($prefix, "warp_width")]
                pub fn nrpt_host_warp_width(chains: u32) -> u32;
            }
        }
    };
}

shims!(ffi, "nrpt_host_");
shims!(
    // Fast mode's build has every shim; only those whose math differs are called.
    #[allow(dead_code)]
    ffi_fast,
    "nrpt_fast_host_"
);

/// Which build of the kernels' code the host runs: exact mode's (the GPU's bits in
/// [`MathMode::Exact`](crate::MathMode::Exact)) or fast mode's, with the hardware
/// approximations of [`MathMode::Fast`](crate::MathMode::Fast) emulated (the correctly
/// rounded value moved by a deterministic error as large as the PTX ISA documents for
/// each instruction; kernels/fastmath.cuh). [`MathMode::Fma`](crate::MathMode::Fma) has
/// no host build: the host never contracts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HostMath {
    /// host_math.cpp: the GPU's exact-mode bits.
    #[default]
    Exact,
    /// host_math_fast.cpp: fast mode's functions, the hardware instructions emulated.
    Fast,
}

impl HostMath {
    /// The host build for `mode`, or `None` for [`MathMode::Fma`](crate::MathMode::Fma).
    pub fn of(mode: crate::MathMode) -> Option<HostMath> {
        match mode {
            crate::MathMode::Exact => Some(HostMath::Exact),
            crate::MathMode::Fast => Some(HostMath::Fast),
            crate::MathMode::Fma => None,
        }
    }
}

/// Picks the shim `$name` of the build `$math`.
macro_rules! shim {
    ($math:expr, $name:ident) => {
        match $math {
            HostMath::Exact => ffi::$name,
            HostMath::Fast => ffi_fast::$name,
        }
    };
}

/// Philox4x32-10 of `counter` and `key` (kernels/philox.cuh).
pub fn philox(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut out = [0u32; 4];
    // SAFETY: the shim reads 4 + 2 words and writes 4, all from/to live arrays.
    unsafe { ffi::nrpt_host_philox(counter.as_ptr(), key.as_ptr(), out.as_mut_ptr()) };
    out
}

/// Word `index` of the keyed stream (seed, ensemble, iteration, replica, stream), the
/// iteration a full 64-bit number as in `PhiloxStream::new`.
pub fn stream_word(
    seed: u32,
    ensemble: u32,
    iteration: u64,
    replica: u32,
    stream: u32,
    index: u64,
) -> u32 {
    // SAFETY: pure function of its arguments.
    unsafe { ffi::nrpt_host_stream_word(seed, ensemble, iteration, replica, stream, index) }
}

/// `uniform_f32` of the kernels.
pub fn uniform_f32(w: u32) -> f32 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_uniform_f32(w) }
}

/// `uniform_f64` of the kernels.
pub fn uniform_f64(w: u32) -> f64 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_uniform_f64(w) }
}

/// Box–Muller in f32 of the kernels.
pub fn box_muller_f32(w0: u32, w1: u32) -> (f32, f32) {
    box_muller_f32_in(HostMath::Exact, w0, w1)
}

/// [`box_muller_f32`] in the build `math` ([`HostMath`]).
pub fn box_muller_f32_in(math: HostMath, w0: u32, w1: u32) -> (f32, f32) {
    let mut out = [0f32; 2];
    // SAFETY: writes two floats into `out`.
    unsafe { shim!(math, nrpt_host_box_muller_f32)(w0, w1, out.as_mut_ptr()) };
    (out[0], out[1])
}

/// fastmath `ln` of the kernels.
pub fn ln(x: f32) -> f32 {
    ln_in(HostMath::Exact, x)
}

/// [`ln`] in the build `math` ([`HostMath`]).
pub fn ln_in(math: HostMath, x: f32) -> f32 {
    // SAFETY: pure function.
    unsafe { shim!(math, nrpt_host_ln)(x) }
}

/// fastmath `round_nearest` of the kernels (ties to even, every `f32`).
pub fn round_nearest(x: f32) -> f32 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_round_nearest(x) }
}

/// fastmath `sin_cos_2pi` of the kernels: (sin 2πx, cos 2πx).
pub fn sin_cos_2pi(x: f32) -> (f32, f32) {
    sin_cos_2pi_in(HostMath::Exact, x)
}

/// [`sin_cos_2pi`] in the build `math` ([`HostMath`]).
pub fn sin_cos_2pi_in(math: HostMath, x: f32) -> (f32, f32) {
    let mut out = [0f32; 2];
    // SAFETY: writes two floats into `out`.
    unsafe { shim!(math, nrpt_host_sin_cos_2pi)(x, out.as_mut_ptr()) };
    (out[0], out[1])
}

/// Modes2d energy of the kernels.
pub fn modes2d_energy(a: f32, b: f32) -> f32 {
    modes2d_energy_in(HostMath::Exact, a, b)
}

/// [`modes2d_energy`] in the build `math` ([`HostMath`]).
pub fn modes2d_energy_in(math: HostMath, a: f32, b: f32) -> f32 {
    // SAFETY: pure function.
    unsafe { shim!(math, nrpt_host_modes2d_energy)(a, b) }
}

/// Modes2d gradient of the kernels.
pub fn modes2d_gradient(a: f32, b: f32) -> [f32; 2] {
    let mut out = [0f32; 2];
    // SAFETY: writes two floats into `out`.
    unsafe { ffi::nrpt_host_modes2d_gradient(a, b, out.as_mut_ptr()) };
    out
}

/// One SumModes energy term `0.2 x² − 2 cos 2πx` of the kernels.
pub fn sum_modes_term(x: f32) -> f32 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_sum_modes_term(x) }
}

/// One SumModes gradient coordinate of the kernels.
pub fn sum_modes_grad(x: f32) -> f32 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_sum_modes_grad(x) }
}

/// f32 → bf16 bits (round to nearest even) of the kernels' storage.
pub fn f32_to_bf16(x: f32) -> u16 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_f32_to_bf16(x) }
}

/// bf16 bits → f32 of the kernels' storage.
pub fn bf16_to_f32(h: u16) -> f32 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_bf16_to_f32(h) }
}

/// f32 → f16 bits (round to nearest even) of the kernels' storage.
pub fn f32_to_f16(x: f32) -> u16 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_f32_to_f16(x) }
}

/// f16 bits → f32 of the kernels' storage.
pub fn f16_to_f32(h: u16) -> f32 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_f16_to_f32(h) }
}

/// Dynamic shared memory of the persistent kernel, as the kernel header computes it.
pub fn persistent_shared_bytes(ensembles_per_block: u32, chains: u32) -> u32 {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_persistent_shared_bytes(ensembles_per_block, chains) }
}

/// sizeof/offsetof of the shared C blocks: [KernelParams, GpuParams, offset of
/// `ensembles`, offset of `core.seed`, Arrays, IterConsts, PairStats, IndexStats,
/// offset of `coord_bytes`, offset of `core.adapt_flags`].
pub fn layout() -> [u32; 10] {
    let mut out = [0u32; 10];
    // SAFETY: writes ten words into `out`.
    unsafe { ffi::nrpt_host_layout(out.as_mut_ptr()) };
    out
}

/// Where one replica's step reads its random words and its level's coefficients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepInput {
    /// Philox key word of the ensemble (`options.ensemble`).
    pub ensemble_key: u32,
    /// Iteration k.
    pub iteration: u64,
    /// Replica r.
    pub replica: u32,
    /// Learning rate of the replica's level.
    pub eta: f64,
    /// Temperature of the replica's level.
    pub temperature: f64,
}

/// One replica's iteration by the per-thread kernels' code (step_2d for D = 2 with f32
/// states, step_seq otherwise) on f32 states: steps `x` (and `v` for momentum) in place
/// and returns the stochastic energy.
///
/// Panics if `x` (or a non-empty `v`) is shorter than `params.core.dim`.
pub fn chain_step(params: &GpuParams, input: &StepInput, x: &mut [f32], v: &mut [f32]) -> f32 {
    chain_step_in(HostMath::Exact, params, input, x, v)
}

/// [`chain_step`] in the build `math` ([`HostMath`]).
pub fn chain_step_in(
    math: HostMath,
    params: &GpuParams,
    input: &StepInput,
    x: &mut [f32],
    v: &mut [f32],
) -> f32 {
    let d = params.core.dim as usize;
    assert!(x.len() >= d && (v.is_empty() || v.len() >= d));
    let vp = if v.is_empty() {
        core::ptr::null_mut()
    } else {
        v.as_mut_ptr().cast()
    };
    // SAFETY: x (and v when momentum is used) hold at least D floats, checked above;
    // the explorer flag decides whether v is touched and callers pass v for momentum.
    unsafe {
        shim!(math, nrpt_host_chain_step)(
            params,
            input.ensemble_key,
            input.iteration,
            input.replica,
            input.eta,
            input.temperature,
            x.as_mut_ptr().cast(),
            vp,
            0,
        )
    }
}

/// As [`chain_step`] for half-precision states (`bf16 = true` for bfloat16, else f16),
/// stored as their bits.
pub fn chain_step_half(params: &GpuParams, input: &StepInput, bf16: bool, x: &mut [u16]) -> f32 {
    assert!(x.len() >= params.core.dim as usize && params.core.explorer == 0);
    // SAFETY: x holds at least D half words; no momentum (checked), so v is not read.
    unsafe {
        ffi::nrpt_host_chain_step(
            params,
            input.ensemble_key,
            input.iteration,
            input.replica,
            input.eta,
            input.temperature,
            x.as_mut_ptr().cast(),
            core::ptr::null_mut(),
            if bf16 { 1 } else { 2 },
        )
    }
}

/// One replica's iteration by the cooperative kernel's code (step_block_f32) in the
/// block shape `shape`: every thread's aligned chunk of coordinates stepped and summed
/// as a tree, the chunks' sums added by the kernel's warp and block shuffle trees, the
/// energy noise on thread 0.
///
/// Panics if `x` (or a non-empty `v`) is shorter than `params.core.dim` or the shape
/// is not one the kernel takes ([`BlockShape::valid_for`]).
pub fn chain_step_block(
    params: &GpuParams,
    input: &StepInput,
    shape: BlockShape,
    x: &mut [f32],
    v: &mut [f32],
) -> f32 {
    chain_step_block_in(HostMath::Exact, params, input, shape, x, v)
}

/// [`chain_step_block`] in the build `math` ([`HostMath`]).
pub fn chain_step_block_in(
    math: HostMath,
    params: &GpuParams,
    input: &StepInput,
    shape: BlockShape,
    x: &mut [f32],
    v: &mut [f32],
) -> f32 {
    let d = params.core.dim as usize;
    assert!(x.len() >= d && (v.is_empty() || v.len() >= d));
    let vp = if v.is_empty() {
        core::ptr::null_mut()
    } else {
        v.as_mut_ptr().cast()
    };
    assert!(shape.valid_for(d), "block shape {shape:?} for D = {d}");
    assert!(block_shape_ok(shape, params.core.dim), "{shape:?}");
    // SAFETY: as in chain_step; the shape is one the shim takes (checked above), and
    // it touches only coordinates below D.
    unsafe {
        shim!(math, nrpt_host_chain_step_block)(
            params,
            input.ensemble_key,
            input.iteration,
            input.replica,
            input.eta,
            input.temperature,
            x.as_mut_ptr().cast(),
            vp,
            0,
            shape.threads,
            shape.chunk,
        )
    }
}

/// As [`chain_step_block`] for half-precision states (`bf16 = true` for bfloat16,
/// else f16) stored as their bits, without momentum.
pub fn chain_step_block_half(
    params: &GpuParams,
    input: &StepInput,
    shape: BlockShape,
    bf16: bool,
    x: &mut [u16],
) -> f32 {
    assert!(x.len() >= params.core.dim as usize && params.core.explorer == 0);
    // SAFETY: x holds at least D half words; no momentum (checked), so v is not read;
    // the shim returns NaN for a shape it does not take, touching nothing.
    unsafe {
        ffi::nrpt_host_chain_step_block(
            params,
            input.ensemble_key,
            input.iteration,
            input.replica,
            input.eta,
            input.temperature,
            x.as_mut_ptr().cast(),
            core::ptr::null_mut(),
            if bf16 { 1 } else { 2 },
            shape.threads,
            shape.chunk,
        )
    }
}

/// One 2D replica's iteration as the persistent kernel runs it, with the sines of its
/// coordinates kept from the last energy: `s` holds sin 2πx of the current state `x`
/// ([`sines`] after a load) and receives those of the new state.
pub fn chain_step_2d_sin(
    params: &GpuParams,
    input: &StepInput,
    x: &mut [f32; 2],
    v: &mut [f32; 2],
    s: &mut [f32; 2],
) -> f32 {
    chain_step_2d_sin_in(HostMath::Exact, params, input, x, v, s)
}

/// [`chain_step_2d_sin`] in the build `math` ([`HostMath`]).
pub fn chain_step_2d_sin_in(
    math: HostMath,
    params: &GpuParams,
    input: &StepInput,
    x: &mut [f32; 2],
    v: &mut [f32; 2],
    s: &mut [f32; 2],
) -> f32 {
    // SAFETY: two floats each in x, v and s.
    unsafe {
        shim!(math, nrpt_host_chain_step_2d_sin)(
            params,
            input.ensemble_key,
            input.iteration,
            input.replica,
            input.eta,
            input.temperature,
            x.as_mut_ptr(),
            v.as_mut_ptr(),
            s.as_mut_ptr(),
        )
    }
}

/// The sines (sin 2πx₀, sin 2πx₁) the persistent kernel computes after loading a state.
pub fn sines(x: [f32; 2]) -> [f32; 2] {
    sines_in(HostMath::Exact, x)
}

/// How many times the calling thread has entered, in the build `math`, code the kernels
/// fence with `NRPT_OTHER_RULES()` (kernels/common.cuh): code of the rules the paper's
/// 2D configuration does not run, which the SASS counter's configuration bound leaves
/// out. The count only grows; take a difference around a run.
pub fn other_rules_count(math: HostMath) -> u64 {
    // SAFETY: reads a thread-local counter.
    unsafe { shim!(math, nrpt_host_other_rules_count)() }
}

/// [`sines`] in the build `math` ([`HostMath`]).
pub fn sines_in(math: HostMath, x: [f32; 2]) -> [f32; 2] {
    let mut out = [0f32; 2];
    // SAFETY: writes two floats into `out`.
    unsafe { shim!(math, nrpt_host_sines)(x[0], x[1], out.as_mut_ptr()) };
    out
}

/// The kernels' tree accumulator (`NrptTree`) over `x`, one leaf per push.
pub fn tree_sum(x: &[f32]) -> f32 {
    let n = u32::try_from(x.len()).expect("fewer than 2^32 values");
    assert!(n < 1 << 31);
    // SAFETY: reads n floats.
    unsafe { ffi::nrpt_host_tree_sum(x.as_ptr(), n) }
}

/// The block step's reduction of the chunk sums `partial` (one per thread) of a state
/// of `dim` coordinates in chunks of `chunk`, one pass (`nrpt_block_tree`); overwrites
/// `partial`.
pub fn block_tree(partial: &mut [f32], chunk: u32, dim: u32) -> f32 {
    let threads = u32::try_from(partial.len()).expect("fewer than 2^32 threads");
    assert!(threads > 0 && threads % 32 == 0 && threads <= 1024);
    // SAFETY: reads and writes `threads` floats.
    unsafe { ffi::nrpt_host_block_tree(partial.as_mut_ptr(), threads, chunk, dim) }
}

/// The kernels' own check of a block shape for D coordinates (`nrpt_block_shape_ok`).
pub fn block_shape_ok(shape: BlockShape, dim: u32) -> bool {
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_block_shape_ok(shape.threads, shape.chunk, dim) != 0 }
}

/// Lanes per ensemble of the swap phase (`nrpt_team_width`) for P chains in a block of
/// `threads` threads.
pub fn team_width(chains: u32, threads: u32) -> u32 {
    assert!(chains >= 2 && threads >= 1);
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_team_width(chains, threads) }
}

/// One ensemble's arrays for [`swap_and_adapt`], all by level/replica/pair with stride 1
/// (`stride` > 1 interleaves several ensembles as the persistent kernel does).
#[derive(Debug)]
pub struct EnsembleArrays<'a> {
    /// Energies by level.
    pub energies: &'a mut [f32],
    /// Ladder by level.
    pub ladder: &'a mut [f64],
    /// Temperatures by level.
    pub temps: &'a mut [f64],
    /// Replica at each level.
    pub replica_at: &'a mut [u32],
    /// Level of each replica.
    pub level_of: &'a mut [u32],
    /// Trip states.
    pub trips: &'a mut [u8],
    /// Gates (1 open).
    pub gates: &'a mut [u8],
    /// Flags of the last sweep.
    pub flags: &'a mut [u8],
    /// Pair counts.
    pub pairs: &'a mut [PairStats],
    /// Elements between consecutive levels.
    pub stride: u32,
    /// Buffer C.
    pub buffer: &'a mut f64,
    /// Index statistics.
    pub stats: &'a mut IndexStats,
}

/// Steps 3–6 of iteration `k` of one ensemble by the kernels' code; returns
/// (indicators, swaps, non-finite pairs).
///
/// Panics if an array is too short for P = `params.core.chains` at `a.stride`.
pub fn swap_and_adapt(
    params: &GpuParams,
    ensemble_key: u32,
    k: u64,
    ic: &IterConsts,
    a: EnsembleArrays<'_>,
) -> [u32; 3] {
    swap_and_adapt_ordered(params, ensemble_key, k, ic, a, false)
}

/// [`swap_and_adapt`] with the items of every step of the kernels' team phase (the
/// pairs, levels and checks that lanes share on the GPU) run backwards when `reverse`:
/// the same results in both orders show that no item of a step depends on another.
pub fn swap_and_adapt_ordered(
    params: &GpuParams,
    ensemble_key: u32,
    k: u64,
    ic: &IterConsts,
    a: EnsembleArrays<'_>,
    reverse: bool,
) -> [u32; 3] {
    swap_and_adapt_ordered_in(HostMath::Exact, params, ensemble_key, k, ic, a, reverse)
}

/// [`swap_and_adapt_ordered`] in the build `math` ([`HostMath`]).
pub fn swap_and_adapt_ordered_in(
    math: HostMath,
    params: &GpuParams,
    ensemble_key: u32,
    k: u64,
    ic: &IterConsts,
    a: EnsembleArrays<'_>,
    reverse: bool,
) -> [u32; 3] {
    let p = params.core.chains as usize;
    let s = a.stride.max(1) as usize;
    let need = |n: usize| (n - 1) * s + 1;
    assert!(p >= 2);
    assert!(a.energies.len() >= need(p) && a.ladder.len() >= need(p) && a.temps.len() >= need(p));
    assert!(a.replica_at.len() >= need(p) && a.level_of.len() >= need(p));
    assert!(a.trips.len() >= need(p));
    assert!(a.gates.len() >= need(p - 1) && a.flags.len() >= need(p - 1));
    assert!(a.pairs.len() >= need(p - 1));
    let mut summary = [0u32; 3];
    // SAFETY: every array is long enough for P levels / P − 1 pairs at this stride
    // (checked above); PairStats and IndexStats are #[repr(C)] mirrors of the C structs.
    unsafe {
        shim!(math, nrpt_host_swap_and_adapt)(
            params,
            ensemble_key,
            k,
            ic,
            a.energies.as_mut_ptr(),
            a.ladder.as_mut_ptr(),
            a.temps.as_mut_ptr(),
            a.replica_at.as_mut_ptr(),
            a.level_of.as_mut_ptr(),
            a.trips.as_mut_ptr(),
            a.gates.as_mut_ptr(),
            a.flags.as_mut_ptr(),
            a.pairs.as_mut_ptr(),
            s as u32,
            a.buffer,
            a.stats,
            summary.as_mut_ptr(),
            u32::from(reverse),
        )
    };
    summary
}

/// The kernels' ladder update alone (`nrpt_adapt_ladder`, the Jacobi or the in-place
/// rule) on one ensemble's ladder, given each pair's flags (the INDICATOR bit picks
/// `up`, else `down`: the factors of `adapt::growth_factors`).
///
/// Panics unless `flags` has one entry per pair (`ladder.len() − 1`).
pub fn adapt_ladder(ladder: &mut [f64], flags: &mut [u8], in_place: bool, up: f64, down: f64) {
    assert!(ladder.len() >= 2 && flags.len() + 1 == ladder.len());
    let chains = u32::try_from(ladder.len()).expect("fewer than 2^32 levels");
    // SAFETY: P doubles and P − 1 flag bytes, checked above; only these are touched.
    unsafe {
        ffi::nrpt_host_adapt_ladder(
            ladder.as_mut_ptr(),
            flags.as_mut_ptr(),
            chains,
            u32::from(in_place),
            up,
            down,
        )
    }
}

/// The kernels' buffer update (`nrpt_adapt_buffer`); `unprojected` drops the max(0, ·).
pub fn adapt_buffer(
    buffer: f64,
    mean_rate: f64,
    target: f64,
    gamma: f64,
    scale: f64,
    unprojected: bool,
) -> f64 {
    // SAFETY: pure function.
    unsafe {
        ffi::nrpt_host_adapt_buffer(
            buffer,
            mean_rate,
            target,
            gamma,
            scale,
            u32::from(unprojected),
        )
    }
}

/// The kernels' authors' counting of one iteration (`nrpt_authors_pass`): trip states
/// by replica, the permutation after the sweep, each pair's flags; returns the trips
/// counted.
///
/// Panics unless the lengths are P, P and P − 1 with P ≥ 2 and `replica_at` holds
/// replica indices below P.
pub fn authors_pass(trips: &mut [u8], replica_at: &mut [u32], flags: &mut [u8]) -> u32 {
    let p = replica_at.len();
    assert!(p >= 2 && trips.len() == p && flags.len() + 1 == p);
    assert!(replica_at.iter().all(|&r| (r as usize) < p));
    let chains = u32::try_from(p).expect("fewer than 2^32 levels");
    // SAFETY: lengths checked above; trips is indexed by replica_at's entries, all < P.
    unsafe {
        ffi::nrpt_host_authors_pass(
            trips.as_mut_ptr(),
            replica_at.as_mut_ptr(),
            flags.as_mut_ptr(),
            chains,
        )
    }
}

/// The swap kernel's momentum reset (`nrpt_zero_swapped_momenta`) on one ensemble's
/// f32 momenta (P·D values, replica-major), after its swap phase.
///
/// Panics unless `params.coord_bytes` is 4, the lengths are P, P − 1 and P·D for
/// P = `params.core.chains`, D = `params.core.dim`, and `replica_at` holds replica
/// indices below P.
pub fn zero_swapped_momenta(
    params: &GpuParams,
    replica_at: &mut [u32],
    flags: &mut [u8],
    momenta: &mut [f32],
) {
    zero_swapped(params, replica_at, flags, momenta);
}

/// As [`zero_swapped_momenta`] for half-precision momenta (bf16 or f16 bits).
///
/// Panics unless `params.coord_bytes` is 2 (and as [`zero_swapped_momenta`]).
pub fn zero_swapped_momenta_half(
    params: &GpuParams,
    replica_at: &mut [u32],
    flags: &mut [u8],
    momenta: &mut [u16],
) {
    zero_swapped(params, replica_at, flags, momenta);
}

/// The kernels' reset for momenta of `size_of::<T>()` bytes per coordinate, which must
/// be `params.coord_bytes`.
fn zero_swapped<T>(
    params: &GpuParams,
    replica_at: &mut [u32],
    flags: &mut [u8],
    momenta: &mut [T],
) {
    assert_eq!(params.coord_bytes as usize, core::mem::size_of::<T>());
    check_reset_args(params, replica_at, flags, momenta.len());
    // SAFETY: P·D momenta of coord_bytes bytes each, P replicas below P, P − 1 flags,
    // checked above.
    unsafe {
        ffi::nrpt_host_zero_swapped_momenta(
            params,
            replica_at.as_mut_ptr(),
            flags.as_mut_ptr(),
            momenta.as_mut_ptr().cast(),
        )
    }
}

fn check_reset_args(params: &GpuParams, replica_at: &[u32], flags: &[u8], momenta: usize) {
    let (p, d) = (params.core.chains as usize, params.core.dim as usize);
    assert!(p >= 2 && replica_at.len() == p && flags.len() + 1 == p && momenta == p * d);
    assert!(replica_at.iter().all(|&r| (r as usize) < p));
}

/// The persistent kernel's test for resetting one replica's velocity registers
/// (`nrpt_swapped_at_level`): did the replica now at `level` take part in a swap of
/// the last sweep? `flags` is strided by `stride` as in the kernel's shared memory.
///
/// Panics unless `flags` holds P − 1 pairs at this stride and `level` < P.
pub fn swapped_at_level(flags: &[u8], stride: u32, level: u32, chains: u32) -> bool {
    let s = stride.max(1) as usize;
    assert!(chains >= 2 && level < chains && flags.len() > (chains as usize - 2) * s);
    // SAFETY: reads flags of pairs level − 1 and level (< P − 1) at this stride only.
    unsafe { ffi::nrpt_host_swapped_at_level(flags.as_ptr(), s as u32, level, chains) != 0 }
}

/// Lanes per ensemble of `persistent_2d_warp` (`nrpt_warp_width`: the power of two
/// ≥ P).
pub fn warp_width(chains: u32) -> u32 {
    assert!((2..=32).contains(&chains));
    // SAFETY: pure function.
    unsafe { ffi::nrpt_host_warp_width(chains) }
}

/// The replicas of one 2D ensemble as `persistent_2d_warp` holds them in registers,
/// by replica: states (x₀, x₁), velocities (empty without momentum) and the sines of
/// the states.
#[derive(Debug)]
pub struct WarpReplicas<'a> {
    /// 2P coordinates.
    pub states: &'a mut [f32],
    /// 2P coordinates, or empty.
    pub momenta: &'a mut [f32],
    /// sin 2πx of each coordinate, 2P.
    pub sines: &'a mut [f32],
}

/// The swap phase of `persistent_2d_warp` (`nrpt_warp_exchange`, warp_swap.cuh) for
/// iteration `k` of one ensemble of P ≤ 32 chains (arrays at stride 1), with the
/// kernel's own code: each lane of the segment loaded with its level and the replica
/// at it, the phase run lane by lane with its shuffles emulated, the lanes stored
/// back. The momentum reset of swapped replicas is part of it. `record`, when given,
/// receives the P − 1 flags of the sweep.
///
/// Panics unless P is 2..=32, the arrays have stride 1 and the lengths of P levels /
/// P − 1 pairs, and `r` holds 2P states, sines and momenta (or no momenta).
pub fn warp_exchange(
    params: &GpuParams,
    ensemble_key: u32,
    k: u64,
    ic: &IterConsts,
    a: EnsembleArrays<'_>,
    r: WarpReplicas<'_>,
    record: Option<&mut [u8]>,
) {
    warp_exchange_in(HostMath::Exact, params, ensemble_key, k, ic, a, r, record);
}

/// [`warp_exchange`] in the build `math` ([`HostMath`]).
#[allow(clippy::too_many_arguments)]
pub fn warp_exchange_in(
    math: HostMath,
    params: &GpuParams,
    ensemble_key: u32,
    k: u64,
    ic: &IterConsts,
    a: EnsembleArrays<'_>,
    r: WarpReplicas<'_>,
    record: Option<&mut [u8]>,
) {
    let p = params.core.chains as usize;
    assert!((2..=32).contains(&p) && params.core.dim == 2 && a.stride <= 1);
    assert!(a.energies.len() == p && a.ladder.len() == p && a.temps.len() == p);
    assert!(a.replica_at.len() == p && a.level_of.len() == p && a.trips.len() == p);
    assert!(a.gates.len() == p - 1 && a.flags.len() == p - 1 && a.pairs.len() == p - 1);
    assert!(a.replica_at.iter().all(|&x| (x as usize) < p));
    assert!(r.states.len() == 2 * p && r.sines.len() == 2 * p);
    assert!(r.momenta.is_empty() || r.momenta.len() == 2 * p);
    let record = match record {
        Some(out) => {
            assert!(out.len() == p - 1);
            out.as_mut_ptr()
        }
        None => core::ptr::null_mut(),
    };
    let momenta = if r.momenta.is_empty() {
        core::ptr::null_mut()
    } else {
        r.momenta.as_mut_ptr()
    };
    // SAFETY: every array holds P levels / P − 1 pairs / 2P coordinates (checked
    // above) and the permutation's entries are < P, so the shim's indices stay in
    // bounds; PairStats and IndexStats are #[repr(C)] mirrors of the C structs.
    unsafe {
        shim!(math, nrpt_host_warp_exchange)(
            params,
            ensemble_key,
            k,
            ic,
            a.energies.as_mut_ptr(),
            a.ladder.as_mut_ptr(),
            a.temps.as_mut_ptr(),
            a.replica_at.as_mut_ptr(),
            a.level_of.as_mut_ptr(),
            a.trips.as_mut_ptr(),
            a.gates.as_mut_ptr(),
            a.flags.as_mut_ptr(),
            a.pairs.as_mut_ptr(),
            a.buffer,
            a.stats,
            r.states.as_mut_ptr(),
            momenta,
            r.sines.as_mut_ptr(),
            record,
        )
    }
}
