//! What a shard of a reproduction keeps for the merge (`records.json`), and the runs of
//! the whole reproduction joined from its shards' records.

use std::ops::Range;
use std::path::Path;

use crate::error::Result;
use serde::{Deserialize, Serialize};

use super::{Runs, Settings, jobs};
use crate::shard::RECORDS;
use nrpt_sampling::config::ConfigError;
use nrpt_sampling::engine::{EnsembleRecords, RunOutput};

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

impl Runs {
    /// What a shard keeps for the merge.
    pub fn records(&self, seconds: f64) -> Result<ShardRecords> {
        let all = self
            .s_sweep
            .iter()
            .chain(&self.w_sweep)
            .chain(&self.authors);
        let jobs = all
            .map(|(j, o)| {
                o.split(j.first_ensemble(), j.target.dim()).ok_or_else(|| {
                    crate::error::StudyError::failed("a run's output lacks its ensembles' records")
                })
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
    pub fn join(s: &Settings, shards: Vec<(&Path, Range<usize>, ShardRecords)>) -> Result<Runs> {
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
