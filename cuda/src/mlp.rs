//! The classifier data target on the GPU: E × P chains of a softmax regression or ReLU
//! MLP (nrpt-core's [`model`](nrpt_core::model)) on a training set resident in device
//! memory, each iteration one fused step per chain and one exchange per ensemble.
//!
//! - `mlp_step` (`kernels/mlp.cu`): one block of [`THREADS`] threads per chain draws
//!   the chain's mini-batch from its STEP stream exactly as `model::batch::draw` does,
//!   gathers the examples into shared memory, runs the forward pass, the deltas at the
//!   scores and the backward pass as register-tiled products over the whole batch,
//!   takes the step (momentum SGD, SGHMC, SGD or SGLD at its level's rate and
//!   temperature), and evaluates the stochastic energy of the new state on the second
//!   mini-batch of the stream;
//! - `mlp_exchange`: swap.cuh's swap-and-adapt (the same code as the toy targets'),
//!   then the momentum reset of the swapped replicas spread over a block;
//! - `mlp_gather_target`: the target level's states for the samples.
//!
//! Under [`MathMode::Exact`] every energy, gradient and state is the f32 that
//! nrpt-core's `Tempering<f32, model::Classifier<f32>>` computes for the same seed
//! (its per-example reference path, not the CPU engine's matrix products, whose sums run
//! in another order): `host::HostMlp` (feature `host-shims`, tests only) runs these
//! kernels' code on the CPU and the tests (`cuda/tests/mlp_parity.rs`) compare it with
//! nrpt-core bit for bit.

#[cfg(feature = "host-shims")]
pub mod host;
mod params;

#[cfg(feature = "host-shims")]
pub use host::HostMlp;
pub use params::{
    EXCHANGE_THREADS, MlpArrays, MlpConfig, MlpLayer, MlpModel, MlpParams, Start, THREADS,
    shared_bytes,
};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUdevice_attribute_enum as DeviceAttr;
use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use nrpt_core::index::{IndexStats, PairStats};
use nrpt_core::model::DataView;

use crate::device::Gpu;
use crate::error::{CudaError, driver};
use crate::exchange_state::{ExchangeState, ptr};
use crate::kernels;
use crate::params::{Arrays, GpuParams, IterConsts, MathMode};
use crate::snapshot::Snapshot;
use crate::timing::DeviceClock;

/// The headers and the kernel file of the program, embedded at build time (through the
/// crate's `kernels` link, as in `kernels.rs`).
const FILES: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../kernels/common.cuh")),
    ("philox.cuh", include_str!("../kernels/philox.cuh")),
    ("fastmath.cuh", include_str!("../kernels/fastmath.cuh")),
    ("swap.cuh", include_str!("../kernels/swap.cuh")),
    ("mlp.cuh", include_str!("../kernels/mlp.cuh")),
    ("mlp.cu", include_str!("../kernels/mlp.cu")),
];

/// NVRTC's name of the program.
pub const PROGRAM_NAME: &str = "nrpt_mlp.cu";

/// Most iterations whose adaptation constants go up in one upload.
const CHUNK: u64 = 4096;

/// The kernels of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MlpKernel {
    /// The fused step, one block per chain.
    Step,
    /// Swap-and-adapt and the momentum reset, one block per ensemble.
    Exchange,
    /// The target level's states, one block per ensemble.
    GatherTarget,
}

impl MlpKernel {
    /// Every kernel.
    pub const ALL: [MlpKernel; 3] = [
        MlpKernel::Step,
        MlpKernel::Exchange,
        MlpKernel::GatherTarget,
    ];

    /// The `extern "C"` name.
    pub fn name(self) -> &'static str {
        match self {
            MlpKernel::Step => "mlp_step",
            MlpKernel::Exchange => "mlp_exchange",
            MlpKernel::GatherTarget => "mlp_gather_target",
        }
    }
}

/// The program's source: `mlp.cu` with every `#include "x.cuh"` replaced by the
/// header's text (each header once).
pub fn program_source() -> String {
    kernels::inline_units(&["mlp.cu"], FILES)
}

/// The NVRTC options: those of the other kernels ([`kernels::compile_options`]).
pub fn compile_options(arch: &str, mode: MathMode) -> Vec<String> {
    kernels::compile_options(arch, mode)
}

/// The file stem of this program's precompiled PTX for `arch` and `mode`.
pub fn program_stem(arch: &str, mode: MathMode) -> String {
    format!("nrpt_mlp.{arch}.{}", mode.name())
}

type Cache = Mutex<HashMap<(String, MathMode), String>>;

/// The program's PTX for `arch` (e.g. `compute_90`) under `mode`, once per process:
/// from the folder of precompiled PTX named by `NRPT_CUDA_PTX_DIR` where it is set
/// (checked against this source and these options), else compiled by NVRTC.
pub fn compile_ptx(arch: &str, mode: MathMode) -> Result<String, CudaError> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (arch.to_string(), mode);
    if let Ok(guard) = cache.lock()
        && let Some(ptx) = guard.get(&key)
    {
        return Ok(ptx.clone());
    }
    let (source, options) = (program_source(), compile_options(arch, mode));
    let ptx = match crate::ptx_cache::dir_from_env() {
        Some(dir) => crate::ptx_cache::load(&dir, &program_stem(arch, mode), &source, &options)?,
        None => crate::ptx_cache::nvrtc_compile(PROGRAM_NAME, &source, &options)?,
    };
    if let Ok(mut guard) = cache.lock() {
        guard.insert(key, ptx.clone());
    }
    Ok(ptx)
}

/// The bytes of shared memory one chain's block of `model` needs ([`shared_bytes`]),
/// or an error that says so where the device allows less per block.
pub fn check_shared_memory(gpu: &Gpu, model: &MlpModel) -> Result<u32, CudaError> {
    let limit = gpu
        .context()
        .attribute(DeviceAttr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .map_err(driver("reading the shared memory per block"))?;
    let need = shared_bytes(&model.arch, model.batch)
        .and_then(|b| u32::try_from(b).ok())
        .filter(|&b| i64::from(b) <= i64::from(limit));
    need.ok_or_else(|| {
        CudaError::Unsupported(format!(
            "a chain of this network with mini-batches of {} needs {} bytes of shared memory \
             (θ and the mini-batch's activations), the device allows {limit} per block: use \
             a smaller network or mini-batch, or the CPU",
            model.batch,
            shared_bytes(&model.arch, model.batch).map_or("over 4 GiB".into(), |b| b.to_string())
        ))
    })
}

#[derive(Debug)]
struct Buffers {
    x: CudaSlice<f32>,
    y: CudaSlice<u32>,
    states: CudaSlice<f32>,
    momenta: Option<CudaSlice<f32>>,
    grad: CudaSlice<f32>,
    samples: CudaSlice<f32>,
    exchange: ExchangeState,
}

/// E ensembles of P chains of a classifier stepping together on one GPU.
#[derive(Debug)]
pub struct GpuMlp {
    gpu: Arc<Gpu>,
    config: MlpConfig,
    params: MlpParams,
    exchange: GpuParams,
    buf: Buffers,
    step_arrays: MlpArrays,
    arrays: Arrays,
    step: CudaFunction,
    exchange_fn: CudaFunction,
    gather: CudaFunction,
    shared: u32,
    iteration: u64,
    clock: DeviceClock,
}

impl GpuMlp {
    /// Checks the configuration against the data ([`MlpConfig::params`]) and the
    /// device's shared memory per block, compiles and loads the kernels, uploads the
    /// training set and the start of the run ([`Start`]: `initial` states are used with
    /// `InitialStates::Keep`).
    pub fn new(
        gpu: &Arc<Gpu>,
        config: &MlpConfig,
        data: &DataView<'_>,
        initial: Option<&[f32]>,
    ) -> Result<GpuMlp, CudaError> {
        let params = config.params(data.len(), data.features(), data.classes())?;
        let exchange = config.exchange_params()?;
        let start = Start::new(config, initial)?;
        let shared = check_shared_memory(gpu, &config.model)?;
        let module = gpu
            .context()
            .load_module(cudarc::nvrtc::Ptx::from_src(compile_ptx(
                gpu.arch(),
                config.math,
            )?))
            .map_err(driver("loading the classifier kernels"))?;
        let function = |k: MlpKernel| {
            module
                .load_function(k.name())
                .map_err(driver("finding a classifier kernel"))
        };
        let step = function(MlpKernel::Step)?;
        step.set_attribute(
            FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            shared as i32,
        )
        .map_err(driver("allowing the step its shared memory"))?;
        let (e, p) = (config.ensembles, config.chains);
        let np = e * (p - 1);
        let momentum = config.options.explorer.has_momentum();
        let s = gpu.stream();
        let mut state = ExchangeState::zeros(s, e, p)?;
        let up = |what: &'static str| driver(what);
        s.memcpy_htod(&start.ladder, &mut state.ladder)
            .map_err(up("uploading the ladder"))?;
        s.memcpy_htod(&start.temps, &mut state.temps)
            .map_err(up("uploading the temperatures"))?;
        s.memcpy_htod(&start.replica_at, &mut state.replica_at)
            .map_err(up("uploading the permutation"))?;
        s.memcpy_htod(&start.level_of, &mut state.level_of)
            .map_err(up("uploading the permutation"))?;
        s.memcpy_htod(&start.trips, &mut state.trips)
            .map_err(up("uploading the trip states"))?;
        s.memcpy_htod(&vec![1u8; np], &mut state.gates)
            .map_err(up("uploading the gates"))?;
        s.memcpy_htod(&start.buffers, &mut state.buffers)
            .map_err(up("uploading the buffers"))?;
        let buf = Buffers {
            x: s.clone_htod(data.x()).map_err(up("uploading the data"))?,
            y: s.clone_htod(data.y()).map_err(up("uploading the labels"))?,
            states: s
                .clone_htod(&start.states)
                .map_err(up("uploading the states"))?,
            momenta: if momentum {
                Some(
                    s.alloc_zeros::<f32>(start.states.len())
                        .map_err(up("allocating"))?,
                )
            } else {
                None
            },
            grad: s
                .alloc_zeros::<f32>(start.states.len())
                .map_err(up("allocating"))?,
            samples: s
                .alloc_zeros::<f32>(e * params.dim as usize)
                .map_err(up("allocating"))?,
            exchange: state,
        };
        let arrays = buf.exchange.arrays(
            s,
            ptr(s, &buf.states),
            buf.momenta.as_ref().map_or(0, |m| ptr(s, m)),
        );
        let step_arrays = MlpArrays {
            states: arrays.states,
            momenta: arrays.momenta,
            grad: ptr(s, &buf.grad),
            energies: arrays.energies,
            ladder: arrays.ladder,
            temps: arrays.temps,
            level_of: arrays.level_of,
            data_x: ptr(s, &buf.x),
            data_y: ptr(s, &buf.y),
        };
        let run = GpuMlp {
            gpu: gpu.clone(),
            config: MlpConfig {
                options: config.options.validate()?,
                ..*config
            },
            params,
            exchange,
            buf,
            step_arrays,
            arrays,
            step,
            exchange_fn: function(MlpKernel::Exchange)?,
            gather: function(MlpKernel::GatherTarget)?,
            shared,
            iteration: 0,
            clock: DeviceClock::default(),
        };
        run.gpu.synchronize()?;
        Ok(run)
    }

    /// The configuration (with validated options).
    pub fn config(&self) -> &MlpConfig {
        &self.config
    }

    /// The step kernel's parameter block.
    pub fn params(&self) -> &MlpParams {
        &self.params
    }

    /// Bytes of dynamic shared memory of a step block.
    pub fn shared_bytes(&self) -> u32 {
        self.shared
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Starts (`true`) or stops timing the iterations on the device, and resets the
    /// total of [`device_seconds`](Self::device_seconds): each chunk of
    /// [`advance`](Self::advance) is then timed by CUDA events recorded after the
    /// upload of its adaptation constants and after its last launch (crate::timing).
    /// The drawing of initial states, the upload of the data and of the states, module
    /// loading and downloads are never inside.
    pub fn time_device(&mut self, on: bool) {
        self.clock.set(on);
    }

    /// Seconds the device spent on the iterations advanced since timing was turned on
    /// ([`time_device`](Self::time_device)).
    pub fn device_seconds(&self) -> f64 {
        self.clock.seconds()
    }

    /// Runs `iterations` iterations of every ensemble, all on the device.
    pub fn advance(&mut self, iterations: u64) -> Result<(), CudaError> {
        let mut done = 0;
        while done < iterations {
            let n = (iterations - done).min(CHUNK);
            self.advance_chunk(n)?;
            done += n;
        }
        Ok(())
    }

    fn advance_chunk(&mut self, n: u64) -> Result<(), CudaError> {
        let s = self.gpu.stream().clone();
        let k0 = self.iteration;
        let consts: Vec<IterConsts> = (k0..k0 + n)
            .map(|k| IterConsts::at(&self.config.options, k))
            .collect();
        let consts_d = s
            .clone_htod(&consts)
            .map_err(driver("uploading adaptation constants"))?;
        let cp = ptr(self.gpu.stream(), &consts_d);
        let (e, p) = (self.config.ensembles as u32, self.config.chains as u32);
        let step_cfg = LaunchConfig {
            grid_dim: (e * p, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: self.shared,
        };
        let exchange_cfg = LaunchConfig {
            grid_dim: (e, 1, 1),
            block_dim: (EXCHANGE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (params, arrays, exchange, gpu_arrays) =
            (self.params, self.step_arrays, self.exchange, self.arrays);
        let record: u64 = 0;
        let started = self.clock.start(&s)?;
        for i in 0..n {
            let k = k0 + i;
            let mut b = s.launch_builder(&self.step);
            b.arg(&params).arg(&k).arg(&arrays);
            // SAFETY: mlp_step(NrptMlpParams, u64, NrptMlpArrays) matches; every array of
            // `arrays` was allocated in `new` for the E·P chains of D values (states,
            // momenta unless 0, grad), E·P levels and the N examples of `params`; the
            // grid has one block per chain (E·P < 2^31, checked by MlpConfig::params)
            // and the dynamic shared memory of the layout, allowed by set_attribute.
            unsafe { b.launch(step_cfg) }.map_err(driver("launching mlp_step"))?;
            let ic = cp + i * std::mem::size_of::<IterConsts>() as u64;
            let mut b = s.launch_builder(&self.exchange_fn);
            b.arg(&exchange)
                .arg(&k)
                .arg(&ic)
                .arg(&gpu_arrays)
                .arg(&record);
            // SAFETY: mlp_exchange(NrptGpuParams, u64, const NrptIterConsts*, NrptArrays,
            // u8*) matches; `ic` points inside consts_d (i < n entries, alive until the
            // synchronize below), `record` is null; the arrays hold E·P levels, E·(P−1)
            // pairs, E buffers and stats; one block per ensemble.
            unsafe { b.launch(exchange_cfg) }.map_err(driver("launching mlp_exchange"))?;
        }
        self.clock.stop(&s, started)?;
        self.gpu.synchronize()?;
        drop(consts_d);
        self.iteration += n;
        Ok(())
    }

    /// Every state, chain-major: chain c = e·P + r at `[c·D .. (c+1)·D]`.
    pub fn states(&self) -> Result<Vec<f32>, CudaError> {
        self.gpu
            .stream()
            .clone_dtoh(&self.buf.states)
            .map_err(driver("downloading states"))
    }

    /// Every momentum, chain-major (empty for Langevin explorers).
    pub fn momenta(&self) -> Result<Vec<f32>, CudaError> {
        match &self.buf.momenta {
            None => Ok(Vec::new()),
            Some(m) => self
                .gpu
                .stream()
                .clone_dtoh(m)
                .map_err(driver("downloading momenta")),
        }
    }

    /// Energies by level, `[e·P + level]`.
    pub fn energies(&self) -> Result<Vec<f32>, CudaError> {
        self.gpu
            .stream()
            .clone_dtoh(&self.buf.exchange.energies)
            .map_err(driver("downloading energies"))
    }

    /// The state at level 0 of every ensemble (the target's samples), E·D values,
    /// gathered on the device.
    pub fn sample_target(&self) -> Result<Vec<f32>, CudaError> {
        let s = self.gpu.stream();
        let (p, d) = (self.params.chains, self.params.dim);
        let (states, at) = (
            ptr(self.gpu.stream(), &self.buf.states),
            ptr(self.gpu.stream(), &self.buf.exchange.replica_at),
        );
        let out = ptr(self.gpu.stream(), &self.buf.samples);
        let cfg = LaunchConfig {
            grid_dim: (self.params.ensembles, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = s.launch_builder(&self.gather);
        b.arg(&p).arg(&d).arg(&states).arg(&at).arg(&out);
        // SAFETY: mlp_gather_target(u32, u32, const float*, const u32*, float*) matches;
        // states hold E·P·D values, replica_at E·P replicas below P, samples E·D values;
        // one block per ensemble.
        unsafe { b.launch(cfg) }.map_err(driver("launching mlp_gather_target"))?;
        s.clone_dtoh(&self.buf.samples)
            .map_err(driver("downloading samples"))
    }

    /// Level of each replica of ensemble `ensemble` (P values).
    pub fn levels(&self, ensemble: usize) -> Result<Vec<u32>, CudaError> {
        self.buf.exchange.levels(self.gpu.stream(), ensemble)
    }

    /// Learning rate of each level of ensemble `ensemble` (P values).
    pub fn ladder(&self, ensemble: usize) -> Result<Vec<f64>, CudaError> {
        self.buf.exchange.ladder(self.gpu.stream(), ensemble)
    }

    /// Buffer C of every ensemble (E values).
    pub fn buffers(&self) -> Result<Vec<f64>, CudaError> {
        self.buf.exchange.buffers(self.gpu.stream())
    }

    /// Round trips, restarts and non-finite energies of every ensemble (E values).
    pub fn index_stats(&self) -> Result<Vec<IndexStats>, CudaError> {
        self.buf.exchange.index_stats(self.gpu.stream())
    }

    /// Counts of every pair, ensemble-major: pair q of ensemble e at `e·(P−1) + q`.
    pub fn pair_stats(&self) -> Result<Vec<PairStats>, CudaError> {
        self.buf.exchange.pair_stats(self.gpu.stream())
    }

    /// Every ensemble's ladder, temperatures, buffer, counts, permutation, energies,
    /// trip states, flags and gates.
    pub fn snapshot(&self) -> Result<Snapshot, CudaError> {
        self.buf
            .exchange
            .snapshot(self.gpu.stream(), self.iteration)
    }
}
