//! JAX's linear algebra on CPU plugins (feature `client`): the LAPACK custom calls `jax.export`
//! guarantees stable ([`TARGETS`]), as built-in XLA FFI handlers of pjrt-client over the kernels
//! of this crate.
//!
//! A JAX program that calls `jnp.linalg.solve`, `inv`, `det`, `cholesky`, `qr`, `eigh`, `svd`,
//! `eig`, `jax.scipy.linalg.schur`, `hessenberg`, `lu`, `solve_triangular`, ... on CPU lowers
//! them to custom calls such as `lapack_sgetrf_ffi`, whose handlers jaxlib registers when it is
//! imported: the PJRT plugins do not have them. [`register`] installs, for the process, a
//! provider of built-in handlers (`pjrt_client::ffi::BuiltinProvider`) that registers ours on a
//! CPU plugin when a program that calls them is compiled or loaded, so exported models just work:
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! // The one line: scipy's OpenBLAS, installed into the plugin cache on first need.
//! pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // What jnp.linalg.det lowers to (simplified): LU with pivots, then the diagonal's product.
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xi32>, tensor<i32>) {
//!   %lu, %ipiv, %info = stablehlo.custom_call @lapack_dgetrf_ffi(%a) {api_version = 4 : i32,
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>]}
//!       : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xi32>, tensor<i32>)
//!   return %lu, %ipiv, %info : tensor<2x2xf64>, tensor<2xi32>, tensor<i32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?; // registers lapack_dgetrf_ffi
//! let a = client.upload(&[4.0f64, 3.0, 6.0, 3.0], &[2, 2])?;
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! assert_eq!(out[1].to_vec::<i32>()?, [2, 2]); // 1-based pivot rows, as LAPACK writes them
//! assert_eq!(out[2].to_vec::<i32>()?, [0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Without a provider, such a program is refused (`pjrt_client::Error::MissingBuiltinProvider`)
//! with that line. The `pjrt` command, `pjrt serve` and pjrt-formats' `Runner` install it
//! themselves.
//!
//! # What happens
//! - `Client::compile` and `Client::deserialize_and_load` let the provider look through the
//!   program (or the serialized executable) for the names of the targets in [`TARGETS`]; it
//!   registers each one found (once per loaded plugin, `pjrt_client::ffi::register_builtin`)
//!   before the plugin sees it. Programs that call none of them cost one scan of their bytes.
//! - The handlers need a LAPACK, loaded once for the process when the first handler is made: the
//!   one [`set_library`] or `PJRT_LAPACK_LIBRARY` names, else the one the function given to
//!   [`register`] finds (`pjrt_plugins::install` of `pjrt_plugins::OPENBLAS` installs scipy's
//!   OpenBLAS into the plugin cache when it is missing, from PyPI as plugins are; `pjrt plugin
//!   install openblas` does it ahead of time). When none loads, compiling fails with
//!   `pjrt_client::Error::BuiltinUnavailable`, saying what to install.
//! - Only plugins of the `cpu` platform get them. The GPU targets of JAX (`cusolver_*`,
//!   `hipsolver_*`, `cu_lu_pivots_to_permutation`, ...) and the pre-FFI LAPACK targets
//!   (`lapack_sgetrf`, `blas_strsm`, ..., which JAX 0.4.30 and 0.4.38 wrote) are refused by name
//!   on a CPU plugin (`pjrt_client::Error::UnsupportedCustomCall`), as is a `lapack_*_ffi`
//!   target JAX does not guarantee. pjrt-formats upgrades the pre-FFI calls of a `jax.export`
//!   model to these targets on load (`pjrt_formats::jax_export::upgrade_legacy_lapack`), and
//!   JAX 0.5.x's three-operand `lapack_?trsm_ffi` (its `alpha`, always 1) to the two-operand one.
//! - [`set_enabled`]`(false)` (`pjrt --no-builtin-lapack`) turns the provider off for the
//!   process: call it before the first compile, since a registration cannot be undone.
//!
//! OpenBLAS runs its own threads (`OPENBLAS_NUM_THREADS`, default: one per core), as it does
//! under JAX.

mod gees;
mod geev;
mod gehrd;
mod geqrf;
mod gesdd;
mod getrf;
mod gtsv;
mod orgqr;
mod potrf;
mod syevd;
mod sytrd;
mod trsm;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use pjrt_client::ffi::{self, BuiltinProvider, FfiError, Handler};
use pjrt_client::{Client, Error, Result};

use crate::{Lapack, FAMILIES, TARGETS};

/// JAX's GPU targets for the same functions (`_GPU_FFI_KERNELS`) and its GPU random-bits
/// kernels: refused by name on a CPU plugin.
const GPU_TARGETS: &[&str] = &[
    "cu_lu_pivots_to_permutation",
    "cusolver_getrf_ffi",
    "hip_lu_pivots_to_permutation",
    "hipsolver_getrf_ffi",
    "cusolver_geqrf_ffi",
    "cusolver_orgqr_ffi",
    "hipsolver_geqrf_ffi",
    "hipsolver_orgqr_ffi",
    "cusolver_potrf_ffi",
    "hipsolver_potrf_ffi",
    "cusolver_syevd_ffi",
    "hipsolver_syevd_ffi",
    "cusolver_gesvd_ffi",
    "cusolver_gesvdj_ffi",
    "hipsolver_gesvd_ffi",
    "hipsolver_gesvdj_ffi",
    "hipsolver_gesdd_ffi",
    "cusolver_sytrd_ffi",
    "hipsolver_sytrd_ffi",
    "cusparse_gtsv2_ffi",
    "cu_threefry2x32_ffi",
    "hip_threefry2x32_ffi",
];

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns the provider on or off for the process (on by default). Off, programs are handed to
/// the plugin as they are (and one calling a LAPACK target fails there unless its handler was
/// registered otherwise). Handlers registered already stay registered.
///
/// ```
/// pjrt_lapack::set_enabled(true);
/// assert!(pjrt_lapack::is_enabled());
/// ```
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
}

/// Whether the provider registers handlers ([`set_enabled`]).
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::SeqCst)
}

/// The LAPACK library chosen with [`set_library`].
static CHOSEN: Mutex<Option<PathBuf>> = Mutex::new(None);
/// The LAPACK loaded, for the process (handlers are registered for good).
static LOADED: OnceLock<Lapack> = OnceLock::new();

/// Uses the LAPACK at `path` (a `libscipy_openblas.so`, or any LAPACK with the Fortran
/// interface and 32-bit integers) instead of the one the provider's function finds. Takes
/// effect if no LAPACK is loaded yet ([`library`]); returns whether it did.
///
/// ```
/// assert!(pjrt_lapack::library().is_none()); // nothing compiled yet in this process
/// assert!(pjrt_lapack::set_library("/opt/openblas/libscipy_openblas.so"));
/// ```
pub fn set_library(path: impl AsRef<Path>) -> bool {
    if LOADED.get().is_some() {
        return false;
    }
    *CHOSEN.lock().unwrap_or_else(|p| p.into_inner()) = Some(path.as_ref().to_path_buf());
    true
}

/// The LAPACK the handlers run on, once loaded (by the first compile of a program that calls
/// one of [`TARGETS`]); `None` before.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use pjrt_client::{Client, ClientOptions, CompileOptions, Plugin, Program};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let program = Program::mlir_text(r#"
/// func.func public @main(%a: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>) {
///   %l, %info = stablehlo.custom_call @lapack_spotrf_ffi(%a) {api_version = 4 : i32,
///       mhlo.backend_config = {uplo = 76 : ui8},
///       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
///       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]}
///       : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>)
///   return %l, %info : tensor<2x2xf32>, tensor<i32>
/// }"#)?;
/// client.compile(&program, &CompileOptions::new())?;
/// let lapack = pjrt_lapack::library().expect("loaded by the compile");
/// assert!(lapack.config().unwrap_or_default().contains("OpenBLAS"));
/// # Ok(()) }
/// ```
pub fn library() -> Option<&'static Lapack> {
    LOADED.get()
}

/// How a provider finds its LAPACK library when neither [`set_library`] nor
/// `PJRT_LAPACK_LIBRARY` names one.
type Find = dyn Fn() -> std::result::Result<PathBuf, String> + Send + Sync;

/// The LAPACK of [`library`], loaded now if it is not yet: [`set_library`]'s, else the file
/// `PJRT_LAPACK_LIBRARY` names, else the one `find` gives.
fn load_library(find: &Find) -> Result<&'static Lapack> {
    if let Some(lapack) = LOADED.get() {
        return Ok(lapack);
    }
    // One loader at a time: a second thread waits for the first's install.
    static LOADING: Mutex<()> = Mutex::new(());
    let _guard = LOADING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(lapack) = LOADED.get() {
        return Ok(lapack);
    }
    let chosen = CHOSEN.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let from_env = std::env::var_os("PJRT_LAPACK_LIBRARY").filter(|v| !v.is_empty()).map(PathBuf::from);
    let path = match chosen.or(from_env) {
        Some(path) => path,
        None => find().map_err(unavailable)?,
    };
    let lapack = Lapack::load(&path).map_err(|e| unavailable(e.to_string()))?;
    Ok(LOADED.get_or_init(|| lapack))
}

/// No LAPACK, and why, with what to do.
fn unavailable(reason: String) -> Error {
    Error::BuiltinUnavailable {
        provider: PROVIDER_NAME.to_owned(),
        message: format!(
            "the program calls JAX's LAPACK kernels (lapack_*_ffi), which run on scipy's OpenBLAS: {reason}. Install \
             it with `pjrt plugin install openblas` (or pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, ..)) where PyPI \
             is reachable, or name a libscipy_openblas.so with PJRT_LAPACK_LIBRARY"
        ),
    }
}

/// The targets of [`TARGETS`] that `bytes` (MLIR text or bytecode, or a serialized executable)
/// names, each once, in [`TARGETS`] order; and the first refused name, if any.
fn scan(bytes: &[u8]) -> (Vec<&'static str>, Option<(String, &'static str)>) {
    let mut found = [false; TARGETS.len()];
    let mut refused = None;
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        // Names start at an identifier boundary with one of these prefixes.
        let rest = &bytes[i..];
        let starts = rest.starts_with(b"lapack_")
            || rest.starts_with(b"blas_")
            || rest.starts_with(b"cu")
            || rest.starts_with(b"hip");
        if !starts || (i > 0 && is_ident(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let len = rest.iter().take_while(|&&b| is_ident(b)).count();
        let name = &rest[..len];
        i += len.max(1);
        if let Some(k) = TARGETS.iter().position(|t| t.as_bytes() == name) {
            found[k] = true;
        } else if refused.is_none() {
            refused = refusal(name).map(|advice| (String::from_utf8_lossy(name).into_owned(), advice));
        }
    }
    (TARGETS.iter().zip(found).filter(|(_, f)| *f).map(|(t, _)| *t).collect(), refused)
}

/// Why a custom-call name is refused on a CPU plugin, if it is one JAX uses elsewhere.
fn refusal(name: &[u8]) -> Option<&'static str> {
    let name = std::str::from_utf8(name).ok()?;
    if GPU_TARGETS.contains(&name) {
        return Some(
            "is one of JAX's GPU kernels: the program was exported for CUDA or ROCm; export it for CPU \
             (jax.export with platforms=['cpu']) or run it on a GPU plugin",
        );
    }
    let legacy = |prefix: &str| {
        name.strip_prefix(prefix).is_some_and(|rest| {
            let (p, routine) = rest.split_at(rest.len().min(1));
            "sdcz".contains(p) && !p.is_empty() && FAMILIES.iter().any(|(r, c)| routine == *r || routine == *c)
        })
    };
    if legacy("lapack_") || legacy("blas_") {
        return Some(
            "is a LAPACK kernel of jaxlib before its FFI form (JAX 0.4.30 wrote them all; 0.4.38 still wrote \
             `blas_?trsm`, `lapack_?potrf`, `?geev`, `?gees`, `?gehrd` and `?sytrd`/`?hetrd` so): pjrt-formats' \
             JaxExport (the `pjrt` command, `pjrt serve`, Runner) upgrades a jax.export model's calls to \
             `lapack_*_ffi` on load; a program of your own must call the `_ffi` target, or be exported again with \
             JAX 0.5 or newer",
        );
    }
    if name.starts_with("lapack_") && name.ends_with("_ffi") {
        return Some(
            "is a LAPACK kernel of jaxlib that jax.export does not guarantee stable (not in _CPU_FFI_KERNELS), and \
             this crate does not have it",
        );
    }
    None
}

/// The name of the provider ([`BuiltinProvider::name`]).
///
/// ```
/// let provider = pjrt_lapack::provider(|| Ok::<_, String>("libscipy_openblas.so".into()));
/// assert_eq!(provider.name(), pjrt_lapack::PROVIDER_NAME);
/// assert!(provider.provides("lapack_sgetrf_ffi") && !provider.provides("lapack_sgesvd_ffi"));
/// ```
pub const PROVIDER_NAME: &str = "pjrt-lapack";

/// The provider of these handlers: [`TARGETS`] on CPU plugins, over the LAPACK its `find` gives
/// when none is named.
struct Provider {
    find: Box<Find>,
}

impl BuiltinProvider for Provider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    fn provides(&self, target: &str) -> bool {
        TARGETS.contains(&target)
    }

    /// Registers the built-in handler of every target `code` names on the client's plugin (CPU
    /// plugins only; nothing when [`set_enabled`]`(false)`), and refuses the names of
    /// `pjrt_client::Error::UnsupportedCustomCall`.
    fn prepare(&self, client: &Client, code: &[u8]) -> Result<()> {
        if !is_enabled() || client.platform_name() != "cpu" {
            return Ok(());
        }
        let (targets, refused) = scan(code);
        if let Some((target, advice)) = refused {
            return Err(Error::UnsupportedCustomCall { target, advice });
        }
        for target in targets {
            let index = TARGETS.iter().position(|t| *t == target).expect("scan finds only TARGETS");
            ffi::register_builtin(client, target, handler(index, &*self.find)?)?;
        }
        Ok(())
    }
}

/// The provider of these handlers, for one client (`pjrt_client::ClientOptions::builtin_provider`)
/// or the process (`pjrt_client::ffi::add_provider`, which [`register`] calls). `find` says where
/// the LAPACK library is, called once, on first need, when neither [`set_library`] nor
/// `PJRT_LAPACK_LIBRARY` names one. The library is loaded once for the process: the first
/// provider to need it chooses.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use pjrt_client::{Client, ClientOptions, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let provider = pjrt_lapack::provider(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
/// let client = Client::new(&plugin, &ClientOptions::new().builtin_provider(provider))?;
/// # Ok(()) }
/// ```
pub fn provider<F, E>(find: F) -> Arc<dyn BuiltinProvider>
where
    F: Fn() -> std::result::Result<PathBuf, E> + Send + Sync + 'static,
    E: std::fmt::Display,
{
    Arc::new(Provider { find: Box::new(move || find().map_err(|e| e.to_string())) })
}

/// Installs the [`provider`] of these handlers for the process (`pjrt_client::ffi::add_provider`),
/// the one line a program needs for JAX's LAPACK kernels; returns whether it did (`false` when
/// it is installed already: the first `find` stays). See [`provider`] for `find`, and the
/// [module docs](self) for an example.
///
/// ```
/// // Another LAPACK than scipy's OpenBLAS: any with the Fortran interface and 32-bit integers.
/// pjrt_lapack::register(|| Ok::<_, std::convert::Infallible>("/usr/lib/x86_64-linux-gnu/liblapack.so.3".into()));
/// assert!(pjrt_client::ffi::providers().contains(&pjrt_lapack::PROVIDER_NAME.to_owned()));
/// ```
pub fn register<F, E>(find: F) -> bool
where
    F: Fn() -> std::result::Result<PathBuf, E> + Send + Sync + 'static,
    E: std::fmt::Display,
{
    ffi::add_provider(provider(find))
}

/// The handler of `TARGETS[index]`, made once for the process (loading the LAPACK library
/// first, `find` telling where it is when it is not named).
fn handler(index: usize, find: &Find) -> Result<&'static Handler> {
    static HANDLERS: [OnceLock<Handler>; TARGETS.len()] = [const { OnceLock::new() }; TARGETS.len()];
    if let Some(h) = HANDLERS[index].get() {
        return Ok(h);
    }
    let lapack = load_library(find)?;
    let target = TARGETS[index];
    let (family, prefix) = crate::family_of(index).expect("an index of TARGETS");
    Ok(HANDLERS[index].get_or_init(|| make_handler(family, prefix, target, lapack)))
}

fn make_handler(family: &str, prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    match family {
        "potrf" => potrf::handler(prefix, target, lapack),
        "geqrf" => geqrf::handler(prefix, target, lapack),
        "orgqr" => orgqr::handler(prefix, target, lapack),
        "syevd" => syevd::handler(prefix, target, lapack),
        "geev" => geev::handler(prefix, target, lapack),
        "gesdd" => gesdd::handler(prefix, target, lapack),
        "getrf" => getrf::handler(prefix, target, lapack),
        "sytrd" => sytrd::handler(prefix, target, lapack),
        "gehrd" => gehrd::handler(prefix, target, lapack),
        "gees" => gees::handler(prefix, target, lapack),
        "trsm" => trsm::handler(prefix, target, lapack),
        "gtsv" => gtsv::handler(prefix, target, lapack),
        _ => unreachable!("FAMILIES lists these"),
    }
}

/// The element types of the kernels, as buffers of custom calls.
pub(crate) trait Element: crate::Scalar + ffi::FfiElement {}
impl<T: crate::Scalar + ffi::FfiElement> Element for T {}

/// Calls `$f::<T>(args)` with `T` the element type of LAPACK's letter `$p` (`s`, `d`, `c`, `z`).
macro_rules! by_type {
    ($p:expr, $f:ident($($arg:expr),*)) => {
        match $p {
            's' => $f::<f32>($($arg),*),
            'd' => $f::<f64>($($arg),*),
            'c' => $f::<num_complex::Complex<f32>>($($arg),*),
            'z' => $f::<num_complex::Complex<f64>>($($arg),*),
            other => unreachable!("no LAPACK type {other}"),
        }
    };
}
pub(crate) use by_type;

/// For LAPACK's letter `$p`: `$real` for `s` and `d`, `$complex` for `c` and `z`, each with
/// `$r` the real type (`f32` for `s` and `c`, `f64` for `d` and `z`).
macro_rules! by_kind {
    ($p:expr, $r:ident => $real:expr, $complex:expr) => {
        match $p {
            's' => {
                type $r = f32;
                $real
            }
            'd' => {
                type $r = f64;
                $real
            }
            'c' => {
                type $r = f32;
                $complex
            }
            'z' => {
                type $r = f64;
                $complex
            }
            other => unreachable!("no LAPACK type {other}"),
        }
    };
}
pub(crate) use by_kind;

/// The matrix batch of an operand's dims (at least two).
pub(crate) fn batch_of(what: &str, dims: &[i64]) -> std::result::Result<crate::kernels::Batch, FfiError> {
    crate::kernels::Batch::from_dims(dims)
        .ok_or_else(|| FfiError::invalid_argument(format!("{what} has dimensions {dims:?}: not a batch of matrices")))
}

/// A kernel's refusal as the handler's error.
pub(crate) fn kernel_error(e: crate::KernelError) -> FfiError {
    FfiError::invalid_argument(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_names_at_boundaries() {
        let text = br#"stablehlo.custom_call @lapack_sgetrf_ffi(%a) ... @"lapack_zheevd_ffi"  xlapack_dgetrf_ffi lapack_sgetrf_ffi"#;
        let (found, refused) = scan(text);
        assert_eq!(found, ["lapack_zheevd_ffi", "lapack_sgetrf_ffi"]); // TARGETS order
        assert!(refused.is_none());
        // Bytecode strings end in NUL or run into the next string's length byte.
        let (found, _) = scan(b"\x05lapack_dtrsm_ffi\0cusolver_getrf_ffi\0");
        assert_eq!(found, ["lapack_dtrsm_ffi"]);
    }

    #[test]
    fn scan_refuses_gpu_legacy_and_unknown_lapack_names() {
        let (_, refused) = scan(b"@cusolver_getrf_ffi(");
        assert!(refused.unwrap().1.contains("GPU"));
        let (_, refused) = scan(b"@lapack_sgetrf(");
        assert!(refused.unwrap().1.contains("before its FFI form"));
        let (_, refused) = scan(b"@blas_ctrsm(");
        assert!(refused.is_some());
        let (_, refused) = scan(b"@lapack_sgesvd_ffi(");
        assert!(refused.unwrap().1.contains("does not guarantee"));
        // Other names with these prefixes are someone else's.
        assert!(scan(b"@custom_op( @hipster @lapack_my_thing @cumsum").1.is_none());
    }
}
