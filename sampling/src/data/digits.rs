//! The bundled data set: UCI "Optical Recognition of Handwritten Digits" (E. Alpaydin
//! and C. Kaynak, 1998; CC BY 4.0), the 1,797-example copy that scikit-learn ships as
//! `sklearn/datasets/data/digits.csv.gz`. Each example is an 8×8 image of pixel counts
//! 0..=16, read row by row, and its digit 0..=9. `data/README.md` gives the source and
//! attribution; the file is compiled into the binary so `nrpt` runs from any folder.
//!
//! Features are the counts divided by 16, so they lie in [0, 1] (exactly: 16 is a power
//! of two). They are not standardized: they already share one scale, and
//! standardizing would blow up the pixels that are almost always blank (a corner pixel
//! set in a handful of images would sit tens of standard deviations out).

use flate2::read::MultiGzDecoder;

use super::csv::parse_csv;
use super::error::DataError;
use super::{Dataset, Split};

/// The gzip-compressed CSV file, as in `data/digits.csv.gz`. The bundled files are read
/// through `host/data`, a link to the repository's `data/` inside this crate's folder, so
/// that a packaged copy of the crate (`cargo package`, the Python package's sdist) carries
/// them.
pub(crate) const GZ: &[u8] = include_bytes!("../../data/digits.csv.gz");

/// SHA-256 of the bundled file (`data/digits.csv.gz`), as `data/README.md` states it
/// (checked by the tests).
#[cfg(test)]
const SHA256: &str = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22";

/// Examples in the file.
pub(crate) const EXAMPLES: usize = 1_797;
/// Examples in the training split (`i % 4 != 3`; checked by the tests).
#[cfg(test)]
const TRAIN: usize = 1_348;
/// Examples in the test split (`i % 4 == 3`; checked by the tests).
#[cfg(test)]
const TEST: usize = 449;
/// Pixels per image.
pub(crate) const FEATURES: usize = 64;
/// Digits.
pub(crate) const CLASSES: usize = 10;

/// The name messages give the bundled file.
const FILE: &str = "digits.csv.gz (bundled)";

/// The bundled digits, split by the fixed rule, features in [0, 1].
///
/// Decompresses and parses the bundled file (a few milliseconds); it cannot fail, since
/// the file is part of the binary and the tests check it. [`load`](super::load) with
/// [`DataSpec::Digits`](super::DataSpec::Digits) returns the same data set through a
/// `Result`, for callers that would rather not rely on that.
pub fn digits() -> Dataset {
    match parse(GZ) {
        Ok(d) => d,
        // Unreachable for the bytes compiled in: `the_bundled_file_is_the_documented_one`.
        Err(e) => panic!("{e}"),
    }
}

/// Parses a digits file: `FEATURES` counts in 0..=16 and a label in 0..CLASSES per line.
pub(crate) fn parse(gz: &[u8]) -> Result<Dataset, DataError> {
    let table = parse_csv(MultiGzDecoder::new(gz), FILE)?;
    let bad = |what: String| Err(DataError::Bundled(format!("digits file: {what}")));
    if table.features != FEATURES || table.len() != EXAMPLES {
        return bad(format!(
            "{} examples of {} features, expected {EXAMPLES} of {FEATURES}",
            table.len(),
            table.features
        ));
    }
    if let Some(v) = table
        .x
        .iter()
        .find(|&&v| !(0.0..=16.0).contains(&v) || v.fract() != 0.0)
    {
        return bad(format!("pixel count {v} is not an integer in 0..=16"));
    }
    if let Some(y) = table.y.iter().find(|&&y| y as usize >= CLASSES) {
        return bad(format!("label {y} is not a digit"));
    }
    let (train, test) = table.split_default();
    let scale = |t: &super::split::Table| Split {
        x: t.x.iter().map(|&v| (v / 16.0) as f32).collect(),
        y: t.y.clone(),
    };
    Ok(Dataset {
        name: "digits".to_string(),
        description: "UCI optical recognition of handwritten digits (E. Alpaydin, \
                      C. Kaynak, 1998; CC BY 4.0), scikit-learn's copy: 8x8 pixel counts \
                      / 16; test = examples i % 4 == 3"
            .to_string(),
        features: FEATURES,
        classes: CLASSES,
        train: scale(&train),
        test: scale(&test),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn the_bundled_file_is_the_documented_one() {
        let hex: String = Sha256::digest(GZ)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, SHA256);
        assert_eq!(GZ.len(), 57_523);
        let readme = include_str!("../../../data/README.md");
        assert!(
            readme.contains(SHA256),
            "data/README.md states another SHA-256"
        );
        assert!(parse(GZ).is_ok());
    }

    #[test]
    fn counts_features_and_classes() {
        let d = digits();
        assert_eq!((d.name.as_str(), d.features, d.classes), ("digits", 64, 10));
        assert_eq!((d.train.len(), d.test.len()), (TRAIN, TEST));
        assert_eq!(TRAIN + TEST, EXAMPLES);
        assert_eq!(d.train.x.len(), TRAIN * FEATURES);
        assert_eq!(d.test.x.len(), TEST * FEATURES);
        // Counted with awk from the file: digit 0 has 135 training and 43 test examples.
        let count = |s: &Split, c| s.y.iter().filter(|&&y| y == c).count();
        assert_eq!((count(&d.train, 0), count(&d.test, 0)), (135, 43));
        for c in 0..10 {
            assert!(
                count(&d.train, c) > 100 && count(&d.test, c) > 30,
                "digit {c}"
            );
        }
        let all = d.train.x.iter().chain(&d.test.x);
        assert!(all.clone().all(|v| (0.0..=1.0).contains(v)));
        assert!(all.clone().any(|&v| v == 0.0) && all.clone().any(|&v| v == 1.0));
    }

    #[test]
    fn known_rows() {
        let d = digits();
        // Line 1 of the file: 0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,… and digit 0.
        let first = d.train.row(0, 64).unwrap();
        let counts = [
            0.0, 0.0, 5.0, 13.0, 9.0, 1.0, 0.0, 0.0, 0.0, 0.0, 13.0, 15.0, 10.0,
        ];
        for (j, c) in counts.iter().enumerate() {
            assert_eq!(first[j], c / 16.0, "pixel {j}");
        }
        assert_eq!(d.train.y[0], 0);
        // Line 4 (example 3) is the first test example: 0,0,7,15,13,1,0,0,… digit 3.
        let t = d.test.row(0, 64).unwrap();
        assert_eq!(
            &t[..6],
            &[0.0, 0.0, 7.0 / 16.0, 15.0 / 16.0, 13.0 / 16.0, 1.0 / 16.0]
        );
        assert_eq!(d.test.y[0], 3);
        // The last line (example 1796, training): 0,0,10,14,8,1,…, digit 8.
        let last = d.train.row(TRAIN - 1, 64).unwrap();
        assert_eq!(&last[..4], &[0.0, 0.0, 10.0 / 16.0, 14.0 / 16.0]);
        assert_eq!(d.train.y[TRAIN - 1], 8);
        // Sum of every count in the file (features and labels), from awk: 569,788.
        let pixels: f64 = d
            .train
            .x
            .iter()
            .chain(&d.test.x)
            .map(|&v| f64::from(v) * 16.0)
            .sum();
        let labels: u32 = d.train.y.iter().chain(&d.test.y).sum();
        assert_eq!(pixels + f64::from(labels), 569_788.0);
    }

    #[test]
    fn a_wrong_file_is_an_error_not_a_panic() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, b"1,2,3\n").unwrap();
        let small = enc.finish().unwrap();
        let e = parse(&small).unwrap_err().to_string();
        assert!(
            e.starts_with("the bundled digits file: 1 examples of 2 features"),
            "{e}"
        );
        assert!(parse(&GZ[..1000]).is_err());
        assert!(parse(b"not gzip").is_err());
    }
}
