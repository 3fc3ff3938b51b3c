//! Users' own data: the training and test tables checked against each other, split by
//! the fixed rule when there is no test file, and standardized with the training split's
//! statistics.

use std::path::Path;

use super::Dataset;
use super::error::DataError;
use super::split::Table;
use super::standardize::Standardizer;

/// Builds a data set from a training table and an optional test table; `train_source`
/// and `test_source` describe the files in the one-line description.
pub(crate) fn assemble(
    train: Table,
    test: Option<(Table, String)>,
    train_source: &str,
) -> Result<Dataset, DataError> {
    let name = Path::new(&train.file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| train.file.clone());
    let (train, test, rule, files) = match test {
        Some((test, test_source)) => {
            if test.features != train.features {
                return Err(DataError::FeatureCount {
                    train: train.file,
                    train_features: train.features,
                    test: test.file,
                    test_features: test.features,
                });
            }
            let files = format!("{} and {}", train.file, test.file);
            (train, test, format!("test: {test_source}"), files)
        }
        None => {
            let (a, b) = train.split_default();
            if b.len() == 0 {
                return Err(DataError::EmptyTestSplit {
                    examples: train.len(),
                    file: train.file,
                });
            }
            let files = train.file.clone();
            (a, b, "test = its examples i % 4 == 3".to_string(), files)
        }
    };
    let largest = train.y.iter().chain(&test.y).copied().max().unwrap_or(0);
    if largest == 0 {
        return Err(DataError::OneClass { files });
    }
    let classes = largest as usize + 1;
    let scaler = Standardizer::fit(&train);
    Ok(Dataset {
        name,
        description: format!(
            "{train_source} ({} train, {} test; {rule}), features standardized with the \
             training mean and sd",
            train.len(),
            test.len()
        ),
        features: train.features,
        classes,
        train: scaler.apply(&train)?,
        test: scaler.apply(&test)?,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::PathBuf;

    use crate::data::{DataSpec, load};
    use crate::npy::encode;

    fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn csv(train: PathBuf, test: Option<PathBuf>) -> DataSpec {
        DataSpec::Csv { train, test }
    }

    /// Mean and population standard deviation of feature `j` of a split.
    fn moments(x: &[f32], d: usize, j: usize) -> (f64, f64) {
        let col: Vec<f64> = x.iter().skip(j).step_by(d).map(|&v| f64::from(v)).collect();
        let n = col.len() as f64;
        let mean = col.iter().sum::<f64>() / n;
        (
            mean,
            (col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt(),
        )
    }

    #[test]
    fn a_csv_file_alone_is_split_and_standardized() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("# three features, one constant\na,b,c,label\n");
        for i in 0..10 {
            text += &format!("{},{},7,{}\n", i, (i * i) as f64 / 3.0, i % 3);
        }
        let path = write(&dir, "toy.csv", text.as_bytes());
        let d = load(&csv(path.clone(), None)).unwrap();
        assert_eq!((d.name.as_str(), d.features, d.classes), ("toy.csv", 3, 3));
        assert_eq!((d.train.len(), d.test.len()), (8, 2));
        // Examples 3 and 7 are the test split, in file order.
        assert_eq!(d.test.y, [0, 1]);
        assert_eq!(d.train.y, [0, 1, 2, 1, 2, 0, 2, 0]);
        for j in 0..2 {
            let (mean, sd) = moments(&d.train.x, 3, j);
            assert!(
                mean.abs() < 1e-6 && (sd - 1.0).abs() < 1e-6,
                "feature {j}: {mean} {sd}"
            );
        }
        assert!(d.train.x.iter().skip(2).step_by(3).all(|&v| v == 0.0));
        assert!(d.test.x.iter().skip(2).step_by(3).all(|&v| v == 0.0));
        // Test feature 0 of example 3 uses the training mean and sd of 0,1,2,4,5,6,8,9.
        let (mean, sd) = (
            35.0 / 8.0,
            (((0..10)
                .filter(|i| i % 4 != 3)
                .map(|i| (f64::from(i) - 35.0 / 8.0).powi(2))
                .sum::<f64>())
                / 8.0)
                .sqrt(),
        );
        let want = ((3.0 - mean) / sd) as f32;
        assert!(
            (d.test.x[0] - want).abs() < 1e-6,
            "{} vs {want}",
            d.test.x[0]
        );
        assert!(d.description.contains("toy.csv") && d.description.contains("i % 4 == 3"));
        assert!(d.description.contains("standardized"), "{}", d.description);
    }

    #[test]
    fn a_test_file_is_used_as_given_and_counts_classes() {
        let dir = tempfile::tempdir().unwrap();
        let train = write(&dir, "train.csv", b"0,0\n2,1\n");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"1,4.0\n3,0\n").unwrap();
        let test = write(&dir, "test.csv.gz", &gz.finish().unwrap());
        let d = load(&csv(train, Some(test))).unwrap();
        assert_eq!((d.train.len(), d.test.len(), d.classes), (2, 2, 5));
        assert_eq!(d.train.x, [-1.0, 1.0]);
        assert_eq!(d.test.x, [0.0, 2.0]);
        assert_eq!(d.test.y, [4, 0]);
        assert!(d.description.contains("test: "), "{}", d.description);
    }

    #[test]
    fn inconsistent_files_name_both() {
        let dir = tempfile::tempdir().unwrap();
        let train = write(&dir, "train.csv", b"0,1,0\n2,3,1\n");
        let test = write(&dir, "test.csv", b"0,0\n");
        let e = load(&csv(train.clone(), Some(test.clone())))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "{} has 1 features but {} has 2",
                test.display(),
                train.display()
            )
        );
        // A broken training file is reported before the test file is read.
        let bad = write(&dir, "bad.csv", b"0,1,0\n0,1,x\n");
        let e = load(&csv(bad.clone(), Some(test))).unwrap_err().to_string();
        let want = "line 2, field 3: label \"x\" is not a non-negative integer";
        assert_eq!(e, format!("{} {want}", bad.display()));
    }

    #[test]
    fn one_class_and_tiny_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let zeros = write(&dir, "zeros.csv", b"1,0\n2,0\n3,0\n4,0\n5,0\n");
        let e = load(&csv(zeros.clone(), None)).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: every label is 0, so there is one class; a classifier needs at least 2",
                zeros.display()
            )
        );
        let tiny = write(&dir, "tiny.csv", b"1,0\n2,1\n3,1\n");
        let e = load(&csv(tiny.clone(), None)).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}: 3 examples leave the test split empty",
                tiny.display()
            )),
            "{e}"
        );
        // Labels 3 alone make four classes: classes are 0..=largest, seen or not.
        let threes = write(&dir, "threes.csv", b"1,3\n2,3\n3,3\n4,3\n");
        assert_eq!(load(&csv(threes, None)).unwrap().classes, 4);
    }

    #[test]
    fn npy_files_load_like_csv() {
        let dir = tempfile::tempdir().unwrap();
        // Features (8, 2) in Fortran order, big-endian i4; labels as integer-valued f8.
        let columns: Vec<i32> = (0..8).chain((0..8).map(|i| 10 - i)).collect();
        let data: Vec<u8> = columns.iter().flat_map(|v| v.to_be_bytes()).collect();
        let x = write(&dir, "x.npy", &encode(1, ">i4", true, &[8, 2], &data));
        let labels: Vec<u8> = [0.0f64, 1.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let y = write(&dir, "y.npy", &encode(1, "<f8", false, &[8], &labels));
        let spec = DataSpec::Npy {
            train_x: x.clone(),
            train_y: y.clone(),
            test: None,
        };
        let d = load(&spec).unwrap();
        assert_eq!((d.name.as_str(), d.features, d.classes), ("x.npy", 2, 3));
        assert_eq!((d.train.len(), d.test.len()), (6, 2));
        assert_eq!(d.test.y, [0, 1]);
        // Column 1 is 10 - column 0: standardized, the two are opposite.
        for (row, _) in d.train.rows(2) {
            let (a, b) = (row[0], row[1]);
            assert!((a + b).abs() < 1e-6, "{a} {b}");
        }
        assert!(d.description.contains("with labels"), "{}", d.description);
        // The same files as test files; and a test file of another width.
        let spec = DataSpec::Npy {
            train_x: x.clone(),
            train_y: y.clone(),
            test: Some((x.clone(), y.clone())),
        };
        assert_eq!(load(&spec).unwrap().test.len(), 8);
        let wide = write(
            &dir,
            "wide.npy",
            &encode(1, "|u1", false, &[8, 3], &[1; 24]),
        );
        let spec = DataSpec::Npy {
            train_x: x.clone(),
            train_y: y.clone(),
            test: Some((wide.clone(), y)),
        };
        let e = load(&spec).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{} has 3 features but {} has 2",
                wide.display(),
                x.display()
            )
        );
    }
}
