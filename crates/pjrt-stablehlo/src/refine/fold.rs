//! Constant folding of the integer computations an exported `@main` does on its dimension
//! sizes (`get_dimension_size`, `convert`, `reshape`, `concatenate`, arithmetic, `compare`,
//! `select`, ...): the values a refined `dynamic_*` op takes as its shape, and the predicates
//! of `shape_assertion`s.
//!
//! Only integer and `i1` tensors of at most [`MAX_ELEMENTS`] elements are folded: shape
//! computations are small, and a bound keeps a hostile module from making the refiner
//! allocate what it likes.

use std::sync::Arc;

use crate::ir::int_width;
use crate::ir::{Attr, Dim, ElementType, Op, TensorType, Type};

/// The most elements a folded constant has.
pub(crate) const MAX_ELEMENTS: u64 = 4096;

/// A known integer (or `i1`) tensor: its dimensions and its elements, row-major, each
/// normalised to its type's width (sign-extended when signed, 0/1 for `i1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Const {
    pub dims: Vec<u64>,
    pub vals: Vec<i64>,
}

impl Const {
    pub(crate) fn scalar(v: i64) -> Const {
        Const { dims: Vec::new(), vals: vec![v] }
    }

    /// The element at `i`, with scalars broadcast (`select`'s and `clamp`'s scalar operands).
    fn at(&self, i: usize) -> i64 {
        if self.vals.len() == 1 {
            self.vals[0]
        } else {
            self.vals[i]
        }
    }

    /// The elements as a list of sizes or indices.
    pub(crate) fn as_list(&self) -> &[i64] {
        &self.vals
    }
}

/// The integer width and signedness of a tensor type's elements.
pub(crate) fn int_kind(ty: &Type) -> Option<(u32, bool)> {
    match ty {
        Type::Tensor(t) => int_width(&t.element),
        _ => None,
    }
}

/// `v` as a value of `width` bits.
fn normalise(v: i64, (width, signed): (u32, bool)) -> i64 {
    if width >= 64 {
        return v;
    }
    if width == 1 {
        return v & 1;
    }
    let shift = 64 - width;
    if signed {
        (v << shift) >> shift
    } else {
        ((v as u64) << shift >> shift) as i64
    }
}

fn static_dims(ty: &Type) -> Option<Vec<u64>> {
    let Type::Tensor(t) = ty else { return None };
    t.dims.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect()
}

/// The most dimensions a folded constant has (shape data is a scalar or a list).
const MAX_RANK: usize = 16;

/// The element count of a constant of dimensions `dims`, if it is one this folds. The zero
/// dimensions count as ones in the bound, so that every partial product and stride of a
/// folded constant's dimensions is small too (`tensor<0x9223372036854775807xi64>` is not).
fn count(dims: &[u64]) -> Option<u64> {
    if dims.len() > MAX_RANK {
        return None;
    }
    dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d.max(1))).filter(|&n| n <= MAX_ELEMENTS)?;
    Some(dims.iter().product())
}

/// A `dense<...>` attribute of an integer type as a constant.
pub(crate) fn from_dense(a: &Attr) -> Option<Const> {
    let Attr::Dense { ty, data } = a else { return None };
    let kind = int_kind(ty)?;
    let dims = static_dims(ty)?;
    let n = count(&dims)?;
    if kind.0 != 1 && kind.0 % 8 != 0 {
        return None; // sub-byte integers: never shape data
    }
    let d = crate::ir::DenseData::new(ty, data).ok()?;
    let vals = (0..n)
        .map(|i| {
            let mut raw = [0u8; 8];
            let bytes = d.element(i)?;
            raw[..bytes.len()].copy_from_slice(bytes);
            Some(normalise(i64::from_le_bytes(raw), kind))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Const { dims, vals })
}

/// The `dense<...> : tensor<NxMx...xi64>` attribute holding `vals` (for ops whose static form
/// takes as an attribute what their dynamic form took as an operand).
pub(crate) fn i64_dense(dims: &[u64], vals: &[i64]) -> Attr {
    let ty = Type::Tensor(TensorType {
        dims: dims.iter().map(|&d| Dim::Fixed(d)).collect(),
        element: Box::new(Type::Scalar(ElementType::S64)),
        encoding: None,
    });
    let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    // (As the readers hold it: equal elements as a splat.)
    Attr::dense_elements(ty.clone(), data.clone()).unwrap_or(Attr::Dense { ty, data: Arc::from(data) })
}

/// An integer attribute's value.
pub(crate) fn int_attr(op: &Op, name: &str) -> Option<i64> {
    match op.attr(name)? {
        Attr::Integer { value, .. } => Some(*value),
        _ => None,
    }
}

/// A list of integers: `array<i64: ...>`, or an integer `dense<...>` (older producers').
pub(crate) fn i64s(op: &Op, name: &str) -> Option<Vec<i64>> {
    match op.attr(name)? {
        Attr::I64Array(v) => Some(v.clone()),
        a => from_dense(a).map(|c| c.vals),
    }
}

fn enum_value<'a>(op: &'a Op, name: &str) -> Option<&'a str> {
    match op.attr(name)? {
        Attr::Enum(e) => Some(e.value),
        _ => None,
    }
}

/// Folds `op` when every operand is known: `ins` are the operands' constants and types, `out`
/// the (refined) result type. `None` when the op is not one this folds, or a value is unknown.
pub(crate) fn fold(op: &Op, ins: &[(Option<&Const>, &Type)], out: &Type) -> Option<Const> {
    let kind = int_kind(out)?;
    let dims = static_dims(out)?;
    let n = count(&dims)? as usize;
    // Every constant has the dimensions of its type, whatever a hostile module declares (a
    // `constant` whose value is of another type): the folds index by them.
    fold_as(op, ins, kind, dims.clone(), n).filter(|c| c.dims == dims && c.vals.len() == n)
}

fn fold_as(op: &Op, ins: &[(Option<&Const>, &Type)], kind: (u32, bool), dims: Vec<u64>, n: usize) -> Option<Const> {
    let base = op.name.strip_prefix("stablehlo.")?;
    if base == "constant" {
        let value = op.attr("value")?;
        let Attr::Dense { ty, .. } = value else { return None };
        return if int_kind(ty) == Some(kind) { from_dense(value) } else { None };
    }
    if base == "get_dimension_size" {
        let dim = usize::try_from(int_attr(op, "dimension")?).ok()?;
        let d = static_dims(ins.first()?.1)?.get(dim).copied()?;
        return Some(Const::scalar(normalise(d as i64, kind)));
    }
    let c: Vec<&Const> = ins.iter().map(|(c, _)| *c).collect::<Option<_>>()?;
    let map1 = |f: &dyn Fn(i64) -> i64| -> Option<Const> {
        let a = c.first()?;
        (a.vals.len() == n)
            .then(|| Const { dims: dims.clone(), vals: a.vals.iter().map(|&v| normalise(f(v), kind)).collect() })
    };
    let in_kind = ins.first().and_then(|(_, t)| int_kind(t));
    let map2 = |f: &dyn Fn(i64, i64) -> i64| -> Option<Const> {
        let (a, b) = (c.first()?, c.get(1)?);
        if a.vals.len() != n || b.vals.len() != n {
            return None;
        }
        let vals = a.vals.iter().zip(&b.vals).map(|(&x, &y)| normalise(f(x, y), kind)).collect();
        Some(Const { dims: dims.clone(), vals })
    };
    let unsigned = in_kind.is_some_and(|(w, s)| !s && w > 1);
    match base {
        "convert" => {
            let from_float = in_kind.is_none();
            if from_float {
                return None;
            }
            map1(&|v| if kind.0 == 1 { i64::from(v != 0) } else { v })
        }
        "reshape" => {
            let a = c.first()?;
            (a.vals.len() == n).then(|| Const { dims, vals: a.vals.clone() })
        }
        "broadcast_in_dim" => {
            let a = c.first()?;
            let map = i64s(op, "broadcast_dimensions")?;
            let strides_out = strides(&dims);
            let strides_in = strides(&a.dims);
            let mut vals = Vec::with_capacity(n);
            for i in 0..n {
                let mut src = 0usize;
                for (k, &d) in map.iter().enumerate() {
                    let d = usize::try_from(d).ok()?;
                    let idx = (i / *strides_out.get(d)?) % (*dims.get(d)? as usize).max(1);
                    let size = *a.dims.get(k)? as usize;
                    src += if size == 1 { 0 } else { idx } * strides_in[k];
                }
                vals.push(*a.vals.get(src)?);
            }
            Some(Const { dims, vals })
        }
        "concatenate" => {
            let axis = usize::try_from(int_attr(op, "dimension")?).ok()?;
            let outer: usize = dims.get(..axis)?.iter().product::<u64>() as usize;
            let mut vals = Vec::with_capacity(n);
            for o in 0..outer {
                for part in &c {
                    let inner: usize = part.dims.get(axis..)?.iter().product::<u64>() as usize;
                    vals.extend_from_slice(part.vals.get(o * inner..(o + 1) * inner)?);
                }
            }
            (vals.len() == n).then_some(Const { dims, vals })
        }
        "slice" => {
            let a = c.first()?;
            let (start, stride) = (i64s(op, "start_indices")?, i64s(op, "strides")?);
            let sin = strides(&a.dims);
            let sout = strides(&dims);
            let mut vals = Vec::with_capacity(n);
            if a.dims.len() != dims.len() {
                return None;
            }
            for i in 0..n {
                let mut src = 0usize;
                for k in 0..dims.len() {
                    let idx = (i / sout[k]) % dims[k] as usize;
                    // Attribute values are the module's: checked, as they may be anything.
                    let (first, step) = (usize::try_from(*start.get(k)?).ok()?, usize::try_from(*stride.get(k)?).ok()?);
                    let at = idx.checked_mul(step)?.checked_add(first)?;
                    if at >= a.dims[k] as usize {
                        return None;
                    }
                    src += at * sin[k];
                }
                vals.push(*a.vals.get(src)?);
            }
            Some(Const { dims, vals })
        }
        "add" => map2(&|x, y| x.wrapping_add(y)),
        "subtract" => map2(&|x, y| x.wrapping_sub(y)),
        "multiply" => map2(&|x, y| x.wrapping_mul(y)),
        "divide" => map2(&|x, y| divide(x, y, unsigned, kind)),
        "remainder" => map2(&|x, y| remainder(x, y, unsigned)),
        "maximum" => map2(&|x, y| if unsigned { (x as u64).max(y as u64) as i64 } else { x.max(y) }),
        "minimum" => map2(&|x, y| if unsigned { (x as u64).min(y as u64) as i64 } else { x.min(y) }),
        "and" => map2(&|x, y| x & y),
        "or" => map2(&|x, y| x | y),
        "xor" => map2(&|x, y| x ^ y),
        "negate" => map1(&|v| v.wrapping_neg()),
        "abs" => map1(&|v| v.wrapping_abs()),
        "sign" => map1(&|v| v.signum()),
        "not" => map1(&|v| if kind.0 == 1 { v ^ 1 } else { !v }),
        "compare" => {
            // An unknown direction is not folded (its -1 would read as true once made an i1).
            let dir =
                enum_value(op, "comparison_direction").filter(|d| ["EQ", "NE", "LT", "LE", "GT", "GE"].contains(d))?;
            let unsigned = match enum_value(op, "compare_type") {
                Some("UNSIGNED") => true,
                Some("SIGNED") => false,
                _ => unsigned || in_kind.is_some_and(|(w, _)| w == 1),
            };
            let cmp = |x: i64, y: i64| if unsigned { (x as u64).cmp(&(y as u64)) } else { x.cmp(&y) };
            use std::cmp::Ordering::*;
            let f = |x: i64, y: i64| -> i64 {
                let o = cmp(x, y);
                i64::from(match dir {
                    "EQ" => o == Equal,
                    "NE" => o != Equal,
                    "LT" => o == Less,
                    "LE" => o != Greater,
                    "GT" => o == Greater,
                    _ => o != Less, // GE
                })
            };
            map2(&f)
        }
        "select" => {
            let (p, t, f) = (c.first()?, c.get(1)?, c.get(2)?);
            if t.vals.len() != n || f.vals.len() != n || (p.vals.len() != n && p.vals.len() != 1) {
                return None;
            }
            let vals = (0..n).map(|i| if p.at(i) != 0 { t.vals[i] } else { f.vals[i] }).collect();
            Some(Const { dims, vals })
        }
        "clamp" => {
            let (lo, x, hi) = (c.first()?, c.get(1)?, c.get(2)?);
            if x.vals.len() != n
                || (lo.vals.len() != n && lo.vals.len() != 1)
                || (hi.vals.len() != n && hi.vals.len() != 1)
            {
                return None;
            }
            let vals = (0..n)
                .map(|i| {
                    let (l, v, h) = (lo.at(i), x.vals[i], hi.at(i));
                    if unsigned {
                        (v as u64).max(l as u64).min(h as u64) as i64
                    } else {
                        v.max(l).min(h)
                    }
                })
                .collect();
            Some(Const { dims, vals })
        }
        _ => None,
    }
}

/// Row-major strides of `dims`, in elements.
fn strides(dims: &[u64]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * dims[k + 1] as usize;
    }
    s
}

/// StableHLO's integer division: toward zero; by zero all ones (-1); `MIN / -1` is `MIN`.
fn divide(x: i64, y: i64, unsigned: bool, kind: (u32, bool)) -> i64 {
    if y == 0 {
        return -1;
    }
    if unsigned {
        return ((x as u64) / (y as u64)) as i64;
    }
    let min = normalise(1i64 << (kind.0.min(64) - 1), kind);
    if x == min && y == -1 {
        return min;
    }
    x.wrapping_div(y)
}

/// StableHLO's integer remainder: the dividend's sign; by zero the dividend.
fn remainder(x: i64, y: i64, unsigned: bool) -> i64 {
    if y == 0 {
        return x;
    }
    if unsigned {
        return ((x as u64) % (y as u64)) as i64;
    }
    x.wrapping_rem(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_follows_stablehlo() {
        assert_eq!(divide(-7, 2, false, (64, true)), -3);
        assert_eq!(remainder(-7, 2, false), -1);
        assert_eq!(divide(5, 0, false, (64, true)), -1);
        assert_eq!(divide(i32::MIN as i64, -1, false, (32, true)), i32::MIN as i64);
        assert_eq!(normalise(0xFFFF_FFFF, (32, true)), -1);
        assert_eq!(normalise(-1, (32, false)), 0xFFFF_FFFF);
    }
}
