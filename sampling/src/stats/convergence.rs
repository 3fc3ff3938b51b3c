//! Convergence of MCMC chains: rank-normalized split-R̂, bulk and tail effective sample
//! sizes, and a summary over many quantities.
//!
//! The methods are those of Vehtari, Gelman, Simpson, Carpenter and Bürkner,
//! "Rank-normalization, folding, and localization: an improved R̂ for assessing
//! convergence of MCMC", Bayesian Analysis 16(2), 667–718 (2021), referred to below as
//! *the paper*. For m chains of n draws of one scalar quantity:
//!
//! - **split chains**: each chain is cut into its first and last ⌊n/2⌋ draws (for odd n
//!   the middle draw is left out), giving 2m chains of ⌊n/2⌋ draws;
//! - **classic split-R̂** ([`split_rhat`]; Gelman et al., *Bayesian Data Analysis*, 3rd
//!   ed., §11.4): with W the mean of the split chains' sample variances and B/n′ the
//!   sample variance of their means (n′ = ⌊n/2⌋), R̂ = √(((n′ − 1)/n′ · W + B/n′) / W);
//! - **rank normalization**: all retained draws are ranked together (ties get their
//!   average rank r) and replaced by z = Φ⁻¹((r − 3/8)/(S + 1/4)), S the number of
//!   draws (Blom's offset, as in the paper);
//! - **bulk R̂**: the classic split-R̂ of the rank-normalized split chains; **tail R̂**:
//!   the same of the *folded* split chains |θ − median θ| (the median of the draws they
//!   retain, averaging the middle two); the paper's R̂ ([`rhat`]) is the larger
//!   of the two, and it recommends trusting a quantity only when R̂ < [`RHAT_LIMIT`];
//! - **effective sample size** of split chains (as in the paper, Stan and ArviZ):
//!   autocovariances of each chain (divisor n′, by FFT), the combined
//!   autocorrelation ρ̂ₜ = 1 − (W − mean over chains of acovₜ)/var⁺ with var⁺ =
//!   (n′ − 1)/n′ · W + B/n′, summed in pairs ρ̂₂ₖ + ρ̂₂ₖ₊₁ while the pair sums stay
//!   positive (Geyer's initial positive sequence), made monotone (Geyer's initial
//!   monotone sequence), τ̂ = −1 + 2 Σ ρ̂ₜ over the lags kept, plus ρ̂ of the first
//!   even lag past them when it is positive (Stan's and ArviZ's improvement for
//!   antithetic chains), τ̂ at least 1/log₁₀(S), and ESS = S/τ̂ (at most S log₁₀ S);
//! - **bulk ESS** ([`ess_bulk`]): that ESS of the rank-normalized split chains; **tail
//!   ESS** ([`ess_tail`]): the smaller of the ESS of the indicators I(θ ≤ q₀.₀₅) and
//!   I(θ ≤ q₀.₉₅), with q the 5% and 95% quantiles of all draws (linear interpolation,
//!   NumPy's default). The paper recommends both above [`ESS_PER_CHAIN`] per chain.
//!
//! The tests compare every number with ArviZ's (`scripts/stats-fixtures.py` writes the
//! oracle's numbers into `sampling/tests/fixtures/stats-arviz.json`): the same split, median,
//! ranks and quantile as ArviZ 0.23, so the results agree to rounding.
//!
//! # Constant draws
//!
//! ArviZ answers NaN when all draws are identical; a caller reporting thousands of
//! predictive probabilities, some of which saturate at exactly 0 or 1, would then have
//! to filter NaNs. Here instead:
//!
//! - **all draws identical** (the quantity is constant): every R̂ is 1 (the chains agree
//!   exactly), every ESS is S = m·n (its mean is known exactly), and
//!   [`Diagnostics::constant`] is true, so a caller can still tell;
//! - **each chain constant, chains different**: W = 0 < B, so R̂ = +∞ (chains that stay
//!   where they started and disagree have not converged); the ESS formula needs no
//!   division by W and gives a small finite value;
//! - a **derived sequence** that is constant (the folded draws, or an indicator of the
//!   tail ESS, e.g. I(θ ≤ q₀.₉₅) when 5% or more of the draws equal the maximum) follows
//!   the same two rules: R̂ 1 and ESS S when all its values are identical.
//!
//! Cost of [`diagnose`]: four sorts of the m·n draws and three ESS, each two FFTs of
//! length ≥ n per split chain: O(m n log n) per quantity however slowly the chains mix. A [`Diagnoser`] keeps its
//! buffers and FFT plans from one quantity to the next.

use std::fmt;

use serde::Serialize;

use super::{StatsError, sorted_quantile};
use ess::EssWorkspace;
use rhat::{classic_rhat, rank_normalize};

mod ess;
mod rhat;

/// R̂ below which the paper trusts a quantity's chains (it recommends R̂ < 1.01).
pub const RHAT_LIMIT: f64 = 1.01;

/// Bulk and tail ESS per chain from which the paper trusts a quantity's estimates (it
/// recommends at least 100 per chain: 400 for its four chains).
pub const ESS_PER_CHAIN: f64 = 100.0;

/// The tail ESS's quantile probabilities (the paper's: the 5% and 95% quantiles).
const TAIL_PROBABILITIES: [f64; 2] = [0.05, 0.95];

/// Every diagnostic of one quantity's chains (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Diagnostics {
    /// Chains, m.
    pub chains: usize,
    /// Draws per chain, n.
    pub draws: usize,
    /// The paper's R̂: the larger of `rhat_bulk` and `rhat_tail`.
    pub rhat: f64,
    /// Rank-normalized split-R̂.
    pub rhat_bulk: f64,
    /// Rank-normalized split-R̂ of the folded draws |θ − median θ|.
    pub rhat_tail: f64,
    /// Classic split-R̂ (BDA3) of the draws themselves.
    pub split_rhat: f64,
    /// Bulk effective sample size (of the rank-normalized split chains).
    pub ess_bulk: f64,
    /// Tail effective sample size (the smaller of the 5% and 95% quantiles' ESS).
    pub ess_tail: f64,
    /// All draws were identical: R̂ is 1 and ESS is m·n by convention.
    pub constant: bool,
}

impl Diagnostics {
    /// Whether the paper would trust the chains: R̂ < [`RHAT_LIMIT`], and bulk and tail
    /// ESS at least [`ESS_PER_CHAIN`] per chain.
    pub fn converged(&self) -> bool {
        self.rhat < RHAT_LIMIT && self.ess_bulk.min(self.ess_tail) >= self.ess_limit()
    }

    fn ess_limit(&self) -> f64 {
        ESS_PER_CHAIN * self.chains as f64
    }
}

/// The diagnostics of many quantities in a few numbers: the worst and the median R̂ and
/// ESS, where the worst are, and how many quantities fail the paper's limits.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Quantities summarized.
    pub quantities: usize,
    /// Quantities whose draws were all identical (R̂ 1, ESS m·n by convention).
    pub constant: usize,
    /// The largest R̂ (the paper's, bulk or tail).
    pub rhat_max: f64,
    /// The first quantity with R̂ = `rhat_max`, counted from 0.
    pub rhat_max_at: usize,
    /// The median R̂ (the mean of the two middle values for an even count).
    pub rhat_median: f64,
    /// Quantities with R̂ ≥ [`RHAT_LIMIT`].
    pub rhat_above_limit: usize,
    /// The smallest bulk ESS.
    pub ess_bulk_min: f64,
    /// The first quantity with bulk ESS = `ess_bulk_min`.
    pub ess_bulk_min_at: usize,
    /// The median bulk ESS.
    pub ess_bulk_median: f64,
    /// The smallest tail ESS.
    pub ess_tail_min: f64,
    /// The first quantity with tail ESS = `ess_tail_min`.
    pub ess_tail_min_at: usize,
    /// The median tail ESS.
    pub ess_tail_median: f64,
    /// Quantities whose bulk or tail ESS is below [`ESS_PER_CHAIN`] per chain.
    pub ess_below_limit: usize,
}

impl Summary {
    /// Whether every quantity passes the paper's limits on R̂ and ESS.
    pub fn converged(&self) -> bool {
        self.rhat_above_limit == 0 && self.ess_below_limit == 0
    }
}

/// The rank-normalized split-R̂ of the paper: the larger of bulk and tail R̂.
///
/// `chains`: m ≥ 2 chains of the same n ≥ 4 finite draws (`&[&[f64]]`, `&[Vec<f64>]`, …).
pub fn rhat<S: AsRef<[f64]>>(chains: &[S]) -> Result<f64, StatsError> {
    Diagnoser::new().rhat(chains)
}

/// The classic split-R̂ (BDA3 §11.4) of the draws themselves, without ranks.
pub fn split_rhat<S: AsRef<[f64]>>(chains: &[S]) -> Result<f64, StatsError> {
    Diagnoser::new().split_rhat(chains)
}

/// The bulk effective sample size.
pub fn ess_bulk<S: AsRef<[f64]>>(chains: &[S]) -> Result<f64, StatsError> {
    Diagnoser::new().ess_bulk(chains)
}

/// The tail effective sample size.
pub fn ess_tail<S: AsRef<[f64]>>(chains: &[S]) -> Result<f64, StatsError> {
    Diagnoser::new().ess_tail(chains)
}

/// Every diagnostic of one quantity.
pub fn diagnose<S: AsRef<[f64]>>(chains: &[S]) -> Result<Diagnostics, StatsError> {
    Diagnoser::new().diagnose(chains)
}

/// The [`Summary`] of many quantities, each given as its chains.
pub fn summarize<Q, S>(quantities: impl IntoIterator<Item = Q>) -> Result<Summary, StatsError>
where
    Q: AsRef<[S]>,
    S: AsRef<[f64]>,
{
    Diagnoser::new().summarize(quantities)
}

/// Computes the diagnostics, keeping its buffers and FFT plans between quantities.
///
/// Every method takes one quantity's chains: m ≥ 2 chains of the same n ≥ 4 finite
/// draws; anything else is a [`StatsError`].
#[derive(Default)]
pub struct Diagnoser {
    /// The split chains, chain after chain (2m × ⌊n/2⌋); folded in place for the tail R̂.
    split: Vec<f64>,
    /// The rank-normalized split chains, or a tail indicator.
    work: Vec<f64>,
    /// Draws sorted (medians and quantiles).
    sorted: Vec<f64>,
    /// Ranking order.
    order: Vec<usize>,
    ess: EssWorkspace,
}

impl fmt::Debug for Diagnoser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Diagnoser").finish_non_exhaustive()
    }
}

/// m chains of n draws, checked.
#[derive(Clone, Copy, Debug)]
struct Shape {
    chains: usize,
    draws: usize,
}

impl Shape {
    fn of<S: AsRef<[f64]>>(chains: &[S]) -> Result<Shape, StatsError> {
        if chains.len() < 2 {
            return Err(StatsError::TooFewChains {
                chains: chains.len(),
            });
        }
        let draws = chains[0].as_ref().len();
        for (c, chain) in chains.iter().enumerate() {
            let chain = chain.as_ref();
            if chain.len() != draws {
                return Err(StatsError::UnequalChains {
                    chain: c,
                    draws: chain.len(),
                    expected: draws,
                });
            }
            if let Some((d, &value)) = chain.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(StatsError::NonFiniteDraw {
                    chain: c,
                    draw: d,
                    value,
                });
            }
        }
        if draws < 4 {
            return Err(StatsError::TooFewDraws { draws });
        }
        Ok(Shape {
            chains: chains.len(),
            draws,
        })
    }

    /// 2m.
    fn split_chains(self) -> usize {
        2 * self.chains
    }
}

impl Diagnoser {
    /// A diagnoser with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The rank-normalized split-R̂ of the paper: the larger of bulk and tail R̂.
    pub fn rhat<S: AsRef<[f64]>>(&mut self, chains: &[S]) -> Result<f64, StatsError> {
        let shape = self.load(chains)?;
        let bulk = self.rank_normalized_split(shape);
        Ok(bulk.max(self.fold_split_for_tail(shape)))
    }

    /// The classic split-R̂ (BDA3 §11.4) of the draws themselves, without ranks.
    pub fn split_rhat<S: AsRef<[f64]>>(&mut self, chains: &[S]) -> Result<f64, StatsError> {
        let shape = self.load(chains)?;
        Ok(classic_rhat(&self.split, shape.split_chains()))
    }

    /// The bulk effective sample size: that of the rank-normalized split chains.
    pub fn ess_bulk<S: AsRef<[f64]>>(&mut self, chains: &[S]) -> Result<f64, StatsError> {
        let shape = self.load(chains)?;
        self.rank_normalized_split(shape);
        Ok(self.ess.ess(&self.work, shape.split_chains()))
    }

    /// The tail effective sample size: the smaller of the ESS of the 5% and the 95%
    /// quantile indicators.
    pub fn ess_tail<S: AsRef<[f64]>>(&mut self, chains: &[S]) -> Result<f64, StatsError> {
        let shape = Shape::of(chains)?;
        Ok(self.tail_ess(chains, shape))
    }

    /// The effective sample size of the split chains themselves, without ranks (ArviZ's
    /// `ess(method="mean")`): that of the mean when the draws have a finite variance.
    pub fn ess_mean<S: AsRef<[f64]>>(&mut self, chains: &[S]) -> Result<f64, StatsError> {
        let shape = self.load(chains)?;
        Ok(self.ess.ess(&self.split, shape.split_chains()))
    }

    /// Every diagnostic of one quantity.
    pub fn diagnose<S: AsRef<[f64]>>(&mut self, chains: &[S]) -> Result<Diagnostics, StatsError> {
        let shape = self.load(chains)?;
        let split_rhat = classic_rhat(&self.split, shape.split_chains());
        let rhat_bulk = self.rank_normalized_split(shape);
        let ess_bulk = self.ess.ess(&self.work, shape.split_chains());
        let rhat_tail = self.fold_split_for_tail(shape);
        let first = chains[0].as_ref()[0];
        Ok(Diagnostics {
            chains: shape.chains,
            draws: shape.draws,
            rhat: rhat_bulk.max(rhat_tail),
            rhat_bulk,
            rhat_tail,
            split_rhat,
            ess_bulk,
            ess_tail: self.tail_ess(chains, shape),
            constant: chains
                .iter()
                .all(|c| c.as_ref().iter().all(|&x| x == first)),
        })
    }

    /// The [`Summary`] of many quantities, each given as its chains (`&[&[f64]]`,
    /// `&Vec<Vec<f64>>`, …; the quantities may differ in chains and draws). A quantity
    /// that is wrong is a [`StatsError::Quantity`] naming it.
    pub fn summarize<Q, S>(
        &mut self,
        quantities: impl IntoIterator<Item = Q>,
    ) -> Result<Summary, StatsError>
    where
        Q: AsRef<[S]>,
        S: AsRef<[f64]>,
    {
        let (mut rhat, mut bulk, mut tail) = (Vec::new(), Vec::new(), Vec::new());
        let (mut constant, mut ess_below_limit) = (0, 0);
        for (index, quantity) in quantities.into_iter().enumerate() {
            let d = self
                .diagnose(quantity.as_ref())
                .map_err(|e| StatsError::Quantity {
                    index,
                    source: Box::new(e),
                })?;
            constant += usize::from(d.constant);
            ess_below_limit += usize::from(d.ess_bulk.min(d.ess_tail) < d.ess_limit());
            rhat.push(d.rhat);
            bulk.push(d.ess_bulk);
            tail.push(d.ess_tail);
        }
        if rhat.is_empty() {
            return Err(StatsError::NoQuantities);
        }
        let (rhat_max_at, rhat_max) = extreme(&rhat, |a, b| a > b);
        let (ess_bulk_min_at, ess_bulk_min) = extreme(&bulk, |a, b| a < b);
        let (ess_tail_min_at, ess_tail_min) = extreme(&tail, |a, b| a < b);
        Ok(Summary {
            quantities: rhat.len(),
            constant,
            rhat_max,
            rhat_max_at,
            rhat_above_limit: rhat.iter().filter(|&&r| r >= RHAT_LIMIT).count(),
            rhat_median: median(&mut rhat),
            ess_bulk_min,
            ess_bulk_min_at,
            ess_bulk_median: median(&mut bulk),
            ess_tail_min,
            ess_tail_min_at,
            ess_tail_median: median(&mut tail),
            ess_below_limit,
        })
    }

    /// Checks `chains` and writes their split chains into `self.split`: 2m chains of
    /// ⌊n/2⌋ draws (chain 0's first half, its last half, chain 1's first half, …).
    fn load<S: AsRef<[f64]>>(&mut self, chains: &[S]) -> Result<Shape, StatsError> {
        let shape = Shape::of(chains)?;
        split_into(chains, shape, &mut self.split, |x| x);
        Ok(shape)
    }

    /// Rank-normalizes the loaded split chains into `self.work`; returns their R̂ (the
    /// bulk R̂).
    fn rank_normalized_split(&mut self, shape: Shape) -> f64 {
        rank_normalize(&self.split, &mut self.work, &mut self.order);
        classic_rhat(&self.work, shape.split_chains())
    }

    /// Folds the loaded split chains about their median (in place) and returns the R̂ of
    /// their rank normalization (the tail R̂).
    fn fold_split_for_tail(&mut self, shape: Shape) -> f64 {
        self.sorted.clear();
        self.sorted.extend_from_slice(&self.split);
        self.sorted.sort_unstable_by(f64::total_cmp);
        let median = sorted_median(&self.sorted);
        for x in &mut self.split {
            *x = (*x - median).abs();
        }
        self.rank_normalized_split(shape)
    }

    /// The tail ESS of checked chains: the quantiles are those of all m·n draws, the
    /// indicators are split like the draws.
    fn tail_ess<S: AsRef<[f64]>>(&mut self, chains: &[S], shape: Shape) -> f64 {
        self.sorted.clear();
        for chain in chains {
            self.sorted.extend_from_slice(chain.as_ref());
        }
        self.sorted.sort_unstable_by(f64::total_cmp);
        let mut ess = f64::INFINITY;
        for p in TAIL_PROBABILITIES {
            let q = sorted_quantile(&self.sorted, p);
            split_into(chains, shape, &mut self.work, |x| {
                f64::from(u8::from(x <= q))
            });
            ess = ess.min(self.ess.ess(&self.work, shape.split_chains()));
        }
        ess
    }
}

/// Writes the split chains of checked `chains` into `out`, each value mapped by `f`.
fn split_into<S: AsRef<[f64]>>(
    chains: &[S],
    shape: Shape,
    out: &mut Vec<f64>,
    f: impl Fn(f64) -> f64,
) {
    let half = shape.draws / 2;
    out.clear();
    for chain in chains {
        let chain = chain.as_ref();
        out.extend(chain[..half].iter().map(|&x| f(x)));
        out.extend(chain[shape.draws - half..].iter().map(|&x| f(x)));
    }
}

/// The median of sorted values (the mean of the two middle ones for an even count, as
/// NumPy computes it: the fold's ties depend on it).
fn sorted_median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The median of values (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    sorted_median(values)
}

/// The first index and value that `better` prefers to all others.
fn extreme(values: &[f64], better: impl Fn(f64, f64) -> bool) -> (usize, f64) {
    let mut best = (0, values[0]);
    for (i, &v) in values.iter().enumerate().skip(1) {
        if better(v, best.1) {
            best = (i, v);
        }
    }
    best
}

#[cfg(test)]
mod tests;
