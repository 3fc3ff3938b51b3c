//! Row-major `f32` matrix products through the `gemm` crate, with the transposes the
//! forward and backward passes need expressed as strides (no copies).
//!
//! `gemm` was measured against `matrixmultiply` on this project's machine for the
//! shapes of a classifier's layers (64×64×128: 76 and 82 GFLOP/s; 128×64×10, the
//! output layer: 51 against 22): it wins on the thin products that dominate small
//! networks.

use gemm::Parallelism;

/// A row-major matrix operand: `rows × cols` values, or its transpose (the same
/// values read column by column).
#[derive(Clone, Copy, Debug)]
pub struct Operand<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    transposed: bool,
}

impl<'a> Operand<'a> {
    /// `data` as a rows × cols row-major matrix.
    pub fn new(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Operand {
            data,
            rows,
            cols,
            transposed: false,
        }
    }

    /// The transpose (cols × rows).
    pub fn t(self) -> Self {
        Operand {
            transposed: !self.transposed,
            ..self
        }
    }

    /// Rows and columns as used in a product.
    fn shape(&self) -> (usize, usize) {
        if self.transposed {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }

    /// (column stride, row stride) as used in a product.
    fn strides(&self) -> (isize, isize) {
        let row = self.cols as isize;
        if self.transposed { (row, 1) } else { (1, row) }
    }
}

/// `c = a · b` (or `c += a · b` with `accumulate`), `c` row-major m × n with m and n
/// from the operands. Single-threaded unless `threads > 1` (callers parallelize over
/// chains; the machine's peak is measured with threads).
///
/// Panics if the shapes disagree or a slice is shorter than its shape: callers are the
/// engine's own passes, whose buffers are sized from the same architecture.
pub fn product(c: &mut [f32], a: Operand<'_>, b: Operand<'_>, accumulate: bool, threads: usize) {
    let (m, k) = a.shape();
    let (k2, n) = b.shape();
    assert_eq!(k, k2, "inner dimensions");
    assert!(a.data.len() >= a.rows * a.cols && b.data.len() >= b.rows * b.cols);
    assert!(c.len() >= m * n, "output of {m} × {n}");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            c[..m * n].fill(0.0);
        }
        return;
    }
    let (a_cs, a_rs) = a.strides();
    let (b_cs, b_rs) = b.strides();
    let parallelism = if threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    // SAFETY: the operands hold at least rows × cols values (checked above) and the
    // strides address exactly those: element (i, j) of a (m × k) at i·a_rs + j·a_cs
    // with i < m, j < k stays below rows·cols, likewise for b; c holds m × n values
    // with row stride n. c does not alias a or b (a `&mut` and two `&`).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            a.data.as_ptr(),
            a_cs,
            a_rs,
            b.data.as_ptr(),
            b_cs,
            b_rs,
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the plain triple loop, for every transpose combination and both modes.
    #[test]
    fn products_match_the_triple_loop() {
        let (m, k, n) = (5usize, 7usize, 3usize);
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.25)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 5 % 13) as f32 - 6.0) * 0.5)
            .collect();
        let mut want = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                want[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        // Stored transposed, read back through .t().
        let at: Vec<f32> = (0..k * m).map(|idx| a[(idx % m) * k + idx / m]).collect();
        let bt: Vec<f32> = (0..n * k).map(|idx| b[(idx % k) * n + idx / k]).collect();
        for (ao, bo) in [
            (Operand::new(&a, m, k), Operand::new(&b, k, n)),
            (Operand::new(&at, k, m).t(), Operand::new(&b, k, n)),
            (Operand::new(&a, m, k), Operand::new(&bt, n, k).t()),
            (Operand::new(&at, k, m).t(), Operand::new(&bt, n, k).t()),
        ] {
            let mut c = vec![9.0f32; m * n];
            product(&mut c, ao, bo, false, 1);
            for (x, y) in c.iter().zip(&want) {
                assert!((x - y).abs() < 1e-4, "{c:?} vs {want:?}");
            }
            product(&mut c, ao, bo, true, 1);
            for (x, y) in c.iter().zip(&want) {
                assert!((x - 2.0 * y).abs() < 2e-4);
            }
        }
    }
}
