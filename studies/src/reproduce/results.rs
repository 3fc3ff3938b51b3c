//! The tables of a reproduction from its runs: every method's round trips (measured, in
//! the authors' counting, and by Lemma 1) and its total variation from the target on
//! the paper's grid and over the mode cells; the two sweeps; the paper's rules beside
//! the authors' code's.

use nrpt_sampling::engine::{Job, RunOutput};
use nrpt_sampling::preset::{Preset, RuleChoices, RulesSummary};
use serde::Serialize;

use super::{NOTEBOOK, Runs, Settings};
use crate::metrics::Truth;
use crate::shard::Summary;

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

/// The tables of a reproduction from its runs (no figures yet, no time).
pub fn results(s: Settings, runs: &Runs, truth: &Truth) -> Results {
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
