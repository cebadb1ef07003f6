//! `gather` and `scatter`, with their dimension numbers.
//!
//! ```
//! use pjrt_builder::{Function, GatherDimensions, ScatterDimensions};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("indexing");
//! let table = f.parameter(ElementType::F32, &[4, 2])?;
//! let ids = f.constant(&[3i32, 0, 3], &[3, 1])?;
//! // Rows 3, 0 and 3 of the table (an embedding lookup): table[ids].
//! let rows = table.gather(&ids, &GatherDimensions::rows(), &[1, 2], false)?;
//! // The reverse: add each of three 2-vectors into its row (an embedding's gradient).
//! let grads = f.splat(1f32, &[3, 2])?;
//! let zeros = f.splat(0f32, &[4, 2])?;
//! let summed = zeros.scatter(&ids, &grads, &ScatterDimensions::rows(), false, false, |_, a, b| a.add(b))?;
//! let program = f.finish(&[&rows, &summed])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let t = client.upload(&[0f32, 1., 10., 11., 20., 21., 30., 31.], &[4, 2])?;
//! let out = exe.execute(&[&t], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<f32>()?, [30., 31., 0., 1., 30., 31.]);
//! assert_eq!(out[1].to_vec::<f32>()?, [1., 1., 0., 0., 0., 0., 2., 2.]);
//! # Ok(()) }
//! ```

use super::{attribute_error, operand_error, tensor, tensor_type};
use pjrt_stablehlo::ir::Attr;

use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, Op, Value};
use crate::types::{kind, Kind, Type};
use pjrt_types::StableHloVersion;

/// The dimension numbers of `gather` (`#stablehlo.gather<...>`), as StableHLO defines them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatherDimensions {
    /// The result dimensions that hold a slice's (uncollapsed) dimensions, ascending.
    pub offset_dims: Vec<i64>,
    /// Operand dimensions whose slice size is 1 and that are dropped from the result, ascending.
    pub collapsed_slice_dims: Vec<i64>,
    /// Operand batch dimensions (paired with `start_indices_batching_dims`; StableHLO 1.1.0).
    pub operand_batching_dims: Vec<i64>,
    /// Index batch dimensions (paired with `operand_batching_dims`; StableHLO 1.1.0).
    pub start_indices_batching_dims: Vec<i64>,
    /// Which operand dimension each entry of an index vector addresses.
    pub start_index_map: Vec<i64>,
    /// The dimension of the indices that holds the index vectors (the rank: implicit, of size 1).
    pub index_vector_dim: i64,
}

impl GatherDimensions {
    /// Whole rows of a rank-2 operand at indices of shape `[n, 1]`: `operand[indices[:, 0], :]`
    /// with slice sizes `[1, columns]`, a result `[n, columns]`.
    pub fn rows() -> GatherDimensions {
        GatherDimensions {
            offset_dims: vec![1],
            collapsed_slice_dims: vec![0],
            start_index_map: vec![0],
            index_vector_dim: 1,
            ..GatherDimensions::default()
        }
    }
}

/// The dimension numbers of `scatter` (`#stablehlo.scatter<...>`), as StableHLO defines them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScatterDimensions {
    /// The update dimensions that hold a window's dimensions, ascending.
    pub update_window_dims: Vec<i64>,
    /// Operand dimensions a window covers with size 1 and that updates leave out, ascending.
    pub inserted_window_dims: Vec<i64>,
    /// Operand batch dimensions (paired with `scatter_indices_batching_dims`; StableHLO 1.1.0).
    pub input_batching_dims: Vec<i64>,
    /// Index batch dimensions (paired with `input_batching_dims`; StableHLO 1.1.0).
    pub scatter_indices_batching_dims: Vec<i64>,
    /// Which operand dimension each entry of an index vector addresses.
    pub scatter_dims_to_operand_dims: Vec<i64>,
    /// The dimension of the indices that holds the index vectors (the rank: implicit, of size 1).
    pub index_vector_dim: i64,
}

impl ScatterDimensions {
    /// Whole rows of a rank-2 operand at indices of shape `[n, 1]`, updates `[n, columns]`: the
    /// reverse of [`GatherDimensions::rows`].
    pub fn rows() -> ScatterDimensions {
        ScatterDimensions {
            update_window_dims: vec![1],
            inserted_window_dims: vec![0],
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: 1,
            ..ScatterDimensions::default()
        }
    }
}

/// `name = [1, 2]` of a struct attribute, in order (the printer leaves empty lists out, so
/// older StableHLO versions never see an empty batching list).
fn field(name: &'static str, values: &[i64]) -> (&'static str, Attr) {
    (name, emit::i64_array(values))
}

/// Checks a list of distinct dimensions in `0..rank`, ascending if `sorted`.
fn check_dims(op: &'static str, what: &str, dims: &[i64], rank: usize, sorted: bool) -> Result<(), BuildError> {
    super::check_dimension_list(op, what, dims, rank)?;
    if sorted && dims.windows(2).any(|w| w[0] > w[1]) {
        return Err(attribute_error(op, format!("{what} {dims:?} must be in ascending order")));
    }
    Ok(())
}

/// The index tensor's batch dimensions (all but `index_vector_dim`) and the index vector's
/// length (1 when `index_vector_dim` is the rank).
fn index_shape(op: &'static str, indices: &Value<'_>, index_vector_dim: i64) -> Result<(Vec<i64>, i64), BuildError> {
    let t = tensor(op, indices)?;
    if !matches!(kind(t.element), Kind::Signed | Kind::Unsigned) {
        return Err(operand_error(op, &[indices], "the indices must be integers"));
    }
    if index_vector_dim < 0 || index_vector_dim as usize > t.rank() {
        return Err(attribute_error(
            op,
            format!("index_vector_dim {index_vector_dim} must be in 0..={} (the indices' rank)", t.rank()),
        ));
    }
    let ivd = index_vector_dim as usize;
    let batch = (0..t.rank()).filter(|&d| d != ivd).map(|d| t.dims[d]).collect();
    let length = if ivd == t.rank() { 1 } else { t.dims[ivd] };
    Ok((batch, length))
}

impl<'f> Value<'f> {
    /// `stablehlo.gather`: slices of this tensor of size `slice_sizes` starting at the index
    /// vectors in `indices` (clamped to fit), arranged as `dims` says. `indices_are_sorted`
    /// promises ascending indices (wrong promises give unspecified results).
    pub fn gather(
        &self,
        indices: &Value<'f>,
        dims: &GatherDimensions,
        slice_sizes: &[i64],
        indices_are_sorted: bool,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.gather";
        let t = tensor(OP, self)?;
        let (batch, vector_length) = index_shape(OP, indices, dims.index_vector_dim)?;
        let rank = t.rank();
        if slice_sizes.len() != rank || slice_sizes.iter().zip(&t.dims).any(|(&s, &d)| s < 0 || s > d) {
            return Err(attribute_error(
                OP,
                format!("slice_sizes {slice_sizes:?} need one entry per dimension of {t}, each 0..=its size"),
            ));
        }
        let result_rank = batch.len() + dims.offset_dims.len();
        check_dims(OP, "offset_dims", &dims.offset_dims, result_rank, true)?;
        check_dims(OP, "collapsed_slice_dims", &dims.collapsed_slice_dims, rank, true)?;
        check_dims(OP, "operand_batching_dims", &dims.operand_batching_dims, rank, true)?;
        check_dims(OP, "start_index_map", &dims.start_index_map, rank, false)?;
        let it = tensor(OP, indices)?;
        check_dims(OP, "start_indices_batching_dims", &dims.start_indices_batching_dims, it.rank(), false)?;
        let dropped: Vec<i64> = dims.collapsed_slice_dims.iter().chain(&dims.operand_batching_dims).copied().collect();
        if dims.offset_dims.len() + dropped.len() != rank || check_dims(OP, "", &dropped, rank, false).is_err() {
            return Err(attribute_error(
                OP,
                format!(
                    "offset_dims {:?} must name one result dimension per operand dimension that is neither in \
                     collapsed_slice_dims {:?} nor in operand_batching_dims {:?} (which must not overlap)",
                    dims.offset_dims, dims.collapsed_slice_dims, dims.operand_batching_dims
                ),
            ));
        }
        if let Some(&d) = dropped.iter().find(|&&d| slice_sizes[d as usize] > 1) {
            return Err(attribute_error(OP, format!("slice size of dropped dimension {d} must be 0 or 1")));
        }
        if dims.start_index_map.len() as i64 != vector_length
            || dims.start_index_map.iter().any(|d| dims.operand_batching_dims.contains(d))
        {
            return Err(attribute_error(
                OP,
                format!(
                    "start_index_map {:?} needs one entry per index vector element ({vector_length}), none of them a \
                     batching dimension",
                    dims.start_index_map
                ),
            ));
        }
        check_batching(
            OP,
            self,
            indices,
            &dims.operand_batching_dims,
            &dims.start_indices_batching_dims,
            dims.index_vector_dim,
        )?;
        let offsets: Vec<i64> =
            (0..rank as i64).filter(|d| !dropped.contains(d)).map(|d| slice_sizes[d as usize]).collect();
        let mut result = Vec::with_capacity(result_rank);
        let (mut next_offset, mut next_batch) = (0, 0);
        for d in 0..result_rank as i64 {
            if dims.offset_dims.contains(&d) {
                result.push(offsets[next_offset]);
                next_offset += 1;
            } else {
                result.push(batch[next_batch]);
                next_batch += 1;
            }
        }
        let numbers = emit::struct_attr(
            "gather",
            vec![
                field("offset_dims", &dims.offset_dims),
                field("collapsed_slice_dims", &dims.collapsed_slice_dims),
                field("operand_batching_dims", &dims.operand_batching_dims),
                field("start_indices_batching_dims", &dims.start_indices_batching_dims),
                field("start_index_map", &dims.start_index_map),
                ("index_vector_dim", emit::i64_attr(dims.index_vector_dim)),
            ],
        );
        let mut op = Op::new(OP, vec![self, indices], vec![tensor_type(t.element, result)])
            .attr("dimension_numbers", numbers)
            .attr("slice_sizes", emit::i64_array(slice_sizes))
            .attr("indices_are_sorted", emit::bool_attr(indices_are_sorted));
        if !dims.operand_batching_dims.is_empty() {
            op.since = StableHloVersion::new(1, 1, 0);
        }
        self.func.emit1(op)
    }

    /// `stablehlo.scatter`: this tensor with the windows of `updates` combined in at the index
    /// vectors in `indices` by `combine(f, current, update)` (windows that do not fit are
    /// skipped). `indices_are_sorted` and `unique_indices` are promises (wrong ones give
    /// unspecified results).
    #[allow(clippy::too_many_arguments)]
    pub fn scatter(
        &self,
        indices: &Value<'f>,
        updates: &Value<'f>,
        dims: &ScatterDimensions,
        indices_are_sorted: bool,
        unique_indices: bool,
        combine: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.scatter";
        let (t, u) = (tensor(OP, self)?, tensor(OP, updates)?);
        let all = [self, indices, updates];
        if u.element != t.element {
            return Err(operand_error(OP, &all, "the updates need the operand's element type"));
        }
        let (batch, vector_length) = index_shape(OP, indices, dims.index_vector_dim)?;
        let rank = t.rank();
        check_dims(OP, "update_window_dims", &dims.update_window_dims, u.rank(), true)?;
        check_dims(OP, "inserted_window_dims", &dims.inserted_window_dims, rank, true)?;
        check_dims(OP, "input_batching_dims", &dims.input_batching_dims, rank, true)?;
        check_dims(OP, "scatter_dims_to_operand_dims", &dims.scatter_dims_to_operand_dims, rank, false)?;
        let it = tensor(OP, indices)?;
        check_dims(OP, "scatter_indices_batching_dims", &dims.scatter_indices_batching_dims, it.rank(), false)?;
        let dropped: Vec<i64> = dims.inserted_window_dims.iter().chain(&dims.input_batching_dims).copied().collect();
        if dims.update_window_dims.len() + dropped.len() != rank || check_dims(OP, "", &dropped, rank, false).is_err() {
            return Err(attribute_error(
                OP,
                format!(
                    "update_window_dims {:?} must name one update dimension per operand dimension that is neither in \
                     inserted_window_dims {:?} nor in input_batching_dims {:?} (which must not overlap)",
                    dims.update_window_dims, dims.inserted_window_dims, dims.input_batching_dims
                ),
            ));
        }
        if dims.scatter_dims_to_operand_dims.len() as i64 != vector_length
            || dims.scatter_dims_to_operand_dims.iter().any(|d| dims.input_batching_dims.contains(d))
        {
            return Err(attribute_error(
                OP,
                format!(
                    "scatter_dims_to_operand_dims {:?} needs one entry per index vector element ({vector_length}), \
                     none of them a batching dimension",
                    dims.scatter_dims_to_operand_dims
                ),
            ));
        }
        check_batching(
            OP,
            self,
            indices,
            &dims.input_batching_dims,
            &dims.scatter_indices_batching_dims,
            dims.index_vector_dim,
        )?;
        // The updates: the index batch dimensions (in order) where they are not window
        // dimensions, and each window dimension at most the operand's size there.
        if u.rank() != batch.len() + dims.update_window_dims.len() {
            return Err(operand_error(
                OP,
                &all,
                format!(
                    "the updates need rank {} ({} index batch dimensions and {} window dimensions)",
                    batch.len() + dims.update_window_dims.len(),
                    batch.len(),
                    dims.update_window_dims.len()
                ),
            ));
        }
        let window_bounds: Vec<i64> =
            (0..rank as i64).filter(|d| !dropped.contains(d)).map(|d| t.dims[d as usize]).collect();
        let (mut next_window, mut next_batch) = (0, 0);
        for d in 0..u.rank() as i64 {
            let fits = if dims.update_window_dims.contains(&d) {
                next_window += 1;
                u.dims[d as usize] <= window_bounds[next_window - 1]
            } else {
                next_batch += 1;
                u.dims[d as usize] == batch[next_batch - 1]
            };
            if !fits {
                return Err(operand_error(
                    OP,
                    &all,
                    format!(
                        "update dimension {d} must equal the indices' batch dimension there, or for a window \
                         dimension be at most the operand's size {window_bounds:?}"
                    ),
                ));
            }
        }
        let scalar = Type::Tensor(t.scalar());
        let (region, returned) = self
            .func
            .region(OP, true, &[scalar.clone(), scalar.clone()], |f, a| Ok(vec![combine(f, &a[0], &a[1])?]))?;
        if returned != [scalar.clone()] {
            return Err(BuildError::RegionResults {
                op: OP,
                returned: emit::types_for_message(&returned),
                expected: scalar.to_string(),
            });
        }
        let numbers = emit::struct_attr(
            "scatter",
            vec![
                field("update_window_dims", &dims.update_window_dims),
                field("inserted_window_dims", &dims.inserted_window_dims),
                field("input_batching_dims", &dims.input_batching_dims),
                field("scatter_indices_batching_dims", &dims.scatter_indices_batching_dims),
                field("scatter_dims_to_operand_dims", &dims.scatter_dims_to_operand_dims),
                ("index_vector_dim", emit::i64_attr(dims.index_vector_dim)),
            ],
        );
        let mut op = Op::new(OP, all.to_vec(), vec![self.ty.clone()])
            .attr("scatter_dimension_numbers", numbers)
            .attr("indices_are_sorted", emit::bool_attr(indices_are_sorted))
            .attr("unique_indices", emit::bool_attr(unique_indices));
        if !dims.input_batching_dims.is_empty() {
            op.since = StableHloVersion::new(1, 1, 0);
        }
        op.regions.push(region);
        self.func.emit1(op)
    }
}

/// Batching dimensions: paired, of equal sizes, and not the index vector dimension.
fn check_batching(
    op: &'static str,
    operand: &Value<'_>,
    indices: &Value<'_>,
    operand_dims: &[i64],
    index_dims: &[i64],
    index_vector_dim: i64,
) -> Result<(), BuildError> {
    let (t, it) = (tensor(op, operand)?, tensor(op, indices)?);
    let paired = operand_dims.len() == index_dims.len()
        && !index_dims.contains(&index_vector_dim)
        && operand_dims.iter().zip(index_dims).all(|(&a, &b)| t.dims[a as usize] == it.dims[b as usize]);
    if !paired {
        return Err(attribute_error(
            op,
            format!(
                "batching dimensions {operand_dims:?} (operand {t}) and {index_dims:?} (indices {it}) must pair up with \
                 equal sizes, and not include the index vector dimension"
            ),
        ));
    }
    Ok(())
}
