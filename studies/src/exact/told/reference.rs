//! The β = 0 end of a controller's path: the caller's own π₀, or a mean-field Gaussian
//! fitted to the posterior level ([`GaussianFit`]), and the form it is saved in.

use nrpt_core::exact::{GaussianFit, VariationalOptions};
use nrpt_sampling::config::ReferenceKind;
use serde::{Deserialize, Serialize};

/// The β = 0 end of a controller's path: the caller's own π₀, or a Gaussian fitted to the
/// posterior level (the caller's π₀ until its first fit).
#[derive(Clone, Debug, Default)]
pub(super) enum Reference {
    #[default]
    Fixed,
    Variational(GaussianFit<Vec<f64>>),
}

impl PartialEq for Reference {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Reference::Fixed, Reference::Fixed) => true,
            (Reference::Variational(a), Reference::Variational(b)) => {
                a.dim() == b.dim()
                    && a.saved() == b.saved()
                    && a.options() == b.options()
                    && a.buffer()
                        .iter()
                        .map(|v| v.to_bits())
                        .eq(b.buffer().iter().map(|v| v.to_bits()))
            }
            _ => false,
        }
    }
}

/// A [`Reference`] as [`ExactController::encode`] writes it after the controller (from
/// version 3): what [`GaussianFit::resume`] needs, its buffer borrowed (`&[f64]`) when
/// written and owned (`Vec<f64>`) when read.
#[derive(Serialize, Deserialize)]
pub(super) enum SavedReference<B> {
    Fixed,
    Variational {
        dim: usize,
        buffer: B,
        count: u64,
        fits: u32,
    },
}

/// D of a variational reference: 1 to [`MAX_DIM`](nrpt_sampling::config::MAX_DIM).
pub(super) fn check_dim(dim: usize) -> Result<(), nrpt_core::Error> {
    const _: () = assert!(
        nrpt_sampling::config::MAX_DIM == 1 << 20,
        "update the message below"
    );
    if dim == 0 || dim > nrpt_sampling::config::MAX_DIM {
        return Err(nrpt_core::Error::InvalidValue {
            name: "dim",
            value: dim as f64,
            allowed: "between 1 and 1048576 (the coordinates of a replica's state) with a \
                      variational reference",
        });
    }
    Ok(())
}

impl Reference {
    /// A reference of `kind` for states of dimension `dim` (variational only).
    pub(super) fn new(kind: ReferenceKind, dim: usize) -> Result<Self, nrpt_core::Error> {
        if kind == ReferenceKind::Fixed {
            return Ok(Reference::Fixed);
        }
        if kind != ReferenceKind::Variational {
            return Err(nrpt_core::Error::Unsupported {
                what: "this reference in an exact controller: it takes `fixed` or \
                       `variational`; the two-leg stabilized ladder is available in \
                       `nrpt run` only",
            });
        }
        check_dim(dim)?;
        let buffer = vec![0.0; GaussianFit::<Vec<f64>>::buffer_len(dim)];
        let fit = GaussianFit::new(dim, buffer, VariationalOptions::default())?;
        Ok(Reference::Variational(fit))
    }

    pub(super) fn saved(&self) -> SavedReference<&[f64]> {
        match self {
            Reference::Fixed => SavedReference::Fixed,
            Reference::Variational(q) => {
                let (count, fits) = q.saved();
                SavedReference::Variational {
                    dim: q.dim(),
                    buffer: q.buffer(),
                    count,
                    fits,
                }
            }
        }
    }

    /// The reference a [`SavedReference`] describes, checked by [`GaussianFit::resume`].
    pub(super) fn resume(saved: SavedReference<Vec<f64>>) -> Result<Self, nrpt_core::Error> {
        match saved {
            SavedReference::Fixed => Ok(Reference::Fixed),
            SavedReference::Variational {
                dim,
                buffer,
                count,
                fits,
            } => {
                check_dim(dim)?;
                let options = VariationalOptions::default();
                let q = GaussianFit::resume(dim, buffer, options, count, fits)?;
                Ok(Reference::Variational(q))
            }
        }
    }

    /// The fitted q (`None` while the reference is the caller's π₀).
    pub(super) fn fitted(&self) -> Option<&GaussianFit<Vec<f64>>> {
        match self {
            Reference::Variational(q) if q.is_fitted() => Some(q),
            _ => None,
        }
    }

    /// What a told iteration does to the fit: the state now at the posterior level
    /// (`x`) is gathered (unless it has a non-finite coordinate), and q is fitted at the
    /// end of a round whose grid adapted ([`GaussianFit::fit`], which keeps q as it was
    /// when the moments overflowed).
    pub(super) fn after_tell(&mut self, x: Option<&[f64]>, fit: bool) {
        let Reference::Variational(q) = self else {
            return;
        };
        if let Some(x) = x {
            q.observe(x);
        }
        if fit {
            q.fit();
        }
    }
}
