//! Runtimes: a plugin found (by path or name) and loaded, a client on it, the device models run
//! on, and the compile cache; `pjrt_runtime_new` and `pjrt_runtime_free`.

use std::path::PathBuf;
use std::sync::Arc;

use pjrt_client::{Client, ClientOptions, Plugin};
use pjrt_formats::compile_cache::CompileCache;

use crate::boundary::guard;
use crate::check;
use crate::failure::{Failure, Outcome};
use crate::registry::Registry;
use crate::types::*;

/// A runtime's parts; a model holds its runtime (an `Arc`), so freeing the runtime's handle
/// leaves its models running.
pub(crate) struct Runtime {
    pub(crate) client: Client,
    /// Which of the client's addressable devices models run on.
    pub(crate) device: usize,
    /// That device's id (for device assignments).
    pub(crate) device_id: i32,
    pub(crate) compile_cache: Option<CompileCache>,
}

pub(crate) static RUNTIMES: Registry<Runtime> = Registry::new(1, "pjrt_runtime");

/// The runtime `handle` names; `argument` names the parameter in messages.
pub(crate) fn runtime(handle: *const pjrt_runtime, argument: &str) -> Outcome<Arc<Runtime>> {
    RUNTIMES.get(handle as usize).map_err(|e| Failure::handle(e, argument, RUNTIMES.name()))
}

/// The options C gave (NULL: the defaults), checked for `struct_size`.
///
/// # Safety
///
/// `options` is NULL or points to a `pjrt_options` of at least `struct_size` bytes.
unsafe fn read_options(options: *const pjrt_options) -> Outcome<pjrt_options> {
    let defaults = pjrt_options {
        struct_size: std::mem::size_of::<pjrt_options>(),
        plugin: std::ptr::null(),
        compile_cache: std::ptr::null(),
        cpu_devices: 0,
        device: 0,
        install_plugin: 0,
        client_options: std::ptr::null(),
    };
    if options.is_null() {
        return Ok(defaults);
    }
    if (options as usize) % std::mem::align_of::<pjrt_options>() != 0 {
        return Err(Failure::invalid("options is not aligned for a pjrt_options"));
    }
    // SAFETY: not NULL and aligned (checked above); the caller promises a pjrt_options, which
    // starts with its size: one usize.
    let size = unsafe { options.cast::<usize>().read() };
    if size < std::mem::size_of::<pjrt_options>() {
        return Err(Failure::invalid(format!(
            "options->struct_size is {size}: set it to sizeof(pjrt_options) ({} in this ABI, {}.{})",
            std::mem::size_of::<pjrt_options>(),
            crate::PJRT_ABI_VERSION_MAJOR,
            crate::PJRT_ABI_VERSION_MINOR
        )));
    }
    // SAFETY: the caller's struct has at least our size (checked above): a header of this ABI
    // or a later minor version, whose first fields are ours.
    Ok(unsafe { options.read() })
}

/// The plugin library to load for `spec` (a path or a name; `None`: the default search),
/// installing it first when `install` asks and this build can.
fn find_plugin(spec: Option<&str>, install: bool) -> Outcome<PathBuf> {
    if install {
        #[cfg(feature = "install")]
        {
            let found = match spec {
                None => pjrt_plugins::resolve_or_install(None, |_| ())?,
                Some(name) => match (pjrt_plugins::resolve(Some(name)), pjrt_plugins::known_plugin(name)) {
                    (Err(pjrt_plugins::Error::NotFound { .. }), Some(known)) => {
                        pjrt_plugins::install(known, |_| ())?;
                        pjrt_plugins::resolve(Some(name))?
                    }
                    (found, _) => found?,
                },
            };
            return Ok(found.load_path().to_path_buf());
        }
        #[cfg(not(feature = "install"))]
        return Err(Failure::new(
            PJRT_CODE_UNIMPLEMENTED,
            "options->install_plugin: this libpjrt was built without the `install` feature; install the plugin \
             with `pjrt plugin install NAME`, or build pjrt-capi with `--features install`",
        ));
    }
    Ok(pjrt_plugins::resolve(spec)?.load_path().to_path_buf())
}

/// JAX's LAPACK kernels for the models' linear algebra: pjrt-lapack's provider, installed for
/// the process once, finding scipy's OpenBLAS in the plugin cache (installed there on first
/// need only by a library built with the `install` feature).
fn register_lapack() {
    #[cfg(feature = "install")]
    pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
    #[cfg(not(feature = "install"))]
    pjrt_lapack::register(|| {
        pjrt_plugins::verified_cached(&pjrt_plugins::OPENBLAS).map(|found| found.load_path().to_path_buf())
    });
}

fn new_runtime(options: &pjrt_options) -> Outcome<Runtime> {
    // SAFETY: the caller of pjrt_runtime_new promises NUL-terminated strings or NULL.
    let plugin = unsafe { check::optional_str(options.plugin, "options->plugin") }?;
    // SAFETY: as above.
    let cache = unsafe { check::optional_path(options.compile_cache, "options->compile_cache") }?;
    if options.cpu_devices < 0 {
        return Err(Failure::invalid(format!("options->cpu_devices is {}", options.cpu_devices)));
    }
    // SAFETY: as above.
    let specs = unsafe { check::optional_str(options.client_options, "options->client_options") }?;
    let mut client_options = ClientOptions::new();
    for spec in specs.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
        client_options =
            client_options.set_text(spec).map_err(|e| Failure::from(e).context("options->client_options"))?;
    }
    if options.cpu_devices > 0 {
        client_options = client_options.cpu_device_count(i64::from(options.cpu_devices));
    }
    let path = find_plugin(plugin, options.install_plugin != 0)?;
    register_lapack();
    let plugin = Plugin::load(&path)?;
    let client = Client::new(&plugin, &client_options)?;
    let devices = client.addressable_devices();
    let device = usize::try_from(options.device).ok().filter(|&d| d < devices.len()).ok_or_else(|| {
        Failure::invalid(format!(
            "options->device is {}, but the client has {} addressable devices",
            options.device,
            devices.len()
        ))
    })?;
    let device_id = devices[device].id()?;
    drop(devices);
    let compile_cache = cache.map(CompileCache::open).transpose()?;
    Ok(Runtime { client, device, device_id, compile_cache })
}

/// Makes a runtime: finds the plugin `options` names and loads it (a plugin stays loaded until
/// the process ends), makes a client on it, and opens the compile cache. `options` may be NULL
/// (the defaults). On success `*runtime` is the new runtime; on failure it is NULL.
///
/// Thread-safe. Runtimes are independent; two on the same plugin share the plugin's
/// process-wide state.
///
/// # Safety
///
/// `options` is NULL or a `pjrt_options` whose strings are NULL or NUL-terminated; `runtime`
/// is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn pjrt_runtime_new(
    options: *const pjrt_options,
    runtime: *mut *mut pjrt_runtime,
) -> *mut pjrt_status {
    guard("pjrt_runtime_new", || {
        check::out(runtime, "runtime (where the new runtime goes)")?;
        // SAFETY: not NULL and aligned (checked above); the caller promises it is writable.
        unsafe { runtime.write(std::ptr::null_mut()) };
        // SAFETY: the caller's promise for `options`.
        let options = unsafe { read_options(options) }?;
        let made = new_runtime(&options)?;
        let handle = RUNTIMES
            .insert(made)
            .ok_or_else(|| Failure::new(PJRT_CODE_RESOURCE_EXHAUSTED, "too many runtimes are alive"))?;
        // SAFETY: as above: not NULL, aligned, writable.
        unsafe { runtime.write(handle as *mut pjrt_runtime) };
        Ok(())
    })
}

/// Frees a runtime's handle. Its models keep working (each holds what it needs of the
/// runtime) until they are freed too. NULL is ignored; a runtime freed already is an error.
///
/// Thread-safe, also while other threads use the runtime: their calls finish, later ones get an
/// error.
///
/// `runtime` is never dereferenced: any value is checked.
#[no_mangle]
pub extern "C" fn pjrt_runtime_free(runtime: *mut pjrt_runtime) -> *mut pjrt_status {
    guard("pjrt_runtime_free", || {
        if runtime.is_null() {
            return Ok(());
        }
        RUNTIMES.remove(runtime as usize).map(drop).map_err(|e| Failure::handle(e, "runtime", RUNTIMES.name()))
    })
}
