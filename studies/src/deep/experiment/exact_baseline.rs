//! What every row costs and how far it is from exact sampling: gradient evaluations per
//! seed with the pre-training of the networks a row starts from, the exact-sampling row
//! from the reference's stored HMC draws, and every row's total variation in excess of
//! exact sampling's at its own number of samples.

use serde::Serialize;

use super::records::MethodRecords;
use super::row::Row;
use super::{Kind, Records, Setup};
use crate::deep::exact_sampling::ExactSampling;
use crate::deep::fidelity::{self, SampleCurve};
use crate::deep::methods;
use crate::deep::metrics::score_against;
use nrpt_sampling::stats::{mean_sd, welch_interval};

/// What the exact-sampling row is made of.
#[derive(Clone, Debug, Serialize)]
pub struct ExactSummary {
    /// The reference's stored draws M.
    pub draws: usize,
    /// Draws per realisation K (the methods' samples).
    pub samples: usize,
    /// Disjoint realisations R = ⌊M/K⌋ (the row's "seeds").
    pub realisations: usize,
}

impl Setup<'_> {
    /// Fills every row's gradient evaluations per seed: the pre-training of the
    /// networks it starts from (as recorded) and its sampling run.
    pub(super) fn count_gradients(
        &self,
        records: &Records,
        main: &mut [Row],
        sweep: &mut [Row],
        swaps: &mut [Row],
    ) {
        let p = self.s.chains;
        let per_epoch = self.model.iterations_per_epoch();
        let seeds = records.pretrained.len() / p.max(1);
        // Mean over seeds of the iterations pre-training the first `networks` took.
        let pre = |networks: usize| -> f64 {
            let total: f64 = records
                .pretrained
                .chunks(p.max(1))
                .map(|seed| {
                    seed.iter()
                        .take(networks)
                        .map(|o| (o.epochs * per_epoch).round())
                        .sum::<f64>()
                })
                .sum();
            total / seeds.max(1) as f64
        };
        let mut rows = main
            .iter_mut()
            .chain(sweep.iter_mut())
            .chain(swaps.iter_mut());
        for planned in &self.plan {
            let Some(r) = rows.next() else { break };
            let sampling = match planned.kind {
                Kind::Pretrained => 0,
                Kind::Cyclical | Kind::CyclicalChains => {
                    let (settings, length, chains) = self.cyclical(planned.kind);
                    chains as u64 * methods::cyclical_iterations(length, &settings)
                }
                _ => p as u64 * self.iterations,
            };
            r.gradient_evaluations = pre(planned.kind.networks(p)) + sampling as f64;
        }
    }

    /// The exact-sampling row (appended to `main`, its curve to `curves`) and every
    /// row's excess total variation over exact sampling at its own number of samples,
    /// when the reference has draws; warnings when it has none or too few.
    pub(super) fn exact_baseline(
        &self,
        main: &mut Vec<Row>,
        curves: &mut Vec<SampleCurve>,
        sweep: &mut [Row],
        swaps: &mut [Row],
        warnings: &mut Vec<String>,
    ) -> Option<ExactSummary> {
        let reference = self.reference?;
        let Some(draws) = reference.draws.as_ref() else {
            warnings.push(format!(
                "the reference posterior ({}) holds no single draws (draws.npy.gz): no exact-sampling row and no excess total variation; recompute it with `nrpt reference`, which stores {} by default",
                reference.source,
                crate::deep::reference::draws::DEFAULT_DRAWS
            ));
            return None;
        };
        let data = &self.model.data;
        let exact = ExactSampling::new(draws, data.test.len(), data.classes);
        let k = self.s.samples;
        let realisations = exact.samples(k);
        let summary = ExactSummary {
            draws: draws.count,
            samples: k,
            realisations: realisations.len(),
        };
        if realisations.len() < 2 {
            warnings.push(format!(
                "the reference holds {} draws: {} realisation(s) of {k} for exact sampling, too few for its spread and the excess's interval; lower --samples or recompute the reference with more --draws",
                draws.count,
                realisations.len()
            ));
        }
        if !realisations.is_empty() {
            let records = MethodRecords {
                name: String::new(),
                seconds: 0.0,
                seeds: realisations.iter().map(|x| self.scorer.seed(x)).collect(),
                tempering: None,
            };
            let name = format!("HMC draws (exact)×K{k}");
            let (mut row, curve) = self.scorer.score(&name, &records, 1.0);
            row.exact_sampling = true;
            row.gradient_evaluations = reference.meta.diagnostics.gradient_evaluations as f64
                * self.model.iterations_per_epoch();
            main.push(row);
            curves.push(curve);
        }
        let Some(q) = self.scorer.reference else {
            return Some(summary);
        };
        let mut by_k: Vec<(usize, Vec<f64>)> = Vec::new();
        for r in main
            .iter_mut()
            .chain(sweep.iter_mut())
            .chain(swaps.iter_mut())
            .filter(|r| !r.exact_sampling)
        {
            // Exact sampling's total variations at this K, computed once per K.
            let at = match by_k.iter().position(|(kk, _)| *kk == r.samples) {
                Some(at) => at,
                None => {
                    let v: Vec<f64> = exact
                        .samples(r.samples)
                        .iter()
                        .filter_map(|x| {
                            score_against(&x.average(), self.scorer.labels, data.classes, Some(q))
                                .total_variation
                        })
                        .collect();
                    by_k.push((r.samples, v));
                    by_k.len() - 1
                }
            };
            let tv_exact = &by_k[at].1;
            let ours: Option<Vec<f64>> = r.per_seed.iter().map(|s| s.total_variation).collect();
            let (Some(ours), false) = (ours, tv_exact.is_empty()) else {
                continue;
            };
            let exact_mean = mean_sd(tv_exact).0;
            r.exact_total_variation = Some(exact_mean);
            r.total_variation_excess = Some(mean_sd(&ours).0 - exact_mean);
            r.total_variation_excess_ci = Some(
                welch_interval(&ours, tv_exact, fidelity::LEVEL)
                    .map_or([f64::NAN; 2], |i| [i.lower, i.upper]),
            );
        }
        Some(summary)
    }
}
