//! `sort`, with a comparator built by a closure.
//!
//! ```
//! use pjrt_builder::{ComparisonDirection, Function};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("sorting");
//! let x = f.parameter(ElementType::F32, &[5])?;
//! let ascending = x.sort(0, true, |_, a, b| a.compare(b, ComparisonDirection::Lt))?;
//! // Sort keys and carry their positions along (an argsort), descending.
//! let index = f.iota(ElementType::S32, &[5], 0)?;
//! let both = f.sort(&[&x, &index], 0, true, |_, lhs, rhs| lhs[0].compare(&rhs[0], ComparisonDirection::Gt))?;
//! let program = f.finish(&[&ascending, &both[1]])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[3f32, 1., 4., 1., 5.], &[5])?;
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<f32>()?, [1., 1., 3., 4., 5.]);
//! assert_eq!(out[1].to_vec::<i32>()?, [4, 2, 0, 1, 3]);
//! # Ok(()) }
//! ```

use pjrt_types::ElementType;

use super::{attribute_error, operand_error, tensor};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, Op, Value};
use crate::types::{TensorType, Type};

impl<'f> Value<'f> {
    /// `stablehlo.sort` of this tensor along `dimension`; `less(f, a, b)` returns a
    /// `tensor<i1>` that holds when scalar `a` goes before `b`. `stable` keeps equal elements
    /// in their order.
    pub fn sort(
        &self,
        dimension: i64,
        stable: bool,
        less: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
    ) -> Result<Value<'f>, BuildError> {
        let mut sorted = self.func.sort(&[self], dimension, stable, |f, lhs, rhs| less(f, &lhs[0], &rhs[0]))?;
        Ok(sorted.remove(0))
    }
}

impl Function {
    /// `stablehlo.sort` of several tensors of one shape together along `dimension`:
    /// `less(f, lhs, rhs)` gets one scalar per input for each of the two elements compared and
    /// returns a `tensor<i1>`; every input is permuted the same way.
    pub fn sort<'f>(
        &'f self,
        inputs: &[&Value<'f>],
        dimension: i64,
        stable: bool,
        less: impl FnOnce(&'f Function, &[Value<'f>], &[Value<'f>]) -> Result<Value<'f>, BuildError>,
    ) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.sort";
        let Some(first) = inputs.first() else {
            return Err(attribute_error(OP, "sort needs at least one input"));
        };
        let first = tensor(OP, first)?;
        for input in inputs {
            if tensor(OP, input)?.dims != first.dims {
                return Err(operand_error(OP, inputs, "every input must have the same dimensions"));
            }
        }
        let rank = first.rank() as i64;
        if !(0..rank).contains(&dimension) {
            return Err(attribute_error(OP, format!("dimension {dimension} is out of range for {first}")));
        }
        // Block arguments: (lhs, rhs) per input, interleaved.
        let mut arguments = Vec::with_capacity(2 * inputs.len());
        for input in inputs {
            let scalar = Type::Tensor(tensor(OP, input)?.scalar());
            arguments.push(scalar.clone());
            arguments.push(scalar);
        }
        let (region, returned) = self.region(OP, true, &arguments, |f, args| {
            let lhs: Vec<Value<'f>> = args.iter().step_by(2).cloned().collect();
            let rhs: Vec<Value<'f>> = args.iter().skip(1).step_by(2).cloned().collect();
            Ok(vec![less(f, &lhs, &rhs)?])
        })?;
        let predicate = Type::Tensor(TensorType { element: ElementType::PRED, dims: Vec::new() });
        if returned != [predicate.clone()] {
            return Err(BuildError::RegionResults {
                op: OP,
                returned: emit::types_for_message(&returned),
                expected: predicate.to_string(),
            });
        }
        let types = inputs.iter().map(|v| v.ty.clone()).collect();
        let mut op = Op::new(OP, inputs.to_vec(), types)
            .attr("dimension", emit::i64_attr(dimension))
            .attr("is_stable", emit::bool_attr(stable));
        op.regions.push(region);
        self.emit(op)
    }
}
