//! Which tensors of a weights file feed which arguments of a model: the one binding that
//! `pjrt run --params`, `pjrt bench run`, `pjrt serve` and [`crate::jax_export::Runner`] use.
//!
//! Arguments are bound **by name**: an argument named as JAX names it
//! (`params['block_0']['kernel']`, from a `jax.export` model's argument locations and input
//! tree, or `jax.arg_info` / `loc(...)` / SSA names of MLIR text) takes the tensor whose key is
//! one of its spellings ([`spellings`]): the name itself, the keys joined by `.` or `/` with
//! and without the root (`block_0.kernel`, `params.block_0.kernel`, `block_0/kernel`,
//! `params/block_0/kernel`) and JAX's `keystr` of the keys (`['block_0']['kernel']`). Every
//! tensor must then feed an argument, and a tensor's dtype and shape must fit its argument's.
//! A tensor missing from a group of arguments the file gives the rest of (one Python argument,
//! a dict of weights) and a tensor that matches no argument are refused by name.
//!
//! Only when **no** tensor name matches any argument name do the tensors feed the first
//! arguments by dtype and shape, and then only when dtypes and shapes leave exactly one
//! assignment (the file's order never decides: Python's `safetensors` writer sorts tensors by
//! dtype, then name). The [`Binding`] says so in [`Binding::note`]; two tensors that could
//! swap places are refused, named.
//!
//! ```
//! use pjrt_client::ElementType;
//! use pjrt_formats::binding::{bind, Argument, BoundBy, NamedTensor};
//!
//! // f(params, x) with params = {'a': f32[3], 'b': i32[]}: a file saved by Python's
//! // safetensors (sorted by dtype, then name) with the keys flattened by dots.
//! let arguments = [
//!     Argument::named("params['a']").with_type(ElementType::F32, &[Some(3)]).in_group("params"),
//!     Argument::named("params['b']").with_type(ElementType::S32, &[]).in_group("params"),
//!     Argument::named("x").with_type(ElementType::F32, &[Some(3)]),
//! ];
//! let tensors = [
//!     NamedTensor { name: "b", element_type: ElementType::S32, dims: &[] },
//!     NamedTensor { name: "a", element_type: ElementType::F32, dims: &[3] },
//! ];
//! let binding = bind(&arguments, &tensors)?;
//! assert_eq!(binding.by(), BoundBy::Name);
//! assert_eq!(binding.tensors(), [Some(1), Some(0), None]);
//! assert_eq!(binding.caller_arguments(), [2]); // x comes from the caller
//!
//! // A tensor the model does not take is refused, by name.
//! let extra = [tensors[0], tensors[1], NamedTensor { name: "c", element_type: ElementType::F32, dims: &[3] }];
//! assert!(bind(&arguments, &extra).unwrap_err().to_string().contains("'c'"));
//! # Ok::<(), pjrt_formats::binding::BindingError>(())
//! ```

use std::collections::HashMap;

use pjrt_client::{ElementType, Program};

pub use crate::error::BindingError;

/// How many names an error message lists before it says how many more there are.
const LISTED: usize = 12;

/// One argument of a model, as the binder sees it: its name (JAX's, when the model has one),
/// the group it belongs to, and its element type and dimensions where known.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Argument {
    /// Its name as JAX writes it: `params['block_0']['kernel']`, `x`, or without the root
    /// when the model does not know it (`['block_0']['kernel']`); `None` when unnamed.
    pub name: Option<String>,
    /// The top-level argument it is a leaf of (a Python argument of the exported function):
    /// a file that gives some leaves of a group must give all of them.
    pub group: Option<String>,
    /// Its element type, when known.
    pub element_type: Option<ElementType>,
    /// Its dimensions, when known (`None` for a dimension known only at run time).
    pub dims: Option<Vec<Option<i64>>>,
}

impl Argument {
    /// An argument named `name`, of unknown type, in no group.
    ///
    /// ```
    /// let a = pjrt_formats::binding::Argument::named("params['w']");
    /// assert_eq!(a.name.as_deref(), Some("params['w']"));
    /// ```
    pub fn named(name: impl Into<String>) -> Argument {
        Argument { name: Some(name.into()), ..Argument::default() }
    }

    /// An argument without a name (it binds only by dtype and shape).
    ///
    /// ```
    /// assert!(pjrt_formats::binding::Argument::unnamed().name.is_none());
    /// ```
    pub fn unnamed() -> Argument {
        Argument::default()
    }

    /// With element type `element_type` and dimensions `dims` (`None`: known only at run time).
    ///
    /// ```
    /// let a = pjrt_formats::binding::Argument::unnamed().with_type(pjrt_client::ElementType::F32, &[None, Some(4)]);
    /// assert_eq!(a.dims, Some(vec![None, Some(4)]));
    /// ```
    pub fn with_type(mut self, element_type: ElementType, dims: &[Option<i64>]) -> Argument {
        self.element_type = Some(element_type);
        self.dims = Some(dims.to_vec());
        self
    }

    /// In group `group` (see [`Argument::group`]).
    ///
    /// ```
    /// let a = pjrt_formats::binding::Argument::named("params['w']").in_group("params");
    /// assert_eq!(a.group.as_deref(), Some("params"));
    /// ```
    pub fn in_group(mut self, group: impl Into<String>) -> Argument {
        self.group = Some(group.into());
        self
    }

    /// Whether a tensor of `element_type` and `dims` can feed this argument: the same element
    /// type (or a 2-byte `u16` for `bf16`, raw bits; `s8`/`u8` for a sub-byte type, widened
    /// values) and the same dimensions, where known.
    ///
    /// ```
    /// use pjrt_client::ElementType;
    /// let a = pjrt_formats::binding::Argument::unnamed().with_type(ElementType::BF16, &[None, Some(2)]);
    /// assert!(a.fits(ElementType::U16, &[5, 2]));
    /// assert!(!a.fits(ElementType::F32, &[5, 2]) && !a.fits(ElementType::BF16, &[2]));
    /// ```
    pub fn fits(&self, element_type: ElementType, dims: &[i64]) -> bool {
        let type_fits = match self.element_type {
            None => true,
            Some(want) => {
                want == element_type
                    || (want == ElementType::BF16 && element_type == ElementType::U16)
                    || (want.is_sub_byte() && matches!(element_type, ElementType::S8 | ElementType::U8))
            }
        };
        let dims_fit = match &self.dims {
            None => true,
            Some(want) => want.len() == dims.len() && want.iter().zip(dims).all(|(w, &d)| w.is_none_or(|w| w == d)),
        };
        type_fits && dims_fit
    }

    /// `f32[3,?]`, or `?` when unknown.
    fn type_text(&self) -> String {
        match (self.element_type, &self.dims) {
            (None, None) => "?".to_owned(),
            (t, dims) => {
                let dims = match dims {
                    Some(d) => d.iter().map(|d| d.map_or("?".to_owned(), |d| d.to_string())).collect::<Vec<_>>(),
                    None => vec!["...".to_owned()],
                };
                format!("{}[{}]", t.map_or("?", ElementType::name), dims.join(","))
            }
        }
    }
}

/// A tensor of a weights file: its name (its key), element type and dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedTensor<'a> {
    /// The key it is stored under.
    pub name: &'a str,
    /// Its element type.
    pub element_type: ElementType,
    /// Its dimensions.
    pub dims: &'a [i64],
}

impl NamedTensor<'_> {
    fn type_text(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(|d| d.to_string()).collect();
        format!("{}[{}]", self.element_type.name(), dims.join(","))
    }
}

/// The tensors of a safetensors file, in file order, for [`bind`].
///
/// ```
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/safetensors/named_mlp_params.safetensors");
/// let file = pjrt_formats::safetensors::SafeTensors::open(path)?;
/// let tensors = pjrt_formats::binding::safetensors_tensors(&file);
/// assert!(tensors.iter().any(|t| t.name == "layer1.w"));
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
pub fn safetensors_tensors(file: &crate::safetensors::SafeTensors) -> Vec<NamedTensor<'_>> {
    file.tensors().map(|(name, view)| NamedTensor { name, element_type: view.dtype(), dims: view.dims() }).collect()
}

/// How a [`Binding`] was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BoundBy {
    /// By the tensors' names.
    Name,
    /// No name matched: by dtype and shape, the one assignment they allow.
    DtypeAndShape,
    /// There were no tensors.
    Nothing,
}

/// Which tensor feeds each argument; the others are the caller's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    tensors: Vec<Option<usize>>,
    by: BoundBy,
    note: Option<String>,
}

impl Binding {
    /// For each argument, the index of the tensor (in the slice given to [`bind`]) that feeds
    /// it, or `None` where the caller gives it.
    pub fn tensors(&self) -> &[Option<usize>] {
        &self.tensors
    }

    /// The tensor that feeds argument `argument`, if one does.
    ///
    /// ```
    /// let binding = pjrt_formats::binding::bind(&[pjrt_formats::binding::Argument::named("x")], &[])?;
    /// assert_eq!(binding.tensor_of(0), None);
    /// # Ok::<(), pjrt_formats::binding::BindingError>(())
    /// ```
    pub fn tensor_of(&self, argument: usize) -> Option<usize> {
        self.tensors.get(argument).copied().flatten()
    }

    /// The arguments the caller gives (those no tensor feeds), in order.
    pub fn caller_arguments(&self) -> Vec<usize> {
        self.tensors.iter().enumerate().filter(|(_, t)| t.is_none()).map(|(i, _)| i).collect()
    }

    /// How it was decided.
    pub fn by(&self) -> BoundBy {
        self.by
    }

    /// What a user should be told about it: set when no name matched and dtypes and shapes
    /// decided (say it, so that a file whose keys were meant to match can be renamed).
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }
}

/// One step of a JAX path: `['key']`, `[0]` or `.attr`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    Dict(String),
    Index(String),
    Attr(String),
}

impl Key {
    fn text(&self) -> &str {
        match self {
            Key::Dict(k) | Key::Index(k) | Key::Attr(k) => k,
        }
    }

    fn keystr(&self) -> String {
        match self {
            Key::Dict(k) => format!("['{k}']"),
            Key::Index(k) => format!("[{k}]"),
            Key::Attr(k) => format!(".{k}"),
        }
    }
}

/// A JAX path read from a name: its root (`params`; `None` when the name starts with a key)
/// and keys. `None` when the name is not a path (an unclosed bracket, an empty key).
fn parse_path(name: &str) -> Option<(Option<&str>, Vec<Key>)> {
    let root_end = name.find(['[', '.']).unwrap_or(name.len());
    let root = (root_end > 0).then(|| &name[..root_end]);
    let mut keys = Vec::new();
    let mut rest = &name[root_end..];
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['[', '.']).unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            keys.push(Key::Attr(r[..end].to_owned()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let quote = r.chars().next().filter(|c| *c == '\'' || *c == '"');
            match quote {
                Some(q) => {
                    let body = &r[1..];
                    let close = format!("{q}]");
                    let end = body.find(&close)?;
                    keys.push(Key::Dict(body[..end].to_owned()));
                    rest = &body[end + close.len()..];
                }
                None => {
                    let end = r.find(']')?;
                    if end == 0 {
                        return None;
                    }
                    keys.push(Key::Index(r[..end].to_owned()));
                    rest = &r[end + 1..];
                }
            }
        } else {
            return None;
        }
    }
    Some((root, keys))
}

/// The tensor names an argument named `name` may be stored under, most specific first: the
/// name itself, and for a JAX path (`params['block_0']['kernel']`) the keys joined by `.` or
/// `/` with the root (`params.block_0.kernel`, `params/block_0/kernel`) and without it
/// (`block_0.kernel`, `block_0/kernel`), and JAX's `keystr` of the keys (`['block_0']['kernel']`).
///
/// ```
/// let s = pjrt_formats::binding::spellings("params['block_0']['kernel']");
/// assert_eq!(s, [
///     "params['block_0']['kernel']", "params.block_0.kernel", "params/block_0/kernel",
///     "block_0.kernel", "block_0/kernel", "['block_0']['kernel']",
/// ]);
/// assert_eq!(pjrt_formats::binding::spellings("['w']"), ["['w']", "w"]);
/// assert_eq!(pjrt_formats::binding::spellings("x"), ["x"]);
/// ```
pub fn spellings(name: &str) -> Vec<String> {
    let mut out = vec![name.to_owned()];
    if let Some((root, keys)) = parse_path(name).filter(|(_, keys)| !keys.is_empty()) {
        let texts: Vec<&str> = keys.iter().map(Key::text).collect();
        if let Some(root) = root {
            for sep in [".", "/"] {
                out.push(format!("{root}{sep}{}", texts.join(sep)));
            }
        }
        for sep in [".", "/"] {
            out.push(texts.join(sep));
        }
        out.push(keys.iter().map(Key::keystr).collect());
        if let Some(root) = root {
            out.push(format!("{root}{}", keys.iter().map(Key::keystr).collect::<String>()));
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

/// Lists names in quotes, the first few when there are many.
fn listed<S: AsRef<str>>(names: &[S]) -> String {
    let mut text: Vec<String> = names.iter().take(LISTED).map(|n| format!("'{}'", n.as_ref())).collect();
    if names.len() > LISTED {
        text.push(format!("and {} more", names.len() - LISTED));
    }
    text.join(", ")
}

/// `argument 3 (params['a'], f32[3])`.
fn describe(arguments: &[Argument], i: usize) -> String {
    let a = &arguments[i];
    match &a.name {
        Some(name) => format!("argument {i} ({name}, {})", a.type_text()),
        None => format!("argument {i} (unnamed, {})", a.type_text()),
    }
}

/// Binds `tensors` (a weights file's) to `arguments` (a model's, in order): by name where any
/// tensor name is a spelling ([`spellings`]) of an argument's name, else by dtype and shape to
/// the first `tensors.len()` arguments when that leaves exactly one assignment. See the
/// [module documentation](self).
pub fn bind(arguments: &[Argument], tensors: &[NamedTensor<'_>]) -> Result<Binding, BindingError> {
    if tensors.is_empty() {
        return Ok(Binding { tensors: vec![None; arguments.len()], by: BoundBy::Nothing, note: None });
    }
    let mut by_name: HashMap<&str, usize> = HashMap::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        if by_name.insert(t.name, i).is_some() {
            return Err(BindingError::DuplicateTensor { tensor: t.name.to_owned() });
        }
    }
    let matched: Vec<Option<usize>> = arguments
        .iter()
        .map(|a| spellings(a.name.as_deref()?).iter().find_map(|s| by_name.get(s.as_str()).copied()))
        .collect();
    if matched.iter().all(Option::is_none) {
        return bind_by_type(arguments, tensors);
    }
    // Each tensor feeds one argument.
    let mut claimed: Vec<Vec<usize>> = vec![Vec::new(); tensors.len()];
    for (a, t) in matched.iter().enumerate() {
        if let Some(t) = t {
            claimed[*t].push(a);
        }
    }
    if let Some((t, args)) = claimed.iter().enumerate().find(|(_, a)| a.len() > 1) {
        return Err(BindingError::AmbiguousName {
            tensor: tensors[t].name.to_owned(),
            arguments: args.iter().map(|&a| describe(arguments, a)).collect(),
        });
    }
    let unbound: Vec<usize> = (0..arguments.len()).filter(|&a| matched[a].is_none()).collect();
    let extra: Vec<&str> = (0..tensors.len()).filter(|&t| claimed[t].is_empty()).map(|t| tensors[t].name).collect();
    if !extra.is_empty() {
        return Err(BindingError::ExtraTensors {
            tensors: extra.iter().map(|t| t.to_string()).collect(),
            listed: listed(&extra),
            unbound: if unbound.is_empty() {
                "none".to_owned()
            } else {
                unbound.iter().take(LISTED).map(|&a| describe(arguments, a)).collect::<Vec<_>>().join(", ")
            },
        });
    }
    // A group the file gives part of must be given whole.
    let bound_groups: Vec<&str> =
        (0..arguments.len()).filter(|&a| matched[a].is_some()).filter_map(|a| arguments[a].group.as_deref()).collect();
    let missing: Vec<usize> = unbound
        .iter()
        .copied()
        .filter(|&a| arguments[a].group.as_deref().is_some_and(|g| bound_groups.contains(&g)))
        .collect();
    if !missing.is_empty() {
        let looked_for: Vec<String> = missing
            .iter()
            .take(LISTED)
            .map(|&a| {
                let names = arguments[a].name.as_deref().map(spellings).unwrap_or_default();
                format!("{} (as {})", describe(arguments, a), listed(&names))
            })
            .collect();
        return Err(BindingError::MissingTensors {
            arguments: missing.iter().map(|&a| arguments[a].name.clone().unwrap_or_default()).collect(),
            listed: looked_for.join("; "),
        });
    }
    for (a, t) in matched.iter().enumerate() {
        if let Some(t) = *t {
            let tensor = &tensors[t];
            if !arguments[a].fits(tensor.element_type, tensor.dims) {
                return Err(BindingError::Mismatch {
                    tensor: tensor.name.to_owned(),
                    tensor_type: tensor.type_text(),
                    argument: describe(arguments, a),
                });
            }
        }
    }
    Ok(Binding { tensors: matched, by: BoundBy::Name, note: None })
}

/// No name matched: the tensors feed the first arguments, each the one tensor that fits it.
fn bind_by_type(arguments: &[Argument], tensors: &[NamedTensor<'_>]) -> Result<Binding, BindingError> {
    let n = tensors.len();
    if n > arguments.len() {
        return Err(BindingError::TooManyTensors {
            tensors: n,
            arguments: arguments.len(),
            listed: listed(&tensors.iter().map(|t| t.name).collect::<Vec<_>>()),
        });
    }
    let leading = &arguments[..n];
    // Which tensors fit each argument, by exact type first (a table), then the wildcards.
    let mut by_type: HashMap<(ElementType, &[i64]), Vec<usize>> = HashMap::new();
    for (t, tensor) in tensors.iter().enumerate() {
        by_type.entry((tensor.element_type, tensor.dims)).or_default().push(t);
    }
    let fitting: Vec<Vec<usize>> = leading
        .iter()
        .map(|a| match (a.element_type, &a.dims) {
            (Some(e), Some(dims)) if dims.iter().all(Option::is_some) && !e.is_sub_byte() && e != ElementType::BF16 => {
                let dims: Vec<i64> = dims.iter().map(|d| d.unwrap_or(0)).collect();
                by_type.get(&(e, &dims[..])).cloned().unwrap_or_default()
            }
            _ => (0..n).filter(|&t| a.fits(tensors[t].element_type, tensors[t].dims)).collect(),
        })
        .collect();
    let mut fits_tensor: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (a, ts) in fitting.iter().enumerate() {
        for &t in ts {
            fits_tensor[t].push(a);
        }
    }
    // Assign what is forced (an argument one tensor fits, a tensor that fits one argument)
    // until everything is assigned or nothing more is forced.
    let mut of_argument: Vec<Option<usize>> = vec![None; n];
    let mut of_tensor: Vec<Option<usize>> = vec![None; n];
    loop {
        let mut progress = false;
        for a in 0..n {
            if of_argument[a].is_some() {
                continue;
            }
            let open: Vec<usize> = fitting[a].iter().copied().filter(|&t| of_tensor[t].is_none()).collect();
            match open[..] {
                [] => {
                    return Err(BindingError::NoTensorFits {
                        argument: describe(arguments, a),
                        tensors: listed(
                            &(0..n)
                                .filter(|&t| of_tensor[t].is_none())
                                .map(|t| format!("{} {}", tensors[t].name, tensors[t].type_text()))
                                .collect::<Vec<_>>(),
                        ),
                    })
                }
                [t] => {
                    of_argument[a] = Some(t);
                    of_tensor[t] = Some(a);
                    progress = true;
                }
                _ => {}
            }
        }
        for t in 0..n {
            if of_tensor[t].is_some() {
                continue;
            }
            let open: Vec<usize> = fits_tensor[t].iter().copied().filter(|&a| of_argument[a].is_none()).collect();
            match open[..] {
                [] => {
                    return Err(BindingError::TensorFitsNothing {
                        tensor: tensors[t].name.to_owned(),
                        tensor_type: tensors[t].type_text(),
                        count: n,
                    })
                }
                [a] => {
                    of_argument[a] = Some(t);
                    of_tensor[t] = Some(a);
                    progress = true;
                }
                _ => {}
            }
        }
        if of_argument.iter().all(Option::is_some) {
            break;
        }
        if !progress {
            // Tensors that could trade places: name them and the arguments they fit.
            let a = (0..n).find(|&a| of_argument[a].is_none()).unwrap_or(0);
            let candidates: Vec<usize> = fitting[a].iter().copied().filter(|&t| of_tensor[t].is_none()).collect();
            let mut places: Vec<usize> = candidates
                .iter()
                .flat_map(|&t| fits_tensor[t].iter().copied().filter(|&b| of_argument[b].is_none()))
                .collect();
            places.sort_unstable();
            places.dedup();
            return Err(BindingError::Ambiguous {
                tensors: candidates.iter().map(|&t| tensors[t].name.to_owned()).collect(),
                listed: listed(&candidates.iter().map(|&t| tensors[t].name).collect::<Vec<_>>()),
                arguments: places.iter().take(LISTED).map(|&b| describe(arguments, b)).collect::<Vec<_>>().join(", "),
            });
        }
    }
    let in_order = of_argument.iter().enumerate().all(|(a, t)| *t == Some(a));
    let named = arguments.iter().any(|a| a.name.is_some());
    let note = format!(
        "no tensor name matches an argument name of the model{}, so its {n} tensor{} were bound to its first {n} \
         argument{} by dtype and shape ({}), the only assignment they allow; {}",
        if named { "" } else { " (the model names none)" },
        if n == 1 { "" } else { "s" },
        if n == 1 { "" } else { "s" },
        if in_order { "in file order" } else { "not in file order" },
        if named {
            let example = arguments.iter().find_map(|a| a.name.as_deref()).map(spellings).unwrap_or_default();
            format!(
                "store the tensors under the model's argument names (e.g. {}) to bind them by name",
                listed(&example[..example.len().min(3)])
            )
        } else {
            "a model with argument names binds them by name".to_owned()
        }
    );
    let mut bound: Vec<Option<usize>> = of_argument;
    bound.resize(arguments.len(), None);
    Ok(Binding { tensors: bound, by: BoundBy::DtypeAndShape, note: Some(note) })
}

/// A program's arguments for [`bind`]: the parameters of its `@main` (dimension parameters,
/// `jax.global_constant`, left out: `--dim` gives them), each with its name where the program
/// has one and its type. Names come from MLIR text's `jax.arg_info = "..."`, else the
/// argument's location `loc("params['w']")` (as `jax.export` lowers with debug info), else its
/// SSA name unless it is the generic `%argN`; from bytecode, `jax.arg_info` or the argument's
/// location. `None` for HLO, or when no `@main` is found.
///
/// ```
/// let program = pjrt_client::Program::mlir_text(
///     r#"func.func public @main(%arg0: tensor<2x?xf32> loc("params['w']"), %bias: tensor<i32>) -> tensor<i32> {
///   return %bias : tensor<i32>
/// }"#,
/// )?;
/// let arguments = pjrt_formats::binding::program_arguments(&program).unwrap();
/// assert_eq!(arguments[0].name.as_deref(), Some("params['w']"));
/// assert_eq!(arguments[0].dims, Some(vec![Some(2), None]));
/// assert_eq!(arguments[1].name.as_deref(), Some("bias"));
/// assert_eq!(arguments[1].element_type, Some(pjrt_client::ElementType::S32));
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn program_arguments(program: &Program) -> Option<Vec<Argument>> {
    match program.text() {
        Some(text) => text_arguments(text),
        None if program.format() == pjrt_client::ProgramFormat::Mlir => bytecode_arguments(program.code()),
        None => None,
    }
}

/// [`program_arguments`] of MLIR text, read from the `@main` signature.
fn text_arguments(text: &str) -> Option<Vec<Argument>> {
    let start = text.find("@main(")? + "@main(".len();
    let mut arguments = Vec::new();
    for arg in split_arguments(&text[start..])? {
        let arg = arg.trim();
        if arg.is_empty() || arg.contains("jax.global_constant") {
            continue;
        }
        let info = arg
            .find("jax.arg_info = \"")
            .and_then(|at| read_mlir_string(&arg[at + "jax.arg_info = ".len()..]))
            .or_else(|| location_name(text, arg));
        let (ssa, ty) = arg.strip_prefix('%').and_then(|rest| rest.split_once(':')).unwrap_or(("", arg));
        let ssa = Some(ssa.trim()).filter(|n| !is_generic_ssa_name(n)).map(String::from);
        let mut argument = with_root_group(info.or(ssa));
        if let Some((element_type, dims)) = tensor_type(ty.trim()) {
            argument.element_type = Some(element_type);
            argument.dims = Some(dims);
        }
        arguments.push(argument);
    }
    Some(arguments)
}

/// An argument named `name`, in the group of its root (`params` for `params['w']`): the
/// Python argument it is a leaf of.
fn with_root_group(name: Option<String>) -> Argument {
    let group = name.as_deref().and_then(parse_path).and_then(|(root, _)| root.map(str::to_owned));
    Argument { name, group, ..Argument::default() }
}

/// `tensor<2x?xf32>` at the start of `ty`: its element type and dimensions.
fn tensor_type(ty: &str) -> Option<(ElementType, Vec<Option<i64>>)> {
    let body = ty.strip_prefix("tensor<")?;
    // The element type may itself hold `<...>` (`complex<f32>`); an encoding follows a comma.
    let mut depth = 0;
    let end = body.char_indices().find_map(|(i, c)| match c {
        '<' => {
            depth += 1;
            None
        }
        '>' if depth == 0 => Some(i),
        '>' => {
            depth -= 1;
            None
        }
        ',' if depth == 0 => Some(i),
        _ => None,
    })?;
    let body = &body[..end];
    let mut parts: Vec<&str> = Vec::new();
    let mut rest = body;
    // Dimensions are `N` or `?` followed by `x`; what is left is the element type.
    loop {
        let dim_end = rest.find('x');
        match dim_end {
            Some(i) if i > 0 && (rest[..i] == *"?" || rest[..i].bytes().all(|b| b.is_ascii_digit())) => {
                parts.push(&rest[..i]);
                rest = &rest[i + 1..];
            }
            _ => break,
        }
    }
    let element_type = ElementType::ALL.iter().copied().find(|e| e.mlir_name() == Some(rest.trim()))?;
    let dims = parts.iter().map(|p| p.parse::<i64>().ok()).collect();
    Some((element_type, dims))
}

/// [`program_arguments`] of a portable artifact.
fn bytecode_arguments(bytes: &[u8]) -> Option<Vec<Argument>> {
    use pjrt_stablehlo::ir::{Attr, Type};
    let module = pjrt_stablehlo::read_bytecode(bytes).ok()?;
    let main = module
        .walk()
        .find(|op| op.name == "func.func" && matches!(op.attr("sym_name"), Some(Attr::String(s)) if s == b"main"))?;
    let Some(Attr::Type(Type::Function { inputs, .. })) = main.attr("function_type") else { return None };
    let locations = pjrt_stablehlo::argument_locations(bytes, "main").ok().flatten().unwrap_or_default();
    let infos: Vec<Option<String>> = match main.attr("arg_attrs") {
        Some(Attr::Array(items)) => items
            .iter()
            .map(|item| match item {
                Attr::Dict(entries) => entries.iter().find_map(|(k, v)| match v {
                    Attr::String(s) if k == "jax.arg_info" => Some(String::from_utf8_lossy(s).into_owned()),
                    _ => None,
                }),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let skip: Vec<usize> = pjrt_stablehlo::dimension_parameters(&module).into_iter().map(|(i, _)| i).collect();
    let arguments = inputs
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(i, ty)| {
            let name = infos.get(i).cloned().flatten().or_else(|| locations.get(i).and_then(|l| name_of_location(l)));
            let mut argument = with_root_group(name);
            if let Type::Tensor(t) = ty {
                if let Some(element_type) = t.element_type() {
                    argument.element_type = Some(element_type);
                    argument.dims = Some(
                        t.dims
                            .iter()
                            .map(|d| match d {
                                pjrt_stablehlo::ir::Dim::Fixed(n) => i64::try_from(*n).ok(),
                                _ => None,
                            })
                            .collect(),
                    );
                }
            }
            argument
        })
        .collect();
    Some(arguments)
}

/// The name a location gives (JAX's `loc("params['w']")`), if it is a name.
pub(crate) fn name_of_location(location: &pjrt_stablehlo::ir::Location) -> Option<String> {
    match location {
        pjrt_stablehlo::ir::Location::Name { name, .. } if !name.is_empty() => Some(name.clone()),
        _ => None,
    }
}

/// The name JAX gives an argument as its location when it lowers with debug info (as
/// `jax.export` does): `%arg0: tensor<4xf32> loc("params['w']")`, or `loc(#loc3)` with
/// `#loc3 = loc("params['w']")` at the end of the module. File locations (`loc("f.py":3:1)`)
/// are not names.
fn location_name(module: &str, arg: &str) -> Option<String> {
    let at = arg.rfind("loc(")?;
    let inner = &arg[at + "loc(".len()..];
    // The literal must be the whole location: `"name")`.
    let name_of =
        |text: &str| read_mlir_string_and_rest(text).and_then(|(name, rest)| rest.starts_with(')').then_some(name));
    if inner.starts_with('"') {
        return name_of(inner);
    }
    let alias = inner.strip_prefix('#')?.split(')').next()?;
    let definition = format!("#{alias} = loc(");
    let line = module.lines().find(|l| l.trim_start().starts_with(&definition))?;
    let start = line.find(&definition)? + definition.len();
    name_of(&line[start..])
}

/// Empty, or `argN` as MLIR prints unnamed arguments: names nothing.
fn is_generic_ssa_name(name: &str) -> bool {
    name.is_empty() || name.strip_prefix("arg").is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// The top-level comma-separated pieces of an argument list, up to its closing `)`.
fn split_arguments(text: &str) -> Option<Vec<&str>> {
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped, mut piece_start) = (0i32, false, false, 0);
    let mut pieces = Vec::new();
    for (i, &c) in bytes.iter().enumerate() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            // `->` inside a type is an arrow, not a closing bracket.
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b')' if depth == 0 => {
                pieces.push(&text[piece_start..i]);
                return Some(pieces);
            }
            b')' | b']' | b'}' | b'>' => depth -= 1,
            b',' if depth == 0 => {
                pieces.push(&text[piece_start..i]);
                piece_start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// The contents of an MLIR string literal that starts `text` (`"..."`, with `\"` and `\\`).
fn read_mlir_string(text: &str) -> Option<String> {
    read_mlir_string_and_rest(text).map(|(s, _)| s)
}

/// As [`read_mlir_string`], plus the text after the closing quote.
fn read_mlir_string_and_rest(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut chars = body.char_indices();
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(name: &str, dims: &[i64]) -> Argument {
        Argument::named(name).with_type(ElementType::F32, &dims.iter().map(|&d| Some(d)).collect::<Vec<_>>())
    }

    fn tensor<'a>(name: &'a str, element_type: ElementType, dims: &'a [i64]) -> NamedTensor<'a> {
        NamedTensor { name, element_type, dims }
    }

    #[test]
    fn parameter_names_from_mlir() {
        let program = Program::mlir_text(
            r#"module @m {
  func.func public @main(%arg0: tensor<2xf32> {jax.arg_info = "params['w1']", mhlo.sharding = "{replicated}"},
      %arg1: tensor<f32> {jax.arg_info = "x\"q"}, %arg2: tensor<2x!stablehlo.token>, %bias: tensor<3xf32>,
      %arg4: tensor<i32> {mhlo.layout_mode = "default"}) -> (tensor<2xf32> {jax.result_info = "r"}) {
    return %arg0 : tensor<2xf32>
  }
}"#,
        )
        .unwrap();
        let names: Vec<Option<String>> = program_arguments(&program).unwrap().into_iter().map(|a| a.name).collect();
        assert_eq!(names, [Some("params['w1']".into()), Some("x\"q".into()), None, Some("bias".into()), None]);
        // JAX with debug info (jax.export): names as argument locations, inline or aliased.
        let located = Program::mlir_text(
            r#"module @jit_f {
  func.func public @main(%arg0: tensor<4xf32> loc("params['b']"), %arg1: tensor<3xf32> loc(#loc2), %arg2: tensor<f32> loc(#loc3), %arg3: tensor<f32> loc("f.py":3:1)) -> (tensor<4xf32>) {
    return %arg0 : tensor<4xf32> loc(#loc4)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("x")
#loc3 = loc("f.py":1:2)
"#,
        )
        .unwrap();
        let names: Vec<Option<String>> = program_arguments(&located).unwrap().into_iter().map(|a| a.name).collect();
        assert_eq!(names, [Some("params['b']".into()), Some("x".into()), None, None]);
        let groups: Vec<Option<String>> = program_arguments(&located).unwrap().into_iter().map(|a| a.group).collect();
        assert_eq!(groups, [Some("params".into()), Some("x".into()), None, None]);
        let plain = Program::mlir_text("func.func @main() -> () {\n  return\n}").unwrap();
        assert_eq!(program_arguments(&plain).unwrap(), Vec::<Argument>::new());
    }

    #[test]
    fn tensor_types_from_mlir() {
        assert_eq!(tensor_type("tensor<2x?xf32>"), Some((ElementType::F32, vec![Some(2), None])));
        assert_eq!(tensor_type("tensor<i1> {a}"), Some((ElementType::PRED, vec![])));
        assert_eq!(tensor_type("tensor<3xcomplex<f64>>"), Some((ElementType::C128, vec![Some(3)])));
        assert_eq!(tensor_type("tensor<4xf8E4M3FN, #enc>"), Some((ElementType::F8E4M3FN, vec![Some(4)])));
        assert_eq!(tensor_type("tensor<2x!stablehlo.token>"), None);
        assert_eq!(tensor_type("!stablehlo.token"), None);
    }

    #[test]
    fn jax_paths_become_tensor_names() {
        let c = spellings("params['layer1']['w']");
        for want in ["params['layer1']['w']", "layer1.w", "params.layer1.w", "layer1/w", "params/layer1/w"] {
            assert!(c.contains(&want.to_string()), "{want}: {c:?}");
        }
        assert!(spellings("params['w1']").contains(&"w1".to_string()));
        assert!(spellings("layers[0].w").contains(&"0.w".to_string()));
        assert!(spellings("layers[0].w").contains(&"[0].w".to_string()));
        assert_eq!(spellings("['a'][0]"), ["['a'][0]", "a.0", "a/0"]);
        // Haiku's module names hold slashes; they stay as they are.
        assert!(spellings("['res_net/~/conv']['w']").contains(&"res_net/~/conv/w".to_string()));
        // Not a path: only the name itself.
        assert_eq!(spellings("a[b"), ["a[b"]);
    }

    #[test]
    fn names_decide_whatever_the_order() {
        let arguments = [
            f32s("params['a']", &[3]).in_group("p"),
            Argument::named("params['b']").with_type(ElementType::S32, &[]).in_group("p"),
            f32s("params['c']", &[3]).in_group("p"),
            f32s("x", &[3]),
        ];
        let (a, b, c) = (
            tensor("a", ElementType::F32, &[3]),
            tensor("b", ElementType::S32, &[]),
            tensor("c", ElementType::F32, &[3]),
        );
        for order in [[a, b, c], [b, a, c], [c, b, a]] {
            let binding = bind(&arguments, &order).unwrap();
            assert_eq!(binding.by(), BoundBy::Name);
            for (arg, t) in binding.tensors().iter().take(3).enumerate() {
                assert_eq!(order[t.unwrap()].name, ["a", "b", "c"][arg]);
            }
            assert_eq!(binding.caller_arguments(), [3]);
            assert!(binding.note().is_none());
        }
    }

    #[test]
    fn missing_extra_and_mismatched_tensors_are_named() {
        let arguments =
            [f32s("params['a']", &[3]).in_group("p"), f32s("params['c']", &[3]).in_group("p"), f32s("x", &[3])];
        let a = tensor("params.a", ElementType::F32, &[3]);
        let e = bind(&arguments, &[a]).unwrap_err();
        assert!(matches!(&e, BindingError::MissingTensors { arguments, .. } if arguments == &["params['c']"]), "{e}");
        assert!(e.to_string().contains("params.c"), "{e}");
        let e = bind(&arguments, &[a, tensor("params.c", ElementType::F32, &[3]), tensor("d", ElementType::F32, &[3])])
            .unwrap_err();
        assert!(matches!(&e, BindingError::ExtraTensors { tensors, .. } if tensors == &["d"]), "{e}");
        assert!(e.to_string().contains("x, f32[3]"), "{e}");
        let e = bind(&arguments, &[a, tensor("c", ElementType::S32, &[3])]).unwrap_err();
        assert!(matches!(e, BindingError::Mismatch { .. }), "{e}");
        assert!(e.to_string().contains("'c' (s32[3])"), "{e}");
        // One tensor, two arguments that take its name.
        let twice = [f32s("params['w']", &[3]), f32s("opt['w']", &[3])];
        let e = bind(&twice, &[tensor("w", ElementType::F32, &[3])]).unwrap_err();
        assert!(matches!(e, BindingError::AmbiguousName { .. }), "{e}");
    }

    #[test]
    fn without_names_types_must_leave_one_assignment() {
        let arguments = [
            f32s("params['a']", &[3]),
            Argument::named("params['b']").with_type(ElementType::S32, &[]),
            f32s("params['c']", &[2]),
            f32s("x", &[3]),
        ];
        // Sorted by dtype then name, under names the model does not use.
        let tensors = [
            tensor("p1", ElementType::S32, &[]),
            tensor("p0", ElementType::F32, &[3]),
            tensor("p2", ElementType::F32, &[2]),
        ];
        let binding = bind(&arguments, &tensors).unwrap();
        assert_eq!(binding.by(), BoundBy::DtypeAndShape);
        assert_eq!(binding.tensors(), [Some(1), Some(0), Some(2), None]);
        assert!(binding.note().unwrap().contains("not in file order"), "{:?}", binding.note());
        // Two tensors of one type: which is which is not known.
        let same = [f32s("u", &[3]), f32s("v", &[3])];
        let e = bind(&same, &[tensor("p", ElementType::F32, &[3]), tensor("q", ElementType::F32, &[3])]).unwrap_err();
        assert!(matches!(&e, BindingError::Ambiguous { tensors, .. } if tensors == &["p", "q"]), "{e}");
        // Nothing fits, too many tensors.
        assert!(matches!(
            bind(&same, &[tensor("p", ElementType::S32, &[3])]).unwrap_err(),
            BindingError::NoTensorFits { .. }
        ));
        let three = [
            tensor("p", ElementType::F32, &[3]),
            tensor("q", ElementType::F32, &[2]),
            tensor("r", ElementType::F32, &[1]),
        ];
        assert!(matches!(bind(&same, &three).unwrap_err(), BindingError::TooManyTensors { .. }));
        // Forced step by step: raw bf16 bits fit a bf16 and a u16 argument, bf16 only the first.
        let mixed = [
            Argument::unnamed().with_type(ElementType::BF16, &[Some(2)]),
            Argument::unnamed().with_type(ElementType::U16, &[Some(2)]),
        ];
        let binding =
            bind(&mixed, &[tensor("bits", ElementType::U16, &[2]), tensor("b", ElementType::BF16, &[2])]).unwrap();
        assert_eq!(binding.tensors(), [Some(1), Some(0)]);
        // Unknown types fit anything: one argument, one tensor.
        let binding = bind(&[Argument::unnamed()], &[tensor("p", ElementType::F32, &[3])]).unwrap();
        assert_eq!(binding.tensors(), [Some(0)]);
    }
}
