//! The typed errors inside the command's `anyhow::Error`: a layer's error (a
//! [`ConfigError`](nrpt_sampling::config::ConfigError), an
//! [`OutputError`](nrpt_sampling::output::OutputError), …) is found whether it was returned
//! as itself or wrapped in the studies' [`StudyError`], so that the command's exit status
//! and the Python package's exception classes follow from types, not from messages.

use std::error::Error;

use nrpt_studies::error::StudyError;

/// Every error of type `E` in `e`'s chain, the ones a [`StudyError`] wraps included,
/// outermost first.
pub fn all<'a, E: Error + 'static>(e: &'a anyhow::Error) -> impl Iterator<Item = &'a E> + 'a {
    e.chain().filter_map(|c| {
        c.downcast_ref::<E>().or_else(|| {
            c.downcast_ref::<StudyError>()
                .and_then(|s| s.inner().downcast_ref::<E>())
        })
    })
}

/// The outermost error of type `E` in `e`'s chain (see [`all`]).
pub fn find<E: Error + 'static>(e: &anyhow::Error) -> Option<&E> {
    all::<E>(e).next()
}

/// Whether `e`'s chain holds an error of type `E` (see [`all`]).
pub fn has<E: Error + 'static>(e: &anyhow::Error) -> bool {
    find::<E>(e).is_some()
}

/// Whether `e` is bad input, the user's to fix (flags, configuration, data files, a
/// reference posterior, a shard, parameters the core refuses, an engine's invalid
/// request): the command exits with status 2 for it, the Python package raises
/// `ValueError`. The one list of what counts as bad input.
pub fn is_bad_input(e: &anyhow::Error) -> bool {
    use nrpt_sampling::engine::EngineError;
    has::<nrpt_sampling::config::ConfigError>(e)
        || has::<nrpt_sampling::data::DataError>(e)
        || has::<nrpt_studies::deep::reference::ReferenceError>(e)
        || has::<nrpt_studies::shard::ShardError>(e)
        || has::<nrpt_core::Error>(e)
        || matches!(find::<EngineError>(e), Some(EngineError::Invalid(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_sampling::config::ConfigError;
    use nrpt_sampling::engine::EngineError;

    #[test]
    fn a_wrapped_error_is_found_as_the_one_returned_alone() {
        let alone = anyhow::Error::from(ConfigError::new("chains", "too few"));
        let wrapped = anyhow::Error::from(StudyError::from(ConfigError::new("chains", "too few")))
            .context("while planning the run");
        for e in [&alone, &wrapped] {
            assert_eq!(
                find::<ConfigError>(e).map(|c| c.field.as_str()),
                Some("chains")
            );
            assert!(!has::<EngineError>(e));
        }
        assert_eq!(
            format!("{wrapped:#}"),
            "while planning the run: chains (--chains): too few"
        );
    }
}
