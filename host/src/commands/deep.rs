//! `nrpt deep`: the paper's deep-learning comparison at toy scale.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;

use crate::cli::DeepArgs;
use crate::commands::bench::parse_hidden;
use crate::config::ConfigError;
use crate::console::StdoutError;
use crate::data::{self, DataSpec};
use crate::deep::experiment::{self, Curves, Report, Row, Settings};
use crate::deep::{Model, Rates};
use crate::engine::Backend;
use crate::figures::{self, LineChart, Series, Style};
use crate::output::{Csv, OutDir, OutPolicy, write_json};

/// The most swap rates of `--swap-sweep`.
pub const MAX_SWAP_SWEEP: usize = 32;

/// The settings of a run from its flags.
pub fn settings(args: &DeepArgs) -> Result<Settings, ConfigError> {
    let swap_sweep = match &args.swap_sweep {
        None => Vec::new(),
        Some(text) => text
            .split(',')
            .map(|t| match t.trim().parse::<f64>() {
                Ok(s) if s > 0.0 && s < 1.0 => Ok(s),
                _ => Err(ConfigError::new(
                    "swap_sweep",
                    format!("`{t}` is not a swap rate strictly between 0 and 1"),
                )),
            })
            .collect::<Result<Vec<f64>, _>>()?,
    };
    if swap_sweep.len() > MAX_SWAP_SWEEP {
        return Err(ConfigError::new(
            "swap_sweep",
            format!(
                "{} swap rates: at most {MAX_SWAP_SWEEP} (each is a whole tempering run per seed)",
                swap_sweep.len()
            ),
        ));
    }
    let s = Settings {
        chains: args.chains,
        seeds: args.ensembles.unwrap_or(if args.quick { 3 } else { 5 }),
        pretrain_epochs: args.pretrain_epochs,
        epochs: args.epochs.unwrap_or(if args.quick { 60.0 } else { 200.0 }),
        rates: Rates {
            eta_min: args.eta_min,
            eta_max: args.eta_max,
            swap_rate: args.swap_rate,
            ..Rates::default()
        },
        swap_sweep,
        seed: args.seed,
        ..Settings::default()
    };
    if s.seeds == 0 {
        return Err(ConfigError::new("ensembles", "must be at least 1, got 0"));
    }
    if !(2..=64).contains(&s.chains) {
        return Err(ConfigError::new(
            "chains",
            format!("must be between 2 and 64, got {}", s.chains),
        ));
    }
    for (name, v) in [("epochs", s.epochs), ("pretrain_epochs", s.pretrain_epochs)] {
        if !(v.is_finite() && v > 0.0 && v <= 1e5) {
            return Err(ConfigError::new(
                name,
                format!("must be a number of epochs between 0 and 100000, got {v}"),
            ));
        }
    }
    s.rates.check()?;
    Ok(s)
}

/// Runs the command.
pub fn run(args: &DeepArgs, backend: &dyn Backend, json: bool, quiet: bool) -> Result<()> {
    settings(args)?;
    let inputs = [&args.data, &args.labels, &args.test_data, &args.test_labels]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let out = OutDir::prepare(
        &args.out,
        &OutPolicy {
            command: "deep",
            force: args.force,
            inputs,
        },
    )?;
    let say = |what: &str| {
        if !quiet && !json {
            note!("deep: {what}");
        }
    };
    let report = compute(args, backend, &say)?;
    write_outputs(out.path(), &report)?;
    let folder = out.commit()?;
    super::after_commit(&folder, || {
        if json {
            say!("{}", serde_json::to_string(&report)?)?;
            return Ok(());
        }
        print_table(&report)?;
        say!("\nfigures and data in {}", folder.display())?;
        Ok(())
    })
}

/// The comparison of a run's flags, without writing anything; `say(what)` is told
/// what starts.
pub fn compute(args: &DeepArgs, backend: &dyn Backend, say: &dyn Fn(&str)) -> Result<Report> {
    let settings = settings(args)?;
    let spec = DataSpec::from_paths(
        args.dataset,
        args.data.as_deref(),
        args.labels.as_deref(),
        args.test_data.as_deref(),
        args.test_labels.as_deref(),
    )?;
    let dataset = Arc::new(data::load(&spec)?);
    let model = Model::new(
        dataset,
        &parse_hidden(&args.hidden)?,
        args.batch,
        args.prior_sigma,
    )?;
    experiment::run(&model, &settings, backend, say)
}

fn print_table(r: &Report) -> Result<(), StdoutError> {
    say!(
        "{}: {} training and {} test examples; MLP {:?}, batch {}; {} chains, {} seeds, {} + {} epochs ({} iterations per chain; {:.1} s)",
        r.data,
        r.examples.0,
        r.examples.1,
        r.layers,
        r.batch,
        r.settings.chains,
        r.settings.seeds,
        r.settings.pretrain_epochs,
        r.settings.epochs,
        r.iterations,
        r.seconds
    )?;
    say!(
        "pre-trained networks alone: test accuracy {:.2}%\n",
        100.0 * r.pretrained_accuracy
    )?;
    say!(
        "{:<24} {:>6} {:>16} {:>16} {:>8} {:>14} {:>16} {:>8}",
        "method",
        "window",
        "accuracy (%)",
        "NLL / example",
        "NLL sum",
        "ECE (%)",
        "trips/100 ep.",
        "seconds"
    )?;
    for m in r.methods.iter().chain(&r.swap_sweep) {
        print_row(m)?;
    }
    for m in r.methods.iter().chain(&r.swap_sweep) {
        if let Some(rates) = &m.pair_indicator_rates {
            let list: Vec<String> = rates.iter().map(|v| format!("{v:.3}")).collect();
            say!("  swap rates of {}: {}", m.name, list.join(" "))?;
        }
    }
    Ok(())
}

fn print_row(m: &Row) -> Result<(), StdoutError> {
    say!(
        "{:<24} {:>6} {:>8.2} ± {:<5.2} {:>8.4} ± {:<5.4} {:>8.1} {:>6.2} ± {:<5.2} {:>16} {:>8.1}",
        m.name,
        m.window.map_or("—".to_string(), |w| w.to_string()),
        100.0 * m.accuracy,
        100.0 * m.accuracy_sd,
        m.nll,
        m.nll_sd,
        m.nll_sum,
        100.0 * m.ece,
        100.0 * m.ece_sd,
        m.round_trips_per_100_epochs
            .map_or("—".to_string(), |t| format!(
                "{t:.1} ± {:.1}",
                m.round_trips_per_100_epochs_sd.unwrap_or(0.0)
            )),
        m.seconds
    )
}

fn write_outputs(dir: &Path, r: &Report) -> Result<()> {
    write_json(&dir.join("results.json"), r)?;
    let mut csv = Csv::new(&[
        "method",
        "window",
        "swap_rate",
        "accuracy",
        "accuracy_sd",
        "nll",
        "nll_sd",
        "nll_sum",
        "ece",
        "ece_sd",
        "round_trips_per_100_epochs",
        "round_trips_per_100_epochs_sd",
        "seconds",
    ]);
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.6}"));
    for m in r.methods.iter().chain(&r.swap_sweep) {
        csv.row([
            m.name.clone(),
            m.window.map_or(String::new(), |w| w.to_string()),
            opt(m.swap_rate),
            format!("{:.6}", m.accuracy),
            format!("{:.6}", m.accuracy_sd),
            format!("{:.6}", m.nll),
            format!("{:.6}", m.nll_sd),
            format!("{:.3}", m.nll_sum),
            format!("{:.6}", m.ece),
            format!("{:.6}", m.ece_sd),
            opt(m.round_trips_per_100_epochs),
            opt(m.round_trips_per_100_epochs_sd),
            format!("{:.3}", m.seconds),
        ]);
    }
    csv.write(&dir.join("table.csv"))?;
    if r.curves.is_empty() {
        return Ok(());
    }
    curve_figures(dir, r)
}

/// Figure 7 of the paper at toy scale: round trips against epochs for both windows,
/// accuracy by level, the learning rates, the swap rates.
fn curve_figures(dir: &Path, r: &Report) -> Result<()> {
    let pts = |c: &Curves, ys: &[f64]| -> Vec<(f64, f64)> {
        c.epochs.iter().copied().zip(ys.iter().copied()).collect()
    };
    // Round trips against epochs.
    let trips: Vec<Vec<(f64, f64)>> = r.curves.iter().map(|c| pts(c, &c.round_trips)).collect();
    let series: Vec<Series<'_>> = r
        .curves
        .iter()
        .zip(&trips)
        .map(|(c, p)| Series {
            name: &c.name,
            points: p,
            style: Style::Line,
        })
        .collect();
    figures::lines(
        &dir.join("fig7a_round_trips"),
        &LineChart {
            title: "Round trips against epochs (mean over seeds)",
            x_label: "epoch of sampling",
            y_label: "round trips so far",
            x_log: false,
            y_log: false,
            series: &series,
            hlines: &[],
            vlines: &[],
        },
    )?;
    let mut csv = Csv::new(&["epoch", "method", "round_trips"]);
    for (c, p) in r.curves.iter().zip(&trips) {
        for (x, y) in p {
            csv.row([format!("{x:.3}"), c.name.clone(), format!("{y:.3}")]);
        }
    }
    csv.write(&dir.join("fig7a_round_trips.csv"))?;

    // Accuracy of each level's final network.
    let levels: Vec<Vec<(f64, f64)>> = r
        .curves
        .iter()
        .map(|c| {
            c.accuracy_by_level
                .iter()
                .enumerate()
                .map(|(l, &a)| (l as f64, 100.0 * a))
                .collect()
        })
        .collect();
    let series: Vec<Series<'_>> = r
        .curves
        .iter()
        .zip(&levels)
        .map(|(c, p)| Series {
            name: &c.name,
            points: p,
            style: Style::LinePoints,
        })
        .collect();
    figures::lines(
        &dir.join("fig7b_accuracy_by_level"),
        &LineChart {
            title: "Test accuracy of each level's final network (mean over seeds)",
            x_label: "level (0: smallest learning rate)",
            y_label: "test accuracy (%)",
            x_log: false,
            y_log: false,
            series: &series,
            hlines: &[],
            vlines: &[],
        },
    )?;
    // Shares in [0, 1], as in results.json (the figure shows percent).
    let mut csv = Csv::new(&["level", "method", "accuracy"]);
    for (c, p) in r.curves.iter().zip(&levels) {
        for (x, y) in p {
            csv.row([format!("{x}"), c.name.clone(), format!("{:.6}", y / 100.0)]);
        }
    }
    csv.write(&dir.join("fig7b_accuracy_by_level.csv"))?;

    // The learning rates and the swap-indicator rates of DEO⋆ (means over seeds).
    let star = &r.curves[0];
    let p = star.ladder.first().map_or(0, Vec::len);
    let ladder: Vec<Vec<(f64, f64)>> = (0..p)
        .map(|l| {
            pts(
                star,
                &star.ladder.iter().map(|row| row[l]).collect::<Vec<_>>(),
            )
        })
        .collect();
    let names: Vec<String> = (0..p).map(|l| format!("level {l}")).collect();
    let series: Vec<Series<'_>> = ladder
        .iter()
        .zip(&names)
        .map(|(pts, name)| Series {
            name,
            points: pts,
            style: Style::Line,
        })
        .collect();
    if !series.is_empty() {
        figures::lines(
            &dir.join("fig7c_learning_rates"),
            &LineChart {
                title: "Learning rates of DEO⋆ adapting (mean over seeds, per example)",
                x_label: "epoch of sampling",
                y_label: "learning rate",
                x_log: false,
                y_log: true,
                series: &series,
                hlines: &[],
                vlines: &[],
            },
        )?;
    }
    let pairs = star.pair_indicator_rates.first().map_or(0, Vec::len);
    let rates: Vec<Vec<(f64, f64)>> = (0..pairs)
        .map(|l| {
            pts(
                star,
                &star
                    .pair_indicator_rates
                    .iter()
                    .map(|row| row[l])
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let names: Vec<String> = (0..pairs).map(|l| format!("pair {l}–{}", l + 1)).collect();
    let series: Vec<Series<'_>> = rates
        .iter()
        .zip(&names)
        .map(|(pts, name)| Series {
            name,
            points: pts,
            style: Style::Line,
        })
        .collect();
    let target = r.settings.rates.swap_rate;
    let label = format!("target S = {target}");
    if !series.is_empty() {
        figures::lines(
            &dir.join("fig7d_swap_rates"),
            &LineChart {
                title: "Swap-indicator rates of DEO⋆ (between trace entries, mean over seeds)",
                x_label: "epoch of sampling",
                y_label: "share of iterations with e(l+1) + C < e(l)",
                x_log: false,
                y_log: false,
                series: &series,
                hlines: &[(target, &label)],
                vlines: &[],
            },
        )?;
    }
    let mut header = vec!["epoch".to_string()];
    header.extend((0..p).map(|l| format!("eta_{l}")));
    header.extend((0..pairs).map(|l| format!("rate_{l}")));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut csv = Csv::new(&refs);
    for (i, x) in star.epochs.iter().enumerate() {
        let mut cells = vec![format!("{x:.3}")];
        cells.extend(
            star.ladder
                .get(i)
                .into_iter()
                .flatten()
                .map(|v| format!("{v:.6e}")),
        );
        cells.extend(
            star.pair_indicator_rates
                .get(i)
                .into_iter()
                .flatten()
                .map(|v| format!("{v:.4}")),
        );
        csv.row(cells);
    }
    csv.write(&dir.join("fig7cd_ladder_and_rates.csv"))?;
    Ok(())
}
