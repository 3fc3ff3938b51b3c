//! `nrpt scale`: round-trip time against P and W, measured beside Lemma 1, in sweeps
//! that split into parts (`--part i/n`: every n-th point), and `nrpt scale merge` to put
//! the parts together.
//!
//! Kept whole past 600 lines: the command's flags and their checks, two figures, a table
//! and the checks of the parts it merges, all of the sweep's results.json.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::cli::{MergeArgs, SweepArgs};
use crate::figures::{self, LineChart, Series, Style};
use crate::progress::Progress;
use nrpt_sampling::config::ConfigError;
use nrpt_sampling::console::StdoutError;
use nrpt_sampling::engine::Backend;
use nrpt_sampling::output::{Csv, OutDir, OutPolicy, write_json};
use nrpt_studies::scale::{self, Fit, Point, Settings};

pub use nrpt_studies::shard::Shard;
use nrpt_studies::shard::ShardError;

/// `results.json` of a sweep or a part of one.
#[derive(Debug, Serialize, Deserialize)]
pub struct Results {
    /// How the sweep ran.
    pub settings: Settings,
    /// The part this file holds, i/n: the points i, i + n, … (None: the whole sweep,
    /// or a merge; `shard` in the files of earlier releases).
    #[serde(alias = "shard")]
    pub part: Option<Shard>,
    /// Points, in sweep order.
    pub points: Vec<Point>,
    /// Log-log slopes of `E[T]` against P per window rule and swap rate.
    pub fits: Vec<Fit>,
}

fn settings(a: &SweepArgs) -> Result<Settings> {
    let chains = scale::parse_chains(&a.chains).map_err(|e| ConfigError::new("chains", e))?;
    let windows: Vec<String> = a.window.split(',').map(|w| w.trim().to_string()).collect();
    for w in &windows {
        scale::window_of(w, 16, 0.4)?;
    }
    let mut swap_rates = Vec::new();
    for r in a.swap_rate.split(',') {
        let v: f64 = r
            .trim()
            .parse()
            .map_err(|_| ConfigError::new("swap_rate", format!("`{r}` is not a number")))?;
        if !(v > 0.0 && v < 1.0) {
            return Err(ConfigError::new(
                "swap_rate",
                format!("must lie strictly between 0 and 1, got {v}"),
            )
            .into());
        }
        swap_rates.push(v);
    }
    if a.rates_file.is_some() && a.target != nrpt_studies::scale::SweepTarget::Bernoulli {
        return Err(ConfigError::new(
            "rates_file",
            "applies to --target bernoulli only (the samplers adapt their own rates)",
        )
        .into());
    }
    let profile = match &a.rates_file {
        None => None,
        Some(path) => {
            let text = nrpt_sampling::input::read_text(
                path,
                nrpt_sampling::input::MAX_LIST_BYTES,
                "the cap of a rates file",
            )
            .map_err(|e| {
                ConfigError::new("rates_file", format!("cannot read {}: {e}", path.display()))
            })?;
            let values: Result<Vec<f64>, _> = text
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|t| !t.is_empty())
                .map(str::parse::<f64>)
                .collect();
            let values = values.map_err(|e| {
                ConfigError::new("rates_file", format!("not a list of numbers: {e}"))
            })?;
            if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(ConfigError::new(
                    "rates_file",
                    "needs one or more positive numbers (relative swap rates of the pairs)",
                )
                .into());
            }
            Some(values)
        }
    };
    if a.ensembles == Some(0) {
        return Err(ConfigError::new("ensembles", "must be at least 1").into());
    }
    if !(a.target_se > 0.0 && a.target_se < 1.0) {
        return Err(ConfigError::new("target_se", "must lie strictly between 0 and 1").into());
    }
    let max_iterations = a.max_iterations.unwrap_or(match a.target {
        nrpt_studies::scale::SweepTarget::Bernoulli => 100_000_000,
        _ => 20_000,
    });
    if !(1..=1 << 40).contains(&max_iterations) {
        return Err(ConfigError::new("max_iterations", "must be between 1 and 2^40").into());
    }
    if a.target == nrpt_studies::scale::SweepTarget::GaussianPath
        && max_iterations < nrpt_studies::exact::MIN_ITERATIONS
    {
        return Err(ConfigError::new(
            "max_iterations",
            format!(
                "gaussian-path needs at least {} iterations",
                nrpt_studies::exact::MIN_ITERATIONS
            ),
        )
        .into());
    }
    if let Some(e) = a.ensembles
        && e > 1 << 24
    {
        return Err(ConfigError::new("ensembles", format!("must be at most 2^24, got {e}")).into());
    }
    let samples_states = a.target != nrpt_studies::scale::SweepTarget::Bernoulli;
    if samples_states && !(1..=nrpt_sampling::config::MAX_DIM).contains(&a.dim) {
        return Err(ConfigError::new(
            "dim",
            format!(
                "must be between 1 and {}, got {}",
                nrpt_sampling::config::MAX_DIM,
                a.dim
            ),
        )
        .into());
    }
    // The largest point's states must fit (ensembles chosen automatically stay small).
    let most_chains = chains.iter().copied().max().unwrap_or(2) as u128;
    let dim = if samples_states { a.dim as u128 } else { 1 };
    let values = most_chains * a.ensembles.unwrap_or(1) as u128 * dim;
    if values > nrpt_sampling::config::MAX_VALUES {
        return Err(ConfigError::new(
            "ensembles",
            format!(
                "{most_chains} chains × {} ensembles × {dim} = {values} values: more than the \
                 {} accepted",
                a.ensembles.unwrap_or(1),
                nrpt_sampling::config::MAX_VALUES
            ),
        )
        .into());
    }
    let s = Settings {
        target: a.target,
        chains,
        windows,
        swap_rates,
        profile,
        ensembles: a.ensembles.unwrap_or(0),
        target_se: a.target_se,
        max_iterations,
        warmup: a.warmup,
        seed: a.seed,
        dim: a.dim,
        simulator: a.simulator,
    };
    s.check()?;
    if s.target == nrpt_studies::scale::SweepTarget::Bernoulli {
        check_bernoulli_memory(&s)?;
    }
    Ok(s)
}

/// The Bernoulli points run one after the other, each holding the index processes of
/// its ensembles (bit-sliced groups of 64, or SIMD groups of 4 lanes at most: the
/// largest per ensemble): the largest point is checked against `--max-memory`. The
/// other models' runs check their own.
fn check_bernoulli_memory(s: &Settings) -> Result<(), ConfigError> {
    use nrpt_sampling::engine::memory::{Footprint, PROCESS_BYTES, check};
    use nrpt_studies::scale::Simulator;
    use nrpt_studies::scale::bitsliced::{BitGroup, ENSEMBLES};
    use nrpt_studies::scale::simulator::Group;
    let largest = s.chains.iter().fold(0u64, |most, &p| {
        let e = nrpt_studies::scale::ensembles_for(s, p);
        let bytes = match s.simulator {
            Simulator::Bitsliced => {
                (e.div_ceil(ENSEMBLES) as u64).saturating_mul(BitGroup::bytes(p, false))
            }
            Simulator::Lanes => (e.div_ceil(4) as u64).saturating_mul(Group::<4>::bytes(p)),
        };
        most.max(bytes)
    });
    let mut f = Footprint::default();
    f.add("process", PROCESS_BYTES);
    f.add("index processes", largest);
    check(&f, "--ensembles or --chains").map_err(|m| ConfigError::new("max_memory", m))
}

/// Writes the folder of a sweep into `dir`: `results.json`, `points.csv` and the
/// figures with their data; returns the figures' stems (the Python package calls it
/// too).
pub fn write_outputs(dir: &Path, r: &Results) -> Result<Vec<String>> {
    write_json(&dir.join("results.json"), r)?;
    let mut csv = Csv::new(&[
        "index",
        "chains",
        "window_rule",
        "window",
        "swap_rate",
        "round_trips_per_1000",
        "expected_round_trip",
        "expected_round_trip_se",
        "model_expected_round_trip",
        "ratio",
        "ensembles",
        "warmup",
        "iterations",
        "round_trips",
        "capped",
        "seconds",
    ]);
    for p in &r.points {
        csv.row([
            p.index.to_string(),
            p.chains.to_string(),
            p.window_rule.clone(),
            p.window.to_string(),
            p.swap_rate.to_string(),
            format!("{:.6}", p.round_trips_per_1000),
            format!("{:.6e}", p.expected_round_trip),
            format!("{:.6e}", p.expected_round_trip_se),
            format!("{:.6e}", p.model_expected_round_trip),
            format!("{:.5}", p.ratio),
            p.ensembles.to_string(),
            p.warmup.to_string(),
            p.iterations.to_string(),
            p.round_trips.to_string(),
            p.capped.to_string(),
            format!("{:.3}", p.seconds),
        ]);
    }
    csv.write(&dir.join("points.csv"))?;
    let mut written = Vec::new();
    if let Some(stem) = figure_vs_chains(dir, r)? {
        written.push(stem);
    }
    if let Some(stem) = figure_vs_window(dir, r)? {
        written.push(stem);
    }
    Ok(written)
}

/// A series' name, points and style, owned.
type SeriesData = (String, Vec<(f64, f64)>, Style);

/// E[T] against P on log-log axes: each window rule's points, its fitted slope, and
/// Lemma 1's curve.
fn figure_vs_chains(dir: &Path, r: &Results) -> Result<Option<String>> {
    let mut series_data: Vec<SeriesData> = Vec::new();
    for f in &r.fits {
        let mut pts: Vec<&Point> = r
            .points
            .iter()
            .filter(|p| {
                p.window_rule == f.window_rule && scale::group_rate(p) == f.swap_rate.to_bits()
            })
            .collect();
        pts.sort_by_key(|p| p.chains);
        let label = if f.swap_rate.is_nan() {
            format!("W = {}", f.window_rule)
        } else {
            format!("W = {}, S = {}", f.window_rule, f.swap_rate)
        };
        series_data.push((
            format!("{label}: measured, slope {:.2}", f.slope),
            pts.iter()
                .map(|p| (p.chains as f64, p.expected_round_trip))
                .collect(),
            Style::LinePoints,
        ));
        series_data.push((
            format!("{label}: Lemma 1, slope {:.2}", f.model_slope),
            pts.iter()
                .map(|p| (p.chains as f64, p.model_expected_round_trip))
                .collect(),
            Style::Dashed,
        ));
    }
    // The exact path: Syed et al.'s limit P (2 + 2Λ̂), once (it does not depend on W).
    let mut limit: Vec<(f64, f64)> = r
        .points
        .iter()
        .filter_map(|p| p.limit_expected_round_trip.map(|t| (p.chains as f64, t)))
        .collect();
    limit.sort_by(|a, b| a.0.total_cmp(&b.0));
    limit.dedup_by(|a, b| a.0 == b.0);
    if !limit.is_empty() {
        series_data.push((
            "limit P (2 + 2Λ̂) of W = 1 as P grows".into(),
            limit,
            Style::Points,
        ));
    }
    if series_data.is_empty() {
        return Ok(None);
    }
    let series: Vec<Series<'_>> = series_data
        .iter()
        .map(|(n, p, s)| Series {
            name: n,
            points: p,
            style: *s,
        })
        .collect();
    figures::lines(
        &dir.join("et_vs_chains"),
        &LineChart {
            title: "Expected round-trip time against the number of chains",
            x_label: "chains P",
            y_label: "E[T] (iterations)",
            x_log: true,
            y_log: true,
            series: &series,
            hlines: &[],
            vlines: &[],
        },
    )?;
    let mut csv = Csv::new(&[
        "window_rule",
        "swap_rate",
        "slope",
        "model_slope",
        "intercept",
        "points",
    ]);
    for f in &r.fits {
        csv.row([
            f.window_rule.clone(),
            f.swap_rate.to_string(),
            format!("{:.4}", f.slope),
            format!("{:.4}", f.model_slope),
            format!("{:.4}", f.intercept),
            f.points.to_string(),
        ]);
    }
    csv.write(&dir.join("et_vs_chains.csv"))?;
    Ok(Some("et_vs_chains".into()))
}

/// E[T] against W at the P (and S) with the most numeric windows, with W⋆ marked.
fn figure_vs_window(dir: &Path, r: &Results) -> Result<Option<String>> {
    let mut best: Option<(usize, u64, Vec<&Point>)> = None;
    for p in &r.points {
        let key = (p.chains, p.swap_rate.to_bits());
        let group: Vec<&Point> = r
            .points
            .iter()
            .filter(|q| (q.chains, q.swap_rate.to_bits()) == key)
            .collect();
        let mut ws: Vec<u32> = group.iter().map(|q| q.window).collect();
        ws.sort_unstable();
        ws.dedup();
        if ws.len() >= 3 && best.as_ref().is_none_or(|b| group.len() > b.2.len()) {
            best = Some((key.0, key.1, group));
        }
    }
    let Some((chains, bits, mut group)) = best else {
        return Ok(None);
    };
    let rate = f64::from_bits(bits);
    group.sort_by_key(|p| p.window);
    let measured: Vec<(f64, f64)> = group
        .iter()
        .map(|p| (f64::from(p.window), p.expected_round_trip))
        .collect();
    let max_w = group.last().map_or(1, |p| p.window).max(2);
    let model: Vec<(f64, f64)> = (1..=max_w)
        .map(|w| {
            let rates = vec![rate; chains - 1];
            (f64::from(w), scale::model_expected_round_trip(&rates, w))
        })
        .collect();
    let w_star = nrpt_core::optimal::w_star(chains, rate).unwrap_or(1.0);
    let title = format!("E[T] against the window, P = {chains}, S = {rate}");
    figures::lines(
        &dir.join("et_vs_window"),
        &LineChart {
            title: &title,
            x_label: "window W (iterations)",
            y_label: "E[T] (iterations)",
            x_log: true,
            y_log: true,
            series: &[
                Series {
                    name: "measured",
                    points: &measured,
                    style: Style::LinePoints,
                },
                Series {
                    name: "Lemma 1",
                    points: &model,
                    style: Style::Dashed,
                },
            ],
            hlines: &[],
            vlines: &[(w_star, "W⋆")],
        },
    )?;
    let mut csv = Csv::new(&[
        "window",
        "expected_round_trip",
        "expected_round_trip_se",
        "model_expected_round_trip",
    ]);
    for p in &group {
        csv.row([
            p.window.to_string(),
            format!("{:.6e}", p.expected_round_trip),
            format!("{:.6e}", p.expected_round_trip_se),
            format!("{:.6e}", p.model_expected_round_trip),
        ]);
    }
    csv.write(&dir.join("et_vs_window.csv"))?;
    Ok(Some("et_vs_window".into()))
}

fn print_table(r: &Results) -> Result<(), StdoutError> {
    say!(
        "{:>7} {:>7} {:>6} {:>6} {:>14} {:>9} {:>14} {:>7} {:>9}",
        "chains",
        "window",
        "W",
        "S",
        "E[T] measured",
        "± SE",
        "E[T] Lemma 1",
        "ratio",
        "seconds"
    )?;
    for p in &r.points {
        // A point capped before its first round trip has no measured E[T].
        let measured = p.expected_round_trip.is_finite();
        let (et, se, ratio) = if measured {
            (
                format!("{:.1}", p.expected_round_trip),
                format!(
                    "{:.2}%",
                    100.0 * p.expected_round_trip_se / p.expected_round_trip
                ),
                format!("{:.4}", p.ratio),
            )
        } else {
            ("none".to_string(), "-".to_string(), "-".to_string())
        };
        say!(
            "{:>7} {:>7} {:>6} {:>6} {:>14} {:>9} {:>14.1} {:>7} {:>9.1}{}",
            p.chains,
            p.window_rule,
            p.window,
            // The gaussian path's S is measured (1 − mean rejection), not a setting.
            if p.lambda.is_some() {
                format!("{:.3}", p.swap_rate)
            } else {
                p.swap_rate.to_string()
            },
            et,
            se,
            p.model_expected_round_trip,
            ratio,
            p.seconds,
            match (p.capped, measured) {
                (true, true) => "  (iteration cap reached)",
                (true, false) => "  (iteration cap reached before any round trip)",
                _ => "",
            }
        )?;
    }
    let lambdas: Vec<f64> = r.points.iter().filter_map(|p| p.lambda).collect();
    if !lambdas.is_empty() {
        let mean = lambdas.iter().sum::<f64>() / lambdas.len() as f64;
        let closed = nrpt_core::exact::GaussianPath::standard(r.settings.dim)
            .map(|g| g.global_barrier())
            .unwrap_or(f64::NAN);
        let mut limits: Vec<(usize, f64)> = r
            .points
            .iter()
            .filter_map(|p| p.limit_expected_round_trip.map(|t| (p.chains, t)))
            .collect();
        limits.dedup_by_key(|x| x.0);
        say!(
            "barrier Λ̂ = {mean:.4} (mean over the points; closed form {closed:.4} for D = {}); \
             the limit of W = 1 as P grows, E[T] = P (2 + 2Λ̂): {}",
            r.settings.dim,
            limits
                .iter()
                .map(|(p, t)| format!("{t:.1} at P = {p}"))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    for f in &r.fits {
        let rate = if f.swap_rate.is_nan() {
            String::new()
        } else {
            format!(", S = {}", f.swap_rate)
        };
        say!(
            "slope of log E[T] against log P, W = {}{rate}: {:.3} measured, {:.3} Lemma 1 ({} points)",
            f.window_rule,
            f.slope,
            f.model_slope,
            f.points
        )?;
    }
    Ok(())
}

/// Runs a sweep (or one part of it).
pub fn run(a: &SweepArgs, backend: &dyn Backend, json: bool, quiet: bool) -> Result<()> {
    // Inputs are read once (a rates file may be a pipe).
    let s = settings(a)?;
    let out = OutDir::prepare(
        &a.out,
        &OutPolicy {
            command: "scale",
            force: a.force,
            inputs: a.rates_file.iter().cloned().collect(),
        },
    )?;
    let results = compute_settled(s, a.part, backend, quiet, &|p| {
        if !quiet && !json {
            note!(
                "P = {:>5}, W = {:>5} ({}), S = {}: E[T] = {:.1} (Lemma 1 {:.1}, ratio {:.4}) in {:.1} s",
                p.chains,
                p.window,
                p.window_rule,
                p.swap_rate,
                p.expected_round_trip,
                p.model_expected_round_trip,
                p.ratio,
                p.seconds
            );
        }
    })?;
    finish(out, &results, json, "results in")
}

/// The points and fits of a sweep (or of one part of it), without writing anything:
/// a progress bar unless `quiet`, and `done(point)` as each point is measured.
pub fn compute(
    a: &SweepArgs,
    backend: &dyn Backend,
    quiet: bool,
    done: &(dyn Fn(&Point) + Sync),
) -> Result<Results> {
    compute_settled(settings(a)?, a.part, backend, quiet, done)
}

/// [`compute`] with the settings already read.
fn compute_settled(
    s: Settings,
    part: Option<Shard>,
    backend: &dyn Backend,
    quiet: bool,
    done: &(dyn Fn(&Point) + Sync),
) -> Result<Results> {
    let all = scale::enumerate(&s);
    let indices: Vec<usize> = (0..all.len())
        .filter(|&i| part.is_none_or(|sh| sh.holds(i)))
        .collect();
    scale::check_points(&s, &indices)?;
    let progress = Progress::new("scale", indices.len() as u64, quiet);
    let points = scale::run(&s, &indices, backend, &|p| {
        progress.inc(1);
        done(p);
    })?;
    progress.finish();
    let fits = scale::fits(&points);
    Ok(Results {
        settings: s,
        part,
        points,
        fits,
    })
}

/// Merges the outputs of the parts into one sweep.
pub fn merge(a: &MergeArgs, json: bool) -> Result<()> {
    let out = OutDir::prepare(
        &a.out,
        &OutPolicy {
            command: "scale merge",
            force: a.force,
            inputs: a.inputs.clone(),
        },
    )?;
    let mut parts: Vec<(PathBuf, Results)> = Vec::new();
    for dir in &a.inputs {
        let path = if dir.is_dir() {
            dir.join("results.json")
        } else {
            dir.clone()
        };
        let text = nrpt_sampling::input::read_text(
            &path,
            nrpt_sampling::input::MAX_RESULTS_BYTES,
            "the cap of a shard's results.json",
        )
        .map_err(|e| ConfigError::new("inputs", format!("cannot read {}: {e}", path.display())))?;
        let r: Results = nrpt_sampling::json::from_str(&text).map_err(|e| {
            ConfigError::new(
                "inputs",
                format!(
                    "{} is not a results.json of nrpt scale: {e}",
                    path.display()
                ),
            )
        })?;
        r.settings.check().map_err(|e| {
            ConfigError::new("inputs", format!("{}: its settings: {e}", path.display()))
        })?;
        parts.push((dir.clone(), r));
    }
    let points = merged_points(&parts)?;
    let settings = parts[0].1.settings.clone();
    let fits = scale::fits(&points);
    let results = Results {
        settings,
        part: None,
        points,
        fits,
    };
    finish(out, &results, json, "merged into")
}

/// The points of every part of one sweep, each once, in sweep order: refused, by
/// name, when the parts are not all of one sweep exactly once (another sweep, a part
/// twice, a part missing) or a point is not what the sweep could have written.
fn merged_points(parts: &[(PathBuf, Results)]) -> Result<Vec<Point>> {
    let Some((first_folder, first)) = parts.first() else {
        return Err(ShardError::NoInputs.into());
    };
    let shard_of = |r: &Results| r.part.unwrap_or(Shard::WHOLE);
    let count = shard_of(first).count;
    let mut seen: Vec<(usize, &PathBuf)> = Vec::new();
    for (folder, r) in parts {
        let shard = shard_of(r);
        if r.settings != first.settings || shard.count != count {
            return Err(ShardError::OtherRun {
                folder: folder.clone(),
                first: first_folder.clone(),
                found: format!("other settings or {} parts", shard.count),
                expected: format!("{count} parts"),
            }
            .into());
        }
        if let Some((_, other)) = seen.iter().find(|(i, _)| *i == shard.index) {
            return Err(ShardError::Duplicate {
                shard,
                first: (*other).clone(),
                second: folder.clone(),
            }
            .into());
        }
        seen.push((shard.index, folder));
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.iter().any(|(s, _)| s == i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(ShardError::Missing {
            missing: missing.join(", "),
            count,
            given: parts.len(),
        }
        .into());
    }
    let all = scale::enumerate(&first.settings);
    let mut points: Vec<Option<Point>> = vec![None; all.len()];
    for (folder, r) in parts {
        let shard = shard_of(r);
        let bad = |why: String| {
            ConfigError::new(
                "inputs",
                format!(
                    "{}: its results do not fit part {shard} of its sweep: {why}",
                    folder.display()
                ),
            )
        };
        for p in &r.points {
            let entry = all
                .get(p.index)
                .filter(|_| shard.holds(p.index))
                .ok_or_else(|| bad(format!("point {} is not one of the part's", p.index)))?;
            p.check(&first.settings, entry)
                .map_err(|why| bad(format!("point {}: {why}", p.index)))?;
            let slot = &mut points[p.index];
            if slot.is_some() {
                return Err(bad(format!("point {} is given twice", p.index)).into());
            }
            *slot = Some(p.clone());
        }
        if let Some(i) = (0..all.len()).find(|&i| shard.holds(i) && points[i].is_none()) {
            return Err(bad(format!("point {i} is missing")).into());
        }
    }
    Ok(points.into_iter().flatten().collect())
}

/// Writes the outputs of a sweep and prints them (JSON, or a table and where they went).
fn finish(out: OutDir, results: &Results, json: bool, verb: &str) -> Result<()> {
    let figures = write_outputs(out.path(), results)?;
    let out = out.commit()?;
    super::after_commit(&out, || {
        if json {
            say!("{}", nrpt_sampling::json::to_string(results)?)?;
        } else {
            print_table(results)?;
            if figures.is_empty() {
                say!(
                    "{verb} {} (no figure: no point has a measured round trip)",
                    out.display()
                )?;
            } else {
                say!("{verb} {} (figures: {})", out.display(), figures.join(", "))?;
            }
        }
        Ok(())
    })
}
