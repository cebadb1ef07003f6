//! JAX's CPU linear algebra without JAX: the kernels behind the 48 custom-call targets that
//! `jax.export` guarantees stable on CPU (`lapack_{s,d,c,z}{potrf, geqrf, orgqr/ungqr,
//! syevd/heevd, geev, gesdd, getrf, sytrd/hetrd, gehrd, gees, trsm, gtsv}_ffi`), with JAX's
//! contracts: column-major matrices with leading batch dimensions, LAPACK's packed outputs and
//! `info` codes, in place where JAX aliases the input.
//!
//! The numerics are LAPACK's, from an OpenBLAS loaded at run time ([`Lapack::load`]): the one
//! scipy ships (PyPI's `scipy-openblas32`, symbols prefixed `scipy_`, 32-bit integers), the
//! same library the LAPACK kernels of jaxlib call through scipy. Nothing is compiled or linked
//! at build time. The kernels ([`kernels`]) know nothing of PJRT or XLA; the `client` feature
//! adds, above them, their XLA FFI handlers for pjrt-client (the `handlers` module): one line,
//! `pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()))`, makes
//! every CPU client of the process run the programs that call them.
//!
//! Every kernel checks the lengths of the slices it is given against the dimensions before
//! LAPACK sees a pointer, and refuses dimensions that do not fit LAPACK's 32-bit integers.
//!
//! ```no_run
//! use pjrt_lapack::{kernels, Lapack};
//! let lapack = Lapack::load("libscipy_openblas.so")?;
//! // One 2x2 matrix, column-major: [[4, 3], [6, 3]].
//! let mut a = [4.0f64, 6.0, 3.0, 3.0];
//! let (mut ipiv, mut info) = ([0i32; 2], [0i32; 1]);
//! kernels::getrf(&lapack, kernels::Batch { count: 1, rows: 2, cols: 2 }, &mut a, &mut ipiv, &mut info)?;
//! assert_eq!((ipiv, info), ([2, 2], [0]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};

use num_complex::Complex;

#[cfg(feature = "client")]
pub mod handlers;
pub mod kernels;
mod routines;
mod targets;

#[cfg(feature = "client")]
pub use handlers::{is_enabled, library, provider, register, set_enabled, set_library, PROVIDER_NAME};
pub use routines::*;
pub use targets::{family_of, FAMILIES, TARGETS};

/// What went wrong loading a LAPACK library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The dynamic loader refused the file.
    #[error("cannot load the LAPACK library {path}: {message}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
    /// The library lacks routines the kernels call.
    #[error(
        "the library {path} is not a LAPACK these kernels can use: it has no {missing:?} (symbols tried with \
         the prefixes `scipy_` and none); use the OpenBLAS of PyPI's scipy-openblas32"
    )]
    MissingSymbols {
        /// The file.
        path: PathBuf,
        /// The routines not found (Fortran names, lower case, with the trailing underscore).
        missing: Vec<String>,
    },
}

/// What a kernel refuses before calling LAPACK.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// A slice has another length than the dimensions say.
    #[error("{what} has {found} elements, but the dimensions make {expected}")]
    Length {
        /// Which operand or result.
        what: &'static str,
        /// Its length.
        found: usize,
        /// What the dimensions make.
        expected: usize,
    },
    /// A dimension (or a workspace size) does not fit LAPACK's 32-bit integers.
    #[error("{what} = {value} does not fit LAPACK's 32-bit integers")]
    TooLarge {
        /// Which dimension.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// An attribute value the kernel does not know.
    #[error("the attribute `{name}` is {value} ({shown:?}); expected one of {expected}")]
    Attribute {
        /// The attribute.
        name: &'static str,
        /// Its value.
        value: u8,
        /// As a character.
        shown: char,
        /// What is accepted.
        expected: &'static str,
    },
    /// Operands that disagree with each other.
    #[error("{0}")]
    Shape(String),
    /// LAPACK said an argument was wrong (`info < 0`): a bug in the kernel, reported rather
    /// than hidden.
    #[error("LAPACK's {routine} refused argument {argument}")]
    Argument {
        /// The routine.
        routine: &'static str,
        /// Its 1-based argument number.
        argument: i32,
    },
}

/// A LAPACK loaded from a shared library, with every routine the kernels call resolved.
///
/// Loading runs the library's initialisers (OpenBLAS starts its thread pool then, sized by
/// `OPENBLAS_NUM_THREADS` or the number of cores). The library stays loaded while this lives;
/// keep it for the process (the kernels are registered for good).
pub struct Lapack {
    path: PathBuf,
    prefix: &'static str,
    /// The routines of each element type.
    pub(crate) s: Routines<f32>,
    pub(crate) d: Routines<f64>,
    pub(crate) c: Routines<Complex<f32>>,
    pub(crate) z: Routines<Complex<f64>>,
    get_config: Option<unsafe extern "C" fn() -> *const c_char>,
    set_num_threads: Option<unsafe extern "C" fn(i32)>,
    // Last: dropped after the function pointers above (which point into it).
    _library: libloading::Library,
}

impl std::fmt::Debug for Lapack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lapack").field("path", &self.path).field("prefix", &self.prefix).finish()
    }
}

impl Lapack {
    /// Loads the LAPACK at `path` and resolves its routines (named `scipy_dgetrf_` in
    /// scipy's OpenBLAS, `dgetrf_` in others).
    ///
    /// ```no_run
    /// let lapack = pjrt_lapack::Lapack::load("/opt/openblas/libscipy_openblas.so")?;
    /// println!("{}", lapack.config().unwrap_or_default());
    /// # Ok::<(), pjrt_lapack::LoadError>(())
    /// ```
    ///
    /// The file is trusted as code: loading it runs its initialisers, and its routines are
    /// taken to implement LAPACK's documented interface (32-bit integers, gfortran's calling
    /// convention with hidden string lengths). Load only a library you trust, as you would a
    /// plugin.
    pub fn load(path: impl AsRef<Path>) -> Result<Lapack, LoadError> {
        let path = path.as_ref().to_path_buf();
        // SAFETY: loading a shared library runs its initialisers; the caller trusts the file
        // as code (documented above).
        let library = unsafe { libloading::Library::new(&path) }
            .map_err(|e| LoadError::Open { path: path.clone(), message: e.to_string() })?;
        for prefix in ["scipy_", ""] {
            let mut missing = Vec::new();
            let mut find = Finder { library: &library, prefix, missing: &mut missing };
            let (s, d, c, z) = (
                Routines::<f32>::resolve(&mut find),
                Routines::<f64>::resolve(&mut find),
                Routines::<Complex<f32>>::resolve(&mut find),
                Routines::<Complex<f64>>::resolve(&mut find),
            );
            // SAFETY: the OpenBLAS extension functions, declared as OpenBLAS's cblas.h does.
            let get_config = unsafe { find.symbol::<unsafe extern "C" fn() -> *const c_char>("openblas_get_config") };
            // SAFETY: as above.
            let set_num_threads = unsafe { find.symbol::<unsafe extern "C" fn(i32)>("openblas_set_num_threads") };
            match (s, d, c, z) {
                (Some(s), Some(d), Some(c), Some(z)) if missing.is_empty() => {
                    return Ok(Lapack { path, prefix, s, d, c, z, get_config, set_num_threads, _library: library })
                }
                _ if prefix.is_empty() => return Err(LoadError::MissingSymbols { path, missing }),
                _ => {}
            }
        }
        unreachable!("the last prefix returns")
    }

    /// The file loaded.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The prefix of its symbols (`scipy_` for scipy's OpenBLAS).
    pub fn symbol_prefix(&self) -> &'static str {
        self.prefix
    }

    /// OpenBLAS's description of itself (version, CPU kernel, thread count), when the library
    /// is an OpenBLAS.
    pub fn config(&self) -> Option<String> {
        let get = self.get_config?;
        // SAFETY: OpenBLAS returns a static NUL-terminated string (or NULL, checked).
        let ptr = unsafe { get() };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: non-NULL, NUL-terminated, static (OpenBLAS's contract for this call).
        Some(unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
    }

    /// Sets OpenBLAS's thread count (for every later call, process-wide); `false` when the
    /// library is not an OpenBLAS. Values below 1 are taken as 1.
    pub fn set_num_threads(&self, threads: usize) -> bool {
        let Some(set) = self.set_num_threads else { return false };
        // SAFETY: a plain int argument.
        unsafe { set(threads.clamp(1, i32::MAX as usize) as i32) };
        true
    }

    /// The routines for element type `T`.
    pub fn routines<T: Scalar>(&self) -> &Routines<T> {
        T::routines(self)
    }
}

/// Resolves symbols of one library with one prefix, collecting the names not found.
pub(crate) struct Finder<'a> {
    library: &'a libloading::Library,
    prefix: &'static str,
    missing: &'a mut Vec<String>,
}

impl Finder<'_> {
    /// The symbol `prefix + name`, as a function pointer of type `F`.
    ///
    /// # Safety
    /// `F` is the function pointer type of the symbol's actual interface.
    pub(crate) unsafe fn symbol<F: Copy>(&mut self, name: &str) -> Option<F> {
        let full = format!("{}{name}\0", self.prefix);
        // SAFETY: the caller's contract on `F`; the pointer is used only while the library is
        // loaded (`Lapack` drops it last).
        match unsafe { self.library.get::<F>(full.as_bytes()) } {
            Ok(symbol) => Some(*symbol),
            Err(_) => None,
        }
    }

    /// Like [`Finder::symbol`], recording a missing name.
    ///
    /// # Safety
    /// As [`Finder::symbol`].
    pub(crate) unsafe fn required<F: Copy>(&mut self, name: &str) -> Option<F> {
        // SAFETY: the caller's contract.
        let found = unsafe { self.symbol::<F>(name) };
        if found.is_none() {
            self.missing.push(name.to_owned());
        }
        found
    }
}
