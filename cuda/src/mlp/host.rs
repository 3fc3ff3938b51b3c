//! The classifier kernels run on the CPU: `kernels/mlp.cuh` compiled for the host
//! (`cuda/csrc/mlp_host.cpp`, no FMA contraction), each block's phases run for every
//! thread in turn. [`HostMlp`] is a whole GPU run of [`GpuMlp`](super::GpuMlp) on the
//! CPU, array for array, so that tests compare the kernels' arithmetic with nrpt-core
//! without a GPU (and, on a GPU machine, the device with this). Test-only: this module
//! and the C++ it calls exist with the feature `host-shims`.

use nrpt_core::index::{IndexStats, PairStats};
use nrpt_core::model::DataView;

use super::params::{MlpArrays, MlpConfig, MlpParams, Start};
use crate::error::CudaError;
use crate::params::{Arrays, GpuParams, IterConsts};

mod ffi {
    unsafe extern "C" {
        pub fn nrpt_mlp_host_expf(x: f32) -> f32;
        pub fn nrpt_mlp_host_logf(x: f32) -> f32;
        pub fn nrpt_mlp_host_step_chain(
            p: *const super::MlpParams,
            k: u64,
            a: *const super::MlpArrays,
            c: u64,
            sm: *mut f32,
        ) -> f32;
        pub fn nrpt_mlp_host_evaluate(
            p: *const super::MlpParams,
            theta: *const f32,
            batch: *const u32,
            data_x: *const f32,
            data_y: *const u32,
            grad: *mut f32,
            sm: *mut f32,
        ) -> f32;
        pub fn nrpt_mlp_host_exchange(
            p: *const super::GpuParams,
            k: u64,
            ic: *const super::IterConsts,
            a: *const super::Arrays,
            record: *mut u8,
            e: u32,
        );
        pub fn nrpt_mlp_host_sizes(out: *mut u32);
    }
}

/// The kernels' `expf` (libm's, ported).
pub fn expf(x: f32) -> f32 {
    // SAFETY: a pure function of its argument.
    unsafe { ffi::nrpt_mlp_host_expf(x) }
}

/// The kernels' `logf` (libm's, ported).
pub fn logf(x: f32) -> f32 {
    // SAFETY: a pure function of its argument.
    unsafe { ffi::nrpt_mlp_host_logf(x) }
}

/// The C++ compiler's sizes of `NrptMlpLayer`, `NrptMlpParams`, `NrptMlpArrays`, and
/// the block sizes `NRPT_MLP_THREADS`, `NRPT_MLP_EXCHANGE_THREADS`.
pub fn sizes() -> [u32; 5] {
    let mut out = [0u32; 5];
    // SAFETY: writes five u32.
    unsafe { ffi::nrpt_mlp_host_sizes(out.as_mut_ptr()) };
    out
}

fn mismatch(name: &'static str, expected: usize, found: usize) -> CudaError {
    nrpt_core::Error::LengthMismatch {
        name,
        expected,
        found,
    }
    .into()
}

/// The energy of θ on the mini-batch `batch` (indices into the N examples of `x`,
/// `y`) and, with `grad`, its gradient (prior included), by the step kernel's own
/// phases: what `nrpt_core::model::mlp::energy` computes. `params` from
/// [`MlpConfig::params`] for this data; every length and index is checked.
pub fn evaluate(
    params: &MlpParams,
    theta: &[f32],
    batch: &[u32],
    x: &[f32],
    y: &[u32],
    grad: Option<&mut [f32]>,
) -> Result<f32, CudaError> {
    let (d, b, n) = (
        params.dim as usize,
        params.batch as usize,
        params.examples as usize,
    );
    if theta.len() != d {
        return Err(mismatch("theta", d, theta.len()));
    }
    if batch.len() != b {
        return Err(mismatch("batch", b, batch.len()));
    }
    if y.len() != n || x.len() != n * params.features as usize {
        return Err(mismatch("data", n, y.len()));
    }
    if batch.iter().any(|&i| i as usize >= n) || y.iter().any(|&c| c >= params.classes) {
        return Err(CudaError::Unsupported(
            "a batch index or label out of range".into(),
        ));
    }
    let gp = match grad {
        Some(g) if g.len() != d => return Err(mismatch("grad", d, g.len())),
        Some(g) => g.as_mut_ptr(),
        None => std::ptr::null_mut(),
    };
    // Shared memory starts as garbage on a GPU: NaN here, so that a result that read a
    // word before it was written could not match nrpt-core.
    let mut sm = vec![f32::NAN; params.sm_words as usize];
    // SAFETY: θ holds D values, the batch B indices below N, x N·F values and y N labels
    // below C (all checked above), grad D values or null, sm the layout's words; the
    // C++ code touches nothing else.
    Ok(unsafe {
        ffi::nrpt_mlp_host_evaluate(
            params,
            theta.as_ptr(),
            batch.as_ptr(),
            x.as_ptr(),
            y.as_ptr(),
            gp,
            sm.as_mut_ptr(),
        )
    })
}

/// A GPU run of the classifier, on the CPU: the arrays of [`GpuMlp`](super::GpuMlp)
/// in host memory, advanced by the kernels' code compiled for the host (every chain's
/// step, then every ensemble's exchange, iteration by iteration).
#[derive(Clone, Debug)]
pub struct HostMlp {
    params: MlpParams,
    exchange: GpuParams,
    config: MlpConfig,
    x: Vec<f32>,
    y: Vec<u32>,
    states: Vec<f32>,
    momenta: Vec<f32>,
    grad: Vec<f32>,
    energies: Vec<f32>,
    ladder: Vec<f64>,
    temps: Vec<f64>,
    replica_at: Vec<u32>,
    level_of: Vec<u32>,
    trips: Vec<u8>,
    gates: Vec<u8>,
    flags: Vec<u8>,
    pairs: Vec<PairStats>,
    buffers: Vec<f64>,
    stats: Vec<IndexStats>,
    sm: Vec<f32>,
    iteration: u64,
}

impl HostMlp {
    /// The run of `config` on `data` at iteration 0 ([`Start`]).
    pub fn new(
        config: &MlpConfig,
        data: &DataView<'_>,
        initial: Option<&[f32]>,
    ) -> Result<HostMlp, CudaError> {
        let params = config.params(data.len(), data.features(), data.classes())?;
        let exchange = config.exchange_params()?;
        let start = Start::new(config, initial)?;
        let (e, p) = (config.ensembles, config.chains);
        let momentum = config.options.explorer.has_momentum();
        Ok(HostMlp {
            params,
            exchange,
            config: *config,
            x: data.x().to_vec(),
            y: data.y().to_vec(),
            momenta: vec![0.0; if momentum { start.states.len() } else { 0 }],
            grad: vec![0.0; start.states.len()],
            states: start.states,
            energies: vec![0.0; e * p],
            ladder: start.ladder,
            temps: start.temps,
            replica_at: start.replica_at,
            level_of: start.level_of,
            trips: start.trips,
            gates: vec![1; e * (p - 1)],
            flags: vec![0; e * (p - 1)],
            pairs: vec![PairStats::default(); e * (p - 1)],
            buffers: start.buffers,
            stats: vec![IndexStats::default(); e],
            sm: vec![0.0; params.sm_words as usize],
            iteration: 0,
        })
    }

    fn step_arrays(&mut self) -> MlpArrays {
        let p = |v: *const u8| v as u64;
        MlpArrays {
            states: p(self.states.as_mut_ptr().cast()),
            momenta: if self.momenta.is_empty() {
                0
            } else {
                p(self.momenta.as_mut_ptr().cast())
            },
            grad: p(self.grad.as_mut_ptr().cast()),
            energies: p(self.energies.as_mut_ptr().cast()),
            ladder: p(self.ladder.as_ptr().cast()),
            temps: p(self.temps.as_ptr().cast()),
            level_of: p(self.level_of.as_ptr().cast()),
            data_x: p(self.x.as_ptr().cast()),
            data_y: p(self.y.as_ptr().cast()),
        }
    }

    fn exchange_arrays(&mut self) -> Arrays {
        let p = |v: *const u8| v as u64;
        Arrays {
            states: p(self.states.as_mut_ptr().cast()),
            momenta: if self.momenta.is_empty() {
                0
            } else {
                p(self.momenta.as_mut_ptr().cast())
            },
            energies: p(self.energies.as_mut_ptr().cast()),
            ladder: p(self.ladder.as_mut_ptr().cast()),
            temps: p(self.temps.as_mut_ptr().cast()),
            replica_at: p(self.replica_at.as_mut_ptr().cast()),
            level_of: p(self.level_of.as_mut_ptr().cast()),
            trips: p(self.trips.as_mut_ptr().cast()),
            gates: p(self.gates.as_mut_ptr().cast()),
            flags: p(self.flags.as_mut_ptr().cast()),
            pairs: p(self.pairs.as_mut_ptr().cast()),
            buffers: p(self.buffers.as_mut_ptr().cast()),
            stats: p(self.stats.as_mut_ptr().cast()),
        }
    }

    /// Runs `iterations` iterations: per iteration, the step of every chain (block c of
    /// `mlp_step`), then the exchange of every ensemble (block e of `mlp_exchange`).
    pub fn advance(&mut self, iterations: u64) {
        let (e, p) = (self.config.ensembles, self.config.chains);
        for _ in 0..iterations {
            let k = self.iteration;
            let a = self.step_arrays();
            for c in 0..(e * p) as u64 {
                // Shared memory starts as garbage (see `evaluate`).
                self.sm.fill(f32::NAN);
                // SAFETY: `a` points into this run's arrays, which hold E·P chains of D
                // values (states, momenta unless null, grad), E·P levels and the data
                // set of `params`; sm holds the layout's words. Nothing else is touched.
                unsafe {
                    ffi::nrpt_mlp_host_step_chain(&self.params, k, &a, c, self.sm.as_mut_ptr())
                };
            }
            let ic = IterConsts::at(&self.config.options, k);
            let a = self.exchange_arrays();
            for ens in 0..e as u32 {
                // SAFETY: `a` points into this run's arrays: E·P levels and replicas,
                // E·(P−1) pairs, E buffers and stats, E·P·D momenta (or null); no record.
                unsafe {
                    ffi::nrpt_mlp_host_exchange(
                        &self.exchange,
                        k,
                        &ic,
                        &a,
                        std::ptr::null_mut(),
                        ens,
                    )
                };
            }
            self.iteration += 1;
        }
    }

    /// The step kernel's parameter block.
    pub fn params(&self) -> &MlpParams {
        &self.params
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// States, chain-major (chain c = e·P + r at `[c·D, (c + 1)·D)`).
    pub fn states(&self) -> &[f32] {
        &self.states
    }

    /// Momenta, chain-major (empty for Langevin explorers).
    pub fn momenta(&self) -> &[f32] {
        &self.momenta
    }

    /// Energies by level, `[e·P + level]`.
    pub fn energies(&self) -> &[f32] {
        &self.energies
    }

    /// Ladders by level, `[e·P + level]`.
    pub fn ladder(&self) -> &[f64] {
        &self.ladder
    }

    /// Temperatures by level.
    pub fn temperatures(&self) -> &[f64] {
        &self.temps
    }

    /// Replica at each level, `[e·P + level]`.
    pub fn replica_at(&self) -> &[u32] {
        &self.replica_at
    }

    /// Level of each replica, `[e·P + replica]`.
    pub fn level_of(&self) -> &[u32] {
        &self.level_of
    }

    /// Trip states, `[e·P + replica]`.
    pub fn trips(&self) -> &[u8] {
        &self.trips
    }

    /// Gates (1 open), `[e·(P−1) + pair]`.
    pub fn gates(&self) -> &[u8] {
        &self.gates
    }

    /// Flags of the last sweep, `[e·(P−1) + pair]`.
    pub fn flags(&self) -> &[u8] {
        &self.flags
    }

    /// Pair counts, `[e·(P−1) + pair]`.
    pub fn pair_stats(&self) -> &[PairStats] {
        &self.pairs
    }

    /// Buffer C of each ensemble.
    pub fn buffers(&self) -> &[f64] {
        &self.buffers
    }

    /// Round trips, restarts and non-finite energies of each ensemble.
    pub fn index_stats(&self) -> &[IndexStats] {
        &self.stats
    }
}
