//! Reading an `XLA_FFI_CallFrame` against a handler's [`Signature`]: every struct by its own
//! `struct_size` and no further, every count bounded, every pointer checked for NULL and
//! alignment before it is read, every tag, element type, rank and attribute name compared with
//! what the handler declared. What cannot be checked (that a non-NULL pointer points to memory
//! of the size its struct says) is the XLA FFI contract the plugin calling the handler keeps.

use std::ffi::c_void;
use std::mem::{align_of, size_of, MaybeUninit};

use crate::sys::xla_ffi as x;
use crate::sys::Args as _;

use super::signature::{AttrSpec, BufferSpec, Signature};
use super::types::DataType;

/// The most operands, results or attributes a frame may claim.
pub const MAX_COUNT: i64 = 1 << 16;
/// The highest rank a buffer may claim.
pub const MAX_RANK: i64 = 64;
/// The longest attribute name or string, in bytes.
pub const MAX_STRING: usize = 1 << 24;

/// Why a call frame does not match the handler it was sent to. The handler returns it to XLA
/// as an `INVALID_ARGUMENT` error whose message is this error's text (the user's function is
/// not run).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame pointer is NULL.
    #[error("the call frame is NULL")]
    NullFrame,
    /// A struct is shorter than the fields this crate reads: an older XLA FFI than 0.1.
    #[error("{what} is {size} bytes, shorter than the {expected} this crate reads (an XLA FFI older than 0.1?)")]
    TooShort {
        /// Which struct.
        what: &'static str,
        /// Its `struct_size`.
        size: usize,
        /// The size read.
        expected: usize,
    },
    /// A struct embedded in the frame has another size than the one declared: the frame's
    /// layout is one this crate does not know.
    #[error("{what} is {size} bytes, not {expected}: a call frame layout this crate does not know")]
    UnknownLayout {
        /// Which struct.
        what: &'static str,
        /// Its `struct_size`.
        size: usize,
        /// The size of the layout known.
        expected: usize,
    },
    /// The XLA FFI API of the frame has another major version.
    #[error("the call frame's XLA FFI API is version {major}.{minor}; this crate reads major version 0")]
    ApiVersion {
        /// Its major version.
        major: i32,
        /// Its minor version.
        minor: i32,
    },
    /// The frame is for another stage than execute (the only one reached through PJRT).
    #[error("the call frame is for execution stage {0}, but handlers written with pjrt_client::ffi run only the execute stage (3)")]
    Stage(i32),
    /// A count differs from the handler's declaration (or is impossible).
    #[error("the handler declares {expected} {what}, but the call has {found}")]
    Count {
        /// `"operands"`, `"results"` or `"attributes"`.
        what: &'static str,
        /// Declared.
        expected: usize,
        /// In the frame.
        found: i64,
    },
    /// A count is outside the range the handler declares (it has optional operands).
    #[error("the handler declares {min} to {max} {what}, but the call has {found}")]
    CountBetween {
        /// `"operands"`.
        what: &'static str,
        /// Declared without the optional ones.
        min: usize,
        /// Declared with the optional ones.
        max: usize,
        /// In the frame.
        found: i64,
    },
    /// A pointer the frame needs is NULL.
    #[error("{0} is a NULL pointer")]
    Null(String),
    /// A pointer is not aligned for what it points to.
    #[error("{0} is not aligned for its type")]
    Misaligned(String),
    /// A type tag this crate does not know, or not the kind declared.
    #[error("{what} has the type tag {tag}, not {expected}")]
    Tag {
        /// What was tagged.
        what: String,
        /// The tag.
        tag: i32,
        /// What was expected.
        expected: &'static str,
    },
    /// A buffer's element type differs from the declared one.
    #[error("{what} has element type {found}, but the handler declares {expected}")]
    ElementType {
        /// Which buffer.
        what: String,
        /// Declared.
        expected: &'static str,
        /// In the frame.
        found: String,
    },
    /// A buffer's rank differs from the declared one, or is impossible.
    #[error("{what} has rank {found}, but the handler declares {expected}")]
    Rank {
        /// Which buffer.
        what: String,
        /// Declared (`any rank up to 64` when any rank is accepted).
        expected: String,
        /// In the frame.
        found: i64,
    },
    /// A dimension is negative.
    #[error("{what} has dimension {index} of size {size}")]
    Dimension {
        /// Which buffer.
        what: String,
        /// Which dimension.
        index: usize,
        /// Its size.
        size: i64,
    },
    /// A buffer, array or string is larger than an address space.
    #[error("{0} is larger than an address space")]
    TooLarge(String),
    /// A result's memory overlaps another result's or an operand's.
    #[error("{0}: a result must have memory of its own")]
    Overlap(String),
    /// A declared attribute is not in the frame.
    #[error("the handler declares the attribute `{0}`, but the call does not pass it")]
    MissingAttribute(String),
    /// An attribute in the frame is not declared.
    #[error("the call passes the attribute `{0}`, which the handler does not declare")]
    ExtraAttribute(String),
    /// An attribute name appears twice.
    #[error("the call passes the attribute `{0}` twice")]
    DuplicateAttribute(String),
    /// An attribute name is not UTF-8.
    #[error("attribute {0}'s name is not UTF-8")]
    AttributeName(usize),
    /// An attribute has another kind or element type than declared.
    #[error("attribute `{name}` is {found}, but the handler declares {expected}")]
    AttributeType {
        /// Its name.
        name: String,
        /// Declared, e.g. `an f64 scalar`.
        expected: String,
        /// In the frame, e.g. `an f32 scalar`.
        found: String,
    },
}

/// A buffer the frame passed, checked against its declaration.
#[derive(Debug)]
pub(crate) struct RawBuffer {
    pub(crate) dtype: DataType,
    pub(crate) data: *mut u8,
    pub(crate) dims: Vec<i64>,
    pub(crate) elements: usize,
}

/// An attribute value, checked against its declaration.
#[derive(Debug)]
pub(crate) enum RawAttr {
    /// A scalar of the declared type at an aligned, non-NULL address.
    Scalar { dtype: DataType, value: *const u8 },
    /// `len` elements of the declared type (aligned, non-NULL when `len > 0`).
    Array { dtype: DataType, data: *const u8, len: usize },
    /// `len` bytes (non-NULL when `len > 0`).
    Str { data: *const u8, len: usize },
}

/// A frame that matched its handler's signature: operands and results in order, attributes in
/// the order of the signature.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) args: Vec<RawBuffer>,
    pub(crate) rets: Vec<RawBuffer>,
    /// Per result: whether it is the memory of the operand it is declared to alias.
    pub(crate) aliased: Vec<bool>,
    pub(crate) attrs: Vec<RawAttr>,
}

/// What a frame asks of a handler.
pub(crate) enum Request {
    /// Answer the metadata query: write the version and traits into this struct.
    Metadata(*mut x::XLA_FFI_Metadata),
    /// Run.
    Execute(Decoded),
}

/// Reads the `struct_size` at `ptr` and then the first `T::STRUCT_SIZE` bytes (no more, even if
/// the struct is larger; an error if smaller). Fields past them are zero.
///
/// # Safety
/// `ptr` is NULL or points to a struct that starts with its `usize` size and is readable for it.
unsafe fn read_sized<T: crate::sys::Args>(ptr: *const T, what: &'static str) -> Result<T, FrameError> {
    if ptr.is_null() {
        return Err(FrameError::Null(what.to_owned()));
    }
    if (ptr as usize) % align_of::<T>() != 0 {
        return Err(FrameError::Misaligned(what.to_owned()));
    }
    // SAFETY: non-NULL and aligned (checked); every such struct starts with its usize size.
    let size = unsafe { ptr.cast::<usize>().read() };
    if size < T::STRUCT_SIZE {
        return Err(FrameError::TooShort { what, size, expected: T::STRUCT_SIZE });
    }
    let mut out = MaybeUninit::<T>::zeroed();
    // SAFETY: the struct is readable for `size >= T::STRUCT_SIZE` bytes (the caller's contract,
    // with the size it states); `out` has room for `size_of::<T>() >= T::STRUCT_SIZE`.
    unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), out.as_mut_ptr().cast::<u8>(), T::STRUCT_SIZE) };
    // SAFETY: `T: Args` is valid all-zero; its first STRUCT_SIZE bytes were copied from a value
    // of the same layout, whose fields are plain integers and pointers (any bit pattern).
    Ok(unsafe { out.assume_init() })
}

/// Reads `count` elements of an array the frame points to.
///
/// # Safety
/// `ptr` is NULL or points to at least `count` readable `T`.
unsafe fn read_array<T: Copy>(ptr: *const T, count: usize, what: &str) -> Result<Vec<T>, FrameError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(FrameError::Null(what.to_owned()));
    }
    if (ptr as usize) % align_of::<T>() != 0 {
        return Err(FrameError::Misaligned(what.to_owned()));
    }
    // SAFETY: non-NULL, aligned, `count` elements (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) }.to_vec())
}

fn check_count(what: &'static str, expected: usize, found: i64) -> Result<usize, FrameError> {
    if !(0..=MAX_COUNT).contains(&found) || found as usize != expected {
        return Err(FrameError::Count { what, expected, found });
    }
    Ok(expected)
}

/// The extension chain of a frame: a metadata request, if one is on it. At most 16 nodes are
/// walked; nodes of other types are skipped.
///
/// # Safety
/// `start` is NULL or the head of a chain of extension structs, each readable for its size.
unsafe fn find_metadata(start: x::XlaExt) -> Result<Option<*mut x::XLA_FFI_Metadata>, FrameError> {
    let mut node = start;
    for _ in 0..16 {
        if node.is_null() {
            return Ok(None);
        }
        if (node as usize) % align_of::<x::XLA_FFI_Extension_Base>() != 0 {
            return Err(FrameError::Misaligned("an extension of the call frame".into()));
        }
        // SAFETY: non-NULL, aligned; every node starts with a base (24 bytes), whose size is
        // checked before anything past the size field is read.
        let size = unsafe { node.cast::<usize>().read() };
        if size < size_of::<x::XLA_FFI_Extension_Base>() {
            return Err(FrameError::TooShort {
                what: "an extension of the call frame",
                size,
                expected: size_of::<x::XLA_FFI_Extension_Base>(),
            });
        }
        // SAFETY: the node is at least a base (checked).
        let base = unsafe { node.read() };
        if base.type_ == x::XLA_FFI_Extension_Type::METADATA {
            if size < x::XLA_FFI_Metadata_Extension::STRUCT_SIZE {
                return Err(FrameError::TooShort {
                    what: "the metadata extension",
                    size,
                    expected: x::XLA_FFI_Metadata_Extension::STRUCT_SIZE,
                });
            }
            // SAFETY: the node is a metadata extension of at least 32 bytes (checked).
            let ext = unsafe { node.cast::<x::XLA_FFI_Metadata_Extension>().read() };
            if ext.metadata.is_null() {
                return Err(FrameError::Null("the metadata extension's metadata".into()));
            }
            return Ok(Some(ext.metadata));
        }
        node = base.next;
    }
    Ok(None)
}

/// Decodes `frame` for a handler of `signature`.
///
/// # Safety
/// `frame` is NULL or an `XLA_FFI_CallFrame` as XLA builds it: every non-NULL pointer in it
/// points to what the XLA FFI ABI says, readable (results: writable) for the sizes the structs
/// state, for the duration of the call.
pub(crate) unsafe fn decode(frame: *const x::XLA_FFI_CallFrame, signature: &Signature) -> Result<Request, FrameError> {
    if frame.is_null() {
        return Err(FrameError::NullFrame);
    }
    // SAFETY: the caller's contract.
    let frame = unsafe { read_sized(frame, "the call frame") }?;
    // SAFETY: the frame's extension chain, per the caller's contract.
    if let Some(metadata) = unsafe { find_metadata(frame.extension_start) }? {
        return Ok(Request::Metadata(metadata));
    }
    // SAFETY: the frame's api, per the caller's contract.
    if let Some((major, minor)) = unsafe { api_version(frame.api) } {
        if major != x::XLA_FFI_API_MAJOR {
            return Err(FrameError::ApiVersion { major, minor });
        }
    }
    if frame.stage != x::XLA_FFI_ExecutionStage::EXECUTE {
        return Err(FrameError::Stage(frame.stage.0));
    }
    for (what, size, expected) in [
        ("the call frame's operands (XLA_FFI_Args)", frame.args.struct_size, x::XLA_FFI_Args::STRUCT_SIZE),
        ("the call frame's results (XLA_FFI_Rets)", frame.rets.struct_size, x::XLA_FFI_Rets::STRUCT_SIZE),
        ("the call frame's attributes (XLA_FFI_Attrs)", frame.attrs.struct_size, x::XLA_FFI_Attrs::STRUCT_SIZE),
    ] {
        if size != expected {
            return Err(FrameError::UnknownLayout { what, size, expected });
        }
    }

    let n_args = if signature.optional_args == 0 {
        check_count("operands", signature.args.len(), frame.args.size)?
    } else {
        let (min, max) = (signature.required_arg_count(), signature.args.len());
        match usize::try_from(frame.args.size) {
            Ok(n) if (min..=max).contains(&n) => n,
            _ => return Err(FrameError::CountBetween { what: "operands", min, max, found: frame.args.size }),
        }
    };
    // SAFETY: `types` and `args` have `size` entries (contract).
    let arg_types = unsafe { read_array(frame.args.types.cast_const(), n_args, "the operand types") }?;
    let arg_ptrs = unsafe { read_array(frame.args.args.cast_const(), n_args, "the operands") }?;
    let mut args = Vec::with_capacity(n_args);
    for (i, spec) in signature.args.iter().take(n_args).enumerate() {
        let what = format!("operand {i}");
        if arg_types[i] != x::XLA_FFI_ArgType::BUFFER {
            return Err(FrameError::Tag { what, tag: arg_types[i].0, expected: "BUFFER (1)" });
        }
        // SAFETY: an operand tagged BUFFER points to an XLA_FFI_Buffer (contract).
        args.push(unsafe { decode_buffer(arg_ptrs[i].cast(), spec, what) }?);
    }

    let n_rets = check_count("results", signature.rets.len(), frame.rets.size)?;
    // SAFETY: as above.
    let ret_types = unsafe { read_array(frame.rets.types.cast_const(), n_rets, "the result types") }?;
    let ret_ptrs = unsafe { read_array(frame.rets.rets.cast_const(), n_rets, "the results") }?;
    let mut rets = Vec::with_capacity(n_rets);
    for (i, spec) in signature.rets.iter().enumerate() {
        let what = format!("result {i}");
        if ret_types[i] != x::XLA_FFI_RetType::BUFFER {
            return Err(FrameError::Tag { what, tag: ret_types[i].0, expected: "BUFFER (1)" });
        }
        // SAFETY: as for operands.
        rets.push(unsafe { decode_buffer(ret_ptrs[i].cast(), spec, what) }?);
    }
    let aliased = check_disjoint(&args, &rets, signature)?;

    // SAFETY: the attributes, per the contract.
    let attrs = unsafe { decode_attrs(&frame.attrs, signature) }?;
    Ok(Request::Execute(Decoded { args, rets, aliased, attrs }))
}

fn span(buffer: &RawBuffer, elem_size: usize) -> Option<(usize, usize)> {
    let bytes = buffer.elements * elem_size;
    (bytes > 0).then(|| (buffer.data as usize, buffer.data as usize + bytes))
}

/// Refuses overlapping memory, except a result that is exactly the memory (same address, same
/// dims) of the operand it is declared to alias; says which results are.
fn check_disjoint(args: &[RawBuffer], rets: &[RawBuffer], signature: &Signature) -> Result<Vec<bool>, FrameError> {
    let overlaps = |a: (usize, usize), b: (usize, usize)| a.0 < b.1 && b.0 < a.1;
    let mut aliased = vec![false; rets.len()];
    for (i, ret) in rets.iter().enumerate() {
        let Some(r) = span(ret, signature.rets[i].dtype.size()) else { continue };
        if let Some(j) = signature.rets[i].alias {
            let arg = &args[j];
            if span(arg, signature.args[j].dtype.size()) == Some(r) && arg.dims == ret.dims {
                aliased[i] = true;
            }
        }
        for (j, other) in rets.iter().enumerate().skip(i + 1) {
            if span(other, signature.rets[j].dtype.size()).is_some_and(|o| overlaps(r, o)) {
                return Err(FrameError::Overlap(format!("result {i} overlaps result {j}")));
            }
        }
        for (j, arg) in args.iter().enumerate() {
            if aliased[i] && signature.rets[i].alias == Some(j) {
                continue;
            }
            if span(arg, signature.args[j].dtype.size()).is_some_and(|a| overlaps(r, a)) {
                return Err(FrameError::Overlap(format!("result {i} overlaps operand {j}")));
            }
        }
    }
    Ok(aliased)
}

/// # Safety
/// `ptr` is NULL or an `XLA_FFI_Buffer` readable for its size, whose `dims` (when non-NULL) has
/// `rank` entries and whose `data` (when non-NULL) holds the elements its dimensions describe.
unsafe fn decode_buffer(
    ptr: *const x::XLA_FFI_Buffer,
    spec: &BufferSpec,
    what: String,
) -> Result<RawBuffer, FrameError> {
    if ptr.is_null() {
        return Err(FrameError::Null(what));
    }
    if (ptr as usize) % align_of::<x::XLA_FFI_Buffer>() != 0 {
        return Err(FrameError::Misaligned(what));
    }
    // SAFETY: the caller's contract; `read_sized` reads the size first.
    let buffer = unsafe { read_sized(ptr, "a buffer (XLA_FFI_Buffer)") }?;
    if buffer.dtype != spec.dtype.0 {
        return Err(FrameError::ElementType {
            what,
            expected: spec.dtype.name(),
            found: DataType(buffer.dtype).describe(),
        });
    }
    let rank_ok = match spec.rank {
        Some(rank) => buffer.rank == rank as i64,
        None => (0..=MAX_RANK).contains(&buffer.rank),
    };
    if !rank_ok {
        let expected = match spec.rank {
            Some(rank) => rank.to_string(),
            None => format!("any rank up to {MAX_RANK}"),
        };
        return Err(FrameError::Rank { what, expected, found: buffer.rank });
    }
    let rank = buffer.rank as usize;
    // SAFETY: `dims` has `rank` entries (contract); rank is at most 64 (checked).
    let dims = unsafe { read_array(buffer.dims.cast_const(), rank, &format!("{what}'s dimensions")) }?;
    let mut elements: usize = 1;
    for (index, &size) in dims.iter().enumerate() {
        if size < 0 {
            return Err(FrameError::Dimension { what, index, size });
        }
        elements = elements.checked_mul(size as usize).ok_or_else(|| FrameError::TooLarge(what.clone()))?;
    }
    let bytes = elements.checked_mul(spec.dtype.size()).filter(|&b| b <= isize::MAX as usize);
    let Some(bytes) = bytes else { return Err(FrameError::TooLarge(what)) };
    let data = buffer.data.cast::<u8>();
    if bytes > 0 {
        if data.is_null() {
            return Err(FrameError::Null(format!("{what}'s data")));
        }
        if (data as usize) % spec.dtype.align() != 0 {
            return Err(FrameError::Misaligned(format!("{what}'s data")));
        }
        if (data as usize).checked_add(bytes).is_none() {
            return Err(FrameError::TooLarge(what));
        }
    }
    Ok(RawBuffer { dtype: spec.dtype, data, dims, elements })
}

/// Reads an attribute name.
///
/// # Safety
/// `ptr` is NULL or a byte span whose `ptr` holds `len` bytes.
unsafe fn read_span(ptr: *const x::XLA_FFI_ByteSpan, what: &str) -> Result<(*const u8, usize), FrameError> {
    if ptr.is_null() {
        return Err(FrameError::Null(what.to_owned()));
    }
    if (ptr as usize) % align_of::<x::XLA_FFI_ByteSpan>() != 0 {
        return Err(FrameError::Misaligned(what.to_owned()));
    }
    // SAFETY: non-NULL, aligned byte span (contract).
    let span = unsafe { ptr.read() };
    if span.len > MAX_STRING {
        return Err(FrameError::TooLarge(what.to_owned()));
    }
    if span.len > 0 && span.ptr.is_null() {
        return Err(FrameError::Null(format!("{what}'s bytes")));
    }
    Ok((span.ptr.cast(), span.len))
}

fn describe_attr(kind: &str, dtype: x::XLA_FFI_DataType) -> String {
    format!("{kind} of {}", DataType(dtype).describe())
}

/// # Safety
/// `attrs` is from a frame as [`decode`] requires.
unsafe fn decode_attrs(attrs: &x::XLA_FFI_Attrs, signature: &Signature) -> Result<Vec<RawAttr>, FrameError> {
    if attrs.size < 0 || attrs.size > MAX_COUNT {
        return Err(FrameError::Count { what: "attributes", expected: signature.attrs.len(), found: attrs.size });
    }
    let n = attrs.size as usize;
    // SAFETY: `types`, `names` and `attrs` have `size` entries (contract).
    let types = unsafe { read_array(attrs.types.cast_const(), n, "the attribute types") }?;
    let names = unsafe { read_array(attrs.names.cast_const(), n, "the attribute names") }?;
    let values = unsafe { read_array(attrs.attrs.cast_const(), n, "the attribute values") }?;
    let mut found: Vec<Option<RawAttr>> = signature.attrs.iter().map(|_| None).collect();
    for i in 0..n {
        // SAFETY: a name is a byte span (contract).
        let (ptr, len) = unsafe { read_span(names[i], &format!("attribute {i}'s name")) }?;
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: `len` bytes at non-NULL `ptr` (checked; contract).
            unsafe { std::slice::from_raw_parts(ptr, len) }
        };
        let name = std::str::from_utf8(bytes).map_err(|_| FrameError::AttributeName(i))?;
        let Some(index) = signature.attrs.iter().position(|(n, _)| n == name) else {
            return Err(FrameError::ExtraAttribute(name.to_owned()));
        };
        if found[index].is_some() {
            return Err(FrameError::DuplicateAttribute(name.to_owned()));
        }
        let spec = signature.attrs[index].1;
        let what = format!("attribute `{name}`");
        let value = values[i];
        let mismatch =
            |found: String| FrameError::AttributeType { name: name.to_owned(), expected: spec.describe(), found };
        let raw = match types[i] {
            x::XLA_FFI_AttrType::SCALAR => {
                let scalar: x::XLA_FFI_Scalar = unsafe { read_plain(value.cast(), &what) }?;
                let AttrSpec::Scalar(dtype) = spec else {
                    return Err(mismatch(describe_attr("a scalar", scalar.dtype)));
                };
                if scalar.dtype != dtype.0 {
                    return Err(mismatch(describe_attr("a scalar", scalar.dtype)));
                }
                let value = scalar.value.cast_const().cast::<u8>();
                if value.is_null() {
                    return Err(FrameError::Null(format!("{what}'s value")));
                }
                if (value as usize) % dtype.align() != 0 {
                    return Err(FrameError::Misaligned(format!("{what}'s value")));
                }
                RawAttr::Scalar { dtype, value }
            }
            x::XLA_FFI_AttrType::ARRAY => {
                let array: x::XLA_FFI_Array = unsafe { read_plain(value.cast(), &what) }?;
                let AttrSpec::Array(dtype) = spec else { return Err(mismatch(describe_attr("an array", array.dtype))) };
                if array.dtype != dtype.0 {
                    return Err(mismatch(describe_attr("an array", array.dtype)));
                }
                let fits = array.size.checked_mul(dtype.size()).is_some_and(|b| b <= isize::MAX as usize);
                if !fits {
                    return Err(FrameError::TooLarge(what));
                }
                let data = array.data.cast_const().cast::<u8>();
                if array.size > 0 {
                    if data.is_null() {
                        return Err(FrameError::Null(format!("{what}'s elements")));
                    }
                    if (data as usize) % dtype.align() != 0 {
                        return Err(FrameError::Misaligned(format!("{what}'s elements")));
                    }
                }
                RawAttr::Array { dtype, data, len: array.size }
            }
            x::XLA_FFI_AttrType::STRING => {
                let AttrSpec::Str = spec else { return Err(mismatch("a string".into())) };
                // SAFETY: a STRING attribute is a byte span (contract).
                let (data, len) = unsafe { read_span(value.cast(), &what) }?;
                RawAttr::Str { data, len }
            }
            x::XLA_FFI_AttrType::DICTIONARY => return Err(mismatch("a dictionary".into())),
            other => {
                return Err(FrameError::Tag { what, tag: other.0, expected: "ARRAY, SCALAR or STRING (1, 3, 4)" });
            }
        };
        found[index] = Some(raw);
    }
    let mut out = Vec::with_capacity(found.len());
    for (i, attr) in found.into_iter().enumerate() {
        match attr {
            Some(attr) => out.push(attr),
            None => return Err(FrameError::MissingAttribute(signature.attrs[i].0.clone())),
        }
    }
    Ok(out)
}

/// Reads a struct without a size field (`XLA_FFI_Scalar`, `XLA_FFI_Array`).
///
/// # Safety
/// `ptr` is NULL or points to a readable `T`.
unsafe fn read_plain<T: Copy>(ptr: *const T, what: &str) -> Result<T, FrameError> {
    if ptr.is_null() {
        return Err(FrameError::Null(what.to_owned()));
    }
    if (ptr as usize) % align_of::<T>() != 0 {
        return Err(FrameError::Misaligned(what.to_owned()));
    }
    // SAFETY: non-NULL, aligned (checked), readable (contract).
    Ok(unsafe { ptr.read() })
}

/// The frame's XLA FFI API, when the frame is long enough to carry one and the table is long
/// enough to hold `XLA_FFI_Error_Create` and of major version 0.
///
/// # Safety
/// `frame` is NULL or readable for its `struct_size`; its `api`, when non-NULL, points to an
/// `XLA_FFI_Api` readable for its `struct_size`.
pub(crate) unsafe fn frame_api(frame: *const x::XLA_FFI_CallFrame) -> Option<*const x::XLA_FFI_Api> {
    if frame.is_null() || (frame as usize) % align_of::<x::XLA_FFI_CallFrame>() != 0 {
        return None;
    }
    // SAFETY: non-NULL, aligned frame; its size is read before the api field.
    let size = unsafe { frame.cast::<usize>().read() };
    if size < std::mem::offset_of!(x::XLA_FFI_CallFrame, api) + size_of::<*const c_void>() {
        return None;
    }
    // SAFETY: the frame holds its api field (checked).
    let api = unsafe {
        frame.cast::<u8>().add(std::mem::offset_of!(x::XLA_FFI_CallFrame, api)).cast::<*const x::XLA_FFI_Api>().read()
    };
    // SAFETY: the contract.
    unsafe { api_version(api) }.filter(|&(major, _)| major == 0).and_then(|_| {
        // SAFETY: as above; api_version read the size.
        let size = unsafe { api.cast::<usize>().read() };
        (size >= x::XLA_FFI_Api::ERROR_DESTROY_OFFSET + size_of::<usize>()).then_some(api)
    })
}

/// The version of an XLA FFI API table, when it is long enough to say.
///
/// # Safety
/// `api` is NULL or points to an `XLA_FFI_Api` readable for its `struct_size`.
pub(crate) unsafe fn api_version(api: *const x::XLA_FFI_Api) -> Option<(i32, i32)> {
    if api.is_null() || (api as usize) % align_of::<x::XLA_FFI_Api>() != 0 {
        return None;
    }
    // SAFETY: non-NULL, aligned table; its size first.
    let size = unsafe { api.cast::<usize>().read() };
    if size < x::XLA_FFI_Api::API_VERSION_OFFSET + x::XLA_FFI_Api_Version::STRUCT_SIZE {
        return None;
    }
    // SAFETY: the table holds its version (checked).
    let version =
        unsafe { api.cast::<u8>().add(x::XLA_FFI_Api::API_VERSION_OFFSET).cast::<x::XLA_FFI_Api_Version>().read() };
    (version.struct_size >= x::XLA_FFI_Api_Version::STRUCT_SIZE)
        .then_some((version.major_version, version.minor_version))
}
