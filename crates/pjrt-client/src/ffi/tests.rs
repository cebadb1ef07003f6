//! Frames built by hand, as a hostile or buggy plugin could send them: every mismatch is a
//! typed [`FrameError`], nothing is read past what the frame's own sizes allow, and the user's
//! function runs only on a frame that matches its signature. Ends with a randomized decoder test
//! (structured mutations of a valid frame; the pointers always point to memory of the sizes the
//! mutated frame claims, so what it checks is the decoder's answers, not luck).

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use crate::error::ErrorCode;
use crate::sys::xla_ffi as x;
use crate::sys::Args as _;

use super::decode::{decode, FrameError, Request};
use super::frames::*;
use super::*;

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

/// A result declared with `ret_aliasing` may be exactly its operand's memory (XLA's
/// `output_operand_aliases`), and nothing else: a partial overlap, another operand's memory or
/// other dims stay refused; the values come through `ret_in_place` either way, and the operand
/// cannot also be borrowed through `arg` when the two are one memory.
#[test]
fn aliased_results_are_their_operands_memory_or_disjoint() {
    let sig = || Signature::new().arg::<f32>(Rank::Exact(1)).arg::<f32>(Rank::Exact(1)).ret_aliasing(0);
    let doubled = |call: &Call| {
        for v in call.ret_in_place::<f32>(0)?.as_mut_slice() {
            *v *= 2.0;
        }
        Ok(())
    };
    let handler = Handler::new("double", sig(), doubled);
    let operand = |b: &Built| b.data[0].iter().map(|&w| f32::from_bits(w as u32)).collect::<Vec<_>>();
    // Disjoint: the operand's values are copied into the result first.
    let mut b = Built::new(&[f32s(&[2]), f32s(&[2])], &[f32s(&[2])], &[]);
    b.data[0][0] = 3.0f32.to_bits() as u64;
    let before = operand(&b);
    // SAFETY: a frame owned by `b`.
    unsafe { handler.call_frame(b.frame()) }.unwrap();
    assert_eq!(f32::from_bits(b.data[2][0] as u32), 6.0);
    assert_eq!(operand(&b), before, "the operand is left as it was");
    // Aliased: the same memory, written in place.
    let mut b = Built::new(&[f32s(&[2]), f32s(&[2])], &[f32s(&[2])], &[]);
    b.data[0][0] = 3.0f32.to_bits() as u64;
    b.buffers[2].data = b.buffers[0].data;
    // SAFETY: as above.
    unsafe { handler.call_frame(b.frame()) }.unwrap();
    assert_eq!(f32::from_bits(b.data[0][0] as u32), 6.0);
    // The other operand's memory, or the same address with other dims: refused.
    let mut b = Built::new(&[f32s(&[2]), f32s(&[2])], &[f32s(&[2])], &[]);
    b.buffers[2].data = b.buffers[1].data;
    assert_eq!(decode_err(&mut b, &sig()), FrameError::Overlap("result 0 overlaps operand 1".into()));
    let mut b = Built::new(&[f32s(&[2]), f32s(&[2])], &[f32s(&[1])], &[]);
    b.buffers[2].data = b.buffers[0].data;
    assert_eq!(decode_err(&mut b, &sig()), FrameError::Overlap("result 0 overlaps operand 0".into()));
    // Borrowing the aliased operand and its result at once: refused in either order.
    let both = Handler::new("both", sig(), |call: &Call| {
        let _x = call.arg::<f32>(0)?;
        assert!(call.ret_in_place::<f32>(0).unwrap_err().message().contains("read through Call::arg"));
        assert!(call.ret::<f32>(0).is_err());
        Ok(())
    });
    let mut b = Built::new(&[f32s(&[2]), f32s(&[2])], &[f32s(&[2])], &[]);
    b.buffers[2].data = b.buffers[0].data;
    // SAFETY: as above.
    unsafe { both.call_frame(b.frame()) }.unwrap();
    let after = Handler::new("after", sig(), |call: &Call| {
        let _y = call.ret_in_place::<f32>(0)?;
        assert!(call.arg::<f32>(0).unwrap_err().message().contains("is the memory of result 0"));
        assert!(call.arg::<f32>(1).is_ok(), "the other operand is readable");
        Ok(())
    });
    let mut b = Built::new(&[f32s(&[2]), f32s(&[2])], &[f32s(&[2])], &[]);
    b.buffers[2].data = b.buffers[0].data;
    // SAFETY: as above.
    unsafe { after.call_frame(b.frame()) }.unwrap();
    // A result not declared aliasing has no in-place form.
    let plain = Handler::new("plain", Signature::new().arg::<f32>(Rank::Any).ret::<f32>(Rank::Any), |call: &Call| {
        assert!(call.ret_in_place::<f32>(0).is_err());
        Ok(())
    });
    let mut b = Built::new(&[f32s(&[2])], &[f32s(&[2])], &[]);
    // SAFETY: as above.
    unsafe { plain.call_frame(b.frame()) }.unwrap();
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

/// Randomized decoder test: 20 000 frames, each a valid one with a few random mutations (see
/// `frames.rs`, shared with the fuzz target `fuzz/fuzz_targets/ffi_frames.rs`).
#[test]
fn randomized_frames_decode_or_fail_cleanly() {
    let ran = Arc::new(AtomicUsize::new(0));
    let handler = fuzz_handler(ran.clone());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut errors) = (0usize, std::collections::HashMap::<String, usize>::new());
    for _ in 0..20_000 {
        match one_frame(&mut rng, &handler, &ran) {
            Ok(()) => ok += 1,
            Err(e) => {
                let kind = format!("{e:?}");
                *errors.entry(kind[..kind.find(['(', ' ', '{']).unwrap_or(kind.len())].to_owned()).or_default() += 1;
            }
        }
    }
    eprintln!("randomized frames: {ok} decoded, errors by kind: {errors:?}");
    assert!(ok > 300, "{ok}");
    assert!(errors.len() >= 12, "{errors:?}");
    // The fuzz target's entry: any bytes, including none.
    for data in [&b""[..], b"\x00\x01\x02", &[0xff; 64]] {
        fuzz_frame(data);
    }
}

#[test]
fn optional_operands_may_be_left_out_and_no_more() {
    let sig =
        Signature::new().arg::<f32>(Rank::Exact(1)).arg_optional::<f32>(Rank::Exact(0)).ret::<f32>(Rank::Exact(1));
    let counts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let c2 = counts.clone();
    let handler = Handler::new("t", sig.clone(), move |call: &Call| {
        c2.lock().unwrap().push(call.arg_count());
        if call.arg_count() == 2 {
            assert_eq!(call.arg::<f32>(1)?.as_slice().len(), 1);
        } else {
            assert!(call.arg::<f32>(1).is_err());
        }
        Ok(())
    });
    for args in [vec![f32s(&[3])], vec![f32s(&[3]), f32s(&[])]] {
        let mut built = Built::new(&args, &[f32s(&[3])], &[]);
        // SAFETY: a frame owned by `built`.
        unsafe { handler.call_frame(built.frame()) }.unwrap();
    }
    assert_eq!(*counts.lock().unwrap(), [1, 2]);
    for args in [vec![], vec![f32s(&[3]), f32s(&[]), f32s(&[])]] {
        let found = args.len() as i64;
        let mut built = Built::new(&args, &[f32s(&[3])], &[]);
        assert_eq!(decode_err(&mut built, &sig), FrameError::CountBetween { what: "operands", min: 1, max: 2, found });
    }
}
