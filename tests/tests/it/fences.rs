//! The fences of the SASS counter's configuration bound hold only code that the paper's
//! 2D configuration never runs.
//!
//! `cuda/tests/sass_count.rs` bounds the warp instructions a persistent 2D kernel issues
//! per chain-step by counting every block the configuration can reach, leaving out the
//! code between `NRPT_OTHER_RULES();` and `// sass-count: other-rules end` (the
//! Metropolis test, SEO's parity, the in-place ladder, temperatures that follow the
//! ladder, momentum, SGD without noise, the SumModes target, the flag record). That is
//! sound only if the paper's configuration never enters a fence. The macro counts, in
//! the kernels' host build, the times the calling thread entered one; here the paper's
//! 2D experiment runs through the step, the team swap and the warp swap code of that
//! build, in both math modes, and must enter none. So that the check can fail, a
//! configuration with the Metropolis rule, momentum explorers at temperatures that
//! follow the ladder and SEO must enter them.

use nrpt_core::driver::Temperatures;
use nrpt_core::explore::Explorer;
use nrpt_core::swap::SwapRule;
use nrpt_core::window::Scheme;
use nrpt_cuda::host_math::{HostMath, other_rules_count};
use nrpt_sampling::config::RunConfig;
use nrpt_sampling::engine::{Job, Record};
use nrpt_tests::kernels::{self, KernelPath};

/// The paper's 2D experiment, small: 4 ensembles of 16 chains, 400 iterations.
fn paper() -> Job {
    let config = RunConfig {
        ensembles: 4,
        iterations: 400,
        ..RunConfig::default()
    };
    config
        .job(Record {
            thin: 0,
            warmup: 0,
            trace_every: 0,
            path_iterations: 0,
        })
        .expect("the paper's configuration")
}

/// Fenced code entered by the calling thread while `job` runs on `path` in `math`.
fn entered(job: &Job, path: KernelPath, math: HostMath) -> u64 {
    let before = other_rules_count(math);
    let _ = kernels::run_with(job, path, math);
    other_rules_count(math) - before
}

#[test]
fn the_papers_configuration_never_enters_a_fence() {
    let paper = paper();
    let mut other = paper.clone();
    other.options.rule = SwapRule::Metropolis;
    other.options.temperatures = Temperatures::FollowLadder;
    other.options.explorer = Explorer::MSGD;
    other.options.scheme = Scheme::Seo;
    for path in [
        KernelPath::StepSwap,
        KernelPath::Persistent,
        KernelPath::PersistentWarp,
    ] {
        for math in [HostMath::Exact, HostMath::Fast] {
            let n = entered(&paper, path, math);
            assert_eq!(
                n, 0,
                "{path:?}, {math:?}: the paper's configuration entered fenced code {n} times"
            );
            let n = entered(&other, path, math);
            assert!(
                n > 0,
                "{path:?}, {math:?}: Metropolis, momentum and SEO entered no fence: the \
                 count cannot see the fences"
            );
        }
    }
}
