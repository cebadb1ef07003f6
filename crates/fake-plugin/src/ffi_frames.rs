//! XLA FFI call frames as a hostile or buggy plugin could build them, for the tests of
//! `pjrt_client::ffi`: [`fake_ffi_call`] calls a handler (an `XLA_FFI_Handler` entry point) with
//! one of a fixed set of frames, built here, with this library's own `XLA_FFI_Api` (errors are
//! boxed messages), and reports what the handler returned.
//!
//! The handler is expected to declare one `f32` operand of rank 1, one `f32` result of rank 1
//! and an `f64` attribute `scale`. Cases (`case`):
//!
//! | case | frame |
//! |---|---|
//! | 0 | valid (`f32[4]`, `scale = 2.0`), API 0.4 |
//! | 1 | the operand is `f64[4]` |
//! | 2 | the operand is `f32[2,2]` |
//! | 3 | no attributes |
//! | 4 | `scale` and an extra attribute `extra` |
//! | 5 | `scale` is an `f32` |
//! | 6 | a frame of 160 bytes (shorter than any XLA FFI 0.x frame), in memory of exactly that size |
//! | 7 | valid, but its API says XLA FFI 1.0 |
//! | 8 | the metadata query, API 0.3 |
//! | 9 | the operand's type tag is 7 |
//! | 10 | an attribute name that is not UTF-8 |

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::{null_mut, NonNull};

use pjrt_client_sys::xla_ffi as x;
use pjrt_client_sys::Args as _;

unsafe extern "C" fn error_create(args: *mut x::XLA_FFI_Error_Create_Args) -> *mut x::XLA_FFI_Error {
    std::panic::catch_unwind(|| {
        // SAFETY: the caller passes args with a NUL-terminated message (or NULL).
        let message = unsafe { (*args).message };
        let text = if message.is_null() {
            String::new()
        } else {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
        };
        // SAFETY: as above.
        let code = unsafe { (*args).errc.0 };
        Box::into_raw(Box::new(format!("{code}: {text}"))).cast::<x::XLA_FFI_Error>()
    })
    .unwrap_or(null_mut())
}

fn api(minor: i32, major: i32) -> Box<x::XLA_FFI_Api> {
    // SAFETY: all-zero is a valid table (integers, pointers, None).
    let mut api: Box<x::XLA_FFI_Api> = Box::new(unsafe { std::mem::zeroed() });
    api.struct_size = if minor >= 4 { 200 } else { 192 }.min(std::mem::size_of::<x::XLA_FFI_Api>());
    api.api_version = x::XLA_FFI_Api_Version::new();
    api.api_version.major_version = major;
    api.api_version.minor_version = minor;
    api.error_create = Some(error_create);
    api
}

/// Calls `handler` with frame `case` (see the module docs). Returns 0 when the handler returned
/// no error, 1 with the error's `"CODE: message"` in `out` (NUL-terminated, cut to `cap` bytes),
/// 2 for the metadata case with the claimed `"MAJOR.MINOR"` in `out`, -1 for an unknown case or
/// a NULL argument.
///
/// # Safety
/// `handler` is NULL or an `XLA_FFI_Handler`; `out` is NULL or writable for `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn fake_ffi_call(
    handler: Option<x::XLA_FFI_Handler>,
    case: c_int,
    out: *mut c_char,
    cap: usize,
) -> c_int {
    std::panic::catch_unwind(|| {
        let (Some(handler), Some(out)) = (handler, NonNull::new(out)) else { return -1 };
        // SAFETY: the caller's contract.
        unsafe { call(handler, case, out.as_ptr(), cap) }
    })
    .unwrap_or(-1)
}

unsafe fn call(handler: x::XLA_FFI_Handler, case: c_int, out: *mut c_char, cap: usize) -> c_int {
    let write = |text: &str| {
        let n = text.len().min(cap.saturating_sub(1));
        // SAFETY: `out` has `cap` bytes (contract); n + 1 <= cap when cap > 0.
        unsafe {
            if cap > 0 {
                std::ptr::copy_nonoverlapping(text.as_ptr(), out.cast::<u8>(), n);
                out.add(n).write(0);
            }
        }
    };
    if !(0..=10).contains(&case) {
        return -1;
    }
    let api = api(if case == 8 { 3 } else { 4 }, if case == 7 { 1 } else { 0 });
    let mut data = [1f32, 2., 3., 4.];
    let mut data64 = [0f64; 4];
    let mut result = [0f32; 4];
    let mut dims1 = [4i64];
    let mut dims2 = [2i64, 2];
    let mut arg = x::XLA_FFI_Buffer::new();
    arg.dtype = x::XLA_FFI_DataType::F32;
    arg.data = data.as_mut_ptr().cast();
    arg.rank = 1;
    arg.dims = dims1.as_mut_ptr();
    match case {
        1 => {
            arg.dtype = x::XLA_FFI_DataType::F64;
            arg.data = data64.as_mut_ptr().cast();
        }
        2 => {
            arg.rank = 2;
            arg.dims = dims2.as_mut_ptr();
        }
        _ => {}
    }
    let mut ret = x::XLA_FFI_Buffer::new();
    ret.dtype = x::XLA_FFI_DataType::F32;
    ret.data = result.as_mut_ptr().cast();
    ret.rank = 1;
    ret.dims = dims1.as_mut_ptr();
    let mut arg_types = [if case == 9 { x::XLA_FFI_ArgType(7) } else { x::XLA_FFI_ArgType::BUFFER }];
    let mut ret_types = [x::XLA_FFI_RetType::BUFFER];
    let mut arg_ptrs = [&mut arg as *mut x::XLA_FFI_Buffer as *mut c_void];
    let mut ret_ptrs = [&mut ret as *mut x::XLA_FFI_Buffer as *mut c_void];

    let mut scale64 = 2.0f64;
    let mut scale32 = 2.0f32;
    let mut extra = 1i64;
    let mut scale = x::XLA_FFI_Scalar { dtype: x::XLA_FFI_DataType::F64, value: (&mut scale64 as *mut f64).cast() };
    if case == 5 {
        scale = x::XLA_FFI_Scalar { dtype: x::XLA_FFI_DataType::F32, value: (&mut scale32 as *mut f32).cast() };
    }
    let mut extra_value = x::XLA_FFI_Scalar { dtype: x::XLA_FFI_DataType::S64, value: (&mut extra as *mut i64).cast() };
    let scale_name: &[u8] = if case == 10 { b"sc\xffle" } else { b"scale" };
    let mut names = [
        x::XLA_FFI_ByteSpan { ptr: b"extra".as_ptr().cast(), len: 5 },
        x::XLA_FFI_ByteSpan { ptr: scale_name.as_ptr().cast(), len: scale_name.len() },
    ];
    let (first, count) = match case {
        3 => (1, 0),
        4 => (0, 2),
        _ => (1, 1),
    };
    let mut attr_types = [x::XLA_FFI_AttrType::SCALAR; 2];
    let mut name_ptrs: Vec<*mut x::XLA_FFI_ByteSpan> = names.iter_mut().map(|n| n as *mut _).collect();
    let mut attr_ptrs: Vec<*mut c_void> =
        vec![(&mut extra_value as *mut x::XLA_FFI_Scalar).cast(), (&mut scale as *mut x::XLA_FFI_Scalar).cast()];

    let mut frame = x::XLA_FFI_CallFrame::new();
    frame.api = &*api;
    frame.stage = x::XLA_FFI_ExecutionStage::EXECUTE;
    frame.args = x::XLA_FFI_Args::new();
    frame.args.size = 1;
    frame.args.types = arg_types.as_mut_ptr();
    frame.args.args = arg_ptrs.as_mut_ptr();
    frame.rets = x::XLA_FFI_Rets::new();
    frame.rets.size = 1;
    frame.rets.types = ret_types.as_mut_ptr();
    frame.rets.rets = ret_ptrs.as_mut_ptr();
    frame.attrs = x::XLA_FFI_Attrs::new();
    frame.attrs.size = count;
    // SAFETY: `first + count <= 2`: in bounds of the arrays.
    unsafe {
        frame.attrs.types = attr_types.as_mut_ptr().add(first as usize);
        frame.attrs.names = name_ptrs.as_mut_ptr().add(first as usize);
        frame.attrs.attrs = attr_ptrs.as_mut_ptr().add(first as usize);
    }

    let mut metadata = x::XLA_FFI_Metadata::new();
    metadata.api_version = x::XLA_FFI_Api_Version::new();
    let mut extension = x::XLA_FFI_Metadata_Extension {
        extension_base: x::XLA_FFI_Extension_Base {
            struct_size: x::XLA_FFI_Metadata_Extension::STRUCT_SIZE,
            type_: x::XLA_FFI_Extension_Type::METADATA,
            next: null_mut(),
        },
        metadata: &mut metadata,
    };
    if case == 8 {
        frame.extension_start = &mut extension.extension_base;
    }

    // Case 6: the frame in a block of exactly 160 bytes.
    let mut short = vec![0u64; 160 / 8];
    let frame_ptr: *mut x::XLA_FFI_CallFrame = if case == 6 {
        // SAFETY: 160 bytes of the frame into a 160-byte block.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&frame as *const x::XLA_FFI_CallFrame).cast::<u8>(),
                short.as_mut_ptr().cast::<u8>(),
                160,
            )
        };
        short[0] = 160;
        short.as_mut_ptr().cast()
    } else {
        &mut frame
    };
    // SAFETY: a frame of the XLA FFI ABI (hostile in the ways the case says, but every pointer
    // points to memory of the size the frame claims).
    let error = unsafe { handler(frame_ptr) };
    if case == 8 {
        write(&format!("{}.{}", metadata.api_version.major_version, metadata.api_version.minor_version));
        return 2;
    }
    if error.is_null() {
        if case == 0 && result != [2., 4., 6., 8.] {
            write(&format!("fake: the handler wrote {result:?}"));
            return 1;
        }
        return 0;
    }
    // SAFETY: errors are made by `error_create` above.
    let message = unsafe { Box::from_raw(error.cast::<String>()) };
    write(&message);
    1
}
