//! What a block of seeds of a comparison records ([`Records`]), checked against the
//! comparison when read back, and joined block after block for a merge.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::{Kind, Setup};
use crate::deep::fidelity::PointScores;
use crate::deep::methods::Pretrained;
use crate::deep::reference::Reference;
use nrpt_sampling::data::Dataset;
use nrpt_sampling::engine::EnsembleTrace;

/// What the report needs of one method's samples of one seed: their number, their
/// model average, and the scores of the averages of the first k of them at the points
/// of the curves against the number of samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedScores {
    /// Samples averaged.
    pub samples: usize,
    /// The average of their predictives, test example by test example (n × C).
    #[serde(with = "crate::deep::lossless::list")]
    pub predictive: Vec<f64>,
    /// The scores at each point of the sample curve (see
    /// [`crate::deep::fidelity::curve_points`]).
    pub curve: Vec<PointScores>,
}

/// What the report needs of one seed of a tempering run beyond its scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedTempering {
    /// Standard round trips.
    pub round_trips: u64,
    /// Per pair, the iterations whose swap indicator was 1.
    pub indicators: Vec<u64>,
    /// Test accuracy of the final network of every level.
    #[serde(with = "crate::deep::lossless::list")]
    pub accuracy_by_level: Vec<f64>,
    /// The ensemble's traces.
    pub trace: EnsembleTrace,
}

/// One method (one row of the report) over a block of seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodRecords {
    /// The row's name.
    pub name: String,
    /// Wall-clock seconds of the method over the block.
    #[serde(with = "crate::deep::lossless::one")]
    pub seconds: f64,
    /// Seed by seed.
    pub seeds: Vec<SeedScores>,
    /// Seed by seed, for a tempering run.
    pub tempering: Option<Vec<SeedTempering>>,
}

/// Everything a block of seeds of a comparison records: what its report is built from
/// (a whole run's records are those of all its seeds; `nrpt deep merge` joins its
/// shards' records, seed blocks in order, into the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Records {
    /// The seeds, `[start, end)` of the run's.
    pub seeds: [usize; 2],
    /// A digest of the data and the reference posterior the seeds ran on (FNV-1a, 64
    /// bits, hex, of every feature, label and reference probability): the merge scores
    /// on the same.
    pub inputs: String,
    /// What pre-training gave, network by network, seed by seed.
    pub pretrained: Vec<Pretrained>,
    /// Test accuracy of every pre-trained network alone, in the same order.
    #[serde(with = "crate::deep::lossless::list")]
    pub single_accuracy: Vec<f64>,
    /// Every row in the report's order: the pre-trained ensemble, the main methods, the
    /// learning-rate sweep's, the swap-rate sweep's.
    pub methods: Vec<MethodRecords>,
    /// Wall-clock seconds of the block.
    #[serde(with = "crate::deep::lossless::one")]
    pub seconds: f64,
}

impl Records {
    /// The records of consecutive blocks of seeds joined, in order (seconds added up).
    /// An error when the blocks do not follow each other or hold different rows.
    pub fn join(blocks: Vec<Records>) -> Result<Records, String> {
        let mut blocks = blocks.into_iter();
        let Some(mut all) = blocks.next() else {
            return Err("no records".into());
        };
        for b in blocks {
            if b.seeds[0] != all.seeds[1] {
                return Err(format!(
                    "seeds {}..{} do not follow seeds {}..{}",
                    b.seeds[0], b.seeds[1], all.seeds[0], all.seeds[1]
                ));
            }
            if b.inputs != all.inputs {
                return Err(format!(
                    "seeds {}..{} ran on other data or another reference posterior",
                    b.seeds[0], b.seeds[1]
                ));
            }
            if b.methods.len() != all.methods.len() {
                return Err(format!(
                    "{} rows against {}",
                    b.methods.len(),
                    all.methods.len()
                ));
            }
            all.seeds[1] = b.seeds[1];
            all.pretrained.extend(b.pretrained);
            all.single_accuracy.extend(b.single_accuracy);
            all.seconds += b.seconds;
            for (m, o) in all.methods.iter_mut().zip(b.methods) {
                if m.name != o.name {
                    return Err(format!("row `{}` against `{}`", o.name, m.name));
                }
                m.seconds += o.seconds;
                m.seeds.extend(o.seeds);
                match (&mut m.tempering, o.tempering) {
                    (Some(t), Some(o)) => t.extend(o),
                    (None, None) => {}
                    _ => {
                        return Err(format!(
                            "row `{}` is a tempering run in one block only",
                            m.name
                        ));
                    }
                }
            }
        }
        Ok(all)
    }
}

impl Setup<'_> {
    /// Checks that `r` are whole records of the seeds `seeds` of this comparison: every
    /// row, every seed, every length as the run makes them (records read from a file
    /// are checked before the report indexes them).
    pub fn check(&self, r: &Records, seeds: &Range<usize>) -> Result<(), String> {
        let (p, n) = (self.s.chains, seeds.len());
        if r.seeds != [seeds.start, seeds.end] {
            return Err(format!(
                "they are of seeds {}..{}, the shard ran {}..{}",
                r.seeds[0], r.seeds[1], seeds.start, seeds.end
            ));
        }
        if r.inputs != self.inputs {
            return Err(format!(
                "they were scored on other data or another reference posterior (digest {}, \
                 here {}): the merge reads the data and the reference the shards name",
                r.inputs, self.inputs
            ));
        }
        if r.pretrained.len() != n * p || r.single_accuracy.len() != n * p {
            return Err(format!(
                "{} and {} pre-trained networks for {n} seeds of {p}",
                r.pretrained.len(),
                r.single_accuracy.len()
            ));
        }
        if r.methods.len() != self.plan.len() {
            return Err(format!(
                "{} rows, the comparison has {}",
                r.methods.len(),
                self.plan.len()
            ));
        }
        let entries = self.iterations / self.trace_every();
        for (m, planned) in r.methods.iter().zip(&self.plan) {
            let bad = |why: String| format!("row `{}`: {why}", planned.name);
            if m.name != planned.name {
                return Err(bad(format!("it is `{}`", m.name)));
            }
            if m.seeds.len() != n {
                return Err(bad(format!("{} seeds for {n}", m.seeds.len())));
            }
            let most = match planned.kind {
                Kind::Pretrained => p,
                _ => self.s.samples,
            };
            for (e, seed) in seeds.clone().zip(&m.seeds) {
                self.scorer
                    .check(seed, most)
                    .map_err(|why| bad(format!("seed {e}: {why}")))?;
            }
            match (planned.kind, &m.tempering) {
                (Kind::Tempering(..), Some(t)) => {
                    if t.len() != n {
                        return Err(bad(format!("{} tempering records for {n} seeds", t.len())));
                    }
                    for (e, t) in seeds.clone().zip(t) {
                        check_tempering(t, p, entries, self.trace_every())
                            .map_err(|why| bad(format!("seed {e}: {why}")))?;
                    }
                }
                (Kind::Tempering(..), None) => return Err(bad("no tempering records".into())),
                (_, Some(_)) => return Err(bad("tempering records of no tempering run".into())),
                (_, None) => {}
            }
        }
        Ok(())
    }
}

/// FNV-1a (64 bits, hex) of every feature, label and reference probability.
pub(super) fn inputs_digest(data: &Dataset, reference: Option<&Reference>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for split in [&data.train, &data.test] {
        eat(&(split.x.len() as u64).to_le_bytes());
        split.x.iter().for_each(|v| eat(&v.to_bits().to_le_bytes()));
        split.y.iter().for_each(|v| eat(&v.to_le_bytes()));
    }
    if let Some(r) = reference {
        eat(&(r.predictive.len() as u64).to_le_bytes());
        r.predictive
            .iter()
            .for_each(|v| eat(&v.to_bits().to_le_bytes()));
    }
    format!("{h:016x}")
}

/// Checks one seed's tempering records against a run of `p` chains traced `entries`
/// times, every `every` iterations.
fn check_tempering(t: &SeedTempering, p: usize, entries: u64, every: u64) -> Result<(), String> {
    if t.indicators.len() != p - 1 || t.accuracy_by_level.len() != p {
        return Err(format!(
            "{} pairs and {} levels for {p} chains",
            t.indicators.len(),
            t.accuracy_by_level.len()
        ));
    }
    let tr = &t.trace;
    for (name, len) in [
        ("iterations", tr.iterations.len()),
        ("ladder", tr.ladder.len()),
        ("buffer", tr.buffer.len()),
        ("round trips", tr.trips.len()),
        ("rates", tr.rates.len()),
    ] {
        if len as u64 != entries {
            return Err(format!(
                "{len} trace entries of the {name}, the run has {entries}"
            ));
        }
    }
    if tr
        .iterations
        .iter()
        .enumerate()
        .any(|(i, &k)| k != (i as u64 + 1) * every)
        || tr.ladder.iter().any(|l| l.len() != p)
        || tr.rates.iter().any(|r| r.len() != p - 1)
    {
        return Err("a trace entry does not fit the run".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of seeds `seeds` of rows `rows` (name, whether a tempering run), each
    /// seed's values made of its index.
    fn block(seeds: [usize; 2], rows: &[(&str, bool)]) -> Records {
        let range = seeds[0]..seeds[1];
        Records {
            seeds,
            inputs: "00000000000000ff".into(),
            pretrained: range.clone().map(|_| Pretrained::default()).collect(),
            single_accuracy: range.clone().map(|e| e as f64).collect(),
            methods: rows
                .iter()
                .map(|&(name, tempering)| MethodRecords {
                    name: name.into(),
                    seconds: 1.0,
                    seeds: range
                        .clone()
                        .map(|e| SeedScores {
                            samples: e,
                            predictive: vec![e as f64],
                            curve: Vec::new(),
                        })
                        .collect(),
                    tempering: tempering.then(|| {
                        range
                            .clone()
                            .map(|e| SeedTempering {
                                round_trips: e as u64,
                                indicators: Vec::new(),
                                accuracy_by_level: Vec::new(),
                                trace: EnsembleTrace::default(),
                            })
                            .collect()
                    }),
                })
                .collect(),
            seconds: 2.0,
        }
    }

    const ROWS: [(&str, bool); 2] = [("pre-trained×P2", false), ("DEO⋆-mSGD×P2", true)];

    /// Blocks of seeds that follow each other join into the records of all their
    /// seeds, in order, their seconds added up.
    #[test]
    fn consecutive_blocks_join_in_seed_order() {
        let joined = Records::join(vec![
            block([0, 2], &ROWS),
            block([2, 3], &ROWS),
            block([3, 5], &ROWS),
        ])
        .unwrap();
        let whole = block([0, 5], &ROWS);
        assert_eq!(joined.seeds, [0, 5]);
        assert_eq!(joined.single_accuracy, whole.single_accuracy);
        assert_eq!(joined.pretrained, whole.pretrained);
        assert_eq!(joined.seconds, 6.0);
        for (j, w) in joined.methods.iter().zip(&whole.methods) {
            assert_eq!(
                (&j.name, &j.seeds, &j.tempering),
                (&w.name, &w.seeds, &w.tempering)
            );
            assert_eq!(j.seconds, 3.0);
        }
    }

    /// Blocks that do not fit together are refused, saying why: a gap or an overlap
    /// in the seeds, other inputs, other rows, a row that is a tempering run in one
    /// block only, no block at all.
    #[test]
    fn blocks_that_do_not_fit_are_refused() {
        let join = |b: Records| Records::join(vec![block([0, 2], &ROWS), b]).unwrap_err();
        assert!(join(block([3, 4], &ROWS)).contains("do not follow"));
        assert!(join(block([1, 4], &ROWS)).contains("do not follow"));
        let other = Records {
            inputs: "0000000000000001".into(),
            ..block([2, 4], &ROWS)
        };
        assert!(join(other).contains("other data"));
        assert!(join(block([2, 4], &ROWS[..1])).contains("1 rows against 2"));
        let renamed = [ROWS[0], ("DEO-mSGD×P2", true)];
        assert!(join(block([2, 4], &renamed)).contains("against"));
        let untempered = [ROWS[0], (ROWS[1].0, false)];
        assert!(join(block([2, 4], &untempered)).contains("in one block only"));
        assert_eq!(Records::join(Vec::new()).unwrap_err(), "no records");
    }

    /// A seed's tempering records fit a run of P chains traced every `every`
    /// iterations, or say what does not.
    #[test]
    fn tempering_records_are_checked_against_the_run() {
        let (p, entries, every) = (3, 4, 5);
        let good = SeedTempering {
            round_trips: 2,
            indicators: vec![7; p - 1],
            accuracy_by_level: vec![0.9; p],
            trace: EnsembleTrace {
                iterations: (1..=entries).map(|i| i * every).collect(),
                ladder: vec![vec![0.1; p]; entries as usize],
                buffer: vec![0.0; entries as usize],
                trips: vec![Default::default(); entries as usize],
                rates: vec![vec![0.5; p - 1]; entries as usize],
            },
        };
        assert_eq!(check_tempering(&good, p, entries, every), Ok(()));
        let mut short = good.clone();
        short.trace.buffer.pop();
        assert!(
            check_tempering(&short, p, entries, every)
                .unwrap_err()
                .contains("buffer")
        );
        let mut late = good.clone();
        late.trace.iterations[1] += 1;
        assert!(check_tempering(&late, p, entries, every).is_err());
        let mut pairs = good.clone();
        pairs.indicators.push(0);
        assert!(
            check_tempering(&pairs, p, entries, every)
                .unwrap_err()
                .contains("pairs")
        );
        assert!(check_tempering(&good, p + 1, entries, every).is_err());
    }

    /// The digest of the inputs is 16 hex digits that change with any feature or label
    /// (the merge refuses shards scored on other data).
    #[test]
    fn the_inputs_digest_sees_every_feature_and_label() {
        let data = nrpt_sampling::data::digits();
        let digest = inputs_digest(&data, None);
        assert_eq!(digest.len(), 16);
        assert!(digest.chars().all(|c| c.is_ascii_hexdigit()), "{digest}");
        assert_eq!(inputs_digest(&data.clone(), None), digest);
        let mut label = data.clone();
        label.test.y[0] = (label.test.y[0] + 1) % 10;
        assert_ne!(inputs_digest(&label, None), digest);
        let mut feature = data.clone();
        let last = feature.train.x.len() - 1;
        feature.train.x[last] += 1.0;
        assert_ne!(inputs_digest(&feature, None), digest);
    }
}
