//! The Custom_Partitioner extension (type 2; header extension version 1).
//!
//! The plugin's registry of JAX custom-call partitioners. The `JAX_CustomCallPartitioner_*`
//! structs (no struct_size; versioned by `JAX_CustomCallPartitioner_Callbacks.version` and each
//! call's `header.api_version`) are JAX's callback ABI, declared so that the callbacks can be
//! built; none is read by this crate.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_void};

use super::ExtFn;
use crate::error::*;

/// `JAX_CustomCallPartitioner_string`: a (pointer, length) string, not NUL-terminated.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JAX_CustomCallPartitioner_string {
    pub data: *const c_char,
    pub size: usize,
}

/// `JAX_CustomCallPartitioner_aval`: an operand's or result's shape and optional sharding
/// (serialized protos).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JAX_CustomCallPartitioner_aval {
    pub shape: JAX_CustomCallPartitioner_string,
    pub has_sharding: bool,
    pub sharding: JAX_CustomCallPartitioner_string,
}

/// `JAX_CustomCallPartitioner_version_and_error`: the header of every callback's args. Results are
/// owned by `data` and freed by `cleanup_fn`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JAX_CustomCallPartitioner_version_and_error {
    pub api_version: i64,
    pub data: *mut c_void,
    pub cleanup_fn: Option<unsafe extern "C" fn(data: *mut c_void)>,
    pub has_error: bool,
    pub code: PJRT_Error_Code,
    pub error_msg: JAX_CustomCallPartitioner_string,
}

/// `JAX_CustomCallPartitioner_Partition_Args`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JAX_CustomCallPartitioner_Partition_Args {
    pub header: JAX_CustomCallPartitioner_version_and_error,
    pub num_args: usize,
    pub op_args: *mut JAX_CustomCallPartitioner_aval,
    pub op_result: JAX_CustomCallPartitioner_aval,
    pub backend_config: JAX_CustomCallPartitioner_string,
    /// Out.
    pub mlir_module: JAX_CustomCallPartitioner_string,
    /// Out.
    pub args_sharding: *mut JAX_CustomCallPartitioner_string,
    /// Out.
    pub result_sharding: JAX_CustomCallPartitioner_string,
}

/// `JAX_CustomCallPartitioner_InferShardingFromOperands_Args`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JAX_CustomCallPartitioner_InferShardingFromOperands_Args {
    pub header: JAX_CustomCallPartitioner_version_and_error,
    pub num_args: usize,
    pub op_args: *mut JAX_CustomCallPartitioner_aval,
    pub result_shape: JAX_CustomCallPartitioner_string,
    pub backend_config: JAX_CustomCallPartitioner_string,
    /// Out.
    pub has_result_sharding: bool,
    /// Out.
    pub result_sharding: JAX_CustomCallPartitioner_string,
}

/// `JAX_CustomCallPartitioner_PropagateUserSharding_Args`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JAX_CustomCallPartitioner_PropagateUserSharding_Args {
    pub header: JAX_CustomCallPartitioner_version_and_error,
    pub backend_config: JAX_CustomCallPartitioner_string,
    pub result_shape: JAX_CustomCallPartitioner_string,
    /// In and out.
    pub result_sharding: JAX_CustomCallPartitioner_string,
}

/// `JAX_CustomCallPartitioner_Callbacks`: a partitioner, handed to the plugin, which calls `dtor`
/// when it no longer needs it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JAX_CustomCallPartitioner_Callbacks {
    pub version: i64,
    pub private_data: *mut c_void,
    pub dtor: Option<unsafe extern "C" fn(data: *mut JAX_CustomCallPartitioner_Callbacks)>,
    pub partition: Option<
        unsafe extern "C" fn(
            data: *mut JAX_CustomCallPartitioner_Callbacks,
            args: *mut JAX_CustomCallPartitioner_Partition_Args,
        ),
    >,
    pub infer_sharding: Option<
        unsafe extern "C" fn(
            data: *mut JAX_CustomCallPartitioner_Callbacks,
            args: *mut JAX_CustomCallPartitioner_InferShardingFromOperands_Args,
        ),
    >,
    pub propagate_user_sharding: Option<
        unsafe extern "C" fn(
            data: *mut JAX_CustomCallPartitioner_Callbacks,
            args: *mut JAX_CustomCallPartitioner_PropagateUserSharding_Args,
        ),
    >,
    pub can_side_effecting_have_replicated_sharding: bool,
}

pjrt_struct!(
    /// Note: no `extension_start`. `name` is read during the call only.
    PJRT_Register_Custom_Partitioner_Args {
        struct_size: usize, name: *const c_char, name_size: usize,
        callbacks: *mut JAX_CustomCallPartitioner_Callbacks,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Register_Batch_Partitionable_Args {
        struct_size: usize, name: *const c_char, name_size: usize,
    }
);

ext_struct!(
    /// `PJRT_Custom_Partitioner_Extension`: register JAX custom-call partitioners, and custom
    /// calls as batch partitionable, with the plugin's compiler.
    ///
    /// Since-minors are upper bounds: no CHANGELOG entry dates the members. The extension type
    /// exists in every chain this crate walks (0.45 on); `register_batch_partitionable` is in
    /// the 0.90 header.
    PJRT_Custom_Partitioner_Extension = Custom_Partitioner {
        register_custom_partitioner: ExtFn<PJRT_Register_Custom_Partitioner_Args> = since 45,
        register_batch_partitionable: ExtFn<PJRT_Register_Batch_Partitionable_Args> = since 90,
    }
);
