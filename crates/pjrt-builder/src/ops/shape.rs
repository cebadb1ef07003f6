//! Shape ops: `broadcast_in_dim`, `reshape`, `transpose`, `slice`, `dynamic_slice`,
//! `dynamic_update_slice`, `concatenate`, `pad`, `reverse`, `get_dimension_size`.
//!
//! ```
//! use pjrt_builder::Function;
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("shapes");
//! let x = f.parameter(ElementType::S32, &[2, 3])?;             // [[0 1 2] [3 4 5]]
//! let row = f.constant(&[10i32, 20, 30], &[3])?;
//! let shifted = x.add(&row.broadcast_in_dim(&[2, 3], &[1])?)?; // row added to each row
//! let t = x.transpose(&[1, 0])?.reshape(&[6])?;                // [0 3 1 4 2 5]
//! let s = x.slice(&[0, 1], &[2, 3], &[1, 1])?;                 // [[1 2] [4 5]]
//! let zero = f.scalar(0i32)?;
//! let p = x.pad(&zero, &[0, -1], &[1, 1], &[0, 0])?;           // negative padding removes
//! let both = x.concatenate(&[&x.reverse(&[1])?], 0)?;
//! let program = f.finish(&[&shifted, &t, &s, &p, &both])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[0i32, 1, 2, 3, 4, 5], &[2, 3])?;
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<i32>()?, [10, 21, 32, 13, 24, 35]);
//! assert_eq!(out[1].to_vec::<i32>()?, [0, 3, 1, 4, 2, 5]);
//! assert_eq!(out[2].to_vec::<i32>()?, [1, 2, 4, 5]);
//! assert_eq!(out[3].to_vec::<i32>()?, [1, 2, 0, 4, 5, 0, 0, 0, 0]);
//! assert_eq!(out[4].to_vec::<i32>()?, [0, 1, 2, 3, 4, 5, 2, 1, 0, 5, 4, 3]);
//! # Ok(()) }
//! ```

use pjrt_types::ElementType;

use super::{attribute_error, check_dimension_list, operand_error, tensor, tensor_type};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Op, Value};
use crate::types::{kind, Kind, TensorType};

impl<'f> Value<'f> {
    /// `stablehlo.broadcast_in_dim`: this tensor broadcast to shape `dims`, its dimension `i`
    /// becoming result dimension `broadcast_dimensions[i]` (of the same size, or 1 to repeat).
    pub fn broadcast_in_dim(&self, dims: &[i64], broadcast_dimensions: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.broadcast_in_dim";
        let t = tensor(OP, self)?;
        let result = TensorType::new(t.element, dims)?;
        if broadcast_dimensions.len() != t.rank() {
            return Err(attribute_error(
                OP,
                format!(
                    "broadcast_dimensions {broadcast_dimensions:?} must name one result dimension per operand dimension \
                     ({t} has rank {})",
                    t.rank()
                ),
            ));
        }
        check_dimension_list(OP, "broadcast_dimensions", broadcast_dimensions, dims.len())?;
        for (i, &d) in broadcast_dimensions.iter().enumerate() {
            if t.dims[i] != 1 && t.dims[i] != dims[d as usize] {
                return Err(attribute_error(
                    OP,
                    format!(
                        "operand {t} dimension {i} (size {}) maps to result dimension {d} of size {}; it must be \
                         equal or 1",
                        t.dims[i], dims[d as usize]
                    ),
                ));
            }
        }
        self.func.emit1(
            Op::new(OP, vec![self], vec![result.into()])
                .attr("broadcast_dimensions", emit::i64_array(broadcast_dimensions)),
        )
    }

    /// `stablehlo.reshape` to `dims` (the same number of elements, row-major order kept).
    pub fn reshape(&self, dims: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.reshape";
        let t = tensor(OP, self)?;
        let result = TensorType::new(t.element, dims)?;
        if result.element_count() != t.element_count() {
            return Err(operand_error(
                OP,
                &[self],
                format!("reshape to {result} changes the number of elements; it must keep it"),
            ));
        }
        self.func.emit1(Op::new(OP, vec![self], vec![result.into()]))
    }

    /// `stablehlo.transpose`: result dimension `i` is operand dimension `permutation[i]`.
    pub fn transpose(&self, permutation: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.transpose";
        let t = tensor(OP, self)?;
        if permutation.len() != t.rank() {
            return Err(attribute_error(
                OP,
                format!("permutation {permutation:?} must have one entry per dimension of {t}"),
            ));
        }
        check_dimension_list(OP, "permutation", permutation, t.rank())?;
        let dims = permutation.iter().map(|&p| t.dims[p as usize]).collect();
        self.func.emit1(
            Op::new(OP, vec![self], vec![tensor_type(t.element, dims)])
                .attr("permutation", emit::i64_array(permutation)),
        )
    }

    /// `stablehlo.slice`: elements `start[i] <= j < limit[i]` every `strides[i]` (>= 1).
    pub fn slice(&self, start: &[i64], limit: &[i64], strides: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.slice";
        let t = tensor(OP, self)?;
        if start.len() != t.rank() || limit.len() != t.rank() || strides.len() != t.rank() {
            return Err(attribute_error(
                OP,
                format!("start {start:?}, limit {limit:?} and strides {strides:?} need one entry per dimension of {t}"),
            ));
        }
        let mut dims = Vec::with_capacity(t.rank());
        for i in 0..t.rank() {
            if !(0 <= start[i] && start[i] <= limit[i] && limit[i] <= t.dims[i] && strides[i] >= 1) {
                return Err(attribute_error(
                    OP,
                    format!(
                        "dimension {i} of {t}: need 0 <= start ({}) <= limit ({}) <= size ({}) and stride ({}) >= 1",
                        start[i], limit[i], t.dims[i], strides[i]
                    ),
                ));
            }
            let span = limit[i] - start[i];
            dims.push(if span == 0 { 0 } else { (span - 1) / strides[i] + 1 });
        }
        self.func.emit1(
            Op::new(OP, vec![self], vec![tensor_type(t.element, dims)])
                .attr("start_indices", emit::i64_array(start))
                .attr("limit_indices", emit::i64_array(limit))
                .attr("strides", emit::i64_array(strides)),
        )
    }

    /// `stablehlo.dynamic_slice`: a `sizes` block starting at the scalar integer indices
    /// `start` (one per dimension, clamped so the block fits).
    pub fn dynamic_slice(&self, start: &[&Value<'f>], sizes: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.dynamic_slice";
        let t = tensor(OP, self)?;
        check_start_indices(OP, self, t, start)?;
        if sizes.len() != t.rank() || sizes.iter().zip(&t.dims).any(|(&s, &d)| s < 0 || s > d) {
            return Err(attribute_error(
                OP,
                format!("slice_sizes {sizes:?} need one entry per dimension of {t}, each 0..=its size"),
            ));
        }
        let mut operands = vec![self];
        operands.extend_from_slice(start);
        self.func.emit1(
            Op::new(OP, operands, vec![tensor_type(t.element, sizes.to_vec())])
                .attr("slice_sizes", emit::i64_array(sizes)),
        )
    }

    /// `stablehlo.dynamic_update_slice`: this tensor with `update` written at the scalar
    /// integer indices `start` (clamped so it fits).
    pub fn dynamic_update_slice(&self, update: &Value<'f>, start: &[&Value<'f>]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.dynamic_update_slice";
        let (t, u) = (tensor(OP, self)?, tensor(OP, update)?);
        if u.element != t.element || u.rank() != t.rank() || u.dims.iter().zip(&t.dims).any(|(a, b)| a > b) {
            return Err(operand_error(
                OP,
                &[self, update],
                "the update must have the operand's element type and rank, and fit inside it",
            ));
        }
        check_start_indices(OP, self, t, start)?;
        let mut operands = vec![self, update];
        operands.extend_from_slice(start);
        self.func.emit1(Op::new(OP, operands, vec![self.ty.clone()]))
    }

    /// `stablehlo.concatenate` of this tensor and `others` along `dimension` (all of one
    /// element type and the same other dimensions).
    pub fn concatenate(&self, others: &[&Value<'f>], dimension: i64) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.concatenate";
        let t = tensor(OP, self)?;
        let mut operands = vec![self];
        operands.extend_from_slice(others);
        if dimension < 0 || dimension as usize >= t.rank() {
            return Err(attribute_error(OP, format!("dimension {dimension} is out of range for {t}")));
        }
        super::refuse_two_bit(OP, &operands)?;
        let d = dimension as usize;
        let mut dims = t.dims.clone();
        dims[d] = 0;
        for v in &operands {
            let o = tensor(OP, v)?;
            let fits = o.element == t.element
                && o.rank() == t.rank()
                && o.dims.iter().zip(&t.dims).enumerate().all(|(i, (a, b))| i == d || a == b);
            if !fits {
                return Err(operand_error(
                    OP,
                    &operands,
                    format!("all operands need one element type and equal dimensions except dimension {d}"),
                ));
            }
            dims[d] += o.dims[d];
        }
        self.func.emit1(
            Op::new(OP, operands, vec![tensor_type(t.element, dims)]).attr("dimension", emit::i64_attr(dimension)),
        )
    }

    /// `stablehlo.pad` with the scalar `value`: `low`/`high` elements before/after each
    /// dimension (negative ones remove elements) and `interior` (>= 0) between elements.
    pub fn pad(&self, value: &Value<'f>, low: &[i64], high: &[i64], interior: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.pad";
        let (t, v) = (tensor(OP, self)?, tensor(OP, value)?);
        if *v != t.scalar() {
            return Err(operand_error(OP, &[self, value], format!("the padding value must be {}", t.scalar())));
        }
        if low.len() != t.rank() || high.len() != t.rank() || interior.len() != t.rank() {
            return Err(attribute_error(
                OP,
                format!("low {low:?}, high {high:?} and interior {interior:?} need one entry per dimension of {t}"),
            ));
        }
        let mut dims = Vec::with_capacity(t.rank());
        for i in 0..t.rank() {
            let n = t.dims[i];
            let size = if interior[i] < 0 {
                None
            } else {
                let inner =
                    if n == 0 { Some(0) } else { (n - 1).checked_mul(interior[i]).and_then(|x| x.checked_add(n)) };
                inner.and_then(|x| x.checked_add(low[i])).and_then(|x| x.checked_add(high[i]))
            };
            match size {
                Some(s) if s >= 0 => dims.push(s),
                _ => {
                    return Err(attribute_error(
                        OP,
                        format!(
                            "dimension {i} of {t}: interior {} must be >= 0 and low {} + high {} may remove at most \
                             the padded size",
                            interior[i], low[i], high[i]
                        ),
                    ))
                }
            }
        }
        self.func.emit1(
            Op::new(OP, vec![self, value], vec![tensor_type(t.element, dims)])
                .attr("edge_padding_low", emit::i64_array(low))
                .attr("edge_padding_high", emit::i64_array(high))
                .attr("interior_padding", emit::i64_array(interior)),
        )
    }

    /// `stablehlo.reverse` along `dimensions`.
    pub fn reverse(&self, dimensions: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.reverse";
        let t = tensor(OP, self)?;
        check_dimension_list(OP, "dimensions", dimensions, t.rank())?;
        self.func.emit1(Op::new(OP, vec![self], vec![self.ty.clone()]).attr("dimensions", emit::i64_array(dimensions)))
    }

    /// `stablehlo.get_dimension_size`: the size of `dimension`, a `tensor<i32>`.
    pub fn get_dimension_size(&self, dimension: i64) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.get_dimension_size";
        let t = tensor(OP, self)?;
        if dimension < 0 || dimension as usize >= t.rank() {
            return Err(attribute_error(OP, format!("dimension {dimension} is out of range for {t}")));
        }
        self.func.emit1(
            Op::new(OP, vec![self], vec![tensor_type(ElementType::S32, vec![])])
                .attr("dimension", emit::i64_attr(dimension)),
        )
    }
}

/// Start indices: one scalar integer tensor per dimension, all of one type.
fn check_start_indices(
    op: &'static str,
    operand: &Value<'_>,
    t: &TensorType,
    start: &[&Value<'_>],
) -> Result<(), BuildError> {
    let first = start.first().and_then(|v| v.ty.as_tensor());
    let ok = start.len() == t.rank()
        && start.iter().all(|v| {
            v.ty.as_tensor().is_some_and(|s| {
                s.dims.is_empty() && matches!(kind(s.element), Kind::Signed | Kind::Unsigned) && Some(s) == first
            })
        });
    if !ok {
        let mut all = vec![operand];
        all.extend_from_slice(start);
        return Err(operand_error(
            op,
            &all,
            format!("{t} needs {} start indices, scalar integers of one type", t.rank()),
        ));
    }
    Ok(())
}
