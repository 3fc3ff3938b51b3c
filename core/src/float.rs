//! The floating-point types the sampler runs in: `f32` (GPU parity, embedded) and `f64`.

use core::fmt::{Debug, Display};
use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// A real scalar with the handful of functions the sampler needs, implemented with
/// `libm` so that results do not depend on the platform's C library.
pub trait Float:
    Copy
    + Debug
    + Display
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + Send
    + Sync
    + 'static
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Converts from `f64` (rounding to nearest for `f32`).
    fn from_f64(value: f64) -> Self;
    /// Converts to `f64` (exact).
    fn to_f64(self) -> f64;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Natural exponential.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// `true` unless NaN or infinite.
    fn is_finite(self) -> bool;
    /// `(sin 2πx, cos 2πx)`. For `f32` the branch-free polynomials of
    /// [`crate::fastmath`] (the same bits on CPU and GPU); for `f64` libm after the exact
    /// reduction `x − round(x)`.
    fn sin_cos_2pi(self) -> (Self, Self);
}

macro_rules! impl_float {
    ($t:ty, $sqrt:path, $exp:path, $ln:path, $cos:path, $sin:path, $sc:path) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(value: f64) -> Self {
                value as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $sqrt(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $ln(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                $cos(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                $sin(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn sin_cos_2pi(self) -> (Self, Self) {
                $sc(self)
            }
        }
    };
}

impl_float!(
    f32,
    libm::sqrtf,
    libm::expf,
    libm::logf,
    libm::cosf,
    libm::sinf,
    crate::fastmath::sin_cos_2pi
);
impl_float!(
    f64,
    libm::sqrt,
    libm::exp,
    libm::log,
    libm::cos,
    libm::sin,
    sin_cos_2pi_f64
);

/// `(sin 2πx, cos 2πx)` in `f64`: exact reduction to [−½, ½], then libm.
fn sin_cos_2pi_f64(x: f64) -> (f64, f64) {
    let r = x - libm::round(x);
    let t = core::f64::consts::TAU * r;
    (libm::sin(t), libm::cos(t))
}
