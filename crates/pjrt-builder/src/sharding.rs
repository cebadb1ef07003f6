//! Multi-device programs: the module's replica and partition counts (`mhlo.num_replicas`,
//! `mhlo.num_partitions`) and sharding annotations on parameters, results and intermediate
//! values, GSPMD's ([`Sharding`], `mhlo.sharding`) or Shardy's ([`Mesh`], [`AxisSharding`],
//! `sdy.sharding`; compile with `CompileOptions::use_shardy_partitioner(true)`), so an SPMD
//! program written in Rust runs with [`pjrt_client::LoadedExecutable::execute_sharded`].
//!
//! ```
//! use pjrt_builder::{DotDimensions, Function, ParameterOptions, Sharding};
//! use pjrt_client::{Buffer, Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, HostSource, Plugin, UploadOptions};
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
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2))?;
//! let options = CompileOptions::new().num_partitions(2).use_spmd_partitioning(true);
//! let exe = client.compile(&program, &options)?;
//! // Each device gets its 2 rows of x (all ones) and all of w.
//! let w_values: Vec<f32> = (0..6).map(|i| i as f32).collect();
//! let mut per_device: Vec<Vec<Buffer>> = Vec::new();
//! for device in &exe.addressable_devices() {
//!     let x = client.upload_with(HostSource::slice(&[1f32; 6], &[2, 3]), &UploadOptions::new().device(device))?;
//!     let w = client.upload_with(HostSource::slice(&w_values, &[3, 2]), &UploadOptions::new().device(device))?;
//!     per_device.push(vec![x, w]);
//! }
//! let outputs = exe.execute_sharded(&per_device, &ExecuteOptions::new())?;
//! assert_eq!(outputs[1][0].dimensions()?, [2, 2]);
//! assert_eq!(outputs[1][0].to_vec::<f32>()?, [6., 9., 6., 9.]);
//! # Ok(()) }
//! ```

use std::fmt;

use pjrt_stablehlo::ir::Attr;

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
        self.built("mhlo.sharding", emit::string_attr(&sharding.to_string()))
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
        let call =
            CustomCall::new("Sharding").built_attribute("mhlo.sharding", emit::string_attr(&sharding.to_string()));
        let mut results = self.func.custom_call(&call, &[self], std::slice::from_ref(&self.ty))?;
        Ok(results.remove(0))
    }
}

/// A Shardy device mesh (`sdy.mesh @name = <["x"=2, "y"=4]>`): named axes over the partitions,
/// added to the module with [`Function::add_mesh`].
///
/// ```
/// use pjrt_builder::{AxisSharding, Function, Mesh, ParameterOptions};
/// use pjrt_client::ElementType;
///
/// let f = Function::new("shardy");
/// f.set_num_partitions(2)?;
/// let mesh = Mesh::new("mesh", &[("x", 2)])?;
/// f.add_mesh(&mesh)?;
/// let rows = AxisSharding::new(&mesh, &[&["x"], &[]])?;
/// let x = f.parameter_with(ElementType::F32, &[4, 3], ParameterOptions::new().shardy(&rows))?;
/// let y = x.tanh()?;
/// f.set_output_shardy(0, &rows)?;
/// let text = f.to_mlir(&[&y])?;
/// assert!(text.contains("\"sdy.mesh\"() {mesh = #sdy.mesh<[\"x\"=2]>, sym_name = \"mesh\"}"), "{text}");
/// assert!(text.contains("sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}]>"));
/// # Ok::<(), pjrt_builder::BuildError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mesh {
    name: String,
    axes: Vec<(String, i64)>,
}

impl Mesh {
    /// A mesh named `name` (an identifier) with `axes` (name, size >= 1), major to minor.
    pub fn new(name: &str, axes: &[(&str, i64)]) -> Result<Mesh, BuildError> {
        let identifier = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let mut seen = std::collections::HashSet::new();
        let axes_ok = axes.iter().all(|(a, size)| !a.is_empty() && *size >= 1 && seen.insert(*a));
        if !identifier || !axes_ok {
            return Err(BuildError::InvalidAttribute {
                op: "sdy.mesh",
                message: format!(
                    "mesh {name:?} with axes {axes:?}: the name must be an identifier (letters, digits, `_`), the axes \
                     distinct non-empty names of sizes >= 1"
                ),
            });
        }
        Ok(Mesh { name: name.to_string(), axes: axes.iter().map(|(a, s)| (a.to_string(), *s)).collect() })
    }

    /// The mesh's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A Shardy sharding (`#sdy.sharding<@mesh, [{"x"}, {}]>`): per dimension of the value, the
/// mesh axes it is split over (none: not split; closed dimensions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisSharding {
    mesh: String,
    dims: Vec<Vec<String>>,
}

impl AxisSharding {
    /// Dimension `i` split over the axes `dims[i]` of `mesh` (each axis used at most once).
    pub fn new(mesh: &Mesh, dims: &[&[&str]]) -> Result<AxisSharding, BuildError> {
        let mut used = std::collections::HashSet::new();
        for axis in dims.iter().flat_map(|d| d.iter()) {
            if !mesh.axes.iter().any(|(a, _)| a == axis) || !used.insert(*axis) {
                return Err(BuildError::InvalidAttribute {
                    op: "sdy.sharding",
                    message: format!(
                        "axis {axis:?} is not an axis of mesh @{} ({:?}) or is used twice",
                        mesh.name, mesh.axes
                    ),
                });
            }
        }
        Ok(AxisSharding {
            mesh: mesh.name.clone(),
            dims: dims.iter().map(|d| d.iter().map(|a| a.to_string()).collect()).collect(),
        })
    }

    /// The attribute (`#sdy.sharding<@mesh, [{"x"}, {}]>`).
    fn attr(&self) -> Attr {
        let dims: Vec<String> = self
            .dims
            .iter()
            .map(|axes| {
                let names: Vec<String> = axes.iter().map(|a| quoted(a)).collect();
                format!("{{{}}}", names.join(", "))
            })
            .collect();
        Attr::Sdy { mnemonic: "sharding", body: format!("<@{}, [{}]>", self.mesh, dims.join(", ")) }
    }
}

impl ParameterOptions {
    /// The parameter's Shardy sharding (`sdy.sharding`); its mesh must be added to the
    /// function ([`Function::add_mesh`]).
    pub fn shardy(self, sharding: &AxisSharding) -> ParameterOptions {
        self.built("sdy.sharding", sharding.attr())
    }
}

impl Function {
    /// Adds a Shardy mesh to the module (`sdy.mesh`), for [`AxisSharding`]s to name. The
    /// product of its axis sizes should be the number of partitions.
    pub fn add_mesh(&self, mesh: &Mesh) -> Result<(), BuildError> {
        let axes: Vec<String> = mesh.axes.iter().map(|(a, s)| format!("{}={s}", quoted(a))).collect();
        let attributes = vec![
            ("mesh".to_string(), Attr::Sdy { mnemonic: "mesh", body: format!("<[{}]>", axes.join(", ")) }),
            ("sym_name".to_string(), emit::string_attr(&mesh.name)),
        ];
        if !self.add_module_op("sdy.mesh", &mesh.name, attributes) {
            return Err(BuildError::InvalidAttribute {
                op: "sdy.mesh",
                message: format!("the module already has a mesh @{}; give each mesh its own name", mesh.name),
            });
        }
        Ok(())
    }

    /// Sets the Shardy sharding of output `index` (`sdy.sharding` on the result).
    pub fn set_output_shardy(&self, index: usize, sharding: &AxisSharding) -> Result<(), BuildError> {
        self.set_result_attribute(index, "sdy.sharding", sharding.attr());
        Ok(())
    }
}

/// `"name"`: an axis name as an MLIR string in Shardy's text.
fn quoted(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 2);
    s.push('"');
    for c in name.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}
