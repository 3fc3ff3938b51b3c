//! The runs of a comparison over a block of seeds: pre-training, then every row's
//! method from the pre-trained networks, the tempering runs on the backend given and the
//! others on the CPU, each seed's samples scored as they come.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use nrpt_core::window::Scheme;
use rayon::prelude::*;

use super::records::{MethodRecords, Records, SeedScores, SeedTempering};
use super::{Kind, Setup, sample_record};
use crate::deep::methods::{self, ChainSettings, CyclicalSettings, SwagSettings, evenly};
use crate::deep::metrics::{Samples, score_against};
use crate::deep::{Rates, Sampling, TargetLevel, tempering_job};
use nrpt_sampling::engine::{Backend, EngineError, Job, RunOutput};
use nrpt_sampling::error::ConfigError;
use nrpt_sampling::targets::classifier::Classifier;

impl Setup<'_> {
    /// Runs every method over the seeds `seeds` (all of the run's, or one shard's
    /// block) and keeps what the report needs. `backend` runs the tempering jobs; the
    /// other methods run on the CPU. `progress(what)` is told what starts.
    pub fn collect(
        &self,
        backend: &dyn Backend,
        seeds: Range<usize>,
        progress: &dyn Fn(&str),
    ) -> Result<Records, crate::error::StudyError> {
        let started = Instant::now();
        let (s, rates) = (self.s, self.rates);
        let target = self.model;
        let data = &target.data;
        let (p, d, n) = (s.chains, target.dim(), seeds.len());

        progress("pre-training");
        let pre_model = Arc::new(self.model.with_data(Arc::clone(&self.pre_data))?);
        let pre_chains = ChainSettings {
            target: Arc::clone(&pre_model),
            seed: s.seed,
            momentum: rates.momentum,
        };
        let t = Instant::now();
        let (states, pretrained) = methods::pretrain(
            &pre_chains,
            seeds.clone(),
            p,
            &s.pretraining,
            rates.eta_max / pre_model.examples() as f64,
        )?;
        let states = Arc::new(states);
        let pre_samples: Vec<Samples> = (0..n)
            .map(|i| {
                let mut one = Samples::new(data.test.len(), data.classes);
                for theta in states[i * p * d..(i + 1) * p * d].chunks(d) {
                    one.push(target, theta, &data.test.x);
                }
                one
            })
            .collect();
        let single_accuracy: Vec<f64> = pre_samples
            .iter()
            .flat_map(|s| (0..s.len()).map(move |j| s.one(j)))
            .map(|probs| score_against(&probs, &data.test.y, data.classes, None).accuracy)
            .collect();
        let pre_seeds = pre_samples.iter().map(|s| self.scorer.seed(s)).collect();
        drop(pre_samples);
        let mut methods = Vec::with_capacity(self.plan.len());
        let mut pre_name = String::new();
        if let Some(first) = self.plan.first() {
            pre_name.clone_from(&first.name);
        }
        methods.push(MethodRecords {
            name: pre_name,
            seconds: t.elapsed().as_secs_f64(),
            seeds: pre_seeds,
            tempering: None,
        });

        let chains = ChainSettings {
            target: Arc::clone(target),
            seed: s.seed,
            momentum: rates.momentum,
        };
        let n_ex = self.model.examples() as f64;
        let iterations = self.iterations;
        let long = iterations * p as u64;
        let start = |i: usize, members: usize| &states[i * p * d..(i * p + members) * d];
        let first = seeds.start;
        for planned in self.plan.iter().skip(1) {
            let name = &planned.name;
            progress(name);
            let t = Instant::now();
            let rates = planned.rates;
            let (per_seed, tempering) = match planned.kind {
                Kind::Pretrained => continue,
                Kind::Tempering(scheme, level) => {
                    let (a, b) = self.tempering(scheme, level, rates, &seeds, &states, backend)?;
                    (a, Some(b))
                }
                Kind::Ensemble => {
                    let keep = evenly(self.warmup, iterations, s.samples.div_ceil(p));
                    let per_seed = (0..n)
                        .into_par_iter()
                        .map(|i| {
                            let mut all = methods::ensemble(
                                &chains,
                                first + i,
                                start(i, p),
                                iterations,
                                rates.eta_min / n_ex,
                                &keep,
                            )?;
                            all.truncate(s.samples);
                            Ok(self.scorer.seed(&all))
                        })
                        .collect::<Result<_, EngineError>>()?;
                    (per_seed, None)
                }
                Kind::Cyclical | Kind::CyclicalChains => {
                    let (cyclical, length, chains_of) = self.cyclical(planned.kind);
                    let per_seed = (0..n)
                        .into_par_iter()
                        .map(|i| {
                            let mut all = if chains_of == 1 {
                                methods::cyclical_sghmc(
                                    &chains,
                                    first + i,
                                    0,
                                    start(i, 1),
                                    length,
                                    rates.eta_max / n_ex,
                                    &cyclical,
                                )?
                            } else {
                                methods::cyclical_sghmc_chains(
                                    &chains,
                                    first + i,
                                    start(i, p),
                                    length,
                                    rates.eta_max / n_ex,
                                    &cyclical,
                                )?
                            };
                            all.truncate(s.samples);
                            Ok(self.scorer.seed(&all))
                        })
                        .collect::<Result<_, EngineError>>()?;
                    (per_seed, None)
                }
                Kind::Swag | Kind::MultiSwag => {
                    let multi = matches!(planned.kind, Kind::MultiSwag);
                    let swag = SwagSettings {
                        burn_in: s.burn_in,
                        every: (target.iterations_per_epoch().round() as u64).max(1),
                        rank: s.swag_rank,
                        draws: if multi {
                            s.samples.div_ceil(p)
                        } else {
                            s.samples
                        },
                    };
                    let per_seed = (0..n)
                        .into_par_iter()
                        .map(|i| {
                            let mut all = if multi {
                                methods::multi_swag(
                                    &chains,
                                    first + i,
                                    start(i, p),
                                    iterations,
                                    rates.eta_max / n_ex,
                                    &swag,
                                )?
                            } else {
                                methods::swag(
                                    &chains,
                                    first + i,
                                    start(i, 1),
                                    long,
                                    rates.eta_max / n_ex,
                                    &swag,
                                )?
                            };
                            all.truncate(s.samples);
                            Ok(self.scorer.seed(&all))
                        })
                        .collect::<Result<_, EngineError>>()?;
                    (per_seed, None)
                }
            };
            methods.push(MethodRecords {
                name: name.clone(),
                seconds: t.elapsed().as_secs_f64(),
                seeds: per_seed,
                tempering,
            });
        }
        Ok(Records {
            seeds: [seeds.start, seeds.end],
            inputs: self.inputs.clone(),
            pretrained,
            single_accuracy,
            methods,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Cyclical SGHMC's settings for a row of `kind` (×T or ×P), the iterations of each
    /// of its chains and their number: ×T one chain P times as long, ×P a chain of the
    /// sampling phase's length from every pre-trained network; either way ⌈K/chains⌉
    /// samples per chain in cycles of `samples_per_cycle`, after the burn-in share.
    pub(super) fn cyclical(&self, kind: Kind) -> (CyclicalSettings, u64, usize) {
        let (s, p) = (self.s, self.s.chains);
        let chains = kind.networks(p);
        let length = if chains == 1 {
            self.iterations * p as u64
        } else {
            self.iterations
        };
        let settings = CyclicalSettings {
            cycles: s.samples.div_ceil(chains).div_ceil(s.samples_per_cycle) as u64,
            per_cycle: s.samples_per_cycle,
            sampling: s.cycle_sampling,
            burn_in: (s.burn_in * length as f64) as u64,
        };
        (settings, length, chains)
    }

    /// A tempering run over the seeds `seeds`, from their pre-trained `states`: its
    /// seeds' scores and details.
    fn tempering(
        &self,
        scheme: Scheme,
        target_level: TargetLevel,
        rates: Rates,
        seeds: &Range<usize>,
        states: &Arc<Vec<f32>>,
        backend: &dyn Backend,
    ) -> Result<(Vec<SeedScores>, Vec<SeedTempering>), crate::error::StudyError> {
        let s = self.s;
        let target = self.model;
        let data = &target.data;
        let (p, d) = (s.chains, target.dim());
        let mut record = sample_record(self.iterations, self.warmup, s.samples);
        record.trace_every = self.trace_every();
        let mut job = tempering_job(
            self.model,
            &Sampling {
                chains: p,
                seeds: seeds.len(),
                iterations: self.iterations,
                scheme,
                rates,
                target_level,
                seed: s.seed,
                record,
                rules: s.rules,
                initial_states: Some(Arc::clone(states)),
            },
        )?;
        job.options.ensemble = u32::try_from(seeds.start)
            .map_err(|_| ConfigError::new("ensembles", "too many seeds"))?;
        let out = backend.run(&job, &nrpt_sampling::interrupt::flow)?;
        let scores = target_samples(self.model, &job, &out, s.samples)
            .iter()
            .map(|one| self.scorer.seed(one))
            .collect();
        if out.ensembles.len() != seeds.len() || out.ensemble_traces.len() != seeds.len() {
            return Err(crate::error::StudyError::failed(format!(
                "the {} backend returned {} ensembles and {} traces for {} seeds",
                out.backend,
                out.ensembles.len(),
                out.ensemble_traces.len(),
                seeds.len()
            )));
        }
        let details = out
            .ensembles
            .par_iter()
            .zip(&out.ensemble_traces)
            .map(|(en, trace)| SeedTempering {
                round_trips: en.stats.round_trips,
                indicators: en.pairs.iter().map(|pair| pair.indicators).collect(),
                accuracy_by_level: (0..p)
                    .map(|l| {
                        let mut one = Samples::new(data.test.len(), data.classes);
                        one.push(target, &en.levels[l * d..(l + 1) * d], &data.test.x);
                        score_against(&one.average(), &data.test.y, data.classes, None).accuracy
                    })
                    .collect(),
                trace: trace.clone(),
            })
            .collect();
        Ok((scores, details))
    }
}

/// The predictives of the last `samples` recorded target-level states, per seed.
fn target_samples(model: &Classifier, job: &Job, out: &RunOutput, samples: usize) -> Vec<Samples> {
    let target = model;
    let data = &target.data;
    let (e, d) = (job.ensembles, target.dim());
    // Samples: [sample][ensemble][coordinate].
    let recorded = out.sample_iterations.len();
    let first = recorded.saturating_sub(samples);
    (0..e)
        .into_par_iter()
        .map(|en| {
            let mut s = Samples::new(data.test.len(), data.classes);
            for i in first..recorded {
                let at = (i * e + en) * d;
                s.push(target, &out.samples[at..at + d], &data.test.x);
            }
            s
        })
        .collect()
}
