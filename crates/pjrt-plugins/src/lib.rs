//! Finding PJRT plugins on this machine, and installing the known ones from PyPI: pinned
//! versions, checked against pinned SHA-256 hashes, without Python (with the `install` feature)
//! or through `python3 -m pip`. This crate only finds the file; loading it is
//! `pjrt_client::Plugin::load(found.load_path())`.
//!
//! ```
//! // Find a plugin; with none on the machine, install the default CPU plugin from PyPI.
//! let found = pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?;
//! assert!(found.path.is_file());
//! # Ok::<(), pjrt_plugins::Error>(())
//! ```
//!
//! Resolution order for [`resolve`]: an explicit path or known name; the `PJRT_PLUGIN`
//! environment variable; plugins installed as Python packages in the site-packages of the
//! `python3` on `PATH` (its answer remembered, see [`python_site_packages`]; `PJRT_NO_PYTHON_CACHE=1`
//! asks it every time); the plugin cache ([`cache_dir`]).
//!
//! # Trust
//! A plugin is native code that runs with this process's rights. Plugins installed by
//! [`install`] come from PyPI at a pinned version, are checked against a pinned SHA-256 before
//! first use, and are refused if the file changes afterwards ([`verified_cached`]). The cache
//! folder is created owner-only (0700), and pip is run directly (no shell) with fixed arguments.
//! What loads is exactly what was checked ([`VerifiedLibrary::load_path`],
//! [`FoundPlugin::load_path`]): in a folder only you can change, the file by its path (nobody else
//! can swap it); elsewhere (Linux) the descriptor it was hashed from, as `/proc/self/fd/N`. A
//! library another user can rewrite in place is refused, as is a plugin whose pinned files
//! beside it (`ptxas`, OpenBLAS's runtime libraries) are opened by name from a folder others can
//! change, and on systems without `/proc` any library in such a folder.
//! Paths given explicitly, through `PJRT_PLUGIN` or found in Python packages are trusted as
//! the user's choice and loaded as they are.
//!
//! What is remembered to save work, a `.pjrt-verified` marker (a file's hash recorded with its
//! size, time and inode, so it is not hashed again), python's answer about its site-packages,
//! and the compile cache of `pjrt-formats` (serialized executables are native code), is trusted
//! only in a folder no other user can change ([`check_trusted_dir`]): after resolving symlinks,
//! every folder from `/` down is owned by you or root and writable by neither group nor others
//! (root's sticky `/tmp` may be above it; your own private group may write it). Elsewhere a
//! plugin is hashed on every use, python is asked every time and installs and the compile cache
//! are refused. The caches live under [`user_cache_dir`] (`$XDG_CACHE_HOME`, else `~/.cache`,
//! with `$HOME` or else the home of the password database); without a home they are off, never
//! in a shared temporary folder: set `PJRT_PLUGIN_CACHE` to a folder of yours.
//!
//! # Features
//! - `install`: [`install`] downloads the wheels itself (HTTPS with rustls and the system's
//!   certificates, zip); without it, [`install`] runs `python3 -m pip`.
//! - `tracing` (default): `tracing` spans around finding and installing plugins.
//!
//! # Files
//! `catalog.rs` lists the known plugins; `resolve.rs` finds plugins; `verify.rs` checks files
//! against their pins; `install.rs` installs; `trust.rs` decides which folders are trusted;
//! `python_sites.rs` asks (and remembers) python's site-packages; `pypi.rs` and `wheel.rs`
//! download and unpack wheels (the `install` feature).

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod catalog;
mod error;
mod install;
#[cfg(feature = "install")]
mod pypi;
mod python_sites;
mod resolve;
mod trace;
mod trust;
mod verified;
mod verify;
#[cfg(feature = "install")]
mod wheel;

pub use catalog::{
    cached_path, cuda_data_dir, default_plugin, known_package, known_plugin, runtime_library_dirs, KnownPlugin,
    KnownTool, KNOWN_PLUGINS, OPENBLAS,
};
pub use error::{Error, Result};
pub use install::{install, install_verified, install_with_pip};
#[cfg(feature = "install")]
pub use install::{install_from, wheel_sources_from_env, WheelSource, PYPI_SIMPLE_INDEX};
pub use resolve::{
    find_all, plugins_in_site_packages, python_site_packages, resolve, resolve_or_install, verify_if_cached,
    FoundPlugin, Source,
};
pub use trust::{cache_dir, check_trusted_dir, check_trusted_file, create_trusted_dir, user_cache_dir};
pub use verified::VerifiedLibrary;
pub use verify::{remembered_sha256, sha256_file, verified_cached};
