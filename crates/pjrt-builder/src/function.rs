//! [`Function`] (the builder of `func.func @main`), [`Value`] (an SSA value and its type),
//! region scopes, and `finish`.

use std::cell::RefCell;
use std::fmt::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use pjrt_client::{ElementType, Plugin, Program};

use crate::emit;
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
/// let plugin = Plugin::load(&found.path)?;
/// f.check_plugin(&plugin)?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let exe = client.compile(&program, &CompileOptions::new())?;
/// let x = client.upload(&[1f32, 0., 0., 0., 1., 0.], &[2, 3])?;
/// let w = client.upload(&[0f32, 0., 0., 0., 0., 0.], &[3, 2])?;
/// let out = exe.execute(&[&x, &w], &ExecuteOptions::new())?[0].to_vec::<f32>()?;
/// assert_eq!(out, [1f32.tanh(); 4]);
/// # Ok(()) }
/// ```
pub struct Function {
    /// Unique per function in this process: values remember which function made them.
    id: u64,
    name: String,
    state: RefCell<State>,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function").field("name", &self.name).finish_non_exhaustive()
    }
}

struct State {
    next_ssa: u32,
    next_scope: u32,
    /// The open scopes: `frames[0]` is the function body, the others regions being built.
    frames: Vec<Frame>,
    parameters: Vec<Parameter>,
    /// The newest StableHLO version an op or type needs, and what needs it.
    needed: StableHloVersion,
    needed_by: String,
    module_attributes: Vec<(String, String)>,
    /// Ops of the module before `@main` (Shardy's `sdy.mesh`): (symbol, MLIR text).
    module_ops: Vec<(String, String)>,
    /// Per output index: attributes of the function's results (sharding).
    result_attributes: Vec<(usize, String, String)>,
}

struct Frame {
    scope: u32,
    /// Whether values of enclosing scopes are invisible here (the bodies of reduce, sort, ...:
    /// XLA turns them into separate computations that cannot capture).
    isolated: bool,
    text: String,
}

struct Parameter {
    ty: TensorType,
    ssa: u32,
    attributes: Vec<(String, String)>,
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
    attributes: Vec<(String, String)>,
}

impl ParameterOptions {
    /// No attributes.
    pub fn new() -> ParameterOptions {
        ParameterOptions::default()
    }

    /// Donates the parameter's buffer to output `output` (`tf.aliasing_output = N : i32`): the
    /// output is written in place of the argument, which is consumed.
    pub fn aliasing_output(mut self, output: i32) -> ParameterOptions {
        self.attributes.push(("tf.aliasing_output".to_string(), emit::i32_attr(output)));
        self
    }

    /// Marks the parameter as donated without naming an output (`jax.buffer_donor = true`):
    /// the compiler may reuse its buffer for any output of the same shape.
    pub fn buffer_donor(mut self) -> ParameterOptions {
        self.attributes.push(("jax.buffer_donor".to_string(), "true".to_string()));
        self
    }

    /// Any other argument attribute, its value as MLIR text (`mhlo.sharding`,
    /// `"{devices=[2,1]<=[2]}"` with the quotes): kept verbatim. The name must be a bare MLIR
    /// identifier and the value one attribute (its brackets and strings closed, no `,` outside
    /// them, no `//`): [`Function::parameter_with`] refuses anything else, so the text cannot
    /// add parameters or attributes to `@main`.
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
        self.attributes.push((name.to_string(), mlir_value.to_string()));
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

/// An SSA name: `%v3`, or result `k` of a multi-result op, `%v3#k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ssa {
    id: u32,
    result: Option<u32>,
}

impl fmt::Display for Ssa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.result {
            None => write!(f, "%v{}", self.id),
            Some(k) => write!(f, "%v{}#{k}", self.id),
        }
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
    pub attributes: Vec<(&'static str, String)>,
    pub regions: Vec<String>,
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

    pub fn attr(mut self, name: &'static str, value: String) -> Op<'a, 'f> {
        self.attributes.push((name, value));
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
            state: RefCell::new(State {
                next_ssa: 0,
                next_scope: 1,
                frames: vec![Frame { scope: 0, isolated: false, text: String::new() }],
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
        for (name, value) in &options.attributes {
            emit::check_user_attribute("func.func", name, value)?;
        }
        let mut state = self.state.borrow_mut();
        state.need(element_min_version(element), || format!("element type {}", element.name()));
        let id = state.next_ssa;
        state.next_ssa += 1;
        state.parameters.push(Parameter { ty: ty.clone(), ssa: id, attributes: options.attributes });
        Ok(Value { func: self, name: Ssa { id, result: None }, ty: Type::Tensor(ty), scope: 0 })
    }

    /// The newest StableHLO version an op or element type used so far needs.
    pub fn required_stablehlo_version(&self) -> StableHloVersion {
        self.state.borrow().needed
    }

    /// Checks that `plugin` reads the StableHLO this function uses: its
    /// `stablehlo_current_version` must be at least [`Function::required_stablehlo_version`].
    /// A plugin that does not report its version passes (there is nothing to check against).
    pub fn check_plugin(&self, plugin: &Plugin) -> Result<(), BuildError> {
        let state = self.state.borrow();
        match plugin.stablehlo_current_version() {
            Some(plugin) if plugin < state.needed => {
                Err(BuildError::VersionTooNew { needed: state.needed, needed_by: state.needed_by.clone(), plugin })
            }
            _ => Ok(()),
        }
    }

    /// Sets a module attribute (`mhlo.num_replicas`, ...), its value as MLIR text; a second
    /// call for the same name replaces the first.
    pub(crate) fn set_module_attribute(&self, name: &str, mlir_value: String) {
        let mut state = self.state.borrow_mut();
        state.module_attributes.retain(|(n, _)| n != name);
        state.module_attributes.push((name.to_string(), mlir_value));
    }

    /// Adds an op defining `symbol` to the module, before `@main` (Shardy's `sdy.mesh`), as
    /// MLIR text; `false` (and nothing added) when the symbol is already defined.
    pub(crate) fn add_module_op(&self, symbol: &str, text: String) -> bool {
        let mut state = self.state.borrow_mut();
        if state.module_ops.iter().any(|(s, _)| s == symbol) {
            return false;
        }
        state.module_ops.push((symbol.to_string(), text));
        true
    }

    /// Sets an attribute of output `index` (its value as MLIR text).
    pub(crate) fn set_result_attribute(&self, index: usize, name: &str, mlir_value: String) {
        let mut state = self.state.borrow_mut();
        state.result_attributes.retain(|(i, n, _)| !(*i == index && n == name));
        state.result_attributes.push((index, name.to_string(), mlir_value));
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
        let id = state.next_ssa;
        state.next_ssa += 1;
        // The body's ops sit inside `module` and `func.func`; a region's, one level deeper each.
        let depth = state.frames.len() + 1;
        let scope = state.frames.last().map(|f| f.scope).unwrap_or(0);
        let frame = state.frames.last_mut().expect("the function body is always open");
        let text = &mut frame.text;
        indent(text, depth);
        match op.results.len() {
            0 => {}
            1 => {
                let _ = write!(text, "%v{id} = ");
            }
            n => {
                let _ = write!(text, "%v{id}:{n} = ");
            }
        }
        let _ = write!(text, "\"{}\"(", op.name);
        emit::join_into(text, op.operands.iter().map(|v| v.name));
        text.push(')');
        if !op.regions.is_empty() {
            text.push_str(" (");
            for (i, region) in op.regions.iter().enumerate() {
                if i > 0 {
                    text.push_str(", ");
                }
                text.push_str(region);
            }
            text.push(')');
        }
        text.push_str(&emit::attr_dict(&op.attributes));
        text.push_str(" : ");
        let operand_types: Vec<&Type> = op.operands.iter().map(|v| &v.ty).collect();
        text.push_str(&emit::function_type(&operand_types, &op.results));
        text.push('\n');
        let single = op.results.len() == 1;
        Ok(op
            .results
            .into_iter()
            .enumerate()
            .map(|(k, ty)| Value {
                func: self,
                name: Ssa { id, result: if single { None } else { Some(k as u32) } },
                ty,
                scope,
            })
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
    /// (`stablehlo.return`). Returns the region's text and the types it yields; the caller checks
    /// them. An `isolated` region sees only its arguments and what it builds.
    pub(crate) fn region<'f>(
        &'f self,
        op: &'static str,
        isolated: bool,
        arguments: &[Type],
        body: impl FnOnce(&'f Function, &[Value<'f>]) -> Result<Vec<Value<'f>>, BuildError>,
    ) -> Result<(String, Vec<Type>), BuildError> {
        let (scope, first_arg, depth) = {
            let mut state = self.state.borrow_mut();
            let scope = state.next_scope;
            state.next_scope += 1;
            let first = state.next_ssa;
            state.next_ssa += arguments.len() as u32;
            state.frames.push(Frame { scope, isolated, text: String::new() });
            (scope, first, state.frames.len())
        };
        let guard = FrameGuard { func: self, scope };
        let args: Vec<Value<'f>> = arguments
            .iter()
            .enumerate()
            .map(|(i, ty)| Value {
                func: self,
                name: Ssa { id: first_arg + i as u32, result: None },
                ty: ty.clone(),
                scope,
            })
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
        let frame_text = {
            let mut state = self.state.borrow_mut();
            let frame = state.frames.pop().expect("the region's frame is open");
            frame.text
        };
        std::mem::forget(guard);
        let mut text = String::from("{\n");
        indent(&mut text, depth);
        text.push_str("^bb0(");
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            let _ = write!(text, "{}: {}", arg.name, arg.ty);
        }
        text.push_str("):\n");
        text.push_str(&frame_text);
        indent(&mut text, depth);
        text.push('}');
        Ok((text, returned.into_iter().map(|v| v.ty).collect()))
    }

    /// The module's MLIR text, returning `outputs` from `@main`.
    pub fn to_mlir(&self, outputs: &[&Value<'_>]) -> Result<String, BuildError> {
        for output in outputs {
            self.check_visible("func.return", output)?;
        }
        let state = self.state.borrow();
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
        let mut text = String::new();
        text.push_str("module @");
        text.push_str(&symbol_name(&self.name));
        if !state.module_attributes.is_empty() {
            text.push_str(" attributes {");
            for (i, (name, value)) in state.module_attributes.iter().enumerate() {
                if i > 0 {
                    text.push_str(", ");
                }
                let _ = write!(text, "{name} = {value}");
            }
            text.push('}');
        }
        text.push_str(" {\n");
        for (_, op) in &state.module_ops {
            indent(&mut text, 1);
            text.push_str(op);
            text.push('\n');
        }
        text.push_str("  func.func public @main(");
        for (i, p) in state.parameters.iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            let _ = write!(text, "%v{}: {}", p.ssa, p.ty);
            write_attributes(&mut text, p.attributes.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        }
        text.push_str(") -> (");
        for (i, output) in outputs.iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            let _ = write!(text, "{}", output.ty);
            write_attributes(
                &mut text,
                state.result_attributes.iter().filter(|(k, _, _)| *k == i).map(|(_, n, v)| (n.as_str(), v.as_str())),
            );
        }
        text.push_str(") {\n");
        text.push_str(&state.frames[0].text);
        indent(&mut text, 2);
        text.push_str("\"func.return\"(");
        emit::join_into(&mut text, outputs.iter().map(|v| v.name));
        text.push_str(") : (");
        emit::join_into(&mut text, outputs.iter().map(|v| &v.ty));
        text.push_str(") -> ()\n  }\n}\n");
        Ok(text)
    }

    /// The finished program, returning `outputs`: MLIR text ([`Function::to_mlir`]) as a
    /// [`Program`] with its parameters declared ([`Program::with_parameters`]), so executables
    /// check their arguments. The function stays usable (finish it again with other outputs).
    pub fn finish(&self, outputs: &[&Value<'_>]) -> Result<Program, BuildError> {
        let text = self.to_mlir(outputs)?;
        let parameters: Vec<(ElementType, Vec<i64>)> =
            self.state.borrow().parameters.iter().map(|p| (p.ty.element, p.ty.dims.clone())).collect();
        Ok(Program::mlir_text(text)?.with_parameters(parameters))
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

fn indent(text: &mut String, depth: usize) {
    for _ in 0..depth {
        text.push_str("  ");
    }
}

fn write_attributes<'a>(text: &mut String, attributes: impl Iterator<Item = (&'a str, &'a str)>) {
    let mut first = true;
    for (name, value) in attributes {
        text.push_str(if first { " {" } else { ", " });
        first = false;
        let _ = write!(text, "{name} = {value}");
    }
    if !first {
        text.push('}');
    }
}

/// `name` as an MLIR symbol: bare when it is an identifier, quoted otherwise.
fn symbol_name(name: &str) -> String {
    let bare = emit::is_bare_identifier(name);
    if bare {
        name.to_string()
    } else {
        emit::string_attr(name)
    }
}
