//! Control flow with nested regions: `while`, `if` and `case`.
//!
//! Each branch or body is a closure that gets the function (its ops go into the region while
//! it runs) and returns the values the region yields. Unlike reduce bodies these regions may
//! use values from outside (captures), as StableHLO allows.
//!
//! ```
//! use pjrt_builder::{ComparisonDirection, Function};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("control");
//! let n = f.parameter(ElementType::S32, &[])?;
//! // Sum of 0..n with a while loop over (i, total).
//! let zero = f.scalar(0i32)?;
//! let looped = f.while_loop(
//!     &[&zero, &zero],
//!     |_, s| s[0].compare(&n, ComparisonDirection::Lt),
//!     |f, s| Ok(vec![s[0].add(&f.scalar(1i32)?)?, s[1].add(&s[0])?]),
//! )?;
//! // if n > 3 { n * 10 } else { -n }
//! let big = n.compare(&f.scalar(3i32)?, ComparisonDirection::Gt)?;
//! let chosen = f.if_else(&big, |f| Ok(vec![n.multiply(&f.scalar(10i32)?)?]), |_| Ok(vec![n.negate()?]))?;
//! // case n of 0 => 100, 1 => 101, _ => 102 (an index out of range runs the last branch)
//! let picked = f.case(&n, 3, |f, k| Ok(vec![f.scalar(100 + k as i32)?]))?;
//! let program = f.finish(&[&looped[1], &chosen[0], &picked[0]])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let five = client.upload(&[5i32], &[])?;
//! let out = exe.execute(&[&five], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<i32>()?, [10]);
//! assert_eq!(out[1].to_vec::<i32>()?, [50]);
//! assert_eq!(out[2].to_vec::<i32>()?, [102]);
//! # Ok(()) }
//! ```

use pjrt_types::ElementType;

use super::{attribute_error, operand_error, tensor};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, Op, Value};
use crate::types::{TensorType, Type};

impl Function {
    /// `stablehlo.while`: starting from `init`, runs `body` (the loop state → the next state,
    /// of the same types) while `cond` (the state → a `tensor<i1>`) holds. Returns the final
    /// state.
    pub fn while_loop<'f>(
        &'f self,
        init: &[&Value<'f>],
        cond: impl FnOnce(&'f Function, &[Value<'f>]) -> Result<Value<'f>, BuildError>,
        body: impl FnOnce(&'f Function, &[Value<'f>]) -> Result<Vec<Value<'f>>, BuildError>,
    ) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.while";
        let types: Vec<Type> = init.iter().map(|v| v.ty.clone()).collect();
        let predicate = Type::Tensor(TensorType { element: ElementType::PRED, dims: Vec::new() });
        let (cond_region, returned) = self.region(OP, false, &types, |f, args| Ok(vec![cond(f, args)?]))?;
        check_region(OP, "the condition", &returned, std::slice::from_ref(&predicate))?;
        let (body_region, returned) = self.region(OP, false, &types, body)?;
        check_region(OP, "the body", &returned, &types)?;
        let mut op = Op::new(OP, init.to_vec(), types);
        op.regions.push(cond_region);
        op.regions.push(body_region);
        self.emit(op)
    }

    /// `stablehlo.if`: runs `on_true` when the `tensor<i1>` `predicate` holds, else
    /// `on_false`; both return values of the same types, which are the results.
    pub fn if_else<'f>(
        &'f self,
        predicate: &Value<'f>,
        on_true: impl FnOnce(&'f Function) -> Result<Vec<Value<'f>>, BuildError>,
        on_false: impl FnOnce(&'f Function) -> Result<Vec<Value<'f>>, BuildError>,
    ) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.if";
        let p = tensor(OP, predicate)?;
        if p.element != ElementType::PRED || p.rank() != 0 {
            return Err(operand_error(OP, &[predicate], "the predicate must be a tensor<i1>"));
        }
        // The predicate is checked before the branches are built: a branch's error then
        // names the branch's own op.
        self.check_visible(OP, predicate)?;
        let (true_region, true_types) = self.region(OP, false, &[], |f, _| on_true(f))?;
        let (false_region, false_types) = self.region(OP, false, &[], |f, _| on_false(f))?;
        check_region(OP, "the false branch", &false_types, &true_types)?;
        let mut op = Op::new(OP, vec![predicate], true_types);
        op.regions.push(true_region);
        op.regions.push(false_region);
        self.emit(op)
    }

    /// `stablehlo.case`: runs branch `index` (a `tensor<i32>`) of `branches` branches, each
    /// built by `branch(f, k)` for `k` in `0..branches`; an index out of range runs the last
    /// branch. Every branch returns values of the same types, which are the results.
    pub fn case<'f>(
        &'f self,
        index: &Value<'f>,
        branches: usize,
        mut branch: impl FnMut(&'f Function, usize) -> Result<Vec<Value<'f>>, BuildError>,
    ) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.case";
        let t = tensor(OP, index)?;
        if t.element != ElementType::S32 || t.rank() != 0 {
            return Err(operand_error(OP, &[index], "the index must be a tensor<i32>"));
        }
        if branches == 0 {
            return Err(attribute_error(OP, "a case needs at least one branch"));
        }
        self.check_visible(OP, index)?;
        let mut regions = Vec::with_capacity(branches);
        let mut types: Option<Vec<Type>> = None;
        for k in 0..branches {
            let (region, returned) = self.region(OP, false, &[], |f, _| branch(f, k))?;
            match &types {
                None => types = Some(returned),
                Some(first) => check_region(OP, &format!("branch {k}"), &returned, first)?,
            }
            regions.push(region);
        }
        let mut op = Op::new(OP, vec![index], types.unwrap_or_default());
        op.regions = regions;
        self.emit(op)
    }
}

/// Checks the types a region returned.
fn check_region(op: &'static str, which: &str, returned: &[Type], expected: &[Type]) -> Result<(), BuildError> {
    if returned != expected {
        return Err(BuildError::RegionResults {
            op,
            returned: format!("{} ({which})", emit::types_for_message(returned)),
            expected: emit::types_for_message(expected),
        });
    }
    Ok(())
}
