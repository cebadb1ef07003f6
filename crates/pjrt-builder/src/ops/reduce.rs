//! `reduce`, with its body built by a closure: the pattern every op with a region follows.
//!
//! The closure gets the function (ops it adds go into the body while it runs) and the block
//! arguments, and returns the values the body yields. The body sees only its arguments and what
//! it builds (XLA makes it a separate computation): build constants inside the closure.
//!
//! ```
//! use pjrt_builder::Function;
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, Placement, Plugin};
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
//! let plugin = Plugin::load(&pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.buffer_from_slice(&[1f32, -2., 3., 4., 5., -6.], &[2, 3], Placement::Default)?;
//! let out = exe.execute(&[&a])?;
//! assert_eq!(out[0].to_vec::<f32>()?, [2., 3.]);
//! assert_eq!(out[1].to_vec::<f32>()?, [5.]);
//! assert_eq!(out[2].to_vec::<f32>()?, [5.]);
//! assert_eq!(out[3].to_vec::<i32>()?, [4]);
//! # Ok(()) }
//! ```

use super::{check_dimension_list, operand_error, tensor, tensor_type};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, Op, Value};
use crate::types::Type;

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
        let all: Vec<&Value<'f>> = inputs.iter().chain(inits).copied().collect();
        if inputs.is_empty() || inputs.len() != inits.len() {
            return Err(operand_error(OP, &all, "reduce needs at least one input and one init value per input"));
        }
        let first = tensor(OP, inputs[0])?;
        let mut scalars = Vec::with_capacity(inputs.len());
        for (input, init) in inputs.iter().zip(inits) {
            let (t, i) = (tensor(OP, input)?, tensor(OP, init)?);
            if t.dims != first.dims || *i != t.scalar() {
                return Err(operand_error(
                    OP,
                    &all,
                    "inputs need one shape, and each init must be a scalar of its input's element type",
                ));
            }
            scalars.push(Type::Tensor(t.scalar()));
        }
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
