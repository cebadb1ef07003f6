//! The C types: the opaque handles, the options, the tensor and the signature, and the
//! constants (element types, status codes, the rank limit). Everything here is `#[repr(C)]` or
//! an integer: a value C hands in is never a Rust enum (an unknown number would be undefined
//! behaviour), it is checked.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

/// A runtime: one plugin, one client on it, the device models run on, the compile cache.
/// Opaque; made by `pjrt_runtime_new`, released by `pjrt_runtime_free`.
pub struct pjrt_runtime {
    _opaque: [u8; 0],
}

/// A model loaded on a runtime, its weights uploaded. Opaque; made by `pjrt_model_load`,
/// released by `pjrt_model_free`.
pub struct pjrt_model {
    _opaque: [u8; 0],
}

/// What went wrong: a code and a message. Opaque; every call that can fail returns one (NULL
/// when it succeeded), released by `pjrt_status_free`.
pub struct pjrt_status {
    _opaque: [u8; 0],
}

/// An element type: one of the `PJRT_DTYPE_*` values (the numbers of the PJRT C API's
/// `PJRT_Buffer_Type`).
pub type pjrt_dtype = i32;

/// `bool`, one byte per element: 0 or 1 (inputs holding other bytes are refused).
pub const PJRT_DTYPE_BOOL: pjrt_dtype = 1;
/// `int8_t`
pub const PJRT_DTYPE_S8: pjrt_dtype = 2;
/// `int16_t`
pub const PJRT_DTYPE_S16: pjrt_dtype = 3;
/// `int32_t`
pub const PJRT_DTYPE_S32: pjrt_dtype = 4;
/// `int64_t`
pub const PJRT_DTYPE_S64: pjrt_dtype = 5;
/// `uint8_t`
pub const PJRT_DTYPE_U8: pjrt_dtype = 6;
/// `uint16_t`
pub const PJRT_DTYPE_U16: pjrt_dtype = 7;
/// `uint32_t`
pub const PJRT_DTYPE_U32: pjrt_dtype = 8;
/// `uint64_t`
pub const PJRT_DTYPE_U64: pjrt_dtype = 9;
/// IEEE half precision, 2 bytes.
pub const PJRT_DTYPE_F16: pjrt_dtype = 10;
/// `float`
pub const PJRT_DTYPE_F32: pjrt_dtype = 11;
/// `double`
pub const PJRT_DTYPE_F64: pjrt_dtype = 12;
/// bfloat16, 2 bytes (the high half of a `float`).
pub const PJRT_DTYPE_BF16: pjrt_dtype = 13;
/// Complex of two `float`s (real, imaginary).
pub const PJRT_DTYPE_C64: pjrt_dtype = 14;
/// Complex of two `double`s (real, imaginary).
pub const PJRT_DTYPE_C128: pjrt_dtype = 15;

/// A status code: the numbers of absl's canonical codes (and of the PJRT C API's
/// `PJRT_Error_Code`).
pub type pjrt_code = i32;

/// Success (what `pjrt_status_code(NULL)` returns).
pub const PJRT_CODE_OK: pjrt_code = 0;
/// The call was cancelled.
pub const PJRT_CODE_CANCELLED: pjrt_code = 1;
/// An error of no other kind.
pub const PJRT_CODE_UNKNOWN: pjrt_code = 2;
/// The caller passed something wrong: a NULL pointer, a handle freed already, a tensor whose
/// type, rank, shape or size does not fit, a damaged model file.
pub const PJRT_CODE_INVALID_ARGUMENT: pjrt_code = 3;
/// A deadline passed.
pub const PJRT_CODE_DEADLINE_EXCEEDED: pjrt_code = 4;
/// A file or plugin that does not exist.
pub const PJRT_CODE_NOT_FOUND: pjrt_code = 5;
/// Something exists already.
pub const PJRT_CODE_ALREADY_EXISTS: pjrt_code = 6;
/// Not allowed.
pub const PJRT_CODE_PERMISSION_DENIED: pjrt_code = 7;
/// Out of memory, or another resource.
pub const PJRT_CODE_RESOURCE_EXHAUSTED: pjrt_code = 8;
/// The system is not in a state the call needs.
pub const PJRT_CODE_FAILED_PRECONDITION: pjrt_code = 9;
/// The call was aborted.
pub const PJRT_CODE_ABORTED: pjrt_code = 10;
/// An output buffer of the caller's is too small: the output's dtype, rank, dims and the bytes
/// it needs were written into its `pjrt_tensor`.
pub const PJRT_CODE_OUT_OF_RANGE: pjrt_code = 11;
/// Not supported (by the plugin, or by this build of the library).
pub const PJRT_CODE_UNIMPLEMENTED: pjrt_code = 12;
/// A bug, in this library or the plugin (a caught panic among them).
pub const PJRT_CODE_INTERNAL: pjrt_code = 13;
/// Not available now.
pub const PJRT_CODE_UNAVAILABLE: pjrt_code = 14;
/// Data lost or corrupted.
pub const PJRT_CODE_DATA_LOSS: pjrt_code = 15;
/// Not authenticated.
pub const PJRT_CODE_UNAUTHENTICATED: pjrt_code = 16;

/// The most dimensions a tensor has here (TensorRT's and cuDNN's limit too): `dims` is a fixed
/// array, so a tensor is one plain struct with nothing else to allocate or free.
pub const PJRT_MAX_NDIM: usize = 8;

/// A tensor in host memory: dense, row-major (C order), native byte order.
///
/// - As an input: `data` points to `nbytes` bytes holding `dims[0] * ... * dims[ndim-1]`
///   elements of `dtype` (`data` may be NULL when that is 0 bytes). Only read, during the call.
/// - As an output: set `data` to NULL and the library allocates it (free it with
///   `pjrt_tensor_free`); or point `data` to a buffer of yours of `nbytes` bytes and the output
///   is written there. Either way the library sets `dtype`, `ndim`, `dims` and `nbytes` (the
///   output's size).
/// - In a signature: `data` is NULL and `nbytes` 0; a dimension of -1 is symbolic (any size the
///   model accepts).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pjrt_tensor {
    /// The elements.
    pub data: *mut c_void,
    /// How many bytes `data` holds (an output buffer of yours: how many it can take).
    pub nbytes: usize,
    /// The element type, a `PJRT_DTYPE_*`.
    pub dtype: pjrt_dtype,
    /// How many dimensions (0 for a scalar, at most `PJRT_MAX_NDIM`).
    pub ndim: i32,
    /// The dimensions, the first `ndim` of them used.
    pub dims: [i64; PJRT_MAX_NDIM],
}

impl pjrt_tensor {
    /// A tensor with nothing in it: NULL data, no bytes, no type, rank 0.
    pub const EMPTY: pjrt_tensor =
        pjrt_tensor { data: std::ptr::null_mut(), nbytes: 0, dtype: 0, ndim: 0, dims: [0; PJRT_MAX_NDIM] };
}

/// What a model takes and gives: the tensors to pass to `pjrt_model_run`, in order (the inputs
/// a weights file feeds are not among them), and what it returns. Each `pjrt_tensor` has NULL
/// `data`; -1 marks a symbolic dimension. The arrays belong to the model: valid until
/// `pjrt_model_free`.
#[repr(C)]
#[derive(Debug)]
pub struct pjrt_signature {
    /// How many inputs `pjrt_model_run` takes.
    pub n_inputs: usize,
    /// Their types and shapes.
    pub inputs: *const pjrt_tensor,
    /// How many outputs it gives.
    pub n_outputs: usize,
    /// Their types and shapes.
    pub outputs: *const pjrt_tensor,
}

/// How `pjrt_runtime_new` makes a runtime. Zero-initialise it and set `struct_size` to
/// `sizeof(pjrt_options)`: every zero field means the default, and a library of a later ABI
/// minor version reads only the fields your header had.
///
/// ```c
/// pjrt_options options = {sizeof(pjrt_options)};
/// options.plugin = "cpu";
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pjrt_options {
    /// `sizeof(pjrt_options)` as your header says.
    pub struct_size: usize,
    /// The plugin: a path to a PJRT plugin library (anything with a `/` or ending in `.so`), or
    /// a name (`cpu`, `cpu-0.106`, `cuda12`, ...) found in the plugin cache or Python's
    /// site-packages. NULL: the `PJRT_PLUGIN` environment variable, else a CPU plugin found
    /// there.
    pub plugin: *const c_char,
    /// A folder for the compile cache: a model compiled once is loaded from there by later
    /// processes. NULL: no cache.
    pub compile_cache: *const c_char,
    /// How many CPU devices a CPU plugin makes (0: the plugin's default). Only for CPU plugins.
    pub cpu_devices: i32,
    /// Which of the client's devices models run on (an index, 0 the first).
    pub device: i32,
    /// Nonzero: install the plugin from PyPI when it is missing (the default CPU plugin when
    /// `plugin` is NULL, else the named one). Needs a library built with the `install`
    /// feature; others answer `PJRT_CODE_UNIMPLEMENTED`.
    pub install_plugin: i32,
    /// The plugin's client options, `NAME=VALUE` separated by commas: `true`/`false` a bool, an
    /// integer an int64, anything else a string, as `pjrt run --client-option` takes them. On
    /// the CPU plugins, `asynchronous=false` runs small models on the calling thread (a few
    /// times faster for models of microseconds). NULL: none.
    pub client_options: *const c_char,
}
