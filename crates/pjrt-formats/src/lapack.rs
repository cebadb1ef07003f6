//! JAX's LAPACK kernels for the models this crate runs (feature `lapack`, on by default): the
//! first [`crate::jax_export::Runner`] installs pjrt-lapack's provider of their handlers for the
//! process, with scipy's OpenBLAS installed into the plugin cache on first need (what
//! `pjrt plugin install openblas` does ahead of time). Without the feature, nothing: a model that
//! calls them needs a provider installed by its user.

/// Installs pjrt-lapack's provider for the process, once (kept when one is installed already, by
/// the `pjrt` command say, or by the user).
pub(crate) fn install_provider() {
    #[cfg(feature = "lapack")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // The installer's progress lines are not shown: a library prints nothing; its error
            // (in the compile's, when it fails) says what failed.
            pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
        });
    }
}
