//! Numeric CSV: one example per line, the features and then the label in the last field.
//!
//! Kept whole past 600 lines: half of it is the tests of the format's rules, which sit
//! beside the reader they check.
//!
//! The rules:
//! - fields are separated by commas, and spaces around a field are ignored;
//! - blank lines and lines starting with `#` are skipped;
//! - the first remaining line is a header, and skipped, when one of its fields is not a
//!   number;
//! - every row has the same number of fields, at least two;
//! - features are finite numbers, the label a non-negative integer (`3` or `3.0`) at
//!   most [`MAX_LABEL`](super::MAX_LABEL);
//! - a gzip-compressed file is decompressed, whatever its name (told by its first
//!   bytes, so that a pipe such as `<(cat d.csv.gz)` works too);
//! - a UTF-8 byte-order mark and Windows line ends are accepted.
//!
//! Every error names the file, the line (as editors count it, from 1, blank and comment
//! lines included) and, for a value, the field (from 1).
//!
//! The `csv` crate splits the text into records, set for these files: no headers (we
//! decide), any number of fields (we report a wrong count with both lines), `#`
//! comments, quotes not special, and a line end that is `\n` alone. What stays here, and
//! why:
//! - Quotes are plain text, as before: the files hold numbers, and a quoted field may
//!   hold line ends, which would make a record longer than the line bound below and
//!   its line ambiguous.
//! - `\r` is part of the last field and trimmed away, rather than a line end the crate
//!   knows: `Terminator::CRLF` ends a record at its `\r`, before the `\n` that the
//!   crate's line count goes by (rust-csv issue #395), and ends one at a lone `\r`
//!   too, inside what editors show as one line.
//! - The line of a record: the crate gives each record the position at which it began
//!   to read, before the blank and comment lines it skipped (rust-csv issue #208). The
//!   position after the record is right: one line past the record's, unless the record
//!   ended the input without a line end ([`record_line`]).
//! - Trimming, with `str::trim` (Unicode spaces, as before) on each field: the crate's
//!   `Trim::All` trims ASCII spaces only and builds a new record for every row.
//! - A line of spaces is blank, and a line whose first field starts with `#` after
//!   spaces is a comment: the crate sees only a `#` that starts a line.
//! - The byte-order mark is taken off before the crate reads ([`without_bom`]): the
//!   crate's own stripping can take a file for empty.
//! - The bound on a line's length ([`LineCap`], under the crate): the crate's record
//!   buffer grows with a line, so a file of one endless line would fill the memory
//!   before the crate returned it.

use std::io::{self, Read};
use std::path::Path;

use super::error::{DataError, FieldProblem, LineProblem};
use super::split::Table;
use super::{MAX_FEATURES, MAX_LABEL, display};

/// Reads the CSV file at `path`, gunzipping it when its first bytes say it is gzip: at
/// most [`max_data_bytes`](crate::input::max_data_bytes) of it, before and after
/// decompression, and a regular file unless special files are allowed
/// ([`crate::input`]). A NumPy file is refused with the flag it needs.
pub(crate) fn read_csv(path: &Path) -> Result<Table, DataError> {
    let file = display(path);
    let io_error = |source| DataError::Io {
        file: file.clone(),
        source,
    };
    let cap = crate::input::max_data_bytes();
    const WHAT: &str = "the cap of a data file: a quarter of --max-memory, at most 4 GiB";
    let input = crate::input::open_detected(path, cap, WHAT).map_err(io_error)?;
    if input.head.starts_with(crate::npy::MAGIC) {
        return Err(io_error(io::Error::new(
            io::ErrorKind::InvalidData,
            "is a NumPy .npy file, not CSV: give it with its labels file (--labels), or \
             name it .npy",
        )));
    }
    parse_csv(input.reader, &file)
}

/// The longest line accepted: room for [`MAX_FEATURES`] fields and a label of 64
/// characters each.
pub(crate) const MAX_LINE_BYTES: u64 = (MAX_FEATURES as u64 + 1) * 64;

/// Parses CSV text from `reader`; `file` names it in messages.
pub(crate) fn parse_csv<R: Read>(reader: R, file: &str) -> Result<Table, DataError> {
    // The table may take a quarter of --max-memory (its values are f64 here, then
    // copied to f32 splits).
    parse(reader, file, crate::limits::get().max_memory / 4)
}

/// [`parse_csv`], the table checked against `memory_limit` bytes every 1,024 rows.
fn parse<R: Read>(reader: R, file: &str, memory_limit: u64) -> Result<Table, DataError> {
    let reader = without_bom(reader).map_err(|source| DataError::Io {
        file: file.to_string(),
        source,
    })?;
    let mut rows = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .quoting(false)
        .comment(Some(b'#'))
        .terminator(csv::Terminator::Any(b'\n'))
        .from_reader(LineCap::new(reader, MAX_LINE_BYTES));
    let mut record = csv::StringRecord::new();
    let mut table = Table::new(file, 0, true);
    // The first data line and its number of fields, once seen.
    let mut first: Option<(usize, usize)> = None;
    let mut header_possible = true;
    let mut records = 0usize;
    loop {
        let read = rows.read_record(&mut record);
        let line = record_line(&rows);
        let line_error = |problem| DataError::CsvLine {
            file: file.to_string(),
            line,
            problem,
        };
        match read {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(read_error(e, file, line)),
        }
        records += 1;
        if records.is_multiple_of(1024) {
            let bytes = table.bytes();
            if bytes > memory_limit {
                return Err(DataError::Memory {
                    file: file.to_string(),
                    bytes,
                    limit: memory_limit,
                });
            }
        }
        let fields: Vec<&str> = record.iter().map(str::trim).collect();
        match fields[..] {
            [] | [""] => continue,
            [f, ..] if f.starts_with('#') => continue,
            _ => {}
        }
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
        // A row has at least two fields by now.
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

/// `reader` without the UTF-8 byte-order mark it may start with. The crate strips one
/// too, but only when its first read holds all three bytes, and when that read holds
/// nothing else it takes the input for ended (csv-core 0.1.13, `Reader::read_record`):
/// a file would read as empty.
fn without_bom<R: Read>(mut reader: R) -> io::Result<io::Chain<io::Cursor<Vec<u8>>, R>> {
    let mut head = Vec::with_capacity(3);
    (&mut reader).take(3).read_to_end(&mut head)?;
    if head == "\u{feff}".as_bytes() {
        head.clear();
    }
    Ok(io::Cursor::new(head).chain(reader))
}

/// The line (from 1) of the record `rows` has just read, or tried to read.
///
/// After a record, the crate's line count has passed the record's line end, so the
/// record is on the line before; unless it ended the input without one.
fn record_line<R: Read>(rows: &csv::Reader<LineCap<R>>) -> usize {
    let after = rows.position().line();
    let line = if rows.get_ref().at_end {
        after
    } else {
        after.saturating_sub(1).max(1)
    };
    usize::try_from(line).unwrap_or(usize::MAX)
}

/// The error for a record that could not be read, on `line`.
fn read_error(e: csv::Error, file: &str, line: usize) -> DataError {
    let line_error = |problem| DataError::CsvLine {
        file: file.to_string(),
        line,
        problem,
    };
    let source = match e.into_kind() {
        csv::ErrorKind::Utf8 { .. } => return line_error(LineProblem::NotUtf8),
        csv::ErrorKind::Io(source) => source,
        // Unequal lengths are allowed, and nothing is seeked or deserialized.
        other => io::Error::other(format!("{other:?}")),
    };
    match source
        .get_ref()
        .and_then(|e| e.downcast_ref::<LineTooLong>())
    {
        Some(long) => DataError::CsvLine {
            file: file.to_string(),
            line: long.line,
            problem: LineProblem::TooLong {
                limit: MAX_LINE_BYTES,
            },
        },
        None => DataError::Io {
            file: file.to_string(),
            source,
        },
    }
}

/// A reader that refuses a line of more than `limit` bytes (its line end included):
/// it hands out the bytes before the first that would pass the limit, then fails, so
/// that no more than `limit` bytes of one line ever reach the CSV reader's buffers.
/// It counts the lines it hands out, for the message, and notes the end of the input.
struct LineCap<R> {
    inner: R,
    limit: u64,
    /// Bytes of the current line handed out.
    in_line: u64,
    /// The current line, from 1.
    line: usize,
    /// Whether the inner reader has reported its end.
    at_end: bool,
    /// Whether a line has been refused (every later read fails).
    refused: bool,
}

/// The error [`LineCap`] fails with, inside an [`io::Error`].
#[derive(Debug)]
struct LineTooLong {
    line: usize,
}

impl std::fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} is too long", self.line)
    }
}

impl std::error::Error for LineTooLong {}

impl<R: Read> LineCap<R> {
    fn new(inner: R, limit: u64) -> Self {
        LineCap {
            inner,
            limit,
            in_line: 0,
            line: 1,
            at_end: false,
            refused: false,
        }
    }

    fn refuse(&mut self) -> io::Error {
        self.refused = true;
        io::Error::new(io::ErrorKind::InvalidData, LineTooLong { line: self.line })
    }
}

impl<R: Read> Read for LineCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.refused {
            return Err(self.refuse());
        }
        let n = self.inner.read(buf)?;
        if n == 0 {
            // Nothing read into an empty buffer says nothing about the end.
            self.at_end |= !buf.is_empty();
            return Ok(0);
        }
        let chunk = &buf[..n];
        let is_end = |&b: &u8| b == b'\n';
        if n as u64 <= self.limit - self.in_line {
            // No line in the chunk can pass the limit: count, and carry the last line.
            self.line += chunk.iter().filter(|b| is_end(b)).count();
            self.in_line = match chunk.iter().rposition(is_end) {
                Some(i) => (n - 1 - i) as u64,
                None => self.in_line + n as u64,
            };
            return Ok(n);
        }
        // A line may pass the limit here: hand out the bytes before the first that does
        // (the bytes read past it are dropped, since the next read fails).
        for (i, b) in chunk.iter().enumerate() {
            if self.in_line == self.limit {
                if i == 0 {
                    return Err(self.refuse());
                }
                self.refused = true;
                return Ok(i);
            }
            self.in_line += 1;
            if is_end(b) {
                self.line += 1;
                self.in_line = 0;
            }
        }
        Ok(n)
    }
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

    fn parse_with(text: &str, memory_limit: u64) -> Result<Table, DataError> {
        super::parse(text.as_bytes(), "train.csv", memory_limit)
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
    fn lines_are_counted_as_editors_count_them() {
        // Blank lines, comments, lines of spaces, indented comments and CRLF all count,
        // before and after the header; the last line has no line end.
        let text = "\n# c\n  # indented, a comment\n   \n\r\nx,y,label\r\n\n1,2,0\r\n# c\n\n1,x,0";
        assert_eq!(
            message(text),
            "train.csv line 11, field 2: feature \"x\" is not a number"
        );
        assert_eq!(parse(&text.replace("1,x", "1,3")).unwrap().origin, [8, 11]);
        assert_eq!(
            message("# a\n\n1,2,0\n\n\n1,2\n"),
            "train.csv line 6: 2 fields, but line 3 has 3"
        );
        assert_eq!(parse("1,2,0\n\n\n").unwrap().origin, [1]);
        assert_eq!(
            message("1,2,0\n\n\n1,2,3,4"),
            "train.csv line 4: 4 fields, but line 1 has 3"
        );
    }

    #[test]
    fn quotes_and_lone_carriage_returns_are_plain_text() {
        assert_eq!(
            message("1,2,0\n\"1\",2,0\n"),
            "train.csv line 2, field 1: feature \"\\\"1\\\"\" is not a number"
        );
        assert_eq!(
            message("1,2,0\n1,2\r3,0\n"),
            "train.csv line 2, field 2: feature \"2\\r3\" is not a number"
        );
        // A `#` inside a line is a field's text, not a comment.
        assert_eq!(
            message("1,2,0\n1,#2,0\n"),
            "train.csv line 2, field 2: feature \"#2\" is not a number"
        );
    }

    /// Hands out `text` a few bytes at a time, as a pipe or a gzip stream may.
    struct Trickle<'a> {
        text: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.text.len());
            buf[..n].copy_from_slice(&self.text[..n]);
            self.text = &self.text[n..];
            Ok(n)
        }
    }

    #[test]
    fn input_cut_into_any_reads_gives_the_same_table_or_error() {
        let texts = [
            "\u{feff}# made by hand\n\nsepal, petal ,class\r\n 1 , 2 , 3.0 \r\n\n# more\n4,5,0\n",
            "\u{feff}1,2,0\n3,4,1",
            "\u{feff}  # a comment after spaces\n1,2,0\n",
            "\n# c\n  # indented\n   \n\r\nx,y,label\r\n\n1,2,0\r\n# c\n\n1,x,0",
            "1,2,0\n\n1,2\n",
            "1,2,0\n1,2,",
            "a,b\n1,2\nx,3\n",
            "",
            "\n\n",
        ];
        for text in texts {
            let whole = format!("{:?}", parse(text));
            for step in [1, 2, 3, 5] {
                let trickle = Trickle {
                    text: text.as_bytes(),
                    step,
                };
                let cut = format!("{:?}", parse_csv(trickle, "train.csv"));
                assert_eq!(cut, whole, "{text:?} in reads of {step}");
            }
        }
    }

    /// `left` bytes of digits and no line end, made as they are read.
    struct Endless {
        left: u64,
        read: u64,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf
                .len()
                .min(usize::try_from(self.left).unwrap_or(usize::MAX));
            buf[..n].fill(b'1');
            self.left -= n as u64;
            self.read += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn a_line_without_end_is_refused_without_being_held() {
        let mut endless = Endless {
            left: 100 << 20,
            read: 0,
        };
        let prefix: &[u8] = b"# 100 MB of digits follow\n1,0\n";
        let e = parse_csv(prefix.chain(&mut endless), "big.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "big.csv line 3: longer than 4.0 MiB without a line end: not a CSV table of at \
             most 65536 features"
        );
        // Read: the line up to the limit and one buffer more, not the 100 MB.
        assert!(
            endless.read < MAX_LINE_BYTES + (64 << 10),
            "{}",
            endless.read
        );
    }

    #[test]
    fn the_line_cap_takes_lines_up_to_the_limit_with_their_end() {
        let read = |text: &[u8], limit| {
            let mut out = Vec::new();
            let mut cap = LineCap::new(Trickle { text, step: 3 }, limit);
            cap.read_to_end(&mut out).map(|_| out)
        };
        assert_eq!(read(b"1234\n12\n1234", 5).unwrap(), b"1234\n12\n1234");
        assert_eq!(read(b"12345", 5).unwrap(), b"12345");
        let e = read(b"1234\n12\n12345\n", 5).unwrap_err();
        let long = e.get_ref().and_then(|e| e.downcast_ref::<LineTooLong>());
        assert_eq!(long.map(|l| l.line), Some(3));
        assert!(read(b"123456", 5).is_err());
        // Through the CSV reader: a row of exactly MAX_LINE_BYTES bytes, its line end
        // included, is read; one byte more is refused.
        let limit = usize::try_from(MAX_LINE_BYTES).unwrap();
        let row = |len: usize| format!("1,0\n1{},0\n", " ".repeat(len - 4));
        assert_eq!(parse(&row(limit)).unwrap().y, [0, 0]);
        assert_eq!(
            message(&row(limit + 1)),
            "train.csv line 2: longer than 4.0 MiB without a line end: not a CSV table of at \
             most 65536 features"
        );
    }

    #[test]
    fn the_table_is_checked_against_the_memory_limit() {
        let text = "1,2,0\n".repeat(5000);
        assert_eq!(parse_with(&text, 1 << 30).unwrap().len(), 5000);
        let e = parse_with(&text, 1000).unwrap_err().to_string();
        assert!(
            e.starts_with("train.csv: the data takes ") && e.contains("more than the 1000 B"),
            "{e}"
        );
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
        // The content decides, not the name: plain text named `.csv.gz` is CSV; a gzip
        // stream cut short is an error naming the file.
        let plain = dir.path().join("plain.csv.gz");
        std::fs::write(&plain, "1,2,0\n").unwrap();
        assert_eq!(read_csv(&plain).unwrap().y, [0]);
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
