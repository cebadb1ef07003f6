//! The one checked path through which every PJRT function is called.
//!
//! [`pjrt_call!`] checks that the slot lies inside the plugin's table (`PJRT_Api.struct_size`),
//! that the plugin's API version is new enough and that the pointer is non-NULL; only then does it
//! call. A returned `PJRT_Error` becomes [`Error::Pjrt`] and is always destroyed.

pub(crate) mod handoff;
pub(crate) mod named_value;
pub(crate) mod panic;
pub(crate) mod release;
pub(crate) mod trace;

use std::ffi::c_char;
use std::ptr::NonNull;

use crate::error::{Error, ErrorCode, Result};
use crate::sys::{self, Args};

/// A PJRT API version, `major.minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion {
    /// Always 0 so far.
    pub major: i32,
    /// Grows with every API change.
    pub minor: i32,
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The minor version from which slot positions are stable (0.57 "rearranged fields").
pub(crate) const STABLE_LAYOUT_MINOR: i32 = 57;
/// Slots 0..100 have the same positions before 0.57 as after.
const SLOTS_STABLE_BEFORE_57: usize = 100;

/// Byte offset of `pjrt_api_version.major_version` in `PJRT_Api` (minor follows at +4).
const MAJOR_VERSION_OFFSET: usize = 32;

/// A plugin's function table, validated at load.
///
/// The table is only ever read by byte offset, each read checked to lie inside the plugin's
/// `struct_size` ([`Api::read_slot`]): our `sys::PJRT_Api` describes the newest table this
/// crate knows, and an older plugin's table is shorter (0.106: 1128 bytes, not 1144), so not
/// even a place of that type is formed over it.
pub(crate) struct Api {
    raw: NonNull<sys::PJRT_Api>,
    /// Number of slots this crate may read: bounded by the plugin's `struct_size`.
    usable_slots: usize,
    version: ApiVersion,
}

// SAFETY: the table is immutable static data inside the plugin, which is never unloaded; reading
// it from any thread is fine. Whether calls are thread-safe is a property of each PJRT object and
// is decided on the safe types.
unsafe impl Send for Api {}
// SAFETY: as above; `Api` has no interior mutability.
unsafe impl Sync for Api {}

impl Api {
    /// Reads and checks the header of a table returned by `GetPjrtApi`.
    ///
    /// # Safety
    /// `raw` must point to a `PJRT_Api` whose header (40 bytes) is readable and which stays valid
    /// for the life of the process.
    pub(crate) unsafe fn new(raw: NonNull<sys::PJRT_Api>) -> Result<Self, crate::error::LoadError> {
        use crate::error::LoadError;
        let base = raw.as_ptr() as *const u8;
        // SAFETY: the caller guarantees a readable `struct_size` at offset 0. Read by byte
        // offset: the plugin's table may be shorter than our `PJRT_Api`, so no place of that
        // type is ever formed.
        let struct_size = unsafe { base.cast::<usize>().read_unaligned() };
        // The header (40 bytes) and the error functions (slots 0..3) must exist before anything
        // else is read: every error path depends on them.
        let min = sys::FIRST_SLOT_OFFSET + 8 * 3;
        if struct_size < min {
            return Err(LoadError::TableTooSmall { struct_size, min });
        }
        // SAFETY: the table is at least `min` bytes, so the version fields (offsets 32 and 36) lie
        // inside it.
        let (major, minor) = unsafe {
            (
                base.add(MAJOR_VERSION_OFFSET).cast::<i32>().read_unaligned(),
                base.add(MAJOR_VERSION_OFFSET + 4).cast::<i32>().read_unaligned(),
            )
        };
        if major != 0 {
            return Err(LoadError::IncompatibleVersion {
                major,
                minor,
                reason: "only major version 0 exists; a different major version has an unknown layout",
            });
        }
        if minor == 56 {
            return Err(LoadError::IncompatibleVersion {
                major,
                minor,
                reason: "0.56 had no ABI stability (its function table layout was changed in 0.57)",
            });
        }
        let mut usable_slots = (struct_size - sys::FIRST_SLOT_OFFSET) / 8;
        if minor < STABLE_LAYOUT_MINOR {
            usable_slots = usable_slots.min(SLOTS_STABLE_BEFORE_57);
        }
        Ok(Self { raw, usable_slots, version: ApiVersion { major, minor } })
    }

    pub(crate) fn raw(&self) -> *const sys::PJRT_Api {
        self.raw.as_ptr()
    }

    /// Reads the slot at byte `offset` of the table, if it lies inside the plugin's
    /// `struct_size` and the plugin's version has it (`None` otherwise, and for a NULL slot).
    ///
    /// `_field` is never called: it only names the slot's type (`|api| &api.PJRT_Client_Create`),
    /// so the type read is the declared one; `offset` must be that field's offset
    /// ([`pjrt_call!`] passes `offset_of!` of the same field).
    #[inline]
    pub(crate) fn read_slot<F: Copy>(
        &self,
        offset: usize,
        _field: impl FnOnce(&sys::PJRT_Api) -> &Option<F>,
    ) -> Option<F> {
        if !self.slot_in_table(offset) {
            return None;
        }
        // SAFETY: `slot_in_table` checked `offset + 8 <= struct_size`, i.e. the 8 bytes lie in
        // the plugin's own table (static data, never freed); a slot is an `Option` of a function
        // pointer (pointer-sized, NULL = None), read unaligned as the plugin's struct layout is
        // only promised by its header.
        unsafe { (self.raw.as_ptr() as *const u8).add(offset).cast::<Option<F>>().read_unaligned() }
    }

    pub(crate) fn version(&self) -> ApiVersion {
        self.version
    }

    /// Number of slots the plugin's table holds (as far as this crate will read).
    pub(crate) fn usable_slots(&self) -> usize {
        self.usable_slots
    }

    /// Whether the slot at `offset` may be read: inside the table, and not newer than the
    /// plugin's version.
    #[inline]
    pub(crate) fn slot_in_table(&self, offset: usize) -> bool {
        if offset < sys::FIRST_SLOT_OFFSET || (offset - sys::FIRST_SLOT_OFFSET) % 8 != 0 {
            return false;
        }
        let index = (offset - sys::FIRST_SLOT_OFFSET) / 8;
        index < self.usable_slots && sys::SLOTS[index].since_minor <= self.version.minor
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn unsupported(&self, offset: usize) -> Error {
        let slot = &sys::SLOTS[(offset - sys::FIRST_SLOT_OFFSET) / 8];
        Error::Unsupported {
            function: slot.name,
            since_minor: slot.since_minor,
            plugin_major: self.version.major,
            plugin_minor: self.version.minor,
        }
    }

    /// An error for a feature that exists only from `since_minor` on.
    #[cold]
    pub(crate) fn unsupported_feature(&self, feature: &'static str, since_minor: i32) -> Error {
        Error::Unsupported {
            function: feature,
            since_minor,
            plugin_major: self.version.major,
            plugin_minor: self.version.minor,
        }
    }

    /// Converts a returned `PJRT_Error*` into a `Result`, destroying the error.
    #[inline]
    pub(crate) fn check(&self, error: *mut sys::PJRT_Error, function: &'static str) -> Result<()> {
        if error.is_null() {
            Ok(())
        } else {
            Err(self.take_error(error, function))
        }
    }

    /// Reads code and message of a non-NULL `PJRT_Error*` and destroys it.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_error(&self, error: *mut sys::PJRT_Error, function: &'static str) -> Error {
        let guard = ErrorGuard { api: self, error };
        let (code, message) = guard.read();
        let payloads = guard.payloads();
        drop(guard);
        Error::Pjrt { function, code, message, payloads }
    }
}

/// Destroys a `PJRT_Error` when dropped, so it is freed on every path.
struct ErrorGuard<'a> {
    api: &'a Api,
    error: *mut sys::PJRT_Error,
}

impl ErrorGuard<'_> {
    fn read(&self) -> (ErrorCode, String) {
        let api = self.api;
        let get_code = api.read_slot(ERROR_GET_CODE, |t| &t.PJRT_Error_GetCode);
        let get_message = api.read_slot(ERROR_MESSAGE, |t| &t.PJRT_Error_Message);
        // SAFETY: the functions are the plugin's own (slots checked to exist at load,
        // `Api::new`); the error pointer came from the plugin and is still alive (destroyed
        // only in Drop); the args are built with `Args::new`.
        unsafe {
            let mut code_args = sys::PJRT_Error_GetCode_Args::new();
            code_args.error = self.error;
            let mut code = ErrorCode::Unknown;
            if let Some(get_code) = get_code {
                let nested = get_code(&mut code_args);
                if nested.is_null() {
                    code = ErrorCode::from_raw(code_args.code);
                } else {
                    // An error while reading an error: free it and keep UNKNOWN.
                    destroy_error(api, nested);
                }
            }
            let mut msg_args = sys::PJRT_Error_Message_Args::new();
            msg_args.error = self.error;
            let mut message = String::new();
            if let Some(get_message) = get_message {
                get_message(&mut msg_args);
                message = string_from_raw(msg_args.message, msg_args.message_size);
            }
            (code, message)
        }
    }

    /// The error's payloads (`PJRT_Error_ForEachPayload`, 0.99); none when the plugin predates
    /// the slot or the call fails (a failure is destroyed here, never reported: this runs while
    /// reporting another error).
    fn payloads(&self) -> Vec<(String, Vec<u8>)> {
        const OFFSET: usize = std::mem::offset_of!(sys::PJRT_Api, PJRT_Error_ForEachPayload);
        let mut payloads: Vec<(String, Vec<u8>)> = Vec::new();
        let Some(for_each) = self.api.read_slot(OFFSET, |t| &t.PJRT_Error_ForEachPayload) else {
            return payloads;
        };
        // SAFETY: the plugin's own function (slot checked above). The visitor only runs during
        // the call, while `payloads` is alive and borrowed by nothing else; it never unwinds
        // (see `payload_visitor`).
        unsafe {
            let mut args = sys::PJRT_Error_ForEachPayload_Args::new();
            args.error = self.error;
            args.visitor = Some(payload_visitor);
            args.user_arg = (&mut payloads as *mut Vec<(String, Vec<u8>)>).cast();
            let nested = for_each(&mut args);
            if !nested.is_null() {
                destroy_error(self.api, nested);
                payloads.clear();
            }
        }
        payloads
    }
}

/// Collects one payload of an error into the `Vec` behind `user_arg`.
unsafe extern "C" fn payload_visitor(
    key: *const c_char,
    key_size: usize,
    value: *const c_char,
    value_size: usize,
    user_arg: *mut std::ffi::c_void,
) {
    panic::no_unwind(|| {
        // SAFETY: `user_arg` is the `Vec` passed by `ErrorGuard::payloads`, alive for the call;
        // key and value are readable for their sizes during this call (the visitor contract).
        unsafe {
            let payloads = &mut *(user_arg as *mut Vec<(String, Vec<u8>)>);
            let key = string_from_raw(key, key_size);
            let value = slice_from_raw(value as *const u8, value_size).to_vec();
            payloads.push((key, value));
        }
    });
}

impl Drop for ErrorGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the error came from the plugin and is destroyed exactly once, here.
        unsafe { destroy_error(self.api, self.error) };
    }
}

const ERROR_DESTROY: usize = std::mem::offset_of!(sys::PJRT_Api, PJRT_Error_Destroy);
const ERROR_MESSAGE: usize = std::mem::offset_of!(sys::PJRT_Api, PJRT_Error_Message);
const ERROR_GET_CODE: usize = std::mem::offset_of!(sys::PJRT_Api, PJRT_Error_GetCode);

/// Frees a `PJRT_Error` with the plugin's `PJRT_Error_Destroy` (slot 0, checked at load).
///
/// # Safety
/// `error` must be a live error of this plugin, not destroyed before or after.
unsafe fn destroy_error(api: &Api, error: *mut sys::PJRT_Error) {
    if let Some(destroy) = api.read_slot(ERROR_DESTROY, |t| &t.PJRT_Error_Destroy) {
        let mut args = sys::PJRT_Error_Destroy_Args::new();
        args.error = error;
        // SAFETY: the plugin's own function; the caller guarantees the error.
        unsafe { destroy(&mut args) };
    }
}

/// Whether `ptr`/`len` can be read as a slice at all: aligned, and at most `isize::MAX` bytes (the
/// preconditions of `slice::from_raw_parts` that do not depend on what the memory holds).
fn sliceable<T>(ptr: *const T, len: usize) -> bool {
    ptr.is_aligned() && len.checked_mul(std::mem::size_of::<T>()).is_some_and(|bytes| bytes <= isize::MAX as usize)
}

/// A `bool` the plugin wrote (an args field, a named value), read as its byte: nonzero is
/// true. To C code a `bool` is a byte that a careless plugin may leave at 2 or 0xff, and a Rust
/// `bool` other than 0 or 1 is undefined behaviour, so such a field is never read as `bool`.
///
/// # Safety
/// `field` must point to an initialised, readable byte.
pub(crate) unsafe fn plugin_bool(field: *const bool) -> bool {
    // SAFETY: the caller's contract; every byte is a valid `u8`.
    unsafe { field.cast::<u8>().read() != 0 }
}

/// Copies a (pointer, length) string returned by the plugin. Invalid UTF-8 is replaced; a pair
/// that cannot describe a string (NULL, or longer than any allocation) gives an empty string.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes.
pub(crate) unsafe fn string_from_raw(ptr: *const c_char, len: usize) -> String {
    if ptr.is_null() || len == 0 || !sliceable(ptr, len) {
        return String::new();
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// A slice from a (pointer, count) pair returned by the plugin; empty when NULL, misaligned or
/// larger than any allocation.
///
/// # Safety
/// `ptr` must be NULL or point to `len` valid, initialised values that outlive `'a`.
pub(crate) unsafe fn slice_from_raw<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 || !sliceable(ptr, len) {
        &[]
    } else {
        // SAFETY: guaranteed by the caller; alignment and size checked above.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// Like [`slice_from_raw`], for an array `function` returned as its output `what`, but a pair that
/// cannot describe an array (NULL with a non-zero count, misaligned, more bytes than an allocation
/// can hold) is an error rather than an empty slice. A count that is merely larger than the array
/// behind a valid pointer cannot be detected.
///
/// # Safety
/// `ptr` must be NULL or point to `len` valid, initialised values that outlive `'a`.
pub(crate) unsafe fn checked_slice<'a, T>(
    ptr: *const T,
    len: usize,
    function: &'static str,
    what: &str,
) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() || !sliceable(ptr, len) {
        return Err(bad_output(function, what, ptr, len));
    }
    // SAFETY: guaranteed by the caller; alignment and size checked above.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Like [`string_from_raw`], for a string `function` returned as its output `what`; NULL with a
/// non-zero length, or a length larger than any allocation, is an error.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes.
pub(crate) unsafe fn checked_string(
    ptr: *const c_char,
    len: usize,
    function: &'static str,
    what: &str,
) -> Result<String> {
    // SAFETY: the caller's guarantee.
    let bytes = unsafe { checked_slice(ptr as *const u8, len, function, what) }?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

#[cold]
fn bad_output<T>(function: &'static str, what: &str, ptr: *const T, len: usize) -> Error {
    if ptr.is_null() {
        Error::invalid(format!("{function} returned a count of {len} for {what} but no array (NULL)"))
    } else {
        Error::invalid(format!(
            "{function} returned a count of {len} for {what} at {ptr:p}: misaligned, or more than any array can hold"
        ))
    }
}

/// Calls one slot of the plugin's table through the checks described in this module.
///
/// `pjrt_call!(api, PJRT_Client_Create, &mut args)` evaluates to `Result<()>`; the args are
/// filled by the plugin on success.
macro_rules! pjrt_call {
    ($api:expr, $slot:ident, $args:expr) => {{
        let api: &$crate::call::Api = $api;
        const OFFSET: usize = ::core::mem::offset_of!($crate::sys::PJRT_Api, $slot);
        // Read by byte offset, only inside the plugin's table (see `Api::read_slot`).
        match api.read_slot(OFFSET, |table| &table.$slot) {
            // SAFETY: the args struct was built with `Args::new` (right struct_size, zeroed)
            // and every pointer in it is valid for the duration of the call; see each caller.
            Some(function) => api.check(unsafe { function($args) }, stringify!($slot)),
            None => Err(api.unsupported(OFFSET)),
        }
    }};
}
pub(crate) use pjrt_call;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    //! The table is read only inside the plugin's `struct_size`: a 0.106-sized table (136
    //! slots, 1128 bytes) placed so that it ends where an unreadable page begins; any read past
    //! it would fault.

    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    extern "C" {
        fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut c_void;
        fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
        fn sysconf(name: i32) -> i64;
    }
    const PROT_NONE: i32 = 0;
    const PROT_READ_WRITE: i32 = 1 | 2;
    const MAP_PRIVATE_ANONYMOUS: i32 = 0x02 | 0x20;
    const SC_PAGESIZE: i32 = 30;

    static CLEARS: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn destroy(_: *mut sys::PJRT_Error_Destroy_Args) {}
    unsafe extern "C" fn message(_: *mut sys::PJRT_Error_Message_Args) {}
    unsafe extern "C" fn code(_: *mut sys::PJRT_Error_GetCode_Args) -> *mut sys::PJRT_Error {
        std::ptr::null_mut()
    }
    unsafe extern "C" fn clear(_: *mut sys::PJRT_Device_ClearMemoryStats_Args) -> *mut sys::PJRT_Error {
        CLEARS.fetch_add(1, Ordering::SeqCst);
        std::ptr::null_mut()
    }

    /// A 0.106 table of `slots` slots whose last byte is followed by a PROT_NONE page (leaked).
    fn table_before_guard_page(slots: usize) -> NonNull<sys::PJRT_Api> {
        // SAFETY: plain libc calls on memory mapped here and never unmapped.
        unsafe {
            let page = sysconf(SC_PAGESIZE) as usize;
            let map = mmap(std::ptr::null_mut(), 2 * page, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0);
            assert!(!map.is_null() && map as isize != -1, "mmap failed");
            let guard = (map as *mut u8).add(page);
            assert_eq!(mprotect(guard.cast(), page, PROT_NONE), 0, "mprotect failed");
            let size = sys::FIRST_SLOT_OFFSET + 8 * slots;
            let base = guard.sub(size);
            let words = base.cast::<usize>();
            words.write(size); // struct_size
            words.add(1).write(0); // extension_start
            words.add(2).write(24); // pjrt_api_version.struct_size
            words.add(3).write(0); // pjrt_api_version.extension_start
            base.add(32).cast::<i32>().write(0); // major
            base.add(36).cast::<i32>().write(106); // minor
            let slot = |i: usize| base.add(sys::FIRST_SLOT_OFFSET + 8 * i).cast::<usize>();
            for i in 0..slots {
                slot(i).write(0);
            }
            slot(0).write(destroy as *const () as usize);
            slot(1).write(message as *const () as usize);
            slot(2).write(code as *const () as usize);
            if slots > 135 {
                slot(135).write(clear as *const () as usize);
            }
            NonNull::new(base.cast()).unwrap()
        }
    }

    #[test]
    fn slots_are_read_only_inside_the_plugins_table() {
        let raw = table_before_guard_page(136);
        // SAFETY: a readable 1128-byte table that lives forever.
        let api = unsafe { Api::new(raw) }.unwrap();
        assert_eq!((api.usable_slots(), api.version().minor), (136, 106));
        // The last slot, in the table's last 8 bytes, is read and called.
        let mut args = sys::PJRT_Device_ClearMemoryStats_Args::new();
        pjrt_call!(&api, PJRT_Device_ClearMemoryStats, &mut args).unwrap();
        assert_eq!(CLEARS.load(Ordering::SeqCst), 1);
        // Slots past the table (136, 137) would lie on the unreadable page: refused, not read.
        let mut kinds = sys::PJRT_TopologyDescription_GetMemorySpaceKindIds_Args::new();
        let refused = pjrt_call!(&api, PJRT_TopologyDescription_GetMemorySpaceKindIds, &mut kinds);
        assert!(matches!(refused, Err(Error::Unsupported { since_minor: 110, plugin_minor: 106, .. })));
        let mut shape = sys::PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args::new();
        let refused = pjrt_call!(&api, PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace, &mut shape);
        assert!(matches!(refused, Err(Error::Unsupported { .. })));
        // A NULL slot inside the table is refused too.
        let mut create = sys::PJRT_Client_Create_Args::new();
        assert!(matches!(pjrt_call!(&api, PJRT_Client_Create, &mut create), Err(Error::Unsupported { .. })));
        // Offsets that are not a slot are never read.
        assert!(!api.slot_in_table(0) && !api.slot_in_table(36) && !api.slot_in_table(41));
    }

    #[test]
    fn a_table_of_only_the_header_and_error_slots_loads() {
        let raw = table_before_guard_page(3);
        // SAFETY: a readable 64-byte table that lives forever.
        let api = unsafe { Api::new(raw) }.unwrap();
        assert_eq!(api.usable_slots(), 3);
        let mut init = sys::PJRT_Plugin_Initialize_Args::new();
        assert!(matches!(pjrt_call!(&api, PJRT_Plugin_Initialize, &mut init), Err(Error::Unsupported { .. })));
    }
}
