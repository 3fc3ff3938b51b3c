//! # nrpt-cuda: the CUDA backend of nrpt
//!
//! Hand-written kernels (`kernels/` at the repository root) run thousands to millions
//! of tempering chains: E independent ensembles of P chains, each iteration a fused
//! step (exploration + stochastic energy) and a swap-and-adapt phase, all on the
//! device. For the 2D toy a persistent kernel keeps every ensemble in registers and
//! shared memory for thousands of iterations per launch.
//!
//! The kernels reproduce nrpt-core's `f32` engine bit for bit: the same Philox streams,
//! the same uniform/normal formulas, the same targets and the same swap, adaptation and
//! trip logic, compiled without FMA contraction. `host_math` compiles the same
//! headers for the CPU so the tests check that claim without a GPU.
//!
//! ## Feature `host-shims` (tests only)
//!
//! `host_math` and `mlp::host` (the kernels' code compiled for the host by a C++
//! compiler, `csrc/*.cpp`, and called through FFI) exist only with the feature
//! `host-shims`, which the test crates enable; without it the build script compiles no
//! C++. Nothing else in this crate depends on it: the host-side bf16/f16 encoding of
//! states uploaded to the device is the `half` crate's, which the feature's tests check
//! bit for bit against the kernels' own conversion (the edge classes and a sample in
//! every run, every `f32` on demand).
//!
//! Without a driver every entry point answers with [`CudaError::NoDriver`]:
//!
//! ```
//! match nrpt_cuda::Gpu::open(0) {
//!     Ok(gpu) => println!("running on {}", gpu.info().name),
//!     Err(e) => println!("CPU only: {e}"),
//! }
//! ```

pub mod bundle;
pub mod device;
pub mod ensembles;
pub mod error;
mod exchange_state;
#[cfg(feature = "host-shims")]
pub mod host_math;
pub mod kernels;
pub mod limits;
pub mod mlp;
pub mod params;
pub mod ptx_cache;
mod snapshot;
pub mod source;
pub mod timing;

pub use device::{DeviceInfo, Gpu};
pub use ensembles::{EnsembleConfig, GpuEnsembles};
pub use error::CudaError;
pub use params::{ExecutionPath, GpuParams, GpuTarget, MathMode, Noise, Precision, TargetSource};
pub use snapshot::{EnsembleSnapshot, Snapshot};
