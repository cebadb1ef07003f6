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
mod program;

pub(crate) use program::name_of_location;
pub use program::program_arguments;

use std::collections::HashMap;

use pjrt_client::ElementType;

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

#[cfg(test)]
mod tests;
