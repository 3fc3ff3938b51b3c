//! Exact tempering on the Gaussian path N(0, I_D) → N(0, I_D/10) (`--target
//! gaussian-path`): MALA or HMC explorers, Metropolis swaps between inverse temperatures β, the
//! grid of β tuned to equal rejection, and the communication barrier Λ and log Z beside
//! their closed forms. Run by `commands::gaussian_path`, not by the SGD engines.

use super::{Builtin, Method};
use crate::config::{ExplorerKind, RunConfig, WindowSpec};
use crate::error::ConfigError;

/// `--target gaussian-path`. Vanilla DEO by default: with exact swaps a window W > 1
/// lets a rejected pair try again within the window, which biases the levels'
/// distributions (see `commands::gaussian_path`).
pub const GAUSSIAN_PATH: Builtin = Builtin {
    name: "gaussian-path",
    about: "exact tempering N(0, I_D) → N(0, I_D/10) in --dim dimensions: Λ, λ(β), log Z \
            beside their closed forms; --chains auto chooses P; --explorer mala or hmc",
    method: Method::Exact,
    keys: &["dim"],
    args: &[],
    defaults: |c| RunConfig {
        window: WindowSpec::Fixed(1),
        explorer: ExplorerKind::Mala,
        ..c
    },
    build: |_| {
        Err(ConfigError::new(
            "target",
            "gaussian-path runs exact tempering (`nrpt run --target gaussian-path`), not the \
             SGD engine",
        ))
    },
};
