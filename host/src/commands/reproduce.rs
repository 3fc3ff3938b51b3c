//! `nrpt reproduce`: the paper's 2D experiment (Deng et al., AAAI 2023, Figures 3–6).

use std::ops::Range;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::cli::{ReproduceArgs, ShardMergeArgs};
use crate::figures::{self, DensityPanel, LineChart, PathPanel, Series, Style};
use crate::progress::Progress;
use nrpt_sampling::config::{ConfigError, RunConfig, WindowSpec};
use nrpt_sampling::engine::{Backend, EngineError, EnsembleRecords, Job, Record, RunOutput};
use nrpt_sampling::output::{Csv, OutDir, OutPolicy, write_json};
use nrpt_sampling::preset::{Preset, RuleChoices, RulesSummary};
use nrpt_studies::baselines::{self, Baseline};
use nrpt_studies::metrics::{Grid, Truth};
use nrpt_studies::shard::{self, RECORDS, Shard, Summary};

/// Sizes of a reproduction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Iterations of every tempering run (the cyclical chain runs 16× as many).
    pub iterations: u64,
    /// Independent ensembles (seeds) per method.
    pub seeds: usize,
    /// Chains per ensemble.
    pub chains: usize,
    /// Base seed.
    pub seed: u32,
    /// Keep a sample every `thin` iterations…
    pub thin: u64,
    /// …after `warmup` iterations.
    pub warmup: u64,
}

/// One method's results.
#[derive(Clone, Debug, Serialize)]
pub struct MethodResult {
    /// Name as in the paper.
    pub name: String,
    /// Swap window (null for the baselines without swaps).
    pub window: Option<u32>,
    /// Target swap rate S (null for the baselines).
    pub swap_rate: Option<f64>,
    /// Standard round trips per 1000 iterations, mean over seeds (null without swaps).
    pub round_trips_per_1000: Option<f64>,
    /// Round trips per 1000 iterations as the authors' code counts them.
    pub round_trips_per_1000_authors: Option<f64>,
    /// Lemma 1's prediction `P / E[T] · 1000` for this W and S.
    pub model_round_trips_per_1000: Option<f64>,
    /// TV distance on the 50×50 grid of [−2.5, 2.5]² (pooled samples).
    pub tv_distance: f64,
    /// TV distance over the 25 mode cells.
    pub tv_modes: f64,
    /// Share of samples outside the grid.
    pub outside_share: f64,
    /// Samples pooled.
    pub samples: usize,
}

/// One point of the window sweep.
#[derive(Clone, Debug, Serialize)]
pub struct WindowPoint {
    /// W.
    pub window: u32,
    /// Standard round trips per 1000 iterations, mean over seeds.
    pub round_trips_per_1000: f64,
    /// In the authors' counting.
    pub round_trips_per_1000_authors: f64,
    /// Lemma 1 with S = 0.4.
    pub model_round_trips_per_1000: f64,
    /// TV distance.
    pub tv_distance: f64,
    /// TV over the mode cells.
    pub tv_modes: f64,
}

/// One run of the comparison between the paper's rules and the authors' code.
#[derive(Clone, Debug, Serialize)]
pub struct VariantResult {
    /// `paper` or `authors-code`.
    pub preset: Preset,
    /// The rules in words.
    pub rules: RulesSummary,
    /// W.
    pub window: u32,
    /// Iterations run (N + 1 for the authors' 0 … N).
    pub iterations_run: u64,
    /// Standard round trips per 1000 of the N iterations asked, mean over seeds.
    pub round_trips_per_1000: f64,
    /// The authors' counting per 1000 of the N iterations asked (their notebook's
    /// convention: 348 trips over 20,000 iterations is 17.4).
    pub round_trips_per_1000_authors: f64,
    /// What the authors' notebook printed for this window (one run, their counting,
    /// per 1000 iterations), for the authors'-code rows.
    pub notebook_round_trips_per_1000: Option<f64>,
    /// TV distance on the 50×50 grid.
    pub tv_distance: f64,
    /// TV distance over the 25 mode cells.
    pub tv_modes: f64,
    /// Final buffer C, mean over seeds (the configured `buffer` is the initial C).
    pub final_buffer_mean: f64,
}

/// `results.json`.
#[derive(Debug, Serialize)]
pub struct Results {
    /// Sizes.
    pub settings: Settings,
    /// Backend that ran the tempering methods.
    pub backend: String,
    /// SGLD×P16, cycSGLD×T16, DEO-SGD×P16, DEO⋆-SGD×P16.
    pub methods: Vec<MethodResult>,
    /// DEO⋆ with S ∈ {0.2, …, 0.6} (window from the solver for each S).
    pub s_sweep: Vec<MethodResult>,
    /// DEO with W ∈ {1, 2, 4, 8, 16, 32} at S = 0.4.
    pub w_sweep: Vec<WindowPoint>,
    /// The rules of `methods`, `s_sweep` and `w_sweep`: the paper's.
    pub rules: RulesSummary,
    /// W = 1 and the notebook's W = 8 under the paper's rules and under the authors'
    /// code (`--preset authors-code`), beside what the authors' notebook printed.
    pub variants: Vec<VariantResult>,
    /// Figures written (PNG and SVG, with a CSV of their data).
    pub figures: Vec<String>,
    /// Wall-clock seconds (of a merge: the shards' seconds added up).
    pub seconds: f64,
    /// The shard these results are of (absent for a whole run or a merge): the tables
    /// and figures then hold its seeds only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<Summary>,
}

/// `records.json` of a shard: everything its seeds recorded, for `nrpt reproduce merge`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShardRecords {
    /// The backend that ran the tempering jobs.
    pub backend: String,
    /// Wall-clock seconds of the shard.
    pub seconds: f64,
    /// SGLD×P16's samples of the shard's seeds, seed by seed.
    pub sgld: Vec<f32>,
    /// cycSGLD×T16's samples, seed by seed.
    pub cyc: Vec<f32>,
    /// Per tempering job (the S sweep, the W sweep, the authors' code's), the records
    /// of the shard's ensembles.
    pub jobs: Vec<Vec<EnsembleRecords>>,
}

/// What the authors' notebook (NR-PT_v2.ipynb in WayneDW/Non-reversible-Parallel-
/// Tempering-for-Deep-Posterior-Approximation) printed after 20,000 iterations, in its
/// counting: 348 round trips for W = 1 and 875 for W = 8, per 1000 iterations.
const NOTEBOOK: [(u32, f64); 2] = [(1, 17.4), (8, 43.75)];
const S_SWEEP: [f64; 5] = [0.2, 0.3, 0.4, 0.5, 0.6];
const W_SWEEP: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Iterations of the index paths shown in Figure 6.
const PATH_ITERATIONS: u64 = 2_000;

/// A tempering job over the seeds `seeds` (ensembles `seeds.start ..` of the run).
fn tempering_job(
    s: &Settings,
    seeds: &Range<usize>,
    preset: Preset,
    window: WindowSpec,
    swap_rate: f64,
    record: Record,
) -> Result<Job> {
    let config = RunConfig {
        chains: s.chains,
        ensembles: seeds.len(),
        iterations: s.iterations,
        window,
        swap_rate,
        seed: s.seed,
        preset,
        ..RunConfig::default()
    };
    let mut job = config.job_advising(record, "--ensembles or --iterations")?;
    job.options.ensemble =
        u32::try_from(seeds.start).map_err(|_| ConfigError::new("ensembles", "too many seeds"))?;
    Ok(job)
}

fn variant_result(
    preset: Preset,
    s: &Settings,
    job: &Job,
    out: &RunOutput,
    truth: &Truth,
) -> VariantResult {
    let stats = out.total_stats();
    let runs = job.ensembles as f64 * s.iterations as f64;
    let window = job.options.scheme.window_code();
    let acc = truth.accuracy(&out.samples);
    let resolved = RuleChoices {
        preset,
        ..RuleChoices::default()
    }
    .resolve();
    VariantResult {
        preset,
        rules: resolved.into(),
        window,
        iterations_run: job.iterations,
        round_trips_per_1000: stats.round_trips as f64 * 1000.0 / runs,
        round_trips_per_1000_authors: stats.authors_round_trips as f64 * 1000.0 / runs,
        notebook_round_trips_per_1000: (preset == Preset::AuthorsCode)
            .then(|| NOTEBOOK.iter().find(|n| n.0 == window).map(|n| n.1))
            .flatten(),
        tv_distance: acc.tv_distance,
        tv_modes: acc.tv_modes,
        final_buffer_mean: out.ensembles.iter().map(|e| e.buffer).sum::<f64>()
            / job.ensembles as f64,
    }
}

fn tempering_result(name: &str, job: &Job, out: &RunOutput, truth: &Truth) -> MethodResult {
    let stats = out.total_stats();
    let runs = job.ensembles as f64 * job.iterations as f64;
    let window = job.options.scheme.window_code();
    let s = job.options.adapt.target_swap_rate;
    let acc = truth.accuracy(&out.samples);
    MethodResult {
        name: name.to_string(),
        window: Some(window),
        swap_rate: Some(s),
        round_trips_per_1000: Some(stats.round_trips as f64 * 1000.0 / runs),
        round_trips_per_1000_authors: Some(stats.authors_round_trips as f64 * 1000.0 / runs),
        model_round_trips_per_1000: nrpt_core::optimal::round_trip_rate_u32(job.chains, window, s)
            .ok()
            .map(|r| 1000.0 * r),
        tv_distance: acc.tv_distance,
        tv_modes: acc.tv_modes,
        outside_share: acc.outside_share,
        samples: acc.samples,
    }
}

fn baseline_result(name: &str, samples: &[f32], truth: &Truth) -> MethodResult {
    let acc = truth.accuracy(samples);
    MethodResult {
        name: name.to_string(),
        window: None,
        swap_rate: None,
        round_trips_per_1000: None,
        round_trips_per_1000_authors: None,
        model_round_trips_per_1000: None,
        tv_distance: acc.tv_distance,
        tv_modes: acc.tv_modes,
        outside_share: acc.outside_share,
        samples: acc.samples,
    }
}

/// Every run of the reproduction, outputs kept for the figures.
struct Runs {
    sgld: Vec<f32>,
    cyc: Vec<f32>,
    /// (job, output) of the S sweep; S = 0.4 is DEO⋆.
    s_sweep: Vec<(Job, RunOutput)>,
    /// (job, output) of the W sweep; W = 1 is DEO.
    w_sweep: Vec<(Job, RunOutput)>,
    /// (job, output) of the authors'-code preset at W = 1 and W = 8.
    authors: Vec<(Job, RunOutput)>,
}

/// Every tempering job of the reproduction over the seeds `seeds`: the S sweep, the W
/// sweep, the authors' code's.
fn jobs(s: &Settings, seeds: &Range<usize>) -> Result<Vec<Job>> {
    let full = Record {
        thin: s.thin,
        warmup: s.warmup,
        trace_every: (s.iterations / 200).max(1),
        path_iterations: PATH_ITERATIONS.min(s.iterations),
    };
    let samples = Record {
        trace_every: 0,
        path_iterations: 0,
        ..full
    };
    let mut jobs = Vec::new();
    for &rate in &S_SWEEP {
        jobs.push(tempering_job(
            s,
            seeds,
            Preset::Paper,
            WindowSpec::Optimal,
            rate,
            full,
        )?);
    }
    for &w in &W_SWEEP {
        jobs.push(tempering_job(
            s,
            seeds,
            Preset::Paper,
            WindowSpec::Fixed(w),
            0.4,
            full,
        )?);
    }
    for (w, _) in NOTEBOOK {
        let window = WindowSpec::Fixed(w);
        jobs.push(tempering_job(
            s,
            seeds,
            Preset::AuthorsCode,
            window,
            0.4,
            samples,
        )?);
    }
    Ok(jobs)
}

/// The cycles of the cycSGLD×T baseline.
const CYCLES: u64 = 100;

/// The memory of [`run_all`] over `seeds` seeds: every tempering run of `jobs` side by
/// side, their outputs kept for the figures (each job's own estimate), and the
/// baselines' samples (per seed, then joined: twice).
fn footprint(s: &Settings, seeds: usize, jobs: &[Job]) -> nrpt_sampling::engine::memory::Footprint {
    use nrpt_sampling::engine::memory::{Footprint, PROCESS_BYTES, of_job};
    let mut f = Footprint::default();
    f.add("process", PROCESS_BYTES);
    let runs = jobs.iter().fold(0u64, |acc, j| {
        acc.saturating_add(of_job(j).total().saturating_sub(PROCESS_BYTES))
    });
    f.add("tempering runs side by side", runs);
    // SGLD×P keeps P chains' samples after the warm-up; cycSGLD×T over 16 N iterations
    // in 100 cycles samples in the last 5 % of each (at most one more per cycle);
    // [x, y] f32 pairs.
    let thin = s.thin.max(1);
    let kept = (s.chains as u64)
        .saturating_mul(s.iterations.saturating_sub(s.warmup).div_ceil(thin))
        .saturating_add(16u64.saturating_mul(s.iterations).div_ceil(20 * thin))
        .saturating_add(2 * CYCLES);
    f.add(
        "baselines' samples",
        kept.saturating_mul(seeds as u64).saturating_mul(2 * 8),
    );
    f
}

/// Runs every method over the seeds `seeds` (all of them, or one shard's block).
fn run_all(s: &Settings, seeds: Range<usize>, backend: &dyn Backend, quiet: bool) -> Result<Runs> {
    let jobs = jobs(s, &seeds)?;
    // Each job checked its own memory; they run side by side.
    nrpt_sampling::engine::memory::check(
        &footprint(s, seeds.len(), &jobs),
        "--ensembles or --iterations",
    )
    .map_err(|m| ConfigError::new("max_memory", m))?;
    let n = seeds.len() as u64;
    let chain_steps = |j: &Job| j.iterations * j.ensembles as u64;
    let total: u64 =
        jobs.iter().map(chain_steps).sum::<u64>() + 2 * s.iterations * n + 16 * s.iterations * n;
    let progress = Progress::new("reproduce", total, quiet);
    let inc = |n: u64| progress.inc(n);
    let base = Baseline {
        seed: s.seed,
        seeds: seeds.len(),
        first: seeds.start,
        noise: 2.0,
        thin: s.thin,
        warmup: s.warmup,
    };
    // The runs are independent: run them side by side.
    let (outs, (sgld, cyc)) = rayon::join(
        || {
            jobs.par_iter()
                .map(|j| backend.run(j, &inc))
                .collect::<Result<Vec<_>, EngineError>>()
        },
        || {
            rayon::join(
                || baselines::parallel_sgld(base, s.chains, s.iterations, 0.003, &|n| inc(2 * n)),
                || baselines::cyclical_sgld(base, 16 * s.iterations, CYCLES, 0.6, &inc),
            )
        },
    );
    progress.finish();
    Ok(Runs::of(jobs, outs?, sgld?, cyc?))
}

impl Runs {
    /// The runs from the jobs in [`jobs`]' order, their outputs, and the baselines'.
    fn of(jobs: Vec<Job>, outs: Vec<RunOutput>, sgld: Vec<f32>, cyc: Vec<f32>) -> Runs {
        let mut outs = outs.into_iter();
        let mut jobs = jobs.into_iter();
        let mut s_sweep = Vec::new();
        for _ in S_SWEEP {
            if let (Some(j), Some(o)) = (jobs.next(), outs.next()) {
                s_sweep.push((j, o));
            }
        }
        let mut w_sweep = Vec::new();
        for _ in W_SWEEP {
            if let (Some(j), Some(o)) = (jobs.next(), outs.next()) {
                w_sweep.push((j, o));
            }
        }
        let authors = jobs.zip(outs).collect();
        Runs {
            sgld,
            cyc,
            s_sweep,
            w_sweep,
            authors,
        }
    }

    /// What a shard keeps for the merge.
    fn records(&self, seconds: f64) -> Result<ShardRecords> {
        let all = self
            .s_sweep
            .iter()
            .chain(&self.w_sweep)
            .chain(&self.authors);
        let jobs = all
            .map(|(j, o)| {
                o.split(j.first_ensemble(), j.target.dim())
                    .ok_or_else(|| anyhow::anyhow!("a run's output lacks its ensembles' records"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ShardRecords {
            backend: self
                .s_sweep
                .first()
                .map_or_else(String::new, |(_, o)| o.backend.clone()),
            seconds,
            sgld: self.sgld.clone(),
            cyc: self.cyc.clone(),
            jobs,
        })
    }

    /// The runs of the whole reproduction from its shards' records, in shard order:
    /// (folder, the seeds it ran, its records), each checked against the jobs.
    fn join(s: &Settings, shards: Vec<(&Path, Range<usize>, ShardRecords)>) -> Result<Runs> {
        let jobs = jobs(s, &(0..s.seeds))?;
        let mut per_job: Vec<Vec<EnsembleRecords>> = vec![Vec::new(); jobs.len()];
        let (mut sgld, mut cyc) = (Vec::new(), Vec::new());
        let mut backends: Vec<String> = Vec::new();
        for (folder, seeds, r) in shards {
            let bad = |why: String| {
                ConfigError::new(
                    "inputs",
                    format!(
                        "{}: its {RECORDS} does not fit the run: {why}",
                        folder.display()
                    ),
                )
            };
            if r.jobs.len() != jobs.len() {
                return Err(bad(format!(
                    "{} runs, the reproduction has {}",
                    r.jobs.len(),
                    jobs.len()
                ))
                .into());
            }
            if r.sgld.len() % 2 != 0 || r.cyc.len() % 2 != 0 {
                return Err(bad("an odd number of sample coordinates".into()).into());
            }
            if !(r.seconds.is_finite() && r.seconds >= 0.0) {
                return Err(bad(format!("seconds = {} cannot be", r.seconds)).into());
            }
            for ((all, records), j) in per_job.iter_mut().zip(r.jobs).zip(&jobs) {
                if records.len() != seeds.len() {
                    return Err(bad(format!(
                        "{} seeds recorded, the shard ran {}",
                        records.len(),
                        seeds.len()
                    ))
                    .into());
                }
                for (e, rec) in seeds.clone().zip(&records) {
                    rec.check(j, e).map_err(bad)?;
                }
                all.extend(records);
            }
            sgld.extend(r.sgld);
            cyc.extend(r.cyc);
            if !backends.contains(&r.backend) {
                backends.push(r.backend);
            }
        }
        let backend = backends.join("+");
        let outs = jobs
            .iter()
            .zip(per_job)
            .map(|(j, records)| RunOutput::join(backend.clone(), records, j.target.dim()))
            .collect();
        Ok(Runs::of(jobs, outs, sgld, cyc))
    }
}

fn density(samples: &[f32]) -> Vec<f64> {
    Grid::PAPER.histogram(samples).0
}

fn figure_density(dir: &Path, stem: &str, panels: &[(&str, Vec<f64>)]) -> Result<String> {
    let n = Grid::PAPER.n;
    let views: Vec<DensityPanel<'_>> = panels
        .iter()
        .map(|(title, values)| DensityPanel {
            title,
            values,
            n,
            extent: [Grid::PAPER.lo, Grid::PAPER.hi],
        })
        .collect();
    figures::density_panels(&dir.join(stem), &views)?;
    let mut header = vec!["x", "y"];
    header.extend(panels.iter().map(|(t, _)| *t));
    let mut csv = Csv::new(&header);
    let w = (Grid::PAPER.hi - Grid::PAPER.lo) / n as f64;
    for j in 0..n {
        for i in 0..n {
            let mut row = vec![
                format!("{:.3}", Grid::PAPER.lo + w * (i as f64 + 0.5)),
                format!("{:.3}", Grid::PAPER.lo + w * (j as f64 + 0.5)),
            ];
            row.extend(panels.iter().map(|(_, v)| format!("{:.6e}", v[j * n + i])));
            csv.row(row);
        }
    }
    csv.write(&dir.join(format!("{stem}.csv")))?;
    Ok(stem.to_string())
}

fn write_figures(
    dir: &Path,
    runs: &Runs,
    truth: &Truth,
    w_points: &[WindowPoint],
    s: &Settings,
) -> Result<Vec<String>> {
    let mut written = Vec::new();
    let deo = &runs.w_sweep[0];
    let star = &runs.s_sweep[2];
    let w_star = star.0.options.scheme.window_code();

    // Figure 5: ground truth beside each method's density.
    let star_name = format!("DEO⋆-SGD×P16 (W = {w_star})");
    written.push(figure_density(
        dir,
        "fig5_densities",
        &[
            ("ground truth", truth.fine.clone()),
            ("SGLD×P16", density(&runs.sgld)),
            ("cycSGLD×T16", density(&runs.cyc)),
            ("DEO-SGD×P16 (W = 1)", density(&deo.1.samples)),
            (&star_name, density(&star.1.samples)),
        ],
    )?);

    // Figure 3: the swap-rate sweep.
    let names: Vec<String> = runs
        .s_sweep
        .iter()
        .map(|(j, _)| {
            format!(
                "S = {} (W = {})",
                j.options.adapt.target_swap_rate,
                j.options.scheme.window_code()
            )
        })
        .collect();
    let mut panels: Vec<(&str, Vec<f64>)> = vec![("ground truth", truth.fine.clone())];
    for (name, (_, o)) in names.iter().zip(&runs.s_sweep) {
        panels.push((name, density(&o.samples)));
    }
    written.push(figure_density(dir, "fig3_swap_rates", &panels)?);

    // Figure 4a: round trips against the window, measured and Lemma 1.
    let measured: Vec<(f64, f64)> = w_points
        .iter()
        .map(|p| (f64::from(p.window), p.round_trips_per_1000))
        .collect();
    let authors: Vec<(f64, f64)> = w_points
        .iter()
        .map(|p| (f64::from(p.window), p.round_trips_per_1000_authors))
        .collect();
    let model: Vec<(f64, f64)> = w_points
        .iter()
        .map(|p| (f64::from(p.window), p.model_round_trips_per_1000))
        .collect();
    figures::lines(
        &dir.join("fig4a_round_trips_vs_window"),
        &LineChart {
            title: "Round trips against the window (P = 16, S = 0.4)",
            x_label: "window W (iterations)",
            y_label: "round trips per 1000 iterations",
            x_log: true,
            y_log: false,
            series: &[
                Series {
                    name: "measured (standard counting)",
                    points: &measured,
                    style: Style::LinePoints,
                },
                Series {
                    name: "measured (authors' counting)",
                    points: &authors,
                    style: Style::LinePoints,
                },
                Series {
                    name: "Lemma 1 model",
                    points: &model,
                    style: Style::Dashed,
                },
            ],
            hlines: &[],
            vlines: &[(f64::from(w_star), "W⋆ (solver)")],
        },
    )?;
    let mut csv = Csv::new(&[
        "window",
        "round_trips_per_1000",
        "round_trips_per_1000_authors",
        "model_round_trips_per_1000",
        "tv_distance",
        "tv_modes",
    ]);
    for p in w_points {
        csv.row([
            p.window.to_string(),
            format!("{:.3}", p.round_trips_per_1000),
            format!("{:.3}", p.round_trips_per_1000_authors),
            format!("{:.3}", p.model_round_trips_per_1000),
            format!("{:.4}", p.tv_distance),
            format!("{:.4}", p.tv_modes),
        ]);
    }
    csv.write(&dir.join("fig4a_round_trips_vs_window.csv"))?;
    written.push("fig4a_round_trips_vs_window".into());

    // Figure 4b–c: ladder and swap rates of DEO⋆ converging.
    let t = &star.1.trace;
    let p = s.chains;
    let names: Vec<String> = (0..p).map(|l| format!("level {l}")).collect();
    written.push(trace_figure(
        dir,
        "fig4b_ladder",
        "Learning rates of DEO⋆ adapting (mean over seeds)",
        "learning rate",
        true,
        &t.iterations,
        &t.ladder,
        &names,
        "eta",
        &[],
    )?);
    let names: Vec<String> = (0..p - 1).map(|l| format!("pair {l}–{}", l + 1)).collect();
    written.push(trace_figure(
        dir,
        "fig4c_swap_rates",
        "Swap-indicator rates of DEO⋆ approaching the target S",
        "share of iterations with e(l+1) + C < e(l)",
        false,
        &t.iterations,
        &t.indicator_rate,
        &names,
        "pair",
        &[(0.4, "target S = 0.4")],
    )?);

    // Figure 6: index paths of four replicas under both schemes (ensemble 0's: a
    // shard of other seeds has none).
    if deo.1.paths.len() < p || star.1.paths.len() < p {
        return Ok(written);
    }
    let shown = [0usize, p / 3, 2 * p / 3, p - 1];
    let pick =
        |o: &RunOutput| -> Vec<Vec<u32>> { shown.iter().map(|&r| o.paths[r].clone()).collect() };
    let (deo_paths, star_paths) = (pick(&deo.1), pick(&star.1));
    let iters: Vec<u64> = (0..deo_paths[0].len() as u64).collect();
    let star_title = format!("DEO⋆ (W = {w_star})");
    figures::index_paths(
        &dir.join("fig6_index_paths"),
        &[
            PathPanel {
                title: "DEO (W = 1)",
                iterations: &iters,
                levels: &deo_paths,
                chains: p,
            },
            PathPanel {
                title: &star_title,
                iterations: &iters,
                levels: &star_paths,
                chains: p,
            },
        ],
    )?;
    let mut header = vec!["iteration".to_string()];
    for scheme in ["deo", "deo_star"] {
        header.extend(shown.iter().map(|r| format!("{scheme}_replica_{r}")));
    }
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut csv = Csv::new(&refs);
    for (i, k) in iters.iter().enumerate() {
        let mut cells = vec![k.to_string()];
        cells.extend(deo_paths.iter().map(|path| path[i].to_string()));
        cells.extend(star_paths.iter().map(|path| path[i].to_string()));
        csv.row(cells);
    }
    csv.write(&dir.join("fig6_index_paths.csv"))?;
    written.push("fig6_index_paths".into());
    Ok(written)
}

/// One line per column of `rows` (one row per entry of `iterations`), named by
/// `names`, drawn against the iteration, with its data as `<stem>.csv` (columns
/// `<prefix>_0`, `<prefix>_1`, …).
#[allow(clippy::too_many_arguments)]
fn trace_figure(
    dir: &Path,
    stem: &str,
    title: &str,
    y_label: &str,
    y_log: bool,
    iterations: &[u64],
    rows: &[Vec<f64>],
    names: &[String],
    prefix: &str,
    hlines: &[(f64, &str)],
) -> Result<String> {
    let columns: Vec<Vec<(f64, f64)>> = (0..names.len())
        .map(|l| {
            iterations
                .iter()
                .zip(rows)
                .map(|(&k, row)| (k as f64, row[l]))
                .collect()
        })
        .collect();
    let series: Vec<Series<'_>> = columns
        .iter()
        .zip(names)
        .map(|(pts, name)| Series {
            name,
            points: pts,
            style: Style::Line,
        })
        .collect();
    figures::lines(
        &dir.join(stem),
        &LineChart {
            title,
            x_label: "iteration",
            y_label,
            x_log: false,
            y_log,
            series: &series,
            hlines,
            vlines: &[],
        },
    )?;
    let mut header = vec!["iteration".to_string()];
    header.extend((0..names.len()).map(|l| format!("{prefix}_{l}")));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut csv = Csv::new(&refs);
    for (k, row) in iterations.iter().zip(rows) {
        let mut cells = vec![k.to_string()];
        cells.extend(row.iter().map(|v| format!("{v:.6e}")));
        csv.row(cells);
    }
    csv.write(&dir.join(format!("{stem}.csv")))?;
    Ok(stem.to_string())
}

/// The seeds `shard` runs of a reproduction (all of them without a shard), and the
/// summary that marks its folder.
fn shard_of(s: &Settings, shard: Option<Shard>) -> Result<(Range<usize>, Option<Summary>)> {
    match shard {
        None => Ok((0..s.seeds, None)),
        Some(sh) => {
            let summary = Summary::new("reproduce", sh, s.seeds, nrpt_sampling::json::to_value(s)?)
                .map_err(|e| ConfigError::new("shard", e.to_string()))?;
            Ok((sh.block(s.seeds)?, Some(summary)))
        }
    }
}

/// Runs the reproduction, or one shard of it, and writes its outputs to `out` (which
/// replaces `--out` when the caller commits it): results.json and the figures, and for
/// a shard shard.json and records.json.
pub fn reproduce(
    s: Settings,
    shard: Option<Shard>,
    out: &Path,
    backend: &dyn Backend,
    quiet: bool,
) -> Result<Results> {
    let started = Instant::now();
    let (seeds, summary) = shard_of(&s, shard)?;
    let truth = Truth::new();
    let runs = run_all(&s, seeds, backend, quiet)?;
    let mut results = results(s, &runs, &truth);
    results.figures = write_figures(out, &runs, &truth, &results.w_sweep, &s)?;
    results.seconds = started.elapsed().as_secs_f64();
    if let Some(summary) = &summary {
        write_json(&out.join(RECORDS), &runs.records(results.seconds)?)?;
        write_json(&out.join(shard::SUMMARY), summary)?;
    }
    results.shard = summary;
    write_json(&out.join("results.json"), &results)?;
    Ok(results)
}

/// The reproduction's results alone, of every seed or of one shard's: no figure and no
/// file (`figures` is empty).
pub fn compute(
    s: Settings,
    shard: Option<Shard>,
    backend: &dyn Backend,
    quiet: bool,
) -> Result<Results> {
    let started = Instant::now();
    let (seeds, summary) = shard_of(&s, shard)?;
    let truth = Truth::new();
    let runs = run_all(&s, seeds, backend, quiet)?;
    let mut results = results(s, &runs, &truth);
    results.seconds = started.elapsed().as_secs_f64();
    results.shard = summary;
    Ok(results)
}

/// The tables of a reproduction from its runs (no figures yet, no time).
fn results(s: Settings, runs: &Runs, truth: &Truth) -> Results {
    let deo = &runs.w_sweep[0];
    let star = &runs.s_sweep[2];
    let methods = vec![
        baseline_result("SGLD×P16", &runs.sgld, truth),
        baseline_result("cycSGLD×T16", &runs.cyc, truth),
        tempering_result("DEO-SGD×P16", &deo.0, &deo.1, truth),
        tempering_result("DEO⋆-SGD×P16", &star.0, &star.1, truth),
    ];
    let s_sweep = runs
        .s_sweep
        .iter()
        .map(|(j, o)| {
            tempering_result(
                &format!("DEO⋆-SGD×P16, S = {}", j.options.adapt.target_swap_rate),
                j,
                o,
                truth,
            )
        })
        .collect();
    let w_sweep: Vec<WindowPoint> = runs
        .w_sweep
        .iter()
        .map(|(j, o)| {
            let r = tempering_result("", j, o, truth);
            WindowPoint {
                window: j.options.scheme.window_code(),
                round_trips_per_1000: r.round_trips_per_1000.unwrap_or(f64::NAN),
                round_trips_per_1000_authors: r.round_trips_per_1000_authors.unwrap_or(f64::NAN),
                model_round_trips_per_1000: r.model_round_trips_per_1000.unwrap_or(f64::NAN),
                tv_distance: r.tv_distance,
                tv_modes: r.tv_modes,
            }
        })
        .collect();
    let mut variants = Vec::new();
    for ((w, _), (aj, ao)) in NOTEBOOK.iter().zip(&runs.authors) {
        if let Some((pj, po)) = runs
            .w_sweep
            .iter()
            .find(|(j, _)| j.options.scheme.window_code() == *w)
        {
            variants.push(variant_result(Preset::Paper, &s, pj, po, truth));
        }
        variants.push(variant_result(Preset::AuthorsCode, &s, aj, ao, truth));
    }
    Results {
        settings: s,
        backend: star.1.backend.clone(),
        methods,
        s_sweep,
        w_sweep,
        rules: RuleChoices::default().resolve().into(),
        variants,
        figures: Vec::new(),
        seconds: 0.0,
        shard: None,
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.digits$}"))
}

/// The sizes of a reproduction from its flags.
pub fn settings(args: &ReproduceArgs) -> Result<Settings> {
    let s = Settings {
        iterations: args
            .iterations
            .unwrap_or(if args.quick { 10_000 } else { 20_000 }),
        seeds: args.ensembles.unwrap_or(if args.quick { 3 } else { 5 }),
        chains: 16,
        seed: args.seed,
        thin: 10,
        warmup: 100,
    };
    s.check()?;
    Ok(s)
}

/// The most seeds of a reproduction.
pub const MAX_SEEDS: usize = 100_000;
/// The most iterations of a reproduction's tempering runs.
pub const MAX_ITERATIONS: u64 = 1 << 36;

impl Settings {
    /// Checks the sizes as the flags are checked (a shard's settings, read back by the
    /// merge, are checked the same way); errors name the flag.
    pub fn check(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_SEEDS).contains(&self.seeds) {
            return Err(ConfigError::new(
                "ensembles",
                format!("must be between 1 and {MAX_SEEDS}, got {}", self.seeds),
            ));
        }
        if !(200..=MAX_ITERATIONS).contains(&self.iterations) {
            return Err(ConfigError::new(
                "iterations",
                format!(
                    "must be at least 200 (100 are warm-up) and at most 2^36, got {}",
                    self.iterations
                ),
            ));
        }
        if (self.chains, self.thin, self.warmup) != (16, 10, 100) {
            return Err(ConfigError::new(
                "settings",
                "the reproduction runs 16 chains, keeps every 10th sample after 100 iterations",
            ));
        }
        Ok(())
    }
}

/// Runs the command.
pub fn run(args: &ReproduceArgs, backend: &dyn Backend, json: bool, quiet: bool) -> Result<()> {
    let s = settings(args)?;
    shard_of(&s, args.shard)?;
    let out = OutDir::prepare(
        &args.out,
        &OutPolicy {
            command: "reproduce",
            force: args.force,
            inputs: Vec::new(),
        },
    )?;
    let r = reproduce(s, args.shard, out.path(), backend, quiet)?;
    let folder = out.commit()?;
    super::after_commit(&folder, || print(&s, &r, &folder, json))
}

/// `nrpt reproduce merge`: the outputs of the whole reproduction from the folders of
/// all its shards, the same bytes as the unsharded run's but for the seconds.
pub fn merge(a: &ShardMergeArgs, json: bool) -> Result<()> {
    let out = OutDir::prepare(
        a.out_or("nrpt-reproduce"),
        &OutPolicy {
            command: "reproduce merge",
            force: a.force,
            inputs: a.inputs.clone(),
        },
    )?;
    let set = shard::read_set(&a.inputs, "reproduce")?;
    let first = &set[0].1;
    let s: Settings = nrpt_sampling::json::from_value(first.settings.clone()).map_err(|e| {
        ConfigError::new(
            "inputs",
            format!(
                "{}: its settings are not a reproduction's: {e}",
                set[0].0.display()
            ),
        )
    })?;
    s.check()
        .map_err(|e| ConfigError::new("inputs", format!("{}: {e}", set[0].0.display())))?;
    let mut shards = Vec::with_capacity(set.len());
    for (folder, summary) in &set {
        let r: ShardRecords = shard::read_records(folder, "reproduce")?;
        shards.push((folder.as_path(), summary.seeds[0]..summary.seeds[1], r));
    }
    let seconds: f64 = shards.iter().map(|(_, _, r)| r.seconds).sum();
    let runs = Runs::join(&s, shards)?;
    let truth = Truth::new();
    let mut results = results(s, &runs, &truth);
    results.figures = write_figures(out.path(), &runs, &truth, &results.w_sweep, &s)?;
    results.seconds = seconds;
    write_json(&out.path().join("results.json"), &results)?;
    let folder = out.commit()?;
    super::after_commit(&folder, || print(&s, &results, &folder, json))
}

/// Prints the results of a reproduction whose outputs are in `folder`.
fn print(s: &Settings, r: &Results, folder: &Path, json: bool) -> Result<()> {
    if json {
        say!("{}", nrpt_sampling::json::to_string(&r)?)?;
        return Ok(());
    }
    say!(
        "The paper's 2D experiment: 25-mode target, {} chains, {} iterations, {} seeds per method ({} backend, {:.1} s)\n",
        s.chains,
        s.iterations,
        s.seeds,
        r.backend,
        r.seconds
    )?;
    say!(
        "{:<26} {:>6} {:>22} {:>10} {:>10} {:>9}",
        "method",
        "window",
        "round trips/1000 (std)",
        "(authors)",
        "TV grid",
        "TV modes"
    )?;
    for m in &r.methods {
        say!(
            "{:<26} {:>6} {:>22} {:>10} {:>10.3} {:>9.3}",
            m.name,
            m.window.map_or("—".into(), |w| w.to_string()),
            fmt_opt(m.round_trips_per_1000, 1),
            fmt_opt(m.round_trips_per_1000_authors, 1),
            m.tv_distance,
            m.tv_modes
        )?;
    }
    say!("\nTarget swap rate S (DEO⋆, window from the solver):")?;
    for m in &r.s_sweep {
        say!(
            "  S = {:<4} W = {:<3} round trips/1000 {:>5}  TV grid {:.3}  TV modes {:.3}",
            m.swap_rate.unwrap_or(f64::NAN),
            m.window.unwrap_or(0),
            fmt_opt(m.round_trips_per_1000, 1),
            m.tv_distance,
            m.tv_modes
        )?;
    }
    say!("\nWindow W at S = 0.4 (round trips per 1000 iterations; Lemma 1 in brackets):")?;
    for p in &r.w_sweep {
        say!(
            "  W = {:<3} {:>5.1} standard, {:>5.1} authors' counting  [{:.1}]",
            p.window,
            p.round_trips_per_1000,
            p.round_trips_per_1000_authors,
            p.model_round_trips_per_1000
        )?;
    }
    say!(
        "\nThe paper's rules (the runs above) against the authors' code (--preset authors-code):"
    )?;
    say!(
        "  {:<13} {:>3} {:>10} {:>10} {:>10} {:>8} {:>9}",
        "rules",
        "W",
        "standard",
        "authors'",
        "notebook",
        "TV grid",
        "TV modes"
    )?;
    for v in &r.variants {
        say!(
            "  {:<13} {:>3} {:>10.1} {:>10.1} {:>10} {:>8.3} {:>9.3}",
            match v.preset {
                Preset::Paper => "paper",
                Preset::AuthorsCode => "authors-code",
            },
            v.window,
            v.round_trips_per_1000,
            v.round_trips_per_1000_authors,
            fmt_opt(v.notebook_round_trips_per_1000, 2),
            v.tv_distance,
            v.tv_modes
        )?;
    }
    say!(
        "  (round trips per 1000 iterations; the notebook column is one run of the authors' \
         code, their counting)"
    )?;
    if let Some(sh) = &r.shard {
        say!(
            "\nshard {} of the reproduction: seeds {}..{} of {} (configuration {}); join \
             every shard's folder with `nrpt reproduce merge`",
            sh.shard,
            sh.seeds[0],
            sh.seeds[1],
            sh.total_seeds,
            sh.config_hash
        )?;
    }
    say!("\nfigures and data in {}", folder.display())?;
    Ok(())
}
