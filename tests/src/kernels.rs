//! A [`Job`] run through the CUDA kernels' own per-thread code, compiled for the host
//! (`nrpt_cuda::host_math`, from the same `kernels/*.cuh` headers): every replica's step
//! and every ensemble's swap-and-adapt phase driven exactly as the launchers drive them,
//! recorded as the CPU engine records. No GPU and no CUDA library is needed.
//!
//! What is emulated and what is not:
//! - the configuration is the CUDA engine's own ([`kernel_config`]), so a job reaches the
//!   kernels' arithmetic with the parameters a GPU run would get;
//! - the step is `step_2d` (D = 2), `step_seq` (D ≤ [`SEQ_MAX_DIM`]) or the block step
//!   in the launcher's shape (larger D), or for a target with its own CUDA source
//!   `step_source` with the target's code, compiled by the system's C++ compiler
//!   ([`SourceHost`]); the [`KernelPath::Persistent`] path runs the
//!   persistent 2D kernel's step with its kept sines, its momentum reset in registers
//!   and its swap phase's team steps backwards (the GPU's lanes may take them in any
//!   order);
//! - the initial states come from the CPU engine's initialization (the init kernel's
//!   arithmetic is checked on a GPU, `cuda/tests/gpu.rs`); the ladder and temperatures
//!   are what the CUDA engine uploads ([`EnsembleConfig::initial_levels`]).

use nrpt_core::driver::Progress;
use nrpt_core::index::{IndexStats, PairStats};
use nrpt_core::params::adapt_flags;
use nrpt_cuda::ensembles::{SEQ_MAX_DIM, persistent_group};
use nrpt_cuda::host_math::{self as hm, EnsembleArrays, HostMath, StepInput};
use nrpt_cuda::params::{BlockShape, GpuParams, IterConsts};
use nrpt_cuda::{EnsembleConfig, GpuTarget};
use nrpt_sampling::engine::cpu::{CpuBackend, Simd};
use nrpt_sampling::engine::cuda::{kernel_config, kernel_unsupported};
use nrpt_sampling::engine::state::{EnsembleState, RunState};
use nrpt_sampling::engine::{Job, Observed, unobserved};

use crate::Run;
use crate::source_host::SourceHost;

/// Which kernels' handling of an iteration the emulation follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelPath {
    /// A step kernel, then `swap_adapt`, which zeroes the momenta of swapped replicas
    /// in memory (`nrpt_zero_swapped_momenta`).
    StepSwap,
    /// `persistent_2d`: the sines of each state kept in registers from the last
    /// energy; after the swap phase every thread whose replica swapped zeroes its
    /// velocity registers (`nrpt_swapped_at_level`).
    Persistent,
    /// `persistent_2d_warp` (P ≤ 32): the same step, then the warp-wide swap phase of
    /// `nrpt_warp_exchange` (kernels/warp_swap.cuh) with its shuffles emulated lane
    /// by lane, the replicas' registers moved with their swaps and the momentum reset
    /// in it.
    PersistentWarp,
}

impl KernelPath {
    /// A short name for the matrix's columns.
    pub fn label(self) -> &'static str {
        match self {
            KernelPath::StepSwap => "kernels: step + swap",
            KernelPath::Persistent => "kernels: persistent 2D",
            KernelPath::PersistentWarp => "kernels: persistent 2D warp",
        }
    }
}

/// Why the kernels cannot run `job` on `path`, or `None`: the CUDA engine's own
/// refusals, then the persistent kernel's conditions (D = 2, an ensemble that fits a
/// block).
pub fn unsupported(job: &Job, path: KernelPath) -> Option<String> {
    if let Some(why) = kernel_unsupported(job) {
        return Some(why);
    }
    let config = kernel_config(job)?;
    if let Err(e) = config.params() {
        return Some(e.to_string());
    }
    let fits = persistent_group(job.chains as u32, job.ensembles as u32).is_some();
    let persistent = matches!(path, KernelPath::Persistent | KernelPath::PersistentWarp);
    match path {
        KernelPath::PersistentWarp if job.chains > 32 => Some(format!(
            "the warp-wide swap phase takes P ≤ 32, not P = {}",
            job.chains
        )),
        _ if persistent && matches!(config.target, GpuTarget::Source { .. }) => Some(
            "the persistent kernel runs the built-in 2D targets only, not a target's own \
             CUDA source"
                .to_string(),
        ),
        _ if persistent && job.target.dim() != 2 => {
            Some("the persistent kernel is for D = 2 only".to_string())
        }
        _ if persistent && !fits => Some(format!(
            "an ensemble of P = {} does not fit a persistent block",
            job.chains
        )),
        _ => None,
    }
}

/// Runs `job` through the kernels' host-compiled code on `path` (exact mode: the GPU's
/// bits).
///
/// Panics where [`unsupported`] gives a reason.
pub fn run(job: &Job, path: KernelPath) -> Run {
    run_with(job, path, HostMath::Exact)
}

/// Runs `job` through the kernels' host-compiled code on `path` in the build `math`:
/// [`HostMath::Fast`] is `MathMode::Fast`'s code with the GPU's approximate
/// instructions emulated (`nrpt_cuda::host_math::HostMath`), for the statistics of fast
/// mode without a GPU.
///
/// Panics where [`unsupported`] gives a reason, and for a target with its own CUDA
/// source in fast mode (its host build is exact mode's only).
pub fn run_with(job: &Job, path: KernelPath, math: HostMath) -> Run {
    if let Some(why) = unsupported(job, path) {
        panic!("the kernels cannot run this job: {why}");
    }
    let config = kernel_config(job).expect("a target with CUDA kernels");
    assert!(
        math == HostMath::Exact || !matches!(config.target, GpuTarget::Source { .. }),
        "a target's own CUDA source runs on the host in exact mode only"
    );
    let params = config.params().expect("parameters the kernels accept");
    // A target with its own CUDA source: its step compiled for the host, once per job.
    let mut source = match &config.target {
        GpuTarget::Source { source, .. } => Some(
            SourceHost::start(source, &params)
                .unwrap_or_else(|e| panic!("the source step for the host: {e}")),
        ),
        _ => None,
    };
    // The CPU engine's initialization of every ensemble (no iteration run).
    let start = CpuBackend {
        threads: Some(1),
        simd: Simd::Scalar,
        fast_math: false,
    }
    .run_from(job, None, 0, &unobserved)
    .expect("the job initializes");
    let ensembles = start
        .ensembles
        .into_iter()
        .enumerate()
        .map(|(e, s)| run_ensemble(job, &config, &params, path, math, e, s, source.as_mut()))
        .collect();
    let mut run = Run::finished(
        job,
        RunState {
            iteration: job.iterations,
            ensembles,
        },
    );
    run.output.backend = match math {
        HostMath::Exact => path.label().to_string(),
        HostMath::Fast => format!("{} (fast math, emulated)", path.label()),
    };
    run
}

/// Ensemble `e` from its initial state `s` to the end of the job, recorded.
#[allow(clippy::too_many_arguments)]
fn run_ensemble(
    job: &Job,
    config: &EnsembleConfig,
    params: &GpuParams,
    path: KernelPath,
    math: HostMath,
    e: usize,
    mut s: EnsembleState,
    mut source: Option<&mut SourceHost>,
) -> EnsembleState {
    let mut emu = Emulated::new(config, *params, path, math, e, &mut s);
    let rec = job.record;
    for k in 0..job.iterations {
        emu.iterate(source.as_deref_mut());
        s.recorder.observe(rec, k, &emu);
    }
    emu.store(&mut s);
    s
}

/// The emulated ensemble, as the engines' recorder reads it.
impl Observed for Emulated {
    fn ladder(&self) -> Vec<f64> {
        self.ladder.clone()
    }
    fn buffer(&self) -> f64 {
        self.buffer
    }
    fn stats(&self) -> IndexStats {
        self.stats
    }
    fn indicators(&self, pair: usize) -> u64 {
        self.pairs[pair].indicators
    }
    fn level_of(&self) -> Vec<u32> {
        self.of.clone()
    }
    fn push_target(&self, samples: &mut Vec<f32>) {
        let r = self.at[0] as usize;
        samples.extend_from_slice(&self.states[r * self.dim..(r + 1) * self.dim]);
    }
}

/// The GPU's arrays of one ensemble, on the host.
struct Emulated {
    params: GpuParams,
    options: nrpt_core::TemperingOptions,
    path: KernelPath,
    /// Exact mode's build of the kernels' code or fast mode's.
    math: HostMath,
    key: u32,
    dim: usize,
    /// The block step's shape where the launcher uses the block kernel.
    block: Option<BlockShape>,
    states: Vec<f32>,
    /// persistent_2d's registers: sin 2πx of each replica's two coordinates, kept from
    /// the last energy.
    sines: Vec<[f32; 2]>,
    momenta: Vec<f32>,
    energies: Vec<f32>,
    ladder: Vec<f64>,
    temps: Vec<f64>,
    at: Vec<u32>,
    of: Vec<u32>,
    trips: Vec<u8>,
    gates: Vec<u8>,
    flags: Vec<u8>,
    pairs: Vec<PairStats>,
    buffer: f64,
    stats: IndexStats,
    k: u64,
}

impl Emulated {
    /// The arrays of ensemble `e` as the CUDA engine fills them before its first
    /// iteration: the states from `s`, the ladder, temperatures and buffer uploaded.
    fn new(
        config: &EnsembleConfig,
        params: GpuParams,
        path: KernelPath,
        math: HostMath,
        e: usize,
        s: &mut EnsembleState,
    ) -> Self {
        let dim = config.target.dim();
        let (ladder, temps) = config.initial_levels().expect("valid options");
        let b = s.buffers.lend();
        let states = b.states.to_vec();
        Emulated {
            params,
            options: config.options,
            path,
            math,
            // Ensemble e of a launch draws with key word options.ensemble + e.
            key: config.options.ensemble + e as u32,
            dim,
            block: (dim > SEQ_MAX_DIM)
                .then(|| BlockShape::for_dim(dim).expect("a block shape for this D")),
            // Computed once after the load, as the persistent kernel does.
            sines: states
                .chunks(dim)
                .map(|x| {
                    if dim == 2 {
                        hm::sines_in(math, [x[0], x[1]])
                    } else {
                        [0.0; 2]
                    }
                })
                .collect(),
            states,
            momenta: b.momenta.to_vec(),
            energies: b.energies.to_vec(),
            ladder,
            temps,
            at: b.replica_at.to_vec(),
            of: b.level_of.to_vec(),
            trips: b.trips.to_vec(),
            gates: b.gates.iter().map(|&g| u8::from(g)).collect(),
            flags: b.flags.to_vec(),
            pairs: b.pair_stats.to_vec(),
            buffer: config.options.initial_buffer,
            stats: IndexStats::default(),
            k: 0,
        }
    }

    /// One iteration: every replica's step, then the swap-and-adapt phase and the
    /// momentum reset of the path's kernels.
    fn iterate(&mut self, mut source: Option<&mut SourceHost>) {
        let p = self.energies.len();
        let d = self.dim;
        for r in 0..p {
            let level = self.of[r] as usize;
            let input = StepInput {
                ensemble_key: self.key,
                iteration: self.k,
                replica: r as u32,
                eta: self.ladder[level],
                temperature: self.temps[level],
            };
            let x = &mut self.states[r * d..(r + 1) * d];
            let v: &mut [f32] = if self.momenta.is_empty() {
                &mut []
            } else {
                &mut self.momenta[r * d..(r + 1) * d]
            };
            self.energies[level] = if let Some(host) = source.as_deref_mut() {
                // step_source, any D up to nrpt_cuda::source::MAX_DIM.
                host.step(&input, x, v)
            } else {
                match (self.block, self.path, d) {
                    (Some(shape), _, _) => {
                        hm::chain_step_block_in(self.math, &self.params, &input, shape, x, v)
                    }
                    // persistent_2d: the sines come from the last energy.
                    (None, KernelPath::Persistent | KernelPath::PersistentWarp, 2) => {
                        let mut xr = [x[0], x[1]];
                        let mut vr = if v.is_empty() { [0.0; 2] } else { [v[0], v[1]] };
                        let e = hm::chain_step_2d_sin_in(
                            self.math,
                            &self.params,
                            &input,
                            &mut xr,
                            &mut vr,
                            &mut self.sines[r],
                        );
                        x.copy_from_slice(&xr);
                        if !v.is_empty() {
                            v.copy_from_slice(&vr);
                        }
                        e
                    }
                    _ => hm::chain_step_in(self.math, &self.params, &input, x, v),
                }
            };
        }
        let ic = IterConsts::at(&self.options, self.k);
        if self.path == KernelPath::PersistentWarp {
            // persistent_2d_warp: the whole exchange, momentum reset included, in the
            // lanes' registers.
            hm::warp_exchange_in(
                self.math,
                &self.params,
                self.key,
                self.k,
                &ic,
                EnsembleArrays {
                    energies: &mut self.energies,
                    ladder: &mut self.ladder,
                    temps: &mut self.temps,
                    replica_at: &mut self.at,
                    level_of: &mut self.of,
                    trips: &mut self.trips,
                    gates: &mut self.gates,
                    flags: &mut self.flags,
                    pairs: &mut self.pairs,
                    stride: 1,
                    buffer: &mut self.buffer,
                    stats: &mut self.stats,
                },
                hm::WarpReplicas {
                    states: &mut self.states,
                    momenta: &mut self.momenta,
                    sines: self.sines.as_flattened_mut(),
                },
                None,
            );
            self.k += 1;
            return;
        }
        hm::swap_and_adapt_ordered_in(
            self.math,
            &self.params,
            self.key,
            self.k,
            &ic,
            EnsembleArrays {
                energies: &mut self.energies,
                ladder: &mut self.ladder,
                temps: &mut self.temps,
                replica_at: &mut self.at,
                level_of: &mut self.of,
                trips: &mut self.trips,
                gates: &mut self.gates,
                flags: &mut self.flags,
                pairs: &mut self.pairs,
                stride: 1,
                buffer: &mut self.buffer,
                stats: &mut self.stats,
            },
            self.path == KernelPath::Persistent,
        );
        if !self.momenta.is_empty() {
            match self.path {
                // swap_adapt: after nrpt_swap_and_adapt, when a.momenta is set.
                KernelPath::StepSwap => hm::zero_swapped_momenta(
                    &self.params,
                    &mut self.at,
                    &mut self.flags,
                    &mut self.momenta,
                ),
                // persistent_2d: thread (g, r) after the barrier that ends the swap phase.
                KernelPath::Persistent | KernelPath::PersistentWarp => {
                    let carry = self.params.core.adapt_flags & adapt_flags::MOMENTUM_CARRY != 0;
                    for r in 0..p {
                        if !carry && hm::swapped_at_level(&self.flags, 1, self.of[r], p as u32) {
                            self.momenta[r * d..(r + 1) * d].fill(0.0);
                        }
                    }
                }
            }
        }
        self.k += 1;
    }

    /// Writes the arrays back into the CPU engine's state of the ensemble (what the
    /// CUDA engine downloads), for a comparison of everything.
    fn store(&self, s: &mut EnsembleState) {
        let b = s.buffers.lend();
        b.states.copy_from_slice(&self.states);
        b.momenta.copy_from_slice(&self.momenta);
        b.energies.copy_from_slice(&self.energies);
        b.ladder.copy_from_slice(&self.ladder);
        b.temperatures.copy_from_slice(&self.temps);
        b.replica_at.copy_from_slice(&self.at);
        b.level_of.copy_from_slice(&self.of);
        b.trips.copy_from_slice(&self.trips);
        for (g, &open) in b.gates.iter_mut().zip(&self.gates) {
            *g = open != 0;
        }
        b.flags.copy_from_slice(&self.flags);
        b.pair_stats.copy_from_slice(&self.pairs);
        s.progress = Progress {
            iteration: self.k,
            buffer: self.buffer,
            stats: self.stats,
        };
    }
}
