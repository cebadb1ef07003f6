//! The one checked path through which every PJRT function is called.
//!
//! [`pjrt_call!`] checks that the slot lies inside the plugin's table (`PJRT_Api.struct_size`),
//! that the plugin's API version is new enough and that the pointer is non-NULL; only then does it
//! call. A returned `PJRT_Error` becomes [`Error::Pjrt`] and is always destroyed.

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

/// A plugin's function table, validated at load.
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
        // SAFETY: the caller guarantees a readable `struct_size` at offset 0.
        let struct_size = unsafe { std::ptr::addr_of!((*raw.as_ptr()).struct_size).read() };
        // The header (40 bytes) and the error functions (slots 0..3) must exist before anything
        // else is read: every error path depends on them.
        let min = sys::FIRST_SLOT_OFFSET + 8 * 3;
        if struct_size < min {
            return Err(LoadError::TableTooSmall { struct_size, min });
        }
        // SAFETY: the table is at least `min` bytes, so the version fields (offsets 32 and 36) lie
        // inside it.
        let (major, minor) = unsafe {
            let p = raw.as_ptr();
            (
                std::ptr::addr_of!((*p).pjrt_api_version.major_version).read(),
                std::ptr::addr_of!((*p).pjrt_api_version.minor_version).read(),
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
        let index = (offset - sys::FIRST_SLOT_OFFSET) / 8;
        index < self.usable_slots && sys::SLOTS[index].since_minor <= self.version.minor
    }

    #[cold]
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
    pub(crate) fn take_error(&self, error: *mut sys::PJRT_Error, function: &'static str) -> Error {
        let guard = ErrorGuard { api: self, error };
        let (code, message) = guard.read();
        drop(guard);
        Error::Pjrt { function, code, message }
    }
}

/// Destroys a `PJRT_Error` when dropped, so it is freed on every path.
struct ErrorGuard<'a> {
    api: &'a Api,
    error: *mut sys::PJRT_Error,
}

impl ErrorGuard<'_> {
    fn read(&self) -> (ErrorCode, String) {
        let raw = self.api.raw();
        // SAFETY: slots 0..3 were checked to exist at load (`Api::new`); the error pointer came
        // from the plugin and is still alive (destroyed only in Drop).
        unsafe {
            let mut code_args = sys::PJRT_Error_GetCode_Args::new();
            code_args.error = self.error;
            let mut code = ErrorCode::Unknown;
            if let Some(get_code) = std::ptr::addr_of!((*raw).PJRT_Error_GetCode).read() {
                let nested = get_code(&mut code_args);
                if nested.is_null() {
                    code = ErrorCode::from_raw(code_args.code);
                } else if let Some(destroy) = std::ptr::addr_of!((*raw).PJRT_Error_Destroy).read() {
                    // An error while reading an error: free it and keep UNKNOWN.
                    let mut d = sys::PJRT_Error_Destroy_Args::new();
                    d.error = nested;
                    destroy(&mut d);
                }
            }
            let mut msg_args = sys::PJRT_Error_Message_Args::new();
            msg_args.error = self.error;
            let mut message = String::new();
            if let Some(get_message) = std::ptr::addr_of!((*raw).PJRT_Error_Message).read() {
                get_message(&mut msg_args);
                message = string_from_raw(msg_args.message, msg_args.message_size);
            }
            crate::error::append_payloads(&mut message, &self.payloads());
            (code, message)
        }
    }

    /// The error's payloads (`PJRT_Error_ForEachPayload`, 0.99); none when the plugin predates
    /// the slot or the call fails (a failure is destroyed here, never reported: this runs while
    /// reporting another error).
    fn payloads(&self) -> Vec<(String, Vec<u8>)> {
        const OFFSET: usize = std::mem::offset_of!(sys::PJRT_Api, PJRT_Error_ForEachPayload);
        let mut payloads: Vec<(String, Vec<u8>)> = Vec::new();
        if !self.api.slot_in_table(OFFSET) {
            return payloads;
        }
        let raw = self.api.raw();
        // SAFETY: the slot lies inside the table (checked above); slot 0 exists (checked at
        // load). The visitor only runs during the call, while `payloads` is alive and borrowed
        // by nothing else; it never unwinds (see `payload_visitor`).
        unsafe {
            let Some(for_each) = std::ptr::addr_of!((*raw).PJRT_Error_ForEachPayload).read() else {
                return payloads;
            };
            let mut args = sys::PJRT_Error_ForEachPayload_Args::new();
            args.error = self.error;
            args.visitor = Some(payload_visitor);
            args.user_arg = (&mut payloads as *mut Vec<(String, Vec<u8>)>).cast();
            let nested = for_each(&mut args);
            if !nested.is_null() {
                if let Some(destroy) = std::ptr::addr_of!((*raw).PJRT_Error_Destroy).read() {
                    let mut d = sys::PJRT_Error_Destroy_Args::new();
                    d.error = nested;
                    destroy(&mut d);
                }
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
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `user_arg` is the `Vec` passed by `ErrorGuard::payloads`, alive for the call;
        // key and value are readable for their sizes during this call (the visitor contract).
        unsafe {
            let payloads = &mut *(user_arg as *mut Vec<(String, Vec<u8>)>);
            let key = string_from_raw(key, key_size);
            let value = slice_from_raw(value as *const u8, value_size).to_vec();
            payloads.push((key, value));
        }
    }));
}

impl Drop for ErrorGuard<'_> {
    fn drop(&mut self) {
        let raw = self.api.raw();
        // SAFETY: slot 0 exists (checked at load); the error is destroyed exactly once, here.
        unsafe {
            if let Some(destroy) = std::ptr::addr_of!((*raw).PJRT_Error_Destroy).read() {
                let mut args = sys::PJRT_Error_Destroy_Args::new();
                args.error = self.error;
                destroy(&mut args);
            }
        }
    }
}

/// Whether `ptr`/`len` can be read as a slice at all: aligned, and at most `isize::MAX` bytes (the
/// preconditions of `slice::from_raw_parts` that do not depend on what the memory holds).
fn sliceable<T>(ptr: *const T, len: usize) -> bool {
    ptr.is_aligned() && len.checked_mul(std::mem::size_of::<T>()).is_some_and(|bytes| bytes <= isize::MAX as usize)
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
        let api: &$crate::api::Api = $api;
        const OFFSET: usize = ::core::mem::offset_of!($crate::sys::PJRT_Api, $slot);
        if api.slot_in_table(OFFSET) {
            // SAFETY: the slot lies inside the plugin's table (checked just above), so reading
            // the pointer reads the plugin's own static data.
            let function = unsafe { ::core::ptr::addr_of!((*api.raw()).$slot).read() };
            match function {
                // SAFETY: the args struct was built with `Args::new` (right struct_size, zeroed)
                // and every pointer in it is valid for the duration of the call; see each caller.
                Some(function) => api.check(unsafe { function($args) }, stringify!($slot)),
                None => Err(api.unsupported(OFFSET)),
            }
        } else {
            Err(api.unsupported(OFFSET))
        }
    }};
}
pub(crate) use pjrt_call;
