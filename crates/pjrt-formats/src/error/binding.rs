//! [`BindingError`]: why a weights file's tensors could not be bound to a model's arguments
//! (`crate::binding::bind`).

/// Why the tensors of a weights file could not be bound to a model's arguments
/// ([`crate::binding::bind`]); returned as [`crate::Error::Binding`] where a call does more.
/// Every message names the tensors and arguments involved, and says what to do.
///
/// ```
/// use pjrt_client::ElementType;
/// use pjrt_formats::binding::{bind, Argument, BindingError, NamedTensor};
///
/// let arguments = [Argument::named("params['w']").with_type(ElementType::F32, &[Some(2)])];
/// let tensors = [NamedTensor { name: "w", element_type: ElementType::F32, dims: &[3] }];
/// let e = bind(&arguments, &tensors).unwrap_err();
/// assert!(matches!(e, BindingError::Mismatch { .. }));
/// assert!(e.to_string().contains("'w' (f32[3])"), "{e}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindingError {
    /// Tensors whose names match no argument name, while other names do.
    #[error(
        "tensors {listed} match no argument name of the model (arguments no tensor is bound to: {unbound}); \
         rename them after the model's arguments, or remove them from the file"
    )]
    ExtraTensors {
        /// The tensors.
        tensors: Vec<String>,
        /// They, quoted and listed (the first few).
        listed: String,
        /// The arguments left unbound, described.
        unbound: String,
    },
    /// Arguments that the file gives the rest of their group (a Python argument's pytree)
    /// for, but no tensor of their own.
    #[error(
        "the file has no tensor for {listed}; add them to the file (the whole pytree of an argument comes from one \
         file)"
    )]
    MissingTensors {
        /// The arguments' names.
        arguments: Vec<String>,
        /// They, described, with the tensor names looked for.
        listed: String,
    },
    /// A tensor whose name matches the names of several arguments.
    #[error(
        "tensor '{tensor}' matches the names of {}: store it under a longer name (with the argument's root, \
         e.g. params.w) so that it names one",
        arguments.join(" and ")
    )]
    AmbiguousName {
        /// The tensor.
        tensor: String,
        /// The arguments, described.
        arguments: Vec<String>,
    },
    /// A tensor bound by name whose element type or shape is not its argument's.
    #[error("tensor '{tensor}' ({tensor_type}) is bound by name to {argument}, whose type it does not have")]
    Mismatch {
        /// The tensor.
        tensor: String,
        /// Its type, as `f32[3,4]`.
        tensor_type: String,
        /// The argument, described.
        argument: String,
    },
    /// No tensor name matches, and the tensors' dtypes and shapes fit more than one way.
    #[error(
        "no tensor name of the file matches an argument name of the model, and tensors {listed} have the same \
         dtype and shape: any of them could feed {arguments}; store the tensors under the model's argument names to \
         bind them by name"
    )]
    Ambiguous {
        /// The tensors that could trade places.
        tensors: Vec<String>,
        /// They, quoted and listed (the first few).
        listed: String,
        /// The arguments they fit, described.
        arguments: String,
    },
    /// No tensor name matches, and no tensor has the dtype and shape of one of the first
    /// arguments.
    #[error(
        "no tensor name of the file matches an argument name of the model, and no tensor left fits {argument} \
         (left: {tensors}); store the tensors under the model's argument names to bind them by name"
    )]
    NoTensorFits {
        /// The argument, described.
        argument: String,
        /// The tensors left, with their types.
        tensors: String,
    },
    /// No tensor name matches, and a tensor has the dtype and shape of none of the first
    /// arguments.
    #[error(
        "no tensor name of the file matches an argument name of the model, and tensor '{tensor}' ({tensor_type}) \
         fits none of its first {count} arguments; store the tensors under the model's argument names to bind them \
         by name"
    )]
    TensorFitsNothing {
        /// The tensor.
        tensor: String,
        /// Its type.
        tensor_type: String,
        /// How many arguments the tensors were to feed.
        count: usize,
    },
    /// No tensor name matches, and there are more tensors than arguments.
    #[error(
        "the file has {tensors} tensors ({listed}) but the model takes {arguments} arguments, and no tensor name \
         matches an argument name"
    )]
    TooManyTensors {
        /// How many tensors.
        tensors: usize,
        /// How many arguments.
        arguments: usize,
        /// The tensors, quoted and listed (the first few).
        listed: String,
    },
    /// Two tensors under one name.
    #[error("the file holds two tensors named '{tensor}'")]
    DuplicateTensor {
        /// The name.
        tensor: String,
    },
}
