//! [`Function`] (the builder of `func.func @main`), [`Value`] (an SSA value and its type),
//! region scopes, and `finish`.

use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pjrt_stablehlo::ir::{self, Attr};
use pjrt_types::ElementType;

use crate::emit::{self, AttributeValue};
use crate::error::BuildError;
use crate::types::{element_min_version, TensorType, Type};
use pjrt_types::StableHloVersion;

/// Builds one StableHLO function, `func.func public @main`, in a module of its own.
///
/// Parameters, constants and iotas come from the function; every other op is a method on
/// [`Value`]s (`x.add(&y)?.tanh()?`). Each op checks its operands' types and infers its result
/// type when it is added: a mismatch is a [`BuildError`] then, never text a plugin rejects later.
/// The function is built through `&self` (interior mutability), so values can borrow it.
///
/// ```
/// use pjrt_builder::Function;
/// use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let f = Function::new("affine");
/// let x = f.parameter(ElementType::F32, &[2, 3])?;
/// let w = f.parameter(ElementType::F32, &[3, 2])?;
/// let y = x.dot_general(&w, &pjrt_builder::DotDimensions::matmul(), None)?.add(&f.splat(1f32, &[2, 2])?)?.tanh()?;
/// let program = f.finish(&[&y])?;
/// println!("{}", program.text().unwrap());
///
/// let found = pjrt_plugins::resolve_or_install(None, |_| ())?;
/// let plugin = Plugin::load(found.load_path())?;
/// f.check_plugin(&plugin)?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let exe = client.compile(&program, &CompileOptions::new())?;
/// let x = client.upload(&[1f32, 0., 0., 0., 1., 0.], &[2, 3])?;
/// let w = client.upload(&[0f32, 0., 0., 0., 0., 0.], &[3, 2])?;
/// let out = exe.execute(&[&x, &w], &ExecuteOptions::new())?[0].to_vec::<f32>()?;
/// // tanh is the plugin's own approximation (its code depends on the CPU's vector
/// // instructions): within a few ulp of Rust's, not bit for bit.
/// assert!(out.iter().all(|y| (y - 1f32.tanh()).abs() <= 1e-6), "{out:?}");
/// # Ok(()) }
/// ```
pub struct Function {
    /// Unique per function in this process: values remember which function made them.
    id: u64,
    name: String,
    state: RefCell<State>,
    /// The location of every op (the builder records none), shared.
    location: Arc<ir::Location>,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function").field("name", &self.name).finish_non_exhaustive()
    }
}

struct State {
    /// The next value number (the function's values are numbered once, regions included).
    next_id: u32,
    next_scope: u32,
    /// The open scopes: `frames[0]` is the function body, the others regions being built.
    frames: Vec<Frame>,
    parameters: Vec<Parameter>,
    /// The newest StableHLO version an op or type needs, and what needs it.
    needed: StableHloVersion,
    needed_by: String,
    module_attributes: Vec<(String, Attr)>,
    /// Ops of the module before `@main` (Shardy's `sdy.mesh`), with the symbol each defines.
    module_ops: Vec<(String, ir::Op)>,
    /// Per output index: attributes of the function's results (sharding).
    result_attributes: Vec<(usize, String, Attr)>,
}

struct Frame {
    scope: u32,
    /// Whether values of enclosing scopes are invisible here (the bodies of reduce, sort, ...:
    /// XLA turns them into separate computations that cannot capture).
    isolated: bool,
    ops: Vec<ir::Op>,
}

struct Parameter {
    ty: TensorType,
    id: u32,
    attributes: Vec<(String, Attr)>,
}

/// The attributes of a parameter: sharding and donation.
///
/// ```
/// use pjrt_builder::{Function, ParameterOptions};
/// use pjrt_client::ElementType;
///
/// let f = Function::new("donating");
/// let x = f.parameter_with(ElementType::F32, &[4], ParameterOptions::new().aliasing_output(0))?;
/// let program = f.finish(&[&x.add(&x)?])?;
/// assert!(program.text().unwrap().contains("tf.aliasing_output = 0 : i32"));
/// # Ok::<(), pjrt_builder::BuildError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ParameterOptions {
    attributes: Vec<(String, AttributeValue)>,
}

impl ParameterOptions {
    /// No attributes.
    pub fn new() -> ParameterOptions {
        ParameterOptions::default()
    }

    /// Donates the parameter's buffer to output `output` (`tf.aliasing_output = N : i32`): the
    /// output is written in place of the argument, which is consumed.
    pub fn aliasing_output(self, output: i32) -> ParameterOptions {
        self.built("tf.aliasing_output", emit::i32_attr(output))
    }

    /// Marks the parameter as donated without naming an output (`jax.buffer_donor = true`):
    /// the compiler may reuse its buffer for any output of the same shape.
    pub fn buffer_donor(self) -> ParameterOptions {
        self.built("jax.buffer_donor", emit::bool_attr(true))
    }

    /// Any other argument attribute, its value as MLIR text (`mhlo.sharding`,
    /// `"{devices=[2,1]<=[2]}"` with the quotes). The name must be a bare MLIR identifier and
    /// the value exactly one attribute, read by [`pjrt_stablehlo::parse_attribute`] (no `//`
    /// either): [`Function::parameter_with`] refuses anything else, so the text cannot add
    /// parameters or attributes to `@main`.
    ///
    /// ```
    /// use pjrt_builder::{Function, ParameterOptions};
    /// use pjrt_client::ElementType;
    ///
    /// let f = Function::new("noted");
    /// let x = f.parameter_with(ElementType::F32, &[2], ParameterOptions::new().attribute("my.note", "1 : i32"))?;
    /// assert!(f.to_mlir(&[&x])?.contains("my.note = 1 : i32"));
    /// let injected = ParameterOptions::new().attribute("my.note", "1 : i32}, %evil: tensor<2xf32> {my.other = 2");
    /// assert!(f.parameter_with(ElementType::F32, &[2], injected).is_err());
    /// # Ok::<(), pjrt_builder::BuildError>(())
    /// ```
    pub fn attribute(mut self, name: &str, mlir_value: &str) -> ParameterOptions {
        self.attributes.push((name.to_string(), AttributeValue::Text(mlir_value.to_string())));
        self
    }

    /// An attribute built here (not user text).
    pub(crate) fn built(mut self, name: &str, value: Attr) -> ParameterOptions {
        self.attributes.push((name.to_string(), AttributeValue::Built(value)));
        self
    }
}

/// A value of a [`Function`]: an SSA name and the [`Type`] it carries. Cheap to clone; ops on
/// it add to the function it borrows.
#[derive(Clone)]
pub struct Value<'f> {
    pub(crate) func: &'f Function,
    pub(crate) name: Ssa,
    pub(crate) ty: Type,
    pub(crate) scope: u32,
}

impl fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.ty)
    }
}

/// A value's number in the IR, shown as `%v3` in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ssa {
    id: u32,
}

impl fmt::Display for Ssa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%v{}", self.id)
    }
}

impl<'f> Value<'f> {
    /// The value's type.
    pub fn ty(&self) -> &Type {
        &self.ty
    }

    /// The tensor type, or `None` for tuples and tokens.
    pub fn tensor_type(&self) -> Option<&TensorType> {
        self.ty.as_tensor()
    }

    /// The dimensions (empty for tuples and tokens as for scalars; see [`Value::ty`]).
    pub fn dims(&self) -> &[i64] {
        self.ty.as_tensor().map(|t| t.dims.as_slice()).unwrap_or(&[])
    }

    /// The element type (`None` for tuples and tokens).
    pub fn element_type(&self) -> Option<ElementType> {
        self.ty.as_tensor().map(|t| t.element)
    }

    /// The function this value belongs to.
    pub fn function(&self) -> &'f Function {
        self.func
    }
}

/// One op, declared in one place and emitted by [`Function::emit`]: name, operands, attributes,
/// regions (already built by [`Function::region`]) and result types (inferred by the caller).
pub(crate) struct Op<'a, 'f> {
    pub name: &'static str,
    pub operands: Vec<&'a Value<'f>>,
    pub attributes: Vec<(String, Attr)>,
    pub regions: Vec<ir::Region>,
    pub results: Vec<Type>,
    /// The StableHLO version that introduced the op (or its form here).
    pub since: StableHloVersion,
}

impl<'a, 'f> Op<'a, 'f> {
    pub fn new(name: &'static str, operands: Vec<&'a Value<'f>>, results: Vec<Type>) -> Op<'a, 'f> {
        Op {
            name,
            operands,
            attributes: Vec::new(),
            regions: Vec::new(),
            results,
            since: StableHloVersion::new(1, 0, 0),
        }
    }

    pub fn attr(mut self, name: &str, value: Attr) -> Op<'a, 'f> {
        self.attributes.push((name.to_string(), value));
        self
    }
}

/// Pops a region's frame when the region is done or its closure fails or panics.
struct FrameGuard<'f> {
    func: &'f Function,
    scope: u32,
}

impl Drop for FrameGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.func.state.try_borrow_mut() {
            if state.frames.last().is_some_and(|f| f.scope == self.scope) {
                state.frames.pop();
            }
        }
    }
}

static NEXT_FUNCTION_ID: AtomicU64 = AtomicU64::new(1);

impl Function {
    /// A new, empty function. `name` names the module (`module @name`); the function itself is
    /// always `@main`, the entry point PJRT compiles.
    pub fn new(name: &str) -> Function {
        Function {
            id: NEXT_FUNCTION_ID.fetch_add(1, Ordering::Relaxed),
            name: name.to_string(),
            location: emit::unknown_location(),
            state: RefCell::new(State {
                next_id: 0,
                next_scope: 1,
                frames: vec![Frame { scope: 0, isolated: false, ops: Vec::new() }],
                parameters: Vec::new(),
                needed: StableHloVersion::new(1, 0, 0),
                needed_by: String::new(),
                module_attributes: Vec::new(),
                module_ops: Vec::new(),
                result_attributes: Vec::new(),
            }),
        }
    }

    /// The module's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new parameter of the function (the next argument of `@main`).
    pub fn parameter(&self, element: ElementType, dims: &[i64]) -> Result<Value<'_>, BuildError> {
        self.parameter_with(element, dims, ParameterOptions::new())
    }

    /// A new parameter with attributes (donation, sharding).
    pub fn parameter_with(
        &self,
        element: ElementType,
        dims: &[i64],
        options: ParameterOptions,
    ) -> Result<Value<'_>, BuildError> {
        let ty = TensorType::new(element, dims)?;
        let mut attributes = Vec::with_capacity(options.attributes.len());
        for (name, value) in options.attributes {
            let value = match value {
                AttributeValue::Built(attr) => attr,
                AttributeValue::Text(text) => emit::user_attribute("func.func", &name, &text)?,
            };
            attributes.push((name, value));
        }
        let mut state = self.state.borrow_mut();
        state.need(element_min_version(element), || format!("element type {}", element.name()));
        let id = state.next_id;
        state.next_id += 1;
        state.parameters.push(Parameter { ty: ty.clone(), id, attributes });
        Ok(Value { func: self, name: Ssa { id }, ty: Type::Tensor(ty), scope: 0 })
    }

    /// Each parameter's element type and dimensions, in order (what `Function::finish`
    /// declares with `pjrt_client::Program::with_parameters`).
    ///
    /// ```
    /// use pjrt_types::ElementType;
    /// let f = pjrt_builder::Function::new("f");
    /// f.parameter(ElementType::BF16, &[2, 3])?;
    /// assert_eq!(f.parameter_types(), [(ElementType::BF16, vec![2, 3])]);
    /// # Ok::<(), pjrt_builder::BuildError>(())
    /// ```
    pub fn parameter_types(&self) -> Vec<(ElementType, Vec<i64>)> {
        self.state.borrow().parameters.iter().map(|p| (p.ty.element, p.ty.dims.clone())).collect()
    }

    /// The newest StableHLO version an op or element type used so far needs.
    pub fn required_stablehlo_version(&self) -> StableHloVersion {
        self.state.borrow().needed
    }

    /// Checks that a plugin that reads StableHLO up to `plugin_reads` (its
    /// `stablehlo_current_version`) reads what this function uses: at least
    /// [`Function::required_stablehlo_version`]. With a client at hand, `check_plugin` asks the
    /// plugin itself (feature `client`).
    ///
    /// ```
    /// use pjrt_builder::{Function, StableHloVersion};
    /// use pjrt_types::ElementType;
    ///
    /// let f = Function::new("tan");
    /// f.parameter(ElementType::F32, &[2])?.tan()?;
    /// assert!(f.check_version(StableHloVersion::new(1, 4, 0)).is_ok());
    /// let e = f.check_version(StableHloVersion::new(1, 3, 0)).unwrap_err();
    /// assert!(e.to_string().contains("stablehlo.tan"), "{e}");
    /// # Ok::<(), pjrt_builder::BuildError>(())
    /// ```
    pub fn check_version(&self, plugin_reads: StableHloVersion) -> Result<(), BuildError> {
        let state = self.state.borrow();
        if plugin_reads < state.needed {
            return Err(BuildError::VersionTooNew {
                needed: state.needed,
                needed_by: state.needed_by.clone(),
                plugin: plugin_reads,
            });
        }
        Ok(())
    }

    /// Sets a module attribute (`mhlo.num_replicas`, ...); a second call for the same name
    /// replaces the first.
    pub(crate) fn set_module_attribute(&self, name: &str, value: Attr) {
        let mut state = self.state.borrow_mut();
        state.module_attributes.retain(|(n, _)| n != name);
        state.module_attributes.push((name.to_string(), value));
    }

    /// Adds an op `name` defining `symbol` with `attributes` to the module, before `@main`
    /// (Shardy's `sdy.mesh`); `false` (and nothing added) when the symbol is already defined.
    pub(crate) fn add_module_op(&self, name: &str, symbol: &str, attributes: Vec<(String, Attr)>) -> bool {
        let mut state = self.state.borrow_mut();
        if state.module_ops.iter().any(|(s, _)| s == symbol) {
            return false;
        }
        let op = ir::Op {
            name: name.to_string(),
            operands: Vec::new(),
            results: Vec::new(),
            attributes,
            regions: Vec::new(),
            successors: Vec::new(),
            location: self.location.clone(),
        };
        state.module_ops.push((symbol.to_string(), op));
        true
    }

    /// Sets an attribute of output `index`.
    pub(crate) fn set_result_attribute(&self, index: usize, name: &str, value: Attr) {
        let mut state = self.state.borrow_mut();
        state.result_attributes.retain(|(i, n, _)| !(*i == index && n == name));
        state.result_attributes.push((index, name.to_string(), value));
    }

    /// Checks that `value` belongs to this function and is visible in the current scope.
    pub(crate) fn check_visible(&self, op: &'static str, value: &Value<'_>) -> Result<(), BuildError> {
        if value.func.id != self.id {
            return Err(BuildError::ValueNotVisible {
                op,
                message: format!(
                    "{} ({}) belongs to another Function (`{}`); values can be used only in the function that made them",
                    value.name, value.ty, value.func.name
                ),
            });
        }
        let state = self.state.borrow();
        let Some(position) = state.frames.iter().position(|f| f.scope == value.scope) else {
            return Err(BuildError::ValueNotVisible {
                op,
                message: format!(
                    "{} ({}) was made inside a region that is finished; a region's values exist only inside it \
                     (return it from the region instead)",
                    value.name, value.ty
                ),
            });
        };
        if state.frames[position + 1..].iter().any(|f| f.isolated) {
            return Err(BuildError::ValueNotVisible {
                op,
                message: format!(
                    "{} ({}) is from outside this region, whose body sees only its block arguments and the values \
                     built inside it (build constants inside the closure, or pass the value as an operand)",
                    value.name, value.ty
                ),
            });
        }
        Ok(())
    }

    /// Emits one op into the current scope and returns its results.
    pub(crate) fn emit<'a, 'f>(&'f self, op: Op<'a, 'f>) -> Result<Vec<Value<'f>>, BuildError>
    where
        'f: 'a,
    {
        for operand in &op.operands {
            self.check_visible(op.name, operand)?;
        }
        let mut state = self.state.borrow_mut();
        state.need(op.since, || op.name.to_string());
        for result in &op.results {
            if let Type::Tensor(t) = result {
                state.need(element_min_version(t.element), || format!("element type {}", t.element.name()));
            }
        }
        let first = state.next_id;
        state.next_id += op.results.len() as u32;
        let scope = state.frames.last().map(|f| f.scope).unwrap_or(0);
        let ir_op = ir::Op {
            name: op.name.to_string(),
            operands: op.operands.iter().map(|v| v.name.id).collect(),
            results: op
                .results
                .iter()
                .enumerate()
                .map(|(k, ty)| ir::Value { id: first + k as u32, ty: ty.to_ir() })
                .collect(),
            attributes: op.attributes,
            regions: op.regions,
            successors: Vec::new(),
            location: self.location.clone(),
        };
        state.frames.last_mut().expect("the function body is always open").ops.push(ir_op);
        Ok(op
            .results
            .into_iter()
            .enumerate()
            .map(|(k, ty)| Value { func: self, name: Ssa { id: first + k as u32 }, ty, scope })
            .collect())
    }

    /// Emits a single-result op.
    pub(crate) fn emit1<'a, 'f>(&'f self, op: Op<'a, 'f>) -> Result<Value<'f>, BuildError>
    where
        'f: 'a,
    {
        let mut results = self.emit(op)?;
        Ok(results.pop().expect("emit1 is used for single-result ops"))
    }

    /// Builds a region: `body` gets this function (adding ops to the region while it runs) and
    /// one block argument per type in `arguments`, and returns the values the region yields
    /// (`stablehlo.return`). Returns the region and the types it yields; the caller checks
    /// them. An `isolated` region sees only its arguments and what it builds.
    pub(crate) fn region<'f>(
        &'f self,
        op: &'static str,
        isolated: bool,
        arguments: &[Type],
        body: impl FnOnce(&'f Function, &[Value<'f>]) -> Result<Vec<Value<'f>>, BuildError>,
    ) -> Result<(ir::Region, Vec<Type>), BuildError> {
        let (scope, first_arg) = {
            let mut state = self.state.borrow_mut();
            let scope = state.next_scope;
            state.next_scope += 1;
            let first = state.next_id;
            state.next_id += arguments.len() as u32;
            state.frames.push(Frame { scope, isolated, ops: Vec::new() });
            (scope, first)
        };
        let guard = FrameGuard { func: self, scope };
        let args: Vec<Value<'f>> = arguments
            .iter()
            .enumerate()
            .map(|(i, ty)| Value { func: self, name: Ssa { id: first_arg + i as u32 }, ty: ty.clone(), scope })
            .collect();
        let returned = body(self, &args)?;
        {
            let state = self.state.borrow();
            if state.frames.last().map(|f| f.scope) != Some(scope) {
                return Err(BuildError::Finish {
                    message: format!("a region of {op} ended with a nested region still open"),
                });
            }
        }
        let returned_refs: Vec<&Value<'f>> = returned.iter().collect();
        self.emit(Op::new("stablehlo.return", returned_refs, Vec::new()))?;
        let ops = {
            let mut state = self.state.borrow_mut();
            let frame = state.frames.pop().expect("the region's frame is open");
            frame.ops
        };
        std::mem::forget(guard);
        let block_args = args.iter().map(|a| ir::Value { id: a.name.id, ty: a.ty.to_ir() }).collect();
        let region = ir::Region { blocks: vec![ir::Block { args: block_args, ops, arg_locations: Vec::new() }] };
        Ok((region, returned.into_iter().map(|v| v.ty).collect()))
    }

    /// The module, returning `outputs` from `@main`, in [`pjrt_stablehlo::ir`]: `builtin.module
    /// @NAME` holding `func.func public @main`. Its producer names the StableHLO version the
    /// program needs ([`Function::required_stablehlo_version`]), the version
    /// `pjrt_client::Program::from_module` writes a portable artifact for.
    ///
    /// ```
    /// use pjrt_builder::Function;
    /// use pjrt_types::ElementType;
    ///
    /// let f = Function::new("twice");
    /// let x = f.parameter(ElementType::F32, &[2])?;
    /// let module = f.to_module(&[&x.add(&x)?])?;
    /// assert_eq!(module.producer, "StableHLO_v1.0.0");
    /// assert_eq!(module.walk().filter(|op| op.name == "stablehlo.add").count(), 1);
    /// # Ok::<(), pjrt_builder::BuildError>(())
    /// ```
    pub fn to_module(&self, outputs: &[&Value<'_>]) -> Result<ir::Module, BuildError> {
        self.with_module(outputs, ir::Module::clone)
    }

    /// The module's MLIR text, returning `outputs` from `@main`: [`Function::to_module`]
    /// printed by [`pjrt_stablehlo::print`] (MLIR's generic op form, which StableHLO's parsers
    /// have read unchanged across versions).
    pub fn to_mlir(&self, outputs: &[&Value<'_>]) -> Result<String, BuildError> {
        self.with_module(outputs, pjrt_stablehlo::print)
    }

    /// Hands `use_module` the module returning `outputs`, built around the function's body
    /// without copying it (the body goes back into the function afterwards, which stays
    /// usable).
    fn with_module<R>(
        &self,
        outputs: &[&Value<'_>],
        use_module: impl FnOnce(&ir::Module) -> R,
    ) -> Result<R, BuildError> {
        for output in outputs {
            self.check_visible("func.return", output)?;
        }
        let mut state = self.state.borrow_mut();
        if state.frames.len() != 1 {
            return Err(BuildError::Finish {
                message: "a region is still being built; finish the function outside every region closure".to_string(),
            });
        }
        if let Some((index, name, _)) = state.result_attributes.iter().find(|(i, _, _)| *i >= outputs.len()) {
            return Err(BuildError::Finish {
                message: format!(
                    "output {index} has a {name} attribute but the function returns {} outputs; annotate existing \
                     outputs only",
                    outputs.len()
                ),
            });
        }
        let op = |name: &str, operands: Vec<u32>, attributes: Vec<(String, Attr)>, regions: Vec<ir::Region>| ir::Op {
            name: name.to_string(),
            operands,
            results: Vec::new(),
            attributes,
            regions,
            successors: Vec::new(),
            location: self.location.clone(),
        };
        let dict_list = |lists: Vec<Vec<(String, Attr)>>| Attr::Array(lists.into_iter().map(Attr::Dict).collect());
        // `@main`: its signature, attributes of its arguments and results, and its body.
        let inputs: Vec<ir::Type> = state.parameters.iter().map(|p| p.ty.to_ir()).collect();
        let output_types: Vec<ir::Type> = outputs.iter().map(|v| v.ty.to_ir()).collect();
        // In the order the custom form of `func.func` is read into (`pjrt_stablehlo::parse_text`).
        let mut func_attributes = Vec::with_capacity(5);
        if state.parameters.iter().any(|p| !p.attributes.is_empty()) {
            let lists = state.parameters.iter().map(|p| p.attributes.clone()).collect();
            func_attributes.push(("arg_attrs".to_string(), dict_list(lists)));
        }
        func_attributes.push((
            "function_type".to_string(),
            Attr::Type(ir::Type::Function { inputs: inputs.clone(), outputs: output_types }),
        ));
        if !state.result_attributes.is_empty() {
            let lists = (0..outputs.len())
                .map(|i| {
                    let of = state.result_attributes.iter().filter(|(k, _, _)| *k == i);
                    of.map(|(_, n, v)| (n.clone(), v.clone())).collect()
                })
                .collect();
            func_attributes.push(("res_attrs".to_string(), dict_list(lists)));
        }
        func_attributes.push(("sym_name".to_string(), emit::string_attr("main")));
        func_attributes.push(("sym_visibility".to_string(), emit::string_attr("public")));
        let mut body = std::mem::take(&mut state.frames[0].ops);
        body.push(op("func.return", outputs.iter().map(|v| v.name.id).collect(), Vec::new(), Vec::new()));
        let args = state.parameters.iter().zip(inputs).map(|(p, ty)| ir::Value { id: p.id, ty }).collect();
        let main = op(
            "func.func",
            Vec::new(),
            func_attributes,
            vec![ir::Region { blocks: vec![ir::Block { args, ops: body, arg_locations: Vec::new() }] }],
        );
        // The module: its name and attributes, the module ops (meshes), then `@main`.
        let mut module_attributes = vec![("sym_name".to_string(), emit::string_attr(&self.name))];
        module_attributes.extend(state.module_attributes.iter().cloned());
        let mut ops: Vec<ir::Op> = state.module_ops.iter().map(|(_, op)| op.clone()).collect();
        ops.push(main);
        let module = op(
            "builtin.module",
            Vec::new(),
            module_attributes,
            vec![ir::Region { blocks: vec![ir::Block { args: Vec::new(), ops, arg_locations: Vec::new() }] }],
        );
        let mut module = ir::Module { bytecode_version: 0, producer: state.needed.producer(), ops: vec![module] };
        let result = use_module(&module);
        // The body back into the function: the last op of the module's block is `@main`, whose
        // block ends with the `func.return` added above.
        let main = module.ops[0].regions[0].blocks[0].ops.pop().expect("the module holds @main");
        let mut blocks = main.regions.into_iter().next().expect("@main has a body").blocks;
        let mut ops = blocks.pop().expect("@main's body is one block").ops;
        ops.pop();
        state.frames[0].ops = ops;
        Ok(result)
    }
}

impl State {
    fn need(&mut self, version: StableHloVersion, what: impl FnOnce() -> String) {
        if version > self.needed {
            self.needed = version;
            self.needed_by = what();
        }
    }
}
