//! # pjrt-builder
//!
//! Build StableHLO programs in safe, typed Rust — no Python, no C++ toolchain, no LLVM — and run
//! them with `pjrt_client`. A [`Function`] hands out [`Value`]s that carry their [`Type`]; each
//! op checks its operands and infers its result type as it is added, so a mistake is a
//! [`BuildError`] naming the op, the operand types and what was expected, at the line that made
//! it. The program is built in `pjrt-stablehlo`'s IR ([`Function::to_module`]) and printed by its
//! printer ([`Function::to_mlir`]); `Function::finish` gives a `pjrt_client::Program` of that
//! text (feature `client`).
//!
//! ```
//! use pjrt_builder::Function;
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("softplus_sum");
//! let x = f.parameter(ElementType::F32, &[4])?;
//! let softplus = x.exp()?.log_plus_one()?;                       // ln(1 + e^x)
//! let total = softplus.reduce(&f.scalar(0f32)?, &[0], |_, a, b| a.add(b))?;
//! let program = f.finish(&[&softplus, &total])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! f.check_plugin(&plugin)?;  // the plugin reads the StableHLO this program uses
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let input = client.upload(&[0f32, 1., -1., 2.], &[4])?;
//! let out = exe.execute(&[&input], &ExecuteOptions::new())?;
//! assert!((out[0].to_vec::<f32>()?[0] - 2f32.ln()).abs() < 1e-6);
//! # Ok(()) }
//! ```
//!
//! ## What it builds and emits
//! Each op becomes a [`pjrt_stablehlo::ir::Op`] of the module [`Function::to_module`] returns
//! (`builtin.module` holding `func.func public @main`), so whatever reads that IR reads what the
//! builder builds: [`pjrt_stablehlo::print`] prints it, `pjrt_client::Program::from_module`
//! writes it as a portable artifact (for the version the program needs). StableHLO promises
//! compatibility for its portable bytecode, not for its pretty text, so the text
//! ([`Function::to_mlir`], and `finish`'s program) is MLIR's **generic form**, which has not
//! changed: `%3 = "stablehlo.add"(%1, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>`,
//! attributes in the spellings StableHLO 1.x reads (`array<i64: ...>`, `#stablehlo<...>`),
//! constants as exact hex. Both CPU plugins the tests use read it (StableHLO 1.17 and 1.20).
//! Each op records the StableHLO version it needs; [`Function::check_version`] (and
//! `Function::check_plugin`, asking a plugin) compares the program's with what a plugin reads.
//!
//! ## Features
//! - `client` (default): what needs `pjrt-client`: `Function::finish` (a `Program`),
//!   `Function::check_plugin` and `Function::constant_array` (a `HostArray`). Without it
//!   (`--no-default-features`) the builder depends on `pjrt-types` and `pjrt-stablehlo` only.
//!
//! ## What the plugins cannot do
//! Every op × element type pair the builder accepts was compiled and run on both CPU plugins
//! (jaxlib 0.10 and 0.11). What they refuse or abort on, the builder refuses when the op is
//! added: the 6-bit floats (`f6E2M3FN`, `f6E3M2FN`) altogether, `concatenate`, `dot_general`
//! and `convolution` on 2-bit integers, `cbrt` and `bitcast_convert` on complex numbers. Three
//! failures are written around: integer `divide`/`remainder` never divide by zero or overflow
//! (XLA's own results are selected instead: `x / 0 = -1`, `x % 0 = x`), a complex `abs` reads
//! its operand through an `optimization_barrier` (XLA's simplifier aborts on `abs(iota)` of
//! complex type); a width-changing `bitcast_convert` does too (XLA's simplifier joined two in a
//! row into one of the wrong shape and rejected the program, found by the `builder` fuzz target).
//! Random op chains on random shapes (thousands, both plugins) compile and run.
//! One difference stays: XLA's CPU `maximum`/`minimum` return a NaN only from their first operand
//! (StableHLO says from either); check with `x.compare(&x, Ne)` where NaN must win.
//!
//! ## Regions
//! Ops with bodies take closures: `x.reduce(&init, &[1], |f, acc, v| acc.add(v))`. While the
//! closure runs, ops go into the body; values made there cannot leak out (using one later is a
//! [`BuildError::ValueNotVisible`]), and bodies of reduce-like ops see only their arguments.
//!
//! ## Ops
//! Every op is a method named like the StableHLO op (sources on [`Function`], others on
//! [`Value`]); each family's module has a runnable example.
//!
//! | StableHLO | method | example |
//! |---|---|---|
//! | `constant` (every element type, splats) | [`Function::constant`], [`Function::scalar`], [`Function::splat`], [`Function::constant_bits`], [`Function::splat_bits`], [`Function::constant_array`] | [`ops::constant`] |
//! | `iota` | [`Function::iota`] | [`ops::constant`] |
//! | `abs` `negate` `exponential` `exponential_minus_one` `log` `log_plus_one` `logistic` `tanh` `sine` `cosine` `tan` `sqrt` `rsqrt` `cbrt` `floor` `ceil` `round_nearest_afz` `round_nearest_even` `sign` `not` `popcnt` `count_leading_zeros` `is_finite` `real` `imag` | [`Value::abs`], [`Value::negate`], [`Value::exp`], [`Value::exp_minus_one`], [`Value::log`], [`Value::log_plus_one`], [`Value::logistic`], [`Value::tanh`], [`Value::sine`], [`Value::cosine`], [`Value::tan`], [`Value::sqrt`], [`Value::rsqrt`], [`Value::cbrt`], [`Value::floor`], [`Value::ceil`], [`Value::round_nearest_afz`], [`Value::round_nearest_even`], [`Value::sign`], [`Value::not`], [`Value::popcnt`], [`Value::count_leading_zeros`], [`Value::is_finite`], [`Value::real`], [`Value::imag`] | [`ops::elementwise`] |
//! | `add` `subtract` `multiply` `divide` `remainder` `maximum` `minimum` `power` `atan2` `and` `or` `xor` `shift_left` `shift_right_arithmetic` `shift_right_logical` `complex` | [`Value::add`], [`Value::subtract`], [`Value::multiply`], [`Value::divide`], [`Value::remainder`], [`Value::maximum`], [`Value::minimum`], [`Value::power`], [`Value::atan2`], [`Value::and`], [`Value::or`], [`Value::xor`], [`Value::shift_left`], [`Value::shift_right_arithmetic`], [`Value::shift_right_logical`], [`Value::complex`] | [`ops::elementwise`] |
//! | `compare` `select` `clamp` | [`Value::compare`], [`Value::compare_as`], [`Value::select`], [`Value::clamp`] | [`ops::elementwise`] |
//! | `convert` `bitcast_convert` `reduce_precision` | [`Value::convert`], [`Value::bitcast_convert`], [`Value::reduce_precision`] | [`ops::elementwise`] |
//! | `broadcast_in_dim` `reshape` `transpose` `slice` `dynamic_slice` `dynamic_update_slice` `concatenate` `pad` `reverse` `get_dimension_size` | [`Value::broadcast_in_dim`], [`Value::reshape`], [`Value::transpose`], [`Value::slice`], [`Value::dynamic_slice`], [`Value::dynamic_update_slice`], [`Value::concatenate`], [`Value::pad`], [`Value::reverse`], [`Value::get_dimension_size`] | [`ops::shape`] |
//! | `dot_general` `convolution` | [`Value::dot_general`], [`Value::convolution`] | [`ops::linalg`] |
//! | `reduce` | [`Value::reduce`], [`Function::reduce_many`] | [`ops::reduce`] |
//! | `reduce_window` `select_and_scatter` | [`Value::reduce_window`], [`Function::reduce_window_many`], [`Value::select_and_scatter`] | [`Window`] |
//! | `sort` | [`Value::sort`], [`Function::sort`] | [`ops::sort`] |
//! | `gather` `scatter` | [`Value::gather`], [`Value::scatter`] | [`ops::gather`] |
//! | `while` `if` `case` | [`Function::while_loop`], [`Function::if_else`], [`Function::case`] | [`ops::control`] |
//! | `tuple` `get_tuple_element` `rng_bit_generator` `optimization_barrier` `custom_call` `replica_id` `partition_id` | [`Function::tuple`], [`Value::get_tuple_element`], [`Value::rng_bit_generator`], [`Function::optimization_barrier`], [`Function::custom_call`], [`Function::replica_id`], [`Function::partition_id`] | [`ops::misc`] |
//! | `all_reduce` `all_gather` `reduce_scatter` `all_to_all` `collective_permute` | [`Value::all_reduce`], [`Function::all_reduce_many`], [`Value::all_gather`], [`Value::reduce_scatter`], [`Value::all_to_all`], [`Value::collective_permute`] | [`ops::collectives`] |
//! | `mhlo.num_replicas` `mhlo.num_partitions` `mhlo.sharding` | [`Function::set_num_replicas`], [`Function::set_num_partitions`], [`ParameterOptions::sharding`], [`Function::set_output_sharding`], [`Value::with_sharding`] | [`sharding`] |
//! | Shardy `sdy.mesh` `sdy.sharding` | [`Function::add_mesh`], [`ParameterOptions::shardy`], [`Function::set_output_shardy`] | [`Mesh`] |
//!
//! ### Helpers (`lax`/`jax.nn` style, built from the ops above)
//! | helper | method | example |
//! |---|---|---|
//! | matmul | [`Value::matmul`] | [`nn`] |
//! | sum, max, min, mean, variance | [`Value::reduce_sum`], [`Value::reduce_max`], [`Value::reduce_min`], [`Value::mean`], [`Value::variance`] | [`nn`] |
//! | softmax, log-softmax, log-sum-exp | [`Value::softmax`], [`Value::log_softmax`], [`Value::logsumexp`] | [`nn`] |
//! | argmax, argmin, one-hot | [`Value::argmax`], [`Value::argmin`], [`Value::one_hot`] | [`nn`] |
//! | relu, gelu, silu (tanh, logistic are ops) | [`Value::relu`], [`Value::gelu`], [`Value::silu`] | [`nn`] |
//! | cross-entropy | [`Value::softmax_cross_entropy`], [`Value::sparse_softmax_cross_entropy`] | [`nn`] |

#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "client")]
mod client;
mod emit;
mod error;
mod function;
pub mod nn;
pub mod ops;
pub mod sharding;
mod types;

pub use error::BuildError;
pub use function::{Function, ParameterOptions, Value};
pub use ops::constant::ConstantElement;
pub use ops::elementwise::{ComparisonDirection, ComparisonType};
pub use ops::linalg::{ConvDimensions, Convolution, DotDimensions, Precision};
// Regions, indexing, control flow, collectives and multi-device (the "regions" part).
pub use ops::collectives::Collective;
pub use ops::gather::{GatherDimensions, ScatterDimensions};
pub use ops::misc::{CustomCall, RngAlgorithm};
pub use ops::reduce::Window;
pub use pjrt_types::{ElementType, StableHloVersion};
pub use sharding::{AxisSharding, Mesh, Sharding};
pub use types::{mlir_element_name, TensorType, Type};
