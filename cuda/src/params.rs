//! The `#[repr(C)]` blocks the kernels read, mirrored field for field in
//! `kernels/common.cuh`, and the host-side choices that shape a run on the GPU.

use bytemuck::{Pod, Zeroable};
use nrpt_core::adapt::growth_factors;
use nrpt_core::params::KernelParams;

/// A target's energy and gradient in CUDA C (see [`crate::source`] for what it
/// defines and how the kernels use it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetSource {
    /// The target's name, for errors and reports.
    pub name: String,
    /// The CUDA C text.
    pub code: String,
}

impl TargetSource {
    /// A source named `name`.
    pub fn new(name: impl Into<String>, code: impl Into<String>) -> Self {
        TargetSource {
            name: name.into(),
            code: code.into(),
        }
    }
}

/// Which potential the kernels evaluate: one the kernels know (the targets of
/// `nrpt_core::target`) or a target's own CUDA source ([`crate::source`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuTarget {
    /// The paper's 25-mode 2D target ([`nrpt_core::target::Modes2d`]), D = 2.
    Modes2d,
    /// [`nrpt_core::target::SumModes`] in `dim` dimensions.
    SumModes {
        /// Dimension D (≥ 1).
        dim: usize,
    },
    /// A target's own energy and gradient in CUDA C, stepped by the generic step
    /// (`kernels/source_step.cuh`), in `dim` dimensions (1 to [`crate::source::MAX_DIM`]).
    Source {
        /// Dimension D.
        dim: usize,
        /// The code.
        source: std::sync::Arc<TargetSource>,
    },
}

impl GpuTarget {
    /// Dimension D of a state.
    pub fn dim(&self) -> usize {
        match self {
            GpuTarget::Modes2d => 2,
            GpuTarget::SumModes { dim } | GpuTarget::Source { dim, .. } => *dim,
        }
    }

    /// Code of `NrptGpuParams::target`.
    pub(crate) fn code(&self) -> u32 {
        match self {
            GpuTarget::Modes2d => 0,
            GpuTarget::SumModes { .. } => 1,
            GpuTarget::Source { .. } => 2,
        }
    }
}

/// The noise of the stochastic oracle ([`nrpt_core::target::Noisy`]): `∇Ũ = ∇U + σ_g ξ`,
/// `Ũ = U + σ_e ζ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noise {
    /// σ_g.
    pub gradient: f64,
    /// σ_e.
    pub energy: f64,
}

impl Noise {
    /// The paper's oracle: σ_g = σ_e = 2 (`Noisy::paper`).
    pub const PAPER: Noise = Noise {
        gradient: 2.0,
        energy: 2.0,
    };
    /// Exact gradients and energies (`Noisy::exact`).
    pub const EXACT: Noise = Noise {
        gradient: 0.0,
        energy: 0.0,
    };
}

/// How states are stored in device memory (arithmetic is always f32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f32: bit-identical to nrpt-core's f32 engine.
    F32,
    /// bfloat16 storage (8-bit mantissa), for memory-bound steps at large D.
    Bf16,
    /// IEEE half storage (11-bit mantissa, range ±65504).
    F16,
}

impl Precision {
    /// Bytes per stored coordinate.
    pub fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::Bf16 | Precision::F16 => 2,
        }
    }
}

/// Floating-point contract the kernels are compiled under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MathMode {
    /// No FMA contraction, IEEE division and square root: the same bits as nrpt-core.
    #[default]
    Exact,
    /// FMA contraction allowed (`--fmad=true`): faster; results differ from the CPU by
    /// a few ulp, so swap decisions may part after a while.
    Fma,
    /// FMA contraction and the hardware approximations (`-DNRPT_FAST_MATH=1`): `ln` by
    /// `lg2.approx`, sin/cos 2πx by `sin.approx`/`cos.approx` on the argument reduced to
    /// [−π, π], Box–Muller's square root by `rsqrt.approx` (kernels/fastmath.cuh). No bit
    /// parity with the CPU; the statistics agree with [`MathMode::Exact`]'s (round trips
    /// and TV distance within the spread across seeds, checked on the host emulation of
    /// these instructions).
    Fast,
}

impl MathMode {
    /// Every mode, exact first (tools go through them all: the bundle's PTX, the NVRTC
    /// tests, the SASS counter of `tests/sass_count.rs`). A new mode must be listed
    /// here: the match below stops compiling until it is.
    pub const ALL: [MathMode; 3] = [MathMode::Exact, MathMode::Fma, MathMode::Fast];

    /// The name on the command line, in configuration files, results and file stems:
    /// `exact`, `fma` or `fast`.
    pub fn name(self) -> &'static str {
        match self {
            MathMode::Exact => "exact",
            MathMode::Fma => "fma",
            MathMode::Fast => "fast",
        }
    }

    /// The mode named `name` ([`MathMode::name`]), or `None`.
    pub fn from_name(name: &str) -> Option<MathMode> {
        MathMode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// Compile-time check that [`MathMode::ALL`] names every variant.
const _: () = {
    const fn listed(m: MathMode) {
        match m {
            MathMode::Exact | MathMode::Fma | MathMode::Fast => {}
        }
    }
    let _ = listed;
};

impl std::fmt::Display for MathMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which kernels carry an iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExecutionPath {
    /// The persistent kernel where it applies (D = 2, f32 storage, an ensemble fits a
    /// block), else the step and swap kernels.
    #[default]
    Auto,
    /// One step launch and one swap-and-adapt launch per iteration.
    StepSwap,
    /// The persistent 2D kernel (an error where it does not apply).
    Persistent,
}

/// The shape of the block step (`step_block_*`, kernels/step.cu) for one chain of D
/// coordinates: `threads` threads (a multiple of 32), thread t of pass i stepping the
/// aligned chunk of `chunk` coordinates (a power of two, 4 to 64) from
/// (i · threads + t) · chunk; one pass when threads · chunk ≥ D, else passes of
/// threads · chunk coordinates (then a power of two). Aligned power-of-two chunks and
/// passes are subtrees of nrpt-core's summation tree (`nrpt_core::reduce`), so every
/// valid shape gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockShape {
    /// Threads per chain (the block size).
    pub threads: u32,
    /// Coordinates per thread and pass.
    pub chunk: u32,
}

impl BlockShape {
    /// Most threads per chain (the kernels' launch bound).
    pub const MAX_THREADS: u32 = 256;
    /// Largest chunk (the depth of a thread's tree in the kernel: NRPT_MAX_CHUNK).
    pub const MAX_CHUNK: u32 = 64;
    /// Most passes (the kernel's NRPT_MAX_PASSES).
    pub const MAX_PASSES: u32 = 64;
    /// Largest D: 64 passes of 256 threads × 64 coordinates (2^20, the command's limit).
    pub const MAX_DIM: usize = (Self::MAX_THREADS * Self::MAX_CHUNK * Self::MAX_PASSES) as usize;

    /// The shape fitted to D: chunks of four coordinates (one vector access each) while
    /// 256 threads suffice, doubled as D grows, up to 64; the fewest warps that cover
    /// the chunks; beyond 256 · 64 coordinates, passes of 256 threads × 64. D = 1024:
    /// 256 threads of 4; D = 300: 96 threads of 4 (75 chunks); D = 100: 32 threads.
    /// `None` for D = 0 or beyond [`Self::MAX_DIM`].
    pub fn for_dim(dim: usize) -> Option<BlockShape> {
        if dim == 0 || dim > Self::MAX_DIM {
            return None;
        }
        let chunk = dim
            .div_ceil(Self::MAX_THREADS as usize)
            .next_power_of_two()
            .clamp(4, Self::MAX_CHUNK as usize);
        let threads = dim
            .div_ceil(chunk)
            .next_multiple_of(32)
            .min(Self::MAX_THREADS as usize);
        Some(BlockShape {
            threads: threads as u32,
            chunk: chunk as u32,
        })
    }

    /// Passes over a state of `dim` coordinates.
    pub fn passes(self, dim: usize) -> usize {
        dim.div_ceil(self.threads as usize * self.chunk as usize)
    }

    /// `true` when the kernel takes this shape for D (kernels/chain.cuh
    /// nrpt_block_shape_ok).
    pub fn valid_for(self, dim: usize) -> bool {
        let span = self.threads as usize * self.chunk as usize;
        self.threads.is_multiple_of(32)
            && (32..=1024).contains(&self.threads)
            && self.chunk.is_power_of_two()
            && (4..=Self::MAX_CHUNK).contains(&self.chunk)
            && (self.passes(dim) <= 1
                || (span.is_power_of_two() && self.passes(dim) <= Self::MAX_PASSES as usize))
    }
}

/// Mirror of `NrptGpuParams` (144 bytes): core's [`KernelParams`] plus what the
/// kernels need beyond it. `core.ensemble` is the Philox key word of the first
/// ensemble of the launch; ensemble e uses `core.ensemble + e`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuParams {
    /// The run's parameters as nrpt-core defines them.
    pub core: KernelParams,
    /// σ_g.
    pub gradient_noise: f64,
    /// σ_e.
    pub energy_noise: f64,
    /// Lower bound of uniform initial states.
    pub init_low: f64,
    /// Upper bound of uniform initial states.
    pub init_high: f64,
    /// Number of ensembles E.
    pub ensembles: u32,
    /// 0 Modes2d, 1 SumModes, 2 a source target.
    pub target: u32,
    /// 1: draw uniform initial states; 0: keep.
    pub init_uniform: u32,
    /// Bytes of one stored coordinate of states and momenta ([`Precision::bytes`]):
    /// the swap kernel zeroes the momenta of swapped replicas without knowing their
    /// type.
    pub coord_bytes: u32,
}

/// Device addresses of every array of a run (mirror of `NrptArrays`); see
/// `kernels/common.cuh` for the layout.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Arrays {
    /// States, `[c·D + j]`.
    pub states: u64,
    /// Momenta (0 for Langevin explorers).
    pub momenta: u64,
    /// Energies by level.
    pub energies: u64,
    /// Ladder by level.
    pub ladder: u64,
    /// Temperatures by level.
    pub temps: u64,
    /// Replica at each level.
    pub replica_at: u64,
    /// Level of each replica.
    pub level_of: u64,
    /// Trip state of each replica.
    pub trips: u64,
    /// Gate of each pair.
    pub gates: u64,
    /// Flags of each pair.
    pub flags: u64,
    /// Counts of each pair.
    pub pairs: u64,
    /// Buffer C of each ensemble.
    pub buffers: u64,
    /// Index statistics of each ensemble.
    pub stats: u64,
}

/// Mirror of `NrptIterConsts`: the adaptation constants of one iteration, computed on
/// the host by nrpt-core's own functions, so the device never evaluates `pow`/`exp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct IterConsts {
    /// γ_k = a / (k^α + b).
    pub gamma: f64,
    /// exp((1 − S) γ_k).
    pub up: f64,
    /// exp(−S γ_k).
    pub down: f64,
}

impl IterConsts {
    /// The constants of iteration `k`, exactly as the driver computes them:
    /// `schedule.gamma(k)` and `adapt::growth_factors(S, γ_k)` (inside
    /// `adapt::adapt_ladder_indicators`).
    pub fn at(options: &nrpt_core::TemperingOptions, k: u64) -> Self {
        let gamma = options.adapt.schedule.gamma(k);
        let (up, down) = growth_factors(options.adapt.target_swap_rate, gamma);
        IterConsts { gamma, up, down }
    }
}

// SAFETY: plain #[repr(C)] structs of integers and floats, no padding (checked by the
// size assertions below and by bytemuck's Pod derive), mirrored by kernels/common.cuh.
unsafe impl cudarc::driver::DeviceRepr for GpuParams {}
// SAFETY: as above.
unsafe impl cudarc::driver::DeviceRepr for Arrays {}
// SAFETY: as above.
unsafe impl cudarc::driver::DeviceRepr for IterConsts {}

const _: () = assert!(core::mem::size_of::<KernelParams>() == 96);
const _: () = assert!(core::mem::size_of::<GpuParams>() == 144);
const _: () = assert!(core::mem::size_of::<Arrays>() == 104);
const _: () = assert!(core::mem::size_of::<IterConsts>() == 24);
