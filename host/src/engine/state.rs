//! A CPU run between two iterations, whole: what a checkpoint holds and what a resumed
//! run starts from. Every ensemble's buffers in nrpt-core's layout (by replica, by
//! level, by pair), its progress (iteration, buffer, totals) and what it has recorded.

use nrpt_core::driver::Progress;
use serde::{Deserialize, Serialize};

use super::EnsembleBuffers;
use super::record::Recorder;

/// One ensemble between iterations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnsembleState {
    /// Its buffers.
    pub buffers: EnsembleBuffers<f32>,
    /// Its progress.
    pub progress: Progress,
    /// What it has recorded so far.
    pub recorder: Recorder,
}

/// Every ensemble of a run after the same number of iterations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// Iterations done.
    pub iteration: u64,
    /// The ensembles, in order.
    pub ensembles: Vec<EnsembleState>,
}

impl RunState {
    /// Checks that this state belongs to a run of `chains` replicas in `dim` dimensions
    /// with `ensembles` ensembles (a checkpoint of another run is refused, not misread).
    pub fn check(&self, ensembles: usize, chains: usize, dim: usize) -> Result<(), String> {
        if self.ensembles.len() != ensembles {
            return Err(format!(
                "{} ensembles saved, the run has {ensembles}",
                self.ensembles.len()
            ));
        }
        for (e, s) in self.ensembles.iter().enumerate() {
            if s.progress.iteration != self.iteration {
                return Err(format!(
                    "ensemble {e} is at iteration {}, the run at {}",
                    s.progress.iteration, self.iteration
                ));
            }
            s.buffers
                .check_shape(chains, dim)
                .map_err(|m| format!("ensemble {e}: {m}"))?;
        }
        Ok(())
    }
}
