//! Tuples, `rng_bit_generator`, `optimization_barrier`, `custom_call`, `replica_id` and
//! `partition_id`.
//!
//! ```
//! use pjrt_builder::{CustomCall, Function, RngAlgorithm, Type};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("misc");
//! let x = f.parameter(ElementType::F32, &[3])?;
//! let pair = f.tuple(&[&x, &f.scalar(7i32)?])?;
//! let seven = pair.get_tuple_element(1)?;
//! // Random bits from a (key, counter) state: the same state gives the same bits.
//! let state = f.constant(&[42u64, 0], &[2])?;
//! let (_next_state, bits) = state.rng_bit_generator(RngAlgorithm::ThreeFry, ElementType::U32, &[4])?;
//! // An identity the compiler may not look through, and a custom call the plugin knows.
//! let kept = f.optimization_barrier(&[&x])?;
//! let sharded = f.custom_call(
//!     &CustomCall::new("Sharding").attribute("mhlo.sharding", "\"{replicated}\""),
//!     &[&kept[0]],
//!     &[x.ty().clone()],
//! )?;
//! let program = f.finish(&[&seven, &bits, &sharded[0], &f.replica_id()?, &f.partition_id()?])?;
//! assert!(program.text().unwrap().contains("call_target_name = \"Sharding\""));
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[1f32, 2., 3.], &[3])?;
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<i32>()?, [7]);
//! assert_eq!(out[1].dimensions()?, [4]);
//! assert_eq!(out[2].to_vec::<f32>()?, [1., 2., 3.]);
//! assert_eq!(out[3].to_vec::<u32>()?, [0]);
//! assert_eq!(out[4].to_vec::<u32>()?, [0]);
//! # Ok(()) }
//! ```

use pjrt_types::ElementType;

use super::{attribute_error, operand_error, tensor, tensor_type};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, Op, Value};
use crate::types::{TensorType, Type};

/// The algorithm of `rng_bit_generator` (`#stablehlo<rng_algorithm ...>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RngAlgorithm {
    /// The backend's choice: the bits may differ between plugins and versions.
    Default,
    /// Threefry-2x32 (state: 2 × u64, key then counter).
    ThreeFry,
    /// Philox-4x32 (state: 2 or 3 × u64).
    Philox,
}

impl RngAlgorithm {
    fn spelling(self) -> &'static str {
        match self {
            RngAlgorithm::Default => "DEFAULT",
            RngAlgorithm::ThreeFry => "THREE_FRY",
            RngAlgorithm::Philox => "PHILOX",
        }
    }
}

/// A `stablehlo.custom_call`'s target and attributes (see [`Function::custom_call`]).
#[derive(Clone, Debug)]
pub struct CustomCall {
    target: String,
    has_side_effect: bool,
    backend_config: Option<String>,
    api_version: i32,
    extra: Vec<(String, emit::AttributeValue)>,
}

impl CustomCall {
    /// A call of `target` (`call_target_name`), without side effects, API version 1 (the
    /// original), no backend config.
    pub fn new(target: &str) -> CustomCall {
        CustomCall {
            target: target.to_string(),
            has_side_effect: false,
            backend_config: None,
            api_version: 1,
            extra: Vec::new(),
        }
    }

    /// Whether the call has side effects (the compiler then keeps it even if unused).
    pub fn has_side_effect(mut self, yes: bool) -> CustomCall {
        self.has_side_effect = yes;
        self
    }

    /// The opaque `backend_config` string handed to the target.
    pub fn backend_config(mut self, config: &str) -> CustomCall {
        self.backend_config = Some(config.to_string());
        self
    }

    /// `api_version`: 1 original, 2 status-returning, 3 status-returning unified, 4 typed FFI
    /// (0, unspecified, is refused by XLA).
    pub fn api_version(mut self, version: i32) -> CustomCall {
        self.api_version = version;
        self
    }

    /// Any other attribute (`mhlo.sharding`, `mhlo.frontend_attributes`, ...), its value as MLIR
    /// text. [`Function::custom_call`] refuses a name that is not a bare MLIR identifier and a
    /// value that is not exactly one attribute ([`pjrt_stablehlo::parse_attribute`] reads it;
    /// no `//` either), so the text cannot add attributes or operands.
    pub fn attribute(mut self, name: &str, mlir_value: &str) -> CustomCall {
        self.extra.push((name.to_string(), emit::AttributeValue::Text(mlir_value.to_string())));
        self
    }

    /// An attribute built here (not user text).
    pub(crate) fn built_attribute(mut self, name: &str, value: pjrt_stablehlo::ir::Attr) -> CustomCall {
        self.extra.push((name.to_string(), emit::AttributeValue::Built(value)));
        self
    }
}

impl Function {
    /// `stablehlo.tuple` of `elements` (tensors, tuples or tokens). A tuple returned from the
    /// function comes back from the plugin as its elements, one buffer each.
    pub fn tuple<'f>(&'f self, elements: &[&Value<'f>]) -> Result<Value<'f>, BuildError> {
        let ty = Type::Tuple(elements.iter().map(|v| v.ty.clone()).collect());
        self.emit1(Op::new("stablehlo.tuple", elements.to_vec(), vec![ty]))
    }

    /// `stablehlo.optimization_barrier`: the values, unchanged, which the compiler may not move
    /// computations across (keeps a recomputation from being merged or hoisted).
    pub fn optimization_barrier<'f>(&'f self, values: &[&Value<'f>]) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.optimization_barrier";
        if let Some(v) = values.iter().find(|v| matches!(v.ty, Type::Tuple(_))) {
            return Err(operand_error(OP, &[v], "tensors or tokens are expected (take the tuple's elements apart)"));
        }
        let types = values.iter().map(|v| v.ty.clone()).collect();
        self.emit(Op::new(OP, values.to_vec(), types))
    }

    /// `stablehlo.custom_call` of `call.target` with `inputs`, declared to return `results`.
    ///
    /// The builder cannot know what a target computes: the result types are taken as given
    /// and the plugin decides at compile time whether it knows the target (an unknown one is a
    /// compile error naming it). Targets XLA itself handles include `Sharding` (an identity
    /// carrying an `mhlo.sharding` attribute) and `SPMDFullToShardShape`/`SPMDShardToFullShape`.
    pub fn custom_call<'f>(
        &'f self,
        call: &CustomCall,
        inputs: &[&Value<'f>],
        results: &[Type],
    ) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.custom_call";
        if call.target.is_empty() {
            return Err(attribute_error(OP, "the call target name is empty; name the registered target to call"));
        }
        if !matches!(call.api_version, 1..=4) {
            return Err(attribute_error(
                OP,
                format!("api_version {} is not one XLA runs (1, 2, 3 or 4)", call.api_version),
            ));
        }
        let mut op = Op::new(OP, inputs.to_vec(), results.to_vec())
            .attr("call_target_name", emit::string_attr(&call.target))
            .attr("has_side_effect", emit::bool_attr(call.has_side_effect))
            .attr("api_version", emit::i32_attr(call.api_version));
        if let Some(config) = &call.backend_config {
            op = op.attr("backend_config", emit::string_attr(config));
        }
        for (name, value) in &call.extra {
            let value = match value {
                emit::AttributeValue::Built(attr) => attr.clone(),
                emit::AttributeValue::Text(text) => emit::user_attribute(OP, name, text)?,
            };
            op = op.attr(name, value);
        }
        self.emit(op)
    }

    /// `stablehlo.replica_id`: this replica's number, a `tensor<ui32>`.
    pub fn replica_id(&self) -> Result<Value<'_>, BuildError> {
        self.emit1(Op::new("stablehlo.replica_id", Vec::new(), vec![tensor_type(ElementType::U32, Vec::new())]))
    }

    /// `stablehlo.partition_id`: this partition's number, a `tensor<ui32>`. XLA refuses it in
    /// programs compiled with SPMD partitioning (which partition is meant is ambiguous there).
    pub fn partition_id(&self) -> Result<Value<'_>, BuildError> {
        self.emit1(Op::new("stablehlo.partition_id", Vec::new(), vec![tensor_type(ElementType::U32, Vec::new())]))
    }
}

impl<'f> Value<'f> {
    /// `stablehlo.get_tuple_element`: element `index` of this tuple.
    pub fn get_tuple_element(&self, index: usize) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.get_tuple_element";
        let Type::Tuple(items) = &self.ty else {
            return Err(operand_error(OP, &[self], "a tuple is expected"));
        };
        let Some(ty) = items.get(index) else {
            return Err(attribute_error(OP, format!("index {index} is out of range for {}", self.ty)));
        };
        let ty = ty.clone();
        self.func.emit1(Op::new(OP, vec![self], vec![ty]).attr("index", emit::i32_attr(index as i32)))
    }

    /// `stablehlo.rng_bit_generator`: random bits of shape `dims` and element type `element`
    /// (u32 or u64) from this state (u64; 2 elements for THREE_FRY, 2 or 3 for PHILOX and
    /// DEFAULT).
    /// Returns the next state and the bits; the same state gives the same bits.
    pub fn rng_bit_generator(
        &self,
        algorithm: RngAlgorithm,
        element: ElementType,
        dims: &[i64],
    ) -> Result<(Value<'f>, Value<'f>), BuildError> {
        const OP: &str = "stablehlo.rng_bit_generator";
        let t = tensor(OP, self)?;
        let state_ok = t.element == ElementType::U64
            && t.rank() == 1
            && match algorithm {
                RngAlgorithm::ThreeFry => t.dims[0] == 2,
                // XLA's CPU and GPU backends run DEFAULT as PHILOX (a shorter state fails to compile).
                RngAlgorithm::Philox | RngAlgorithm::Default => t.dims[0] == 2 || t.dims[0] == 3,
            };
        if !state_ok {
            return Err(operand_error(
                OP,
                &[self],
                "the state must be a tensor<2xui64> for THREE_FRY, tensor<2xui64> or tensor<3xui64> for PHILOX and DEFAULT",
            ));
        }
        if !matches!(element, ElementType::U32 | ElementType::U64) {
            return Err(attribute_error(OP, format!("bits of {} are not generated; use u32 or u64", element.name())));
        }
        let bits = TensorType::new(element, dims)?;
        let mut results = self.func.emit(
            Op::new(OP, vec![self], vec![self.ty.clone(), Type::Tensor(bits)])
                .attr("rng_algorithm", emit::enum_attr("rng_algorithm", algorithm.spelling())),
        )?;
        let bits = results.pop().expect("two results");
        let state = results.pop().expect("two results");
        Ok((state, bits))
    }
}
