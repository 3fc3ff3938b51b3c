//! The D-dimensional sum of 5-mode profiles behind noise (`--target sum-modes`).

use std::sync::Arc;

use nrpt_core::target::{Noisy, SumModes};

use super::{Builtin, Method, Toy};
use crate::error::in_range;
use crate::limits::MAX_DIM;
use crate::engine::replica_lanes;
use nrpt_cuda::GpuTarget;

use crate::engine::{CudaTarget, Explore, Job, Target};

/// `--target sum-modes`.
pub const SUM_MODES: Builtin = Builtin {
    name: "sum-modes",
    about: "Σ_j 0.2 x_j² − 2 cos 2πx_j in --dim dimensions (5^D modes), seen through noise",
    method: Method::Sgd,
    keys: &["dim", "noise"],
    args: &[],
    defaults: |c| c,
    build: |c| {
        in_range("dim", c.dim, 1, MAX_DIM)?;
        Ok(Arc::new(Toy::sum_modes(c.dim, c.noise)))
    },
};

impl Target for Toy<SumModes> {
    type Oracle = Noisy<SumModes>;

    fn name(&self) -> String {
        "sum-modes".into()
    }

    fn dim(&self) -> usize {
        self.potential.dim
    }

    fn oracle(&self) -> Noisy<SumModes> {
        self.noisy()
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({ "name": "sum-modes", "dim": self.potential.dim, "noise": self.noise })
    }

    fn cuda(&self) -> Option<CudaTarget> {
        Some(CudaTarget::with_noise(
            GpuTarget::SumModes {
                dim: self.potential.dim,
            },
            self.noise,
        ))
    }

    fn memory_per_thread(&self, job: &Job) -> u64 {
        replica_lanes::scratch_bytes(job)
    }

    fn fast_explore(&self, job: &Job) -> Option<Explore<Noisy<SumModes>>> {
        replica_lanes::applies(job.options.explorer)
            .then_some(replica_lanes::explore::<SumModes> as Explore<Noisy<SumModes>>)
    }
}
