//! JAX's linear algebra on CPU plugins: the 48 LAPACK custom calls `jax.export` guarantees
//! stable, as built-in XLA FFI handlers.
//!
//! A JAX program that calls `jnp.linalg.solve`, `inv`, `det`, `cholesky`, `qr`, `eigh`, `svd`,
//! `eig`, `jax.scipy.linalg.schur`, `hessenberg`, `lu`, `solve_triangular`, ... on CPU lowers
//! them to custom calls such as `lapack_sgetrf_ffi`, whose handlers jaxlib registers when it is
//! imported: the PJRT plugins do not have them. This crate registers its own (on the numerics
//! of [`pjrt_lapack`], i.e. LAPACK from scipy's OpenBLAS) on a CPU plugin when a program that
//! calls them is compiled or loaded, so exported models just work:
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.path)?;
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
//! # Ok::<(), pjrt_client::Error>(())
//! ```
//!
//! # What happens
//! - [`Client::compile`] and [`Client::deserialize_and_load`] look through the program (or the
//!   serialized executable) for the names of the targets in [`TARGETS`], and register each one
//!   found (once per loaded plugin, see [`crate::ffi::register`]) before handing it to the
//!   plugin. Programs that call none of them cost one scan of their bytes.
//! - The handlers need a LAPACK: [`library`] loads the one [`set_library`] or
//!   `PJRT_LAPACK_LIBRARY` names, else scipy's OpenBLAS from the plugin cache
//!   (`pjrt_plugins::OPENBLAS`), installing it there first when it is missing (from PyPI,
//!   as plugins are; `pjrt plugin install openblas` does it ahead of time). Offline without it,
//!   compiling fails with [`Error::LapackUnavailable`], saying what to install.
//! - Only plugins of the `cpu` platform get them. The GPU targets of JAX (`cusolver_*`,
//!   `hipsolver_*`, `cu_lu_pivots_to_permutation`, ...) and the pre-FFI LAPACK targets
//!   (`lapack_sgetrf`, `blas_strsm`, ...) are refused by name on a CPU plugin
//!   ([`Error::UnsupportedCustomCall`]), as is a `lapack_*_ffi` target JAX does not guarantee.
//! - [`set_enabled`]`(false)` (`pjrt --no-builtin-lapack`) turns this off for the process:
//!   call it before the first compile, since a registration cannot be undone.
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
use std::sync::{Mutex, OnceLock};

use pjrt_lapack::Lapack;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::ffi::{self, FfiError, Handler};

use pjrt_lapack::FAMILIES;
pub use pjrt_lapack::TARGETS;

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

/// Turns the built-in handlers on or off for the process (on by default). Off, programs are
/// handed to the plugin as they are (and one calling a LAPACK target fails there unless its
/// handler was registered otherwise). Handlers registered already stay registered.
///
/// ```
/// pjrt_client::lapack::set_enabled(true);
/// assert!(pjrt_client::lapack::is_enabled());
/// ```
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
}

/// Whether the built-in handlers are registered on demand ([`set_enabled`]).
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::SeqCst)
}

/// The LAPACK library chosen with [`set_library`].
static CHOSEN: Mutex<Option<PathBuf>> = Mutex::new(None);
/// The LAPACK loaded, for the process (handlers are registered for good).
static LOADED: OnceLock<Lapack> = OnceLock::new();

/// Uses the LAPACK at `path` (a `libscipy_openblas.so`, or any LAPACK with the Fortran
/// interface and 32-bit integers) instead of the OpenBLAS of the plugin cache. Takes effect if
/// no LAPACK is loaded yet ([`library`]); returns whether it did.
///
/// ```
/// // The doc examples have loaded one already: too late to choose.
/// # let _ = pjrt_client::lapack::library();
/// assert!(!pjrt_client::lapack::set_library("/nonexistent/libopenblas.so"));
/// ```
pub fn set_library(path: impl AsRef<Path>) -> bool {
    if LOADED.get().is_some() {
        return false;
    }
    *CHOSEN.lock().unwrap_or_else(|p| p.into_inner()) = Some(path.as_ref().to_path_buf());
    true
}

/// The LAPACK the handlers use, loaded on first use: [`set_library`]'s, else the file
/// `PJRT_LAPACK_LIBRARY` names, else scipy's OpenBLAS from the plugin cache, installed there
/// first when missing (`pjrt_plugins::install` of `pjrt_plugins::OPENBLAS`, with the `plugins` feature).
///
/// ```
/// let lapack = pjrt_client::lapack::library()?;
/// assert!(lapack.config().unwrap_or_default().contains("OpenBLAS"));
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn library() -> Result<&'static Lapack> {
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
        None => openblas_from_the_plugin_cache()?,
    };
    let lapack = Lapack::load(&path).map_err(|e| Error::LapackUnavailable { reason: e.to_string() })?;
    Ok(LOADED.get_or_init(|| lapack))
}

/// scipy's OpenBLAS from the plugin cache, installed there first when it is missing.
#[cfg(feature = "plugins")]
fn openblas_from_the_plugin_cache() -> Result<PathBuf> {
    // The installer's progress lines are not shown: a library prints nothing; its error says what failed.
    pjrt_plugins::install(&pjrt_plugins::OPENBLAS, |_| ()).map_err(|e| Error::LapackUnavailable {
        reason: format!("scipy's OpenBLAS is not installed and installing it failed: {e}"),
    })
}

/// Without the `plugins` feature there is no installer: the user names the library.
#[cfg(not(feature = "plugins"))]
fn openblas_from_the_plugin_cache() -> Result<PathBuf> {
    Err(Error::LapackUnavailable {
        reason: "no LAPACK library was named (lapack::set_library or PJRT_LAPACK_LIBRARY) and this build of \
                 pjrt-client has no installer (its `plugins` feature is off)"
            .into(),
    })
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
            "is a LAPACK kernel of jaxlib before its FFI form (JAX older than 0.4.31 exported it): export the \
             model again with a newer JAX, which calls `<name>_ffi`",
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

/// The provider of these handlers ([`ffi::BuiltinProvider`]), named `pjrt-lapack`.
struct Provider;

impl ffi::BuiltinProvider for Provider {
    fn name(&self) -> &str {
        "pjrt-lapack"
    }

    fn provides(&self, target: &str) -> bool {
        TARGETS.contains(&target)
    }

    fn prepare(&self, client: &Client, code: &[u8]) -> Result<()> {
        prepare(client, code)
    }
}

/// Installs the [`Provider`] for the process, once.
pub(crate) fn install_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        ffi::add_provider(std::sync::Arc::new(Provider));
    });
}

/// Registers the built-in handler of every target `bytes` names on the client's plugin (CPU
/// plugins only; nothing when [`set_enabled`]`(false)`), and refuses the names of
/// [`Error::UnsupportedCustomCall`].
fn prepare(client: &Client, bytes: &[u8]) -> Result<()> {
    if !is_enabled() || client.platform_name() != "cpu" {
        return Ok(());
    }
    let (targets, refused) = scan(bytes);
    if let Some((target, advice)) = refused {
        return Err(Error::UnsupportedCustomCall { target, advice });
    }
    for target in targets {
        register(client, target)?;
    }
    Ok(())
}

/// Registers the built-in handler for `target` (one of [`TARGETS`]) on the client's plugin,
/// as compiling a program that calls it does; a no-op when registered already.
///
/// ```
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.path)?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// pjrt_client::lapack::register(&client, "lapack_spotrf_ffi")?;
/// assert!(pjrt_client::lapack::register(&client, "lapack_sgesvd_ffi").is_err()); // not one of the 48
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn register(client: &Client, target: &str) -> Result<()> {
    let Some(index) = TARGETS.iter().position(|t| *t == target) else {
        return Err(Error::UnsupportedCustomCall {
            target: target.to_owned(),
            advice: "is not one of the 48 LAPACK targets of pjrt_client::lapack::TARGETS",
        });
    };
    let handler = handler(index)?;
    ffi::register_builtin(client, TARGETS[index], handler)
}

/// The handler of `TARGETS[index]`, made once for the process.
fn handler(index: usize) -> Result<&'static Handler> {
    static HANDLERS: [OnceLock<Handler>; TARGETS.len()] = [const { OnceLock::new() }; TARGETS.len()];
    if let Some(h) = HANDLERS[index].get() {
        return Ok(h);
    }
    let lapack = library()?;
    let target = TARGETS[index];
    let (family, prefix) = pjrt_lapack::family_of(index).expect("an index of TARGETS");
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
pub(crate) trait Element: pjrt_lapack::Scalar + ffi::FfiElement {}
impl<T: pjrt_lapack::Scalar + ffi::FfiElement> Element for T {}

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
pub(crate) fn batch_of(what: &str, dims: &[i64]) -> std::result::Result<pjrt_lapack::kernels::Batch, FfiError> {
    pjrt_lapack::kernels::Batch::from_dims(dims)
        .ok_or_else(|| FfiError::invalid_argument(format!("{what} has dimensions {dims:?}: not a batch of matrices")))
}

/// A kernel's refusal as the handler's error.
pub(crate) fn kernel_error(e: pjrt_lapack::KernelError) -> FfiError {
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
