//! `reduce`, with its body built by a closure: the pattern every op with a region follows;
//! `reduce_window` and `select_and_scatter` (see [`Window`]).
//!
//! The closure gets the function (ops it adds go into the body while it runs) and the block
//! arguments, and returns the values the body yields. The body sees only its arguments and what
//! it builds (XLA makes it a separate computation): build constants inside the closure.
//!
//! ```
//! use pjrt_builder::Function;
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("reductions");
//! let x = f.parameter(ElementType::F32, &[2, 3])?;
//! let row_sums = x.reduce(&f.scalar(0f32)?, &[1], |_, acc, v| acc.add(v))?;
//! let max = x.reduce(&f.scalar(f32::NEG_INFINITY)?, &[0, 1], |_, acc, v| acc.maximum(v))?;
//! // Two operands reduced together: the sum and the count of positive elements.
//! let positive = x.compare(&f.splat(0f32, &[2, 3])?, pjrt_builder::ComparisonDirection::Gt)?;
//! let ones = positive.convert(ElementType::S32)?;
//! let both = f.reduce_many(&[&x, &ones], &[&f.scalar(0f32)?, &f.scalar(0i32)?], &[0, 1], |_, acc, v| {
//!     Ok(vec![acc[0].add(&v[0])?, acc[1].add(&v[1])?])
//! })?;
//! let program = f.finish(&[&row_sums, &max, &both[0], &both[1]])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[1f32, -2., 3., 4., 5., -6.], &[2, 3])?;
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<f32>()?, [2., 3.]);
//! assert_eq!(out[1].to_vec::<f32>()?, [5.]);
//! assert_eq!(out[2].to_vec::<f32>()?, [5.]);
//! assert_eq!(out[3].to_vec::<i32>()?, [4]);
//! # Ok(()) }
//! ```

use super::{attribute_error, check_dimension_list, operand_error, tensor, tensor_type};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, Op, Value};
use crate::types::{TensorType, Type};

impl<'f> Value<'f> {
    /// `stablehlo.reduce` of this tensor over `dimensions`, starting from the scalar `init`
    /// (of its element type); `body(f, accumulator, element)` combines two scalars.
    pub fn reduce(
        &self,
        init: &Value<'f>,
        dimensions: &[i64],
        body: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
    ) -> Result<Value<'f>, BuildError> {
        let mut results =
            self.func.reduce_many(&[self], &[init], dimensions, |f, acc, x| Ok(vec![body(f, &acc[0], &x[0])?]))?;
        Ok(results.remove(0))
    }
}

impl Function {
    /// `stablehlo.reduce` of several tensors of one shape together over `dimensions` (argmax:
    /// values and indices). `inits[i]` is a scalar of `inputs[i]`'s element type;
    /// `body(f, accumulators, elements)` returns one scalar per input.
    pub fn reduce_many<'f>(
        &'f self,
        inputs: &[&Value<'f>],
        inits: &[&Value<'f>],
        dimensions: &[i64],
        body: impl FnOnce(&'f Function, &[Value<'f>], &[Value<'f>]) -> Result<Vec<Value<'f>>, BuildError>,
    ) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.reduce";
        let (all, first, scalars) = check_inputs_and_inits(OP, inputs, inits)?;
        check_dimension_list(OP, "dimensions", dimensions, first.rank())?;
        let n = inputs.len();
        let arguments: Vec<Type> = scalars.iter().chain(&scalars).cloned().collect();
        let (region, returned) = self.region(OP, true, &arguments, |f, args| body(f, &args[..n], &args[n..]))?;
        if returned != scalars {
            return Err(BuildError::RegionResults {
                op: OP,
                returned: emit::types_for_message(&returned),
                expected: emit::types_for_message(&scalars),
            });
        }
        let kept: Vec<i64> =
            (0..first.rank() as i64).filter(|d| !dimensions.contains(d)).map(|d| first.dims[d as usize]).collect();
        let results =
            inputs.iter().map(|v| tensor_type(v.element_type().unwrap_or(first.element), kept.clone())).collect();
        let mut op = Op::new(OP, all, results).attr("dimensions", emit::i64_array(dimensions));
        op.regions.push(region);
        self.emit(op)
    }
}

/// The window of `reduce_window` and `select_and_scatter`: its size per dimension, and
/// optional strides, dilations and padding (empty: strides and dilations 1, no padding).
///
/// ```
/// use pjrt_builder::{Function, Window};
/// use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let f = Function::new("windows");
/// let x = f.parameter(ElementType::F32, &[4, 4])?;
/// // 2x2 max pooling with stride 2.
/// let pool = Window::new(&[2, 2]).strides(&[2, 2]);
/// let pooled = x.reduce_window(&f.scalar(f32::NEG_INFINITY)?, &pool, |_, a, b| a.maximum(b))?;
/// // Its gradient: each window's gradient goes to the window's maximum.
/// let grad = f.splat(1f32, &[2, 2])?;
/// let routed = x.select_and_scatter(
///     &grad,
///     &f.scalar(0f32)?,
///     &pool,
///     |_, a, b| a.compare(b, pjrt_builder::ComparisonDirection::Ge),
///     |_, a, b| a.add(b),
/// )?;
/// // A running sum along the rows: windows of 3, padded by 2 on the left.
/// let cumsum = x.reduce_window(&f.scalar(0f32)?, &Window::new(&[1, 3]).padding(&[(0, 0), (2, 0)]), |_, a, b| a.add(b))?;
/// let program = f.finish(&[&pooled, &routed, &cumsum])?;
///
/// let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let exe = client.compile(&program, &CompileOptions::new())?;
/// let values: Vec<f32> = (0..16).map(|i| i as f32).collect();
/// let a = client.upload(&values, &[4, 4])?;
/// let out = exe.execute(&[&a], &ExecuteOptions::new())?;
/// assert_eq!(out[0].to_vec::<f32>()?, [5., 7., 13., 15.]);
/// assert_eq!(out[1].to_vec::<f32>()?[5], 1.);
/// assert_eq!(out[2].to_vec::<f32>()?[..4], [0., 1., 3., 6.]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The window's size per dimension (each >= 1).
    pub dimensions: Vec<i64>,
    /// The step between windows per dimension (each >= 1; empty: 1).
    pub strides: Vec<i64>,
    /// The input's dilation per dimension (each >= 1; empty: 1). `reduce_window` only.
    pub base_dilations: Vec<i64>,
    /// The window's dilation per dimension (each >= 1; empty: 1). `reduce_window` only.
    pub window_dilations: Vec<i64>,
    /// `(low, high)` padding per dimension (empty: none); negative values crop in
    /// `reduce_window`, `select_and_scatter` needs them >= 0.
    pub padding: Vec<(i64, i64)>,
}

impl Window {
    /// A window of size `dimensions`, stride 1, no dilation or padding.
    pub fn new(dimensions: &[i64]) -> Window {
        Window { dimensions: dimensions.to_vec(), ..Window::default() }
    }

    /// Sets the strides.
    pub fn strides(mut self, strides: &[i64]) -> Window {
        self.strides = strides.to_vec();
        self
    }

    /// Sets the base (input) and window dilations.
    pub fn dilations(mut self, base: &[i64], window: &[i64]) -> Window {
        self.base_dilations = base.to_vec();
        self.window_dilations = window.to_vec();
        self
    }

    /// Sets the `(low, high)` padding.
    pub fn padding(mut self, padding: &[(i64, i64)]) -> Window {
        self.padding = padding.to_vec();
        self
    }

    /// The window's parameters filled to `rank` entries, checked; and the output dimensions
    /// over an input of `dims`.
    fn resolve(
        &self,
        op: &'static str,
        dims: &[i64],
        dilations: bool,
    ) -> Result<(ResolvedWindow, Vec<i64>), BuildError> {
        let rank = dims.len();
        let fill = |v: &Vec<i64>| if v.is_empty() { vec![1; rank] } else { v.clone() };
        let w = ResolvedWindow {
            dimensions: self.dimensions.clone(),
            strides: fill(&self.strides),
            base_dilations: fill(&self.base_dilations),
            window_dilations: fill(&self.window_dilations),
            padding: if self.padding.is_empty() { vec![(0, 0); rank] } else { self.padding.clone() },
        };
        if !dilations && (w.base_dilations.iter().chain(&w.window_dilations).any(|&d| d != 1)) {
            return Err(attribute_error(op, "this op has no dilations; leave them empty"));
        }
        let lengths_ok =
            [&w.dimensions, &w.strides, &w.base_dilations, &w.window_dilations].iter().all(|v| v.len() == rank)
                && w.padding.len() == rank;
        let positive = [&w.dimensions, &w.strides, &w.base_dilations, &w.window_dilations]
            .iter()
            .all(|v| v.iter().all(|&x| x >= 1));
        if !lengths_ok || !positive {
            return Err(attribute_error(
                op,
                format!(
                    "window {:?}, strides {:?}, dilations {:?}/{:?} and padding {:?} need {rank} entries each (the \
                     input's rank; strides, dilations and padding may be empty), sizes, strides and dilations >= 1",
                    self.dimensions, self.strides, self.base_dilations, self.window_dilations, self.padding
                ),
            ));
        }
        let mut out = Vec::with_capacity(rank);
        for (i, &size) in dims.iter().enumerate() {
            // Checked: every number is the caller's and may be huge.
            let dilated_input = if size == 0 {
                Some(0)
            } else {
                (size - 1).checked_mul(w.base_dilations[i]).and_then(|x| x.checked_add(1))
            };
            let padded =
                dilated_input.and_then(|x| x.checked_add(w.padding[i].0)).and_then(|x| x.checked_add(w.padding[i].1));
            let window = (w.dimensions[i] - 1).checked_mul(w.window_dilations[i]).and_then(|x| x.checked_add(1));
            match (padded, window) {
                (Some(p), Some(win)) if p >= 0 => out.push(if p < win { 0 } else { (p - win) / w.strides[i] + 1 }),
                _ => {
                    return Err(attribute_error(
                        op,
                        format!(
                        "dimension {i}: padding {:?} crops more than the input's {} elements, or the sizes overflow",
                        w.padding[i], dims[i]
                    ),
                    ))
                }
            }
        }
        Ok((w, out))
    }
}

struct ResolvedWindow {
    dimensions: Vec<i64>,
    strides: Vec<i64>,
    base_dilations: Vec<i64>,
    window_dilations: Vec<i64>,
    padding: Vec<(i64, i64)>,
}

impl ResolvedWindow {
    fn padding_attr(&self) -> Option<pjrt_stablehlo::ir::Attr> {
        if self.padding.iter().all(|&p| p == (0, 0)) {
            return None;
        }
        let rows: Vec<Vec<i64>> = self.padding.iter().map(|&(lo, hi)| vec![lo, hi]).collect();
        Some(emit::i64_matrix(&rows, 2))
    }
}

impl<'f> Value<'f> {
    /// `stablehlo.reduce_window` of this tensor: each output element combines one window of
    /// the (padded, dilated) input, starting from the scalar `init`, with `body(f, acc, x)`.
    /// `init` must be the identity of `body` (0 for `add`, -inf for `maximum`): it also fills
    /// the padding, and XLA assumes it (a one-element window gives just the element).
    pub fn reduce_window(
        &self,
        init: &Value<'f>,
        window: &Window,
        body: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
    ) -> Result<Value<'f>, BuildError> {
        let mut results =
            self.func.reduce_window_many(&[self], &[init], window, |f, acc, x| Ok(vec![body(f, &acc[0], &x[0])?]))?;
        Ok(results.remove(0))
    }

    /// `stablehlo.select_and_scatter`: for each window of this tensor, `select(f, a, b)` (a
    /// `tensor<i1>`: keep `a` over `b`) picks one element, and the matching element of `source`
    /// (shaped like the windows' output) is combined into it with `scatter(f, acc, s)`; other
    /// elements are `init`. With `>=` and `+` this is max pooling's gradient.
    pub fn select_and_scatter(
        &self,
        source: &Value<'f>,
        init: &Value<'f>,
        window: &Window,
        select: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
        scatter: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.select_and_scatter";
        let (t, s, i) = (tensor(OP, self)?, tensor(OP, source)?, tensor(OP, init)?);
        let all = [self, source, init];
        if s.element != t.element || *i != t.scalar() {
            return Err(operand_error(OP, &all, "source and init need the operand's element type, init a scalar"));
        }
        if window.padding.iter().any(|&(lo, hi)| lo < 0 || hi < 0) {
            return Err(attribute_error(OP, format!("padding {:?} must be >= 0", window.padding)));
        }
        let (w, out) = window.resolve(OP, &t.dims, false)?;
        if s.dims != out {
            return Err(operand_error(OP, &all, format!("the source must have the windows' output shape {out:?}")));
        }
        let scalar = Type::Tensor(t.scalar());
        let predicate = Type::Tensor(crate::types::TensorType { element: pjrt_types::ElementType::PRED, dims: vec![] });
        let args = [scalar.clone(), scalar.clone()];
        let (select_region, returned) = self.func.region(OP, true, &args, |f, a| Ok(vec![select(f, &a[0], &a[1])?]))?;
        if returned != [predicate.clone()] {
            return Err(BuildError::RegionResults {
                op: OP,
                returned: format!("{} (select)", emit::types_for_message(&returned)),
                expected: predicate.to_string(),
            });
        }
        let (scatter_region, returned) =
            self.func.region(OP, true, &args, |f, a| Ok(vec![scatter(f, &a[0], &a[1])?]))?;
        if returned != [scalar.clone()] {
            return Err(BuildError::RegionResults {
                op: OP,
                returned: format!("{} (scatter)", emit::types_for_message(&returned)),
                expected: scalar.to_string(),
            });
        }
        let mut op = Op::new(OP, all.to_vec(), vec![self.ty.clone()])
            .attr("window_dimensions", emit::i64_array(&w.dimensions))
            .attr("window_strides", emit::i64_array(&w.strides));
        if let Some(padding) = w.padding_attr() {
            op = op.attr("padding", padding);
        }
        op.regions.push(select_region);
        op.regions.push(scatter_region);
        self.func.emit1(op)
    }
}

impl Function {
    /// `stablehlo.reduce_window` of several tensors of one shape together (`inits[i]` a
    /// scalar of `inputs[i]`'s element type; `body(f, accumulators, elements)` returns one
    /// scalar per input).
    pub fn reduce_window_many<'f>(
        &'f self,
        inputs: &[&Value<'f>],
        inits: &[&Value<'f>],
        window: &Window,
        body: impl FnOnce(&'f Function, &[Value<'f>], &[Value<'f>]) -> Result<Vec<Value<'f>>, BuildError>,
    ) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.reduce_window";
        let (all, first, scalars) = check_inputs_and_inits(OP, inputs, inits)?;
        let (w, out) = window.resolve(OP, &first.dims, true)?;
        let n = inputs.len();
        let arguments: Vec<Type> = scalars.iter().chain(&scalars).cloned().collect();
        let (region, returned) = self.region(OP, true, &arguments, |f, args| body(f, &args[..n], &args[n..]))?;
        if returned != scalars {
            return Err(BuildError::RegionResults {
                op: OP,
                returned: emit::types_for_message(&returned),
                expected: emit::types_for_message(&scalars),
            });
        }
        let results =
            inputs.iter().map(|v| tensor_type(v.element_type().unwrap_or(first.element), out.clone())).collect();
        let mut op = Op::new(OP, all, results)
            .attr("window_dimensions", emit::i64_array(&w.dimensions))
            .attr("window_strides", emit::i64_array(&w.strides))
            .attr("base_dilations", emit::i64_array(&w.base_dilations))
            .attr("window_dilations", emit::i64_array(&w.window_dilations));
        if let Some(padding) = w.padding_attr() {
            op = op.attr("padding", padding);
        }
        op.regions.push(region);
        self.emit(op)
    }
}

/// The checks `reduce` and `reduce_window` of several inputs share: at least one input, one
/// init per input, inputs of one shape, each init a scalar of its input's element type.
/// Returns every operand (for error messages), the first input's type and the scalar types.
#[allow(clippy::type_complexity)]
fn check_inputs_and_inits<'a, 'f>(
    op: &'static str,
    inputs: &[&'a Value<'f>],
    inits: &[&'a Value<'f>],
) -> Result<(Vec<&'a Value<'f>>, TensorType, Vec<Type>), BuildError> {
    let all: Vec<&Value<'f>> = inputs.iter().chain(inits).copied().collect();
    let name = op.trim_start_matches("stablehlo.");
    if inputs.is_empty() || inputs.len() != inits.len() {
        return Err(operand_error(op, &all, format!("{name} needs at least one input and one init value per input")));
    }
    let first = tensor(op, inputs[0])?.clone();
    let mut scalars = Vec::with_capacity(inputs.len());
    for (input, init) in inputs.iter().zip(inits) {
        let (t, i) = (tensor(op, input)?, tensor(op, init)?);
        if t.dims != first.dims || *i != t.scalar() {
            return Err(operand_error(
                op,
                &all,
                "inputs need one shape, and each init must be a scalar of its input's element type",
            ));
        }
        scalars.push(Type::Tensor(t.scalar()));
    }
    Ok((all, first, scalars))
}
