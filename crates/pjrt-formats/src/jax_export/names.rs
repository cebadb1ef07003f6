//! A `jax.export` model's inputs as [`crate::binding`] sees them: named from the argument
//! locations JAX writes into the module (`loc("params['block_0']['kernel']")`) and, for inputs
//! the module does not keep or where it has no location, from the input tree
//! (`['block_0']['kernel']` of the first positional argument: its Python name is not in the
//! tree). Each input is in the group of its top-level argument.

use crate::binding::{self, Argument, Binding, NamedTensor};

use super::{Dim, JaxExport, ModuleArgument, PyTree};

impl JaxExport {
    /// Every input (in the order of [`JaxExport::in_avals`]) as [`binding::bind`] takes it: its
    /// JAX name, the top-level argument it belongs to, its element type and dimensions.
    ///
    /// ```
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
    /// let model = pjrt_formats::jax_export::JaxExport::read(path)?;
    /// // mlp(params, x): params = {'b1', 'b2', 'w1', 'w2'}, leaves in key order.
    /// let arguments = model.arguments();
    /// assert_eq!(arguments[0].name.as_deref(), Some("params['b1']"));
    /// assert_eq!(arguments[4].name.as_deref(), Some("x"));
    /// assert_eq!(arguments[0].group, arguments[3].group);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn arguments(&self) -> Vec<Argument> {
        let from_tree = tree_names(&self.in_tree, self.in_avals.len());
        let from_module = self.location_names();
        self.in_avals
            .iter()
            .enumerate()
            .map(|(i, aval)| {
                let (tree_name, group) = from_tree.get(i).cloned().unwrap_or((None, None));
                let name = from_module.get(i).cloned().flatten().or(tree_name);
                Argument {
                    name,
                    group,
                    element_type: aval.element_type,
                    dims: Some(aval.dims.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect()),
                    ..Argument::default()
                }
            })
            .collect()
    }

    /// Binds the tensors of a weights file to the model's inputs ([`binding::bind`] of
    /// [`JaxExport::arguments`]).
    ///
    /// ```
    /// use pjrt_client::ElementType;
    /// use pjrt_formats::binding::NamedTensor;
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
    /// let model = pjrt_formats::jax_export::JaxExport::read(path)?;
    /// let t = |name| NamedTensor { name, element_type: ElementType::F32, dims: &[] };
    /// let (w1, w2) = (NamedTensor { dims: &[8, 16], ..t("w1") }, NamedTensor { dims: &[16, 3], ..t("w2") });
    /// let (b1, b2) = (NamedTensor { dims: &[16], ..t("params.b1") }, NamedTensor { dims: &[3], ..t("params/b2") });
    /// let binding = model.bind_params(&[w2, w1, b2, b1])?;
    /// assert_eq!(binding.tensors(), [Some(3), Some(2), Some(1), Some(0), None]);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn bind_params(&self, tensors: &[NamedTensor<'_>]) -> crate::Result<Binding> {
        Ok(binding::bind(&self.arguments(), tensors)?)
    }

    /// The name of each input from the module's argument locations (`None` where it has
    /// none, or when the module's arguments do not line up with the kept inputs).
    fn location_names(&self) -> Vec<Option<String>> {
        let mut names = vec![None; self.in_avals.len()];
        let Ok(Some(locations)) = pjrt_stablehlo::argument_locations(&self.mlir_module, "main") else {
            return names;
        };
        let arguments = self.module_arguments();
        if locations.len() != arguments.len() {
            return names;
        }
        for (location, argument) in locations.iter().zip(arguments) {
            if let ModuleArgument::Input(i) = argument {
                if let Some(slot) = names.get_mut(i) {
                    *slot = binding::name_of_location(location);
                }
            }
        }
        names
    }
}

/// Each leaf's name and group from the input tree `((args...), {kwargs...})`: a positional
/// argument's leaves are named by their path below it (its Python name is not in the tree) and
/// grouped as `args[i]`; a keyword argument's by its name and path. Any other tree: paths, no
/// groups.
fn tree_names(tree: &PyTree, count: usize) -> Vec<(Option<String>, Option<String>)> {
    let named = |path: String| (!path.is_empty()).then_some(path);
    let names: Vec<(Option<String>, Option<String>)> = match tree {
        PyTree::Tuple(parts) if matches!(&parts[..], [PyTree::Tuple(_), PyTree::Dict(_)]) => {
            let (PyTree::Tuple(args), PyTree::Dict(kwargs)) = (&parts[0], &parts[1]) else { unreachable!() };
            let positional = args
                .iter()
                .enumerate()
                .flat_map(|(i, arg)| arg.leaf_paths().into_iter().map(move |p| (named(p), Some(format!("args[{i}]")))));
            let keyword = kwargs.iter().flat_map(|(k, arg)| {
                arg.leaf_paths().into_iter().map(move |p| (Some(format!("{k}{p}")), Some(k.clone())))
            });
            positional.chain(keyword).collect()
        }
        other => other.leaf_paths().into_iter().map(|p| (named(p), None)).collect(),
    };
    if names.len() == count {
        names
    } else {
        vec![(None, None); count]
    }
}
