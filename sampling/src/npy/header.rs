//! The `.npy` header: a Python dict literal naming the dtype, the order and the shape,
//! parsed and formatted; and the ten dtypes we read.

use super::{FormatProblem, Shape};

/// An element type: kind, size in bytes, byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Dtype {
    /// `f`, `i` or `u`.
    pub kind: u8,
    /// Bytes per element.
    pub size: usize,
    /// Whether the bytes are most significant first.
    pub big_endian: bool,
}

impl Dtype {
    /// Reads a `descr` string such as `<f8`, `>i2` or `|u1`.
    pub fn parse(descr: &[u8]) -> Result<Dtype, FormatProblem> {
        let unsupported = || FormatProblem::Dtype(format!("'{}'", String::from_utf8_lossy(descr)));
        let &[order, kind, size] = descr else {
            return Err(unsupported());
        };
        let size = usize::from(size.wrapping_sub(b'0'));
        let known = matches!((kind, size), (b'f', 4 | 8) | (b'i' | b'u', 1 | 2 | 4 | 8));
        // '|' (not applicable) and '=' (native) only make sense for single bytes: NumPy
        // always writes '<' or '>' for wider types.
        let big_endian = match order {
            b'<' => false,
            b'>' => true,
            b'|' | b'=' if size == 1 => false,
            _ => return Err(unsupported()),
        };
        if !known {
            return Err(unsupported());
        }
        Ok(Dtype {
            kind,
            size,
            big_endian,
        })
    }

    /// Converts raw elements (a whole number of them) to `f64`.
    pub fn decode(self, data: &[u8]) -> Vec<f64> {
        fn each<const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> f64) -> Vec<f64> {
            data.as_chunks::<N>().0.iter().map(|&b| f(b)).collect()
        }
        macro_rules! of {
            ($t:ty, $n:literal) => {
                if self.big_endian {
                    each::<$n>(data, |b| <$t>::from_be_bytes(b) as f64)
                } else {
                    each::<$n>(data, |b| <$t>::from_le_bytes(b) as f64)
                }
            };
        }
        match (self.kind, self.size) {
            (b'f', 4) => of!(f32, 4),
            (b'f', _) => of!(f64, 8),
            (b'i', 1) => of!(i8, 1),
            (b'i', 2) => of!(i16, 2),
            (b'i', 4) => of!(i32, 4),
            (b'i', _) => of!(i64, 8),
            (_, 1) => of!(u8, 1),
            (_, 2) => of!(u16, 2),
            (_, 4) => of!(u32, 4),
            _ => of!(u64, 8),
        }
    }
}

/// What a header says.
#[derive(Debug)]
pub(super) struct Header {
    /// The element type.
    pub dtype: Dtype,
    /// Whether the elements are in column-major order.
    pub fortran: bool,
    /// The dimensions.
    pub shape: Vec<u64>,
}

/// A value in the header's dict.
enum Value<'a> {
    Str(&'a [u8]),
    Bool(bool),
    Tuple(Vec<u64>),
}

/// Parses the dict literal `{'descr': …, 'fortran_order': …, 'shape': (…), }`, keys in
/// any order, padded with spaces and a newline.
pub(super) fn parse_header(header: &[u8]) -> Result<Header, FormatProblem> {
    let mut c = Cursor { s: header, pos: 0 };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    c.skip_space();
    c.expect(b'{')?;
    loop {
        c.skip_space();
        if c.eat(b'}') {
            break;
        }
        let key = c.string()?;
        c.skip_space();
        c.expect(b':')?;
        c.skip_space();
        let value = c.value()?;
        let twice = |k: &str| FormatProblem::Header(format!("the key '{k}' is given twice"));
        match (key, value) {
            (b"descr", Value::Str(s)) => {
                if descr.replace(Dtype::parse(s)?).is_some() {
                    return Err(twice("descr"));
                }
            }
            (b"fortran_order", Value::Bool(b)) => {
                if fortran.replace(b).is_some() {
                    return Err(twice("fortran_order"));
                }
            }
            (b"shape", Value::Tuple(t)) => {
                if shape.replace(t).is_some() {
                    return Err(twice("shape"));
                }
            }
            (b"descr" | b"fortran_order" | b"shape", _) => {
                let key = String::from_utf8_lossy(key);
                return Err(FormatProblem::Header(format!(
                    "the value of '{key}' has the wrong type"
                )));
            }
            _ => {
                return Err(FormatProblem::UnknownKey(
                    String::from_utf8_lossy(key).into_owned(),
                ));
            }
        }
        c.skip_space();
        if !c.eat(b',') {
            c.skip_space();
            c.expect(b'}')?;
            break;
        }
    }
    c.skip_space();
    if c.pos != header.len() {
        return Err(FormatProblem::Header(format!(
            "unexpected text after the dict, at byte {}",
            c.pos
        )));
    }
    Ok(Header {
        dtype: descr.ok_or(FormatProblem::MissingKey("descr"))?,
        fortran: fortran.ok_or(FormatProblem::MissingKey("fortran_order"))?,
        shape: shape.ok_or(FormatProblem::MissingKey("shape"))?,
    })
}

/// The digits NumPy leaves room for in the dimension that grows when an array is
/// appended to (the first in C order, the last in Fortran order): it writes spaces after
/// the dict so that the shape can be rewritten in place (`GROWTH_AXIS_MAX_DIGITS` in
/// `numpy/lib/_format_impl.py`).
const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// The dict as NumPy writes it, keys sorted, each entry followed by `, `, then the room
/// for growth; not yet padded to the alignment, which depends on the preamble.
pub(super) fn format_dict(descr: &str, fortran: bool, shape: &[u64]) -> String {
    let order = if fortran { "True" } else { "False" };
    let shape_text = Shape(shape.to_vec()).to_string();
    let mut dict =
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape_text}, }}");
    let growing = if fortran { shape.last() } else { shape.first() };
    if let Some(d) = growing {
        let digits = d.to_string().len();
        dict.extend(std::iter::repeat_n(
            ' ',
            GROWTH_AXIS_MAX_DIGITS.saturating_sub(digits),
        ));
    }
    dict
}

/// A position in the header text.
struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn expect(&mut self, c: u8) -> Result<(), FormatProblem> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{}'", char::from(c))))
        }
    }

    fn unexpected(&self, wanted: &str) -> FormatProblem {
        let found = match self.peek() {
            Some(b) if b.is_ascii_graphic() => format!("'{}'", char::from(b)),
            Some(b) => format!("byte 0x{b:02x}"),
            None => "the end".to_string(),
        };
        FormatProblem::Header(format!(
            "expected {wanted} at byte {}, found {found}",
            self.pos
        ))
    }

    /// A quoted string, `'…'` or `"…"` (the strings we accept have no escapes).
    fn string(&mut self) -> Result<&'a [u8], FormatProblem> {
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.unexpected("a quoted string")),
        };
        let start = self.pos + 1;
        let len = self.s[start..]
            .iter()
            .position(|&b| b == quote)
            .ok_or_else(|| FormatProblem::Header("a string is not closed".to_string()))?;
        self.pos = start + len + 1;
        Ok(&self.s[start..start + len])
    }

    /// A non-negative integer, with Python 2's optional `L` suffix.
    fn int(&mut self) -> Result<u64, FormatProblem> {
        let start = self.pos;
        let mut n = 0u64;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                .ok_or_else(|| {
                    FormatProblem::Header(format!("a dimension at byte {start} exceeds 64 bits"))
                })?;
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.unexpected("a dimension"));
        }
        self.eat(b'L');
        Ok(n)
    }

    /// A string, `True`, `False` or a tuple of integers.
    fn value(&mut self) -> Result<Value<'a>, FormatProblem> {
        match self.peek() {
            Some(b'\'' | b'"') => self.string().map(Value::Str),
            Some(b'[') => Err(FormatProblem::Dtype(
                "a list of fields (a structured dtype)".to_string(),
            )),
            Some(b'(') => {
                self.pos += 1;
                let mut dims = Vec::new();
                loop {
                    self.skip_space();
                    if self.eat(b')') {
                        break;
                    }
                    dims.push(self.int()?);
                    self.skip_space();
                    if !self.eat(b',') {
                        self.expect(b')')?;
                        break;
                    }
                }
                Ok(Value::Tuple(dims))
            }
            _ => {
                let rest = &self.s[self.pos.min(self.s.len())..];
                for (word, b) in [(&b"True"[..], true), (&b"False"[..], false)] {
                    if rest.starts_with(word) {
                        self.pos += word.len();
                        return Ok(Value::Bool(b));
                    }
                }
                Err(self.unexpected("a string, True, False or a tuple"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Header, FormatProblem> {
        parse_header(text.as_bytes())
    }

    fn error(text: &str) -> String {
        match parse(text) {
            Ok(h) => panic!("parsed {h:?} from {text:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reads_what_numpy_writes() {
        let h = parse("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }    \n").unwrap();
        assert_eq!(h.shape, [2, 3]);
        assert!(!h.fortran);
        assert_eq!(
            h.dtype,
            Dtype {
                kind: b'f',
                size: 8,
                big_endian: false
            }
        );
        let h = parse("{'descr': '|u1', 'fortran_order': True, 'shape': (4,), }\n").unwrap();
        assert_eq!(
            (h.shape.as_slice(), h.fortran, h.dtype.size),
            (&[4][..], true, 1)
        );
        let scalar = parse("{'descr': '<i4', 'fortran_order': False, 'shape': (), }").unwrap();
        assert!(scalar.shape.is_empty());
    }

    #[test]
    fn formatted_dicts_parse_back() {
        assert_eq!(
            format_dict("<f4", false, &[3, 2]),
            format!(
                "{{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }}{}",
                " ".repeat(20)
            )
        );
        // A scalar has no dimension to grow.
        assert_eq!(
            format_dict(">u2", true, &[]),
            "{'descr': '>u2', 'fortran_order': True, 'shape': (), }"
        );
        for (descr, fortran, shape) in [
            ("<f8", false, &[][..]),
            ("|u1", true, &[0][..]),
            (">i8", false, &[2, 0, 3][..]),
            ("<f4", true, &[u64::MAX, 1, 7][..]),
        ] {
            let h = parse(&format_dict(descr, fortran, shape)).unwrap();
            assert_eq!((h.fortran, h.shape.as_slice()), (fortran, shape));
            assert_eq!(h.dtype, Dtype::parse(descr.as_bytes()).unwrap());
        }
    }

    #[test]
    fn accepts_any_key_order_quotes_and_python_2_longs() {
        let h = parse("{ \"shape\" : (7L,2L) ,\"fortran_order\":True,'descr':\">i8\"}").unwrap();
        assert_eq!(h.shape, [7, 2]);
        assert!(h.fortran && h.dtype.big_endian);
        assert_eq!((h.dtype.kind, h.dtype.size), (b'i', 8));
    }

    #[test]
    fn reads_every_supported_dtype() {
        for descr in [
            "<f4", ">f4", "<f8", ">f8", "|i1", "<i1", ">i1", "<i2", ">i2", "<i4", ">i4", "<i8",
            ">i8", "|u1", "=u1", "<u2", ">u2", "<u4", ">u4", "<u8", ">u8",
        ] {
            let d = Dtype::parse(descr.as_bytes()).unwrap();
            assert_eq!(usize::from(descr.as_bytes()[2] - b'0'), d.size, "{descr}");
            assert_eq!(d.big_endian, descr.starts_with('>'), "{descr}");
        }
    }

    #[test]
    fn rejects_other_dtypes_by_name() {
        for descr in [
            "<f2", "<f16", "<c8", "|b1", "|S3", "<U3", "|O", "|f8", "=f8", "<i3", "f8", "", "<V8",
            "<M8",
        ] {
            let e = Dtype::parse(descr.as_bytes()).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("unsupported dtype '{descr}'")),
                "{e}"
            );
        }
        let e = error("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }");
        assert!(e.starts_with("unsupported dtype a list of fields"), "{e}");
    }

    #[test]
    fn names_what_is_wrong() {
        let cases = [
            (
                "",
                "malformed header: expected '{' at byte 0, found the end",
            ),
            (
                "{'descr': '<f8', 'shape': (2,)}",
                "the header has no \"fortran_order\" key",
            ),
            (
                "{'fortran_order': False, 'shape': (2,)}",
                "the header has no \"descr\" key",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False}",
                "the header has no \"shape\" key",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': True}",
                "the header has an unexpected key \"x\"",
            ),
            (
                "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}",
                "malformed header: the key 'descr' is given twice",
            ),
            (
                "{'descr': '<f8', 'fortran_order': 0, 'shape': (2,)}",
                "malformed header: expected a string, True, False or a tuple at byte 34, found '0'",
            ),
            (
                "{'descr': '<f8', 'fortran_order': 'no', 'shape': (2,)}",
                "malformed header: the value of 'fortran_order' has the wrong type",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2, -3)}",
                "malformed header: expected a dimension at byte 54, found '-'",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2 3)}",
                "malformed header: expected ')' at byte 53, found '3'",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999, 3)}",
                "malformed header: a dimension at byte 51 exceeds 64 bits",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} x",
                "malformed header: unexpected text after the dict, at byte 56",
            ),
            (
                "{'descr: '<f8'",
                "malformed header: expected ':' at byte 10, found '<'",
            ),
            ("{'descr", "malformed header: a string is not closed"),
            (
                "{'descr': '<f8' 'shape'",
                "malformed header: expected '}' at byte 16, found '''",
            ),
            (
                "{\u{e9}}",
                "malformed header: expected a quoted string at byte 1, found byte 0xc3",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(error(text), want, "{text:?}");
        }
    }

    #[test]
    fn never_panics_on_cut_or_scrambled_headers() {
        let good = b"{'descr': '>u2', 'fortran_order': True, 'shape': (12L, 3), }  \n";
        for end in 0..good.len() {
            let _ = parse_header(&good[..end]);
        }
        for i in 0..good.len() {
            for b in [0u8, b'\'', b'(', b')', b',', b'{', b'}', b':', 0xff] {
                let mut bad = good.to_vec();
                bad[i] = b;
                let _ = parse_header(&bad);
            }
        }
    }
}
