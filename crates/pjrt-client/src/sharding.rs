//! Multi-device helpers: split host arrays into per-device shards, upload one argument list per
//! device, and gather per-device outputs back into global arrays.
//!
//! A program compiled with R replicas and/or P partitions runs on R×P devices
//! ([`LoadedExecutable::addressable_devices`], replica-major) and takes one argument list per
//! device ([`LoadedExecutable::execute_sharded`]). For the common one-dimensional layouts —
//! data-parallel replicas, or an SPMD program whose arguments are sharded along one axis over all
//! its partitions (`mhlo.sharding = "{devices=[N,1]<=[N]}"`) — each argument is either split
//! along one axis into as many equal shards as there are devices, or replicated (given whole to
//! every device). [`Sharding`] says which, per argument and per output.
//!
//! ```
//! use pjrt_client::sharding::{gather_outputs, gather_slices, shard_slice, Sharding};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, HostArray, Program};
//!
//! // Plain slices: split a 4×2 array by rows over 2 devices and put it back together.
//! let x: Vec<f32> = (0..8).map(|i| i as f32).collect();
//! let parts = shard_slice(&x, &[4, 2], 0, 2)?;
//! assert_eq!(parts[1], [4., 5., 6., 7.]);
//! assert_eq!(gather_slices(&parts, &[2, 2], 0)?, (x.clone(), vec![4, 2]));
//!
//! // A data-parallel program on 2 devices: x split by rows, w replicated, y gathered by rows.
//! # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2))?;
//! let program = Program::mlir_text(r#"
//!   func.func @main(%x: tensor<2x2xf32>, %w: tensor<2xf32>) -> tensor<2x2xf32> {
//!     %0 = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<2xf32>) -> tensor<2x2xf32>
//!     %1 = stablehlo.multiply %x, %0 : tensor<2x2xf32>
//!     return %1 : tensor<2x2xf32>
//!   }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new().num_replicas(2))?;
//! let xa = HostArray::from_elements(vec![4, 2], &x)?;
//! let wa = HostArray::from_elements(vec![2], &[1f32, 10.])?;
//! // Upload x split by rows and w whole to each device, run, gather y by rows.
//! let arguments = exe.upload_sharded(&[xa, wa], &[Sharding::Split(0), Sharding::Replicated])?;
//! let outputs = exe.execute_sharded(&arguments, &ExecuteOptions::new())?;
//! let y = gather_outputs(&outputs, &[Sharding::Split(0)])?;
//! assert_eq!(y[0].dims(), [4, 2]);
//! assert_eq!(y[0].to_vec::<f32>()?, [0., 10., 2., 30., 4., 50., 6., 70.]);
//! # Ok::<(), pjrt_client::Error>(())
//! ```

use crate::buffer::upload::UploadOptions;
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::executable::LoadedExecutable;
use crate::host_array::{dims_to_sizes, interleave, split_along, HostArray};

/// How one argument (or output) is laid out over the devices of an execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Sharding {
    /// Every device gets (or holds) the whole array. For an output: device 0's copy is taken.
    #[default]
    Replicated,
    /// Split into equal shards along this axis, shard `k` on device `k`.
    Split(usize),
}

impl Sharding {
    /// `None` is [`Sharding::Replicated`], `Some(axis)` is [`Sharding::Split`].
    pub fn from_axis(axis: Option<usize>) -> Self {
        axis.map_or(Sharding::Replicated, Sharding::Split)
    }
}

impl From<Option<usize>> for Sharding {
    fn from(axis: Option<usize>) -> Self {
        Sharding::from_axis(axis)
    }
}

/// Splits a row-major array (`data` of dimensions `dims`) into `n` equal shards along `axis`,
/// as [`HostArray::split`] does for host arrays. Returns each shard's elements; every shard has
/// `dims` with `dims[axis] / n` on `axis`.
pub fn shard_slice<T: Copy>(data: &[T], dims: &[i64], axis: usize, n: usize) -> Result<Vec<Vec<T>>> {
    match dims_to_sizes(dims) {
        Some((sizes, count)) if count == data.len() => split_along(data, &sizes, 1, axis, n),
        _ => Err(Error::invalid(format!("{} elements do not make an array of dimensions {dims:?}", data.len()))),
    }
}

/// Concatenates equal row-major shards, each of dimensions `part_dims`, along `axis`, as
/// [`HostArray::concatenate`] does for host arrays. Returns the elements and the dimensions of
/// the whole.
pub fn gather_slices<T: Copy, P: AsRef<[T]>>(
    parts: &[P],
    part_dims: &[i64],
    axis: usize,
) -> Result<(Vec<T>, Vec<i64>)> {
    if parts.is_empty() {
        return Err(Error::invalid("nothing to gather"));
    }
    let Some((part_shape, part_len)) = dims_to_sizes(part_dims) else {
        return Err(Error::invalid(format!("{part_dims:?} are not the dimensions of an array")));
    };
    if axis >= part_shape.len() {
        return Err(Error::invalid(format!("cannot gather rank-{} arrays along axis {axis}", part_shape.len())));
    }
    if let Some(bad) = parts.iter().position(|p| p.as_ref().len() != part_len) {
        return Err(Error::invalid(format!(
            "part {bad} has {} elements, not {part_len} (dimensions {part_dims:?})",
            parts[bad].as_ref().len()
        )));
    }
    let outer: usize = part_shape[..axis].iter().product();
    let chunk: usize = part_shape[axis..].iter().product();
    let rows: Vec<(&[T], usize)> = parts.iter().map(|p| (p.as_ref(), chunk)).collect();
    let data = interleave(&rows, outer);
    let mut dims = part_dims.to_vec();
    dims[axis] *= parts.len() as i64;
    Ok((data, dims))
}

/// One argument list per device: `inputs[i]` laid out by `shardings[i]` over `devices` devices.
pub fn per_device_arrays(inputs: &[HostArray], shardings: &[Sharding], devices: usize) -> Result<Vec<Vec<HostArray>>> {
    if shardings.len() != inputs.len() {
        return Err(Error::invalid(format!("{} inputs but {} shardings", inputs.len(), shardings.len())));
    }
    let mut lists = vec![Vec::with_capacity(inputs.len()); devices];
    for (i, (input, sharding)) in inputs.iter().zip(shardings).enumerate() {
        match sharding {
            Sharding::Replicated => lists.iter_mut().for_each(|l| l.push(input.clone())),
            Sharding::Split(axis) => {
                let shards = input.split(*axis, devices).map_err(|e| match e {
                    Error::InvalidArgument(m) => Error::InvalidArgument(format!("input {i}: {m}")),
                    other => other,
                })?;
                for (list, piece) in lists.iter_mut().zip(shards) {
                    list.push(piece);
                }
            }
        }
    }
    Ok(lists)
}

/// Gathers output `index` of an execution's outputs per device (what
/// [`LoadedExecutable::execute_sharded`] returns): concatenated along the axis for
/// [`Sharding::Split`], device 0's copy for [`Sharding::Replicated`].
pub fn gather_output(outputs: &[Vec<Buffer>], index: usize, sharding: Sharding) -> Result<HostArray> {
    let first = outputs.first().ok_or_else(|| Error::invalid("the execution has no devices"))?;
    if index >= first.len() {
        return Err(Error::invalid(format!("output {index} does not exist ({} outputs)", first.len())));
    }
    match sharding {
        Sharding::Replicated => first[index].to_host_array(),
        Sharding::Split(axis) => {
            let parts: Vec<HostArray> =
                outputs.iter().map(|outs| outs[index].to_host_array()).collect::<Result<_>>()?;
            HostArray::concatenate(&parts, axis)
        }
    }
}

/// Every output of an execution's outputs per device, gathered by `shardings` (missing
/// entries: replicated).
pub fn gather_outputs(outputs: &[Vec<Buffer>], shardings: &[Sharding]) -> Result<Vec<HostArray>> {
    let count = outputs.first().map_or(0, |o| o.len());
    (0..count).map(|i| gather_output(outputs, i, shardings.get(i).copied().unwrap_or_default())).collect()
}

impl LoadedExecutable {
    /// Uploads one argument list per addressable device: `inputs[i]` split along its axis into
    /// one shard per device, or given whole to each device ([`Sharding::Replicated`]). Pass the
    /// result to [`LoadedExecutable::execute_sharded`], and its outputs to [`gather_outputs`].
    pub fn upload_sharded(&self, inputs: &[HostArray], shardings: &[Sharding]) -> Result<Vec<Vec<Buffer>>> {
        let devices = self.addressable_devices();
        let lists = per_device_arrays(inputs, shardings, devices.len())?;
        let mut buffers = Vec::with_capacity(devices.len());
        for (device, list) in devices.iter().zip(&lists) {
            let mut row = Vec::with_capacity(list.len());
            for (i, array) in list.iter().enumerate() {
                row.push(self.client().upload_with(array, &UploadOptions::new().device(device)).map_err(
                    |e| match e {
                        Error::InvalidArgument(m) => Error::InvalidArgument(format!("input {i}: {m}")),
                        other => other,
                    },
                )?);
            }
            buffers.push(row);
        }
        Ok(buffers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_round_trip() {
        let data: Vec<i32> = (0..24).collect();
        let shape = [2i64, 4, 3];
        for (axis, n) in [(0, 2), (1, 4), (1, 2), (2, 3)] {
            let parts = shard_slice(&data, &shape, axis, n).unwrap();
            let mut part_shape = shape.to_vec();
            part_shape[axis] /= n as i64;
            let (back, back_shape) = gather_slices(&parts, &part_shape, axis).unwrap();
            assert_eq!((back, back_shape), (data.clone(), shape.to_vec()), "axis {axis}, {n} parts");
            // Same layout as the HostArray helpers.
            let a = HostArray::from_elements(shape.to_vec(), &data).unwrap();
            let npy_parts = a.split(axis, n).unwrap();
            for (p, q) in parts.iter().zip(&npy_parts) {
                assert_eq!(*p, q.to_vec::<i32>().unwrap());
            }
            assert_eq!(HostArray::concatenate(&npy_parts, axis).unwrap(), a);
        }
        let cols = shard_slice(&data[..12], &[4, 3], 1, 3).unwrap();
        assert_eq!(cols[1], vec![1, 4, 7, 10]);
        assert!(shard_slice(&data, &shape, 1, 3).is_err());
        assert!(shard_slice(&data, &shape, 3, 1).is_err());
        assert!(shard_slice(&data[..5], &shape, 0, 1).is_err());
        assert!(gather_slices::<i32, Vec<i32>>(&[], &[1], 0).is_err());
        assert!(gather_slices(&[vec![1, 2], vec![3]], &[2], 0).is_err());
    }

    #[test]
    fn per_device_lists() {
        let x = HostArray::from_elements(vec![4, 2], &(0..8).map(|v| v as f32).collect::<Vec<f32>>()).unwrap();
        let w = HostArray::from_elements(vec![2], &[1f32, 2.]).unwrap();
        let lists = per_device_arrays(&[x, w.clone()], &[Sharding::Split(0), Sharding::Replicated], 4).unwrap();
        assert_eq!(lists.len(), 4);
        assert_eq!(lists[3][0].to_vec::<f32>().unwrap(), vec![6., 7.]);
        assert_eq!(lists[2][1], w);
        assert!(per_device_arrays(std::slice::from_ref(&w), &[], 2).is_err());
        assert!(per_device_arrays(&[w], &[Sharding::Split(0)], 4).is_err());
        assert_eq!(Sharding::from(Some(1)), Sharding::Split(1));
        assert_eq!(Sharding::from(None), Sharding::Replicated);
    }
}
