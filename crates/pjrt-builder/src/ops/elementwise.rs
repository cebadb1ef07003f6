//! Elementwise ops: every unary and binary op, `compare`, `select`, `clamp`, `convert`,
//! `bitcast_convert`, `reduce_precision`. Operands of a binary op have the same type (no implicit
//! broadcasting: use [`Value::broadcast_in_dim`]).
//!
//! ```
//! use pjrt_builder::{ComparisonDirection, Function};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("elementwise");
//! let x = f.parameter(ElementType::F32, &[4])?;
//! let y = f.parameter(ElementType::F32, &[4])?;
//! let sum = x.add(&y)?.multiply(&x)?.subtract(&y)?;                 // (x + y) * x - y
//! let bigger = x.compare(&y, ComparisonDirection::Gt)?;           // tensor<4xi1>
//! let larger = bigger.select(&x, &y)?;                             // max by hand
//! let as_int = x.floor()?.convert(ElementType::S32)?;
//! let bits = x.bitcast_convert(ElementType::U32)?;
//! assert!(x.add(&as_int).is_err()); // f32 + s32: the error names both types
//! let program = f.finish(&[&sum, &larger, &as_int, &bits])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[1f32, -2., 3.5, 0.], &[4])?;
//! let b = client.upload(&[2f32, 2., 2., 2.], &[4])?;
//! let out = exe.execute(&[&a, &b], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<f32>()?, [1., -2., 17.25, -2.]);
//! assert_eq!(out[1].to_vec::<f32>()?, [2., 2., 3.5, 2.]);
//! assert_eq!(out[2].to_vec::<i32>()?, [1, -2, 3, 0]);
//! assert_eq!(out[3].to_vec::<u32>()?[0], 1f32.to_bits());
//! # Ok(()) }
//! ```

use pjrt_types::ElementType;

use super::{attribute_error, operand_error, tensor};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Op, Value};
use crate::types::{complex_of, complex_part, kind, Kind, Type};
use pjrt_types::StableHloVersion;

/// Element kinds an op accepts.
type Kinds = &'static [Kind];
const INT: Kinds = &[Kind::Signed, Kind::Unsigned];
const SIGNED_FLOAT_COMPLEX: Kinds = &[Kind::Signed, Kind::Float, Kind::Complex];
const FLOAT: Kinds = &[Kind::Float];
const FLOAT_COMPLEX: Kinds = &[Kind::Float, Kind::Complex];
const NUMBER: Kinds = &[Kind::Signed, Kind::Unsigned, Kind::Float, Kind::Complex];
const INT_FLOAT: Kinds = &[Kind::Signed, Kind::Unsigned, Kind::Float];
const BOOL_INT: Kinds = &[Kind::Bool, Kind::Signed, Kind::Unsigned];
const ANY: Kinds = &[Kind::Bool, Kind::Signed, Kind::Unsigned, Kind::Float, Kind::Complex];

fn kinds_text(kinds: Kinds) -> String {
    let names: Vec<&str> = kinds
        .iter()
        .map(|k| match k {
            Kind::Bool => "i1",
            Kind::Signed => "signed integer",
            Kind::Unsigned => "unsigned integer",
            Kind::Float => "float",
            Kind::Complex => "complex",
        })
        .collect();
    names.join(", ")
}

/// What a unary op's result element type is.
#[derive(Clone, Copy)]
enum UnaryResult {
    Same,
    /// `abs`, `real`, `imag`: complex → the part type, others unchanged.
    RealPart,
    /// `is_finite`: i1.
    Pred,
}

fn unary<'f>(
    x: &Value<'f>,
    op: &'static str,
    kinds: Kinds,
    result: UnaryResult,
    since: StableHloVersion,
) -> Result<Value<'f>, BuildError> {
    let t = tensor(op, x)?;
    if !kinds.contains(&kind(t.element)) {
        return Err(operand_error(op, &[x], format!("{op} takes {} elements", kinds_text(kinds))));
    }
    let element = match result {
        UnaryResult::Same => t.element,
        UnaryResult::RealPart => complex_part(t.element).unwrap_or(t.element),
        UnaryResult::Pred => ElementType::PRED,
    };
    if element != t.element && kind(t.element) == Kind::Complex {
        // XLA's algebraic simplifier rewrites abs(x) to x when it thinks x is non-negative (an
        // iota, x * x), forgetting that a complex abs is real, and aborts the process. A barrier
        // hides the operand from it.
        let hidden = x.func.emit1(Op::new("stablehlo.optimization_barrier", vec![x], vec![x.ty.clone()]))?;
        let mut op = Op::new(op, vec![&hidden], vec![Type::Tensor(t.with_element(element))]);
        op.since = since;
        return x.func.emit1(op);
    }
    let mut op = Op::new(op, vec![x], vec![Type::Tensor(t.with_element(element))]);
    op.since = since;
    x.func.emit1(op)
}

fn binary<'f>(x: &Value<'f>, y: &Value<'f>, op: &'static str, kinds: Kinds) -> Result<Value<'f>, BuildError> {
    let (a, b) = (tensor(op, x)?, tensor(op, y)?);
    if a != b {
        return Err(operand_error(
            op,
            &[x, y],
            "they differ; elementwise operands must have the same type (convert or broadcast_in_dim one first)",
        ));
    }
    if !kinds.contains(&kind(a.element)) {
        return Err(operand_error(op, &[x, y], format!("{op} takes {} elements", kinds_text(kinds))));
    }
    if matches!(op, "stablehlo.divide" | "stablehlo.remainder")
        && matches!(kind(a.element), Kind::Signed | Kind::Unsigned)
    {
        return guarded_integer_division(x, y, op, a);
    }
    x.func.emit1(Op::new(op, vec![x, y], vec![x.ty.clone()]))
}

/// Integer `divide`/`remainder` that never divides by zero or overflows (`MIN / -1`): XLA's
/// 0.10 CPU compiler folds constant divisions natively and dies of SIGFPE on those, even for a
/// divisor it only proves zero (`x ^ x`). The divisor is replaced by 1 where it would trap and
/// the result is XLA's own: `x / 0 = -1` (all bits set), `x % 0 = x`, `MIN / -1 = MIN`,
/// `MIN % -1 = 0`.
fn guarded_integer_division<'f>(
    x: &Value<'f>,
    y: &Value<'f>,
    op: &'static str,
    t: &crate::types::TensorType,
) -> Result<Value<'f>, BuildError> {
    use ComparisonDirection::Eq;
    let f = x.func;
    let bits = t.element.bits().unwrap_or(8) as u32;
    let width = t.element.host_element_bytes().unwrap_or(1);
    let signed = kind(t.element) == Kind::Signed;
    // Host bytes of a value (sign-extended for signed sub-byte types, masked for unsigned ones).
    let splat = |value: i128| {
        let value = if !signed && bits < 8 { value & ((1 << bits) - 1) } else { value };
        f.splat_bits(t.element, &value.to_le_bytes()[..width], &t.dims)
    };
    let zero = splat(0)?;
    let y_zero = y.compare(&zero, Eq)?;
    let overflow = if signed {
        let min = splat(-(1i128 << (bits - 1)))?;
        Some(x.compare(&min, Eq)?.and(&y.compare(&splat(-1)?, Eq)?)?)
    } else {
        None
    };
    let trap = match &overflow {
        Some(o) => y_zero.or(o)?,
        None => y_zero.clone(),
    };
    let safe = trap.select(&splat(1)?, y)?;
    let quotient = f.emit1(Op::new(op, vec![x, &safe], vec![x.ty.clone()]))?;
    let (on_zero, on_overflow) = if op == "stablehlo.divide" { (splat(-1)?, x.clone()) } else { (x.clone(), zero) };
    let result = match overflow {
        Some(o) => o.select(&on_overflow, &quotient)?,
        None => quotient,
    };
    y_zero.select(&on_zero, &result)
}

macro_rules! unary_ops {
    ($($(#[$doc:meta])* $method:ident => $op:literal, $kinds:expr, $result:ident, $since:expr;)+) => {
        impl<'f> Value<'f> {$(
            $(#[$doc])*
            #[doc = concat!("\n\n`", $op, "`.")]
            pub fn $method(&self) -> Result<Value<'f>, BuildError> {
                unary(self, $op, $kinds, UnaryResult::$result, StableHloVersion::from($since))
            }
        )+}
    };
}

unary_ops! {
    /// Absolute value (complex: the modulus, of the part type).
    abs => "stablehlo.abs", SIGNED_FLOAT_COMPLEX, RealPart, (1, 0, 0);
    /// `-x`.
    negate => "stablehlo.negate", NUMBER, Same, (1, 0, 0);
    /// `e^x`.
    exp => "stablehlo.exponential", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// `e^x - 1`, accurate near 0.
    exp_minus_one => "stablehlo.exponential_minus_one", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// Natural logarithm.
    log => "stablehlo.log", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// `ln(1 + x)`, accurate near 0.
    log_plus_one => "stablehlo.log_plus_one", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// `1 / (1 + e^-x)`.
    logistic => "stablehlo.logistic", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// Hyperbolic tangent.
    tanh => "stablehlo.tanh", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// Sine.
    sine => "stablehlo.sine", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// Cosine.
    cosine => "stablehlo.cosine", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// Tangent (StableHLO 1.4.0).
    tan => "stablehlo.tan", FLOAT_COMPLEX, Same, (1, 4, 0);
    /// Square root.
    sqrt => "stablehlo.sqrt", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// `1 / sqrt(x)`.
    rsqrt => "stablehlo.rsqrt", FLOAT_COMPLEX, Same, (1, 0, 0);
    /// Cube root (floats: XLA has no complex cube root).
    cbrt => "stablehlo.cbrt", FLOAT, Same, (1, 0, 0);
    /// Rounds toward -inf.
    floor => "stablehlo.floor", FLOAT, Same, (1, 0, 0);
    /// Rounds toward +inf.
    ceil => "stablehlo.ceil", FLOAT, Same, (1, 0, 0);
    /// Rounds to nearest, ties away from zero.
    round_nearest_afz => "stablehlo.round_nearest_afz", FLOAT, Same, (1, 0, 0);
    /// Rounds to nearest, ties to even.
    round_nearest_even => "stablehlo.round_nearest_even", FLOAT, Same, (1, 0, 0);
    /// -1, 0 or 1 (NaN for NaN; complex: `x / |x|`).
    sign => "stablehlo.sign", SIGNED_FLOAT_COMPLEX, Same, (1, 0, 0);
    /// Logical (i1) or bitwise (integers) not.
    not => "stablehlo.not", BOOL_INT, Same, (1, 0, 0);
    /// Number of set bits.
    popcnt => "stablehlo.popcnt", INT, Same, (1, 0, 0);
    /// Number of leading zero bits.
    count_leading_zeros => "stablehlo.count_leading_zeros", INT, Same, (1, 0, 0);
    /// Whether each element is finite (not NaN or ±inf): i1.
    is_finite => "stablehlo.is_finite", FLOAT, Pred, (1, 0, 0);
    /// The real part (complex → the part type; floats unchanged).
    real => "stablehlo.real", FLOAT_COMPLEX, RealPart, (1, 0, 0);
    /// The imaginary part (complex → the part type; floats: 0).
    imag => "stablehlo.imag", FLOAT_COMPLEX, RealPart, (1, 0, 0);
}

macro_rules! binary_ops {
    ($($(#[$doc:meta])* $method:ident => $op:literal, $kinds:expr;)+) => {
        impl<'f> Value<'f> {$(
            $(#[$doc])*
            #[doc = concat!("\n\n`", $op, "`; both operands of the same type.")]
            pub fn $method(&self, other: &Value<'f>) -> Result<Value<'f>, BuildError> {
                binary(self, other, $op, $kinds)
            }
        )+}
    };
}

binary_ops! {
    /// `x + y`.
    add => "stablehlo.add", NUMBER;
    /// `x - y`.
    subtract => "stablehlo.subtract", NUMBER;
    /// `x * y`.
    multiply => "stablehlo.multiply", NUMBER;
    /// `x / y` (integers: toward zero; `x / 0 = -1`, all bits set, and `MIN / -1 = MIN`, as
    /// XLA defines them, computed without a trapping division).
    divide => "stablehlo.divide", NUMBER;
    /// Remainder of `x / y`, with the sign of `x` (C's `fmod`, `%`; integers: `x % 0 = x`,
    /// `MIN % -1 = 0`).
    remainder => "stablehlo.remainder", INT_FLOAT;
    /// Elementwise maximum (floats: NaN if either is NaN).
    maximum => "stablehlo.maximum", ANY;
    /// Elementwise minimum (floats: NaN if either is NaN).
    minimum => "stablehlo.minimum", ANY;
    /// `x ^ y`.
    power => "stablehlo.power", NUMBER;
    /// `atan2(x, y)`.
    atan2 => "stablehlo.atan2", FLOAT_COMPLEX;
    /// Logical (i1) or bitwise and.
    and => "stablehlo.and", BOOL_INT;
    /// Logical (i1) or bitwise or.
    or => "stablehlo.or", BOOL_INT;
    /// Logical (i1) or bitwise exclusive or.
    xor => "stablehlo.xor", BOOL_INT;
    /// `x << y` (0 when `y` is at least the bit width).
    shift_left => "stablehlo.shift_left", INT;
    /// `x >> y`, sign-filling.
    shift_right_arithmetic => "stablehlo.shift_right_arithmetic", INT;
    /// `x >> y`, zero-filling.
    shift_right_logical => "stablehlo.shift_right_logical", INT;
}

/// How `compare` compares (`comparison_direction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ComparisonDirection {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `>=`
    Ge,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `<`
    Lt,
}

impl ComparisonDirection {
    fn mlir(self) -> &'static str {
        match self {
            ComparisonDirection::Eq => "EQ",
            ComparisonDirection::Ne => "NE",
            ComparisonDirection::Ge => "GE",
            ComparisonDirection::Gt => "GT",
            ComparisonDirection::Le => "LE",
            ComparisonDirection::Lt => "LT",
        }
    }
}

/// How `compare` orders values (`compare_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ComparisonType {
    /// IEEE comparison of floats (NaN compares unequal to everything); also complex EQ/NE.
    Float,
    /// Total order of floats: -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN.
    TotalOrder,
    /// Signed integers.
    Signed,
    /// Unsigned integers and i1.
    Unsigned,
}

impl ComparisonType {
    fn mlir(self) -> &'static str {
        match self {
            ComparisonType::Float => "FLOAT",
            ComparisonType::TotalOrder => "TOTALORDER",
            ComparisonType::Signed => "SIGNED",
            ComparisonType::Unsigned => "UNSIGNED",
        }
    }

    /// The comparison type for elements of a kind.
    fn default_for(element: ElementType) -> ComparisonType {
        match kind(element) {
            Kind::Signed => ComparisonType::Signed,
            Kind::Bool | Kind::Unsigned => ComparisonType::Unsigned,
            Kind::Float | Kind::Complex => ComparisonType::Float,
        }
    }
}

impl<'f> Value<'f> {
    /// `stablehlo.compare` with the comparison type of the element type (FLOAT, SIGNED or
    /// UNSIGNED): an i1 tensor of the same shape.
    pub fn compare(&self, other: &Value<'f>, direction: ComparisonDirection) -> Result<Value<'f>, BuildError> {
        let element = tensor("stablehlo.compare", self)?.element;
        self.compare_as(other, direction, ComparisonType::default_for(element))
    }

    /// `stablehlo.compare` with an explicit comparison type (TOTALORDER for floats, say).
    pub fn compare_as(
        &self,
        other: &Value<'f>,
        direction: ComparisonDirection,
        compare_type: ComparisonType,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.compare";
        let (a, b) = (tensor(OP, self)?, tensor(OP, other)?);
        if a != b {
            return Err(operand_error(OP, &[self, other], "they differ; compared operands must have the same type"));
        }
        let k = kind(a.element);
        let fits = match compare_type {
            ComparisonType::Float => matches!(k, Kind::Float | Kind::Complex),
            ComparisonType::TotalOrder => k == Kind::Float,
            ComparisonType::Signed => k == Kind::Signed,
            ComparisonType::Unsigned => matches!(k, Kind::Unsigned | Kind::Bool),
        };
        if !fits {
            return Err(operand_error(
                OP,
                &[self, other],
                format!("compare_type {} does not fit {}", compare_type.mlir(), a.element.name()),
            ));
        }
        if k == Kind::Complex && !matches!(direction, ComparisonDirection::Eq | ComparisonDirection::Ne) {
            return Err(operand_error(OP, &[self, other], "complex numbers compare only with Eq and Ne"));
        }
        self.func.emit1(
            Op::new(OP, vec![self, other], vec![Type::Tensor(a.with_element(ElementType::PRED))])
                .attr("comparison_direction", emit::enum_attr("comparison_direction", direction.mlir()))
                .attr("compare_type", emit::enum_attr("comparison_type", compare_type.mlir())),
        )
    }

    /// `stablehlo.select` on this i1 predicate: `on_true` where it holds, `on_false` elsewhere.
    /// The predicate is a scalar or has their shape; `on_true` and `on_false` have one type.
    pub fn select(&self, on_true: &Value<'f>, on_false: &Value<'f>) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.select";
        let (p, t, f) = (tensor(OP, self)?, tensor(OP, on_true)?, tensor(OP, on_false)?);
        let operands = [self, on_true, on_false];
        if t != f {
            return Err(operand_error(OP, &operands, "on_true and on_false must have the same type"));
        }
        if p.element != ElementType::PRED || !(p.dims.is_empty() || p.dims == t.dims) {
            return Err(operand_error(
                OP,
                &operands,
                format!("the predicate must be tensor<i1> or {}", t.with_element(ElementType::PRED)),
            ));
        }
        self.func.emit1(Op::new(OP, operands.to_vec(), vec![on_true.ty.clone()]))
    }

    /// `stablehlo.clamp`: `min(max(self, min), max)`; `min` and `max` are scalars or have this
    /// value's shape, all of one element type.
    pub fn clamp(&self, min: &Value<'f>, max: &Value<'f>) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.clamp";
        let (x, lo, hi) = (tensor(OP, self)?, tensor(OP, min)?, tensor(OP, max)?);
        let operands = [min, self, max];
        let fits = |b: &crate::types::TensorType| b.element == x.element && (b.dims.is_empty() || b.dims == x.dims);
        if !fits(lo) || !fits(hi) || kind(x.element) == Kind::Complex {
            return Err(operand_error(
                OP,
                &operands,
                format!("min and max must be {} or {x} (operand in the middle), not complex", x.scalar()),
            ));
        }
        self.func.emit1(Op::new(OP, operands.to_vec(), vec![self.ty.clone()]))
    }

    /// `stablehlo.convert` to another element type, same shape (floats to integers round toward
    /// zero; use [`Value::real`] for complex to real, which this refuses).
    pub fn convert(&self, element: ElementType) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.convert";
        let t = tensor(OP, self)?;
        let target = crate::types::TensorType::new(element, &t.dims)?;
        if kind(t.element) == Kind::Complex && kind(element) != Kind::Complex {
            return Err(operand_error(
                OP,
                &[self],
                format!("converting complex to {} drops the imaginary part: take .real() first", element.name()),
            ));
        }
        self.func.emit1(Op::new(OP, vec![self], vec![Type::Tensor(target)]))
    }

    /// `stablehlo.bitcast_convert`: the same bits as another element type. With a narrower
    /// target the result gains a last dimension (f32 → 4 x u8); with a wider one the last
    /// dimension must be the ratio and goes away.
    pub fn bitcast_convert(&self, element: ElementType) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.bitcast_convert";
        let t = tensor(OP, self)?;
        crate::types::mlir_element_name(element)?;
        let (from, to) = (t.element.bits().unwrap_or(0), element.bits().unwrap_or(0));
        let complex = kind(t.element) == Kind::Complex || kind(element) == Kind::Complex;
        if from < 8 || to < 8 || t.element == ElementType::PRED || element == ElementType::PRED || complex {
            return Err(operand_error(
                OP,
                &[self],
                format!(
                    "bitcast_convert to {} needs real types of whole bytes, not i1, sub-byte or complex types \
                     (take .real() and .imag() of a complex)",
                    element.name()
                ),
            ));
        }
        let mut dims = t.dims.clone();
        if to < from {
            dims.push((from / to) as i64);
        } else if to > from {
            let ratio = (to / from) as i64;
            if dims.last() != Some(&ratio) {
                return Err(operand_error(
                    OP,
                    &[self],
                    format!("bitcast_convert to the wider {} needs a last dimension of {ratio}", element.name()),
                ));
            }
            dims.pop();
        }
        if from != to {
            // XLA's algebraic simplifier joins two width-changing bitcasts in a row (f32 -> 2 x
            // f16 -> 2 x 2 x i8) into one with the wrong shape, which its verifier then rejects
            // (found by the builder fuzz target). A barrier keeps each one on its own.
            let hidden =
                self.func.emit1(Op::new("stablehlo.optimization_barrier", vec![self], vec![self.ty.clone()]))?;
            return self.func.emit1(Op::new(OP, vec![&hidden], vec![super::tensor_type(element, dims)]));
        }
        self.func.emit1(Op::new(OP, vec![self], vec![super::tensor_type(element, dims)]))
    }

    /// `stablehlo.reduce_precision`: rounds floats to `exponent_bits` (>= 1) and
    /// `mantissa_bits` (>= 0), keeping the type (f32 through bf16: 8 and 7).
    pub fn reduce_precision(&self, exponent_bits: i32, mantissa_bits: i32) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.reduce_precision";
        let t = tensor(OP, self)?;
        if kind(t.element) != Kind::Float {
            return Err(operand_error(OP, &[self], "reduce_precision takes float elements"));
        }
        if exponent_bits < 1 || mantissa_bits < 0 {
            return Err(attribute_error(
                OP,
                format!("exponent_bits {exponent_bits} must be >= 1 and mantissa_bits {mantissa_bits} >= 0"),
            ));
        }
        self.func.emit1(
            Op::new(OP, vec![self], vec![self.ty.clone()])
                .attr("exponent_bits", emit::i32_attr(exponent_bits))
                .attr("mantissa_bits", emit::i32_attr(mantissa_bits)),
        )
    }

    /// `stablehlo.complex`: a complex tensor from real (`self`) and imaginary parts, f32 or
    /// f64, of one type.
    pub fn complex(&self, imaginary: &Value<'f>) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.complex";
        let (a, b) = (tensor(OP, self)?, tensor(OP, imaginary)?);
        let target = complex_of(a.element)
            .filter(|_| a == b)
            .ok_or_else(|| operand_error(OP, &[self, imaginary], "both parts must have one type, f32 or f64"))?;
        self.func.emit1(Op::new(OP, vec![self, imaginary], vec![Type::Tensor(a.with_element(target))]))
    }
}
