//! The types values carry: static-shaped tensors, tuples and tokens, and their MLIR spellings.

use std::fmt;

use pjrt_stablehlo::ir::{Dim, TensorType as IrTensorType, Type as IrType};
use pjrt_types::{ElementType, StableHloVersion};

use crate::error::BuildError;

/// The type of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Type {
    /// A tensor of static shape (`tensor<2x3xf32>`, `tensor<f32>` for rank 0).
    Tensor(TensorType),
    /// A tuple (`tuple<tensor<f32>, tensor<2xi32>>`).
    Tuple(Vec<Type>),
    /// A token (`!stablehlo.token`), threading side effects.
    Token,
}

/// A tensor type: element type and static dimensions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// The element type.
    pub element: ElementType,
    /// The dimensions (every one `>= 0`).
    pub dims: Vec<i64>,
}

impl TensorType {
    /// A tensor type; `Err` for an element type StableHLO has no spelling for (TOKEN, INVALID,
    /// S1/U1, unknown values; the 6-bit floats, which XLA's CPU plugins cannot compile), a
    /// negative dimension, or more than `i64::MAX` elements.
    ///
    /// ```
    /// use pjrt_builder::TensorType;
    /// use pjrt_client::ElementType;
    ///
    /// let t = TensorType::new(ElementType::BF16, &[2, 3])?;
    /// assert_eq!(t.to_string(), "tensor<2x3xbf16>");
    /// assert_eq!((t.rank(), t.element_count()), (2, Some(6)));
    /// assert_eq!(pjrt_builder::mlir_element_name(ElementType::F8E4M3FN)?, "f8E4M3FN");
    /// let pair = pjrt_builder::Type::Tuple(vec![t.clone().into(), t.scalar().into()]);
    /// assert_eq!(pair.to_string(), "tuple<tensor<2x3xbf16>, tensor<bf16>>");
    /// assert_eq!(TensorType::new(ElementType::PRED, &[])?.to_string(), "tensor<i1>");
    /// assert!(TensorType::new(ElementType::F32, &[-1]).is_err());
    /// # Ok::<(), pjrt_builder::BuildError>(())
    /// ```
    pub fn new(element: ElementType, dims: &[i64]) -> Result<TensorType, BuildError> {
        mlir_element_name(element)?;
        if matches!(element, ElementType::F6E2M3FN | ElementType::F6E3M2FN) {
            // Probed on both CPU plugins: almost every op on f6 values is refused, and several
            // (an f6 result, iota, broadcast, reshape, pad, reduce, ...) abort the process.
            return Err(BuildError::UnsupportedElementType {
                element: element.name().to_string(),
                message: "XLA's CPU plugins (jaxlib 0.10 and 0.11) cannot compile programs with 6-bit floats and \
                          some of them abort the process: use f8 or f4E2M1FN"
                    .to_string(),
            });
        }
        if let Some(d) = dims.iter().find(|&&d| d < 0) {
            return Err(BuildError::InvalidShape {
                message: format!("dimension {d} in {dims:?} is negative; shapes are static, every dimension >= 0"),
            });
        }
        let ty = TensorType { element, dims: dims.to_vec() };
        if ty.element_count().is_none() {
            return Err(BuildError::InvalidShape { message: format!("{dims:?} has more than i64::MAX elements") });
        }
        Ok(ty)
    }

    /// The rank (number of dimensions).
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The number of elements (`None` on overflow).
    pub fn element_count(&self) -> Option<i64> {
        self.dims.iter().try_fold(1i64, |n, &d| n.checked_mul(d))
    }

    /// The rank-0 tensor of the same element type.
    pub fn scalar(&self) -> TensorType {
        TensorType { element: self.element, dims: Vec::new() }
    }

    /// The type in [`pjrt_stablehlo::ir`] (dimensions are `>= 0`: checked at construction).
    pub(crate) fn to_ir(&self) -> pjrt_stablehlo::ir::Type {
        let dims: Vec<u64> = self.dims.iter().map(|&d| d.max(0) as u64).collect();
        ir_tensor(self.element, &dims)
    }

    /// The same dimensions with another element type.
    pub fn with_element(&self, element: ElementType) -> TensorType {
        TensorType { element, dims: self.dims.clone() }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.dims {
            write!(f, "{d}x")?;
        }
        // Checked at construction: every TensorType has a spelling.
        f.write_str(mlir_element_name(self.element).unwrap_or("?"))?;
        f.write_str(">")
    }
}

impl Type {
    /// The type in [`pjrt_stablehlo::ir`].
    pub(crate) fn to_ir(&self) -> pjrt_stablehlo::ir::Type {
        use pjrt_stablehlo::ir::Type as Ir;
        match self {
            Type::Tensor(t) => t.to_ir(),
            Type::Tuple(items) => Ir::Tuple(items.iter().map(Type::to_ir).collect()),
            Type::Token => Ir::Token,
        }
    }

    /// The tensor type, if this is a tensor.
    pub fn as_tensor(&self) -> Option<&TensorType> {
        match self {
            Type::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

impl From<TensorType> for Type {
    fn from(t: TensorType) -> Type {
        Type::Tensor(t)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor(t) => t.fmt(f),
            Type::Tuple(items) => {
                f.write_str("tuple<")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    t.fmt(f)?;
                }
                f.write_str(">")
            }
            Type::Token => f.write_str("!stablehlo.token"),
        }
    }
}

/// What kind of numbers an element type holds (for the checks of each op).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool,
    Signed,
    Unsigned,
    Float,
    Complex,
}

pub(crate) fn kind(element: ElementType) -> Kind {
    match element {
        ElementType::PRED => Kind::Bool,
        ElementType::S2
        | ElementType::S4
        | ElementType::S8
        | ElementType::S16
        | ElementType::S32
        | ElementType::S64 => Kind::Signed,
        ElementType::U2
        | ElementType::U4
        | ElementType::U8
        | ElementType::U16
        | ElementType::U32
        | ElementType::U64 => Kind::Unsigned,
        ElementType::C64 | ElementType::C128 => Kind::Complex,
        _ => Kind::Float,
    }
}

/// The MLIR spelling of an element type; `Err` for those StableHLO cannot spell.
pub fn mlir_element_name(element: ElementType) -> Result<&'static str, BuildError> {
    match element.mlir_name() {
        Some(name) => Ok(name),
        None => Err(BuildError::UnsupportedElementType {
            element: element.name().to_string(),
            message: "StableHLO has no tensor element type for it (TOKEN and INVALID are not \
                      element types; S1/U1 have no StableHLO spelling): use another element type"
                .to_string(),
        }),
    }
}

/// The StableHLO version that introduced an element type (1.0.0 for the original set).
pub(crate) fn element_min_version(element: ElementType) -> StableHloVersion {
    // From the version log in StableHLO's VhloDialect.td.
    match element {
        ElementType::S2 | ElementType::U2 => StableHloVersion::new(1, 2, 0),
        ElementType::F8E4M3 | ElementType::F8E3M4 => StableHloVersion::new(1, 7, 0),
        ElementType::F8E8M0FNU | ElementType::F4E2M1FN | ElementType::F6E2M3FN | ElementType::F6E3M2FN => {
            StableHloVersion::new(1, 8, 0)
        }
        _ => StableHloVersion::new(1, 0, 0),
    }
}

/// Complex element type → the element type of its parts.
pub(crate) fn complex_part(element: ElementType) -> Option<ElementType> {
    match element {
        ElementType::C64 => Some(ElementType::F32),
        ElementType::C128 => Some(ElementType::F64),
        _ => None,
    }
}

/// Float element type → the complex type with parts of that type (f32 and f64 only).
pub(crate) fn complex_of(element: ElementType) -> Option<ElementType> {
    match element {
        ElementType::F32 => Some(ElementType::C64),
        ElementType::F64 => Some(ElementType::C128),
        _ => None,
    }
}

/// A static tensor type of the IR.
pub(crate) fn ir_tensor(element: ElementType, dims: &[u64]) -> IrType {
    IrType::Tensor(IrTensorType {
        dims: dims.iter().map(|&d| Dim::Fixed(d)).collect(),
        element: Box::new(IrType::Scalar(element)),
        encoding: None,
    })
}
