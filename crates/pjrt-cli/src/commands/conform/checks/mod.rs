//! The check groups of `pjrt conform`, one file per group (its checks are named `GROUP.*`), and
//! what they share: the programs they compile (fixtures kept inside the crate) and the wait bound.

mod buffer;
mod buffer_memory;
mod client;
mod compile;
mod compile_options;
mod device;
mod executable_metadata;
mod execute;
mod execute_options;
mod extensions;
mod gpu_target;
mod kv_store;
mod layouts;
mod newer_api;
mod plugin_table;
mod topology;
mod tpu_topology;
mod transfer_manager;

pub(crate) use self::{
    buffer::buffer_checks, buffer_memory::buffer_memory_checks, client::client_checks, compile::compile_checks,
    device::device_checks, executable_metadata::executable_metadata_checks, execute::execute_checks,
    extensions::extension_checks, gpu_target::gpu_target_checks, kv_store::kv_store_checks,
    newer_api::newer_api_checks, topology::topology_checks, tpu_topology::tpu_topology_checks,
    transfer_manager::transfer_manager_checks,
};
pub(crate) use self::{
    compile_options::checks as compile_options_checks, execute_options::checks as execute_options_checks,
    layouts::checks as layouts_checks, plugin_table::checks as plugin_table_checks,
};

use std::time::Duration;

use pjrt_client::Buffer;

use crate::commands::conform::report::Problem;

pub(crate) const ADD: &str = r#"module @add_module {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;
pub(crate) const BYTECODE: &[u8] = include_bytes!("../fixtures/tanh_mul.mlirbc");
pub(crate) const PORTABLE: &[u8] = include_bytes!("../fixtures/tanh_mul.portable-1.0.0.mlirbc");
pub(crate) const HLO: &[u8] = include_bytes!("../fixtures/tanh_mul.hlo.pb");
pub(crate) fn f32s(buffer: &Buffer) -> Result<Vec<f32>, Problem> {
    Ok(buffer.to_vec::<f32>()?)
}
pub(crate) const WAIT: Duration = Duration::from_secs(60);
