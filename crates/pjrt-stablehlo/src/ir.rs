//! The IR: a module of ops (builtin, func, stablehlo, chlo, and whatever other dialect a
//! producer used), their attributes and types, regions and blocks, as the portable artifact
//! holds them once VHLO is mapped back to StableHLO.
//!
//! Scalar element types are [`pjrt_types::ElementType`] (`pjrt_client::ElementType`) wherever PJRT has the type (every
//! integer, float and complex type StableHLO has, `i1` as `PRED`); the few MLIR scalar types
//! PJRT lacks (`index`, `tf32`) are [`Type`] variants of their own.

use std::sync::Arc;

pub use pjrt_types::ElementType;

/// A dimension of a ranked tensor: a size, or `?` (dynamic).
///
/// ```
/// use pjrt_stablehlo::ir::Dim;
/// assert_eq!(Dim::from_raw(-9223372036854775808), Dim::Dynamic);
/// assert_eq!(Dim::from_raw(4), Dim::Fixed(4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A known size.
    Fixed(u64),
    /// `?`: known only when the program runs (or after shape refinement).
    Dynamic,
}

impl Dim {
    /// MLIR's encoding: `i64::MIN` is dynamic; other negative values are not sizes and are
    /// taken as dynamic as well (the reader refuses them before they get here).
    pub fn from_raw(raw: i64) -> Dim {
        if raw < 0 {
            Dim::Dynamic
        } else {
            Dim::Fixed(raw as u64)
        }
    }
}

/// A ranked tensor type: `tensor<2x?xf32>`, with bounds for its `?` dimensions when the
/// producer gave them (`tensor<?xf32, #stablehlo.bounds<8>>`).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorType {
    /// The dimensions, outermost first.
    pub dims: Vec<Dim>,
    /// The element type (a scalar, or a quantized type).
    pub element: Box<Type>,
    /// The encoding: [`Attr::Bounds`] for bounded dynamic dimensions, or another attribute.
    pub encoding: Option<Box<Attr>>,
}

impl TensorType {
    /// The element type as PJRT names it, when it is one PJRT has.
    ///
    /// ```
    /// use pjrt_stablehlo::ir::{Dim, ElementType, TensorType, Type};
    /// let t = TensorType { dims: vec![Dim::Fixed(2)], element: Box::new(Type::Scalar(ElementType::F32)), encoding: None };
    /// assert_eq!(t.element_type(), Some(ElementType::F32));
    /// ```
    pub fn element_type(&self) -> Option<ElementType> {
        match *self.element {
            Type::Scalar(e) => Some(e),
            _ => None,
        }
    }
}

/// A uniform quantized element type (`!quant.uniform<i8:f32, 0.5:-3>`), per tensor or per axis.
///
/// ```
/// use pjrt_stablehlo::ir::{ElementType, QuantizedType, Type};
/// let q = QuantizedType { flags: 1, storage: Box::new(Type::Scalar(ElementType::S8)),
///     expressed: Box::new(Type::Scalar(ElementType::F32)), axis: None,
///     scales: vec![0.5f64.to_bits()], zero_points: vec![-3], storage_min: -128, storage_max: 127 };
/// assert_eq!(pjrt_stablehlo::type_text(&Type::Quantized(Box::new(q))), "!quant.uniform<i8:f32, 5.0e-1:-3>");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizedType {
    /// Bit 0: signed storage.
    pub flags: u64,
    /// The storage type (`i8`).
    pub storage: Box<Type>,
    /// The expressed type (`f32`).
    pub expressed: Box<Type>,
    /// The quantized dimension, for per-axis types.
    pub axis: Option<u64>,
    /// The scales (one, or one per slice of `axis`), as f64 bit patterns.
    pub scales: Vec<u64>,
    /// The zero points, one per scale.
    pub zero_points: Vec<i64>,
    /// The smallest storage value.
    pub storage_min: i64,
    /// The largest storage value.
    pub storage_max: i64,
}

/// A type.
///
/// ```
/// use pjrt_stablehlo::ir::{Dim, ElementType, TensorType, Type};
/// let t = Type::Tensor(TensorType { dims: vec![Dim::Dynamic, Dim::Fixed(3)],
///     element: Box::new(Type::Scalar(ElementType::BF16)), encoding: None });
/// assert_eq!(pjrt_stablehlo::type_text(&t), "tensor<?x3xbf16>");
/// assert_eq!(pjrt_stablehlo::type_text(&Type::Token), "!stablehlo.token");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Type {
    /// A scalar PJRT has: integers (`i32` is `S32`, `ui8` is `U8`, `i1` is `PRED`), floats,
    /// complex numbers.
    Scalar(ElementType),
    /// `index`.
    Index,
    /// `tf32`.
    Tf32,
    /// `none`.
    None,
    /// `tensor<...>`.
    Tensor(TensorType),
    /// `tensor<*xT>`.
    UnrankedTensor(Box<Type>),
    /// `memref<...>` (VHLO's ranked buffer).
    Buffer {
        /// Dimensions.
        dims: Vec<Dim>,
        /// Element type.
        element: Box<Type>,
    },
    /// `memref<*xT>` (an unranked buffer: MLIR text of other passes; no VHLO form).
    UnrankedBuffer(Box<Type>),
    /// `tuple<...>`.
    Tuple(Vec<Type>),
    /// `!stablehlo.token`.
    Token,
    /// `!stablehlo.future<...>`.
    Future(Vec<Type>),
    /// A quantized element type.
    Quantized(Box<QuantizedType>),
    /// `(inputs) -> outputs`.
    Function {
        /// Parameter types.
        inputs: Vec<Type>,
        /// Result types.
        outputs: Vec<Type>,
    },
    /// A type of another dialect, kept as its MLIR text.
    Opaque(String),
}

/// An `#stablehlo<...>` enum attribute: which enum, and the value's name.
///
/// ```
/// use pjrt_stablehlo::ir::{Attr, EnumAttr};
/// let a = Attr::Enum(EnumAttr { kind: "comparison_direction", value: "LT" });
/// assert_eq!(pjrt_stablehlo::attr_text(&a), "#stablehlo<comparison_direction LT>");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumAttr {
    /// The enum (`comparison_direction`, `precision`, `fft_type`, ...).
    pub kind: &'static str,
    /// The value (`EQ`, `DEFAULT`, `RFFT`, ...).
    pub value: &'static str,
}

/// An attribute.
///
/// ```
/// use pjrt_stablehlo::attr_text;
/// use pjrt_stablehlo::ir::{Attr, ElementType, Type};
/// assert_eq!(attr_text(&Attr::I64Array(vec![1, 0])), "array<i64: 1, 0>");
/// assert_eq!(attr_text(&Attr::Integer { value: -1, ty: Type::Scalar(ElementType::S32) }), "-1 : i32");
/// assert_eq!(attr_text(&Attr::Float { bits: 0x3F80_0000, ty: Type::Scalar(ElementType::F32) }), "0x3F800000 : f32");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Attr {
    /// `unit`.
    Unit,
    /// `true` / `false`.
    Bool(bool),
    /// `5 : i64`: the value's bits (sign-extended for signless/signed types) and its type.
    Integer {
        /// The value, two's complement in 64 bits.
        value: i64,
        /// Its type (an integer or `index`).
        ty: Type,
    },
    /// A float: its IEEE bits (in the low bits) and its type.
    Float {
        /// The bit pattern.
        bits: u64,
        /// Its type.
        ty: Type,
    },
    /// A string (bytes: MLIR strings need not be UTF-8).
    String(Vec<u8>),
    /// `[a, b]`.
    Array(Vec<Attr>),
    /// `{name = value}`.
    Dict(Vec<(String, Attr)>),
    /// A type used as an attribute.
    Type(Type),
    /// `@name`.
    SymbolRef(String),
    /// `dense<...> : tensor<...>`: every element's little-endian bytes in row-major order, or
    /// one element's bytes standing for all of them (a splat). An element takes
    /// [`dense_element_bytes`] bytes: an `i1` one byte, 0 or 1 (never MLIR bytecode's bits
    /// packed 8 to a byte); a sub-byte integer or float one byte, of which only its low bits
    /// count; a complex number its two parts. A tensor without elements has no bytes.
    /// [`Attr::dense_splat`] and [`Attr::dense_elements`] make one whose data is checked;
    /// [`DenseData`] reads one.
    Dense {
        /// The tensor type.
        ty: Type,
        /// The data.
        data: Arc<[u8]>,
    },
    /// `array<i64: ...>`.
    I64Array(Vec<i64>),
    /// `array<i1: ...>`.
    BoolArray(Vec<bool>),
    /// `#stablehlo<kind VALUE>`.
    Enum(EnumAttr),
    /// `#stablehlo.bounds<...>` (a tensor type's encoding): `None` is `?`.
    Bounds(Vec<Option<i64>>),
    /// A StableHLO struct attribute (`#stablehlo.dot<...>`, `#stablehlo.gather<...>`,
    /// `#stablehlo.channel_handle<...>`, ...): its mnemonic and fields in order.
    Struct {
        /// `dot`, `gather`, `scatter`, `conv`, `channel_handle`, `output_operand_alias`,
        /// `dot_algorithm`, `result_accuracy`, ...
        mnemonic: &'static str,
        /// The fields.
        fields: Vec<(&'static str, Attr)>,
    },
    /// A Shardy (`sdy`) attribute, kept as its MLIR text: `#sdy.` + `mnemonic` + `body`
    /// (`#sdy.sharding<@mesh, [{"x"}, {}]>`), or `#sdy<` + `mnemonic` + `body` + `>` when the
    /// body does not start with `<` (`#sdy<manual_axes{"x"}>`).
    Sdy {
        /// `mesh`, `sharding`, `sharding_per_value`, `manual_axes`, ...
        mnemonic: &'static str,
        /// The text after the mnemonic.
        body: String,
    },
    /// An attribute of another dialect kept as its MLIR text (what the producer wrote when the
    /// dialect has no bytecode encoding of its own).
    Opaque(String),
}

/// Why bytes are not the data of a dense attribute of a type ([`Attr::dense_splat`],
/// [`Attr::dense_elements`], [`DenseData::new`]).
///
/// ```
/// use pjrt_stablehlo::ir::{Attr, DenseError, Dim, ElementType, TensorType, Type};
/// let ty = Type::Tensor(TensorType { dims: vec![Dim::Fixed(4)], element: Box::new(Type::Scalar(ElementType::PRED)), encoding: None });
/// // One byte is a splat, never four `i1` packed into a byte.
/// assert!(matches!(Attr::dense_elements(ty.clone(), vec![1]), Err(DenseError::Length { .. })));
/// assert!(matches!(Attr::dense_splat(ty, &[2]), Err(DenseError::Bool { .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DenseError {
    /// The type is not a ranked tensor of static shape (its text).
    #[error("a dense attribute's type must be a ranked tensor of static shape, not {0}")]
    Type(String),
    /// The type has more elements than 2^64.
    #[error("{0} has more elements than 2^64")]
    TooMany(String),
    /// The element type has no dense encoding here (its text).
    #[error("dense elements of {0} are not supported")]
    Element(String),
    /// The data holds neither every element nor one.
    #[error("{len} bytes of data for {count} elements of {per} bytes each: {expected}")]
    Length {
        /// Bytes given.
        len: usize,
        /// Elements of the type.
        count: u64,
        /// Bytes per element.
        per: usize,
        /// What was expected.
        expected: &'static str,
    },
    /// An `i1` byte that is neither 0 nor 1.
    #[error("i1 element {index} is the byte {byte:#04x}: an i1 is stored as 0 or 1")]
    Bool {
        /// The element (0 for a splat).
        index: u64,
        /// The byte.
        byte: u8,
    },
}

/// The bytes one element of `element` takes in [`Attr::Dense`] data: a byte for `i1` and the
/// sub-byte types, two parts for a complex number; `None` for a type without a dense encoding.
///
/// ```
/// use pjrt_stablehlo::ir::{dense_element_bytes, ElementType, Type};
/// assert_eq!(dense_element_bytes(&Type::Scalar(ElementType::PRED)), Some(1));
/// assert_eq!(dense_element_bytes(&Type::Scalar(ElementType::S4)), Some(1));
/// assert_eq!(dense_element_bytes(&Type::Scalar(ElementType::BF16)), Some(2));
/// assert_eq!(dense_element_bytes(&Type::Scalar(ElementType::C64)), Some(8));
/// ```
pub fn dense_element_bytes(element: &Type) -> Option<usize> {
    if let Some((w, _)) = int_width(element) {
        return Some((w as usize).div_ceil(8));
    }
    match element {
        Type::Scalar(ElementType::C64) => Some(8),
        Type::Scalar(ElementType::C128) => Some(16),
        Type::Tf32 => Some(4),
        t => float_width(t).map(|w| (w as usize).div_ceil(8)),
    }
}

/// The element count and element type of a dense attribute's type.
pub(crate) fn dense_shape(ty: &Type) -> Result<(u64, &Type, usize), DenseError> {
    let not_static = || DenseError::Type(crate::type_text(ty));
    let Type::Tensor(t) = ty else { return Err(not_static()) };
    let mut count: u64 = 1;
    for d in &t.dims {
        match d {
            Dim::Fixed(n) => count = count.checked_mul(*n).ok_or_else(|| DenseError::TooMany(crate::type_text(ty)))?,
            Dim::Dynamic => return Err(not_static()),
        }
    }
    let per = dense_element_bytes(&t.element).ok_or_else(|| DenseError::Element(crate::type_text(&t.element)))?;
    Ok((count, &t.element, per))
}

fn check_bools(element: &Type, data: &[u8]) -> Result<(), DenseError> {
    if *element == Type::Scalar(ElementType::PRED) {
        if let Some(i) = data.iter().position(|&b| b > 1) {
            return Err(DenseError::Bool { index: i as u64, byte: data[i] });
        }
    }
    Ok(())
}

impl Attr {
    /// `dense<VALUE> : ty`: one element's bytes standing for every element of `ty` (as
    /// [`Attr::Dense`] holds an element). A splat of a tensor without elements has none: it
    /// is the empty tensor.
    ///
    /// ```
    /// use pjrt_stablehlo::ir::{Attr, Dim, ElementType, TensorType, Type};
    /// let ty = Type::Tensor(TensorType { dims: vec![Dim::Fixed(4)], element: Box::new(Type::Scalar(ElementType::PRED)), encoding: None });
    /// let all_true = Attr::dense_splat(ty, &[1]).unwrap();
    /// assert_eq!(pjrt_stablehlo::attr_text(&all_true), "dense<true> : tensor<4xi1>");
    /// ```
    pub fn dense_splat(ty: Type, element: &[u8]) -> Result<Attr, DenseError> {
        let (count, elem, per) = dense_shape(&ty)?;
        if element.len() != per {
            return Err(DenseError::Length { len: element.len(), count, per, expected: "a splat is one element" });
        }
        check_bools(elem, element)?;
        let data: Arc<[u8]> = if count == 0 { Arc::from(Vec::new()) } else { Arc::from(element) };
        Ok(Attr::Dense { ty, data })
    }

    /// `dense<[...]> : ty`: every element's bytes, in row-major order (as [`Attr::Dense`] holds
    /// an element). Elements whose bytes are all the same are held as a splat, as MLIR holds
    /// them: the same values read from text and from bytecode are the same attribute.
    ///
    /// ```
    /// use pjrt_stablehlo::ir::{Attr, Dim, ElementType, TensorType, Type};
    /// let ty = Type::Tensor(TensorType { dims: vec![Dim::Fixed(2)], element: Box::new(Type::Scalar(ElementType::PRED)), encoding: None });
    /// let a = Attr::dense_elements(ty.clone(), vec![1, 0]).unwrap();
    /// assert_eq!(pjrt_stablehlo::attr_text(&a), "dense<[true, false]> : tensor<2xi1>");
    /// assert_eq!(Attr::dense_elements(ty.clone(), vec![1, 1]), Attr::dense_splat(ty, &[1]));
    /// ```
    pub fn dense_elements(ty: Type, data: Vec<u8>) -> Result<Attr, DenseError> {
        let (count, elem, per) = dense_shape(&ty)?;
        if count.checked_mul(per as u64) != Some(data.len() as u64) {
            return Err(DenseError::Length { len: data.len(), count, per, expected: "expected every element" });
        }
        check_bools(elem, &data)?;
        if count > 1 && data.chunks_exact(per).all(|e| e == &data[..per]) {
            return Ok(Attr::Dense { ty, data: Arc::from(&data[..per]) });
        }
        Ok(Attr::Dense { ty, data: Arc::from(data) })
    }
}

/// The data of an [`Attr::Dense`], checked against its type: a splat, or every element.
///
/// ```
/// use pjrt_stablehlo::ir::{Attr, DenseData, Dim, ElementType, TensorType, Type};
/// let ty = Type::Tensor(TensorType { dims: vec![Dim::Fixed(3)], element: Box::new(Type::Scalar(ElementType::S16)), encoding: None });
/// let d = DenseData::new(&ty, &[7, 0]).unwrap();
/// assert!(d.is_splat());
/// assert_eq!(d.element(2), Some(&[7u8, 0][..]));
/// assert!(DenseData::new(&ty, &[7, 0, 1, 0]).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenseData<'a> {
    data: &'a [u8],
    count: u64,
    per: usize,
}

impl<'a> DenseData<'a> {
    /// `data` read as the data of a dense attribute of type `ty`: one element's bytes (a
    /// splat), or every element's; an error otherwise, or where an `i1` byte is not 0 or 1.
    pub fn new(ty: &Type, data: &'a [u8]) -> Result<DenseData<'a>, DenseError> {
        let (count, elem, per) = dense_shape(ty)?;
        let every = count.checked_mul(per as u64) == Some(data.len() as u64);
        let splat = count > 0 && data.len() == per;
        if !(every || splat) {
            return Err(DenseError::Length {
                len: data.len(),
                count,
                per,
                expected: "expected every element, or one (a splat)",
            });
        }
        check_bools(elem, data)?;
        Ok(DenseData { data, count, per })
    }

    /// The number of elements of the type.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The bytes an element takes ([`dense_element_bytes`]).
    pub fn element_bytes(&self) -> usize {
        self.per
    }

    /// Whether one element's bytes stand for every element (a tensor of one element is a
    /// splat too, as in MLIR).
    pub fn is_splat(&self) -> bool {
        self.count > 0 && self.data.len() == self.per
    }

    /// Element `i`'s bytes (row-major), `None` past the last.
    pub fn element(&self, i: u64) -> Option<&'a [u8]> {
        if i >= self.count {
            return None;
        }
        if self.is_splat() {
            return Some(self.data);
        }
        let start = usize::try_from(i).ok()?.checked_mul(self.per)?;
        self.data.get(start..start + self.per)
    }

    /// The data as given: every element's bytes, or one element's for a splat.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }
}

/// A source location, as the producer recorded it (the printer leaves locations out).
///
/// ```
/// use pjrt_stablehlo::ir::Location;
/// let l = Location::Name { name: "x".into(), child: std::sync::Arc::new(Location::Unknown) };
/// assert!(matches!(l, Location::Name { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Location {
    /// `loc(unknown)`.
    Unknown,
    /// `loc("file":line:col)`.
    FileLineCol {
        /// File name.
        file: String,
        /// Line.
        line: u64,
        /// Column.
        column: u64,
    },
    /// `loc("file":1:2 to 3:4)`, `loc("file":1:2 to :4)` and the other file ranges (MLIR's
    /// `FileLineColRange` other than a single line and column, which is [`Location::FileLineCol`]).
    FileLineColRange {
        /// File name.
        file: String,
        /// The line it starts on (0 where none is given).
        start_line: u64,
        /// The column it starts at (0 where none is given).
        start_column: u64,
        /// The line it ends on (the start line where none is given).
        end_line: u64,
        /// The column it ends at (0 where none is given).
        end_column: u64,
    },
    /// `loc("name"(child))`.
    Name {
        /// The name.
        name: String,
        /// The location it names.
        child: Arc<Location>,
    },
    /// `loc(callsite(callee at caller))`.
    CallSite {
        /// Callee.
        callee: Arc<Location>,
        /// Caller.
        caller: Arc<Location>,
    },
    /// `loc(fused[...])`, with optional metadata.
    Fused {
        /// The locations.
        locations: Vec<Arc<Location>>,
        /// Metadata.
        metadata: Option<Box<Attr>>,
    },
    /// A location this crate does not model, as text.
    Opaque(String),
}

/// An SSA value: its number within the isolated region that defines it, and its type.
///
/// ```
/// use pjrt_stablehlo::ir::{ElementType, Type, Value};
/// let v = Value { id: 0, ty: Type::Scalar(ElementType::F32) };
/// assert_eq!(v.id, 0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    /// The number, unique among the values visible where it is defined (`%3`).
    pub id: u32,
    /// The type.
    pub ty: Type,
}

/// A block: arguments (with their locations) and ops.
///
/// ```
/// let b = pjrt_stablehlo::ir::Block::default();
/// assert!(b.args.is_empty() && b.ops.is_empty() && b.arg_locations.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    /// Arguments.
    pub args: Vec<Value>,
    /// Operations, in order.
    pub ops: Vec<Op>,
    /// Each argument's location, in order; empty where every one is unknown (the form
    /// readers give such a block, so that modules compare equal however they were read).
    pub arg_locations: Vec<Arc<Location>>,
}

impl Block {
    /// The location of argument `i` (unknown where none is recorded).
    ///
    /// ```
    /// use pjrt_stablehlo::ir::{Block, Location};
    /// assert_eq!(*Block::default().arg_location(0), Location::Unknown);
    /// ```
    pub fn arg_location(&self, i: usize) -> &Location {
        self.arg_locations.get(i).map_or(&Location::Unknown, |l| l)
    }

    /// `locations` as [`Block::arg_locations`] holds them: empty where every one is unknown.
    ///
    /// ```
    /// use pjrt_stablehlo::ir::{Block, Location};
    /// assert!(Block::arg_locations_of(vec![Location::Unknown.into()]).is_empty());
    /// ```
    pub fn arg_locations_of(locations: Vec<Arc<Location>>) -> Vec<Arc<Location>> {
        if locations.iter().all(|l| **l == Location::Unknown) {
            Vec::new()
        } else {
            locations
        }
    }
}

/// A region: blocks (the first is the entry).
///
/// ```
/// let r = pjrt_stablehlo::ir::Region::default();
/// assert!(r.blocks.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Region {
    /// Blocks.
    pub blocks: Vec<Block>,
}

/// An operation, in MLIR's generic form: `%r = "name"(operands) ({regions}) {attributes} : type`.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// The full name (`stablehlo.add`, `func.func`, `builtin.module`, `sdy.mesh`).
    pub name: String,
    /// Operands, by value number.
    pub operands: Vec<u32>,
    /// Results.
    pub results: Vec<Value>,
    /// Attributes, inherent ones first (as the producer ordered them), then discardable ones.
    pub attributes: Vec<(String, Attr)>,
    /// Regions.
    pub regions: Vec<Region>,
    /// Successor blocks (indices into the enclosing region's blocks).
    pub successors: Vec<u32>,
    /// Where the producer said it came from (shared: many ops have the same).
    pub location: Arc<Location>,
}

impl Op {
    /// This op and every op nested in its regions, depth first (each op before the ops in its
    /// regions), as [`Module::walk`] walks a module.
    ///
    /// ```
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
    /// let module = pjrt_stablehlo::read_bytecode(&std::fs::read(path).unwrap()).unwrap();
    /// let outer = &module.ops[0];
    /// assert_eq!(outer.walk().count(), module.walk().count());
    /// assert_eq!(outer.walk().next().map(|op| op.name.as_str()), Some("builtin.module"));
    /// ```
    pub fn walk(&self) -> impl Iterator<Item = &Op> {
        walk_ops(vec![self])
    }

    /// The attribute named `name`, if the op has it.
    ///
    /// ```
    /// use pjrt_stablehlo::ir::{Attr, Location, Op};
    /// let op = Op { name: "func.func".into(), operands: vec![], results: vec![],
    ///     attributes: vec![("sym_name".into(), Attr::String(b"main".to_vec()))],
    ///     regions: vec![], successors: vec![], location: Location::Unknown.into() };
    /// assert_eq!(op.attr("sym_name"), Some(&Attr::String(b"main".to_vec())));
    /// ```
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attributes.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }
}

/// A module: the top-level `builtin.module` op(s) of the artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Module {
    /// The bytecode version of the file (6 for JAX 0.10 and later).
    pub bytecode_version: u64,
    /// The producer string (`StableHLO_v1.15.0`).
    pub producer: String,
    /// The top-level ops (one `builtin.module` for a portable artifact).
    pub ops: Vec<Op>,
}

impl Module {
    /// Every op, depth first (each op before the ops in its regions).
    ///
    /// ```
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
    /// let module = pjrt_stablehlo::read_bytecode(&std::fs::read(path).unwrap()).unwrap();
    /// let adds = module.walk().filter(|op| op.name == "stablehlo.add").count();
    /// assert_eq!(adds, 1);
    /// ```
    pub fn walk(&self) -> impl Iterator<Item = &Op> {
        walk_ops(self.ops.iter().rev().collect())
    }
}

/// The ops of `stack` (popped from its end) and every op nested in them, depth first.
fn walk_ops(mut stack: Vec<&Op>) -> impl Iterator<Item = &Op> {
    std::iter::from_fn(move || {
        let op = stack.pop()?;
        for region in op.regions.iter().rev() {
            for block in region.blocks.iter().rev() {
                stack.extend(block.ops.iter().rev());
            }
        }
        Some(op)
    })
}

/// The value of an integer of `width` bits held in the low bits of `raw`: sign-extended from
/// its own width when `signed`, else masked to it.
pub(crate) fn int_of_width(raw: u64, width: u32, signed: bool) -> i64 {
    if width >= 64 {
        raw as i64
    } else if signed {
        let shift = 64 - width;
        ((raw << shift) as i64) >> shift
    } else {
        (raw & ((1u64 << width) - 1)) as i64
    }
}

/// Bits and signedness of an integer type (`index` is 64 signed bits).
pub(crate) fn int_width(ty: &Type) -> Option<(u32, bool)> {
    Some(match ty {
        Type::Index => (64, true),
        Type::Scalar(e) => match *e {
            ElementType::PRED => (1, false),
            ElementType::S2 => (2, true),
            ElementType::S4 => (4, true),
            ElementType::S8 => (8, true),
            ElementType::S16 => (16, true),
            ElementType::S32 => (32, true),
            ElementType::S64 => (64, true),
            ElementType::U2 => (2, false),
            ElementType::U4 => (4, false),
            ElementType::U8 => (8, false),
            ElementType::U16 => (16, false),
            ElementType::U32 => (32, false),
            ElementType::U64 => (64, false),
            _ => return None,
        },
        _ => return None,
    })
}

/// Bits of a scalar type as StableHLO counts them (`num_bits`: `i1` is 1, `i4` 4, a complex
/// number both parts), whatever a buffer stores them in.
pub(crate) fn element_bits(ty: &Type) -> Option<u32> {
    match ty {
        Type::Scalar(ElementType::C64) => Some(64),
        Type::Scalar(ElementType::C128) => Some(128),
        t => int_width(t).map(|(w, _)| w).or_else(|| float_width(t)),
    }
}

/// Bits of a float type's encoding.
pub(crate) fn float_width(ty: &Type) -> Option<u32> {
    Some(match ty {
        Type::Tf32 => 19,
        Type::Scalar(e) => match *e {
            ElementType::F64 => 64,
            ElementType::F32 => 32,
            ElementType::F16 | ElementType::BF16 => 16,
            ElementType::F8E5M2
            | ElementType::F8E4M3FN
            | ElementType::F8E4M3B11FNUZ
            | ElementType::F8E5M2FNUZ
            | ElementType::F8E4M3FNUZ
            | ElementType::F8E4M3
            | ElementType::F8E3M4
            | ElementType::F8E8M0FNU => 8,
            ElementType::F6E2M3FN | ElementType::F6E3M2FN => 6,
            ElementType::F4E2M1FN => 4,
            _ => return None,
        },
        _ => return None,
    })
}
