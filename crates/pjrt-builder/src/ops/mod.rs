//! The ops, a file per family; shared checks here.

pub mod collectives;
pub mod constant;
pub mod control;
pub mod elementwise;
pub mod gather;
pub mod linalg;
pub mod misc;
pub mod reduce;
pub mod shape;
pub mod sort;

use crate::emit;
use crate::error::BuildError;
use crate::function::Value;
use crate::types::{TensorType, Type};

/// The tensor type of an operand, or an error naming the op.
pub(crate) fn tensor<'v>(op: &'static str, value: &'v Value<'_>) -> Result<&'v TensorType, BuildError> {
    value.ty.as_tensor().ok_or_else(|| BuildError::OperandTypes {
        op,
        operands: value.ty.to_string(),
        expected: "a tensor is expected (not a tuple or token)".to_string(),
    })
}

/// An operand-types error listing the operands.
pub(crate) fn operand_error(op: &'static str, operands: &[&Value<'_>], expected: impl Into<String>) -> BuildError {
    BuildError::OperandTypes {
        op,
        operands: emit::types_for_message(operands.iter().map(|v| &v.ty)),
        expected: expected.into(),
    }
}

/// An attribute error.
pub(crate) fn attribute_error(op: &'static str, message: impl Into<String>) -> BuildError {
    BuildError::InvalidAttribute { op, message: message.into() }
}

/// Checks that `dims` are distinct dimensions of a rank-`rank` tensor.
pub(crate) fn check_dimension_list(op: &'static str, what: &str, dims: &[i64], rank: usize) -> Result<(), BuildError> {
    let mut seen = vec![false; rank];
    for &d in dims {
        if d < 0 || d as usize >= rank {
            return Err(attribute_error(op, format!("{what} {dims:?}: dimension {d} is out of range for rank {rank}")));
        }
        if std::mem::replace(&mut seen[d as usize], true) {
            return Err(attribute_error(op, format!("{what} {dims:?}: dimension {d} appears twice")));
        }
    }
    Ok(())
}

/// A tensor type from checked parts (the element type already has a spelling).
pub(crate) fn tensor_type(element: pjrt_types::ElementType, dims: Vec<i64>) -> Type {
    Type::Tensor(TensorType { element, dims })
}

/// 2-bit integers: XLA's CPU plugins abort concatenating them and cannot multiply them
/// (dot_general, convolution); probed on jaxlib 0.10 and 0.11.
pub(crate) fn refuse_two_bit(op: &'static str, operands: &[&Value<'_>]) -> Result<(), BuildError> {
    let two_bit = operands
        .iter()
        .any(|v| matches!(v.element_type(), Some(pjrt_types::ElementType::S2 | pjrt_types::ElementType::U2)));
    if two_bit {
        return Err(operand_error(
            op,
            operands,
            "XLA's CPU plugins cannot compile this op on 2-bit integers (concatenating them aborts the process): \
             convert to i8 first",
        ));
    }
    Ok(())
}
