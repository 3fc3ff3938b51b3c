//! One fixed order for sums over coordinates, shared with the GPU kernels.
//!
//! Floating-point addition is not associative, so "the same bits on the CPU and the
//! GPU" needs one summation order that both can run fast. The order here is the
//! **pairwise tree with absent leaves**: the n terms are the first n leaves of a
//! perfect binary tree over the next power of two; every inner node is
//! `left + right`, a node whose right subtree holds no term is its left child, and
//! the sum of no terms is `+0`. Equivalently, for n ≥ 2,
//! `sum(x[..n]) = sum(x[..m]) + sum(x[m..n])` with m the largest power of two below
//! n, and `sum([a]) = a`.
//!
//! Every aligned power-of-two block of leaves is a subtree, so the CUDA kernels reach
//! the same bits by summing each thread's aligned chunk as a tree, then the lanes of
//! a warp by a shuffle tree of offsets 1, 2, 4, 8, 16, then the warps by the same
//! tree (`NrptTree` and `step_block` in kernels/chain.cuh and step.cu); a thread that
//! steps the coordinates in order uses the same accumulator as [`TreeSum`].
//!
//! The rounding error is that of pairwise summation: at most
//! `⌈log₂ n⌉ · ε · Σ|x_i|` to first order (ε the unit roundoff), against `(n − 1) · ε ·
//! Σ|x_i|` for the sequential sum.
//!
//! No allocation: [`TreeSum`] keeps one pending partial sum per level, at most one
//! per bit of the leaf count (`usize::BITS` values on the stack).

use crate::float::Float;

/// What the tree adds: a float, or a lane array of `f32` (one independent sum per lane,
/// for engines that vectorize across states; lane `i` of the result is the tree sum of
/// lane `i` of the terms, bit for bit).
pub trait Summand: Copy {
    /// The sum of no terms.
    const ZERO: Self;
    /// `self + other` (lane by lane for arrays).
    fn plus(self, other: Self) -> Self;
}

impl<F: Float> Summand for F {
    const ZERO: Self = F::ZERO;
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self + other
    }
}

impl<const L: usize> Summand for [f32; L] {
    const ZERO: Self = [0.0; L];
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        let mut out = self;
        for (o, b) in out.iter_mut().zip(other) {
            *o += b;
        }
        out
    }
}

/// Levels of the accumulator: one per bit of a leaf index.
const LEVELS: usize = usize::BITS as usize;

/// A running pairwise-tree sum, fed with the terms in order ([`push`](Self::push))
/// and read at the end ([`finish`](Self::finish)). The result is that of
/// [`tree_sum`] over the same terms, bit for bit.
///
/// ```
/// use nrpt_core::reduce::TreeSum;
/// let mut t = TreeSum::<f32>::new();
/// for x in [1.0f32, 2.0, 3.0, 4.0, 5.0] {
///     t.push(x);
/// }
/// // ((1 + 2) + (3 + 4)) + 5
/// assert_eq!(t.finish(), ((1.0 + 2.0) + (3.0 + 4.0)) + 5.0);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TreeSum<F> {
    /// `pending[l]`: the sum of the last complete block of 2^l leaves still waiting for
    /// its right sibling; valid where bit l of `count` is set.
    pending: [F; LEVELS],
    /// Leaves pushed so far.
    count: usize,
}

impl<F: Summand> Default for TreeSum<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Summand> TreeSum<F> {
    /// An empty sum.
    pub fn new() -> Self {
        TreeSum {
            pending: [F::ZERO; LEVELS],
            count: 0,
        }
    }

    /// Leaves pushed so far.
    pub fn len(&self) -> usize {
        self.count
    }

    /// `true` before the first push.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds the next leaf (a binary counter: each carry joins a left sibling with the
    /// right one just completed, `left + right`).
    #[inline(always)]
    pub fn push(&mut self, leaf: F) {
        self.push_block(leaf, 0);
    }

    /// Adds the sum of the next aligned block of `2^level` leaves, already summed by
    /// the same tree (a block with absent leaves at its end is allowed only as the
    /// last push). `count` must be a multiple of `2^level`.
    #[inline(always)]
    pub fn push_block(&mut self, sum: F, level: u32) {
        debug_assert!(self.count.trailing_zeros() >= level || self.count == 0);
        let mut v = sum;
        let mut l = level as usize;
        let mut c = self.count >> level;
        while c & 1 == 1 {
            v = self.pending[l].plus(v);
            c >>= 1;
            l += 1;
        }
        self.pending[l] = v;
        self.count += 1 << level;
    }

    /// The sum: the pending partial sums joined from the right (the smallest, last
    /// block is the right child of the next larger one), `+0` for no leaves.
    #[inline(always)]
    pub fn finish(&self) -> F {
        let mut acc: Option<F> = None;
        for l in 0..LEVELS {
            if (self.count >> l) & 1 == 1 {
                acc = Some(match acc {
                    None => self.pending[l],
                    Some(right) => self.pending[l].plus(right),
                });
            }
        }
        acc.unwrap_or(F::ZERO)
    }
}

/// The pairwise-tree sum of the n terms `leaf(0), …, leaf(n − 1)`, evaluated in
/// index order (see the module documentation for the tree).
#[inline(always)]
pub fn tree_sum<F: Summand>(n: usize, mut leaf: impl FnMut(usize) -> F) -> F {
    let mut t = TreeSum::new();
    // Blocks of four leaves summed directly, ((a + b) + (c + d)): the tree's level 2.
    let full = n & !3;
    let mut j = 0;
    while j < full {
        let (a, b, c, d) = (leaf(j), leaf(j + 1), leaf(j + 2), leaf(j + 3));
        t.push_block(a.plus(b).plus(c.plus(d)), 2);
        j += 4;
    }
    while j < n {
        t.push(leaf(j));
        j += 1;
    }
    t.finish()
}

/// [`tree_sum`] of a slice.
#[inline]
pub fn tree_sum_slice<F: Summand>(x: &[F]) -> F {
    tree_sum(x.len(), |j| x[j])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{PhiloxStream, Rng, UnitDraw};
    use std::vec::Vec;

    /// The definition, written independently: split at the largest power of two below
    /// n (recursion over slices).
    fn recursive(x: &[f32]) -> f32 {
        match x.len() {
            0 => 0.0,
            1 => x[0],
            n => {
                let m = 1usize << (usize::BITS - 1 - (n - 1).leading_zeros());
                recursive(&x[..m]) + recursive(&x[m..])
            }
        }
    }

    /// The perfect tree over the next power of two, level by level, absent leaves
    /// carried as `None` (a third, array-based formulation).
    fn levels(x: &[f32]) -> f32 {
        let mut v: Vec<Option<f32>> = x.iter().copied().map(Some).collect();
        v.resize(x.len().next_power_of_two(), None);
        while v.len() > 1 {
            v = v
                .chunks(2)
                .map(|p| match (p[0], p[1]) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, None) => a,
                    (None, b) => b,
                })
                .collect();
        }
        v.first().copied().flatten().unwrap_or(0.0)
    }

    fn data(n: usize, seed: u32) -> Vec<f32> {
        let mut w = PhiloxStream::new(seed, 1, 2, 3, 4);
        (0..n)
            .map(|i| {
                let u = f32::uniform(w.next_u32()) - 0.5;
                // Mixed magnitudes, so the order shows in the bits.
                u * [1.0, 1e3, 1e-3, 37.0][i % 4]
            })
            .collect()
    }

    /// Lane arrays sum lane by lane, each lane bit for bit the scalar tree.
    #[test]
    fn lanes_sum_like_scalars() {
        let mut w = PhiloxStream::new(9, 2, 0, 0, 0);
        for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 1000] {
            let terms: Vec<[f32; 5]> = (0..n)
                .map(|_| core::array::from_fn(|_| f32::uniform(w.next_u32()) * 8.0 - 4.0))
                .collect();
            let lanes = tree_sum(n, |j| terms[j]);
            for i in 0..5 {
                let scalar = tree_sum(n, |j| terms[j][i]);
                assert_eq!(lanes[i].to_bits(), scalar.to_bits(), "n = {n}, lane {i}");
            }
        }
    }

    #[test]
    fn tree_is_the_recursive_definition_bit_for_bit() {
        for n in (0..300).chain([511, 512, 513, 1000, 1023, 1024, 1025, 4096, 4099]) {
            let x = data(n, n as u32);
            let want = recursive(&x);
            assert_eq!(tree_sum_slice(&x).to_bits(), want.to_bits(), "n = {n}");
            assert_eq!(levels(&x).to_bits(), want.to_bits(), "n = {n}");
            let mut t = TreeSum::new();
            for &v in &x {
                t.push(v);
            }
            assert_eq!(t.finish().to_bits(), want.to_bits(), "n = {n}");
            assert_eq!(t.len(), n);
        }
    }

    #[test]
    fn blocks_of_any_aligned_size_give_the_same_bits() {
        // A thread's chunk of 2^k leaves summed alone, then pushed as one block: what
        // the kernels do with each thread's partial sum.
        for n in [5usize, 64, 65, 100, 1024, 1000, 3001] {
            let x = data(n, 99 + n as u32);
            let want = recursive(&x);
            for k in 0..6u32 {
                let b = 1usize << k;
                let mut t = TreeSum::new();
                for chunk in x.chunks(b) {
                    t.push_block(recursive(chunk), k);
                }
                assert_eq!(t.finish().to_bits(), want.to_bits(), "n = {n}, block {b}");
            }
        }
    }

    #[test]
    fn small_cases_are_the_obvious_trees() {
        let [a, b, c, d, e] = [1.0f32, 1e8, -1e8, 3.0, 0.5];
        assert_eq!(tree_sum_slice::<f32>(&[]).to_bits(), 0.0f32.to_bits());
        assert_eq!(tree_sum_slice(&[-0.0f32]).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tree_sum_slice(&[a]), a);
        assert_eq!(tree_sum_slice(&[a, b]), a + b);
        assert_eq!(tree_sum_slice(&[a, b, c]), (a + b) + c);
        assert_eq!(tree_sum_slice(&[a, b, c, d]), (a + b) + (c + d));
        assert_eq!(tree_sum_slice(&[a, b, c, d, e]), ((a + b) + (c + d)) + e);
        // The order shows: 1 + 1e8 and -1e8 + 3 both round to ±1e8 in f32, so the tree
        // gives 0 where the sequential sum ((1 + 1e8) − 1e8) + 3 gives 3.
        assert_eq!(tree_sum_slice(&[a, b, c, d]), 0.0);
        assert_eq!(((0.0 + a) + b + c) + d, 3.0);
    }

    /// Against an exact reference (f64 accumulation of f32 terms, exact for these
    /// sizes to well below the bound): pairwise summation's error bound
    /// `|tree − exact| ≤ (⌈log₂ n⌉ + 1) · 2⁻²⁴ · Σ|x_i|`.
    #[test]
    fn tree_is_accurate_to_the_pairwise_bound() {
        for n in [2usize, 3, 64, 65, 1000, 1024, 100_000] {
            let x = data(n, 7 + n as u32);
            let exact: f64 = x.iter().map(|&v| f64::from(v)).sum();
            let abs: f64 = x.iter().map(|&v| f64::from(v).abs()).sum();
            let depth = f64::from(usize::BITS - (n - 1).leading_zeros());
            let bound = (depth + 1.0) * f64::from(f32::EPSILON) / 2.0 * abs;
            let got = f64::from(tree_sum_slice(&x));
            assert!(
                (got - exact).abs() <= bound,
                "n = {n}: tree {got}, exact {exact}, bound {bound}"
            );
        }
    }

    #[test]
    fn f64_sums_follow_the_same_tree() {
        let x: Vec<f64> = data(777, 5).iter().map(|&v| f64::from(v) * 1.1).collect();
        fn rec(x: &[f64]) -> f64 {
            match x.len() {
                0 => 0.0,
                1 => x[0],
                n => {
                    let m = 1usize << (usize::BITS - 1 - (n - 1).leading_zeros());
                    rec(&x[..m]) + rec(&x[m..])
                }
            }
        }
        assert_eq!(tree_sum_slice(&x).to_bits(), rec(&x).to_bits());
    }
}
