//! Which data to load, and how the flags `--dataset`, `--data`, `--labels`,
//! `--test-data` and `--test-labels` name it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::DataError;

/// A data set compiled into `nrpt`, as `--dataset` (TOML `dataset`) names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bundled {
    /// `digits`: UCI optical recognition of handwritten digits, 1,348 + 449 examples of
    /// 64 features (the default).
    #[default]
    Digits,
    /// `mnist1d`: MNIST-1D (Greydanus, 2020), 12,800 + 3,200 examples of 40 features.
    Mnist1d,
}

impl Bundled {
    /// Every bundled data set, in the order help texts list them.
    pub const ALL: [Bundled; 2] = [Bundled::Digits, Bundled::Mnist1d];

    /// The name `--dataset` takes.
    pub fn name(self) -> &'static str {
        match self {
            Bundled::Digits => "digits",
            Bundled::Mnist1d => "mnist1d",
        }
    }
}

impl std::fmt::Display for Bundled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Bundled {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let name = s.trim().to_ascii_lowercase();
        Bundled::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| format!("`{s}` is not a bundled data set: digits or mnist1d"))
    }
}

impl From<Bundled> for DataSpec {
    fn from(b: Bundled) -> DataSpec {
        match b {
            Bundled::Digits => DataSpec::Digits,
            Bundled::Mnist1d => DataSpec::Mnist1d,
        }
    }
}

/// Which data to load.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DataSpec {
    /// The bundled UCI optical digits (default).
    #[default]
    Digits,
    /// The bundled MNIST-1D: the package's canonical generator with 16,000 samples,
    /// split by the package into 12,800 training and 3,200 test examples.
    #[serde(rename = "mnist1d")]
    Mnist1d,
    /// CSV files: training file, optional test file. Labels are in the last column.
    Csv {
        /// The training examples (`.csv`, or gzip-compressed `.csv.gz`).
        train: PathBuf,
        /// The test examples; without it, every fourth training example is one.
        test: Option<PathBuf>,
    },
    /// `.npy` files: training features and labels, optional test features and labels.
    Npy {
        /// Training features, a 2-D array.
        train_x: PathBuf,
        /// Training labels, a 1-D array.
        train_y: PathBuf,
        /// Test features and labels; without them, every fourth training example is one.
        test: Option<(PathBuf, PathBuf)>,
    },
}

/// The formats a file name can announce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Csv,
    Npy,
}

/// The format of `path` as its name announces it: `.csv` or `.csv.gz` (any case), or
/// `.npy`; `None` for any other name (a pipe such as `/dev/fd/63`, `data.txt`), whose
/// format the other flags imply (`.npy` data comes with `--labels`, CSV without) and
/// whose content is checked when it is read.
fn format_of(path: &Path) -> Option<Format> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.ends_with(".csv") || name.ends_with(".csv.gz") {
        Some(Format::Csv)
    } else if name.ends_with(".npy") {
        Some(Format::Npy)
    } else {
        None
    }
}

impl DataSpec {
    /// The data the five flags name: `--dataset` alone is that bundled data set, and
    /// cannot be combined with any of the four file flags; none of them is the bundled
    /// digits; a `.csv` or `.csv.gz` `--data` file is CSV (labels in its last column, so
    /// no `--labels`); a `.npy` `--data` file is NumPy, and needs `--labels`; a `--data`
    /// file whose name says neither (a pipe such as `<(zcat d.csv.gz)`) is NumPy with
    /// `--labels` and CSV without (gzip-compressed or not, as its first bytes say). A
    /// test file is optional, and for `.npy` comes as `--test-data` with
    /// `--test-labels`. The error names the flag.
    pub fn from_paths(
        dataset: Option<Bundled>,
        data: Option<&Path>,
        labels: Option<&Path>,
        test_data: Option<&Path>,
        test_labels: Option<&Path>,
    ) -> Result<DataSpec, DataError> {
        let flag = |flag, reason: &str| DataError::Flag {
            flag,
            reason: reason.to_string(),
        };
        if let Some(bundled) = dataset {
            let files = [
                ("--data", data),
                ("--labels", labels),
                ("--test-data", test_data),
                ("--test-labels", test_labels),
            ];
            return match files.into_iter().find(|(_, p)| p.is_some()) {
                None => Ok(bundled.into()),
                Some((name, _)) => Err(flag(
                    "--dataset",
                    &format!(
                        "{bundled} is a bundled data set, with its own test split; it \
                         cannot be combined with {name}, which names your own files \
                         (give one or the other)"
                    ),
                )),
            };
        }
        let Some(data) = data else {
            let needs_data = "needs --data (without it, nrpt uses a bundled data set: --dataset)";
            return match (labels, test_data, test_labels) {
                (None, None, None) => Ok(DataSpec::Digits),
                (Some(_), _, _) => Err(flag("--labels", needs_data)),
                (_, Some(_), _) => Err(flag("--test-data", needs_data)),
                (_, _, Some(_)) => Err(flag("--test-labels", needs_data)),
            };
        };
        let implied = if labels.is_some() {
            Format::Npy
        } else {
            Format::Csv
        };
        match format_of(data).unwrap_or(implied) {
            Format::Csv => {
                if labels.is_some() {
                    return Err(flag(
                        "--labels",
                        "is for .npy data; a CSV file has its labels in its last column",
                    ));
                }
                if test_labels.is_some() {
                    return Err(flag(
                        "--test-labels",
                        "is for .npy data; a CSV file has its labels in its last column",
                    ));
                }
                if let Some(t) = test_data
                    && format_of(t).is_some_and(|f| f != Format::Csv)
                {
                    return Err(flag("--test-data", "must be CSV, like --data"));
                }
                Ok(DataSpec::Csv {
                    train: data.to_path_buf(),
                    test: test_data.map(Path::to_path_buf),
                })
            }
            Format::Npy => {
                let Some(labels) = labels else {
                    return Err(flag(
                        "--labels",
                        "is needed with .npy --data: a labels .npy file",
                    ));
                };
                if format_of(labels).is_some_and(|f| f != Format::Npy) {
                    return Err(flag("--labels", "must be a .npy file, like --data"));
                }
                let test = match (test_data, test_labels) {
                    (None, None) => None,
                    (Some(_), None) => {
                        return Err(flag("--test-labels", "is needed with .npy --test-data"));
                    }
                    (None, Some(_)) => {
                        return Err(flag("--test-data", "is needed with --test-labels"));
                    }
                    (Some(x), Some(y)) => {
                        for (path, name) in [(x, "--test-data"), (y, "--test-labels")] {
                            if format_of(path).is_some_and(|f| f != Format::Npy) {
                                return Err(flag(name, "must be a .npy file, like --data"));
                            }
                        }
                        Some((x.to_path_buf(), y.to_path_buf()))
                    }
                };
                Ok(DataSpec::Npy {
                    train_x: data.to_path_buf(),
                    train_y: labels.to_path_buf(),
                    test,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(flags: [Option<&str>; 4]) -> Result<DataSpec, DataError> {
        let [a, b, c, d] = flags.map(|f| f.map(Path::new));
        DataSpec::from_paths(None, a, b, c, d)
    }

    fn error(flags: [Option<&str>; 4]) -> String {
        spec(flags).unwrap_err().to_string()
    }

    #[test]
    fn no_flags_is_the_digits() {
        assert_eq!(spec([None; 4]).unwrap(), DataSpec::Digits);
        assert_eq!(DataSpec::default(), DataSpec::Digits);
    }

    #[test]
    fn dataset_names_a_bundled_data_set() {
        for (b, want) in [
            (Bundled::Digits, DataSpec::Digits),
            (Bundled::Mnist1d, DataSpec::Mnist1d),
        ] {
            let s = DataSpec::from_paths(Some(b), None, None, None, None).unwrap();
            assert_eq!(s, want);
            assert_eq!(b.name().parse::<Bundled>(), Ok(b));
            assert_eq!(b.to_string(), b.name());
        }
        assert_eq!(" MNIST1D ".parse::<Bundled>(), Ok(Bundled::Mnist1d));
        assert_eq!(
            "mnist".parse::<Bundled>().unwrap_err(),
            "`mnist` is not a bundled data set: digits or mnist1d"
        );
        assert_eq!(Bundled::default(), Bundled::Digits);
    }

    #[test]
    fn dataset_with_a_file_flag_names_both() {
        for (flags, other) in [
            ([Some("d.csv"), None, None, None], "--data"),
            ([None, Some("y.npy"), None, None], "--labels"),
            ([None, None, Some("t.csv"), None], "--test-data"),
            ([None, None, None, Some("t.npy")], "--test-labels"),
            ([Some("x.npy"), Some("y.npy"), None, None], "--data"),
        ] {
            let [a, b, c, d] = flags.map(|f| f.map(Path::new));
            for bundled in Bundled::ALL {
                let e = DataSpec::from_paths(Some(bundled), a, b, c, d)
                    .unwrap_err()
                    .to_string();
                let start = format!("--dataset: {bundled} is a bundled data set");
                assert!(e.starts_with(&start), "{flags:?}: {e}");
                assert!(e.contains(&format!("combined with {other},")), "{e}");
            }
        }
    }

    #[test]
    fn csv_by_name() {
        let s = spec([Some("a/Train.CSV"), None, Some("t.csv.gz"), None]).unwrap();
        assert_eq!(
            s,
            DataSpec::Csv {
                train: "a/Train.CSV".into(),
                test: Some("t.csv.gz".into())
            }
        );
        let s = spec([Some("train.csv.gz"), None, None, None]).unwrap();
        assert_eq!(
            s,
            DataSpec::Csv {
                train: "train.csv.gz".into(),
                test: None
            }
        );
    }

    /// A name that says nothing (a pipe, `data.txt`): NumPy with `--labels`, CSV
    /// without; the files' content is checked when they are read.
    #[test]
    fn other_names_by_the_flags_given() {
        assert_eq!(
            spec([Some("/dev/fd/63"), None, Some("t.txt"), None]).unwrap(),
            DataSpec::Csv {
                train: "/dev/fd/63".into(),
                test: Some("t.txt".into())
            }
        );
        assert_eq!(
            spec([Some("/dev/fd/63"), Some("/dev/fd/64"), None, None]).unwrap(),
            DataSpec::Npy {
                train_x: "/dev/fd/63".into(),
                train_y: "/dev/fd/64".into(),
                test: None
            }
        );
        let e = error([Some("data"), Some("y.csv"), None, None]);
        assert!(e.starts_with("--labels: must be a .npy file"), "{e}");
    }

    #[test]
    fn npy_by_name() {
        let s = spec([Some("x.npy"), Some("y.npy"), Some("tx.npy"), Some("ty.npy")]).unwrap();
        assert_eq!(
            s,
            DataSpec::Npy {
                train_x: "x.npy".into(),
                train_y: "y.npy".into(),
                test: Some(("tx.npy".into(), "ty.npy".into()))
            }
        );
        let s = spec([Some("x.npy"), Some("y.npy"), None, None]).unwrap();
        assert!(matches!(s, DataSpec::Npy { test: None, .. }));
    }

    #[test]
    fn inconsistent_flags_name_the_flag() {
        for (flags, start) in [
            ([None, Some("y.npy"), None, None], "--labels: needs --data"),
            (
                [None, None, Some("t.csv"), None],
                "--test-data: needs --data",
            ),
            (
                [None, None, None, Some("t.npy")],
                "--test-labels: needs --data",
            ),
            (
                [Some("d.csv"), Some("y.npy"), None, None],
                "--labels: is for .npy data",
            ),
            (
                [Some("d.csv"), None, None, Some("y.npy")],
                "--test-labels: is for .npy data",
            ),
            (
                [Some("d.csv"), None, Some("t.npy"), None],
                "--test-data: must be CSV",
            ),
            (
                [Some("x.npy"), None, None, None],
                "--labels: is needed with .npy --data",
            ),
            (
                [Some("x.npy"), Some("y.csv"), None, None],
                "--labels: must be a .npy file",
            ),
            (
                [Some("x.npy"), Some("y.npy"), Some("t.npy"), None],
                "--test-labels: is needed",
            ),
            (
                [Some("x.npy"), Some("y.npy"), None, Some("t.npy")],
                "--test-data: is needed",
            ),
            (
                [Some("x.npy"), Some("y.npy"), Some("t.csv"), Some("u.npy")],
                "--test-data: must be a .npy file",
            ),
            (
                [Some("x.npy"), Some("y.npy"), Some("t.npy"), Some("u.csv")],
                "--test-labels: must be a .npy file",
            ),
        ] {
            let e = error(flags);
            assert!(e.starts_with(start), "{flags:?}: {e}");
        }
    }

    #[test]
    fn serializes_with_a_kind_and_paths_as_strings() {
        let s = DataSpec::Npy {
            train_x: "x.npy".into(),
            train_y: "y.npy".into(),
            test: None,
        };
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"npy","train_x":"x.npy","train_y":"y.npy","test":null}"#
        );
        assert_eq!(serde_json::from_str::<DataSpec>(&json).unwrap(), s);
        let digits = serde_json::to_string(&DataSpec::Digits).unwrap();
        assert_eq!(digits, r#"{"kind":"digits"}"#);
        let mnist1d = serde_json::to_string(&DataSpec::Mnist1d).unwrap();
        assert_eq!(mnist1d, r#"{"kind":"mnist1d"}"#);
        assert_eq!(
            serde_json::from_str::<DataSpec>(&mnist1d).unwrap(),
            DataSpec::Mnist1d
        );
        assert_eq!(
            serde_json::to_string(&Bundled::ALL).unwrap(),
            r#"["digits","mnist1d"]"#
        );
        let csv: DataSpec =
            serde_json::from_str(r#"{"kind":"csv","train":"a.csv","test":"b.csv"}"#).unwrap();
        assert_eq!(
            csv,
            DataSpec::Csv {
                train: "a.csv".into(),
                test: Some("b.csv".into())
            }
        );
    }
}
