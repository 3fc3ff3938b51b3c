//! One parity matrix: every row (a target, an explorer, a set of rules, a swap scheme,
//! P chains and E ensembles) is one `nrpt_sampling::engine::Job`, run by every engine path of this
//! machine and compared with nrpt-core's scalar driver bit for bit: final buffers of
//! every ensemble, samples, traces, index paths, ladders, buffers and counts.
//!
//! Columns (the reference is the first):
//! - `core`: `CpuBackend { simd: Simd::Scalar }`, nrpt-core's `Tempering` for every
//!   ensemble, one thread;
//! - `lanes: AVX-512`, `lanes: AVX2`, `lanes: portable`: the CPU engine's vectorized
//!   paths restricted to that instruction set, two threads: 32 ensembles in lanes
//!   (`lockstep.rs`, the 2D toy under the paper's rules with E ≥ 16) or 16 replicas of
//!   one ensemble in lanes (`replica_lanes.rs`, any noisy `LanePotential`); a row that
//!   neither path takes runs nrpt-core's driver there too. An instruction set this
//!   processor lacks is skipped, and the test says so on stderr;
//! - `kernels: step + swap`, `kernels: persistent 2D`, `kernels: persistent 2D warp`:
//!   the CUDA kernels' per-thread code compiled for the host (`nrpt_tests::kernels`;
//!   the warp kernel's swap phase, `nrpt_warp_exchange`, run lane by lane with its
//!   shuffles emulated), where the kernels implement the row (the CUDA engine's own
//!   refusals: targets without CUDA kernels, the authors' fresh energies and sequential
//!   pass; the persistent kernels: the built-in targets at D = 2 only; the warp
//!   kernel: P ≤ 32). A target with its own CUDA source (`mixture`) runs the
//!   source step with its code compiled by the system's C++ compiler.
//!
//! A failure names the row, the column and the first value that differs (the first
//! sample that differs, which says at which iteration the runs parted, else the final
//! state or output). The rows are small (a few hundred iterations). CI runs them in the
//! `ci` profile (`scripts/test.sh`: optimized as the release build, with debug
//! assertions), so the vectorized paths are compiled as users get them.

use std::collections::BTreeMap;
use std::sync::Arc;

use nrpt_core::adapt::AdaptOptions;
use nrpt_core::driver::{InitialStates, Temperatures, TemperingOptions};
use nrpt_core::explore::Explorer;
use nrpt_core::rules::{BufferProjection, InitialLadder, LadderUpdate, MomentumOnSwap, Rules};
use nrpt_core::swap::SwapRule;
use nrpt_core::window::Scheme;
use nrpt_sampling::config::RunConfig;
use nrpt_sampling::config::TargetName;
use nrpt_sampling::engine::cpu::Simd;
use nrpt_sampling::engine::{AnyTarget, Job, Record, RunOutput};
use nrpt_sampling::targets::Toy;
use nrpt_tests::kernels::{self, KernelPath};
use nrpt_tests::{Run, cpu, first_difference, note, simd_columns};

// ---------------------------------------------------------------------------------
// The axes of the matrix.

/// What is sampled.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The paper's 25-mode 2D toy behind noise of this scale (0: exact).
    Modes2d { noise: f64 },
    /// The 2D toy started uniformly in [−3, 0.5)², across the wall at |x|² = 20.
    Modes2dWideStart,
    /// The sum of 5-mode profiles in D dimensions behind noise 2, learning rates from
    /// 0.001 to 0.05.
    SumModes { dim: usize },
    /// `--target mixture` in D dimensions (two components), built from a configuration
    /// as the command builds it; its kernels are its own CUDA source.
    Mixture { dim: usize },
}

impl Target {
    fn label(self) -> String {
        match self {
            Target::Modes2d { noise: 0.0 } => "modes2d exact".into(),
            Target::Modes2d { .. } => "modes2d".into(),
            Target::Modes2dWideStart => "modes2d from [-3, 0.5)²".into(),
            Target::SumModes { dim } => format!("sum-modes D={dim}"),
            Target::Mixture { dim } => format!("mixture D={dim}"),
        }
    }

    fn build(self) -> Arc<dyn AnyTarget> {
        match self {
            Target::Modes2d { noise } => Arc::new(Toy::modes2d(noise)),
            Target::Modes2dWideStart => Arc::new(Toy::modes2d(2.0)),
            Target::SumModes { dim } => Arc::new(Toy::sum_modes(dim, 2.0)),
            Target::Mixture { dim } => {
                let config = RunConfig {
                    target: TargetName::new("mixture"),
                    dim,
                    ..RunConfig::default()
                };
                config
                    .job(Record::NOTHING)
                    .expect("a valid configuration")
                    .target
            }
        }
    }

    fn tune(self, o: &mut TemperingOptions) {
        match self {
            Target::Modes2dWideStart => {
                o.init = InitialStates::Uniform {
                    low: -3.0,
                    high: 0.5,
                };
            }
            Target::SumModes { .. } => {
                o.ladder_min = 0.001;
                o.ladder_max = 0.05;
            }
            Target::Modes2d { .. } | Target::Mixture { .. } => {}
        }
    }
}

/// A named change of the options: an explorer or a set of rules.
#[derive(Clone, Copy)]
struct Variant {
    label: &'static str,
    apply: fn(&mut TemperingOptions),
}

// Explorers.
const SGD: Variant = Variant {
    label: "SGD",
    apply: |_| {},
};
const SGLD: Variant = Variant {
    label: "SGLD, T follows η",
    apply: |o| o.temperatures = Temperatures::FollowLadder,
};
const SGLD_GEOMETRIC: Variant = Variant {
    label: "SGLD, T geometric to 30",
    apply: |o| o.temperatures = Temperatures::Geometric { max: 30.0 },
};
const MSGD: Variant = Variant {
    label: "mSGD",
    apply: |o| o.explorer = Explorer::MSGD,
};
const MSGD_WARM: Variant = Variant {
    label: "mSGD, T = 0.5",
    apply: |o| {
        o.explorer = Explorer::MSGD;
        o.temperatures = Temperatures::Constant(0.5);
    },
};
const MOMENTUM_HOT: Variant = Variant {
    label: "momentum 0.5, T = 0.3",
    apply: |o| {
        o.explorer = Explorer::Momentum { momentum: 0.5 };
        o.temperatures = Temperatures::Constant(0.3);
    },
};

// Rules.
const PAPER: Variant = Variant {
    label: "paper",
    apply: |_| {},
};
const AUTHORS: Variant = Variant {
    label: "authors' code",
    apply: |o| o.rules = Rules::AUTHORS_CODE,
};
const METROPOLIS: Variant = Variant {
    label: "Metropolis",
    apply: |o| o.rule = SwapRule::Metropolis,
};
const IN_PLACE: Variant = Variant {
    label: "ladder in place",
    apply: |o| o.rules.ladder_update = LadderUpdate::InPlace,
};
const UNPROJECTED: Variant = Variant {
    label: "buffer unprojected",
    apply: |o| o.rules.buffer_projection = BufferProjection::Unprojected,
};
const ROUNDED: Variant = Variant {
    label: "ladder rounded",
    apply: |o| {
        o.rules.initial_ladder = InitialLadder::RoundedGeometric {
            decimals: 3,
            unit: 1,
        }
    },
};
const KERNEL_VARIANTS: Variant = Variant {
    label: "in place + unprojected + rounded",
    apply: |o| {
        o.rules.ladder_update = LadderUpdate::InPlace;
        o.rules.buffer_projection = BufferProjection::Unprojected;
        o.rules.initial_ladder = InitialLadder::RoundedGeometric {
            decimals: 3,
            unit: 1,
        };
    },
};
const CARRY: Variant = Variant {
    label: "momentum carried",
    apply: |o| o.rules.momentum_on_swap = MomentumOnSwap::Carry,
};
/// From C = 0 with a target rate above what the toy reaches: the buffer is driven
/// down, below zero where it is not projected.
const FROM_ZERO: Variant = Variant {
    label: "C₀ = 0, S = 0.9",
    apply: |o| {
        o.initial_buffer = 0.0;
        o.adapt = AdaptOptions {
            target_swap_rate: 0.9,
            ..o.adapt
        };
    },
};
const FROM_ZERO_UNPROJECTED: Variant = Variant {
    label: "C₀ = 0, S = 0.9, unprojected",
    apply: |o| {
        (FROM_ZERO.apply)(o);
        o.rules.buffer_projection = BufferProjection::Unprojected;
    },
};

const fn deo(window: u32) -> Scheme {
    Scheme::Deo { window }
}
const SEO: Scheme = Scheme::Seo;

/// A check of the reference run beyond parity.
type Expect = fn(&RunOutput) -> Result<(), String>;

/// One row of the matrix.
#[derive(Clone, Copy)]
struct Row {
    target: Target,
    explorer: Variant,
    rules: Variant,
    scheme: Scheme,
    chains: usize,
    ensembles: usize,
    iterations: u64,
    expect: Option<Expect>,
}

#[allow(clippy::too_many_arguments)]
const fn row(
    target: Target,
    explorer: Variant,
    rules: Variant,
    scheme: Scheme,
    chains: usize,
    ensembles: usize,
    iterations: u64,
) -> Row {
    Row {
        target,
        explorer,
        rules,
        scheme,
        chains,
        ensembles,
        iterations,
        expect: None,
    }
}

impl Row {
    fn name(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Deo { window } => format!("DEO W={window}"),
            Scheme::Seo => "SEO".into(),
        };
        format!(
            "{} | {} | {} | {scheme} | P={} E={} n={}",
            self.target.label(),
            self.explorer.label,
            self.rules.label,
            self.chains,
            self.ensembles,
            self.iterations
        )
    }

    fn job(&self) -> Job {
        let mut options = TemperingOptions {
            scheme: self.scheme,
            seed: 77,
            ..TemperingOptions::default()
        };
        self.target.tune(&mut options);
        (self.explorer.apply)(&mut options);
        (self.rules.apply)(&mut options);
        Job {
            record: Record {
                thin: 1,
                warmup: 5,
                trace_every: 25,
                path_iterations: 60,
            },
            ..Job::new(
                self.target.build(),
                options,
                self.chains,
                self.ensembles,
                self.iterations,
            )
        }
    }
}

const MODES2D: Target = Target::Modes2d { noise: 2.0 };

// ---------------------------------------------------------------------------------
// Running the matrix.

/// Runs every row on every column, prints what was skipped and why, and fails with
/// every cell that differs from the reference. Returns the reference runs.
fn check(group: &str, rows: &[Row]) -> Vec<Run> {
    let (simd, mut skipped) = simd_columns();
    let mut skips: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut references = Vec::new();
    let mut cells = 0;
    for row in rows {
        let job = row.job();
        let name = row.name();
        let reference = Run::cpu(&cpu(Simd::Scalar, 1), &job).expect("the row runs");
        let swaps: u64 = reference
            .output
            .ensembles
            .iter()
            .flat_map(|e| &e.pairs)
            .map(|p| p.swaps)
            .sum();
        if swaps == 0 {
            failures.push(format!("[{name}]: no swap at all, the row proves little"));
        }
        if let Some(Err(why)) = row.expect.map(|f| f(&reference.output)) {
            failures.push(format!("[{name}]: {why}"));
        }
        for &(column, s) in &simd {
            cells += 1;
            let run = Run::cpu(&cpu(s, 2), &job).expect("the row runs");
            if let Some(d) = first_difference(&job, &reference, &run) {
                failures.push(format!("[{name}] × [{column}]: {d}"));
            }
        }
        for path in [
            KernelPath::StepSwap,
            KernelPath::Persistent,
            KernelPath::PersistentWarp,
        ] {
            if let Some(why) = kernels::unsupported(&job, path) {
                skips
                    .entry(format!("{}: skipped, {why}", path.label()))
                    .or_default()
                    .push(name.clone());
                continue;
            }
            cells += 1;
            let run = kernels::run(&job, path);
            if let Some(d) = first_difference(&job, &reference, &run) {
                failures.push(format!("[{name}] × [{}]: {d}", path.label()));
            }
        }
        references.push(reference);
    }
    for (why, names) in skips {
        skipped.push(format!(
            "{why}: {} row(s), e.g. [{}]",
            names.len(),
            names[0]
        ));
    }
    note(&format!(
        "parity, {group}: {} rows, {cells} cells against nrpt-core's scalar driver, {} differ",
        rows.len(),
        failures.len()
    ));
    for line in &skipped {
        note(&format!("  {line}"));
    }
    assert!(
        failures.is_empty(),
        "{group}: {} of {cells} cells differ from nrpt-core's scalar driver:\n{}",
        failures.len(),
        failures.join("\n")
    );
    references
}

// ---------------------------------------------------------------------------------
// The rows.

/// The paper's 2D setting with E ≥ 16: the lockstep path (one full group of 32
/// ensembles and one partly used), P = 16 and P = 21, three windows.
#[test]
fn the_2d_toy_in_lockstep_groups() {
    check(
        "2D toy, lockstep",
        &[
            row(MODES2D, SGD, PAPER, deo(1), 16, 40, 240),
            row(MODES2D, SGD, PAPER, deo(7), 16, 40, 240),
            row(MODES2D, SGD, PAPER, deo(3), 21, 17, 240),
        ],
    );
}

/// The 2D toy one ensemble at a time (E < 16, or options outside the lockstep path):
/// replicas in lanes, the kernels' step/swap and persistent paths.
#[test]
fn the_2d_toy_ensemble_by_ensemble() {
    check(
        "2D toy",
        &[
            // DEO⋆-SGD×P16 and DEO-SGD, as in the paper.
            row(MODES2D, SGD, PAPER, deo(8), 16, 3, 400),
            row(MODES2D, SGD, PAPER, deo(1), 16, 2, 300),
            row(MODES2D, SGD, PAPER, SEO, 16, 3, 300),
            row(MODES2D, SGD, PAPER, deo(7), 5, 3, 300),
            row(MODES2D, SGLD_GEOMETRIC, METROPOLIS, deo(3), 12, 3, 300),
            row(MODES2D, SGLD, METROPOLIS, SEO, 12, 3, 300),
            row(MODES2D, SGLD, PAPER, deo(4), 12, 2, 300),
            row(MODES2D, MSGD, PAPER, deo(1), 12, 3, 300),
            row(MODES2D, MOMENTUM_HOT, PAPER, deo(8), 8, 2, 300),
            row(
                Target::Modes2d { noise: 0.0 },
                SGD,
                PAPER,
                deo(8),
                8,
                3,
                300,
            ),
            row(
                Target::Modes2d { noise: 0.0 },
                SGD,
                PAPER,
                deo(8),
                16,
                20,
                200,
            ),
            row(Target::Modes2dWideStart, SGD, PAPER, deo(8), 16, 2, 300),
            row(Target::Modes2dWideStart, SGD, PAPER, deo(8), 16, 20, 200),
        ],
    );
}

/// The rule variants besides the paper's: the authors' code (host only), and those the
/// kernels implement, alone and together; the buffer's projection acts.
#[test]
fn rule_variants() {
    let projected: Expect = |out| {
        let c: Vec<f64> = out.ensembles.iter().map(|e| e.buffer).collect();
        (c.iter().all(|&c| c >= 0.0) && c.contains(&0.0))
            .then_some(())
            .ok_or(format!("a projected buffer stays at 0 from below: {c:?}"))
    };
    let unprojected: Expect = |out| {
        let c: Vec<f64> = out.ensembles.iter().map(|e| e.buffer).collect();
        c.iter()
            .all(|&c| c < 0.0)
            .then_some(())
            .ok_or(format!("an unprojected buffer goes below 0: {c:?}"))
    };
    check(
        "rule variants",
        &[
            row(MODES2D, SGD, AUTHORS, deo(8), 16, 3, 300),
            row(MODES2D, SGD, AUTHORS, deo(8), 16, 20, 200),
            row(MODES2D, SGD, AUTHORS, SEO, 9, 2, 300),
            row(MODES2D, SGLD, AUTHORS, deo(2), 12, 2, 300),
            row(MODES2D, SGD, IN_PLACE, deo(2), 16, 2, 300),
            row(MODES2D, SGD, UNPROJECTED, deo(2), 16, 2, 300),
            row(MODES2D, SGD, ROUNDED, deo(2), 16, 2, 300),
            row(MODES2D, SGD, KERNEL_VARIANTS, deo(2), 16, 2, 300),
            row(MODES2D, SGD, KERNEL_VARIANTS, deo(2), 16, 20, 200),
            Row {
                expect: Some(projected),
                ..row(MODES2D, SGD, FROM_ZERO, deo(2), 16, 2, 300)
            },
            Row {
                expect: Some(unprojected),
                ..row(MODES2D, SGD, FROM_ZERO_UNPROJECTED, deo(2), 16, 2, 300)
            },
        ],
    );
}

/// Momentum explorers with the momenta reset on a swap (the default, the authors'
/// code) and carried along, on every column; and the two rules do give different runs.
#[test]
fn momentum_reset_and_carry() {
    let rows = [
        row(MODES2D, MSGD, PAPER, deo(1), 12, 2, 300),
        row(MODES2D, MSGD, CARRY, deo(1), 12, 2, 300),
        row(MODES2D, MOMENTUM_HOT, CARRY, deo(1), 8, 2, 300),
        row(
            Target::SumModes { dim: 5 },
            MSGD_WARM,
            PAPER,
            deo(1),
            6,
            2,
            300,
        ),
        row(
            Target::SumModes { dim: 5 },
            MSGD_WARM,
            CARRY,
            deo(1),
            6,
            2,
            300,
        ),
        row(
            Target::SumModes { dim: 33 },
            MSGD_WARM,
            CARRY,
            deo(1),
            4,
            2,
            100,
        ),
    ];
    let runs = check("momentum on a swap", &rows);
    for (reset, carry) in [(0, 1), (3, 4)] {
        assert_ne!(
            runs[reset].output.samples,
            runs[carry].output.samples,
            "reset and carry gave the same run: {}",
            rows[reset].name()
        );
    }
}

/// The sum of modes: D = 1 and 2, one lane group of replicas or part of one (P = 6, 16,
/// 21),
/// D = 64 (the last D one kernel thread steps) and D = 65, 1024 (a block per chain).
#[test]
fn sum_modes() {
    let sum = |dim| Target::SumModes { dim };
    check(
        "sum-modes",
        &[
            row(sum(1), SGD, PAPER, deo(3), 16, 3, 300),
            row(sum(2), SGD, PAPER, deo(2), 8, 2, 300),
            row(sum(5), SGD, PAPER, deo(8), 6, 3, 300),
            row(sum(5), SGLD, METROPOLIS, SEO, 6, 2, 300),
            row(sum(33), MSGD_WARM, PAPER, deo(8), 4, 2, 100),
            row(sum(33), SGLD, AUTHORS, deo(3), 8, 2, 150),
            row(sum(9), SGD, PAPER, deo(3), 21, 2, 200),
            row(sum(64), SGD, PAPER, deo(2), 6, 1, 150),
            row(sum(65), SGD, PAPER, deo(2), 6, 1, 150),
            row(sum(1024), SGD, PAPER, deo(2), 4, 1, 60),
            row(sum(1024), MSGD_WARM, PAPER, deo(2), 4, 1, 40),
        ],
    );
}

/// `--target mixture`, which has no lane math: every CPU path runs nrpt-core's driver
/// for it, and must still give its bits. Its kernels are its own CUDA source in the
/// generic source step (`nrpt_cuda::source`), compiled for the host.
#[test]
fn mixture() {
    let mix = |dim| Target::Mixture { dim };
    check(
        "mixture",
        &[
            row(mix(3), SGD, PAPER, deo(4), 8, 3, 300),
            row(mix(1), SGLD, METROPOLIS, deo(2), 6, 2, 300),
            row(mix(3), MSGD, AUTHORS, SEO, 6, 20, 200),
        ],
    );
}
