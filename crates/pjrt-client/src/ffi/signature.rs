//! What a handler declares it takes: [`Signature`], [`Rank`].

use super::types::{AttrScalar, DataType, FfiElement};

/// The rank a buffer is declared with.
///
/// ```
/// use pjrt_client::ffi::{Rank, Signature};
/// let matrix_in_any_out = Signature::new().arg::<f32>(Rank::Exact(2)).ret::<f32>(Rank::Any);
/// assert_eq!(matrix_in_any_out.arg_count(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// Exactly this many dimensions.
    Exact(usize),
    /// Any rank (up to [`MAX_RANK`](super::MAX_RANK)).
    Any,
}

/// A declared buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BufferSpec {
    pub(crate) dtype: DataType,
    pub(crate) rank: Option<usize>,
    /// For a result: the operand whose memory it may be (`output_operand_aliases`).
    pub(crate) alias: Option<usize>,
}

/// A declared attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttrSpec {
    Scalar(DataType),
    Array(DataType),
    Str,
}

impl AttrSpec {
    pub(super) fn describe(self) -> String {
        match self {
            AttrSpec::Scalar(t) => format!("a scalar of {}", t.describe()),
            AttrSpec::Array(t) => format!("an array of {}", t.describe()),
            AttrSpec::Str => "a string".to_owned(),
        }
    }
}

/// What a handler takes: operand buffers, result buffers and named attributes, in order.
///
/// ```
/// use pjrt_client::ffi::{Rank, Signature};
/// let signature = Signature::new()
///     .arg::<f32>(Rank::Exact(2))
///     .arg::<i64>(Rank::Any)
///     .ret::<f64>(Rank::Exact(0))
///     .attr::<bool>("transpose")
///     .attr_array::<i64>("axes")
///     .attr_str("mode");
/// assert_eq!(signature.arg_count(), 2);
/// assert_eq!(signature.ret_count(), 1);
/// assert_eq!(signature.attr_names().collect::<Vec<_>>(), ["transpose", "axes", "mode"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signature {
    pub(crate) args: Vec<BufferSpec>,
    /// How many of the last `args` a call may leave out ([`Signature::arg_optional`]).
    pub(crate) optional_args: usize,
    pub(crate) rets: Vec<BufferSpec>,
    pub(crate) attrs: Vec<(String, AttrSpec)>,
}

impl Signature {
    /// No operands, results or attributes.
    pub fn new() -> Signature {
        Signature::default()
    }

    /// One more operand: a buffer of `T` of `rank`.
    ///
    /// # Panics
    /// After an [`Signature::arg_optional`]: optional operands come last.
    pub fn arg<T: FfiElement>(mut self, rank: Rank) -> Signature {
        assert!(self.optional_args == 0, "Signature::arg after arg_optional: optional operands come last");
        self.args.push(BufferSpec { dtype: T::DATA_TYPE, rank: rank.into(), alias: None });
        self
    }

    /// One more operand that a call may leave out: a buffer of `T` of `rank`, when the call
    /// has it (the optional operands come last; a call has a prefix of them). The handler asks
    /// [`Call::arg_count`](super::Call::arg_count) how many the call has.
    ///
    /// ```
    /// use pjrt_client::ffi::{Rank, Signature};
    /// // JAX 0.5's triangular solve passed a scalar alpha as a third operand; today's does not.
    /// let trsm = Signature::new().arg::<f32>(Rank::Any).arg::<f32>(Rank::Any).arg_optional::<f32>(Rank::Exact(0));
    /// assert_eq!((trsm.arg_count(), trsm.required_arg_count()), (3, 2));
    /// ```
    pub fn arg_optional<T: FfiElement>(mut self, rank: Rank) -> Signature {
        self.args.push(BufferSpec { dtype: T::DATA_TYPE, rank: rank.into(), alias: None });
        self.optional_args += 1;
        self
    }

    /// One more result: a buffer of `T` of `rank`.
    pub fn ret<T: FfiElement>(mut self, rank: Rank) -> Signature {
        self.rets.push(BufferSpec { dtype: T::DATA_TYPE, rank: rank.into(), alias: None });
        self
    }

    /// One more result that may be the memory of operand `operand` (a program that declares
    /// `output_operand_aliases` for it hands both as the same buffer), of the operand's element
    /// type and rank. Read and write it with [`Call::ret_in_place`](super::Call::ret_in_place): it holds the operand's
    /// values whether XLA aliased the two or not.
    ///
    /// ```
    /// use pjrt_client::ffi::{Rank, Signature};
    /// let in_place = Signature::new().arg::<f64>(Rank::Any).ret_aliasing(0);
    /// assert_eq!(in_place.ret_count(), 1);
    /// ```
    ///
    /// # Panics
    /// If operand `operand` is not declared yet.
    pub fn ret_aliasing(mut self, operand: usize) -> Signature {
        let Some(arg) = self.args.get(operand) else {
            panic!("Signature::ret_aliasing({operand}): only {} operands are declared", self.args.len())
        };
        self.rets.push(BufferSpec { alias: Some(operand), ..*arg });
        self
    }

    /// A scalar attribute `name` of type `T` (a name declared twice keeps its last declaration).
    pub fn attr<T: AttrScalar>(self, name: &str) -> Signature {
        self.with_attr(name, AttrSpec::Scalar(T::DATA_TYPE))
    }

    /// An array attribute `name` of elements `T` (from a dense array or numpy array attribute).
    pub fn attr_array<T: FfiElement>(self, name: &str) -> Signature {
        self.with_attr(name, AttrSpec::Array(T::DATA_TYPE))
    }

    /// A string attribute `name`.
    pub fn attr_str(self, name: &str) -> Signature {
        self.with_attr(name, AttrSpec::Str)
    }

    fn with_attr(mut self, name: &str, spec: AttrSpec) -> Signature {
        self.attrs.retain(|(n, _)| n != name);
        self.attrs.push((name.to_owned(), spec));
        self
    }

    /// The number of operands (with the optional ones).
    pub fn arg_count(&self) -> usize {
        self.args.len()
    }

    /// The number of operands every call has (without the optional ones).
    pub fn required_arg_count(&self) -> usize {
        self.args.len() - self.optional_args
    }

    /// The number of results.
    pub fn ret_count(&self) -> usize {
        self.rets.len()
    }

    /// The attribute names, in declaration order.
    pub fn attr_names(&self) -> impl Iterator<Item = &str> {
        self.attrs.iter().map(|(n, _)| n.as_str())
    }
}

impl From<Rank> for Option<usize> {
    fn from(rank: Rank) -> Self {
        match rank {
            Rank::Exact(rank) => Some(rank),
            Rank::Any => None,
        }
    }
}
