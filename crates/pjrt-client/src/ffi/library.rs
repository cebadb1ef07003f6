//! Handlers in a shared library of their own: a crate built as a `cdylib` with this crate
//! exports its handlers with [`export_ffi_handlers!`](crate::export_ffi_handlers), and a program
//! (`pjrt run --ffi-library PATH`) loads them with [`FfiLibrary::load`] and registers them.
//!
//! The library and the program each have their own copy of this crate, so nothing Rust-typed
//! crosses between them: the library exports one C function, `pjrt_ffi_library`, returning a
//! table of our own C ABI ([`FfiLibraryTable`]: `struct_size`-first, versioned) of target names
//! and `XLA_FFI_Handler` entry points; the entry points are the library's typed handlers, so the
//! frames they get are checked there.

use std::ffi::c_char;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::sys::xla_ffi as x;

use super::handler::Handler;
use super::register::{register_entry, xla_platform, Identity};
use super::trampoline;

/// The symbol a handler library exports.
pub const SYMBOL: &str = "pjrt_ffi_library";

/// The version of [`FfiLibraryTable`]'s layout.
pub const ABI_VERSION: u32 = 1;

/// The most handlers one library may list.
pub const MAX_ENTRIES: usize = trampoline::MAX_HANDLERS;

/// One handler of a library (C ABI).
///
/// ```
/// use pjrt_client::ffi::FfiLibraryEntry;
/// assert_eq!(std::mem::size_of::<FfiLibraryEntry>(), 32);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FfiLibraryEntry {
    /// `size_of::<FfiLibraryEntry>()` as the library knows it.
    pub struct_size: usize,
    /// The custom-call target name (UTF-8, not NUL-terminated).
    pub target: *const c_char,
    /// Its length in bytes.
    pub target_len: usize,
    /// The handler.
    pub handler: Option<x::XLA_FFI_Handler>,
}

/// What `pjrt_ffi_library` returns (C ABI).
///
/// ```
/// use pjrt_client::ffi::FfiLibraryTable;
/// assert_eq!(std::mem::size_of::<FfiLibraryTable>(), 32);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FfiLibraryTable {
    /// `size_of::<FfiLibraryTable>()` as the library knows it.
    pub struct_size: usize,
    /// [`ABI_VERSION`] of the library.
    pub abi_version: u32,
    /// The number of entries.
    pub count: usize,
    /// `count` entries.
    pub entries: *const FfiLibraryEntry,
}

struct Exported {
    table: FfiLibraryTable,
    _entries: Vec<FfiLibraryEntry>,
    _names: Vec<String>,
}

// SAFETY: the pointers point into the `Vec`s of the same value, never written after it is built.
unsafe impl Send for Exported {}
// SAFETY: as above.
unsafe impl Sync for Exported {}

/// Builds the table of a handler library once (the body of the `pjrt_ffi_library` that
/// [`export_ffi_handlers!`](crate::export_ffi_handlers) writes). NULL when `handlers` panics or
/// names more than [`MAX_ENTRIES`] handlers.
#[doc(hidden)]
pub fn export(handlers: fn() -> Vec<(String, Handler)>) -> *const FfiLibraryTable {
    static EXPORTED: OnceLock<Option<Exported>> = OnceLock::new();
    let exported = EXPORTED.get_or_init(|| {
        let list = crate::call::panic::catch(handlers).ok()?;
        if list.len() > MAX_ENTRIES {
            return None;
        }
        let mut names = Vec::new();
        let mut entries = Vec::new();
        for (target, handler) in list {
            let entry = trampoline::claim(handler.inner.clone())?;
            names.push(target);
            entries.push(FfiLibraryEntry {
                struct_size: std::mem::size_of::<FfiLibraryEntry>(),
                target: std::ptr::null(),
                target_len: 0,
                handler: Some(entry),
            });
        }
        for (entry, name) in entries.iter_mut().zip(&names) {
            entry.target = name.as_ptr().cast();
            entry.target_len = name.len();
        }
        let table = FfiLibraryTable {
            struct_size: std::mem::size_of::<FfiLibraryTable>(),
            abi_version: ABI_VERSION,
            count: entries.len(),
            entries: entries.as_ptr(),
        };
        Some(Exported { table, _entries: entries, _names: names })
    });
    exported.as_ref().map_or(std::ptr::null(), |e| &e.table)
}

/// Exports handlers from a `cdylib` for [`FfiLibrary::load`] (and `pjrt run --ffi-library`):
/// give it a function returning `(target name, Handler)` pairs. It defines the C function
/// `pjrt_ffi_library`.
///
/// ```
/// use pjrt_client::ffi::{Call, Handler, Rank, Signature};
///
/// fn handlers() -> Vec<(String, Handler)> {
///     let negate = Handler::new("negate", Signature::new().arg::<f32>(Rank::Any).ret::<f32>(Rank::Any), |call: &Call| {
///         let x = call.arg::<f32>(0)?;
///         call.ret::<f32>(0)?.copy_from_iter(x.as_slice().iter().map(|v| -v));
///         Ok(())
///     });
///     vec![("my_negate".to_owned(), negate)]
/// }
/// pjrt_client::export_ffi_handlers!(handlers);
/// ```
#[macro_export]
macro_rules! export_ffi_handlers {
    ($handlers:path) => {
        /// The handler table of this library (see `pjrt_client::ffi::FfiLibrary`).
        #[no_mangle]
        pub extern "C" fn pjrt_ffi_library() -> *const $crate::ffi::FfiLibraryTable {
            $crate::ffi::library::export($handlers)
        }
    };
}

/// A loaded handler library: its target names and entry points, checked. The library is never
/// unloaded (its handlers may be registered with a plugin, whose registry is permanent).
///
/// ```no_run
/// use pjrt_client::ffi::FfiLibrary;
/// use pjrt_client::{Client, ClientOptions, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// // Built with `cargo build -p pjrt-ffi-example-handlers` (examples/ffi-handlers).
/// // SAFETY: a library made with `export_ffi_handlers!`, trusted to run here.
/// let library = unsafe { FfiLibrary::load("target/debug/libpjrt_ffi_example_handlers.so") }?;
/// assert_eq!(library.targets().collect::<Vec<_>>(), ["pjrt_tutorial_scale_shift"]);
/// library.register(&client)?;
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Debug)]
pub struct FfiLibrary {
    path: PathBuf,
    entries: Vec<(String, usize)>,
}

impl FfiLibrary {
    /// Loads the library at `path` and reads its table (by its `struct_size`s; refused when its
    /// ABI version is not [`ABI_VERSION`], a count is above [`MAX_ENTRIES`], a name is not
    /// UTF-8 or a pointer is NULL).
    ///
    /// # Safety
    /// Loading a library runs its initialisers and `pjrt_ffi_library`: `path` must be a library
    /// made with [`export_ffi_handlers!`](crate::export_ffi_handlers) (or one that keeps its ABI)
    /// whose code may run in this process.
    pub unsafe fn load(path: impl AsRef<Path>) -> Result<FfiLibrary> {
        let path = path.as_ref().to_path_buf();
        let bad = |why: String| Error::InvalidArgument(format!("the FFI handler library {}: {why}", path.display()));
        // SAFETY: the caller's contract.
        let library = unsafe { libloading::Library::new(&path) }.map_err(|e| bad(format!("cannot load it: {e}")))?;
        let library = std::mem::ManuallyDrop::new(library);
        type GetTable = unsafe extern "C" fn() -> *const FfiLibraryTable;
        // SAFETY: the symbol has this type in libraries made with `export_ffi_handlers!`.
        let get: GetTable = unsafe {
            *library.get::<GetTable>(b"pjrt_ffi_library\0").map_err(|_| {
                bad(format!("it exports no `{SYMBOL}` (build it with pjrt_client::export_ffi_handlers!)"))
            })?
        };
        // SAFETY: the caller's contract.
        let table = unsafe { get() };
        if table.is_null() {
            return Err(bad(format!("its `{SYMBOL}` returned NULL (its handler list panicked or was too long)")));
        }
        if (table as usize) % std::mem::align_of::<FfiLibraryTable>() != 0 {
            return Err(bad("its table is misaligned".into()));
        }
        // SAFETY: a non-NULL, aligned table; its size is read first.
        let size = unsafe { table.cast::<usize>().read() };
        if size < std::mem::size_of::<FfiLibraryTable>() {
            return Err(bad(format!(
                "its table is {size} bytes, fewer than {}",
                std::mem::size_of::<FfiLibraryTable>()
            )));
        }
        // SAFETY: the table is at least as large as read.
        let table = unsafe { table.read() };
        if table.abi_version != ABI_VERSION {
            return Err(bad(format!(
                "its table has ABI version {}, this program reads {ABI_VERSION}",
                table.abi_version
            )));
        }
        if table.count > MAX_ENTRIES {
            return Err(bad(format!("it lists {} handlers, more than {MAX_ENTRIES}", table.count)));
        }
        let mut entries = Vec::with_capacity(table.count);
        for i in 0..table.count {
            // SAFETY: `entries` has `count` entries (the library's ABI); each starts with its size.
            let entry_ptr = unsafe { table.entries.add(i) };
            if table.entries.is_null() || (entry_ptr as usize) % std::mem::align_of::<FfiLibraryEntry>() != 0 {
                return Err(bad("its entries are NULL or misaligned".into()));
            }
            // SAFETY: as above.
            let entry_size = unsafe { entry_ptr.cast::<usize>().read() };
            if entry_size < std::mem::size_of::<FfiLibraryEntry>() {
                return Err(bad(format!("entry {i} is {entry_size} bytes")));
            }
            // SAFETY: the entry is at least as large as read.
            let entry = unsafe { entry_ptr.read() };
            let Some(handler) = entry.handler else { return Err(bad(format!("entry {i} has a NULL handler"))) };
            if entry.target.is_null() || entry.target_len == 0 || entry.target_len > 1024 {
                return Err(bad(format!("entry {i} has no target name")));
            }
            // SAFETY: `target_len` bytes at `target` (the ABI), bounded above.
            let name = unsafe { std::slice::from_raw_parts(entry.target.cast::<u8>(), entry.target_len) };
            let name = std::str::from_utf8(name).map_err(|_| bad(format!("entry {i}'s target name is not UTF-8")))?;
            entries.push((name.to_owned(), handler as usize));
        }
        Ok(FfiLibrary { path, entries })
    }

    /// The library's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The target names, in the library's order.
    pub fn targets(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(t, _)| t.as_str())
    }

    /// Registers every handler on the client's plugin for the client's platform, as
    /// [`super::register`] does (once per plugin, proven by probe programs).
    pub fn register(&self, client: &Client) -> Result<()> {
        let platform = xla_platform(client.platform_name());
        for (target, handler) in &self.entries {
            // SAFETY: the address came from the library's table as an `XLA_FFI_Handler`, and the
            // library is never unloaded.
            let entry: x::XLA_FFI_Handler = unsafe { std::mem::transmute::<usize, x::XLA_FFI_Handler>(*handler) };
            register_entry(client, target, &platform, Identity::Library(*handler, self.path.clone()), false, entry)?;
        }
        Ok(())
    }
}
