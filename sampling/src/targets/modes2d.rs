//! The paper's 25-mode 2D target behind noise (`--target modes2d`, the default).

use std::sync::Arc;

use nrpt_core::target::{Modes2d, Noisy};

use super::{Builtin, Method, Toy};
use crate::engine::replica_lanes;
use nrpt_cuda::GpuTarget;

use crate::engine::{CudaTarget, Explore, Job, LaneGroup, Target};

/// `--target modes2d`.
pub const MODES2D: Builtin = Builtin {
    name: "modes2d",
    about: "the paper's 25-mode 2D target, seen through noise of scale --noise",
    method: Method::Sgd,
    keys: &["noise"],
    args: &[],
    defaults: |c| c,
    build: |c| Ok(Arc::new(Toy::modes2d(c.noise))),
};

impl Target for Toy<Modes2d> {
    type Oracle = Noisy<Modes2d>;

    fn name(&self) -> String {
        "modes2d".into()
    }

    fn dim(&self) -> usize {
        2
    }

    fn oracle(&self) -> Noisy<Modes2d> {
        self.noisy()
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({ "name": "modes2d", "noise": self.noise })
    }

    fn lane_group(&self) -> Option<LaneGroup> {
        Some(LaneGroup::Modes2d { noise: self.noise })
    }

    fn cuda(&self) -> Option<CudaTarget> {
        Some(CudaTarget::with_noise(GpuTarget::Modes2d, self.noise))
    }

    fn memory_per_thread(&self, job: &Job) -> u64 {
        // Lane groups where they apply (larger runs, see `CpuBackend`), the replica
        // lanes otherwise.
        let groups = if crate::engine::lockstep::applies(job) {
            crate::engine::lockstep::group_bytes(job.chains)
        } else {
            0
        };
        groups.max(replica_lanes::scratch_bytes(job))
    }

    fn fast_explore(&self, job: &Job) -> Option<Explore<Noisy<Modes2d>>> {
        replica_lanes::applies(job.options.explorer)
            .then_some(replica_lanes::explore::<Modes2d> as Explore<Noisy<Modes2d>>)
    }
}

