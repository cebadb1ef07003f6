//! Constants of every element type (from Rust slices, raw bits, splats) and `iota`.
//!
//! Values are written as MLIR's exact hex form (`dense<"0x0000803F"> : tensor<f32>`, the
//! little-endian bytes), so every bit survives: NaN payloads, infinities, -0.0, subnormals.
//! PRED (`i1`) is written as `true`/`false` (MLIR packs `i1` hex data by bits, differently across
//! versions). A constant whose elements are all equal is one scalar constant and a
//! `broadcast_in_dim` (as JAX writes `jnp.full`; XLA materialises constants when it compiles).
//!
//! ```
//! use pjrt_builder::Function;
//! use pjrt_client::half::bf16;
//! use pjrt_client::num_complex::Complex;
//! use pjrt_client::{Client, ClientOptions, CompileOptions, DownloadOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("constants");
//! let a = f.constant(&[1.5f32, f32::INFINITY, -0.0], &[3])?;
//! let b = f.splat(bf16::from_f32(2.0), &[2, 2])?;
//! let c = f.constant(&[Complex::new(1f64, -1.0)], &[])?;
//! let p = f.constant(&[true, false], &[2])?;
//! // Raw host bits for types Rust has no number type for: f8E4M3FN 1.0 is 0x38.
//! let e = f.constant_bits(ElementType::F8E4M3FN, &[0x38, 0xb8], &[2])?;
//! let i = f.iota(ElementType::S32, &[2, 3], 1)?;
//! let w = f.constant_array(&pjrt_client::HostArray::from_elements(vec![2], &[7u16, 9])?)?;
//! let program = f.finish(&[&a, &b, &c, &p, &e, &i, &w])?;
//! let text = program.text().unwrap();
//! assert!(text.contains(r#"dense<"0x0000C03F0000807F00000080"> : tensor<3xf32>"#));
//! assert!(text.contains(r#"dense<"0x0040"> : tensor<bf16>"#)); // then broadcast_in_dim
//! assert!(text.contains("dense<[true, false]> : tensor<2xi1>"));
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let out = client.compile(&program, &CompileOptions::new())?.execute(&[], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<f32>()?[1], f32::INFINITY);
//! assert_eq!(out[4].to_bytes(DownloadOptions::new())?, [0x38, 0xb8]);
//! assert_eq!(out[5].to_vec::<i32>()?, [0, 1, 2, 0, 1, 2]);
//! assert_eq!(out[6].to_vec::<u16>()?, [7, 9]);
//! # Ok(()) }
//! ```

use half::{bf16, f16};
use num_complex::Complex;
use pjrt_stablehlo::ir::Attr;
use pjrt_types::ElementType;

use super::{attribute_error, tensor_type};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, Op, Value};
use crate::types::{kind, Kind, TensorType};

/// A Rust type constants can be made from: its element type and its little-endian bytes.
pub trait ConstantElement: Copy {
    /// The element type of a constant of this type.
    const ELEMENT_TYPE: ElementType;
    /// Appends the value's host bytes (little-endian; `bool` as 0 or 1).
    fn push_bytes(self, out: &mut Vec<u8>);
}

macro_rules! constant_elements {
    ($($t:ty => $e:ident),+ $(,)?) => {$(
        impl ConstantElement for $t {
            const ELEMENT_TYPE: ElementType = ElementType::$e;
            fn push_bytes(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )+};
}

constant_elements!(
    i8 => S8, i16 => S16, i32 => S32, i64 => S64, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    f16 => F16, bf16 => BF16, f32 => F32, f64 => F64,
);

impl ConstantElement for bool {
    const ELEMENT_TYPE: ElementType = ElementType::PRED;
    fn push_bytes(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
}

impl ConstantElement for Complex<f32> {
    const ELEMENT_TYPE: ElementType = ElementType::C64;
    fn push_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.re.to_le_bytes());
        out.extend_from_slice(&self.im.to_le_bytes());
    }
}

impl ConstantElement for Complex<f64> {
    const ELEMENT_TYPE: ElementType = ElementType::C128;
    fn push_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.re.to_le_bytes());
        out.extend_from_slice(&self.im.to_le_bytes());
    }
}

impl Function {
    /// A constant tensor from values in row-major order (`values.len()` must be the number of
    /// elements of `dims`; `&[]` dims for a scalar).
    pub fn constant<T: ConstantElement>(&self, values: &[T], dims: &[i64]) -> Result<Value<'_>, BuildError> {
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(values));
        for v in values {
            v.push_bytes(&mut bytes);
        }
        self.constant_bits(T::ELEMENT_TYPE, &bytes, dims)
    }

    /// A rank-0 constant.
    pub fn scalar<T: ConstantElement>(&self, value: T) -> Result<Value<'_>, BuildError> {
        self.constant(&[value], &[])
    }

    /// A constant of shape `dims` with every element `value`.
    pub fn splat<T: ConstantElement>(&self, value: T, dims: &[i64]) -> Result<Value<'_>, BuildError> {
        let mut bytes = Vec::new();
        value.push_bytes(&mut bytes);
        self.splat_bits(T::ELEMENT_TYPE, &bytes, dims)
    }

    /// A constant from host bytes of any element type, in row-major order: little-endian,
    /// one byte per element for the sub-byte types (S4, U4, F4E2M1FN, ...: the value in the low
    /// bits, signed ones possibly sign-extended, as `ElementType::check_host_values` accepts),
    /// PRED bytes 0 or 1. For types without a Rust number type (the f8 family, int4).
    pub fn constant_bits(&self, element: ElementType, bytes: &[u8], dims: &[i64]) -> Result<Value<'_>, BuildError> {
        let ty = TensorType::new(element, dims)?;
        let count = checked_count(&ty)?;
        let width = element.host_element_bytes().unwrap_or(1);
        if Some(bytes.len()) != count.checked_mul(width) {
            return Err(BuildError::InvalidConstant {
                message: format!(
                    "{} bytes given for {ty} ({count} elements of {width} byte(s) each); give exactly one element per \
                     position, row-major",
                    bytes.len()
                ),
            });
        }
        check_values(element, bytes)?;
        let splat = count > 1 && bytes.chunks_exact(width).all(|c| c == &bytes[..width]);
        let data = if splat { &bytes[..width] } else { bytes };
        self.emit_constant(ty, data, splat)
    }

    /// A constant of shape `dims` with every element the host bytes `element_bytes` (one
    /// element; see [`Function::constant_bits`]).
    pub fn splat_bits(
        &self,
        element: ElementType,
        element_bytes: &[u8],
        dims: &[i64],
    ) -> Result<Value<'_>, BuildError> {
        let ty = TensorType::new(element, dims)?;
        checked_count(&ty)?;
        let width = element.host_element_bytes().unwrap_or(1);
        if element_bytes.len() != width {
            return Err(BuildError::InvalidConstant {
                message: format!(
                    "a splat of {} takes one element ({width} byte(s)), {} given",
                    ty,
                    element_bytes.len()
                ),
            });
        }
        check_values(element, element_bytes)?;
        self.emit_constant(ty, element_bytes, true)
    }

    fn emit_constant(&self, ty: TensorType, data: &[u8], splat: bool) -> Result<Value<'_>, BuildError> {
        if splat && ty.rank() > 0 && ty.element_count() != Some(0) {
            // A scalar broadcast, as JAX writes `jnp.full`: XLA materialises a constant's
            // every element when it compiles, a broadcast only when it runs.
            let scalar = self.emit_constant(ty.scalar(), data, false)?;
            let all: Vec<i64> = Vec::new();
            return scalar.broadcast_in_dim(&ty.dims, &all);
        }
        // Each sub-byte element's low bits only: MLIR reads `bits` bits of each stored byte.
        let masked: Vec<u8>;
        let data = if ty.element.is_sub_byte() {
            let mask = (1u16 << ty.element.bits().unwrap_or(8)) as u8 - 1;
            masked = data.iter().map(|b| b & mask).collect();
            &masked[..]
        } else {
            data
        };
        // The data fits the type: its size was checked against the shape, PRED bytes are 0 or 1.
        let value = match (ty.element_count() == Some(0), splat) {
            (true, _) => Attr::dense_elements(ty.to_ir(), Vec::new()),
            (false, true) => Attr::dense_splat(ty.to_ir(), data),
            (false, false) => Attr::dense_elements(ty.to_ir(), data.to_vec()),
        }
        .map_err(|e| BuildError::InvalidConstant { message: format!("{ty}: {e}") })?;
        self.emit1(Op::new("stablehlo.constant", vec![], vec![ty.into()]).attr("value", value))
    }

    /// `stablehlo.iota`: a tensor of `element` and shape `dims` counting 0, 1, ... along
    /// `dimension` (the same along every other dimension).
    pub fn iota(&self, element: ElementType, dims: &[i64], dimension: i64) -> Result<Value<'_>, BuildError> {
        let ty = TensorType::new(element, dims)?;
        if dimension < 0 || dimension as usize >= dims.len() {
            return Err(attribute_error(
                "stablehlo.iota",
                format!("iota_dimension {dimension} is out of range for {ty} (rank {})", dims.len()),
            ));
        }
        if matches!(kind(element), Kind::Bool) {
            return Err(attribute_error(
                "stablehlo.iota",
                format!("{ty}: iota counts in an integer, float or complex type, not i1"),
            ));
        }
        self.emit1(
            Op::new("stablehlo.iota", vec![], vec![tensor_type(element, dims.to_vec())])
                .attr("iota_dimension", emit::i64_attr(dimension)),
        )
    }
}

fn checked_count(ty: &TensorType) -> Result<usize, BuildError> {
    ty.element_count()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| BuildError::InvalidConstant { message: format!("{ty} has more elements than fit in memory") })
}

fn check_values(element: ElementType, bytes: &[u8]) -> Result<(), BuildError> {
    if element == ElementType::PRED {
        if let Some(b) = bytes.iter().find(|&&b| b > 1) {
            return Err(BuildError::InvalidConstant {
                message: format!("PRED (i1) bytes must be 0 or 1, found {b:#04x}"),
            });
        }
        return Ok(());
    }
    element.check_host_values(bytes).map_err(|e| BuildError::InvalidConstant { message: e.to_string() })
}
