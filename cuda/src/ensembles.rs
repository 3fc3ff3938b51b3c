//! E independent tempering ensembles of P chains on one GPU: device buffers, start of
//! run, the iteration loop (persistent kernel or step + swap kernels), and what comes
//! back to the host.
//!
//! Kept whole past 600 lines: the device buffers and the loop that uses them belong
//! together; its tests are at the end.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use nrpt_core::TemperingOptions;
use nrpt_core::adapt::initial_ladder;
use nrpt_core::driver::InitialStates;
use nrpt_core::index::{IndexStats, PairStats};
use nrpt_core::rng::MAX_REPLICAS;

use crate::device::Gpu;
use crate::error::{CudaError, driver};
use crate::exchange_state::{ExchangeState, ptr};
use crate::kernels::{Kernel, persistent_shared_bytes};
use crate::params::{
    Arrays, BlockShape, ExecutionPath, GpuParams, GpuTarget, IterConsts, MathMode, Noise, Precision,
};
use crate::snapshot::Snapshot;
use crate::timing::DeviceClock;

/// Most iterations one persistent launch (or one chunk of step/swap launches) covers.
const CHUNK: u64 = 4096;
// persistent_2d_warp gathers its counts in 16 bits a launch (kernels/warp_swap.cuh,
// NRPT_WARP_MAX_ITERS).
const _: () = assert!(CHUNK <= 65_535);
/// Threads per block of the one-thread-per-item kernels.
const THREADS: u32 = 256;
/// Threads per block of the swap-and-adapt kernel (one team of lanes per ensemble).
const SWAP_THREADS: u32 = 128;
/// Largest D stepped by one thread per chain (`step_2d`, `step_seq`); above it a block
/// per chain (`step_block`, in the shape [`BlockShape::for_dim`]).
pub const SEQ_MAX_DIM: usize = 64;
/// Target (and largest) number of threads per persistent block: the kernel's launch
/// bound (kernels/persistent.cu NRPT_PERSISTENT_MAX_THREADS, two blocks per SM).
const PERSISTENT_THREADS: u32 = 512;
/// Shared memory a block may use without opting in.
const SHARED_LIMIT: u32 = 48 * 1024;

/// Everything that defines a GPU run.
#[derive(Clone, Debug, PartialEq)]
pub struct EnsembleConfig {
    /// The options of every ensemble; ensemble e uses `options.ensemble + e` as its
    /// Philox key word, exactly as the CPU engine does for ensemble index e.
    pub options: TemperingOptions,
    /// The potential.
    pub target: GpuTarget,
    /// The oracle's noise.
    pub noise: Noise,
    /// Number of ensembles E.
    pub ensembles: usize,
    /// Chains per ensemble P.
    pub chains: usize,
    /// Storage of the states.
    pub precision: Precision,
    /// Floating-point contract of the kernels.
    pub math: MathMode,
    /// Which kernels run the iterations.
    pub path: ExecutionPath,
}

impl EnsembleConfig {
    /// E ensembles of P chains with the paper's noisy oracle, f32 storage, exact math,
    /// automatic choice of kernels.
    pub fn new(
        options: TemperingOptions,
        target: GpuTarget,
        ensembles: usize,
        chains: usize,
    ) -> Self {
        EnsembleConfig {
            options,
            target,
            noise: Noise::PAPER,
            ensembles,
            chains,
            precision: Precision::F32,
            math: MathMode::Exact,
            path: ExecutionPath::Auto,
        }
    }

    /// Checks the configuration (the options by nrpt-core, the rules the kernels
    /// implement, the sizes the kernels handle) and returns the parameter block the
    /// kernels read, without a device: what [`GpuEnsembles::new`] uploads.
    ///
    /// The rules the kernels do not implement (fresh energies per pair test, the
    /// sequential pass: `TemperingOptions::params` refuses them) are a
    /// [`CudaError::Options`].
    pub fn params(&self) -> Result<GpuParams, CudaError> {
        let options = self.options.validate()?;
        let (e, p, d) = (self.ensembles, self.chains, self.target.dim());
        if p < 2 {
            return Err(nrpt_core::Error::TooFewChains { chains: p }.into());
        }
        // The Philox counter holds replica indices in 24 bits (rng::counter), as the
        // driver's Buffers::check demands.
        if p > MAX_REPLICAS {
            return Err(nrpt_core::Error::InvalidValue {
                name: "chains",
                value: p as f64,
                allowed: "at most 2^24 - 1 per ensemble",
            }
            .into());
        }
        // The oracle's noise scales, as Noisy's own check (EnergyOracle::validate).
        nrpt_core::target::Noisy::new((), self.noise.gradient, self.noise.energy)?;
        if e == 0 || d == 0 {
            return Err(CudaError::Unsupported(
                "zero ensembles or zero dimensions".into(),
            ));
        }
        if u64::from(options.ensemble) + e as u64 - 1 > u64::from(u32::MAX) {
            return Err(CudaError::Unsupported(
                "options.ensemble + ensembles exceeds the 32-bit Philox key word".into(),
            ));
        }
        let e32 = u32::try_from(e)
            .map_err(|_| CudaError::Unsupported("more than 2^32 ensembles".into()))?;
        if self.precision != Precision::F32 && d == 2 {
            return Err(CudaError::Unsupported(
                "half-precision storage is for D-dimensional SumModes states (D > 2)".into(),
            ));
        }
        if self.target == GpuTarget::Modes2d && self.precision != Precision::F32 {
            return Err(CudaError::Unsupported("Modes2d needs f32 storage".into()));
        }
        if let GpuTarget::Source { source, .. } = &self.target {
            if self.precision != Precision::F32 {
                return Err(CudaError::Unsupported(format!(
                    "target {} (its own CUDA source) needs f32 storage",
                    source.name
                )));
            }
            if d > crate::source::MAX_DIM {
                return Err(CudaError::Unsupported(format!(
                    "target {} (its own CUDA source) has D = {d}: the source step takes at \
                     most {} coordinates",
                    source.name,
                    crate::source::MAX_DIM
                )));
            }
        }
        let (init_uniform, low, high) = match options.init {
            InitialStates::Uniform { low, high } => (1, low, high),
            InitialStates::Keep => (0, 0.0, 0.0),
        };
        let params = GpuParams {
            core: options.params(p, d)?,
            gradient_noise: self.noise.gradient,
            energy_noise: self.noise.energy,
            init_low: low,
            init_high: high,
            ensembles: e32,
            target: self.target.code(),
            init_uniform,
            coord_bytes: self.precision.bytes() as u32,
        };
        Ok(params)
    }

    /// The ladder and temperatures every ensemble starts from (P values each), as
    /// nrpt-core's `Engine::start` sets them: `adapt::initial_ladder` of
    /// `options.rules.initial_ladder`, then `Temperatures::fill`.
    pub fn initial_levels(&self) -> Result<(Vec<f64>, Vec<f64>), CudaError> {
        initial_levels(&self.options, self.chains)
    }
}

/// The ladder and temperatures of P levels every ensemble of `options` starts from, as
/// nrpt-core's `Engine::start` sets them: `adapt::initial_ladder` of
/// `options.rules.initial_ladder`, then `Temperatures::fill`.
pub(crate) fn initial_levels(
    options: &TemperingOptions,
    p: usize,
) -> Result<(Vec<f64>, Vec<f64>), CudaError> {
    let options = options.validate()?;
    if p < 2 {
        return Err(nrpt_core::Error::TooFewChains { chains: p }.into());
    }
    let mut ladder0 = vec![0.0; p];
    initial_ladder(
        options.rules.initial_ladder,
        options.ladder_min,
        options.ladder_max,
        &mut ladder0,
    )?;
    let mut temps0 = vec![0.0; p];
    options.temperatures.fill(&ladder0, &mut temps0);
    Ok((ladder0, temps0))
}

#[derive(Debug)]
struct Buffers {
    states: CudaSlice<u8>,
    momenta: Option<CudaSlice<u8>>,
    exchange: ExchangeState,
}

#[derive(Debug)]
struct Functions {
    step: CudaFunction,
    step_block: Option<BlockShape>,
    swap: CudaFunction,
    persistent: Option<(CudaFunction, PersistentLaunch)>,
}

/// The persistent kernel a run launches and its block shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PersistentLaunch {
    /// `persistent_2d_warp` (P ≤ 32: the swap phase in registers and shuffles) or
    /// `persistent_2d` (larger P: the swap phase through shared memory).
    pub kernel: Kernel,
    /// Ensembles per block.
    pub group: u32,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
}

impl PersistentLaunch {
    /// The launch for E ensembles of P chains: `persistent_2d_warp` when an ensemble
    /// fits a warp (P ≤ 32), else `persistent_2d` ([`persistent_group`]); `None` if an
    /// ensemble fits neither.
    pub fn for_ensembles(p: u32, e: u32) -> Option<PersistentLaunch> {
        if let Some(group) = persistent_warp_group(p, e) {
            let width = p.next_power_of_two();
            return Some(PersistentLaunch {
                kernel: Kernel::Persistent2dWarp,
                group,
                threads: group * width,
                shared_bytes: 0,
            });
        }
        persistent_group(p, e).map(|group| PersistentLaunch {
            kernel: Kernel::Persistent2d,
            group,
            threads: group * p,
            shared_bytes: persistent_shared_bytes(group, p),
        })
    }
}

/// E ensembles of P chains stepping together on one GPU.
#[derive(Debug)]
pub struct GpuEnsembles {
    gpu: Arc<Gpu>,
    config: EnsembleConfig,
    params: GpuParams,
    buf: Buffers,
    arrays: Arrays,
    funcs: Functions,
    iteration: u64,
    recorded: Option<Vec<u8>>,
    clock: DeviceClock,
}

fn grid(items: u64, threads: u32) -> Result<LaunchConfig, CudaError> {
    let blocks = items.div_ceil(u64::from(threads));
    let blocks = u32::try_from(blocks.max(1))
        .map_err(|_| CudaError::Unsupported(format!("{items} items exceed one launch grid")))?;
    Ok(LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    })
}

impl GpuEnsembles {
    /// Validates the configuration, allocates every buffer and starts the run as
    /// nrpt-core's `Engine::start` does (the initial ladder of `options.rules`,
    /// identity permutation, open gates, C₀, uniform initial states from the INIT
    /// streams). The configuration is checked first, as [`EnsembleConfig::params`]
    /// does.
    pub fn new(gpu: &Arc<Gpu>, config: &EnsembleConfig) -> Result<GpuEnsembles, CudaError> {
        let params = config.params()?;
        let (ladder0, temps0) = config.initial_levels()?;
        let options = config.options.validate()?;
        let (e, p, d) = (config.ensembles, config.chains, config.target.dim());
        let (e32, p32) = (params.ensembles, params.core.chains);
        let momentum = options.explorer.has_momentum();

        let s = gpu.stream();
        let n = e * p;
        let bytes = n * d * config.precision.bytes();
        let buf = Buffers {
            states: s.alloc_zeros::<u8>(bytes).map_err(driver("allocating"))?,
            momenta: if momentum {
                Some(s.alloc_zeros::<u8>(bytes).map_err(driver("allocating"))?)
            } else {
                None
            },
            exchange: ExchangeState::zeros(s, e, p)?,
        };
        let arrays = buf.exchange.arrays(
            s,
            ptr(s, &buf.states),
            buf.momenta.as_ref().map_or(0, |m| ptr(s, m)),
        );

        let funcs = Self::functions(gpu, config, p32, e32)?;
        let mut run = GpuEnsembles {
            gpu: gpu.clone(),
            config: EnsembleConfig {
                options,
                ..config.clone()
            },
            params,
            buf,
            arrays,
            funcs,
            iteration: 0,
            recorded: None,
            clock: DeviceClock::default(),
        };
        run.start(&ladder0, &temps0, options.initial_buffer)?;
        Ok(run)
    }

    fn functions(
        gpu: &Gpu,
        config: &EnsembleConfig,
        p: u32,
        e: u32,
    ) -> Result<Functions, CudaError> {
        let d = config.target.dim();
        let math = config.math;
        let swap = gpu.function(Kernel::SwapAdapt, math)?;
        if let GpuTarget::Source { source, .. } = &config.target {
            if config.path == ExecutionPath::Persistent {
                return Err(CudaError::Unsupported(format!(
                    "the persistent kernel runs the built-in 2D targets only, not target {} \
                     (its own CUDA source)",
                    source.name
                )));
            }
            return Ok(Functions {
                step: gpu.source_function(source, math)?,
                step_block: None,
                swap,
                persistent: None,
            });
        }
        let (step_kernel, step_block) = match (d, config.precision) {
            (2, Precision::F32) => (Kernel::Step2d, None),
            (d, prec) if d <= SEQ_MAX_DIM => (
                match prec {
                    Precision::F32 => Kernel::StepSeqF32,
                    Precision::Bf16 => Kernel::StepSeqBf16,
                    Precision::F16 => Kernel::StepSeqF16,
                },
                None,
            ),
            (d, prec) => (
                match prec {
                    Precision::F32 => Kernel::StepBlockF32,
                    Precision::Bf16 => Kernel::StepBlockBf16,
                    Precision::F16 => Kernel::StepBlockF16,
                },
                Some(BlockShape::for_dim(d).ok_or_else(|| {
                    CudaError::Unsupported(format!(
                        "D = {d} exceeds the block step's {} coordinates per chain",
                        BlockShape::MAX_DIM
                    ))
                })?),
            ),
        };
        let persistent_ok = d == 2 && config.precision == Precision::F32;
        let launch = PersistentLaunch::for_ensembles(p, e);
        let persistent = match (config.path, persistent_ok, launch) {
            (ExecutionPath::StepSwap, _, _) => None,
            (_, true, Some(l)) => Some((gpu.function(l.kernel, math)?, l)),
            (ExecutionPath::Persistent, _, _) => {
                return Err(CudaError::Unsupported(format!(
                    "the persistent kernel needs D = 2, f32 storage and P ≤ {PERSISTENT_THREADS} \
                     chains whose ensemble fits in 48 KiB of shared memory (D = {d}, P = {p}, \
                     {:?})",
                    config.precision
                )));
            }
            _ => None,
        };
        Ok(Functions {
            step: gpu.function(step_kernel, math)?,
            step_block,
            swap,
            persistent,
        })
    }

    fn start(&mut self, ladder0: &[f64], temps0: &[f64], buffer0: f64) -> Result<(), CudaError> {
        let s = self.gpu.stream().clone();
        let ladder_d = s
            .clone_htod(ladder0)
            .map_err(driver("uploading the ladder"))?;
        let temps_d = s
            .clone_htod(temps0)
            .map_err(driver("uploading the temperatures"))?;
        let n = (self.config.ensembles * self.config.chains) as u64;
        let init = self.gpu.function(Kernel::InitEnsembles, self.config.math)?;
        let (params, arrays) = (self.params, self.arrays);
        let lp = ptr(self.gpu.stream(), &ladder_d);
        let tp = ptr(self.gpu.stream(), &temps_d);
        let mut b = s.launch_builder(&init);
        b.arg(&params).arg(&arrays).arg(&lp).arg(&tp).arg(&buffer0);
        // SAFETY: init_ensembles(NrptGpuParams, NrptArrays, const double*, const double*,
        // double) matches these arguments; every array of `arrays` was allocated above
        // for E·P (or E·(P−1), E) elements, the kernel guards c < E·P, and ladder_d/temps_d
        // hold P values and live until the synchronize below.
        unsafe { b.launch(grid(n, THREADS)?) }.map_err(driver("launching init_ensembles"))?;
        let states_kernel = match self.config.precision {
            Precision::F32 => Kernel::InitStatesF32,
            Precision::Bf16 => Kernel::InitStatesBf16,
            Precision::F16 => Kernel::InitStatesF16,
        };
        let f = self.gpu.function(states_kernel, self.config.math)?;
        let mut b = s.launch_builder(&f);
        b.arg(&params).arg(&arrays);
        // SAFETY: init_states_*(NrptGpuParams, NrptArrays); states (and momenta if any)
        // hold E·P·D elements of the storage type; the kernel guards i < E·P·D.
        unsafe { b.launch(grid(n * self.config.target.dim() as u64, THREADS)?) }
            .map_err(driver("launching init_states"))?;
        self.gpu.synchronize()
    }

    /// The configuration (with validated options).
    pub fn config(&self) -> &EnsembleConfig {
        &self.config
    }

    /// The parameter block the kernels read.
    pub fn params(&self) -> &GpuParams {
        &self.params
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// `true` when [`advance`](Self::advance) runs the persistent kernel.
    pub fn uses_persistent_kernel(&self) -> bool {
        self.funcs.persistent.is_some()
    }

    /// Starts (or stops) recording every pair's swap flags at every iteration; see
    /// [`take_recorded_flags`](Self::take_recorded_flags).
    pub fn record_flags(&mut self, on: bool) {
        self.recorded = if on { Some(Vec::new()) } else { None };
    }

    /// The flags recorded since recording started, `[iteration][ensemble][pair]`
    /// (E·(P−1) bytes per iteration, bits of `nrpt_core::swap::flags`); empties the
    /// record and keeps recording.
    pub fn take_recorded_flags(&mut self) -> Vec<u8> {
        self.recorded
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Starts (`true`) or stops timing the iterations on the device, and resets the
    /// total of [`device_seconds`](Self::device_seconds). While it is on, each chunk of
    /// [`advance`](Self::advance) is timed by CUDA events recorded after the upload of
    /// its adaptation constants and after its last launch (crate::timing).
    pub fn time_device(&mut self, on: bool) {
        self.clock.set(on);
    }

    /// Seconds the device spent on the iterations advanced since timing was turned on
    /// ([`time_device`](Self::time_device)); set-up, uploads and downloads excluded.
    pub fn device_seconds(&self) -> f64 {
        self.clock.seconds()
    }

    /// Runs `iterations` iterations and returns the seconds the device spent on them
    /// (CUDA events, as [`time_device`](Self::time_device)); timing stays as it was.
    pub fn advance_timed(&mut self, iterations: u64) -> Result<f64, CudaError> {
        let (on, before) = (self.clock.is_on(), self.clock.seconds());
        if !on {
            self.clock.set(true);
        }
        let result = self.advance(iterations);
        let seconds = self.clock.seconds() - if on { before } else { 0.0 };
        if !on {
            self.clock.set(false);
        }
        result.map(|()| seconds)
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
        let (e, p) = (self.config.ensembles as u64, self.config.chains as u64);
        let per_iter = e * (p - 1);
        let record_d = match self.recorded {
            Some(_) => Some(
                s.alloc_zeros::<u8>((per_iter * n) as usize)
                    .map_err(driver("allocating the flag record"))?,
            ),
            None => None,
        };
        let rp = record_d.as_ref().map_or(0, |r| ptr(self.gpu.stream(), r));
        let (params, arrays) = (self.params, self.arrays);
        let started = self.clock.start(&s)?;
        if let Some((f, launch)) = &self.funcs.persistent {
            let blocks = u32::try_from(e.div_ceil(u64::from(launch.group)))
                .map_err(|_| CudaError::Unsupported("too many ensembles".into()))?;
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (launch.threads, 1, 1),
                shared_mem_bytes: launch.shared_bytes,
            };
            let iters = n as u32;
            let mut b = s.launch_builder(f);
            b.arg(&params)
                .arg(&k0)
                .arg(&iters)
                .arg(&cp)
                .arg(&arrays)
                .arg(&rp);
            // SAFETY: persistent_2d and persistent_2d_warp take (NrptGpuParams, u64, u32,
            // const NrptIterConsts*, NrptArrays, u8*); consts_d holds `iters` entries,
            // record_d (if any) iters·E·(P−1) bytes, both alive until the synchronize
            // below; persistent_2d's block has G·P threads and the shared memory its
            // layout needs for G, P; persistent_2d_warp's has G·W threads (W the power
            // of two ≥ P, whole warps: see persistent_warp_group) and none; both
            // kernels guard e < E.
            unsafe { b.launch(cfg) }.map_err(driver("launching the persistent kernel"))?;
        } else {
            let chains = e * p;
            let shape = self.funcs.step_block;
            let step_cfg = if let Some(shape) = shape {
                let blocks = u32::try_from(chains)
                    .map_err(|_| CudaError::Unsupported("too many chains".into()))?;
                LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (shape.threads, 1, 1),
                    shared_mem_bytes: 0,
                }
            } else {
                grid(chains, THREADS)?
            };
            // One team of lanes per ensemble, whole teams per block.
            let width = team_width(p as u32, SWAP_THREADS);
            let swap_cfg = grid(e * u64::from(width), SWAP_THREADS)?;
            for i in 0..n {
                let k = k0 + i;
                let mut b = s.launch_builder(&self.funcs.step);
                b.arg(&params).arg(&k).arg(&arrays);
                let chunk = shape.map_or(0, |s| s.chunk);
                if shape.is_some() {
                    b.arg(&chunk);
                }
                // SAFETY: step_2d/step_seq_*(NrptGpuParams, u64, NrptArrays) and
                // step_block_*(NrptGpuParams, u64, NrptArrays, u32 chunk) match; the
                // arrays hold E·P chains of D coordinates of the kernel's storage type;
                // the per-thread kernels guard c < E·P, the block kernel has one block
                // per chain of BlockShape::for_dim(D) (a shape the kernel takes:
                // BlockShape::valid_for, at most 256 threads).
                unsafe { b.launch(step_cfg) }.map_err(driver("launching the step kernel"))?;
                let ic = cp + i * std::mem::size_of::<IterConsts>() as u64;
                let rec = if rp == 0 { 0 } else { rp + i * per_iter };
                let mut b = s.launch_builder(&self.funcs.swap);
                b.arg(&params).arg(&k).arg(&ic).arg(&arrays).arg(&rec);
                // SAFETY: swap_adapt(NrptGpuParams, u64, const NrptIterConsts*,
                // NrptArrays, u8*) matches; `ic` points inside consts_d (i < n entries),
                // `rec` is 0 or inside record_d (E·(P−1) bytes from there); blocks of
                // SWAP_THREADS threads hold whole teams of team_width(P, SWAP_THREADS)
                // lanes (a power of two dividing 128), and the kernel guards e < E.
                unsafe { b.launch(swap_cfg) }.map_err(driver("launching swap_adapt"))?;
            }
        }
        self.clock.stop(&s, started)?;
        if let (Some(rec), Some(out)) = (record_d.as_ref(), self.recorded.as_mut()) {
            let host = s
                .clone_dtoh(rec)
                .map_err(driver("downloading the flag record"))?;
            out.extend_from_slice(&host);
        }
        self.gpu.synchronize()?;
        drop(consts_d);
        self.iteration += n;
        Ok(())
    }

    /// Every state as f32, chain-major: chain c = e·P + r at `[c·D .. (c+1)·D]`.
    pub fn states(&self) -> Result<Vec<f32>, CudaError> {
        let raw = self
            .gpu
            .stream()
            .clone_dtoh(&self.buf.states)
            .map_err(driver("downloading states"))?;
        Ok(decode(&raw, self.config.precision))
    }

    /// Every momentum as f32, chain-major like [`states`](Self::states); empty for
    /// Langevin explorers, which have none.
    pub fn momenta(&self) -> Result<Vec<f32>, CudaError> {
        let Some(m) = &self.buf.momenta else {
            return Ok(Vec::new());
        };
        let raw = self
            .gpu
            .stream()
            .clone_dtoh(m)
            .map_err(driver("downloading momenta"))?;
        Ok(decode(&raw, self.config.precision))
    }

    /// Replaces every state (chain-major, E·P·D values), e.g. after
    /// `InitialStates::Keep`; values are rounded to the storage precision.
    pub fn set_states(&mut self, states: &[f32]) -> Result<(), CudaError> {
        let n = self.config.ensembles * self.config.chains * self.config.target.dim();
        if states.len() != n {
            return Err(nrpt_core::Error::LengthMismatch {
                name: "states",
                expected: n,
                found: states.len(),
            }
            .into());
        }
        let raw = encode(states, self.config.precision);
        let s = self.gpu.stream().clone();
        s.memcpy_htod(&raw, &mut self.buf.states)
            .map_err(driver("uploading states"))?;
        self.gpu.synchronize()
    }

    /// The state at level 0 of every ensemble (the target's samples), E·D values.
    pub fn sample_target(&self) -> Result<Vec<f32>, CudaError> {
        let states = self.states()?;
        let at = self
            .gpu
            .stream()
            .clone_dtoh(&self.buf.exchange.replica_at)
            .map_err(driver("downloading the permutation"))?;
        let (p, d) = (self.config.chains, self.config.target.dim());
        let mut out = Vec::with_capacity(self.config.ensembles * d);
        for e in 0..self.config.ensembles {
            let c = e * p + at[e * p] as usize;
            out.extend_from_slice(&states[c * d..(c + 1) * d]);
        }
        Ok(out)
    }

    /// Level of each replica of ensemble `ensemble` (P values; one small download).
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

    /// Downloads every ensemble's ladder, buffer, counts, permutation and energies.
    pub fn snapshot(&self) -> Result<Snapshot, CudaError> {
        self.buf
            .exchange
            .snapshot(self.gpu.stream(), self.iteration)
    }
}

/// Ensembles per persistent block for P chains and E ensembles: up to 512 threads
/// (the kernel's launch bound) and 48 KiB of shared memory; `None` if one ensemble
/// does not fit.
pub fn persistent_group(p: u32, e: u32) -> Option<u32> {
    if !(2..=PERSISTENT_THREADS).contains(&p) {
        return None;
    }
    let mut g = (PERSISTENT_THREADS / p).max(1).min(e.max(1));
    while g > 1 && persistent_shared_bytes(g, p) > SHARED_LIMIT {
        g -= 1;
    }
    (persistent_shared_bytes(g, p) <= SHARED_LIMIT && g * p <= PERSISTENT_THREADS).then_some(g)
}

/// Ensembles per block of `persistent_2d_warp` for P ≤ 32 chains and E ensembles:
/// each takes W lanes (the power of two ≥ P), a block is whole warps (the kernel's
/// shuffles name all 32 lanes) of at most 512 threads, and no larger than E needs;
/// `None` for P outside 2..=32.
pub fn persistent_warp_group(p: u32, e: u32) -> Option<u32> {
    if !(2..=32).contains(&p) {
        return None;
    }
    let width = p.next_power_of_two();
    let per_warp = 32 / width;
    let needed = e.max(1).div_ceil(per_warp) * per_warp;
    Some((PERSISTENT_THREADS / width).min(needed))
}

/// Lanes per ensemble in the swap phase of a block of `threads` threads (kernels/
/// swap.cuh nrpt_team_width): a power of two, enough for the P − 1 pairs, at most a
/// warp and at most the block.
pub fn team_width(p: u32, threads: u32) -> u32 {
    let mut w = 1;
    while w < 32 && w < p.saturating_sub(1) && 2 * w <= threads {
        w *= 2;
    }
    w
}

fn decode(raw: &[u8], precision: Precision) -> Vec<f32> {
    match precision {
        Precision::F32 => raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Precision::Bf16 => raw
            .chunks_exact(2)
            .map(|b| half::bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
            .collect(),
        Precision::F16 => raw
            .chunks_exact(2)
            .map(|b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
            .collect(),
    }
}

/// The states as the kernels store them: f32, or bf16/f16 rounded to nearest even as
/// kernels/storage.cuh's `nrpt_f32_to_bf16`/`nrpt_f32_to_f16` round them (overflow to
/// infinity, NaN kept quiet with its payload's high bits). `half`'s `from_f32_const` is
/// its portable integer code (`f16::from_f32` may take the CPU's conversion
/// instruction); the test `half_encode_is_the_kernels` checks it against the kernels'
/// code bit for bit.
fn encode(states: &[f32], precision: Precision) -> Vec<u8> {
    match precision {
        Precision::F32 => states.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Precision::Bf16 => states
            .iter()
            .flat_map(|&x| half::bf16::from_f32_const(x).to_bits().to_le_bytes())
            .collect(),
        Precision::F16 => states
            .iter()
            .flat_map(|&x| half::f16::from_f32_const(x).to_bits().to_le_bytes())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `encode`'s bf16 and f16 bits against the kernels' own conversions
    /// (kernels/storage.cuh through the host build, feature `host-shims`), exactly.
    #[cfg(feature = "host-shims")]
    fn check_encode(states: &[f32]) {
        use crate::host_math::{f32_to_bf16, f32_to_f16};
        for (precision, kernel) in [
            (Precision::Bf16, f32_to_bf16 as fn(f32) -> u16),
            (Precision::F16, f32_to_f16),
        ] {
            let raw = encode(states, precision);
            assert_eq!(raw.len(), 2 * states.len());
            for (x, b) in states.iter().zip(raw.chunks_exact(2)) {
                let got = u16::from_le_bytes([b[0], b[1]]);
                let want = kernel(*x);
                assert!(
                    got == want,
                    "{precision:?} of {x:e} ({:#010x}): encode {got:#06x}, kernels {want:#06x}",
                    x.to_bits()
                );
            }
        }
    }

    /// The edge classes of both roundings, for both signs and every exponent (zeros,
    /// f32 subnormals, the smallest and largest f16 subnormals and normals, the largest
    /// finite f32 and f16, overflow to infinity, infinities, quiet and signalling NaNs
    /// with payloads in every position), then four million fixed-seed bit patterns: the
    /// bits `encode` stores equal the kernels' exactly.
    #[cfg(feature = "host-shims")]
    #[test]
    fn half_encode_is_the_kernels() {
        // Mantissas around every rounding point k (bf16 rounds at bit 16, f16 at bit 13
        // and, below 2^-14, at bits 14..=23): the bits under k at 0, 1, just under, at
        // and just over the tie and all ones; the bits above k all clear, the lowest
        // kept bit alone (an odd result), all set (a carry into the exponent) and all
        // set but the lowest.
        let mut mantissas = vec![0u32, 1, 0x40_0000, 0x7f_ffff];
        for k in 1..=23u32 {
            let tie = 1u32 << (k - 1);
            let under = [0, 1, tie - 1, tie, tie + 1, (1 << k) - 1];
            let full = 0x7f_ffff & !((1u32 << k) - 1);
            for above in [0, (1 << k) & 0x7f_ffff, full, full & !(1 << k)] {
                mantissas.extend(under.iter().map(|&u| above | u));
            }
        }
        let mut states: Vec<f32> = (0..512u32)
            .flat_map(|se| {
                mantissas
                    .iter()
                    .map(move |&m| f32::from_bits((se << 23) | m))
            })
            .collect();
        states.extend([
            f32::MAX,
            f32::MIN_POSITIVE,
            65504.0,
            65519.99,
            65520.0,
            5.960_464_5e-8,
            2.980_232_2e-8,
            2.980_232_4e-8,
            6.103_515_6e-5,
            f32::NAN,
            f32::from_bits(0x7fa0_0000),
            f32::from_bits(0xff80_0001),
        ]);
        states.extend(states.clone().iter().map(|x| -x));
        check_encode(&states);
        // Fixed-seed patterns (splitmix64).
        let mut z = 0x6e72_7074_u64;
        let sample: Vec<f32> = (0..4_000_000)
            .map(|_| {
                z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut w = z;
                w = (w ^ (w >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                w = (w ^ (w >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                f32::from_bits((w ^ (w >> 31)) as u32)
            })
            .collect();
        check_encode(&sample);
    }

    /// [`half_encode_is_the_kernels`] on all 2^32 f32 bit patterns, on every core: about
    /// two minutes optimized on two cores (`cargo test -p nrpt-cuda --features host-shims
    /// --release --lib -- --ignored half_encode`), far longer unoptimized.
    #[cfg(feature = "host-shims")]
    #[test]
    #[ignore = "all 2^32 patterns: run optimized, by hand"]
    fn half_encode_is_the_kernels_on_every_f32() {
        const CHUNK: u32 = 1 << 16;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        std::thread::scope(|s| {
            for t in 0..threads {
                s.spawn(move || {
                    let mut c = u64::from(t);
                    while c < (1 << 32) / u64::from(CHUNK) {
                        let first = c as u32 * CHUNK;
                        let chunk: Vec<f32> =
                            (0..CHUNK).map(|i| f32::from_bits(first + i)).collect();
                        check_encode(&chunk);
                        c += u64::from(threads);
                    }
                });
            }
        });
    }

    #[test]
    fn the_warp_kernel_takes_ensembles_that_fit_a_warp_in_whole_warps() {
        for p in 2..=32u32 {
            for e in [1u32, 2, 3, 7, 31, 32, 33, 1000] {
                let l = PersistentLaunch::for_ensembles(p, e).expect("fits");
                assert_eq!(l.kernel, Kernel::Persistent2dWarp, "P = {p}");
                let w = p.next_power_of_two();
                assert_eq!(l.threads, l.group * w);
                assert_eq!(l.threads % 32, 0, "P = {p}, E = {e}: {l:?}");
                assert!(l.threads <= PERSISTENT_THREADS && l.shared_bytes == 0);
                // At least a warp, and no more ensembles a block than E rounded up to
                // whole warps.
                let per_warp = 32 / w;
                assert!(l.group >= per_warp && l.group <= e.div_ceil(per_warp) * per_warp);
            }
        }
        // P = 16: two ensembles a warp, 32 a block.
        let l = PersistentLaunch::for_ensembles(16, 4096).unwrap();
        assert_eq!((l.group, l.threads), (32, 512));
        // Larger P: the shared-memory kernel.
        let l = PersistentLaunch::for_ensembles(33, 100).unwrap();
        assert_eq!(l.kernel, Kernel::Persistent2d);
        assert_eq!(l.threads, l.group * 33);
        assert!(PersistentLaunch::for_ensembles(1, 1).is_none());
    }
}
