//! The second bundled data set: MNIST-1D (S. Greydanus, "Scaling down deep learning",
//! 2020; the `mnist1d` Python package 0.0.2.post1, Apache-2.0). Each example is a signal
//! of 40 values: one of ten digit-like templates padded, scaled, translated, sheared and
//! noised. The files were made by the package's own generator (`make_dataset`) with its
//! canonical arguments, except 16,000 samples instead of 5,000, and the package's split
//! (the first 80 %): 12,800 training and 3,200 test examples, so that N/B ≈ 200 with
//! mini-batches of 64, near the paper's CIFAR setting (≈ 195). MLPs stay far from the
//! ceiling the digits put every method at (the package reports 68 % for an MLP).
//! `scripts/regenerate-mnist1d.py` remakes the bytes; `data/README.md` gives the source,
//! licence and checksums. The four files (2.4 MB, gzip-compressed `.npy`) are compiled
//! into the binary like the digits, so `nrpt` runs from any folder.
//!
//! Features are used as the files hold them (the generator's float64 rounded to float32,
//! nothing else). The generator already standardizes the whole set with one mean and
//! one standard deviation, so the 40 positions share one scale: on the training split
//! each position's mean lies within 0.053 of 0 and its standard deviation between 0.79
//! and 1.15, every value in [−5.5, 4.6]. An MLP needs nothing more; standardizing each
//! position again would change no value by more than a quarter and would make the
//! inputs differ from everyone else's MNIST-1D.

use std::io::Read;

use flate2::read::MultiGzDecoder;

use super::error::DataError;
use super::{Dataset, Split};
use crate::npy::Array;

/// The four bundled files, as in `data/`: training features and labels, test features
/// and labels (read through the crate's `data` link, as in `digits.rs`).
pub(crate) const BUNDLED: [&[u8]; 4] = [
    include_bytes!("../../data/mnist1d-train-x.npy.gz"),
    include_bytes!("../../data/mnist1d-train-y.npy.gz"),
    include_bytes!("../../data/mnist1d-test-x.npy.gz"),
    include_bytes!("../../data/mnist1d-test-y.npy.gz"),
];

/// The names of the bundled files, in the order of their digests (`SHA256`).
pub const FILES: [&str; 4] = [
    "mnist1d-train-x.npy.gz",
    "mnist1d-train-y.npy.gz",
    "mnist1d-test-x.npy.gz",
    "mnist1d-test-y.npy.gz",
];

/// SHA-256 of each bundled file, as `data/README.md` and the generator script state them
/// (checked by the tests).
#[cfg(test)]
const SHA256: [&str; 4] = [
    "e9d9b4473942805b0b22faf37ca81775accdbf63c7c8741ef9e780afbbf9266d",
    "e02951aa520c432678c0f3c33d5f7b69eb454e654343495395c5d6b77537c6c5",
    "3421c78da3de446c8bb542711ca94b421f84d6b60f9688a1b099c2dbd352198e",
    "7d6818fa1f05f4165deb399ea8b64838d2a53163b3e644a146c7e3be5947aee6",
];

/// Examples in the training split.
pub(crate) const TRAIN: usize = 12_800;
/// Examples in the test split.
pub(crate) const TEST: usize = 3_200;
/// Values per signal (the generator's `final_seq_length`).
pub(crate) const FEATURES: usize = 40;
/// Digits.
pub(crate) const CLASSES: usize = 10;

/// The most bytes a decompressed file may take: the features of the training split
/// with room for the header (a corrupt stream must not fill the memory).
const MAX_NPY: u64 = (TRAIN * FEATURES * 4 + 4096) as u64;

/// Parses the four files (training features, training labels, test features, test
/// labels) into the data set, checking shapes, values and labels.
pub(crate) fn parse(files: [&[u8]; 4]) -> Result<Dataset, DataError> {
    let [train_x, train_y, test_x, test_y] = files;
    let train = split((train_x, FILES[0]), (train_y, FILES[1]), TRAIN)?;
    let test = split((test_x, FILES[2]), (test_y, FILES[3]), TEST)?;
    Ok(Dataset {
        name: "mnist1d".to_string(),
        description: "MNIST-1D (S. Greydanus, 2020; mnist1d 0.0.2.post1, Apache-2.0): the \
                      package's generator, canonical arguments, 16,000 samples; 40 values \
                      per signal as generated; the package's split (first 80 % train)"
            .to_string(),
        features: FEATURES,
        classes: CLASSES,
        train,
        test,
    })
}

/// A problem with one bundled file.
fn bad(file: &str, what: impl std::fmt::Display) -> DataError {
    DataError::Bundled(format!("MNIST-1D file {file}: {what}"))
}

/// Decompresses and decodes one file, which must hold a `dims`-dimensional array.
fn read((gz, file): (&[u8], &str), dims: usize) -> Result<Array, DataError> {
    let mut npy = Vec::new();
    MultiGzDecoder::new(gz)
        .take(MAX_NPY + 1)
        .read_to_end(&mut npy)
        .map_err(|e| bad(file, e))?;
    if npy.len() as u64 > MAX_NPY {
        return Err(bad(file, format!("more than {MAX_NPY} bytes decompressed")));
    }
    crate::npy::decode(&npy, dims).map_err(|e| bad(file, e))
}

/// One split from its features and labels files: `examples` signals of [`FEATURES`]
/// float32 values and as many labels below [`CLASSES`], every class present.
fn split(x: (&[u8], &str), y: (&[u8], &str), examples: usize) -> Result<Split, DataError> {
    let (xs, ys) = (read(x, 2)?, read(y, 1)?);
    if xs.shape != [examples, FEATURES] {
        return Err(bad(
            x.1,
            format!("shape {:?}, expected [{examples}, {FEATURES}]", xs.shape),
        ));
    }
    if ys.shape != [examples] {
        return Err(bad(
            y.1,
            format!("shape {:?}, expected [{examples}]", ys.shape),
        ));
    }
    // Exactly float32 values: the conversion below loses nothing.
    if let Some(v) = xs
        .values
        .iter()
        .find(|&&v| !v.is_finite() || f64::from(v as f32) != v)
    {
        return Err(bad(x.1, format!("value {v} is not a finite float32")));
    }
    let mut seen = [false; CLASSES];
    let mut labels = Vec::with_capacity(examples);
    for &v in &ys.values {
        if !(v >= 0.0 && v < CLASSES as f64 && v.fract() == 0.0) {
            return Err(bad(y.1, format!("label {v} is not a digit")));
        }
        // Exact: an integer in 0..CLASSES.
        let label = v as usize;
        seen[label] = true;
        labels.push(label as u32);
    }
    if let Some(c) = seen.iter().position(|&s| !s) {
        return Err(bad(y.1, format!("no example of digit {c}")));
    }
    Ok(Split {
        x: xs.values.iter().map(|&v| v as f32).collect(),
        y: labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DataSpec, load};
    use sha2::{Digest, Sha256};

    fn mnist1d() -> Dataset {
        load(&DataSpec::Mnist1d).unwrap()
    }

    fn count(s: &Split, c: u32) -> usize {
        s.y.iter().filter(|&&y| y == c).count()
    }

    #[test]
    fn the_bundled_files_are_the_documented_ones() {
        let readme = include_str!("../../../data/README.md");
        let script = include_str!("../../../scripts/regenerate-mnist1d.py");
        let mut total = 0;
        for ((bytes, name), sha) in BUNDLED.iter().zip(FILES).zip(SHA256) {
            let hex: String = Sha256::digest(bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(hex, sha, "{name}");
            assert!(readme.contains(sha), "data/README.md states another {name}");
            assert!(script.contains(name), "the script does not write {name}");
            total += bytes.len();
        }
        // Sizes as the generator printed them.
        let sizes = BUNDLED.map(<[u8]>::len);
        assert_eq!(sizes, [1_907_068, 6_647, 476_923, 1_752]);
        assert_eq!(total, 2_392_390);
        assert!(parse(BUNDLED).is_ok());
    }

    #[test]
    fn shapes_classes_and_label_counts() {
        let d = mnist1d();
        assert_eq!(
            (d.name.as_str(), d.features, d.classes),
            ("mnist1d", 40, 10)
        );
        assert_eq!((d.train.len(), d.test.len()), (12_800, 3_200));
        assert_eq!(d.train.x.len(), TRAIN * FEATURES);
        assert_eq!(d.test.x.len(), TEST * FEATURES);
        // As scripts/regenerate-mnist1d.py prints them ("labels per class"); 1,600
        // examples of each digit in all (the generator makes num_samples / 10 each).
        let train = [1250, 1289, 1261, 1302, 1244, 1284, 1311, 1284, 1283, 1292];
        let test = [350, 311, 339, 298, 356, 316, 289, 316, 317, 308];
        for c in 0..10u32 {
            let i = c as usize;
            assert_eq!(count(&d.train, c), train[i], "digit {c}, training");
            assert_eq!(count(&d.test, c), test[i], "digit {c}, test");
            assert_eq!(train[i] + test[i], 1_600);
        }
    }

    #[test]
    fn features_are_the_generators_standardized_values() {
        let d = mnist1d();
        // As the script prints them (features in [min, max] as float32s, mean and sd
        // to 6 decimals, per split).
        let stats = |s: &Split| {
            let n = s.x.len() as f64;
            let mean = s.x.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
            let var =
                s.x.iter()
                    .map(|&v| (f64::from(v) - mean).powi(2))
                    .sum::<f64>()
                    / n;
            let lo = s.x.iter().copied().fold(f32::INFINITY, f32::min);
            let hi = s.x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            (lo, hi, mean, var.sqrt())
        };
        let (lo, hi, mean, sd) = stats(&d.train);
        assert_eq!((lo, hi), (-5.487_983_7, 4.546_498));
        assert!((mean + 0.001_324).abs() < 1e-6 && (sd - 1.000_990).abs() < 1e-6);
        let (lo, hi, mean, sd) = stats(&d.test);
        assert_eq!((lo, hi), (-4.644_669, 4.410_947));
        assert!((mean - 0.005_294).abs() < 1e-6 && (sd - 0.996_013).abs() < 1e-6);
    }

    #[test]
    fn known_values_and_the_exact_float32s() {
        let d = mnist1d();
        // From NumPy (float32s printed shortest): x[0, :4], y[:10], x_test[0, :4],
        // y_test[:10], x[-1, -2:].
        let first = d.train.row(0, FEATURES).unwrap();
        assert_eq!(
            &first[..4],
            &[0.190_542_56, -0.064_642_556, -0.012_497_109, 0.119_344_3]
        );
        assert_eq!(first[0].to_bits(), 0x3e43_1d97);
        assert_eq!(&d.train.y[..10], &[5, 6, 2, 6, 8, 3, 2, 0, 6, 9]);
        let t = d.test.row(0, FEATURES).unwrap();
        assert_eq!(
            &t[..4],
            &[-0.942_106_54, -0.910_364_1, -1.014_902_5, -1.307_620_3]
        );
        assert_eq!(&d.test.y[..10], &[2, 0, 2, 7, 4, 4, 0, 2, 1, 1]);
        let last = d.train.row(TRAIN - 1, FEATURES).unwrap();
        assert_eq!(&last[FEATURES - 2..], &[-0.531_736_43, -1.007_691_5]);
        // Written back as float32 `.npy` (as NumPy writes it), the features are the
        // bundled file's bytes: nothing was lost or changed in loading.
        let mut npy = Vec::new();
        MultiGzDecoder::new(BUNDLED[0])
            .read_to_end(&mut npy)
            .unwrap();
        assert_eq!(crate::npy::encode_f32(&[TRAIN, FEATURES], &d.train.x), npy);
    }

    #[test]
    fn a_wrong_file_is_an_error_not_a_panic() {
        let gz = |npy: &[u8]| {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut enc, npy).unwrap();
            enc.finish().unwrap()
        };
        let error = |files: [&[u8]; 4]| parse(files).unwrap_err().to_string();
        let e = error([b"not gzip", BUNDLED[1], BUNDLED[2], BUNDLED[3]]);
        assert!(
            e.starts_with("the bundled MNIST-1D file mnist1d-train-x.npy.gz: "),
            "{e}"
        );
        let e = error([BUNDLED[0], BUNDLED[1], BUNDLED[2], &BUNDLED[3][..100]]);
        assert!(e.contains("mnist1d-test-y.npy.gz"), "{e}");
        // The test labels where the training labels belong: the shape is wrong.
        let e = error([BUNDLED[0], BUNDLED[3], BUNDLED[2], BUNDLED[3]]);
        assert!(
            e.contains("mnist1d-train-y.npy.gz: shape [3200], expected [12800]"),
            "{e}"
        );
        // A label of 10, and a label set without a 9.
        let ten = gz(&crate::npy::encode(1, "|u1", false, &[3200], &[10; 3200]));
        let e = error([BUNDLED[0], BUNDLED[1], BUNDLED[2], &ten]);
        assert!(e.ends_with("label 10 is not a digit"), "{e}");
        let no_nine: Vec<u8> = (0..3200).map(|i| (i % 9) as u8).collect();
        let no_nine = gz(&crate::npy::encode(1, "|u1", false, &[3200], &no_nine));
        let e = error([BUNDLED[0], BUNDLED[1], BUNDLED[2], &no_nine]);
        assert!(e.ends_with("no example of digit 9"), "{e}");
        // Features that are not float32 values.
        let f8: Vec<u8> = (0..TEST * FEATURES)
            .flat_map(|_| 0.1f64.to_le_bytes())
            .collect();
        let f8 = gz(&crate::npy::encode(
            1,
            "<f8",
            false,
            &[TEST as u64, FEATURES as u64],
            &f8,
        ));
        let e = error([BUNDLED[0], BUNDLED[1], &f8, BUNDLED[3]]);
        assert!(e.ends_with("value 0.1 is not a finite float32"), "{e}");
        // A stream that decompresses to more than any bundled file.
        let huge = gz(&vec![0; MAX_NPY as usize + 10]);
        let e = error([&huge, BUNDLED[1], BUNDLED[2], BUNDLED[3]]);
        assert!(e.contains("bytes decompressed"), "{e}");
    }
}
