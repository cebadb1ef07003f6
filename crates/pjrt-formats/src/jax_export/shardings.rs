//! Shardings: JAX's named and HLO shardings as the artifact records them, and the device
//! layouts ([`Sharding`]) this crate runs a multi-device export with.

use pjrt_client::sharding::Sharding;

use super::{InputOrOutput, JaxExport, ModuleArgument, Unrunnable};
use crate::{Error, Result};

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
                <OpSharding as prost::Message>::decode(bytes.as_slice()).ok().map(|t| t.kind == op_sharding::REPLICATED)
            }
        }
    }
}

/// The fields of `xla.OpSharding` (xla_data.proto) this crate reads.
#[derive(Clone, PartialEq, prost::Message)]
struct OpSharding {
    #[prost(int32, tag = "1")]
    kind: i32,
    #[prost(int64, repeated, tag = "3")]
    tile_assignment_dimensions: Vec<i64>,
    #[prost(int64, repeated, tag = "4")]
    tile_assignment_devices: Vec<i64>,
    #[prost(bool, tag = "6")]
    replicate_on_last_tile_dim: bool,
    #[prost(int32, repeated, tag = "8")]
    last_tile_dims: Vec<i32>,
    #[prost(int64, repeated, tag = "9")]
    iota_reshape_dims: Vec<i64>,
    #[prost(int32, repeated, tag = "10")]
    iota_transpose_perm: Vec<i32>,
}

/// `OpSharding.Type` values.
mod op_sharding {
    pub(super) const REPLICATED: i32 = 0;
    pub(super) const OTHER: i32 = 3;
}

/// The layout an HLO sharding gives over `devices` devices: replicated, or tiled along one
/// dimension into `devices` pieces given to devices 0, 1, ... in order (the tile assignment's
/// device list, or an iota whose transpose keeps the order). Anything else: why not.
fn hlo_sharding_layout(bytes: &[u8], devices: usize) -> std::result::Result<Sharding, String> {
    let s = <OpSharding as prost::Message>::decode(bytes).map_err(|e| format!("not a valid OpSharding: {e}"))?;
    match s.kind {
        op_sharding::REPLICATED => return Ok(Sharding::Replicated),
        op_sharding::OTHER => {}
        kind => return Err(format!("OpSharding type {kind}")),
    }
    if s.replicate_on_last_tile_dim || !s.last_tile_dims.is_empty() {
        return Err("partially replicated tiles".to_string());
    }
    let split: Vec<(usize, i64)> =
        s.tile_assignment_dimensions.iter().copied().enumerate().filter(|&(_, n)| n != 1).collect();
    let dim = match split.as_slice() {
        [] => return Ok(Sharding::Replicated),
        [(dim, n)] if usize::try_from(*n).ok() == Some(devices) => *dim,
        _ => return Err(format!("tiles {:?}", s.tile_assignment_dimensions)),
    };
    let in_order = if s.tile_assignment_devices.is_empty() {
        // An iota tile assignment: devices 0..n reshaped and transposed; in order when the
        // transpose is the identity.
        s.iota_transpose_perm.iter().enumerate().all(|(i, &p)| usize::try_from(p).ok() == Some(i))
    } else {
        s.tile_assignment_devices.iter().enumerate().all(|(i, &d)| usize::try_from(d).ok() == Some(i))
    };
    if !in_order {
        return Err(format!(
            "devices {:?} (iota {:?} transposed {:?})",
            s.tile_assignment_devices, s.iota_reshape_dims, s.iota_transpose_perm
        ));
    }
    Ok(Sharding::Split(dim))
}

impl JaxExport {
    /// How each module argument and each output is laid out over the devices, for
    /// [`pjrt_client::LoadedExecutable::upload_sharded`]: arguments in the order of
    /// [`JaxExport::module_arguments`] (the platform index, if any, is replicated), outputs in
    /// the order of [`JaxExport::out_avals`]. One device: everything is replicated. More devices:
    /// each sharding must be replicated or split along one array dimension over every mesh axis
    /// in mesh order (what a 1-D mesh gives), or, as an HLO sharding (exports of JAX before 0.9),
    /// replicated or tiled along one dimension over every device in device order; others are
    /// refused ([`Unrunnable`]), as are token arguments.
    pub fn device_shardings(&self) -> Result<(Vec<Sharding>, Vec<Sharding>)> {
        let devices = self.nr_devices as usize;
        let convert = |value: InputOrOutput, s: Option<&JaxSharding>| -> Result<Sharding> {
            if devices == 1 {
                return Ok(Sharding::Replicated);
            }
            let named = match s {
                Some(JaxSharding::Named(n)) => n,
                Some(JaxSharding::HloProto(bytes)) => {
                    return hlo_sharding_layout(bytes, devices)
                        .map_err(|what| Unrunnable::HloSharding { value, devices: self.nr_devices, what }.into());
                }
                _ => return Err(Unrunnable::NoSharding { value, devices: self.nr_devices }.into()),
            };
            // Checked: a hostile mesh may claim sizes whose product overflows.
            let mesh_size = named.mesh.axis_sizes.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n as u64));
            let split: Vec<(usize, &Vec<String>)> =
                named.partitions.iter().enumerate().filter(|(_, axes)| !axes.is_empty()).collect();
            let unsupported = || -> Error {
                Unrunnable::Sharding {
                    value,
                    partitions: named.partitions.clone(),
                    axis_names: named.mesh.axis_names.clone(),
                    axis_sizes: named.mesh.axis_sizes.clone(),
                }
                .into()
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
        let inputs = self
            .module_arguments()
            .into_iter()
            .map(|argument| match argument {
                ModuleArgument::PlatformIndex => Ok(Sharding::Replicated),
                ModuleArgument::Token(_) => Err(self.ordered_effects_error()),
                ModuleArgument::Input(i) => convert(InputOrOutput::Input(i), self.in_shardings.get(i)),
            })
            .collect::<Result<Vec<_>>>()?;
        let outputs = (0..self.out_avals.len())
            .map(|i| convert(InputOrOutput::Output(i), self.out_shardings.get(i)))
            .collect::<Result<Vec<_>>>()?;
        Ok((inputs, outputs))
    }

    /// True if the module carries Shardy (`sdy`) shardings, so it is compiled with Shardy.
    pub fn uses_shardy(&self) -> bool {
        self.mlir_module.windows(4).any(|w| w == b"sdy.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto(s: OpSharding) -> Vec<u8> {
        prost::Message::encode_to_vec(&s)
    }

    fn tiled(dims: &[i64]) -> OpSharding {
        OpSharding { kind: op_sharding::OTHER, tile_assignment_dimensions: dims.to_vec(), ..Default::default() }
    }

    #[test]
    fn hlo_shardings_split_over_every_device_in_order_or_are_refused() {
        // What JAX 0.4.30 writes for rows over 4 devices: tiles [4, 1], an iota of 4.
        let rows = OpSharding { iota_reshape_dims: vec![4], iota_transpose_perm: vec![0], ..tiled(&[4, 1]) };
        assert_eq!(hlo_sharding_layout(&proto(rows), 4), Ok(Sharding::Split(0)));
        let listed = OpSharding { tile_assignment_devices: vec![0, 1, 2, 3], ..tiled(&[1, 4]) };
        assert_eq!(hlo_sharding_layout(&proto(listed), 4), Ok(Sharding::Split(1)));
        assert_eq!(hlo_sharding_layout(&[], 4), Ok(Sharding::Replicated));
        // Devices out of order, a transposed iota, another device count, two split dimensions,
        // partial replication, a maximal sharding: refused, saying what they are.
        let shuffled = OpSharding { tile_assignment_devices: vec![1, 0, 2, 3], ..tiled(&[4, 1]) };
        assert!(hlo_sharding_layout(&proto(shuffled), 4).unwrap_err().contains("devices [1, 0, 2, 3]"));
        let transposed = OpSharding { iota_reshape_dims: vec![2, 2], iota_transpose_perm: vec![1, 0], ..tiled(&[4]) };
        assert!(hlo_sharding_layout(&proto(transposed), 4).is_err());
        assert!(hlo_sharding_layout(&proto(tiled(&[2, 1])), 4).unwrap_err().contains("tiles [2, 1]"));
        assert!(hlo_sharding_layout(&proto(tiled(&[2, 2])), 4).is_err());
        let partial = OpSharding { replicate_on_last_tile_dim: true, ..tiled(&[2, 1, 2]) };
        assert!(hlo_sharding_layout(&proto(partial), 4).unwrap_err().contains("partially replicated"));
        let maximal = OpSharding { kind: 1, ..Default::default() };
        assert!(hlo_sharding_layout(&proto(maximal), 4).unwrap_err().contains("type 1"));
        assert!(hlo_sharding_layout(&[0xff], 4).is_err());
    }
}
