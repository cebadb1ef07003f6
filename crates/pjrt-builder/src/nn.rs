//! The helpers that make common code short, the way JAX's `lax` and `jax.nn` do on top of
//! StableHLO: each one is a plain function of the ops (no new StableHLO), documented with what it
//! emits. Each checks its own arguments first, so a mistake names the helper (`nn.softmax: ...`)
//! and not an op deep inside it.
//!
//! | helper | emits |
//! |---|---|
//! | [`Value::matmul`] | one `dot_general` (numpy's `matmul` ranks; batch dimensions first) |
//! | [`Value::reduce_sum`], [`Value::reduce_max`], [`Value::reduce_min`] | one `reduce` with `add`/`maximum`/`minimum` |
//! | [`Value::mean`], [`Value::variance`] | `reduce` + `divide` (variance: the mean of squared deviations, numpy's `ddof=0`) |
//! | [`Value::softmax`], [`Value::log_softmax`] | max-shifted: `reduce` max, `subtract`, `exponential`, `reduce` add, `divide` / `log` |
//! | [`Value::logsumexp`] | `reduce` max, the max kept only where finite (`is_finite`, `select`), `exponential`, `reduce` add, `log`, `add` |
//! | [`Value::argmax`], [`Value::argmin`] | a two-operand `reduce` over the values and an `iota`: the first index of the extreme, NaN counted as the extreme (as `jnp.argmax`) |
//! | [`Value::one_hot`] | `iota`, `broadcast_in_dim`, `compare EQ`, `convert` (labels out of range give a row of zeros, as `jax.nn.one_hot`) |
//! | [`Value::relu`], [`Value::gelu`], [`Value::silu`] | `maximum` with 0; `gelu`'s tanh form (`jax.nn.gelu(approximate=True)`); `x * logistic(x)` |
//! | [`Value::softmax_cross_entropy`], [`Value::sparse_softmax_cross_entropy`] | `log_softmax`, `multiply`, `reduce` add, `negate` (sparse: through `one_hot`) |
//!
//! Reductions accumulate in the element type (as StableHLO's `reduce` does): convert bf16/f16
//! to f32 first when the sum of many elements matters. (`tanh` and `logistic` are ops:
//! [`Value::tanh`], [`Value::logistic`].)
//!
//! ```
//! use pjrt_builder::Function;
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A classifier's head: logits = x @ w, then the probabilities, the predicted class and the
//! // mean cross-entropy against integer labels.
//! let f = Function::new("classifier_head");
//! let x = f.parameter(ElementType::F32, &[2, 3])?;
//! let w = f.parameter(ElementType::F32, &[3, 4])?;
//! let labels = f.parameter(ElementType::S32, &[2])?;
//! let logits = x.matmul(&w)?.relu()?;                                // [2, 4]
//! let probabilities = logits.softmax(1)?;
//! let predicted = logits.argmax(1, ElementType::S32)?;               // [2]
//! let loss = logits.sparse_softmax_cross_entropy(&labels)?.mean(&[0])?; // a scalar
//! let program = f.finish(&[&probabilities, &predicted, &loss])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let x = client.upload(&[1f32, 0., 0., 0., 1., 0.], &[2, 3])?;
//! let w = client.upload(&[1f32, 2., 0., -1., 0., 0., 3., 0., 5., 5., 5., 5.], &[3, 4])?;
//! let labels = client.upload(&[1i32, 2], &[2])?;
//! let out = exe.execute(&[&x, &w, &labels], &ExecuteOptions::new())?;
//! let p = out[0].to_vec::<f32>()?;
//! assert!((p[0..4].iter().sum::<f32>() - 1.).abs() < 1e-6);
//! assert_eq!(out[1].to_vec::<i32>()?, [1, 2]);
//! // Row 0: logits [1, 2, 0, 0]; row 1: [0, 0, 3, 0] (relu); labels 1 and 2.
//! let ce = |l: [f32; 4], k: usize| l.iter().map(|v| v.exp()).sum::<f32>().ln() - l[k];
//! let want = (ce([1., 2., 0., 0.], 1) + ce([0., 0., 3., 0.], 2)) / 2.;
//! assert!((out[2].to_vec::<f32>()?[0] - want).abs() < 1e-6);
//! # Ok(()) }
//! ```

use half::{bf16, f16};
use pjrt_types::ElementType;

use crate::error::BuildError;
use crate::function::{Function, Value};
use crate::ops::elementwise::ComparisonDirection;
use crate::ops::linalg::DotDimensions;
use crate::ops::{attribute_error, check_dimension_list, operand_error, tensor};
use crate::types::{kind, Kind, TensorType};

/// The operand's tensor type, if its element type is a float (the helpers that divide, exponentiate, ...).
fn float_tensor<'v>(op: &'static str, x: &'v Value<'_>) -> Result<&'v TensorType, BuildError> {
    let t = tensor(op, x)?;
    if kind(t.element) != Kind::Float {
        return Err(operand_error(op, &[x], format!("{op} takes float elements (convert the integers first)")));
    }
    Ok(t)
}

/// Checks `axis` is a dimension of `t`.
fn check_axis(op: &'static str, t: &TensorType, axis: i64) -> Result<(), BuildError> {
    check_dimension_list(op, "axis", &[axis], t.rank())
}

/// A scalar of `element` with the value `value` (rounded to the type; integers truncated).
fn scalar_of<'f>(f: &'f Function, op: &'static str, element: ElementType, value: f64) -> Result<Value<'f>, BuildError> {
    match element {
        ElementType::F32 => f.scalar(value as f32),
        ElementType::F64 => f.scalar(value),
        ElementType::F16 => f.scalar(f16::from_f64(value)),
        ElementType::BF16 => f.scalar(bf16::from_f64(value)),
        ElementType::S8 => f.scalar(value as i8),
        ElementType::S16 => f.scalar(value as i16),
        ElementType::S32 => f.scalar(value as i32),
        ElementType::S64 => f.scalar(value as i64),
        ElementType::U8 => f.scalar(value as u8),
        ElementType::U16 => f.scalar(value as u16),
        ElementType::U32 => f.scalar(value as u32),
        ElementType::U64 => f.scalar(value as u64),
        // The small floats (f8, f4, f6): a finite value converted from f32.
        other if kind(other) == Kind::Float && value.is_finite() => f.scalar(value as f32)?.convert(other),
        other => Err(BuildError::UnsupportedElementType {
            element: other.name().to_string(),
            message: format!(
                "{op} needs the constant {value} of this type; convert to f32 or an 8- to 64-bit integer first"
            ),
        }),
    }
}

/// The value every element is at least (for `reduce_max`'s init): -inf for floats, MIN for integers.
fn lowest<'f>(f: &'f Function, op: &'static str, element: ElementType) -> Result<Value<'f>, BuildError> {
    match element {
        ElementType::S8 => f.scalar(i8::MIN),
        ElementType::S16 => f.scalar(i16::MIN),
        ElementType::S32 => f.scalar(i32::MIN),
        ElementType::S64 => f.scalar(i64::MIN),
        e if kind(e) == Kind::Unsigned => scalar_of(f, op, e, 0.0),
        e => scalar_of(f, op, e, f64::NEG_INFINITY),
    }
}

/// The value every element is at most (for `reduce_min`'s init): +inf for floats, MAX for integers.
fn highest<'f>(f: &'f Function, op: &'static str, element: ElementType) -> Result<Value<'f>, BuildError> {
    match element {
        ElementType::S8 => f.scalar(i8::MAX),
        ElementType::S16 => f.scalar(i16::MAX),
        ElementType::S32 => f.scalar(i32::MAX),
        ElementType::S64 => f.scalar(i64::MAX),
        ElementType::U8 => f.scalar(u8::MAX),
        ElementType::U16 => f.scalar(u16::MAX),
        ElementType::U32 => f.scalar(u32::MAX),
        ElementType::U64 => f.scalar(u64::MAX),
        e => scalar_of(f, op, e, f64::INFINITY),
    }
}

/// The dimensions of `t` that remain after reducing `dims` (sorted, as `reduce` keeps them).
fn kept_dimensions(t: &TensorType, dims: &[i64]) -> Vec<i64> {
    (0..t.rank() as i64).filter(|d| !dims.contains(d)).collect()
}

impl<'f> Value<'f> {
    /// The matrix product with numpy's `matmul` ranks, as one `stablehlo.dot_general`:
    /// vector·vector (a scalar), matrix·vector, vector·matrix, matrix·matrix, a stack
    /// `[..., m, k]` times a matrix `[k, n]` or vector, and stacks of equal rank whose leading
    /// (batch) dimensions agree, `[b..., m, k] x [b..., k, n] -> [b..., m, n]`. Other ranks are
    /// refused: broadcast the stack first.
    pub fn matmul(&self, rhs: &Value<'f>) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.matmul";
        let (a, b) = (tensor(OP, self)?, tensor(OP, rhs)?);
        let (ra, rb) = (a.rank() as i64, b.rank() as i64);
        let batch: Vec<i64> = if ra >= 3 && ra == rb { (0..ra - 2).collect() } else { Vec::new() };
        if ra == 0 || rb == 0 || (rb >= 3 && batch.is_empty()) {
            return Err(operand_error(
                OP,
                &[self, rhs],
                "matmul takes ranks 1 and 2, a stack times a matrix or vector, or stacks of equal rank (broadcast \
                 the lower-rank operand with broadcast_in_dim first); for scalars use multiply",
            ));
        }
        let rhs_contracting = if rb == 1 { 0 } else { rb - 2 };
        if batch.iter().any(|&d| a.dims[d as usize] != b.dims[d as usize])
            || a.dims[ra as usize - 1] != b.dims[rhs_contracting as usize]
        {
            return Err(operand_error(
                OP,
                &[self, rhs],
                "the lhs's last dimension must equal the rhs's contracting dimension (its first for rank 1 and 2, \
                 its second-to-last for a stack), and the batch dimensions must agree",
            ));
        }
        let dimensions = DotDimensions {
            lhs_batch: batch.clone(),
            rhs_batch: batch,
            lhs_contracting: vec![ra - 1],
            rhs_contracting: vec![rhs_contracting],
        };
        self.dot_general(rhs, &dimensions, None)
    }

    /// The sum over `dimensions`: `stablehlo.reduce` with an `add` body, from 0.
    pub fn reduce_sum(&self, dimensions: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.reduce_sum";
        let t = tensor(OP, self)?;
        check_dimension_list(OP, "dimensions", dimensions, t.rank())?;
        let zero = scalar_of(self.func, OP, t.element, 0.0)?;
        self.reduce(&zero, dimensions, |_, acc, x| acc.add(x))
    }

    /// The maximum over `dimensions`: `stablehlo.reduce` with a `maximum` body, from -inf (the
    /// smallest integer for integer types). A NaN makes the result NaN.
    pub fn reduce_max(&self, dimensions: &[i64]) -> Result<Value<'f>, BuildError> {
        self.reduce_extreme("nn.reduce_max", dimensions, true)
    }

    /// The minimum over `dimensions`: `stablehlo.reduce` with a `minimum` body, from +inf (the
    /// largest integer for integer types). A NaN makes the result NaN.
    pub fn reduce_min(&self, dimensions: &[i64]) -> Result<Value<'f>, BuildError> {
        self.reduce_extreme("nn.reduce_min", dimensions, false)
    }

    fn reduce_extreme(&self, op: &'static str, dimensions: &[i64], max: bool) -> Result<Value<'f>, BuildError> {
        let t = tensor(op, self)?;
        check_dimension_list(op, "dimensions", dimensions, t.rank())?;
        if matches!(kind(t.element), Kind::Bool | Kind::Complex) {
            return Err(operand_error(op, &[self], format!("{op} takes integers or floats")));
        }
        let init = if max { lowest(self.func, op, t.element)? } else { highest(self.func, op, t.element)? };
        let float = kind(t.element) == Kind::Float;
        self.reduce(&init, dimensions, |_, acc, x| {
            let m = if max { acc.maximum(x)? } else { acc.minimum(x)? };
            if !float {
                return Ok(m);
            }
            // StableHLO's maximum/minimum propagate NaN, but XLA's CPU backend keeps a NaN only
            // from its first operand and a reduce may pass the element second: keep either NaN.
            let m = x.compare(x, ComparisonDirection::Ne)?.select(x, &m)?;
            acc.compare(acc, ComparisonDirection::Ne)?.select(acc, &m)
        })
    }

    /// The mean over `dimensions` (floats): [`Value::reduce_sum`] divided by the number of
    /// elements reduced (NaN for none, as numpy).
    pub fn mean(&self, dimensions: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.mean";
        let t = float_tensor(OP, self)?;
        check_dimension_list(OP, "dimensions", dimensions, t.rank())?;
        let count: i64 = dimensions.iter().map(|&d| t.dims[d as usize]).product();
        let sum = self.reduce_sum(dimensions)?;
        let n = scalar_of(self.func, OP, t.element, count as f64)?.broadcast_in_dim(sum.dims(), &[])?;
        sum.divide(&n)
    }

    /// The variance over `dimensions` (floats): the mean of the squared deviations from the
    /// mean (numpy's `var` with `ddof=0`), computed in two passes (`mean`, `broadcast_in_dim`,
    /// `subtract`, `multiply`, `mean`) for accuracy.
    pub fn variance(&self, dimensions: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.variance";
        let t = float_tensor(OP, self)?;
        check_dimension_list(OP, "dimensions", dimensions, t.rank())?;
        let mean = self.mean(dimensions)?.broadcast_in_dim(&t.dims, &kept_dimensions(t, dimensions))?;
        let deviation = self.subtract(&mean)?;
        deviation.multiply(&deviation)?.mean(dimensions)
    }

    /// This tensor with the maximum over `axis` subtracted (broadcast back): the stable
    /// starting point of softmax and its relatives.
    fn max_shifted(&self, op: &'static str, axis: i64) -> Result<(Value<'f>, TensorType), BuildError> {
        let t = float_tensor(op, self)?.clone();
        check_axis(op, &t, axis)?;
        let kept = kept_dimensions(&t, &[axis]);
        let max = self.reduce_max(&[axis])?.broadcast_in_dim(&t.dims, &kept)?;
        Ok((self.subtract(&max)?, t))
    }

    /// `exp(x) / sum(exp(x))` along `axis` (floats), shifted by the maximum for stability:
    /// `reduce` max, `subtract`, `exponential`, `reduce` add, `divide`. A row of -inf gives NaN
    /// (as `jax.nn.softmax`).
    pub fn softmax(&self, axis: i64) -> Result<Value<'f>, BuildError> {
        let (shifted, t) = self.max_shifted("nn.softmax", axis)?;
        let e = shifted.exp()?;
        let sum = e.reduce_sum(&[axis])?.broadcast_in_dim(&t.dims, &kept_dimensions(&t, &[axis]))?;
        e.divide(&sum)
    }

    /// `x - logsumexp(x)` along `axis` (floats), shifted by the maximum: `reduce` max,
    /// `subtract`, `exponential`, `reduce` add, `log`, `subtract`.
    pub fn log_softmax(&self, axis: i64) -> Result<Value<'f>, BuildError> {
        let (shifted, t) = self.max_shifted("nn.log_softmax", axis)?;
        let sum = shifted.exp()?.reduce_sum(&[axis])?;
        let log_sum = sum.log()?.broadcast_in_dim(&t.dims, &kept_dimensions(&t, &[axis]))?;
        shifted.subtract(&log_sum)
    }

    /// `log(sum(exp(x)))` over `dimensions` (floats), computed as `m + log(sum(exp(x - m)))`
    /// with `m` the maximum where it is finite and 0 elsewhere (as `jax.nn.logsumexp`: all -inf
    /// gives -inf, an inf gives inf, a NaN gives NaN).
    pub fn logsumexp(&self, dimensions: &[i64]) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.logsumexp";
        let t = float_tensor(OP, self)?;
        check_dimension_list(OP, "dimensions", dimensions, t.rank())?;
        let max = self.reduce_max(dimensions)?;
        let zero = scalar_of(self.func, OP, t.element, 0.0)?.broadcast_in_dim(max.dims(), &[])?;
        let max = max.is_finite()?.select(&max, &zero)?;
        let kept = kept_dimensions(t, dimensions);
        let shifted = self.subtract(&max.broadcast_in_dim(&t.dims, &kept)?)?;
        shifted.exp()?.reduce_sum(dimensions)?.log()?.add(&max)
    }

    /// The index of the maximum along `axis`, as `index_type` (a signed or unsigned integer):
    /// the first on ties, and a NaN counts as larger than everything (as `jnp.argmax`). One
    /// two-operand `stablehlo.reduce` over the values and an `iota` of indices. Reducing an
    /// empty axis gives 0.
    pub fn argmax(&self, axis: i64, index_type: ElementType) -> Result<Value<'f>, BuildError> {
        self.arg_extreme("nn.argmax", axis, index_type, true)
    }

    /// The index of the minimum along `axis`: as [`Value::argmax`], with a NaN counting as
    /// smaller than everything (as `jnp.argmin`).
    pub fn argmin(&self, axis: i64, index_type: ElementType) -> Result<Value<'f>, BuildError> {
        self.arg_extreme("nn.argmin", axis, index_type, false)
    }

    fn arg_extreme(
        &self,
        op: &'static str,
        axis: i64,
        index_type: ElementType,
        max: bool,
    ) -> Result<Value<'f>, BuildError> {
        let t = tensor(op, self)?;
        check_axis(op, t, axis)?;
        if matches!(kind(t.element), Kind::Bool | Kind::Complex) {
            return Err(operand_error(op, &[self], format!("{op} takes integers or floats")));
        }
        if !matches!(kind(index_type), Kind::Signed | Kind::Unsigned) || index_type.bits().unwrap_or(0) < 8 {
            return Err(attribute_error(
                op,
                format!("index_type {} must be an integer type of 8 bits or more (S32, say)", index_type.name()),
            ));
        }
        let f = self.func;
        let indices = f.iota(index_type, &t.dims, axis)?;
        let init = if max { lowest(f, op, t.element)? } else { highest(f, op, t.element)? };
        let first = scalar_of(f, op, index_type, 0.0)?;
        let float = kind(t.element) == Kind::Float;
        let better = if max { ComparisonDirection::Gt } else { ComparisonDirection::Lt };
        let mut results = f.reduce_many(&[self, &indices], &[&init, &first], &[axis], |_, acc, x| {
            let (a, ai, v, vi) = (&acc[0], &acc[1], &x[0], &x[1]);
            // `take`: the element wins over the accumulator (NaN beats every number; equals, the smaller index).
            let mut beats = v.compare(a, better)?;
            let mut equal = v.compare(a, ComparisonDirection::Eq)?;
            if float {
                let (v_nan, a_nan) = (v.compare(v, ComparisonDirection::Ne)?, a.compare(a, ComparisonDirection::Ne)?);
                beats = beats.or(&v_nan.and(&a_nan.not()?)?)?;
                equal = equal.or(&v_nan.and(&a_nan)?)?;
            }
            let take = beats.or(&equal.and(&vi.compare(ai, ComparisonDirection::Lt)?)?)?;
            Ok(vec![take.select(v, a)?, take.select(vi, ai)?])
        })?;
        Ok(results.remove(1))
    }

    /// One-hot encoding of these integer labels: a tensor of `element` with one more (last)
    /// dimension of size `depth`, 1 where the position equals the label and 0 elsewhere (a
    /// label outside `0..depth` gives a row of zeros, as `jax.nn.one_hot`). Emits an `iota`, a
    /// `broadcast_in_dim` of the labels, `compare EQ` and `convert`.
    pub fn one_hot(&self, depth: i64, element: ElementType) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.one_hot";
        let t = tensor(OP, self)?;
        if !matches!(kind(t.element), Kind::Signed | Kind::Unsigned) {
            return Err(operand_error(OP, &[self], "one_hot takes integer labels"));
        }
        if depth < 0 {
            return Err(attribute_error(OP, format!("depth {depth} must be 0 or more")));
        }
        let mut dims = t.dims.clone();
        dims.push(depth);
        let rank = t.rank() as i64;
        let positions = self.func.iota(t.element, &dims, rank)?;
        let labels = self.broadcast_in_dim(&dims, &(0..rank).collect::<Vec<_>>())?;
        labels.compare(&positions, ComparisonDirection::Eq)?.convert(element)
    }

    /// `max(x, 0)`, elementwise: one `maximum` with a zero splat (NaN stays NaN; XLA keeps -0 as -0).
    pub fn relu(&self) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.relu";
        let t = tensor(OP, self)?;
        if matches!(kind(t.element), Kind::Bool | Kind::Complex) {
            return Err(operand_error(OP, &[self], "relu takes integers or floats"));
        }
        let zero = scalar_of(self.func, OP, t.element, 0.0)?.broadcast_in_dim(&t.dims, &[])?;
        self.maximum(&zero)
    }

    /// GELU in its tanh form, `x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))` (floats), as
    /// `jax.nn.gelu(x, approximate=True)`: `multiply`, `add`, `tanh`. (The erf form needs `erf`,
    /// which StableHLO 1.x does not have.)
    pub fn gelu(&self) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.gelu";
        let t = float_tensor(OP, self)?;
        let splat = |v: f64| scalar_of(self.func, OP, t.element, v)?.broadcast_in_dim(&t.dims, &[]);
        let cube = self.multiply(self)?.multiply(self)?;
        let inner =
            self.add(&splat(0.044715)?.multiply(&cube)?)?.multiply(&splat((2.0 / std::f64::consts::PI).sqrt())?)?;
        let cdf = splat(1.0)?.add(&inner.tanh()?)?.multiply(&splat(0.5)?)?;
        self.multiply(&cdf)
    }

    /// SiLU (swish), `x * logistic(x)` (floats), as `jax.nn.silu`.
    pub fn silu(&self) -> Result<Value<'f>, BuildError> {
        float_tensor("nn.silu", self)?;
        self.multiply(&self.logistic()?)
    }

    /// The cross-entropy of these logits against target probabilities `labels` (same shape,
    /// e.g. one-hot rows) along the last dimension, per example: `-sum(labels *
    /// log_softmax(logits), -1)`, as `optax.softmax_cross_entropy`. The result drops the last
    /// dimension; take its [`Value::mean`] for a loss.
    pub fn softmax_cross_entropy(&self, labels: &Value<'f>) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.softmax_cross_entropy";
        let t = float_tensor(OP, self)?;
        if tensor(OP, labels)? != t || t.rank() == 0 {
            return Err(operand_error(
                OP,
                &[self, labels],
                "logits and labels must have one type of rank 1 or more (the classes last); for integer labels use \
                 sparse_softmax_cross_entropy",
            ));
        }
        let last = t.rank() as i64 - 1;
        labels.multiply(&self.log_softmax(last)?)?.reduce_sum(&[last])?.negate()
    }

    /// [`Value::softmax_cross_entropy`] with integer class indices: `labels` has the logits'
    /// shape without the last dimension; it goes through [`Value::one_hot`] (an index out of
    /// range contributes 0, as `optax.softmax_cross_entropy_with_integer_labels` does not check).
    pub fn sparse_softmax_cross_entropy(&self, labels: &Value<'f>) -> Result<Value<'f>, BuildError> {
        const OP: &str = "nn.sparse_softmax_cross_entropy";
        let t = float_tensor(OP, self)?;
        let l = tensor(OP, labels)?;
        if t.rank() == 0
            || l.dims[..] != t.dims[..t.rank() - 1]
            || !matches!(kind(l.element), Kind::Signed | Kind::Unsigned)
        {
            return Err(operand_error(
                OP,
                &[self, labels],
                "the labels must be integers with the logits' shape less its last (class) dimension",
            ));
        }
        let depth = t.dims[t.rank() - 1];
        self.softmax_cross_entropy(&labels.one_hot(depth, t.element)?)
    }
}
