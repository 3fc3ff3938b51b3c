//! The exchange's state on the device, one layout for every engine (the toy targets'
//! [`GpuEnsembles`](crate::ensembles::GpuEnsembles) and the classifiers'
//! [`GpuMlp`](crate::mlp::GpuMlp)): energies, ladders, temperatures, the permutation,
//! trip states, gates, flags, per-pair and per-ensemble counts and the buffers C of E
//! ensembles of P chains, level-major within an ensemble, and the downloads that read
//! them back.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use nrpt_core::index::{IndexStats, PairStats};

use crate::error::{CudaError, driver};
use crate::params::Arrays;
use crate::snapshot::{EnsembleSnapshot, Snapshot};

/// Everything of E ensembles of P chains but the states and momenta.
#[derive(Debug)]
pub(crate) struct ExchangeState {
    ensembles: usize,
    chains: usize,
    pub(crate) energies: CudaSlice<f32>,
    pub(crate) ladder: CudaSlice<f64>,
    pub(crate) temps: CudaSlice<f64>,
    pub(crate) replica_at: CudaSlice<u32>,
    pub(crate) level_of: CudaSlice<u32>,
    pub(crate) trips: CudaSlice<u8>,
    pub(crate) gates: CudaSlice<u8>,
    pub(crate) flags: CudaSlice<u8>,
    /// Four counters of each pair ([`PairStats`]).
    pub(crate) pairs: CudaSlice<u64>,
    /// Buffer C of each ensemble.
    pub(crate) buffers: CudaSlice<f64>,
    /// Four counters of each ensemble ([`IndexStats`]).
    pub(crate) stats: CudaSlice<u64>,
}

/// The device address of `s`.
pub(crate) fn ptr<T>(stream: &CudaStream, s: &CudaSlice<T>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

impl ExchangeState {
    /// Zeroed buffers for `ensembles` × `chains` (chains ≥ 2, checked by the callers'
    /// configurations).
    pub(crate) fn zeros(
        s: &Arc<CudaStream>,
        ensembles: usize,
        chains: usize,
    ) -> Result<ExchangeState, CudaError> {
        let (n, np) = (ensembles * chains, ensembles * (chains - 1));
        let a = || driver("allocating the exchange's state");
        Ok(ExchangeState {
            ensembles,
            chains,
            energies: s.alloc_zeros::<f32>(n).map_err(a())?,
            ladder: s.alloc_zeros::<f64>(n).map_err(a())?,
            temps: s.alloc_zeros::<f64>(n).map_err(a())?,
            replica_at: s.alloc_zeros::<u32>(n).map_err(a())?,
            level_of: s.alloc_zeros::<u32>(n).map_err(a())?,
            trips: s.alloc_zeros::<u8>(n).map_err(a())?,
            gates: s.alloc_zeros::<u8>(np).map_err(a())?,
            flags: s.alloc_zeros::<u8>(np).map_err(a())?,
            pairs: s.alloc_zeros::<u64>(4 * np).map_err(a())?,
            buffers: s.alloc_zeros::<f64>(ensembles).map_err(a())?,
            stats: s.alloc_zeros::<u64>(4 * ensembles).map_err(a())?,
        })
    }

    /// The kernels' view of these buffers with the states and momenta at `states` and
    /// `momenta` (0: none).
    pub(crate) fn arrays(&self, s: &Arc<CudaStream>, states: u64, momenta: u64) -> Arrays {
        Arrays {
            states,
            momenta,
            energies: ptr(s, &self.energies),
            ladder: ptr(s, &self.ladder),
            temps: ptr(s, &self.temps),
            replica_at: ptr(s, &self.replica_at),
            level_of: ptr(s, &self.level_of),
            trips: ptr(s, &self.trips),
            gates: ptr(s, &self.gates),
            flags: ptr(s, &self.flags),
            pairs: ptr(s, &self.pairs),
            buffers: ptr(s, &self.buffers),
            stats: ptr(s, &self.stats),
        }
    }

    /// The levels (or replicas) of ensemble `ensemble`.
    pub(crate) fn level_range(&self, ensemble: usize) -> Result<Range<usize>, CudaError> {
        if ensemble >= self.ensembles {
            return Err(CudaError::NoSuchEnsemble {
                ensemble,
                count: self.ensembles,
            });
        }
        let p = self.chains;
        Ok(ensemble * p..(ensemble + 1) * p)
    }

    /// Level of each replica of ensemble `ensemble` (P values; one small download).
    pub(crate) fn levels(
        &self,
        s: &Arc<CudaStream>,
        ensemble: usize,
    ) -> Result<Vec<u32>, CudaError> {
        let lv = self.level_range(ensemble)?;
        s.clone_dtoh(&self.level_of.slice(lv))
            .map_err(driver("downloading levels"))
    }

    /// Learning rate of each level of ensemble `ensemble` (P values).
    pub(crate) fn ladder(
        &self,
        s: &Arc<CudaStream>,
        ensemble: usize,
    ) -> Result<Vec<f64>, CudaError> {
        let lv = self.level_range(ensemble)?;
        s.clone_dtoh(&self.ladder.slice(lv))
            .map_err(driver("downloading a ladder"))
    }

    /// Buffer C of every ensemble (E values).
    pub(crate) fn buffers(&self, s: &Arc<CudaStream>) -> Result<Vec<f64>, CudaError> {
        s.clone_dtoh(&self.buffers)
            .map_err(driver("downloading buffers"))
    }

    /// Round trips, restarts and non-finite energies of every ensemble (E values).
    pub(crate) fn index_stats(&self, s: &Arc<CudaStream>) -> Result<Vec<IndexStats>, CudaError> {
        let raw = s
            .clone_dtoh(&self.stats)
            .map_err(driver("downloading index statistics"))?;
        Ok(bytemuck::cast_slice(&raw).to_vec())
    }

    /// Counts of every pair, ensemble-major: pair q of ensemble e at `e·(P−1) + q`.
    pub(crate) fn pair_stats(&self, s: &Arc<CudaStream>) -> Result<Vec<PairStats>, CudaError> {
        let raw = s
            .clone_dtoh(&self.pairs)
            .map_err(driver("downloading pair counts"))?;
        Ok(bytemuck::cast_slice(&raw).to_vec())
    }

    /// Every ensemble's ladder, temperatures, buffer, counts, permutation, energies,
    /// trip states, flags and gates, at iteration `iteration`.
    pub(crate) fn snapshot(
        &self,
        s: &Arc<CudaStream>,
        iteration: u64,
    ) -> Result<Snapshot, CudaError> {
        let dl = || driver("downloading a snapshot");
        let ladder = s.clone_dtoh(&self.ladder).map_err(dl())?;
        let temps = s.clone_dtoh(&self.temps).map_err(dl())?;
        let at = s.clone_dtoh(&self.replica_at).map_err(dl())?;
        let of = s.clone_dtoh(&self.level_of).map_err(dl())?;
        let energies = s.clone_dtoh(&self.energies).map_err(dl())?;
        let trips = s.clone_dtoh(&self.trips).map_err(dl())?;
        let flags = s.clone_dtoh(&self.flags).map_err(dl())?;
        let gates = s.clone_dtoh(&self.gates).map_err(dl())?;
        let pairs = s.clone_dtoh(&self.pairs).map_err(dl())?;
        let buffers = s.clone_dtoh(&self.buffers).map_err(dl())?;
        let stats = s.clone_dtoh(&self.stats).map_err(dl())?;
        let pairs: &[PairStats] = bytemuck::cast_slice(&pairs);
        let stats: &[IndexStats] = bytemuck::cast_slice(&stats);
        let p = self.chains;
        let ensembles = (0..self.ensembles)
            .map(|e| {
                let lv = e * p..(e + 1) * p;
                let pr = e * (p - 1)..(e + 1) * (p - 1);
                EnsembleSnapshot {
                    ladder: ladder[lv.clone()].to_vec(),
                    temperatures: temps[lv.clone()].to_vec(),
                    buffer: buffers[e],
                    stats: stats[e],
                    pair_stats: pairs[pr.clone()].to_vec(),
                    replica_at: at[lv.clone()].to_vec(),
                    level_of: of[lv.clone()].to_vec(),
                    energies: energies[lv.clone()].to_vec(),
                    trips: trips[lv].to_vec(),
                    flags: flags[pr.clone()].to_vec(),
                    gates: gates[pr].to_vec(),
                }
            })
            .collect();
        Ok(Snapshot {
            iteration,
            ensembles,
        })
    }
}
