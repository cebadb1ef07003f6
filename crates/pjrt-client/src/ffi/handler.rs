//! A Rust function as an XLA FFI handler ([`Handler`]): running it on a call frame, and
//! answering XLA's metadata query.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

use crate::sys::xla_ffi as x;

use super::call::{Call, FfiError};
use super::decode::{self, FrameError};
use super::signature::Signature;

type HandlerFn = dyn Fn(&Call<'_>) -> std::result::Result<(), FfiError> + Send + Sync;

pub(crate) struct HandlerInner {
    pub(super) name: String,
    signature: Signature,
    function: Box<HandlerFn>,
}

/// A Rust function as an XLA FFI handler: a [`Signature`] and a closure. Cheap to clone (clones
/// are the same handler for [`register`](super::register)). See the [module docs](super) for a complete example.
///
/// ```
/// use pjrt_client::ffi::{Call, Handler, Signature};
/// let noop = Handler::new("noop", Signature::new(), |_: &Call| Ok(()));
/// let same = noop.clone();
/// assert_eq!(same.name(), "noop");
/// assert_eq!(same.signature(), &Signature::new());
/// ```
#[derive(Clone)]
pub struct Handler {
    pub(super) inner: Arc<HandlerInner>,
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handler").field("name", &self.inner.name).field("signature", &self.inner.signature).finish()
    }
}

impl Handler {
    /// A handler named `name` (used in its error messages) taking `signature`, running
    /// `function` for every call (possibly on several threads at once).
    pub fn new<F>(name: &str, signature: Signature, function: F) -> Handler
    where
        F: Fn(&Call<'_>) -> std::result::Result<(), FfiError> + Send + Sync + 'static,
    {
        Handler { inner: Arc::new(HandlerInner { name: name.to_owned(), signature, function: Box::new(function) }) }
    }

    /// The name given to [`Handler::new`].
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The signature.
    pub fn signature(&self) -> &Signature {
        &self.inner.signature
    }

    /// Runs the handler on a call frame, as XLA would, and returns what it would return to XLA
    /// (`Ok` or the error); for tests of frames built by hand.
    ///
    /// ```
    /// use pjrt_client::ffi::{Call, Handler, Signature};
    /// let handler = Handler::new("t", Signature::new(), |_: &Call| Ok(()));
    /// // SAFETY: NULL is a frame this accepts (and refuses).
    /// let err = unsafe { handler.call_frame(std::ptr::null_mut()) }.unwrap_err();
    /// assert_eq!(err.message(), "handler `t`: the call frame is NULL");
    /// ```
    ///
    /// # Safety
    /// `frame` is NULL or a call frame as the XLA FFI ABI describes it: every non-NULL pointer
    /// in it points to what the ABI says, readable (results: writable) for the sizes its
    /// structs state.
    pub unsafe fn call_frame(&self, frame: *mut x::XLA_FFI_CallFrame) -> std::result::Result<(), FfiError> {
        // SAFETY: the caller's contract.
        match unsafe { self.inner.run(frame) } {
            Outcome::Done => Ok(()),
            Outcome::Failed(e) => Err(e),
        }
    }
}

pub(crate) enum Outcome {
    Done,
    Failed(FfiError),
}

impl HandlerInner {
    /// Decodes the frame, answers a metadata query or runs the function (panics caught).
    ///
    /// # Safety
    /// As [`Handler::call_frame`].
    pub(crate) unsafe fn run(&self, frame: *mut x::XLA_FFI_CallFrame) -> Outcome {
        let decoded = match crate::call::panic::catch(|| {
            // SAFETY: the caller's contract.
            unsafe { decode::decode(frame, &self.signature) }
        }) {
            Ok(Ok(decoded)) => decoded,
            Ok(Err(e)) => return Outcome::Failed(FfiError::invalid_argument(format!("handler `{}`: {e}", self.name))),
            Err(panic) => {
                return Outcome::Failed(FfiError::internal(format!(
                    "handler `{}`: decoding panicked: {panic}",
                    self.name
                )))
            }
        };
        match decoded {
            decode::Request::Metadata(metadata) => {
                // SAFETY: the caller's contract: the frame's api (if any) is a table.
                let theirs = unsafe { decode::frame_api(frame).and_then(|api| decode::api_version(api)) };
                // SAFETY: `metadata` is the non-NULL metadata struct of the frame's extension.
                match unsafe { answer_metadata(metadata, theirs) } {
                    Ok(()) => Outcome::Done,
                    Err(e) => Outcome::Failed(FfiError::invalid_argument(format!("handler `{}`: {e}", self.name))),
                }
            }
            decode::Request::Execute(decoded) => {
                let call = Call {
                    name: &self.name,
                    signature: &self.signature,
                    decoded: &decoded,
                    taken: (0..decoded.rets.len() + decoded.args.len()).map(|_| Cell::new(false)).collect(),
                };
                match crate::call::panic::catch(|| (self.function)(&call)) {
                    Ok(Ok(())) => Outcome::Done,
                    Ok(Err(e)) => {
                        Outcome::Failed(FfiError::new(e.code, format!("handler `{}`: {}", self.name, e.message)))
                    }
                    Err(panic) => {
                        Outcome::Failed(FfiError::internal(format!("handler `{}` panicked: {panic}", self.name)))
                    }
                }
            }
        }
    }
}

/// The FFI version a handler claims: min(ours, the frame's API version); ours when the frame
/// has no readable API.
pub(crate) fn claimed_version(theirs: Option<(i32, i32)>) -> (i32, i32) {
    let ours = (x::XLA_FFI_API_MAJOR, x::XLA_FFI_API_MINOR);
    match theirs {
        Some(theirs) if theirs < ours => theirs,
        _ => ours,
    }
}

/// # Safety
/// `metadata` is non-NULL and points to a writable `XLA_FFI_Metadata` of its `struct_size`.
unsafe fn answer_metadata(
    metadata: *mut x::XLA_FFI_Metadata,
    theirs: Option<(i32, i32)>,
) -> std::result::Result<(), FrameError> {
    use crate::sys::Args as _;
    if (metadata as usize) % std::mem::align_of::<x::XLA_FFI_Metadata>() != 0 {
        return Err(FrameError::Misaligned("the metadata".into()));
    }
    // SAFETY: non-NULL, aligned; the size first.
    let size = unsafe { metadata.cast::<usize>().read() };
    if size < x::XLA_FFI_Metadata::STRUCT_SIZE {
        return Err(FrameError::TooShort { what: "the metadata", size, expected: x::XLA_FFI_Metadata::STRUCT_SIZE });
    }
    let (major, minor) = claimed_version(theirs);
    // SAFETY: the struct holds the fields written (its size, checked); only the version numbers
    // and the traits are written, never the version's size or extension pointer.
    unsafe {
        // Byte offsets inside the checked size: no place of the whole (padded) struct is formed.
        use std::mem::offset_of;
        let bytes = metadata.cast::<u8>();
        let version = offset_of!(x::XLA_FFI_Metadata, api_version);
        bytes.add(version + offset_of!(x::XLA_FFI_Api_Version, major_version)).cast::<i32>().write(major);
        bytes.add(version + offset_of!(x::XLA_FFI_Api_Version, minor_version)).cast::<i32>().write(minor);
        bytes
            .add(offset_of!(x::XLA_FFI_Metadata, traits))
            .cast::<u32>()
            .write(x::XLA_FFI_Handler_TraitsBits::NONE.0 as u32);
    }
    Ok(())
}
