//! The AVX2 + FMA tiles: each 6 × 16 block of the output is summed in twelve
//! registers over the whole inner dimension (one broadcast of `a` and two vectors of
//! `b` per step: 15 of the 16 registers), then stored once, through the epilogue.
//! Every value of c is one chain of fused multiply-adds in the order of the inner index,
//! starting from 0 or the bias.
//!
//! The caller, [`super::small_product`], checks every bound; these functions trust it.

use std::arch::x86_64::*;

/// Rows of a full tile.
const MR: usize = 6;

/// The epilogue, as pointers.
#[derive(Clone, Copy)]
pub(super) enum Epi {
    Set,
    Bias(*const f32, bool),
    Gate(*const f32),
}

/// One product: a (m × k) at `a + i·a_rs + p·a_cs`, b's row p at `b + p·ldb`, c's
/// row i at `c + i·ldc` (the gate's too).
pub(super) struct Task {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: *const f32,
    pub a_rs: usize,
    pub a_cs: usize,
    pub b: *const f32,
    pub ldb: usize,
    pub c: *mut f32,
    pub ldc: usize,
    pub epilogue: Epi,
}

/// # Safety
/// AVX2 and FMA are present, and every address `small_product` checked is valid:
/// a's values, b's rows to n rounded up to 8, c's (and the gate's) m rows of n
/// values, the bias to n rounded up to 8.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn product(t: &Task) {
    for j in (0..t.n).step_by(16) {
        let cols = (t.n - j).min(16);
        // SAFETY: the caller's guarantees, for columns j .. j + cols.
        unsafe {
            if cols > 8 {
                strip::<2>(t, j, cols);
            } else {
                strip::<1>(t, j, cols);
            }
        }
    }
}

/// Columns `j .. j + cols` (cols ≤ 8·NV) of every row, in tiles of [`MR`] rows.
#[target_feature(enable = "avx2,fma")]
unsafe fn strip<const NV: usize>(t: &Task, j: usize, cols: usize) {
    let mut i = 0;
    // SAFETY: rows i .. i + R ≤ m and the caller's guarantees.
    unsafe {
        while i + MR <= t.m {
            tile::<MR, NV>(t, i, j, cols);
            i += MR;
        }
        match t.m - i {
            1 => tile::<1, NV>(t, i, j, cols),
            2 => tile::<2, NV>(t, i, j, cols),
            3 => tile::<3, NV>(t, i, j, cols),
            4 => tile::<4, NV>(t, i, j, cols),
            5 => tile::<5, NV>(t, i, j, cols),
            _ => {}
        }
    }
}

/// Stores the first `count` lanes of `v` at `dst`: whole vectors, then 4, 2 and 1
/// lanes (a short loop of scalar stores here compiled to a call of `memcpy` per row:
/// 4 % of a chain-step at hidden width 32, measured with `perf`).
///
/// # Safety
/// `dst` is valid for `count` ≤ 8·NV writes.
#[target_feature(enable = "avx2,fma")]
unsafe fn store_first<const NV: usize>(dst: *mut f32, v: [__m256; NV], count: usize) {
    let whole = count / 8;
    // SAFETY: lanes below `count` only.
    unsafe {
        for (k, x) in v.iter().enumerate().take(whole) {
            _mm256_storeu_ps(dst.add(8 * k), *x);
        }
        let (mut p, mut r) = (dst.add(8 * whole), count - 8 * whole);
        if r == 0 {
            return;
        }
        let x = v[whole];
        let mut lo = _mm256_castps256_ps128(x);
        if r >= 4 {
            _mm_storeu_ps(p, lo);
            (p, r, lo) = (p.add(4), r - 4, _mm256_extractf128_ps::<1>(x));
        }
        if r >= 2 {
            _mm_storel_epi64(p.cast(), _mm_castps_si128(lo));
            (p, r, lo) = (p.add(2), r - 2, _mm_movehl_ps(lo, lo));
        }
        if r == 1 {
            _mm_store_ss(p, lo);
        }
    }
}

/// Rows `i0 .. i0 + R`, columns `j0 .. j0 + cols`.
#[target_feature(enable = "avx2,fma")]
unsafe fn tile<const R: usize, const NV: usize>(t: &Task, i0: usize, j0: usize, cols: usize) {
    let zero = _mm256_setzero_ps();
    let mut acc = [[zero; NV]; R];
    if let Epi::Bias(bias, _) = t.epilogue {
        for v in 0..NV {
            // SAFETY: the bias is readable to n rounded up to 8 ≥ j0 + 8·NV.
            let bv = unsafe { _mm256_loadu_ps(bias.add(j0 + 8 * v)) };
            for row in acc.iter_mut() {
                row[v] = bv;
            }
        }
    }
    // SAFETY (the loads of this loop): a's (i0 + r, p) with r < R, p < k, and b's
    // row p at columns j0 .. j0 + 8·NV ≤ n rounded up to 8; the pointers move by
    // wrapping arithmetic, so one past the end is never dereferenced. One pointer
    // per row of a and one offset for all, so that a's addresses take one addition
    // per step (the compiler made `a + r · a_rs` a chain of R additions).
    let rows: [*const f32; R] = std::array::from_fn(|r| t.a.wrapping_add((i0 + r) * t.a_rs));
    let (mut off, mut b) = (0, t.b.wrapping_add(j0));
    for _ in 0..t.k {
        let mut bv = [zero; NV];
        for (v, x) in bv.iter_mut().enumerate() {
            *x = unsafe { _mm256_loadu_ps(b.add(8 * v)) };
        }
        for (row, &a) in acc.iter_mut().zip(&rows) {
            let av = _mm256_set1_ps(unsafe { *a.add(off) });
            for (x, &bx) in row.iter_mut().zip(&bv) {
                *x = _mm256_fmadd_ps(av, bx, *x);
            }
        }
        off += t.a_cs;
        b = b.wrapping_add(t.ldb);
    }
    // The epilogue as straight-line code per case, so that the accumulators stay
    // in registers (one loop over rows with every case inside spilled them).
    let full = cols == 8 * NV;
    match t.epilogue {
        Epi::Bias(_, true) => {
            for row in acc.iter_mut() {
                for x in row.iter_mut() {
                    // max(x, 0), 0 for NaN: what f32::max(x, 0.0) gives.
                    *x = _mm256_max_ps(*x, zero);
                }
            }
        }
        Epi::Gate(g) if full => {
            for (r, row) in acc.iter_mut().enumerate() {
                let at = (i0 + r) * t.ldc + j0;
                for (v, x) in row.iter_mut().enumerate() {
                    // SAFETY: the gate's row i0 + r < m, columns j0 .. j0 + 8·NV ≤ n.
                    let gv = unsafe { _mm256_loadu_ps(g.add(at + 8 * v)) };
                    *x = _mm256_and_ps(*x, _mm256_cmp_ps::<_CMP_GT_OQ>(gv, zero));
                }
            }
        }
        Epi::Gate(g) => {
            // SAFETY: forwarded (rows i0 .. i0 + R, columns j0 .. j0 + cols).
            unsafe { store_gated(t, g, acc, i0, j0, cols) };
            return;
        }
        _ => {}
    }
    for (r, row) in acc.iter().enumerate() {
        let at = (i0 + r) * t.ldc + j0;
        // SAFETY: c's row i0 + r < m, columns j0 .. j0 + cols ≤ n.
        unsafe {
            if full {
                for (v, x) in row.iter().enumerate() {
                    _mm256_storeu_ps(t.c.add(at + 8 * v), *x);
                }
            } else {
                store_first(t.c.add(at), *row, cols);
            }
        }
    }
}

/// The gate of a partial strip (a hidden width that is not a multiple of 8), value
/// by value.
///
/// # Safety
/// c's and the gate's rows i0 .. i0 + R are valid at columns j0 .. j0 + cols.
#[cold]
#[target_feature(enable = "avx2,fma")]
unsafe fn store_gated<const R: usize, const NV: usize>(
    t: &Task,
    g: *const f32,
    acc: [[__m256; NV]; R],
    i0: usize,
    j0: usize,
    cols: usize,
) {
    for (r, row) in acc.iter().enumerate() {
        let at = (i0 + r) * t.ldc + j0;
        let mut tmp = [0.0f32; 16];
        // SAFETY: tmp holds 16 ≥ 8·NV values; c and the gate as the caller says.
        unsafe {
            for (v, x) in row.iter().enumerate() {
                _mm256_storeu_ps(tmp.as_mut_ptr().add(8 * v), *x);
            }
            for (jj, &x) in tmp[..cols].iter().enumerate() {
                *t.c.add(at + jj) = if *g.add(at + jj) > 0.0 { x } else { 0.0 };
            }
        }
    }
}
