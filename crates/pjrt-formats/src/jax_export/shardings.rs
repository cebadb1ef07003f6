//! Shardings: JAX's named and HLO shardings as the artifact records them, and the device
//! layouts ([`Sharding`]) this crate runs a multi-device export with.

use pjrt_client::sharding::Sharding;

use super::JaxExport;
use crate::error::{Error, Result};

/// A JAX mesh without devices: axis names and sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AbstractMesh {
    /// The size of each axis.
    pub axis_sizes: Vec<u32>,
    /// The name of each axis.
    pub axis_names: Vec<String>,
}

/// A `jax.sharding.NamedSharding`: a mesh and, for each array dimension, the mesh axes it is
/// split over.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NamedSharding {
    /// The mesh.
    pub mesh: AbstractMesh,
    /// For each array dimension the mesh axes it is partitioned over (empty: not split).
    pub partitions: Vec<Vec<String>>,
    /// Mesh axes the value is reduced over.
    pub reduced: Vec<String>,
    /// Mesh axes the value is an unreduced partial sum over.
    pub unreduced: Vec<String>,
    /// The memory kind, when one was given.
    pub memory_kind: Option<String>,
}

/// The sharding of one input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JaxSharding {
    /// No sharding was specified (JAX lets the compiler choose; one device: replicated).
    Unspecified,
    /// A serialized `xla.OpSharding` (artifacts from before JAX's named shardings).
    HloProto(Vec<u8>),
    /// A named sharding.
    Named(NamedSharding),
}

impl JaxSharding {
    /// True if every device holds the whole array; `None` when unspecified.
    pub fn is_replicated(&self) -> Option<bool> {
        match self {
            JaxSharding::Unspecified => None,
            JaxSharding::Named(n) => Some(n.partitions.iter().all(|p| p.is_empty()) && n.unreduced.is_empty()),
            JaxSharding::HloProto(bytes) => {
                // OpSharding.type (field 1): REPLICATED = 0, the proto default.
                #[derive(Clone, PartialEq, prost::Message)]
                struct OpShardingType {
                    #[prost(int32, tag = "1")]
                    kind: i32,
                }
                <OpShardingType as prost::Message>::decode(bytes.as_slice()).ok().map(|t| t.kind == 0)
            }
        }
    }
}
impl JaxExport {
    /// How each module argument and each output is laid out over the devices, for
    /// [`LoadedExecutable::upload_sharded`]: arguments in the order [`JaxExport::arrange_inputs`]
    /// gives them (the platform index, if any, is replicated), outputs in the order of
    /// [`JaxExport::out_avals`]. One device: everything is replicated. More devices: each
    /// sharding must be replicated or split along one array dimension over every mesh axis in
    /// mesh order (what a 1-D mesh gives); others are refused.
    pub fn device_shardings(&self) -> Result<(Vec<Sharding>, Vec<Sharding>)> {
        let devices = self.nr_devices as usize;
        let convert = |what: &str, i: usize, s: Option<&JaxSharding>| -> Result<Sharding> {
            if devices == 1 {
                return Ok(Sharding::Replicated);
            }
            let named = match s {
                Some(JaxSharding::Named(n)) => n,
                Some(JaxSharding::HloProto(_)) => {
                    return Err(Error::invalid(format!(
                        "{what} {i} has an HLO sharding (an export from before JAX's named shardings); only \
                         named shardings are run on several devices. Export it again with a recent JAX"
                    )))
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "{what} {i} of this {devices}-device model has no sharding (the compiler chose it); \
                         export it with in_shardings and out_shardings given to jax.jit"
                    )))
                }
            };
            // Checked: a hostile mesh may claim sizes whose product overflows.
            let mesh_size = named.mesh.axis_sizes.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n as u64));
            let split: Vec<(usize, &Vec<String>)> =
                named.partitions.iter().enumerate().filter(|(_, axes)| !axes.is_empty()).collect();
            let unsupported = || {
                Error::invalid(format!(
                    "{what} {i} is sharded as {:?} over mesh {:?} = {:?}: only replicated arrays and arrays split \
                     along one dimension over the whole mesh are supported",
                    named.partitions, named.mesh.axis_names, named.mesh.axis_sizes
                ))
            };
            if !named.unreduced.is_empty() || mesh_size != Some(devices as u64) {
                return Err(unsupported());
            }
            match split.as_slice() {
                [] => Ok(Sharding::Replicated),
                [(dim, axes)] if **axes == named.mesh.axis_names => Ok(Sharding::Split(*dim)),
                _ => Err(unsupported()),
            }
        };
        let mut inputs = Vec::with_capacity(self.module_kept_var_idx.len() + 1);
        if self.platforms.len() > 1 {
            inputs.push(Sharding::Replicated);
        }
        for &i in &self.module_kept_var_idx {
            inputs.push(convert("input", i, self.in_shardings.get(i))?);
        }
        let outputs = (0..self.out_avals.len())
            .map(|i| convert("output", i, self.out_shardings.get(i)))
            .collect::<Result<Vec<_>>>()?;
        Ok((inputs, outputs))
    }

    /// True if the module carries Shardy (`sdy`) shardings, so it is compiled with Shardy.
    pub fn uses_shardy(&self) -> bool {
        self.mlir_module.windows(4).any(|w| w == b"sdy.")
    }
}
