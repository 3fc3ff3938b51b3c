//! Writing `.npy` bytes as NumPy's `np.save` writes them, byte for byte.

use super::MAGIC;
use super::header::format_dict;

/// Encodes a little-endian `f32` array of `shape` in C order, as `np.save` would.
pub fn encode_f32(shape: &[usize], data: &[f32]) -> Vec<u8> {
    encode_le(shape, "<f4", data.iter().map(|v| v.to_le_bytes()))
}

/// Encodes a little-endian `f64` array of `shape` in C order, as `np.save` would.
pub fn encode_f64(shape: &[usize], data: &[f64]) -> Vec<u8> {
    encode_le(shape, "<f8", data.iter().map(|v| v.to_le_bytes()))
}

/// Encodes a little-endian `u16` array of `shape` in C order, as `np.save` would.
pub fn encode_u16(shape: &[usize], data: &[u16]) -> Vec<u8> {
    encode_le(shape, "<u2", data.iter().map(|v| v.to_le_bytes()))
}

/// The header for `shape` and `descr`, then every element's little-endian bytes.
fn encode_le<const N: usize>(
    shape: &[usize],
    descr: &str,
    elements: impl ExactSizeIterator<Item = [u8; N]>,
) -> Vec<u8> {
    debug_assert_eq!(
        shape.iter().product::<usize>(),
        elements.len(),
        "an array of shape {shape:?} holds that many elements"
    );
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut out = header_bytes(1, descr, false, &shape);
    out.reserve_exact(N * elements.len());
    for bytes in elements {
        out.extend_from_slice(&bytes);
    }
    out
}

/// A whole file: the preamble and header for an array of `descr` (a NumPy dtype string,
/// `<f8`), in Fortran order or not, of `shape`, then `data`, its raw elements in that
/// order. `major` is the format version (1, 2 or 3). For tests: arrays of every dtype
/// and order the reader takes.
#[cfg(test)]
pub(crate) fn encode(major: u8, descr: &str, fortran: bool, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out = header_bytes(major, descr, fortran, shape);
    out.extend_from_slice(data);
    out
}

/// The data's alignment in the file: the preamble and header take a multiple of it.
const ALIGN: usize = 64;

/// The preamble (magic string, version, header length) and the header: the dict, 1 to
/// [`ALIGN`] spaces so that the data starts on a multiple of [`ALIGN`] bytes, and a
/// newline. Format 1.0 stores the header length in 2 bytes; a header too long for it
/// (only past NumPy's 64 dimensions) is written as 2.0, as NumPy does.
fn header_bytes(major: u8, descr: &str, fortran: bool, shape: &[u64]) -> Vec<u8> {
    let dict = format_dict(descr, fortran, shape);
    // NumPy pads a whole ALIGN when the dict and newline already end on a boundary.
    let header_len = |preamble: usize| {
        let unpadded = preamble + dict.len() + 1;
        dict.len() + ALIGN - unpadded % ALIGN + 1
    };
    let major = if major == 1 && u16::try_from(header_len(10)).is_err() {
        2
    } else {
        major
    };
    let len = header_len(if major == 1 { 10 } else { 12 });
    let mut out = Vec::with_capacity(12 + len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[major, 0]);
    if major == 1 {
        out.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        // Exact: a header of 4 GiB would take a shape of some 200 million dimensions.
        out.extend_from_slice(&(len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + len - dict.len() - 1, b' ');
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::super::decode;
    use super::super::numpy_files::*;
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_parsable() {
        let bytes = encode_f32(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + hlen]).unwrap();
        assert!(header.contains("'shape': (3, 2)"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(bytes.len(), 10 + hlen + 24);
        assert_eq!(&bytes[10 + hlen..10 + hlen + 4], &1.0f32.to_le_bytes());
        assert!(
            std::str::from_utf8(&encode_f32(&[4], &[0.0; 4])[10..])
                .unwrap()
                .contains("(4,)")
        );
    }

    #[test]
    fn f32_arrays_are_written_as_numpy_writes_them() {
        let ramp: Vec<f32> = (0..24u8).map(|v| f32::from(v) / 4.0 - 3.0).collect();
        let cases: [(&[usize], &[f32], &[&str]); 5] = [
            (&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], F4_3X2),
            (&[0], &[], F4_EMPTY),
            (&[2, 0, 3], &[], F4_2X0X3),
            (&[2, 3, 4], &ramp, F4_2X3X4),
            (&[], &[1.5], F4_SCALAR),
        ];
        for (shape, data, numpy) in cases {
            assert_eq!(encode_f32(shape, data), hex(numpy), "{shape:?}");
        }
    }

    #[test]
    fn every_file_numpy_wrote_is_written_again_byte_for_byte() {
        let be_i2: Vec<u8> = [1i16, 0, -2, -1, 3, 7]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let f8: Vec<u8> = [1.5f64, -2.0, 3.25, 0.0, 1e-3, 7.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let f4: Vec<u8> = [1.5f32, -2.0, 3.25, 0.0, 1e-3, 7.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let be_u4: Vec<u8> = [1u32, 2, 3, 0, 4_000_000_000, 7]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        // Fortran order: element [i, j, k] of arange(24).reshape(2, 3, 4) - 5 is stored
        // at i + 2 j + 6 k.
        let mut fortran_i2 = vec![0u8; 48];
        for (i, j, k) in
            (0..2).flat_map(|i| (0..3).flat_map(move |j| (0..4).map(move |k| (i, j, k))))
        {
            let v = (12 * i + 4 * j + k) as i16 - 5;
            let at = 2 * (i + 2 * j + 6 * k);
            fortran_i2[at..at + 2].copy_from_slice(&v.to_le_bytes());
        }
        let check = |major, descr: &str, fortran, shape: &[u64], data: &[u8], numpy| {
            assert_eq!(
                encode(major, descr, fortran, shape, data),
                hex(numpy),
                "{descr} {shape:?}"
            );
        };
        check(1, "<f8", false, &[2, 3], &f8, F8_2X3);
        check(1, ">i2", true, &[2, 3], &be_i2, FORTRAN_BE_I2_2X3);
        check(2, "<f4", false, &[2, 3], &f4, V2_F4_2X3);
        check(3, ">u4", false, &[2, 3], &be_u4, V3_BE_U4_2X3);
        check(1, "|u1", false, &[4], &[0, 1, 2, 1], U1_LABELS);
        check(1, "<i2", true, &[2, 3, 4], &fortran_i2, FORTRAN_I2_2X3X4);
    }

    #[test]
    fn a_header_already_aligned_gets_a_whole_block_of_padding() {
        let c = header_bytes(1, "<f4", false, &[1, 10u64.pow(16), 10u64.pow(19)]);
        assert_eq!(c, hex(HEADER_ALIGNED_C));
        let f = header_bytes(1, ">f8", true, &[10u64.pow(17), 10u64.pow(19), 1]);
        assert_eq!(f, hex(HEADER_ALIGNED_FORTRAN));
        assert_eq!(c.len(), 192);
    }

    #[test]
    fn a_header_too_long_for_version_1_is_written_as_version_2() {
        let shape = vec![u64::MAX; 4000];
        let bytes = header_bytes(1, "<f4", false, &shape);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x02\x00");
        let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        assert_eq!((12 + len, bytes.len() % 64), (bytes.len(), 0));
        // The reader takes it back (the shape is then too large for any data).
        assert!(matches!(
            decode(&bytes, 4000),
            Err(super::super::FormatProblem::TooLarge(_))
        ));
        let small = header_bytes(1, "<f4", false, &[2]);
        assert_eq!(&small[..8], b"\x93NUMPY\x01\x00");
    }

    #[test]
    fn what_is_written_reads_back_to_the_same_shape_and_bits() {
        let special = [
            0.0,
            -0.0,
            1.0,
            -1.5,
            f32::MIN_POSITIVE,
            f32::from_bits(1), // the smallest subnormal
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-3,
        ];
        let shapes: [&[usize]; 9] = [
            &[],
            &[0],
            &[12],
            &[3, 4],
            &[0, 5],
            &[5, 0],
            &[2, 3, 2],
            &[0, 2, 3],
            &[1, 1, 1, 12],
        ];
        for shape in shapes {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n).map(|i| special[i % special.len()]).collect();
            let a = decode(&encode_f32(shape, &data), shape.len()).unwrap();
            assert_eq!(a.shape, shape, "{shape:?}");
            let bits: Vec<u32> = a.values.iter().map(|&v| (v as f32).to_bits()).collect();
            let want: Vec<u32> = data.iter().map(|v| v.to_bits()).collect();
            assert_eq!(bits, want, "{shape:?}");
            // And in f64, bit for bit (the f32 values are exact in f64; add some that
            // are not f32 values).
            let wide: Vec<f64> = data
                .iter()
                .enumerate()
                .map(|(i, &v)| f64::from(v) + if v.is_finite() { i as f64 * 1e-13 } else { 0.0 })
                .collect();
            let a = decode(&encode_f64(shape, &wide), shape.len()).unwrap();
            assert_eq!(a.shape, shape, "{shape:?}");
            let bits: Vec<u64> = a.values.iter().map(|v| v.to_bits()).collect();
            let want: Vec<u64> = wide.iter().map(|v| v.to_bits()).collect();
            assert_eq!(bits, want, "{shape:?}");
            // And in u16, every value from 0 to 65535 reachable.
            let ints: Vec<u16> = (0..n).map(|i| (i * 4099 % 65536) as u16).collect();
            let a = decode(&encode_u16(shape, &ints), shape.len()).unwrap();
            assert_eq!(a.shape, shape, "{shape:?}");
            let want: Vec<f64> = ints.iter().map(|&v| f64::from(v)).collect();
            assert_eq!(a.values, want, "{shape:?}");
        }
        assert_eq!(
            &encode_u16(&[2], &[1, 65535])[..],
            &[&header_bytes(1, "<u2", false, &[2])[..], &[1, 0, 255, 255]].concat()[..]
        );
    }
}
