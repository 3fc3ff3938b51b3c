//! Numeric CSV: one example per line, the features and then the label in the last field.
//!
//! Written by hand rather than with the `csv` crate: the files hold numbers only, so no
//! quoting is needed, and what a user needs most (the line and field of every error)
//! has to be tracked here either way. The rules:
//! - fields are separated by commas, and spaces around a field are ignored;
//! - blank lines and lines starting with `#` are skipped;
//! - the first remaining line is a header, and skipped, when one of its fields is not a
//!   number;
//! - every row has the same number of fields, at least two;
//! - features are finite numbers, the label a non-negative integer (`3` or `3.0`) at
//!   most [`MAX_LABEL`](super::MAX_LABEL);
//! - a file whose name ends in `.gz` is gzip-compressed;
//! - a UTF-8 byte-order mark and Windows line ends are accepted.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::error::{DataError, FieldProblem, LineProblem};
use super::split::Table;
use super::{MAX_FEATURES, MAX_LABEL, display};

/// Reads the CSV file at `path`, gunzipping it when its name ends in `.gz`: at most
/// [`max_data_bytes`](crate::input::max_data_bytes) of it, before and after
/// decompression, and a regular file unless special files are allowed
/// ([`crate::input`]).
pub(crate) fn read_csv(path: &Path) -> Result<Table, DataError> {
    let file = display(path);
    let io_error = |source| DataError::Io {
        file: file.clone(),
        source,
    };
    let cap = crate::input::max_data_bytes();
    const WHAT: &str = "the cap of a data file: a quarter of --max-memory, at most 4 GiB";
    if is_gz(path) {
        let gz = crate::input::open_gz(path, cap, WHAT).map_err(io_error)?;
        parse_csv(BufReader::new(gz), &file)
    } else {
        let f = crate::input::open(path, cap, WHAT).map_err(io_error)?;
        parse_csv(BufReader::new(f), &file)
    }
}

/// The longest line accepted: room for [`MAX_FEATURES`] fields and a label of 64
/// characters each.
pub(crate) const MAX_LINE_BYTES: u64 = (MAX_FEATURES as u64 + 1) * 64;

/// Whether a file name ends in `.gz` (any case).
fn is_gz(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// Parses CSV text from `reader`; `file` names it in messages.
pub(crate) fn parse_csv<R: BufRead>(mut reader: R, file: &str) -> Result<Table, DataError> {
    let mut table = Table::new(file, 0, true);
    // The first data line and its number of fields, once seen.
    let mut first: Option<(usize, usize)> = None;
    let mut header_possible = true;
    let mut buf = Vec::new();
    let mut line = 0;
    // The table may take a quarter of --max-memory (its values are f64 here, then
    // copied to f32 splits).
    let memory_limit = crate::limits::get().max_memory / 4;
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|source| DataError::Io {
                file: file.to_string(),
                source,
            })?;
        if n == 0 {
            break;
        }
        line += 1;
        let line_error = |problem| DataError::CsvLine {
            file: file.to_string(),
            line,
            problem,
        };
        if n as u64 > MAX_LINE_BYTES {
            return Err(line_error(LineProblem::TooLong {
                limit: MAX_LINE_BYTES,
            }));
        }
        if line % 1024 == 0 {
            let bytes = table.bytes();
            if bytes > memory_limit {
                return Err(DataError::Memory {
                    file: file.to_string(),
                    bytes,
                    limit: memory_limit,
                });
            }
        }
        let text = std::str::from_utf8(&buf).map_err(|_| line_error(LineProblem::NotUtf8))?;
        let text = if line == 1 {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if header_possible {
            header_possible = false;
            if fields.iter().any(|f| f.parse::<f64>().is_err()) {
                continue;
            }
        }
        if fields.len() > MAX_FEATURES + 1 {
            return Err(line_error(LineProblem::TooManyFields {
                found: fields.len(),
            }));
        }
        match first {
            None => {
                if fields.len() < 2 {
                    return Err(line_error(LineProblem::TooFewFields {
                        found: fields.len(),
                    }));
                }
                first = Some((line, fields.len()));
                table.features = fields.len() - 1;
            }
            Some((first_line, expected)) if fields.len() != expected => {
                return Err(line_error(LineProblem::FieldCount {
                    found: fields.len(),
                    expected,
                    first_line,
                }));
            }
            Some(_) => {}
        }
        let field_error = |field: usize, problem| DataError::CsvField {
            file: file.to_string(),
            line,
            field: field + 1,
            problem,
        };
        // `split` yields at least one field, and a row has at least two by now.
        let Some((label, features)) = fields.split_last() else {
            continue;
        };
        for (j, f) in features.iter().enumerate() {
            let v = parse_feature(f).map_err(|p| field_error(j, p))?;
            table.x.push(v);
        }
        let y = parse_label(label).map_err(|p| field_error(features.len(), p))?;
        table.y.push(y);
        table.origin.push(line);
    }
    if table.len() == 0 {
        return Err(DataError::NoExamples {
            file: file.to_string(),
        });
    }
    Ok(table)
}

/// A feature: a finite number.
fn parse_feature(f: &str) -> Result<f64, FieldProblem> {
    if f.is_empty() {
        return Err(FieldProblem::Empty);
    }
    match f.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(FieldProblem::NotFinite(f.to_string())),
        Err(_) => Err(FieldProblem::NotANumber(f.to_string())),
    }
}

/// A label: a non-negative integer up to [`MAX_LABEL`], written `3`, `3.0` or `3e0`.
fn parse_label(f: &str) -> Result<u32, FieldProblem> {
    if f.is_empty() {
        return Err(FieldProblem::Empty);
    }
    match f.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 => {
            if v > f64::from(MAX_LABEL) {
                Err(FieldProblem::LabelTooLarge(f.to_string()))
            } else {
                // Exact: an integer in 0..=MAX_LABEL.
                Ok(v as u32)
            }
        }
        _ => Err(FieldProblem::BadLabel(f.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;

    fn parse(text: &str) -> Result<Table, DataError> {
        parse_csv(text.as_bytes(), "train.csv")
    }

    fn message(text: &str) -> String {
        match parse(text) {
            Ok(t) => panic!("parsed {t:?} from {text:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reads_features_and_labels() {
        let t = parse("1,2.5,0\n-3,4e2,1\n").unwrap();
        assert_eq!(t.features, 2);
        assert_eq!(t.x, [1.0, 2.5, -3.0, 400.0]);
        assert_eq!(t.y, [0, 1]);
        assert_eq!(t.origin, [1, 2]);
    }

    #[test]
    fn skips_header_comments_and_blank_lines() {
        let text =
            "\u{feff}# made by hand\n\nsepal, petal ,class\r\n 1 , 2 , 3.0 \r\n\n# more\n4,5,0\n";
        let t = parse(text).unwrap();
        assert_eq!(t.features, 2);
        assert_eq!(t.x, [1.0, 2.0, 4.0, 5.0]);
        assert_eq!(t.y, [3, 0]);
        assert_eq!(t.origin, [4, 7]);
    }

    #[test]
    fn only_the_first_data_line_can_be_a_header() {
        let e = message("a,b\n1,2\nx,3\n");
        assert_eq!(
            e,
            "train.csv line 3, field 1: feature \"x\" is not a number"
        );
        // A numeric first line is data, not a header.
        assert_eq!(parse("1,0\n2,1\n").unwrap().y, [0, 1]);
        // A header line with an empty field (a pandas index column) is still a header.
        assert_eq!(parse(",a,label\n0,1,1\n").unwrap().x, [0.0, 1.0]);
    }

    #[test]
    fn labels_are_non_negative_integers() {
        let t = parse("0,3\n0,3.0\n0,-0\n0,65535\n").unwrap();
        assert_eq!(t.y, [3, 3, 0, MAX_LABEL]);
        for (label, problem) in [
            ("3.5", "label \"3.5\" is not a non-negative integer"),
            ("-1", "label \"-1\" is not a non-negative integer"),
            ("inf", "label \"inf\" is not a non-negative integer"),
            ("NaN", "label \"NaN\" is not a non-negative integer"),
            ("cat", "label \"cat\" is not a non-negative integer"),
            (
                "65536",
                "label \"65536\" is above 65535, the largest label nrpt takes",
            ),
            (
                "1e30",
                "label \"1e30\" is above 65535, the largest label nrpt takes",
            ),
        ] {
            let e = message(&format!("1,2,0\n1,2,{label}\n"));
            assert_eq!(e, format!("train.csv line 2, field 3: {problem}"));
        }
    }

    #[test]
    fn feature_errors_name_line_and_field() {
        assert_eq!(
            message("1,2,0\n# c\n1,x,0\n"),
            "train.csv line 3, field 2: feature \"x\" is not a number"
        );
        assert_eq!(
            message("1,2,0\n1,nan,0\n"),
            "train.csv line 2, field 2: feature \"nan\" is not finite"
        );
        assert_eq!(
            message("1,2,0\ninf,1,0\n"),
            "train.csv line 2, field 1: feature \"inf\" is not finite"
        );
        assert_eq!(message("1,2,0\n1,,0\n"), "train.csv line 2, field 2: empty");
        assert_eq!(message("1,2,0\n1,2,\n"), "train.csv line 2, field 3: empty");
    }

    #[test]
    fn line_errors_name_the_line() {
        assert_eq!(
            message("1,2,0\n\n1,2\n"),
            "train.csv line 3: 2 fields, but line 1 has 3"
        );
        assert_eq!(
            message("h1,h2\n1,2,0\n1,2,0,4\n"),
            "train.csv line 3: 4 fields, but line 2 has 3"
        );
        assert_eq!(
            message("1\n2\n"),
            "train.csv line 1: 1 field; a row needs at least one feature and then the label"
        );
        let mut bytes = b"1,2,0\n".to_vec();
        bytes.extend([0xff, 0xfe, b',', b'1', b'\n']);
        let e = parse_csv(bytes.as_slice(), "train.csv").unwrap_err();
        assert_eq!(e.to_string(), "train.csv line 2: not UTF-8 text");
    }

    #[test]
    fn files_without_examples_are_rejected() {
        for text in ["", "\n\n", "# only a comment\n", "a,b,label\n"] {
            assert_eq!(message(text), "train.csv: no examples", "{text:?}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        // Arbitrary bytes, including truncated lines and stray separators: always an
        // error or a table, never a panic.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    b"0123456789.,-e\n#x \xff"[(state % 19) as usize]
                })
                .collect();
            if let Ok(t) = parse_csv(bytes.as_slice(), "g.csv") {
                assert_eq!(t.x.len(), t.len() * t.features);
            }
        }
    }

    #[test]
    fn reads_plain_and_gzipped_files() {
        let dir = tempfile::tempdir().unwrap();
        let text = "x1,x2,y\n0.5,1,1\n2,3,0\n";
        let plain = dir.path().join("d.csv");
        std::fs::write(&plain, text).unwrap();
        let gz = dir.path().join("d.csv.GZ");
        let mut enc = flate2::write::GzEncoder::new(
            File::create(&gz).unwrap(),
            flate2::Compression::default(),
        );
        enc.write_all(text.as_bytes()).unwrap();
        enc.finish().unwrap();
        let a = read_csv(&plain).unwrap();
        let b = read_csv(&gz).unwrap();
        assert_eq!(a.x, [0.5, 1.0, 2.0, 3.0]);
        assert_eq!((a.x, a.y), (b.x, b.y));
    }

    #[test]
    fn unreadable_files_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.csv");
        let e = read_csv(&missing).unwrap_err().to_string();
        assert!(e.starts_with(&missing.display().to_string()), "{e}");
        // Not gzip at all, and a gzip stream cut short.
        let bad = dir.path().join("bad.csv.gz");
        std::fs::write(&bad, "1,2,0\n").unwrap();
        let e = read_csv(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.csv.gz"), "{e}");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&b"1,2,0\n".repeat(1000)).unwrap();
        let mut cut = enc.finish().unwrap();
        cut.truncate(cut.len() / 2);
        let short = dir.path().join("short.csv.gz");
        std::fs::write(&short, cut).unwrap();
        let e = read_csv(&short).unwrap_err().to_string();
        assert!(e.contains("short.csv.gz"), "{e}");
    }
}
