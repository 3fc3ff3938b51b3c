//! Results depend on the seed only: the same job gives the same bits on 1, 2 and 4
//! threads; a run cut into segments (`CpuBackend::run_from`, what checkpoints rely on),
//! each segment on another code path and thread count, gives the bits of one run; and
//! the parts of an `nrpt scale` sweep, put together, are the whole sweep.

use std::sync::Arc;

use clap::Parser;
use nrpt::cli::{Cli, Command};
use nrpt_core::driver::TemperingOptions;
use nrpt_core::explore::Explorer;
use nrpt_core::window::Scheme;
use nrpt_sampling::engine::cpu::Simd;
use nrpt_sampling::engine::{Job, Record, unobserved};
use nrpt_sampling::targets::Toy;
use nrpt_tests::{Run, cpu, first_difference};

/// Jobs that take each path of the CPU engine: the 2D toy in lockstep groups (E ≥ 16),
/// replicas in lanes (momentum, E < 16), nrpt-core's driver (the mixture).
fn jobs() -> Vec<(&'static str, Job)> {
    let record = Record {
        thin: 4,
        warmup: 30,
        trace_every: 20,
        path_iterations: 50,
    };
    let toy = Job {
        record,
        ..Job::new(
            Arc::new(Toy::modes2d(2.0)),
            TemperingOptions {
                scheme: Scheme::Deo { window: 7 },
                seed: 11,
                ..TemperingOptions::default()
            },
            16,
            40,
            260,
        )
    };
    let momentum = Job {
        record,
        ..Job::new(
            Arc::new(Toy::sum_modes(5, 2.0)),
            TemperingOptions {
                explorer: Explorer::MSGD,
                ladder_max: 0.05,
                seed: 12,
                ..TemperingOptions::default()
            },
            21,
            5,
            260,
        )
    };
    let mixture = nrpt_sampling::config::RunConfig {
        target: nrpt_sampling::config::TargetName::new("mixture"),
        dim: 3,
        chains: 8,
        ensembles: 6,
        iterations: 260,
        seed: 13,
        ..nrpt_sampling::config::RunConfig::default()
    }
    .job(record)
    .expect("a valid configuration");
    vec![
        ("2D toy, lockstep", toy),
        ("sum-modes, mSGD, replicas in lanes", momentum),
        ("mixture, driver", mixture),
    ]
}

#[test]
fn one_two_or_four_threads_give_the_same_bits() {
    for (name, job) in jobs() {
        for simd in [Simd::Scalar, Simd::Auto] {
            let one = Run::cpu(&cpu(simd, 1), &job).unwrap();
            for threads in [2, 4] {
                let more = Run::cpu(&cpu(simd, threads), &job).unwrap();
                if let Some(d) = first_difference(&job, &one, &more) {
                    panic!("{name}, {simd:?}: 1 and {threads} threads differ: {d}");
                }
            }
        }
    }
}

/// Segments ending mid-window, mid-trace interval, at a recorded iteration and at 0,
/// each run on another path and thread count (a checkpoint resumed on another
/// machine), give the bits of one run.
#[test]
fn a_run_cut_into_segments_is_one_run() {
    let backends = [
        cpu(Simd::Auto, 2),
        cpu(Simd::Scalar, 1),
        cpu(Simd::Portable, 4),
        cpu(Simd::Avx2, 3),
    ];
    for (name, job) in jobs() {
        let whole = Run::cpu(&backends[0], &job).unwrap();
        let mut state = None;
        for (i, until) in [0, 1, 37, 100, 101, 199, job.iterations]
            .into_iter()
            .enumerate()
        {
            let b = &backends[i % backends.len()];
            state = Some(b.run_from(&job, state, until, &unobserved).unwrap());
        }
        let cut = Run::finished(&job, state.unwrap());
        if let Some(d) = first_difference(&job, &whole, &cut) {
            panic!("{name}: the run in segments differs from the whole run: {d}");
        }
    }
}

/// `nrpt scale --part i/3`, the parts put together as `nrpt scale merge` puts them
/// (points in sweep order, fits over all of them), equal the whole sweep: the index
/// process alone and the full sampler on the 2D toy.
#[test]
fn scale_shards_merged_are_the_whole_sweep() {
    // (the sweep's flags, its number of points)
    let sweeps: [(&[&str], usize); 2] = [
        (
            &[
                "--target",
                "bernoulli",
                "--chains",
                "4,8",
                "--window",
                "1,opt,2",
                "--swap-rate",
                "0.3,0.5",
                "--max-iterations",
                "20000",
                "--ensembles",
                "4",
            ],
            12,
        ),
        (
            &[
                "--target",
                "modes2d",
                "--chains",
                "4,8",
                "--window",
                "1,opt",
                "--max-iterations",
                "1200",
                "--warmup",
                "200",
                "--ensembles",
                "3",
            ],
            4,
        ),
    ];
    let backend = cpu(Simd::Auto, 2);
    for (sweep, count) in sweeps {
        let compute = |shard: Option<String>| {
            let mut args = vec!["nrpt", "--quiet", "scale"];
            args.extend_from_slice(sweep);
            let shard_arg = shard.unwrap_or_default();
            if !shard_arg.is_empty() {
                args.extend(["--part", shard_arg.as_str()]);
            }
            let cli = Cli::try_parse_from(&args).expect("a valid command line");
            let Command::Scale(a) = cli.command else {
                panic!("not a scale command: {args:?}");
            };
            nrpt::commands::scale::compute(&a.sweep, &backend, true, &|_| {})
                .expect("the sweep runs")
        };
        let whole = compute(None);
        assert_eq!(whole.points.len(), count, "{sweep:?}");
        let mut points: Vec<_> = (0..3)
            .flat_map(|i| compute(Some(format!("{i}/3"))).points)
            .collect();
        points.sort_by_key(|p| p.index);
        // Everything but the time each point took, to the bit (Debug prints NaN and
        // infinities as themselves).
        let text = |p: &nrpt_studies::scale::Point| {
            let mut p = p.clone();
            p.seconds = 0.0;
            format!("{p:?}")
        };
        assert_eq!(points.len(), whole.points.len(), "{sweep:?}");
        for (a, b) in whole.points.iter().zip(&points) {
            assert_eq!(text(a), text(b), "{sweep:?}");
        }
        let fits = nrpt_studies::scale::fits(&points);
        assert_eq!(
            format!("{fits:?}"),
            format!("{:?}", whole.fits),
            "{sweep:?}"
        );
    }
}
