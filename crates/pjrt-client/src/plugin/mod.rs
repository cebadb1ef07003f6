//! Loading a PJRT plugin and negotiating its API version.
//!
//! # Trust
//! Loading a plugin runs its code (library initialisers, then `GetPjrtApi`), with the full
//! rights of this process. Load only plugins you trust, as you would link any native library.

pub mod locate;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};

use crate::call::named_value::{read_named_values, Value};
use crate::call::{pjrt_call, Api, ApiVersion};
use crate::error::{Error, LoadError, Result};
use crate::sys::{self, Args};

/// A loaded PJRT plugin: its library, its validated function table and its attributes.
///
/// Cheap to clone (an `Arc`). Plugins are never unloaded: loading the same file twice returns the
/// same plugin, and the library stays mapped until the process exits (plugins register global
/// state that does not survive `dlclose`).
///
/// `Send + Sync`: the function table is immutable and plugins are loaded once per process.
#[derive(Clone)]
pub struct Plugin {
    pub(crate) inner: Arc<PluginInner>,
}

pub(crate) struct PluginInner {
    pub(crate) api: Api,
    path: PathBuf,
    attributes: Vec<(String, Value)>,
    // Never dropped: the mapping stays until the process exits.
    _library: std::mem::ManuallyDrop<libloading::Library>,
}

/// Plugins loaded so far, by canonical path: each one is loaded and initialised once.
fn registry() -> &'static Mutex<HashMap<PathBuf, Plugin>> {
    static REGISTRY: OnceLock<Mutex<HashMap<PathBuf, Plugin>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

type GetPjrtApi = unsafe extern "C" fn() -> *const sys::PJRT_Api;

impl Plugin {
    /// Loads the plugin at `path` (a shared library exporting `GetPjrtApi`), checks its API
    /// version, and calls `PJRT_Plugin_Initialize` once.
    ///
    /// See the module docs: this runs the plugin's code.
    ///
    /// ```
    /// use pjrt_client::{locate, Plugin};
    ///
    /// // Finds a plugin (installing the default CPU plugin from PyPI if there is none).
    /// let found = locate::resolve_or_install(None, |line| eprintln!("{line}"))?;
    /// let plugin = Plugin::load(&found.path)?;
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
        let canonical = path.canonicalize().map_err(|e| Error::io(path, e))?;
        // Hold the lock across loading so two threads never initialise the same plugin twice.
        let mut plugins = registry().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(plugin) = plugins.get(&canonical) {
            return Ok(plugin.clone());
        }
        // SAFETY: loading a library runs its initialisers; that is the documented contract of
        // this function (module docs, "Trust").
        let library = unsafe { libloading::Library::new(&canonical) }.map_err(|e| load_err(LoadError::Open(e)))?;
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
        // which lives as long as the library, i.e. forever (never unloaded).
        let api = unsafe { Api::new(raw) }.map_err(load_err)?;
        let mut init = sys::PJRT_Plugin_Initialize_Args::new();
        pjrt_call!(&api, PJRT_Plugin_Initialize, &mut init)
            .map_err(|e| load_err(LoadError::Initialize(Box::new(e))))?;
        let attributes = read_attributes(&api).unwrap_or_default();
        let plugin =
            Plugin { inner: Arc::new(PluginInner { api, path: canonical.clone(), attributes, _library: library }) };
        plugins.insert(canonical, plugin.clone());
        Ok(plugin)
    }

    /// The file this plugin was loaded from (canonical path).
    pub fn path(&self) -> &Path {
        &self.inner.path
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
        StableHloVersion::from_value(self.attribute("stablehlo_current_version")?)
    }

    /// The oldest StableHLO version the plugin reads (`stablehlo_minimum_version`).
    pub fn stablehlo_minimum_version(&self) -> Option<StableHloVersion> {
        StableHloVersion::from_value(self.attribute("stablehlo_minimum_version")?)
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

    /// Whether `other` is this very plugin (the same loaded library: loading one file twice
    /// gives the same plugin).
    pub fn is_same(&self, other: &Plugin) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
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
        f.debug_struct("Plugin").field("path", &self.inner.path).field("api_version", &self.api_version()).finish()
    }
}

/// A StableHLO version `major.minor.patch`, as plugins report them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StableHloVersion(pub i64, pub i64, pub i64);

impl StableHloVersion {
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Int64List(v) if v.len() == 3 => Some(StableHloVersion(v[0], v[1], v[2])),
            _ => None,
        }
    }
}

impl fmt::Display for StableHloVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

fn read_attributes(api: &Api) -> Result<Vec<(String, Value)>> {
    let mut args = sys::PJRT_Plugin_Attributes_Args::new();
    pjrt_call!(api, PJRT_Plugin_Attributes, &mut args)?;
    // SAFETY: the plugin returned an array of `num_attributes` values that lives as long as the
    // plugin (observed: process lifetime); we copy it at once.
    Ok(unsafe { read_named_values(args.attributes, args.num_attributes) })
}
