//! Frames built by hand, as a hostile or buggy plugin could send them: every mismatch is a
//! typed [`FrameError`], nothing is read past what the frame's own sizes allow, and the user's
//! function runs only on a frame that matches its signature. Ends with a randomized decoder test
//! (structured mutations of a valid frame; the pointers always point to memory of the sizes the
//! mutated frame claims, so what it checks is the decoder's answers, not luck).

// Boxes in vectors on purpose: the frame points into them, so they must not move as vectors grow.
#![allow(clippy::vec_box)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::sys::xla_ffi as x;
use crate::sys::Args as _;

use super::decode::{decode, FrameError, Request};
use super::*;

/// What one attribute of a built frame holds.
#[derive(Clone)]
enum A {
    F64(f64),
    F32(f32),
    I64(i64),
    Bool(u8),
    Arr(Vec<i64>),
    Str(Vec<u8>),
    /// A raw tag and NULL value.
    Tag(i32),
}

/// A frame and everything it points to (boxed: addresses stay put).
#[derive(Default)]
struct Built {
    frame: Option<Box<x::XLA_FFI_CallFrame>>,
    buffers: Vec<Box<x::XLA_FFI_Buffer>>,
    dims: Vec<Box<[i64]>>,
    data: Vec<Box<[u64]>>,
    arg_types: Box<[x::XLA_FFI_ArgType]>,
    arg_ptrs: Box<[*mut c_void]>,
    ret_types: Box<[x::XLA_FFI_RetType]>,
    ret_ptrs: Box<[*mut c_void]>,
    attr_types: Box<[x::XLA_FFI_AttrType]>,
    attr_names: Box<[*mut x::XLA_FFI_ByteSpan]>,
    attr_values: Box<[*mut c_void]>,
    spans: Vec<Box<x::XLA_FFI_ByteSpan>>,
    bytes: Vec<Box<[u8]>>,
    scalars: Vec<Box<x::XLA_FFI_Scalar>>,
    arrays: Vec<Box<x::XLA_FFI_Array>>,
    words: Vec<Box<[u64]>>,
    metadata: Option<(Box<x::XLA_FFI_Metadata_Extension>, Box<x::XLA_FFI_Metadata>)>,
}

struct Buf {
    dtype: x::XLA_FFI_DataType,
    dims: Vec<i64>,
}

fn f32s(dims: &[i64]) -> Buf {
    Buf { dtype: x::XLA_FFI_DataType::F32, dims: dims.to_vec() }
}

impl Built {
    fn buffer(&mut self, b: &Buf) -> *mut c_void {
        let elements: i64 = b.dims.iter().map(|d| (*d).clamp(0, 64)).product();
        let data: Box<[u64]> = vec![0u64; elements as usize + 1].into();
        let dims: Box<[i64]> = b.dims.clone().into();
        let mut buffer = Box::new(x::XLA_FFI_Buffer::new());
        buffer.dtype = b.dtype;
        buffer.data = data.as_ptr() as *mut c_void;
        buffer.rank = b.dims.len() as i64;
        buffer.dims = dims.as_ptr() as *mut i64;
        self.dims.push(dims);
        self.data.push(data);
        let ptr = &mut *buffer as *mut x::XLA_FFI_Buffer as *mut c_void;
        self.buffers.push(buffer);
        ptr
    }

    fn span(&mut self, bytes: &[u8]) -> *mut x::XLA_FFI_ByteSpan {
        let bytes: Box<[u8]> = bytes.into();
        let mut span = Box::new(x::XLA_FFI_ByteSpan { ptr: bytes.as_ptr().cast(), len: bytes.len() });
        self.bytes.push(bytes);
        let ptr = &mut *span as *mut x::XLA_FFI_ByteSpan;
        self.spans.push(span);
        ptr
    }

    fn scalar(&mut self, dtype: x::XLA_FFI_DataType, word: u64) -> *mut c_void {
        let w: Box<[u64]> = vec![word].into();
        let mut s = Box::new(x::XLA_FFI_Scalar { dtype, value: w.as_ptr() as *mut c_void });
        self.words.push(w);
        let ptr = &mut *s as *mut x::XLA_FFI_Scalar as *mut c_void;
        self.scalars.push(s);
        ptr
    }

    fn attr(&mut self, a: &A) -> (x::XLA_FFI_AttrType, *mut c_void) {
        use x::XLA_FFI_AttrType as T;
        use x::XLA_FFI_DataType as D;
        match a {
            A::F64(v) => (T::SCALAR, self.scalar(D::F64, v.to_bits())),
            A::F32(v) => (T::SCALAR, self.scalar(D::F32, v.to_bits() as u64)),
            A::I64(v) => (T::SCALAR, self.scalar(D::S64, *v as u64)),
            A::Bool(v) => (T::SCALAR, self.scalar(D::PRED, *v as u64)),
            A::Arr(v) => {
                let w: Box<[u64]> = v.iter().map(|e| *e as u64).collect::<Vec<_>>().into();
                let mut arr =
                    Box::new(x::XLA_FFI_Array { dtype: D::S64, size: v.len(), data: w.as_ptr() as *mut c_void });
                self.words.push(w);
                let ptr = &mut *arr as *mut x::XLA_FFI_Array as *mut c_void;
                self.arrays.push(arr);
                (T::ARRAY, ptr)
            }
            A::Str(s) => (T::STRING, self.span(s).cast()),
            A::Tag(tag) => (x::XLA_FFI_AttrType(*tag), null_mut()),
        }
    }

    fn new(args: &[Buf], rets: &[Buf], attrs: &[(&[u8], A)]) -> Built {
        let mut b = Built::default();
        let arg_ptrs: Vec<_> = args.iter().map(|a| b.buffer(a)).collect();
        let ret_ptrs: Vec<_> = rets.iter().map(|r| b.buffer(r)).collect();
        b.arg_types = vec![x::XLA_FFI_ArgType::BUFFER; args.len()].into();
        b.ret_types = vec![x::XLA_FFI_RetType::BUFFER; rets.len()].into();
        b.arg_ptrs = arg_ptrs.into();
        b.ret_ptrs = ret_ptrs.into();
        let mut types = Vec::new();
        let mut names = Vec::new();
        let mut values = Vec::new();
        for (name, a) in attrs {
            names.push(b.span(name));
            let (t, v) = b.attr(a);
            types.push(t);
            values.push(v);
        }
        b.attr_types = types.into();
        b.attr_names = names.into();
        b.attr_values = values.into();
        let mut frame = Box::new(x::XLA_FFI_CallFrame::new());
        frame.stage = x::XLA_FFI_ExecutionStage::EXECUTE;
        frame.args = x::XLA_FFI_Args::new();
        frame.args.size = args.len() as i64;
        frame.args.types = b.arg_types.as_mut_ptr();
        frame.args.args = b.arg_ptrs.as_mut_ptr();
        frame.rets = x::XLA_FFI_Rets::new();
        frame.rets.size = rets.len() as i64;
        frame.rets.types = b.ret_types.as_mut_ptr();
        frame.rets.rets = b.ret_ptrs.as_mut_ptr();
        frame.attrs = x::XLA_FFI_Attrs::new();
        frame.attrs.size = attrs.len() as i64;
        frame.attrs.types = b.attr_types.as_mut_ptr();
        frame.attrs.names = b.attr_names.as_mut_ptr();
        frame.attrs.attrs = b.attr_values.as_mut_ptr();
        b.frame = Some(frame);
        b
    }

    fn frame(&mut self) -> *mut x::XLA_FFI_CallFrame {
        &mut **self.frame.as_mut().unwrap()
    }

    fn with_metadata(mut self, api: *const x::XLA_FFI_Api) -> Built {
        let mut metadata = Box::new(x::XLA_FFI_Metadata::new());
        metadata.api_version = x::XLA_FFI_Api_Version::new();
        let ext = Box::new(x::XLA_FFI_Metadata_Extension {
            extension_base: x::XLA_FFI_Extension_Base {
                struct_size: x::XLA_FFI_Metadata_Extension::STRUCT_SIZE,
                type_: x::XLA_FFI_Extension_Type::METADATA,
                next: null_mut(),
            },
            metadata: &*metadata as *const x::XLA_FFI_Metadata as *mut _,
        });
        let frame = self.frame.as_mut().unwrap();
        frame.extension_start = &*ext as *const x::XLA_FFI_Metadata_Extension as *mut x::XLA_FFI_Extension_Base;
        frame.api = api;
        self.metadata = Some((ext, metadata));
        self
    }
}

fn signature() -> Signature {
    Signature::new()
        .arg::<f32>(Rank::Exact(1))
        .ret::<f32>(Rank::Exact(1))
        .attr::<f64>("scale")
        .attr_array::<i64>("axes")
        .attr_str("mode")
}

fn good_attrs() -> Vec<(&'static [u8], A)> {
    vec![(b"axes", A::Arr(vec![1, 2])), (b"mode", A::Str(b"fast".to_vec())), (b"scale", A::F64(2.0))]
}

fn decode_err(built: &mut Built, sig: &Signature) -> FrameError {
    // SAFETY: the frame and all it points to are owned by `built`, of the sizes it claims.
    match unsafe { decode(built.frame(), sig) } {
        Ok(_) => panic!("decoded"),
        Err(e) => e,
    }
}

#[test]
fn a_matching_frame_runs_the_function_with_its_values() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let s2 = seen.clone();
    let handler = Handler::new("t", signature(), move |call: &Call| {
        let x = call.arg::<f32>(0)?;
        let mut y = call.ret::<f32>(0)?;
        y.copy_from_iter(x.as_slice().iter().map(|v| v + 1.0));
        *s2.lock().unwrap() = Some((
            call.attr::<f64>("scale")?,
            call.attr_array::<i64>("axes")?.to_vec(),
            call.attr_str("mode")?.to_owned(),
        ));
        // Taking a result twice, or reading with another type, is an error, not a second &mut.
        assert!(call.ret::<f32>(0).is_err());
        assert!(call.arg::<i32>(0).is_err());
        assert!(call.attr::<f32>("scale").is_err());
        assert!(call.attr::<f64>("nope").is_err());
        Ok(())
    });
    let mut built = Built::new(&[f32s(&[3])], &[f32s(&[3])], &good_attrs());
    // SAFETY: a frame owned by `built`.
    unsafe { handler.call_frame(built.frame()) }.unwrap();
    assert_eq!(*seen.lock().unwrap(), Some((2.0, vec![1, 2], "fast".to_owned())));
    let out = built.data[1][0];
    assert_eq!(f32::from_bits(out as u32), 1.0);
}

#[test]
fn mismatches_are_typed_errors() {
    let sig = signature();
    let attrs = good_attrs();
    let cases: Vec<(Built, FrameError)> = vec![
        (
            Built::new(&[f32s(&[3, 1])], &[f32s(&[3])], &attrs),
            FrameError::Rank { what: "operand 0".into(), expected: "1".into(), found: 2 },
        ),
        (
            Built::new(&[Buf { dtype: x::XLA_FFI_DataType::F64, dims: vec![3] }], &[f32s(&[3])], &attrs),
            FrameError::ElementType { what: "operand 0".into(), expected: "f32", found: "f64".into() },
        ),
        (
            Built::new(&[Buf { dtype: x::XLA_FFI_DataType(77), dims: vec![3] }], &[f32s(&[3])], &attrs),
            FrameError::ElementType { what: "operand 0".into(), expected: "f32", found: "data type 77".into() },
        ),
        (Built::new(&[], &[f32s(&[3])], &attrs), FrameError::Count { what: "operands", expected: 1, found: 0 }),
        (
            Built::new(&[f32s(&[3])], &[f32s(&[3]), f32s(&[3])], &attrs),
            FrameError::Count { what: "results", expected: 1, found: 2 },
        ),
        (
            Built::new(&[f32s(&[-1])], &[f32s(&[3])], &attrs),
            FrameError::Dimension { what: "operand 0".into(), index: 0, size: -1 },
        ),
        (Built::new(&[f32s(&[3])], &[f32s(&[3])], &attrs[..2]), FrameError::MissingAttribute("scale".into())),
        (
            Built::new(&[f32s(&[3])], &[f32s(&[3])], &[attrs.clone(), vec![(b"zz".as_slice(), A::I64(1))]].concat()),
            FrameError::ExtraAttribute("zz".into()),
        ),
        (
            Built::new(
                &[f32s(&[3])],
                &[f32s(&[3])],
                &[attrs.clone(), vec![(b"scale".as_slice(), A::F64(1.0))]].concat(),
            ),
            FrameError::DuplicateAttribute("scale".into()),
        ),
        (
            Built::new(&[f32s(&[3])], &[f32s(&[3])], &[attrs[0].clone(), attrs[1].clone(), (b"scale", A::F32(2.0))]),
            FrameError::AttributeType {
                name: "scale".into(),
                expected: "a scalar of f64".into(),
                found: "a scalar of f32".into(),
            },
        ),
        (
            Built::new(&[f32s(&[3])], &[f32s(&[3])], &[attrs[0].clone(), (b"mode", A::Bool(1)), attrs[2].clone()]),
            FrameError::AttributeType {
                name: "mode".into(),
                expected: "a string".into(),
                found: "a scalar of pred".into(),
            },
        ),
        (
            Built::new(&[f32s(&[3])], &[f32s(&[3])], &[attrs[0].clone(), attrs[1].clone(), (b"scale", A::Tag(9))]),
            FrameError::Tag { what: "attribute `scale`".into(), tag: 9, expected: "ARRAY, SCALAR or STRING (1, 3, 4)" },
        ),
        (
            Built::new(&[f32s(&[3])], &[f32s(&[3])], &[attrs[0].clone(), attrs[1].clone(), (b"scale", A::Tag(2))]),
            FrameError::AttributeType {
                name: "scale".into(),
                expected: "a scalar of f64".into(),
                found: "a dictionary".into(),
            },
        ),
        (
            Built::new(&[f32s(&[3])], &[f32s(&[3])], &[attrs[0].clone(), attrs[1].clone(), (b"\xff", A::F64(1.0))]),
            FrameError::AttributeName(2),
        ),
    ];
    for (i, (mut built, expected)) in cases.into_iter().enumerate() {
        assert_eq!(decode_err(&mut built, &sig), expected, "case {i}");
    }
}

#[test]
fn frames_of_other_versions_and_broken_frames() {
    let sig = signature();
    let fresh = || Built::new(&[f32s(&[3])], &[f32s(&[3])], &good_attrs());
    let mut b = fresh();
    // An older, shorter frame: refused before anything past its size is read. (The frame is
    // copied into memory of exactly that size, so a read past it would be out of bounds.)
    let mut short = vec![0u64; 160 / 8];
    // SAFETY: copying 160 bytes of a 176-byte frame into a 160-byte block.
    unsafe { std::ptr::copy_nonoverlapping(b.frame().cast::<u8>(), short.as_mut_ptr().cast::<u8>(), 160) };
    short[0] = 160;
    // SAFETY: a 160-byte frame whose size says 160.
    let e = unsafe { decode(short.as_ptr().cast(), &sig) }.err().unwrap();
    assert_eq!(e, FrameError::TooShort { what: "the call frame", size: 160, expected: 168 });
    // A newer, longer frame: only the known prefix is read; it decodes.
    b.frame.as_mut().unwrap().struct_size = 176;
    // SAFETY: the frame is 176 bytes.
    assert!(matches!(unsafe { decode(b.frame(), &sig) }, Ok(Request::Execute(_))));
    // Embedded structs of another size: another layout.
    let mut b = fresh();
    b.frame.as_mut().unwrap().args.struct_size = 48;
    assert!(matches!(decode_err(&mut b, &sig), FrameError::UnknownLayout { size: 48, expected: 40, .. }));
    // Another stage.
    let mut b = fresh();
    b.frame.as_mut().unwrap().stage = x::XLA_FFI_ExecutionStage::PREPARE;
    assert_eq!(decode_err(&mut b, &sig), FrameError::Stage(1));
    // A NULL frame, NULL arrays, a NULL buffer, a short buffer.
    // SAFETY: NULL is allowed.
    assert_eq!(unsafe { decode(null(), &sig) }.err().unwrap(), FrameError::NullFrame);
    let mut b = fresh();
    b.frame.as_mut().unwrap().args.args = null_mut();
    assert_eq!(decode_err(&mut b, &sig), FrameError::Null("the operands".into()));
    let mut b = fresh();
    b.ret_ptrs[0] = null_mut();
    assert_eq!(decode_err(&mut b, &sig), FrameError::Null("result 0".into()));
    let mut b = fresh();
    b.buffers[0].struct_size = 40;
    assert!(matches!(decode_err(&mut b, &sig), FrameError::TooShort { size: 40, expected: 48, .. }));
    // A tag other than BUFFER.
    let mut b = fresh();
    b.arg_types[0] = x::XLA_FFI_ArgType(5);
    assert!(matches!(decode_err(&mut b, &sig), FrameError::Tag { tag: 5, .. }));
    // Misaligned data; data of an impossible size.
    let mut b = fresh();
    b.buffers[0].data = (b.buffers[0].data as usize + 1) as *mut c_void;
    assert_eq!(decode_err(&mut b, &sig), FrameError::Misaligned("operand 0's data".into()));
    let mut b = fresh();
    b.dims[0][0] = i64::MAX;
    assert_eq!(decode_err(&mut b, &sig), FrameError::TooLarge("operand 0".into()));
    // A result aliasing an operand.
    let mut b = fresh();
    b.buffers[1].data = b.buffers[0].data;
    assert_eq!(decode_err(&mut b, &sig), FrameError::Overlap("result 0 overlaps operand 0".into()));
}

/// A stand-in for XLA's API table: errors are boxed messages.
unsafe extern "C" fn test_error_create(args: *mut x::XLA_FFI_Error_Create_Args) -> *mut x::XLA_FFI_Error {
    // SAFETY: called by the trampoline with a NUL-terminated message.
    let message = unsafe { std::ffi::CStr::from_ptr((*args).message) }.to_string_lossy().into_owned();
    // SAFETY: as above.
    let code = unsafe { (*args).errc.0 };
    Box::into_raw(Box::new((code, message))).cast()
}

fn test_api(minor: i32) -> Box<x::XLA_FFI_Api> {
    // SAFETY: an all-zero table is valid (pointers, integers, None).
    let mut api: Box<x::XLA_FFI_Api> = Box::new(unsafe { std::mem::zeroed() });
    api.struct_size = 192;
    api.api_version = x::XLA_FFI_Api_Version::new();
    api.api_version.minor_version = minor;
    api.error_create = Some(test_error_create);
    api
}

#[test]
fn the_metadata_query_is_answered_with_the_lower_version() {
    let handler = Handler::new("t", signature(), |_: &Call| panic!("must not run"));
    for (api_minor, claimed) in [(Some(3), 3), (Some(4), 4), (Some(9), 4), (None, x::XLA_FFI_API_MINOR)] {
        let api = test_api(api_minor.unwrap_or(0));
        let api_ptr: *const x::XLA_FFI_Api = if api_minor.is_some() { &*api } else { null() };
        let mut built = Built::new(&[], &[], &[]).with_metadata(api_ptr);
        // SAFETY: a frame owned by `built`.
        unsafe { handler.call_frame(built.frame()) }.unwrap();
        let metadata = &built.metadata.as_ref().unwrap().1;
        assert_eq!((metadata.api_version.major_version, metadata.api_version.minor_version), (0, claimed));
        assert_eq!(metadata.api_version.struct_size, x::XLA_FFI_Api_Version::STRUCT_SIZE);
        assert_eq!(metadata.traits, 0);
    }
}

#[test]
fn the_c_entry_point_reports_errors_and_panics_through_the_frames_api() {
    let handler =
        Handler::new("entry", Signature::new().attr::<i64>("n"), |call: &Call| match call.attr::<i64>("n")? {
            0 => Ok(()),
            1 => Err(FfiError::new(ErrorCode::NotFound, "no such thing")),
            _ => panic!("n too big"),
        });
    let entry = trampoline::claim(handler.inner.clone()).unwrap();
    let api = test_api(4);
    let call = |n: i64, with_api: bool| {
        let mut built = Built::new(&[], &[], &[(b"n", A::I64(n))]);
        if with_api {
            built.frame.as_mut().unwrap().api = &*api;
        }
        // SAFETY: a frame owned by `built`.
        let error = unsafe { entry(built.frame()) };
        if error.is_null() {
            None
        } else {
            // SAFETY: made by `test_error_create`.
            Some(*unsafe { Box::from_raw(error.cast::<(i32, String)>()) })
        }
    };
    assert_eq!(call(0, true), None);
    assert_eq!(call(1, true), Some((5, "handler `entry`: no such thing".into())));
    assert_eq!(call(2, true), Some((13, "handler `entry` panicked: n too big".into())));
    // A failing frame without an API cannot report its error (an earlier frame's API is not
    // kept: nothing says it outlives its call).
    assert_eq!(call(1, false), None);
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Randomized decoder test: 20 000 frames, each a valid one with a few random mutations of
/// sizes, counts, tags, element types, ranks, dimensions, names and pointers (NULL, or
/// misaligned by one byte). Memory is always allocated for what the mutated frame claims, so
/// every answer must be a clean `Ok` or `FrameError`, and the function runs only on `Ok`.
#[test]
fn randomized_frames_decode_or_fail_cleanly() {
    let sig = Signature::new()
        .arg::<f32>(Rank::Any)
        .ret::<f32>(Rank::Exact(1))
        .attr::<i64>("n")
        .attr_array::<i64>("axes")
        .attr_str("mode");
    let ran = Arc::new(AtomicUsize::new(0));
    let r2 = ran.clone();
    let handler = Handler::new("fuzz", sig.clone(), move |call: &Call| {
        call.attr::<i64>("n")?;
        call.attr_array::<i64>("axes")?.iter().sum::<i64>();
        call.attr_bytes("mode")?;
        r2.fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut errors) = (0usize, std::collections::HashMap::<String, usize>::new());
    for _ in 0..20_000 {
        let rank = rng.pick(&[0usize, 1, 2, 3]);
        let dims: Vec<i64> = (0..rank).map(|_| rng.pick(&[0, 1, 3, -1, i64::MAX / 2])).collect();
        let dtype = rng.pick(&[
            x::XLA_FFI_DataType::F32,
            x::XLA_FFI_DataType::F32,
            x::XLA_FFI_DataType::F64,
            x::XLA_FFI_DataType(99),
        ]);
        let ret_dims = vec![rng.pick(&[2i64, 2, 0, -5])];
        let mut attrs: Vec<(&[u8], A)> =
            vec![(b"axes", A::Arr(vec![1, 2, 3])), (b"mode", A::Str(b"m".to_vec())), (b"n", A::I64(4))];
        for _ in 0..rng.below(3) {
            let i = rng.below(attrs.len() as u64) as usize;
            match rng.below(6) {
                0 => drop(attrs.remove(i)),
                1 => attrs.push(attrs[i].clone()),
                2 => attrs[i].0 = rng.pick(&[b"zz".as_slice(), b"\xfe", b"", b"n"]),
                3 => attrs[i].1 = A::Tag(rng.pick(&[0, 2, 5, -1])),
                4 => {
                    let kinds = [A::F32(1.0), A::Bool(2), A::Str(vec![0xff; 3]), A::Arr(vec![])];
                    attrs[i].1 = kinds[rng.below(4) as usize].clone();
                }
                _ => {}
            }
            if attrs.is_empty() {
                break;
            }
        }
        let n_args = rng.pick(&[1usize, 1, 1, 0, 2]);
        let args: Vec<Buf> = (0..n_args).map(|_| Buf { dtype, dims: dims.clone() }).collect();
        let mut built = Built::new(&args, &[f32s(&ret_dims)], &attrs);
        for _ in 0..rng.below(3) {
            let f = built.frame.as_mut().unwrap();
            match rng.below(12) {
                0 => f.struct_size = rng.pick(&[0, 8, 167, 168, 176, usize::MAX]).min(176),
                1 => f.args.struct_size = rng.pick(&[0, 39, 41]),
                2 => f.attrs.size = rng.pick(&[-1, i64::MAX, MAX_COUNT + 1]),
                3 => f.rets.size = rng.pick(&[-1, 0, 2, i64::MIN]),
                4 => f.stage = x::XLA_FFI_ExecutionStage(rng.pick(&[0, 1, 2, 4, -7])),
                5 => f.attrs.names = null_mut(),
                6 => f.rets.types = null_mut(),
                7 if !built.buffers.is_empty() => {
                    let i = rng.below(built.buffers.len() as u64) as usize;
                    built.buffers[i].struct_size = rng.pick(&[0, 47, 48, 64]).min(48);
                }
                8 if !built.buffers.is_empty() => {
                    let i = rng.below(built.buffers.len() as u64) as usize;
                    built.buffers[i].rank = rng.pick(&[-1, 65, i64::MAX]);
                }
                9 if !built.buffers.is_empty() => {
                    let i = rng.below(built.buffers.len() as u64) as usize;
                    built.buffers[i].data =
                        rng.pick(&[null_mut(), (built.buffers[i].data as usize + 2) as *mut c_void]);
                }
                10 if !built.spans.is_empty() => {
                    let i = rng.below(built.spans.len() as u64) as usize;
                    built.spans[i].ptr = null();
                }
                11 if !built.arg_types.is_empty() => built.arg_types[0] = x::XLA_FFI_ArgType(rng.pick(&[0, 2, -1])),
                _ => {}
            }
        }
        // SAFETY: every pointer of the frame is NULL, misaligned, or points to memory of the
        // size the (mutated) frame claims for it; struct sizes never exceed the allocation.
        let expect = unsafe { decode(built.frame(), &sig) };
        let before = ran.load(Ordering::Relaxed);
        // SAFETY: as above.
        let got = unsafe { handler.call_frame(built.frame()) };
        let runs = ran.load(Ordering::Relaxed) - before;
        match expect {
            Ok(Request::Execute(_)) => {
                assert_eq!(runs, 1);
                got.unwrap();
                ok += 1;
            }
            Ok(Request::Metadata(_)) => unreachable!("no metadata extension is built"),
            Err(e) => {
                assert_eq!(runs, 0);
                let got = got.unwrap_err();
                assert_eq!(got.code(), ErrorCode::InvalidArgument);
                assert!(got.message().ends_with(&e.to_string()), "{got:?} vs {e}");
                let kind = format!("{e:?}");
                *errors.entry(kind[..kind.find(['(', ' ', '{']).unwrap_or(kind.len())].to_owned()).or_default() += 1;
            }
        }
    }
    eprintln!("randomized frames: {ok} decoded, errors by kind: {errors:?}");
    assert!(ok > 300, "{ok}");
    assert!(errors.len() >= 12, "{errors:?}");
}
