//! Collectives across replicas (or partitions): `all_reduce`, `all_gather`, `reduce_scatter`,
//! `all_to_all`, `collective_permute`, with replica groups and channel handles. Run them with
//! [`pjrt_client::LoadedExecutable::execute_sharded`] on as many devices as the program has
//! replicas ([`crate::Function::set_num_replicas`]).
//!
//! ```
//! use pjrt_builder::{Collective, Function};
//! use pjrt_client::{Buffer, Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, HostSource, Plugin, UploadOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("collectives");
//! f.set_num_replicas(2)?;
//! let x = f.parameter(ElementType::F32, &[2])?;
//! let both = Collective::groups(&[&[0, 1]]);
//! let total = x.all_reduce(&both, |_, a, b| a.add(b))?;               // the sum over replicas
//! let gathered = x.all_gather(0, &both)?;                               // [x of 0, x of 1]
//! let swapped = x.collective_permute(&[(0, 1), (1, 0)], None)?;         // the other's x
//! let program = f.finish(&[&total, &gathered, &swapped])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2))?;
//! let exe = client.compile(&program, &CompileOptions::new().num_replicas(2))?;
//! let per_device: Vec<Vec<Buffer>> = exe
//!     .addressable_devices()
//!     .iter()
//!     .enumerate()
//!     .map(|(k, d)| Ok(vec![client.upload_with(HostSource::slice(&[k as f32, 10.], &[2]), &UploadOptions::new().device(d))?]))
//!     .collect::<Result<_, pjrt_client::Error>>()?;
//! let outputs = exe.execute_sharded(&per_device, &ExecuteOptions::new())?;
//! assert_eq!(outputs[0][0].to_vec::<f32>()?, [1., 20.]);
//! assert_eq!(outputs[1][1].to_vec::<f32>()?, [0., 10., 1., 10.]);
//! assert_eq!(outputs[1][2].to_vec::<f32>()?, [0., 10.]);
//! # Ok(()) }
//! ```

use super::{attribute_error, operand_error, tensor, tensor_type};
use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, Op, Value};
use crate::types::Type;
use pjrt_types::StableHloVersion;

/// Who takes part in a collective: replica groups (each a list of replica, or with
/// `use_global_device_ids` device, numbers; all groups of one size), and an optional channel
/// (needed for cross-partition collectives).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Collective {
    /// The groups; each collective combines within a group.
    pub replica_groups: Vec<Vec<i64>>,
    /// `#stablehlo.channel_handle<handle = N, type = T>`: `(handle, type)`; type 1 is
    /// device-to-device (0 invalid, 2 device-to-host, 3 host-to-device), handles >= 1.
    pub channel_handle: Option<(i64, i64)>,
    /// The group members are global device ids (`use_global_device_ids`; needs a channel).
    pub use_global_device_ids: bool,
}

impl Collective {
    /// Replica groups, no channel.
    pub fn groups(groups: &[&[i64]]) -> Collective {
        Collective { replica_groups: groups.iter().map(|g| g.to_vec()).collect(), ..Collective::default() }
    }

    /// Sets the channel handle `(handle, type)`.
    pub fn channel(mut self, handle: i64, kind: i64) -> Collective {
        self.channel_handle = Some((handle, kind));
        self
    }

    /// Sets `use_global_device_ids`.
    pub fn global_device_ids(mut self, yes: bool) -> Collective {
        self.use_global_device_ids = yes;
        self
    }

    /// Checks the groups (non-empty, one size, numbers >= 0 and each at most once) and returns
    /// the group size.
    fn check(&self, op: &'static str) -> Result<i64, BuildError> {
        let size = self.replica_groups.first().map(|g| g.len()).unwrap_or(0);
        let mut seen = std::collections::HashSet::new();
        let ok = size > 0
            && self.replica_groups.iter().all(|g| g.len() == size)
            && self.replica_groups.iter().flatten().all(|&r| r >= 0 && seen.insert(r));
        if !ok {
            return Err(attribute_error(
                op,
                format!(
                    "replica groups {:?} must be non-empty, of one size, with each number >= 0 at most once",
                    self.replica_groups
                ),
            ));
        }
        if self.use_global_device_ids && self.channel_handle.is_none() {
            return Err(attribute_error(op, "use_global_device_ids needs a channel handle"));
        }
        if let Some((handle, kind)) = self.channel_handle {
            if handle < 1 || !(1..=3).contains(&kind) {
                return Err(attribute_error(op, format!("channel handle {handle} must be >= 1, type {kind} in 1..=3")));
            }
        }
        Ok(size as i64)
    }

    fn attributes<'a, 'f>(&self, mut op: Op<'a, 'f>, global_ids: bool) -> Op<'a, 'f> {
        let size = self.replica_groups.first().map(|g| g.len()).unwrap_or(0);
        op = op.attr("replica_groups", emit::i64_matrix(&self.replica_groups, size));
        if let Some((handle, kind)) = self.channel_handle {
            op = op.attr("channel_handle", channel_handle_attr(handle, kind));
        }
        if global_ids && self.use_global_device_ids {
            op = op.attr("use_global_device_ids", pjrt_stablehlo::ir::Attr::Unit);
        }
        op
    }
}

impl<'f> Value<'f> {
    /// `stablehlo.all_reduce`: this tensor combined element by element across each group with
    /// `body(f, a, b)` (scalars); every member gets the result.
    pub fn all_reduce(
        &self,
        collective: &Collective,
        body: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.all_reduce";
        let t = tensor(OP, self)?;
        collective.check(OP)?;
        let region = scalar_region(self.func, OP, t.scalar().into(), body)?;
        let mut op = collective.attributes(Op::new(OP, vec![self], vec![self.ty.clone()]), true);
        op.regions.push(region);
        self.func.emit1(op)
    }

    /// `stablehlo.all_gather`: the group members' tensors concatenated along `dimension`.
    pub fn all_gather(&self, dimension: i64, collective: &Collective) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.all_gather";
        let t = tensor(OP, self)?;
        let size = collective.check(OP)?;
        let d = check_dimension(OP, t, dimension)?;
        let mut dims = t.dims.clone();
        dims[d] = dims[d].checked_mul(size).ok_or_else(|| attribute_error(OP, "the gathered size overflows"))?;
        let op = Op::new(OP, vec![self], vec![tensor_type(t.element, dims)])
            .attr("all_gather_dim", emit::i64_attr(dimension));
        self.func.emit1(collective.attributes(op, true))
    }

    /// `stablehlo.reduce_scatter`: this tensor combined across each group with `body`, then
    /// split along `dimension` (divisible by the group size): member `k` gets part `k`.
    pub fn reduce_scatter(
        &self,
        dimension: i64,
        collective: &Collective,
        body: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.reduce_scatter";
        let t = tensor(OP, self)?;
        let size = collective.check(OP)?;
        let d = check_dimension(OP, t, dimension)?;
        if t.dims[d] % size != 0 {
            return Err(operand_error(
                OP,
                &[self],
                format!("dimension {d} must be divisible by the group size {size}"),
            ));
        }
        let mut dims = t.dims.clone();
        dims[d] /= size;
        let region = scalar_region(self.func, OP, t.scalar().into(), body)?;
        let op = Op::new(OP, vec![self], vec![tensor_type(t.element, dims)])
            .attr("scatter_dimension", emit::i64_attr(dimension));
        let mut op = collective.attributes(op, true);
        op.regions.push(region);
        self.func.emit1(op)
    }

    /// `stablehlo.all_to_all`: this tensor split along `split_dimension` into one part per
    /// group member; part `k` goes to member `k`, and the received parts are concatenated
    /// along `concat_dimension`.
    pub fn all_to_all(
        &self,
        split_dimension: i64,
        concat_dimension: i64,
        collective: &Collective,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.all_to_all";
        let t = tensor(OP, self)?;
        let size = collective.check(OP)?;
        let split = check_dimension(OP, t, split_dimension)?;
        let concat = check_dimension(OP, t, concat_dimension)?;
        if t.dims[split] % size != 0 {
            return Err(operand_error(
                OP,
                &[self],
                format!("split dimension {split} must be divisible by the group size {size}"),
            ));
        }
        let mut dims = t.dims.clone();
        dims[split] /= size;
        dims[concat] =
            dims[concat].checked_mul(size).ok_or_else(|| attribute_error(OP, "the result size overflows"))?;
        let op = Op::new(OP, vec![self], vec![tensor_type(t.element, dims)])
            .attr("split_dimension", emit::i64_attr(split_dimension))
            .attr("concat_dimension", emit::i64_attr(concat_dimension))
            .attr("split_count", emit::i64_attr(size));
        self.func.emit1(collective.attributes(op, false))
    }

    /// `stablehlo.collective_permute`: each `(source, target)` pair sends this tensor from
    /// replica `source` to `target`; a replica no pair targets gets zeros. Each source and
    /// each target appears at most once.
    pub fn collective_permute(
        &self,
        pairs: &[(i64, i64)],
        channel_handle: Option<(i64, i64)>,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.collective_permute";
        tensor(OP, self)?;
        let (mut sources, mut targets) = (std::collections::HashSet::new(), std::collections::HashSet::new());
        if !pairs.iter().all(|&(s, t)| s >= 0 && t >= 0 && sources.insert(s) && targets.insert(t)) {
            return Err(attribute_error(
                OP,
                format!("source-target pairs {pairs:?}: numbers >= 0, each source and each target at most once"),
            ));
        }
        let rows: Vec<Vec<i64>> = pairs.iter().map(|&(s, t)| vec![s, t]).collect();
        let mut op =
            Op::new(OP, vec![self], vec![self.ty.clone()]).attr("source_target_pairs", emit::i64_matrix(&rows, 2));
        if let Some((handle, kind)) = channel_handle {
            if handle < 1 || !(1..=3).contains(&kind) {
                return Err(attribute_error(OP, format!("channel handle {handle} must be >= 1, type {kind} in 1..=3")));
            }
            op = op.attr("channel_handle", channel_handle_attr(handle, kind));
        }
        self.func.emit1(op)
    }
}

impl Function {
    /// `stablehlo.all_reduce` of several tensors of one element type in one collective (a
    /// gradient sync of many parameters): each is combined element by element across each
    /// group with the same `body`. Needs StableHLO 1.5.0 (variadic collectives).
    pub fn all_reduce_many<'f>(
        &'f self,
        values: &[&Value<'f>],
        collective: &Collective,
        body: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
    ) -> Result<Vec<Value<'f>>, BuildError> {
        const OP: &str = "stablehlo.all_reduce";
        let Some(first) = values.first() else {
            return Err(attribute_error(OP, "all_reduce_many needs at least one value"));
        };
        let element = tensor(OP, first)?.element;
        for v in values {
            if tensor(OP, v)?.element != element {
                return Err(operand_error(
                    OP,
                    values,
                    "every value needs the same element type (one body combines them)",
                ));
            }
        }
        collective.check(OP)?;
        let scalar = Type::Tensor(crate::types::TensorType { element, dims: Vec::new() });
        let region = scalar_region(self, OP, scalar, body)?;
        let types = values.iter().map(|v| v.ty.clone()).collect();
        let mut op = collective.attributes(Op::new(OP, values.to_vec(), types), true);
        if values.len() > 1 {
            op.since = StableHloVersion::new(1, 5, 0);
        }
        op.regions.push(region);
        self.emit(op)
    }
}

fn check_dimension(op: &'static str, t: &crate::types::TensorType, dimension: i64) -> Result<usize, BuildError> {
    if dimension < 0 || dimension as usize >= t.rank() {
        return Err(attribute_error(op, format!("dimension {dimension} is out of range for {t}")));
    }
    Ok(dimension as usize)
}

/// `#stablehlo.channel_handle<handle = H, type = T>`.
fn channel_handle_attr(handle: i64, kind: i64) -> pjrt_stablehlo::ir::Attr {
    emit::struct_attr("channel_handle", vec![("handle", emit::i64_attr(handle)), ("type", emit::i64_attr(kind))])
}

/// The region of a reducing collective: two scalars in, one out.
fn scalar_region<'f>(
    func: &'f Function,
    op: &'static str,
    scalar: Type,
    body: impl FnOnce(&'f Function, &Value<'f>, &Value<'f>) -> Result<Value<'f>, BuildError>,
) -> Result<pjrt_stablehlo::ir::Region, BuildError> {
    let (region, returned) =
        func.region(op, true, &[scalar.clone(), scalar.clone()], |f, a| Ok(vec![body(f, &a[0], &a[1])?]))?;
    if returned != [scalar.clone()] {
        return Err(BuildError::RegionResults {
            op,
            returned: emit::types_for_message(&returned),
            expected: scalar.to_string(),
        });
    }
    Ok(region)
}
