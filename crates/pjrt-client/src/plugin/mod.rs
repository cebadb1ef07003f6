//! Loading a PJRT plugin (from a file, or from a function table obtained elsewhere) and
//! negotiating its API version.
//!
//! # Trust
//! Loading a plugin runs its code (library initialisers, then `GetPjrtApi`), with the full
//! rights of this process. Load only plugins you trust, as you would link any native library.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};

use crate::call::named_value::{read_named_values, Value};
use crate::call::trace::span;
use crate::call::{pjrt_call, Api, ApiVersion};
use crate::error::{Error, LoadError, Result};
use crate::sys::{self, Args};
use pjrt_types::StableHloVersion;

/// A loaded PJRT plugin: its library, its validated function table and its attributes.
///
/// Cheap to clone (an `Arc`). Plugins are never unloaded: loading the same file twice returns the
/// same plugin, and the library stays mapped until the process exits (plugins register global
/// state that does not survive `dlclose`). A plugin can also be made from a function table
/// obtained elsewhere ([`Plugin::from_table`]).
///
/// `Send + Sync`: the function table is immutable and plugins are loaded once per process.
#[derive(Clone)]
pub struct Plugin {
    pub(crate) inner: Arc<PluginInner>,
}

pub(crate) struct PluginInner {
    pub(crate) api: Api,
    origin: Origin,
    attributes: Vec<(String, Value)>,
}

/// Where a plugin's table came from.
enum Origin {
    /// `GetPjrtApi` of a library this crate opened.
    Library {
        /// Canonical path of the file.
        path: PathBuf,
        // Never dropped: the mapping stays until the process exits.
        _library: std::mem::ManuallyDrop<libloading::Library>,
    },
    /// A table the caller handed over ([`Plugin::from_table`]).
    Table {
        /// What [`Plugin::path`] returns: `<PJRT_Api table at 0x...>`.
        placeholder: PathBuf,
    },
}

/// Where a plugin's function table came from ([`Plugin::source`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PluginSource<'a> {
    /// The table of the shared library at this (canonical) path, opened by [`Plugin::load`].
    Library(&'a Path),
    /// A table handed to [`Plugin::from_table`] (a statically linked plugin, or one another
    /// runtime of the process loaded): there is no file.
    Table(*const sys::PJRT_Api),
}

/// Whether a table handed to [`Plugin::from_table`] still needs `PJRT_Plugin_Initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableInit {
    /// Call `PJRT_Plugin_Initialize` (unless this crate already did for this table).
    CallInitialize,
    /// Whoever obtained the table already called `PJRT_Plugin_Initialize` on it: calling it again
    /// is not allowed by some plugins.
    AlreadyInitialized,
}

/// What this process knows of plugins: each file is loaded, and each table initialised, once.
#[derive(Default)]
struct Registry {
    /// Plugins loaded from files, by canonical path.
    by_path: HashMap<PathBuf, Plugin>,
    /// Addresses of the tables on which `PJRT_Plugin_Initialize` has run (by this crate, or by
    /// whoever handed the table over).
    initialized: HashSet<usize>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

type GetPjrtApi = unsafe extern "C" fn() -> *const sys::PJRT_Api;

/// Whether `path` is `/proc/self/fd/N`: a file this process holds open (Linux).
fn is_open_file_path(path: &Path) -> bool {
    let Ok(rest) = path.strip_prefix("/proc/self/fd") else { return false };
    let mut components = rest.components();
    matches!(
        (components.next(), components.next()),
        (Some(std::path::Component::Normal(n)), None) if n.to_str().is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    )
}

impl Plugin {
    /// Loads the plugin at `path` (a shared library exporting `GetPjrtApi`), checks its API
    /// version, and calls `PJRT_Plugin_Initialize` once.
    ///
    /// See the module docs: this runs the plugin's code.
    ///
    /// A path `/proc/self/fd/N` (Linux) names a file this process holds open: it is loaded as
    /// named, so the open file is what loads, whatever its name points to by then; [`Plugin::path`]
    /// reports the file's name. That is what `pjrt_plugins` hands out for a plugin it checked
    /// against its pin in a folder other users can change (`FoundPlugin::load_path`).
    ///
    /// ```
    /// use pjrt_client::Plugin;
    ///
    /// // Finds a plugin (installing the default CPU plugin from PyPI if there is none).
    /// let found = pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?;
    /// let plugin = Plugin::load(found.load_path())?;
    /// println!("{} speaks PJRT API {}", plugin.path().display(), plugin.api_version());
    /// assert_eq!(plugin.api_version().major, 0);
    /// assert!(plugin.has_function("PJRT_Client_Create"));
    /// for (name, value) in plugin.attributes() {
    ///     println!("  {name} = {value:?}");
    /// }
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Plugin> {
        let path = path.as_ref();
        let _span = span!(INFO, "load_plugin", path = %path.display());
        let load_err = |source| Error::Load { path: path.to_path_buf(), source };
        if !path.exists() {
            return Err(load_err(LoadError::NotFound));
        }
        // An open file (/proc/self/fd/N) is loaded through its descriptor, never by the name it
        // resolves to: that name may have been given to another file since it was opened.
        let through_descriptor = is_open_file_path(path);
        let canonical = if through_descriptor { std::fs::read_link(path) } else { path.canonicalize() }
            .map_err(|e| Error::io(path, e))?;
        let open_as = if through_descriptor { path } else { canonical.as_path() };
        // Hold the lock across loading so two threads never initialise the same plugin twice.
        let mut plugins = registry().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(plugin) = plugins.by_path.get(&canonical) {
            return Ok(plugin.clone());
        }
        // SAFETY: loading a library runs its initialisers; that is the documented contract of
        // this function (module docs, "Trust").
        let library = unsafe { libloading::Library::new(open_as) }.map_err(|e| load_err(LoadError::Open(e)))?;
        // SAFETY: `GetPjrtApi` is declared by the PJRT ABI as `const PJRT_Api* GetPjrtApi(void)`.
        let get_api: GetPjrtApi = unsafe {
            match library.get::<GetPjrtApi>(b"GetPjrtApi\0") {
                Ok(symbol) => *symbol,
                Err(_) => return Err(load_err(LoadError::MissingGetPjrtApi)),
            }
        };
        // SAFETY: calling the plugin's documented entry point with no arguments.
        let raw = unsafe { get_api() };
        // From here on the plugin's code has run and may have registered global state: never
        // unload it, even if it is refused below.
        let library = std::mem::ManuallyDrop::new(library);
        let raw = NonNull::new(raw as *mut sys::PJRT_Api).ok_or_else(|| load_err(LoadError::NullApi))?;
        // SAFETY: a non-NULL `PJRT_Api*` from `GetPjrtApi` points to the plugin's static table,
        // readable for its `struct_size`, which lives as long as the library, i.e. forever (never
        // unloaded).
        let (api, attributes) = unsafe { negotiate(raw, TableInit::CallInitialize, &mut plugins) }.map_err(load_err)?;
        let origin = Origin::Library { path: canonical.clone(), _library: library };
        let plugin = Plugin { inner: Arc::new(PluginInner { api, origin, attributes }) };
        plugins.by_path.insert(canonical, plugin.clone());
        Ok(plugin)
    }

    /// A plugin from a function table obtained elsewhere: a plugin linked into this program, or
    /// one another runtime of the process already loaded (XLA's `WrapClientAroundCApi`). The table
    /// gets the checks of [`Plugin::load`] (size, version); `PJRT_Plugin_Initialize` is called
    /// when `init` says so, at most once per table in this process (a table first loaded through
    /// [`Plugin::load`] is not initialised again).
    ///
    /// Each call returns a new `Plugin`; two plugins on the same table are the same plugin for
    /// [`Plugin::is_same`]. It has no file: [`Plugin::path`] returns the placeholder
    /// `<PJRT_Api table at 0x...>` and [`Plugin::source`] says [`PluginSource::Table`].
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, Plugin, PluginSource, TableInit};
    ///
    /// # fn main() -> pjrt_client::Result<()> {
    /// // Any table will do; here, the one of a plugin loaded from its file.
    /// let loaded = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// // SAFETY: the table belongs to a library that is never unloaded, and `Plugin::load`
    /// // initialised it.
    /// let plugin = unsafe { Plugin::from_table(loaded.raw_api(), TableInit::AlreadyInitialized) }?;
    /// assert_eq!(plugin.source(), PluginSource::Table(loaded.raw_api()));
    /// assert!(plugin.path().to_string_lossy().starts_with("<PJRT_Api table at 0x"));
    /// assert!(plugin.is_same(&loaded));
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// assert_eq!(client.platform_name(), "cpu");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Load`] (with the placeholder as its path) when `table` is NULL, too small, of an
    /// API version this crate cannot use, or when `PJRT_Plugin_Initialize` fails.
    ///
    /// # Safety
    /// - `table` is NULL or points to a `PJRT_Api` as `GetPjrtApi` returns it: readable for its
    ///   own `struct_size` bytes, with functions and an extension chain that follow the PJRT C API
    ///   of the version it states;
    /// - the table, its functions and everything they refer to stay valid for as long as the
    ///   returned `Plugin`, or anything made from it, lives (in practice: the library holding it
    ///   is never unloaded);
    /// - [`TableInit::AlreadyInitialized`] only if `PJRT_Plugin_Initialize` has run on it.
    pub unsafe fn from_table(table: *const sys::PJRT_Api, init: TableInit) -> Result<Plugin> {
        let placeholder = PathBuf::from(format!("<PJRT_Api table at {table:p}>"));
        let _span = span!(INFO, "plugin_from_table", table = %placeholder.display());
        let load_err = |source| Error::Load { path: placeholder.clone(), source };
        let raw = NonNull::new(table as *mut sys::PJRT_Api).ok_or_else(|| load_err(LoadError::NullApi))?;
        let mut plugins = registry().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: the caller's promises (this function's `# Safety`).
        let (api, attributes) = unsafe { negotiate(raw, init, &mut plugins) }.map_err(load_err)?;
        let origin = Origin::Table { placeholder };
        Ok(Plugin { inner: Arc::new(PluginInner { api, origin, attributes }) })
    }

    /// The file this plugin was loaded from (canonical path). A plugin made from a table
    /// ([`Plugin::from_table`]) has no file: its path is the placeholder
    /// `<PJRT_Api table at 0x...>`, which names no file; see [`Plugin::source`].
    pub fn path(&self) -> &Path {
        match &self.inner.origin {
            Origin::Library { path, .. } => path,
            Origin::Table { placeholder } => placeholder,
        }
    }

    /// Where the plugin's function table came from: a library file, or a table handed over.
    ///
    /// ```
    /// use pjrt_client::{Plugin, PluginSource};
    /// let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// assert_eq!(plugin.source(), PluginSource::Library(plugin.path()));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn source(&self) -> PluginSource<'_> {
        match &self.inner.origin {
            Origin::Library { path, .. } => PluginSource::Library(path),
            Origin::Table { .. } => PluginSource::Table(self.inner.api.raw()),
        }
    }

    /// The PJRT API version the plugin implements.
    pub fn api_version(&self) -> ApiVersion {
        self.inner.api.version()
    }

    /// Number of function slots in the plugin's table (138 at 0.115, 136 at 0.106).
    pub fn slot_count(&self) -> usize {
        self.inner.api.usable_slots()
    }

    /// Whether the plugin provides the C function `name` (e.g. `"PJRT_Client_Load"`), judged by
    /// its table size, its version and a non-NULL pointer. Nothing is called.
    pub fn has_function(&self, name: &str) -> bool {
        let Some(slot) = sys::SLOTS.iter().find(|s| s.name == name) else { return false };
        let offset = sys::FIRST_SLOT_OFFSET + 8 * slot.index;
        if !self.inner.api.slot_in_table(offset) {
            return false;
        }
        // SAFETY: the slot lies inside the plugin's table (checked above); a slot is one pointer.
        let ptr = unsafe { (self.inner.api.raw() as *const u8).add(offset).cast::<*const ()>().read() };
        !ptr.is_null()
    }

    /// Every attribute the plugin reports (`PJRT_Plugin_Attributes`).
    pub fn attributes(&self) -> &[(String, Value)] {
        &self.inner.attributes
    }

    /// One attribute by name.
    pub fn attribute(&self, name: &str) -> Option<&Value> {
        self.inner.attributes.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The `xla_version` attribute.
    pub fn xla_version(&self) -> Option<i64> {
        match self.attribute("xla_version") {
            Some(Value::Int64(v)) => Some(*v),
            _ => None,
        }
    }

    /// The newest StableHLO version the plugin reads (`stablehlo_current_version`).
    pub fn stablehlo_current_version(&self) -> Option<StableHloVersion> {
        stablehlo_version(self.attribute("stablehlo_current_version")?)
    }

    /// The oldest StableHLO version the plugin reads (`stablehlo_minimum_version`).
    pub fn stablehlo_minimum_version(&self) -> Option<StableHloVersion> {
        stablehlo_version(self.attribute("stablehlo_minimum_version")?)
    }

    /// The StableHLO version a portable artifact is written for to compile on this plugin (what
    /// [`crate::Client::compile`] writes a newer one for, and what `pjrt compile --emit-portable`
    /// writes): its `stablehlo_current_version`, or the writer's default target
    /// ([`pjrt_stablehlo::CURRENT_VERSION`]) for a plugin newer than that; `None` for a plugin
    /// that does not say, or says one older than any the writer writes (feature `stablehlo`).
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let version = plugin.portable_target().unwrap();
    /// assert!(version >= pjrt_stablehlo::MINIMUM_VERSION && version <= pjrt_stablehlo::CURRENT_VERSION);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "stablehlo")]
    pub fn portable_target(&self) -> Option<StableHloVersion> {
        self.stablehlo_current_version().and_then(crate::program::write_target)
    }

    /// The plugin's raw function table, for calling the C API directly through [`crate::sys`].
    ///
    /// Escape hatch: never free it, and read a slot only if it lies inside `struct_size` (see
    /// [`Plugin::slot_count`] and [`Plugin::has_function`]).
    pub fn raw_api(&self) -> *const sys::PJRT_Api {
        self.inner.api.raw()
    }

    pub(crate) fn api(&self) -> &Api {
        &self.inner.api
    }

    /// Whether `other` is this very plugin: the same function table (loading one file twice gives
    /// the same plugin; [`Plugin::from_table`] on its table gives another handle to it), so the
    /// objects of one may be passed to the other.
    pub fn is_same(&self, other: &Plugin) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || std::ptr::eq(self.inner.api.raw(), other.inner.api.raw())
    }

    /// Refuses `object`'s plugin `other` unless it is this plugin ([`Error::ForeignObject`]).
    pub(crate) fn check_same(&self, other: &Plugin, what: &'static str) -> Result<()> {
        if self.is_same(other) {
            Ok(())
        } else {
            Err(Error::ForeignObject { what, expected: self.path().to_path_buf(), found: other.path().to_path_buf() })
        }
    }
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin").field("path", &self.path()).field("api_version", &self.api_version()).finish()
    }
}

/// A StableHLO version attribute (`int64` list of three, each part a `u32`).
fn stablehlo_version(value: &Value) -> Option<StableHloVersion> {
    match value {
        Value::Int64List(parts) => StableHloVersion::from_parts(parts),
        _ => None,
    }
}

/// The one path from a table to a usable plugin, shared by [`Plugin::load`] and
/// [`Plugin::from_table`]: checks the table's header and version (`Api::new`), calls
/// `PJRT_Plugin_Initialize` when `init` asks and this process has not yet done so for this table,
/// and reads the attributes.
///
/// # Safety
/// `raw` points to a `PJRT_Api` readable for its own `struct_size`, whose functions follow the C
/// API, and which stays valid for the life of the process.
unsafe fn negotiate(
    raw: NonNull<sys::PJRT_Api>,
    init: TableInit,
    registry: &mut Registry,
) -> std::result::Result<(Api, Vec<(String, Value)>), LoadError> {
    // SAFETY: the caller's guarantee.
    let api = unsafe { Api::new(raw) }?;
    let address = raw.as_ptr() as usize;
    if init == TableInit::CallInitialize && !registry.initialized.contains(&address) {
        let mut args = sys::PJRT_Plugin_Initialize_Args::new();
        pjrt_call!(&api, PJRT_Plugin_Initialize, &mut args).map_err(|e| LoadError::Initialize(Box::new(e)))?;
    }
    registry.initialized.insert(address);
    let attributes = read_attributes(&api).unwrap_or_default();
    Ok((api, attributes))
}

fn read_attributes(api: &Api) -> Result<Vec<(String, Value)>> {
    let mut args = sys::PJRT_Plugin_Attributes_Args::new();
    pjrt_call!(api, PJRT_Plugin_Attributes, &mut args)?;
    // SAFETY: the plugin returned an array of `num_attributes` values that lives as long as the
    // plugin (observed: process lifetime); we copy it at once.
    Ok(unsafe { read_named_values(args.attributes, args.num_attributes) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_proc_self_fd_and_a_number_names_an_open_file() {
        assert!(is_open_file_path(Path::new("/proc/self/fd/7")));
        assert!(is_open_file_path(Path::new("/proc/self/fd/123")));
        for other in [
            "/proc/self/fd",
            "/proc/self/fd/",
            "/proc/self/fd/x",
            "/proc/self/fd/7/lib.so",
            "/proc/1/fd/7",
            "proc/self/fd/7",
            "/tmp/lib.so",
        ] {
            assert!(!is_open_file_path(Path::new(other)), "{other}");
        }
    }
}
