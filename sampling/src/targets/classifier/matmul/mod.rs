//! Row-major `f32` (and `f64`, for the reference posterior's full-batch passes) matrix products, with the transposes the forward and backward passes
//! need expressed as strides (no copies): [`product`] for any shape through the `gemm`
//! crate, and [`small_product`] for the small products of a mini-batch pass, in
//! register tiles.
//!
//! `gemm` was measured against `matrixmultiply` on this project's machine for the
//! shapes of a classifier's layers (64×64×128: 76 and 82 GFLOP/s; 128×64×10, the
//! output layer: 51 against 22): it wins on the thin products that dominate small
//! networks. The register tiles of [`small_product`] are written by hand because we
//! found no crate that batches such products for the CPU, and the small-matrix crate
//! `nano-gemm` did no better than the tiles: one core, 64×64×32 as in a chain's first
//! layer at hidden width 32, about 93 GFLOP/s for the tiles, 86 for `gemm`, 78 for
//! `nano-gemm`; 64×32×10, the output layer, 48, 33 and 43 (2026-12-01, a loaded
//! machine, separate runs). The tiles read their operands where they lie and apply the
//! bias, the ReLU or the backward pass's gate as they store, so no pass over the
//! output follows.
//! The `classifier` criterion bench compares the classifier's chain-step on both
//! kernels in one run.

use gemm::Parallelism;

/// The element types [`product`] multiplies: `f32` (the engines) and `f64` (the
/// reference posterior's full-batch passes); `gemm` dispatches on the type.
pub trait Element: Copy + Default + 'static {
    /// One, the scale factors `gemm` takes.
    const ONE: Self;
}

impl Element for f32 {
    const ONE: Self = 1.0;
}

impl Element for f64 {
    const ONE: Self = 1.0;
}

/// A row-major matrix operand: `rows × cols` values at row stride `ld`, or its
/// transpose (the same values read column by column).
#[derive(Clone, Copy, Debug)]
pub struct Operand<'a, T = f32> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    ld: usize,
    transposed: bool,
}

impl<'a, T> Operand<'a, T> {
    /// `data` as a rows × cols row-major matrix.
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self::strided(data, rows, cols, cols)
    }

    /// `data` as a rows × cols matrix whose row i starts at `i · ld` (ld ≥ cols).
    pub fn strided(data: &'a [T], rows: usize, cols: usize, ld: usize) -> Self {
        assert!(ld >= cols, "row stride {ld} below {cols} columns");
        Operand {
            data,
            rows,
            cols,
            ld,
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
    fn strides(&self) -> (usize, usize) {
        if self.transposed {
            (self.ld, 1)
        } else {
            (1, self.ld)
        }
    }

    /// Whether `data` holds every value of the stored matrix.
    fn fits(&self) -> bool {
        self.rows == 0 || self.data.len() >= (self.rows - 1) * self.ld + self.cols
    }
}

/// `c = a · b` (or `c += a · b` with `accumulate`), `c` row-major m × n at row stride
/// `ldc`, with m and n from the operands. Single-threaded unless `threads > 1` (callers
/// parallelize over chains; the machine's peak is measured with threads).
///
/// Panics if the shapes disagree or a slice is shorter than its shape: callers are the
/// engine's own passes, whose buffers are sized from the same architecture.
pub fn product<T: Element>(
    c: &mut [T],
    ldc: usize,
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    accumulate: bool,
    threads: usize,
) {
    let (m, k) = a.shape();
    let (k2, n) = b.shape();
    assert_eq!(k, k2, "inner dimensions");
    assert!(a.fits() && b.fits(), "an operand is shorter than its shape");
    assert!(ldc >= n, "output stride {ldc} below {n} columns");
    if m == 0 || n == 0 {
        return;
    }
    assert!(c.len() >= (m - 1) * ldc + n, "output of {m} × {n}");
    if k == 0 {
        if !accumulate {
            for row in c.chunks_mut(ldc).take(m) {
                row[..n].fill(T::default());
            }
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
    // SAFETY: the operands hold every value of their shapes (checked above) and the
    // strides address exactly those: element (i, j) of a (m × k) at i·a_rs + j·a_cs
    // with i < m, j < k stays below (rows − 1)·ld + cols, likewise for b; c holds m
    // rows of n values at stride ldc. c does not alias a or b (a `&mut` and two `&`).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            ldc as isize,
            accumulate,
            a.data.as_ptr(),
            a_cs as isize,
            a_rs as isize,
            b.data.as_ptr(),
            b_cs as isize,
            b_rs as isize,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Which code computes `small_product`: chosen once from the processor, and the same
/// for every chain of a run (each gives its own last bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(Choice);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    /// AVX2 and FMA register tiles (only built by [`Kernel::detect`], which checks that
    /// the processor has both).
    Tiles,
    /// `gemm`, then the epilogue as a second pass.
    Gemm,
}

impl Kernel {
    /// The `gemm` crate on any processor.
    pub const GEMM: Kernel = Kernel(Choice::Gemm);

    /// The register tiles where the processor has AVX2 and FMA, else `gemm`.
    pub fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Kernel(Choice::Tiles);
        }
        Kernel::GEMM
    }

    /// Whether this is the register tiles (AVX2 and FMA).
    pub fn is_tiles(self) -> bool {
        self.0 == Choice::Tiles
    }
}

/// What happens to a product's sums as they are stored.
#[derive(Clone, Copy, Debug)]
pub enum Epilogue<'a> {
    /// `c = a · b`.
    Set,
    /// `c = bias + a · b` (bias broadcast over rows), then `max(·, 0)` when `relu`.
    /// `bias` holds n values rounded up to a multiple of 8.
    Bias {
        /// The row added to every row of the product.
        bias: &'a [f32],
        /// Apply the ReLU.
        relu: bool,
    },
    /// `c = a · b` where `gate > 0`, else 0 (the ReLU's derivative): `gate` has the
    /// shape and the row stride of `c`.
    Gate(&'a [f32]),
}

/// n rounded up to whole vectors of 8.
pub fn padded(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// `c = epilogue(a · b)`, `c` m × n at row stride `ldc`, summed in the order of `kernel`.
///
/// `b` must not be transposed, and each of its rows must be readable up to n rounded
/// up to a multiple of 8 ([`padded`]): the tiles load whole vectors and drop the
/// columns past n. Only the m × n values of `c` are written.
///
/// Panics if the shapes disagree or a slice is too short (the engine's own buffers).
pub fn small_product(
    kernel: Kernel,
    c: &mut [f32],
    ldc: usize,
    a: Operand<'_>,
    b: Operand<'_>,
    epilogue: Epilogue<'_>,
) {
    let (m, k) = a.shape();
    let (k2, n) = b.shape();
    assert_eq!(k, k2, "inner dimensions");
    assert!(!b.transposed, "the right operand is read row by row");
    assert!(a.fits(), "left operand shorter than its shape");
    assert!(ldc >= n, "output stride {ldc} below {n} columns");
    if m == 0 || n == 0 {
        return;
    }
    let np = padded(n);
    assert!(
        k == 0 || b.data.len() >= (k - 1) * b.ld + np,
        "right operand's rows not readable to {np} columns"
    );
    let c_len = (m - 1) * ldc + n;
    assert!(c.len() >= c_len, "output of {m} × {n}");
    match epilogue {
        Epilogue::Set => {}
        Epilogue::Bias { bias, .. } => assert!(bias.len() >= np, "bias of {np} values"),
        Epilogue::Gate(g) => assert!(g.len() >= c_len, "gate of {m} × {n}"),
    }
    match kernel.0 {
        #[cfg(target_arch = "x86_64")]
        Choice::Tiles => {
            let (a_cs, a_rs) = a.strides();
            let task = tiles::Task {
                m,
                n,
                k,
                a: a.data.as_ptr(),
                a_rs,
                a_cs,
                b: b.data.as_ptr(),
                ldb: b.ld,
                c: c.as_mut_ptr(),
                ldc,
                epilogue: match epilogue {
                    Epilogue::Set => tiles::Epi::Set,
                    Epilogue::Bias { bias, relu } => tiles::Epi::Bias(bias.as_ptr(), relu),
                    Epilogue::Gate(g) => tiles::Epi::Gate(g.as_ptr()),
                },
            };
            // SAFETY: `Choice::Tiles` is built only by `Kernel::detect`, where AVX2 and
            // FMA are present. The asserts above are the bounds `tiles::product` reads
            // and writes within: a's m × k values, b's rows to `np` columns, c's and the
            // gate's m rows of n values at stride ldc, the bias to `np` values. c does
            // not alias the others (a `&mut` and `&`s).
            unsafe { tiles::product(&task) }
        }
        _ => {
            match epilogue {
                Epilogue::Bias { bias, .. } => {
                    for row in c.chunks_mut(ldc).take(m) {
                        row[..n].copy_from_slice(&bias[..n]);
                    }
                    product(c, ldc, a, b, true, 1);
                }
                _ => product(c, ldc, a, b, false, 1),
            }
            for (i, row) in c.chunks_mut(ldc).take(m).enumerate() {
                let row = &mut row[..n];
                match epilogue {
                    Epilogue::Set | Epilogue::Bias { relu: false, .. } => {}
                    Epilogue::Bias { relu: true, .. } => {
                        for v in row.iter_mut() {
                            *v = v.max(0.0);
                        }
                    }
                    Epilogue::Gate(g) => {
                        for (v, &gate) in row.iter_mut().zip(&g[i * ldc..i * ldc + n]) {
                            *v = if gate > 0.0 { *v } else { 0.0 };
                        }
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod tiles;

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic test values in [−2, 2).
    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 1000) as f32 / 250.0) - 2.0)
            .collect()
    }

    /// The plain triple loop in f64: `want[i][j] = Σ_p a(i, p) b(p, j)`.
    fn reference(
        m: usize,
        k: usize,
        n: usize,
        a: impl Fn(usize, usize) -> f32,
        b: impl Fn(usize, usize) -> f32,
    ) -> Vec<f64> {
        let mut want = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                want[i * n + j] = (0..k)
                    .map(|p| f64::from(a(i, p)) * f64::from(b(p, j)))
                    .sum();
            }
        }
        want
    }

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
            product(&mut c, n, ao, bo, false, 1);
            for (x, y) in c.iter().zip(&want) {
                assert!((x - y).abs() < 1e-4, "{c:?} vs {want:?}");
            }
            product(&mut c, n, ao, bo, true, 1);
            for (x, y) in c.iter().zip(&want) {
                assert!((x - 2.0 * y).abs() < 2e-4);
            }
        }
    }

    /// Both kernels against the f64 triple loop, over shapes that leave partial tiles
    /// in both directions (rows not a multiple of 6, columns not of 8 or 16), with
    /// padded strides, a transposed left operand and every epilogue; the values past
    /// n in each row of c stay untouched.
    #[test]
    fn small_products_match_the_triple_loop() {
        let mut kernels = vec![Kernel::GEMM];
        if Kernel::detect().is_tiles() {
            kernels.push(Kernel::detect());
        }
        for (m, k, n) in [
            (1, 1, 1),
            (7, 3, 10),
            (64, 64, 32),
            (13, 0, 9),
            (6, 17, 16),
            (11, 5, 24),
            (64, 10, 40),
            (5, 64, 8),
        ] {
            let (lda, ldb, ldc) = (k + 3, padded(n) + 8, padded(n));
            let a = values(m.max(1) * lda, 1);
            let at = values(k.max(1) * (m + 2), 2);
            let b = values(k.max(1) * ldb, 3);
            let bias = values(padded(n), 4);
            let gate = values(m * ldc, 5);
            let a_of = |i: usize, p: usize| a[i * lda + p];
            let at_of = |i: usize, p: usize| at[p * (m + 2) + i];
            let b_of = |p: usize, j: usize| b[p * ldb + j];
            for kernel in &kernels {
                for transposed in [false, true] {
                    let ao = if transposed {
                        Operand::strided(&at, k, m, m + 2).t()
                    } else {
                        Operand::strided(&a, m, k, lda)
                    };
                    let want = if transposed {
                        reference(m, k, n, at_of, b_of)
                    } else {
                        reference(m, k, n, a_of, b_of)
                    };
                    let bo = Operand::strided(&b, k, n, ldb);
                    for epilogue in [
                        Epilogue::Set,
                        Epilogue::Bias {
                            bias: &bias,
                            relu: false,
                        },
                        Epilogue::Bias {
                            bias: &bias,
                            relu: true,
                        },
                        Epilogue::Gate(&gate),
                    ] {
                        let mut c = vec![7.5f32; m * ldc];
                        small_product(*kernel, &mut c, ldc, ao, bo, epilogue);
                        for i in 0..m {
                            for j in 0..ldc {
                                let got = c[i * ldc + j];
                                if j >= n {
                                    assert_eq!(got, 7.5, "{kernel:?} wrote past n");
                                    continue;
                                }
                                let s = want[i * n + j];
                                let w = match epilogue {
                                    Epilogue::Set => s,
                                    Epilogue::Bias { bias, relu } => {
                                        let v = s + f64::from(bias[j]);
                                        if relu { v.max(0.0) } else { v }
                                    }
                                    Epilogue::Gate(g) => {
                                        if g[i * ldc + j] > 0.0 {
                                            s
                                        } else {
                                            0.0
                                        }
                                    }
                                };
                                assert!(
                                    (f64::from(got) - w).abs() <= 1e-5 * (k as f64 + 1.0) * 4.0,
                                    "{kernel:?} {m}×{k}×{n} t={transposed} {epilogue:?} ({i}, {j}): {got} vs {w}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
