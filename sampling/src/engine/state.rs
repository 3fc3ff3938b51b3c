//! A CPU run between two iterations, whole: what a checkpoint holds and what a resumed
//! run starts from. Every ensemble's buffers in nrpt-core's layout (by replica, by
//! level, by pair), its progress (iteration, buffer, totals) and what it has recorded.

use nrpt_core::driver::Progress;
use serde::{Deserialize, Serialize};

use super::record::Recorder;
use super::{EnsembleBuffers, Job};

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

/// A saved ensemble on its way to the engine task that resumes it: moved there, not
/// copied, so that a resumed run holds its states and records once.
#[derive(Debug)]
pub struct Handoff(std::sync::Mutex<Option<EnsembleState>>);

impl Handoff {
    /// Every ensemble of `state`, each ready to be taken once.
    pub fn all(state: RunState) -> Vec<Handoff> {
        state
            .ensembles
            .into_iter()
            .map(|s| Handoff(std::sync::Mutex::new(Some(s))))
            .collect()
    }

    /// The ensemble; `None` once taken.
    pub fn take(&self) -> Option<EnsembleState> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Saved ensemble `i` of `saved`, moved out: an error when it is missing or was
    /// taken already.
    pub(crate) fn take_from(
        saved: &[Handoff],
        i: usize,
    ) -> Result<EnsembleState, super::EngineError> {
        saved
            .get(i)
            .and_then(Handoff::take)
            .ok_or_else(|| super::EngineError::Backend {
                backend: "cpu",
                message: format!("saved ensemble {i} is missing or was taken twice"),
            })
    }
}

impl RunState {
    /// Checks that this state belongs to `job` and can be run on (a checkpoint of another
    /// run, or one edited by hand, is refused, never misread): the iteration within the
    /// run, every buffer's length, the permutation of replicas, the ladder, the
    /// temperatures and the buffer C, and every record's length and iterations.
    pub fn check(&self, job: &Job) -> Result<(), String> {
        let (chains, dim) = (job.chains, job.target.dim());
        if self.iteration > job.iterations {
            return Err(format!(
                "it holds iteration {}, past the run's {} iterations",
                self.iteration, job.iterations
            ));
        }
        if self.ensembles.len() != job.ensembles {
            return Err(format!(
                "{} ensembles saved, the run has {}",
                self.ensembles.len(),
                job.ensembles
            ));
        }
        let momentum = job.options.explorer.has_momentum();
        for (e, s) in self.ensembles.iter().enumerate() {
            let at = |m: String| format!("ensemble {e}: {m}");
            if s.progress.iteration != self.iteration {
                return Err(at(format!(
                    "at iteration {}, the run at {}",
                    s.progress.iteration, self.iteration
                )));
            }
            let b = &s.buffers;
            b.check_shape(chains, dim).map_err(at)?;
            if momentum && b.momenta.len() != chains * dim {
                return Err(at(format!(
                    "momenta hold {} values, the run needs {}",
                    b.momenta.len(),
                    chains * dim
                )));
            }
            // level_of[replica_at[l]] == l for every l: a permutation and its inverse.
            if let Some((l, &r)) = b.replica_at.iter().enumerate().find(|&(l, &r)| {
                b.level_of
                    .get(r as usize)
                    .is_none_or(|&back| back as usize != l)
            }) {
                return Err(at(format!(
                    "level {l} holds replica {r}: not a permutation of the {chains} replicas"
                )));
            }
            if let Some(eta) = b.ladder.iter().find(|e| !(e.is_finite() && **e > 0.0)) {
                return Err(at(format!("learning rate {eta} (must be finite and > 0)")));
            }
            if let Some(t) = b
                .temperatures
                .iter()
                .find(|t| !(t.is_finite() && **t >= 0.0))
            {
                return Err(at(format!("temperature {t} (must be finite and >= 0)")));
            }
            if !s.progress.buffer.is_finite() {
                return Err(at(format!("buffer C = {}", s.progress.buffer)));
            }
            s.recorder
                .check(job, job.first_ensemble() + e, self.iteration)
                .map_err(|m| at(format!("records: {m}")))?;
        }
        Ok(())
    }
}
