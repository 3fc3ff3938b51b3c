//! `nrpt reproduce`: the paper's 2D experiment (Deng et al., AAAI 2023, Figures 3–6),
//! run by [`nrpt_studies::reproduce`]; this command reads the flags, prints the tables
//! and draws the figures.

use std::ops::Range;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use crate::cli::{ReproduceArgs, ShardMergeArgs};
use crate::figures::{self, DensityPanel, LineChart, PathPanel, Series, Style};
use crate::progress::Progress;
use nrpt_sampling::config::ConfigError;
use nrpt_sampling::engine::{Backend, RunOutput};
use nrpt_sampling::output::{Csv, OutDir, OutPolicy, write_json};
use nrpt_sampling::preset::Preset;
use nrpt_studies::metrics::{Grid, Truth};
use nrpt_studies::reproduce::{
    Plan, Results, Runs, Settings, ShardRecords, WindowPoint, results, shard_of,
};
use nrpt_studies::shard::{self, RECORDS, Shard};

/// Runs every method over the seeds `seeds` (all of them, or one shard's block), with a
/// progress bar unless `quiet`.
fn run_all(s: &Settings, seeds: Range<usize>, backend: &dyn Backend, quiet: bool) -> Result<Runs> {
    let plan = Plan::new(s, seeds)?;
    let progress = Progress::new("reproduce", plan.work(), quiet);
    let runs = plan.run(backend, &|n| progress.inc(n));
    progress.finish();
    Ok(runs?)
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
