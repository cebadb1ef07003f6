//! Multi-device programs: the module's replica and partition counts (`mhlo.num_replicas`,
//! `mhlo.num_partitions`) and GSPMD sharding annotations (`mhlo.sharding`) on parameters,
//! results and intermediate values, so an SPMD program written in Rust runs with
//! [`pjrt_client::LoadedExecutable::execute_sharded`].
//!
//! ```
//! use pjrt_builder::{DotDimensions, Function, ParameterOptions, Sharding};
//! use pjrt_client::{Buffer, Client, ClientOptions, CompileOptions, ElementType, Placement, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // y = x @ w over 2 partitions: x split by rows, w replicated, y split by rows.
//! let f = Function::new("spmd");
//! f.set_num_partitions(2)?;
//! let rows = Sharding::tiled(&[2, 1]);
//! let x = f.parameter_with(ElementType::F32, &[4, 3], ParameterOptions::new().sharding(&rows))?;
//! let w = f.parameter_with(ElementType::F32, &[3, 2], ParameterOptions::new().sharding(&Sharding::Replicated))?;
//! let y = x.dot_general(&w, &DotDimensions::matmul(), None)?;
//! f.set_output_sharding(0, &rows)?;
//! let program = f.finish(&[&y])?;
//!
//! let plugin = Plugin::load(&pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
//! let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2))?;
//! let options = CompileOptions::new().num_partitions(2).use_spmd_partitioning(true);
//! let exe = client.compile(&program, &options)?;
//! // Each device gets its 2 rows of x (all ones) and all of w.
//! let w_values: Vec<f32> = (0..6).map(|i| i as f32).collect();
//! let mut per_device: Vec<Vec<Buffer>> = Vec::new();
//! for device in &exe.addressable_devices() {
//!     let x = client.buffer_from_slice(&[1f32; 6], &[2, 3], Placement::Device(device))?;
//!     let w = client.buffer_from_slice(&w_values, &[3, 2], Placement::Device(device))?;
//!     per_device.push(vec![x, w]);
//! }
//! let arguments: Vec<Vec<&Buffer>> = per_device.iter().map(|l| l.iter().collect()).collect();
//! let run = exe.execute_sharded(&arguments)?;
//! run.wait()?;
//! assert_eq!(run.outputs[1][0].dimensions()?, [2, 2]);
//! assert_eq!(run.outputs[1][0].to_vec::<f32>()?, [6., 9., 6., 9.]);
//! # Ok(()) }
//! ```

use std::fmt;

use crate::emit;
use crate::error::BuildError;
use crate::function::{Function, ParameterOptions, Value};
use crate::ops::misc::CustomCall;

/// A GSPMD sharding (the `mhlo.sharding` string XLA's partitioner reads).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sharding {
    /// Every device holds the whole value (`{replicated}`).
    Replicated,
    /// One device holds the whole value (`{maximal device=N}`).
    Maximal(i64),
    /// Split into `tiles[i]` parts along dimension `i`, on devices `0..product` in order
    /// (`{devices=[2,1]<=[2]}`); with `replicate_last`, the last entry of `tiles` is not a
    /// dimension but a count of replicas of each tile (`last_tile_dim_replicate`).
    Tiled {
        /// Parts per dimension (each >= 1), plus the replica count when `replicate_last`.
        tiles: Vec<i64>,
        /// Whether the last entry of `tiles` counts replicas.
        replicate_last: bool,
    },
    /// Partitioned by hand (`{manual}`): the program works on each device's part itself.
    Manual,
}

impl Sharding {
    /// Split into `tiles[i]` parts along dimension `i` (one entry per dimension).
    pub fn tiled(tiles: &[i64]) -> Sharding {
        Sharding::Tiled { tiles: tiles.to_vec(), replicate_last: false }
    }

    /// Checks the sharding against a value of rank `rank`.
    fn check(&self, rank: usize) -> Result<(), BuildError> {
        if let Sharding::Tiled { tiles, replicate_last } = self {
            let expected = rank + usize::from(*replicate_last);
            let product = tiles.iter().try_fold(1i64, |p, &t| if t >= 1 { p.checked_mul(t) } else { None });
            if tiles.len() != expected || product.is_none() {
                return Err(BuildError::InvalidAttribute {
                    op: "mhlo.sharding",
                    message: format!(
                        "tiles {tiles:?} need {expected} entries (one per dimension of a rank-{rank} value{}), each >= 1",
                        if *replicate_last { ", then the replica count" } else { "" }
                    ),
                });
            }
        }
        if let Sharding::Maximal(device) = self {
            if *device < 0 {
                return Err(BuildError::InvalidAttribute {
                    op: "mhlo.sharding",
                    message: format!("device {device} must be >= 0"),
                });
            }
        }
        Ok(())
    }
}

impl fmt::Display for Sharding {
    /// The `mhlo.sharding` string (without the MLIR quotes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sharding::Replicated => f.write_str("{replicated}"),
            Sharding::Maximal(device) => write!(f, "{{maximal device={device}}}"),
            Sharding::Manual => f.write_str("{manual}"),
            Sharding::Tiled { tiles, replicate_last } => {
                let list: Vec<String> = tiles.iter().map(|t| t.to_string()).collect();
                let devices: i64 = tiles.iter().product();
                write!(f, "{{devices=[{}]<=[{devices}]", list.join(","))?;
                if *replicate_last {
                    f.write_str(" last_tile_dim_replicate")?;
                }
                f.write_str("}")
            }
        }
    }
}

impl ParameterOptions {
    /// The parameter's sharding (`mhlo.sharding`): how its argument is split across
    /// partitions (each device is handed its part).
    pub fn sharding(self, sharding: &Sharding) -> ParameterOptions {
        self.attribute("mhlo.sharding", &emit::string_attr(&sharding.to_string()))
    }
}

impl Function {
    /// Sets `mhlo.num_replicas` (>= 1): compile with as many replicas
    /// (`CompileOptions::num_replicas`).
    pub fn set_num_replicas(&self, replicas: i64) -> Result<(), BuildError> {
        self.set_count("mhlo.num_replicas", replicas)
    }

    /// Sets `mhlo.num_partitions` (>= 1): compile with as many partitions and SPMD partitioning
    /// (`CompileOptions::num_partitions(n).use_spmd_partitioning(true)`).
    pub fn set_num_partitions(&self, partitions: i64) -> Result<(), BuildError> {
        self.set_count("mhlo.num_partitions", partitions)
    }

    fn set_count(&self, name: &'static str, count: i64) -> Result<(), BuildError> {
        let Ok(count) = i32::try_from(count) else {
            return Err(BuildError::InvalidAttribute { op: name, message: format!("{count} does not fit an i32") });
        };
        if count < 1 {
            return Err(BuildError::InvalidAttribute { op: name, message: format!("{count} must be >= 1") });
        }
        self.set_module_attribute(name, emit::i32_attr(count));
        Ok(())
    }

    /// Sets the sharding of output `index` of the finished function (`mhlo.sharding` on the
    /// result): how each device holds its part of it. [`Function::finish`] refuses an index past
    /// its outputs.
    pub fn set_output_sharding(&self, index: usize, sharding: &Sharding) -> Result<(), BuildError> {
        if let Sharding::Tiled { tiles, .. } = sharding {
            if tiles.iter().any(|&t| t < 1) {
                return Err(BuildError::InvalidAttribute {
                    op: "mhlo.sharding",
                    message: format!("tiles {tiles:?} must each be >= 1"),
                });
            }
        }
        self.set_result_attribute(index, "mhlo.sharding", emit::string_attr(&sharding.to_string()));
        Ok(())
    }
}

impl<'f> Value<'f> {
    /// A sharding constraint (JAX's `with_sharding_constraint`): this value, which the
    /// partitioner lays out as `sharding` here (`stablehlo.custom_call @Sharding`).
    pub fn with_sharding(&self, sharding: &Sharding) -> Result<Value<'f>, BuildError> {
        sharding.check(self.dims().len())?;
        let call = CustomCall::new("Sharding").attribute("mhlo.sharding", &emit::string_attr(&sharding.to_string()));
        let mut results = self.func.custom_call(&call, &[self], std::slice::from_ref(&self.ty))?;
        Ok(results.remove(0))
    }
}
