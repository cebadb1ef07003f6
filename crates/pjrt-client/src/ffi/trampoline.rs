//! The C entry points XLA calls. An `XLA_FFI_Handler` is a bare function pointer (no user data),
//! so each registered handler gets one of [`MAX_HANDLERS`] distinct entry points, each reading
//! its own slot. A slot is claimed once and never freed (the plugin's registry is permanent).

use std::ffi::CString;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::sys::xla_ffi as x;
use crate::sys::Args as _;

use super::call::FfiError;
use super::decode;
use super::handler::{Handler, HandlerInner, Outcome};

/// The most handlers one process can register through `pjrt_client::ffi`.
pub const MAX_HANDLERS: usize = 128;

struct Slot {
    handler: Arc<HandlerInner>,
}

static SLOTS: [OnceLock<Slot>; MAX_HANDLERS] = [const { OnceLock::new() }; MAX_HANDLERS];
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Claims a free slot for `handler`; its entry point.
pub(crate) fn claim(handler: Arc<HandlerInner>) -> Option<x::XLA_FFI_Handler> {
    let index = NEXT.fetch_add(1, Ordering::SeqCst);
    if index >= MAX_HANDLERS {
        NEXT.store(MAX_HANDLERS, Ordering::SeqCst);
        return None;
    }
    SLOTS[index].set(Slot { handler }).ok()?;
    Some(ENTRIES[index])
}

impl Handler {
    /// A C entry point (`XLA_FFI_Handler`) for this handler, for registering it by other means
    /// than [`register`](super::register) (another runtime's registry, a test that builds frames). Each call
    /// claims one of the process's [`MAX_HANDLERS`] entry points, for good; `None` when none is
    /// left.
    ///
    /// ```
    /// use pjrt_client::ffi::{Call, Handler, Signature};
    /// let handler = Handler::new("t", Signature::new(), |_: &Call| Ok(()));
    /// let entry = handler.entry_point().expect("a free entry point");
    /// // SAFETY: NULL is a frame the entry point accepts (it refuses it; with no API to report
    /// // through, it returns no error object).
    /// assert!(unsafe { entry(std::ptr::null_mut()) }.is_null());
    /// ```
    pub fn entry_point(&self) -> Option<x::XLA_FFI_Handler> {
        claim(self.inner.clone())
    }
}

unsafe extern "C" fn entry<const I: usize>(frame: *mut x::XLA_FFI_CallFrame) -> *mut x::XLA_FFI_Error {
    // Nothing below unwinds (user code and decoding run under `catch`); this is the last guard.
    crate::call::panic::catch(|| {
        // SAFETY: XLA calls handlers with a call frame as its FFI ABI describes.
        unsafe { dispatch(I, frame) }
    })
    .unwrap_or(null_mut())
}

macro_rules! entries {
    ($($i:literal)+) => { [$(entry::<$i> as x::XLA_FFI_Handler),+] };
}

static ENTRIES: [x::XLA_FFI_Handler; MAX_HANDLERS] = entries!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);

/// # Safety
/// `frame` as [`super::Handler::call_frame`] requires.
unsafe fn dispatch(index: usize, frame: *mut x::XLA_FFI_CallFrame) -> *mut x::XLA_FFI_Error {
    let Some(slot) = SLOTS[index].get() else { return null_mut() };
    // Only the frame's own API is used (an API pointer of an earlier frame is not kept: nothing
    // says it outlives that call).
    // SAFETY: the frame as XLA builds it.
    let api = unsafe { decode::frame_api(frame) };
    // SAFETY: the frame as XLA builds it.
    match unsafe { slot.handler.run(frame) } {
        Outcome::Done => null_mut(),
        // A frame without a usable API (none, too short, or of another major version; XLA always
        // passes its own): the error cannot be reported. The user's function did not run and no
        // result was written; NULL is all that can be returned.
        Outcome::Failed(error) => match api {
            // SAFETY: `api` passed `frame_api`: a table of major version 0 holding
            // `XLA_FFI_Error_Create`.
            Some(api) => unsafe { create_error(api, &error) },
            None => null_mut(),
        },
    }
}

/// Makes an XLA FFI error with the API's `XLA_FFI_Error_Create` (XLA takes ownership).
///
/// # Safety
/// `api` is an `XLA_FFI_Api` of major version 0 whose `struct_size` covers `error_destroy`.
pub(crate) unsafe fn create_error(api: *const x::XLA_FFI_Api, error: &FfiError) -> *mut x::XLA_FFI_Error {
    // SAFETY: the table covers the field (the caller's contract).
    let slot =
        unsafe { api.cast::<u8>().add(x::XLA_FFI_Api::ERROR_CREATE_OFFSET).cast::<Option<x::XLA_FFI_Error_Create>>() };
    // SAFETY: inside the table (the caller's contract), aligned (the table is, and the offset is 48).
    let Some(create) = (unsafe { slot.read() }) else { return null_mut() };
    let message = CString::new(error.message.replace('\0', "\\0")).unwrap_or_default();
    let mut args = x::XLA_FFI_Error_Create_Args::new();
    args.message = message.as_ptr();
    args.errc = x::XLA_FFI_Error_Code(error.code.to_raw().0);
    // SAFETY: args built with `Args::new` (28 bytes); the message outlives the call (XLA copies
    // it into its status).
    unsafe { create(&mut args) }
}
