//! Call frames built by hand, as a hostile or buggy plugin could send them: the builder of the
//! decoder's tests and its fuzz target (`fuzz/fuzz_targets/ffi_frames.rs`, through the hidden
//! [`fuzz_frame`]). A frame is a valid one with mutations of its sizes, counts, tags, element
//! types, ranks, dimensions, names and pointers (NULL, or misaligned); memory is always
//! allocated for what the mutated frame claims, so every answer must be a clean `Ok` or
//! [`FrameError`], and the handler's function runs only on `Ok`.

// Boxes in vectors on purpose: the frame points into them, so they must not move as vectors grow.
#![allow(clippy::vec_box)]
#![allow(dead_code)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::ErrorCode;
use crate::sys::xla_ffi as x;
use crate::sys::Args as _;

use super::decode::{decode, FrameError, Request, MAX_COUNT};
use super::*;

/// What one attribute of a built frame holds.
#[derive(Clone)]
pub(crate) enum A {
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
pub(crate) struct Built {
    pub(crate) frame: Option<Box<x::XLA_FFI_CallFrame>>,
    pub(crate) buffers: Vec<Box<x::XLA_FFI_Buffer>>,
    pub(crate) dims: Vec<Box<[i64]>>,
    pub(crate) data: Vec<Box<[u64]>>,
    pub(crate) arg_types: Box<[x::XLA_FFI_ArgType]>,
    pub(crate) arg_ptrs: Box<[*mut c_void]>,
    pub(crate) ret_types: Box<[x::XLA_FFI_RetType]>,
    pub(crate) ret_ptrs: Box<[*mut c_void]>,
    pub(crate) attr_types: Box<[x::XLA_FFI_AttrType]>,
    pub(crate) attr_names: Box<[*mut x::XLA_FFI_ByteSpan]>,
    pub(crate) attr_values: Box<[*mut c_void]>,
    pub(crate) spans: Vec<Box<x::XLA_FFI_ByteSpan>>,
    pub(crate) bytes: Vec<Box<[u8]>>,
    pub(crate) scalars: Vec<Box<x::XLA_FFI_Scalar>>,
    pub(crate) arrays: Vec<Box<x::XLA_FFI_Array>>,
    pub(crate) words: Vec<Box<[u64]>>,
    pub(crate) metadata: Option<(Box<x::XLA_FFI_Metadata_Extension>, Box<x::XLA_FFI_Metadata>)>,
}

pub(crate) struct Buf {
    pub(crate) dtype: x::XLA_FFI_DataType,
    pub(crate) dims: Vec<i64>,
}

pub(crate) fn f32s(dims: &[i64]) -> Buf {
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

    pub(crate) fn new(args: &[Buf], rets: &[Buf], attrs: &[(&[u8], A)]) -> Built {
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

    pub(crate) fn frame(&mut self) -> *mut x::XLA_FFI_CallFrame {
        &mut **self.frame.as_mut().unwrap()
    }

    pub(crate) fn with_metadata(mut self, api: *const x::XLA_FFI_Api) -> Built {
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

/// Where a frame's choices come from: a seeded generator (the tests) or the fuzzer's bytes.
pub(crate) trait Source {
    /// A number below `n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64;
    /// One of `items`.
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A small deterministic generator (xorshift64*).
pub(crate) struct Rng(pub(crate) u64);

impl Source for Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// The fuzzer's bytes, one per choice (0 once they run out).
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl Source for Bytes<'_> {
    fn below(&mut self, n: u64) -> u64 {
        let Some((&first, rest)) = self.0.split_first() else { return 0 };
        self.0 = rest;
        u64::from(first) % n
    }
}

/// The signature of the generated frames' handler.
pub(crate) fn fuzz_signature() -> Signature {
    Signature::new()
        .arg::<f32>(Rank::Any)
        .ret::<f32>(Rank::Exact(1))
        .attr::<i64>("n")
        .attr_array::<i64>("axes")
        .attr_str("mode")
}

/// A handler of [`fuzz_signature`] that reads its attributes and counts its runs.
pub(crate) fn fuzz_handler(ran: Arc<AtomicUsize>) -> Handler {
    Handler::new("fuzz", fuzz_signature(), move |call: &Call| {
        call.attr::<i64>("n")?;
        call.attr_array::<i64>("axes")?.iter().sum::<i64>();
        call.attr_bytes("mode")?;
        ran.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

/// Builds one frame from `rng`'s choices, decodes it and runs `handler` on it; checks that the
/// function ran exactly when the frame decoded, and that an error names the decoder's. Returns
/// the decoder's answer.
pub(crate) fn one_frame(
    rng: &mut impl Source,
    handler: &Handler,
    ran: &AtomicUsize,
) -> std::result::Result<(), FrameError> {
    let sig = fuzz_signature();
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
                built.buffers[i].data = rng.pick(&[null_mut(), (built.buffers[i].data as usize + 2) as *mut c_void]);
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
            Ok(())
        }
        Ok(Request::Metadata(_)) => unreachable!("no metadata extension is built"),
        Err(e) => {
            assert_eq!(runs, 0);
            let got = got.unwrap_err();
            assert_eq!(got.code(), ErrorCode::InvalidArgument);
            assert!(got.message().ends_with(&e.to_string()), "{got:?} vs {e}");
            Err(e)
        }
    }
}

/// The fuzz target's body: one frame built from `data` (see the module docs); panics when an
/// answer is not clean.
#[doc(hidden)]
pub fn fuzz_frame(data: &[u8]) {
    let ran = Arc::new(AtomicUsize::new(0));
    let handler = fuzz_handler(ran.clone());
    let _ = one_frame(&mut Bytes(data), &handler, &ran);
}
