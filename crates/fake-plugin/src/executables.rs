//! Executables: every program compiles to `fake_add(f32[4], f32[4]) -> f32[4]`. The loaded and
//! unloaded executable objects and their queries (compiling is in `compile.rs`, running in
//! `execute.rs`).

use std::ffi::c_char;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use pjrt_client_sys::{self as sys, PJRT_Error};

use crate::calls::{checked_args, handle, slot_fn};
use crate::counters::{bump, COUNTERS};
use crate::devices::device_index;
use crate::errors::invalid;
use crate::faults::{injects, set_string, shape_array, Fault, IMPOSSIBLE_COUNT};
use crate::plugin::{int64_attribute, Immortal};
use crate::scenarios::{config, Optimized};

/// The object behind a `PJRT_LoadedExecutable*`.
pub(crate) struct FakeLoaded {
    /// The devices it runs on (empty when portable).
    pub(crate) devices: Vec<*mut sys::PJRT_Device>,
    /// (replica, partition) of each device in `devices`.
    pub(crate) logical_ids: Vec<sys::PJRT_LogicalDeviceIds>,
    pub(crate) replicas: usize,
    pub(crate) partitions: usize,
    pub(crate) deleted: AtomicBool,
}

/// The object behind a `PJRT_Executable*` (a new one per `GetExecutable`).
pub(crate) struct FakeExecutable {
    pub(crate) replicas: usize,
    pub(crate) partitions: usize,
}

const EXECUTABLE_NAME: &str = "fake_add";
const FINGERPRINT: &str = "fake-fingerprint-1";
pub(crate) const NUM_PARAMETERS: usize = 2;
pub(crate) const PARAMETER_BYTES: usize = 16;
static OUTPUT_TYPES: [sys::PJRT_Buffer_Type; 2] = [sys::PJRT_Buffer_Type::F32, sys::PJRT_Buffer_Type::F32];
static OUTPUT_DIMS: [i64; 1] = [4];
static OUTPUT_DIM_SIZES: [usize; 1] = [1];
/// An output rank that cannot be: summing it with anything overflows.
static BAD_OUTPUT_DIM_SIZES: [usize; 1] = [usize::MAX];
/// `HloModuleProto { host_program_shape: { parameters: [f32[4], f32[4]], result: f32[4] } }`,
/// encoded by hand (field 4 → ProgramShapeProto; ShapeProto: element_type = 2, dimensions = 3).
static OPTIMIZED_HLO: [u8; 23] = [
    0x22, 21, // HloModuleProto.host_program_shape, 21 bytes
    0x0a, 5, 0x10, 11, 0x1a, 1, 4, // parameters: f32[4]
    0x0a, 5, 0x10, 11, 0x1a, 1, 4, // parameters: f32[4]
    0x12, 5, 0x10, 11, 0x1a, 1, 4, // result: f32[4]
];
const OPTIMIZED_FORMAT: &str = "hlo";
/// The optimized program as MLIR text (scenario `optimized_mlir_text`).
const OPTIMIZED_MLIR_TEXT: &str = "module @jit_add attributes {mhlo.num_partitions = 1 : i32} {\n  \
    func.func public @main(%a: tensor<4xf32> {mhlo.sharding = \"{replicated}\"}, %b: tensor<4xf32>) -> \
    (tensor<4xf32> {jax.result_info = \"\"}) {\n    %0 = stablehlo.add %a, %b : tensor<4xf32>\n    \
    return %0 : tensor<4xf32>\n  }\n}\n";
/// The optimized program as MLIR bytecode (scenario `optimized_mlir_bytecode`): a header only.
const OPTIMIZED_MLIR_BYTECODE: &[u8] = b"ML\xefR\x0dMLIR23.0.0git\0";

/// The optimized program's format and code for this scenario.
fn optimized() -> (&'static str, &'static [u8]) {
    match config().optimized {
        Optimized::Hlo => (OPTIMIZED_FORMAT, &OPTIMIZED_HLO),
        Optimized::MlirText => ("mlir", OPTIMIZED_MLIR_TEXT.as_bytes()),
        Optimized::MlirBytecode => ("mlir", OPTIMIZED_MLIR_BYTECODE),
    }
}

pub(crate) fn loaded<'a>(ptr: *mut sys::PJRT_LoadedExecutable) -> Result<&'a FakeLoaded, *mut PJRT_Error> {
    // SAFETY: the client library passes executables this plugin created and has not destroyed.
    unsafe { handle::<FakeLoaded, _>(ptr, "loaded executable") }
}

pub(crate) fn executable<'a>(ptr: *mut sys::PJRT_Executable) -> Result<&'a FakeExecutable, *mut PJRT_Error> {
    // SAFETY: as above.
    unsafe { handle::<FakeExecutable, _>(ptr, "executable") }
}

slot_fn!(PJRT_LoadedExecutable_Destroy => fn loaded_destroy(args: PJRT_LoadedExecutable_Destroy_Args, fault) {
    if !args.executable.is_null() {
        // SAFETY: an executable this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.executable.cast::<FakeLoaded>()) });
        bump(&COUNTERS.loaded_executables_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_GetExecutable => fn loaded_get_executable(
    args: PJRT_LoadedExecutable_GetExecutable_Args, fault
) {
    let loaded = loaded(args.loaded_executable)?;
    if injects(fault, Fault::NullOutput) {
        args.executable = null_mut();
        return Ok(());
    }
    let executable = FakeExecutable { replicas: loaded.replicas, partitions: loaded.partitions };
    args.executable = Box::into_raw(Box::new(executable)).cast();
    bump(&COUNTERS.executables_created);
    Ok(())
});

slot_fn!(PJRT_Executable_Destroy => fn executable_destroy(args: PJRT_Executable_Destroy_Args, fault) {
    if !args.executable.is_null() {
        // SAFETY: an executable this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.executable.cast::<FakeExecutable>()) });
        bump(&COUNTERS.executables_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_Executable_Name => fn executable_name(args: PJRT_Executable_Name_Args, fault) {
    executable(args.executable)?;
    set_string(fault, EXECUTABLE_NAME, &mut args.executable_name, &mut args.executable_name_size);
    Ok(())
});

slot_fn!(PJRT_Executable_NumReplicas => fn executable_num_replicas(args: PJRT_Executable_NumReplicas_Args, fault) {
    args.num_replicas = executable(args.executable)?.replicas;
    Ok(())
});

slot_fn!(PJRT_Executable_NumPartitions => fn executable_num_partitions(args: PJRT_Executable_NumPartitions_Args, fault) {
    args.num_partitions = executable(args.executable)?.partitions;
    Ok(())
});

slot_fn!(PJRT_Executable_NumOutputs => fn executable_num_outputs(args: PJRT_Executable_NumOutputs_Args, fault) {
    executable(args.executable)?;
    args.num_outputs = if injects(fault, Fault::BadCount) { IMPOSSIBLE_COUNT } else { 1 };
    Ok(())
});

slot_fn!(PJRT_Executable_OutputElementTypes => fn executable_output_types(
    args: PJRT_Executable_OutputElementTypes_Args, fault
) {
    executable(args.executable)?;
    args.output_types = OUTPUT_TYPES.as_ptr().cast_mut();
    args.num_output_types = 1;
    if injects(fault, Fault::NullOutput) {
        args.output_types = null_mut();
    } else if injects(fault, Fault::BadCount) {
        // Two types (the array has two) for an executable with one output.
        args.num_output_types = OUTPUT_TYPES.len();
    }
    Ok(())
});

slot_fn!(PJRT_Executable_OutputDimensions => fn executable_output_dimensions(
    args: PJRT_Executable_OutputDimensions_Args, fault
) {
    executable(args.executable)?;
    args.num_outputs = 1;
    args.dims = OUTPUT_DIMS.as_ptr();
    args.dim_sizes = OUTPUT_DIM_SIZES.as_ptr();
    if injects(fault, Fault::NullOutput) {
        args.dims = null();
        args.dim_sizes = null();
    } else if injects(fault, Fault::BadCount) {
        args.dim_sizes = BAD_OUTPUT_DIM_SIZES.as_ptr();
    }
    Ok(())
});

// The two-call protocol: `code` NULL asks for the size; then the caller passes a buffer.
slot_fn!(PJRT_Executable_OptimizedProgram => fn executable_optimized_program(
    args: PJRT_Executable_OptimizedProgram_Args, fault
) {
    executable(args.executable)?;
    // SAFETY: the client passes a valid program struct for the call.
    let program = unsafe { checked_args(args.program, "PJRT_Program") }?;
    let (format, code) = optimized();
    program.format = format.as_ptr().cast();
    program.format_size = format.len();
    if injects(fault, Fault::NullOutput) {
        program.format = null();
    }
    if program.code.is_null() {
        program.code_size = if injects(fault, Fault::BadCount) { IMPOSSIBLE_COUNT } else { code.len() };
        return Ok(());
    }
    if program.code_size < code.len() {
        return Err(invalid(format!("fake: code_size {} is too small", program.code_size)));
    }
    // SAFETY: the caller passes `code_size` writable bytes at `code`.
    unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), program.code.cast::<u8>(), code.len()) };
    program.code_size = code.len();
    Ok(())
});

slot_fn!(PJRT_Executable_Fingerprint => fn executable_fingerprint(args: PJRT_Executable_Fingerprint_Args, fault) {
    executable(args.executable)?;
    set_string(fault, FINGERPRINT, &mut args.executable_fingerprint, &mut args.executable_fingerprint_size);
    Ok(())
});

// ---- executable metadata ----

slot_fn!(PJRT_Executable_SizeOfGeneratedCodeInBytes => fn executable_code_size(
    args: PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, fault
) {
    executable(args.executable)?;
    args.size_in_bytes = 4096;
    Ok(())
});

slot_fn!(PJRT_Executable_GetCostAnalysis => fn executable_cost_analysis(args: PJRT_Executable_GetCostAnalysis_Args, fault) {
    executable(args.executable)?;
    static PROPERTIES: OnceLock<Immortal<Vec<sys::PJRT_NamedValue>>> = OnceLock::new();
    let properties = &PROPERTIES.get_or_init(|| Immortal(vec![int64_attribute(c"flops", 4)])).0;
    args.properties = properties.as_ptr();
    args.num_properties = properties.len();
    shape_array(fault, &mut args.properties, &mut args.num_properties);
    Ok(())
});

/// `device` as a C string array with sizes, `n` times (the memory kind of every output or
/// parameter).
fn device_kinds() -> (&'static [*const c_char], &'static [usize]) {
    static KINDS: OnceLock<Immortal<(Vec<*const c_char>, Vec<usize>)>> = OnceLock::new();
    let kinds = &KINDS.get_or_init(|| Immortal((vec![c"device".as_ptr(); NUM_PARAMETERS], vec![6; NUM_PARAMETERS]))).0;
    (&kinds.0, &kinds.1)
}

slot_fn!(PJRT_Executable_OutputMemoryKinds => fn executable_output_memory_kinds(
    args: PJRT_Executable_OutputMemoryKinds_Args, fault
) {
    executable(args.executable)?;
    let (kinds, sizes) = device_kinds();
    args.memory_kinds = kinds.as_ptr();
    args.memory_kind_sizes = sizes.as_ptr();
    args.num_outputs = OUTPUT_DIM_SIZES.len();
    shape_array(fault, &mut args.memory_kinds, &mut args.num_outputs);
    Ok(())
});

slot_fn!(PJRT_Executable_ParameterMemoryKinds => fn executable_parameter_memory_kinds(
    args: PJRT_Executable_ParameterMemoryKinds_Args, fault
) {
    executable(args.executable)?;
    let (kinds, sizes) = device_kinds();
    args.memory_kinds = kinds.as_ptr();
    args.memory_kind_sizes = sizes.as_ptr();
    args.num_parameters = NUM_PARAMETERS;
    shape_array(fault, &mut args.memory_kinds, &mut args.num_parameters);
    Ok(())
});

slot_fn!(PJRT_Executable_GetCompiledMemoryStats => fn executable_compiled_memory_stats(
    args: PJRT_Executable_GetCompiledMemoryStats_Args, fault
) {
    executable(args.executable)?;
    args.generated_code_size_in_bytes = 4096;
    args.argument_size_in_bytes = (NUM_PARAMETERS * PARAMETER_BYTES) as i64;
    args.output_size_in_bytes = PARAMETER_BYTES as i64;
    args.peak_memory_in_bytes = 3 * PARAMETER_BYTES as i64;
    Ok(())
});

/// Bytes handed out with a deleter (serialized compile options, device assignments).
pub(crate) struct FakeSerialized(pub(crate) Vec<u8>);

pub(crate) fn serialized(bytes: Vec<u8>) -> (*const c_char, usize, *mut FakeSerialized) {
    let owned = Box::new(FakeSerialized(bytes));
    let (ptr, len) = (owned.0.as_ptr().cast(), owned.0.len());
    bump(&COUNTERS.serialized_created);
    (ptr, len, Box::into_raw(owned))
}

pub(crate) unsafe extern "C" fn free_serialized<T>(serialized: *mut T) {
    if !serialized.is_null() {
        // SAFETY: a `Box<FakeSerialized>` this plugin leaked; the client frees it once.
        drop(unsafe { Box::from_raw(serialized.cast::<FakeSerialized>()) });
        bump(&COUNTERS.serialized_destroyed);
    }
}

slot_fn!(PJRT_Executable_GetCompileOptions => fn executable_get_compile_options(
    args: PJRT_Executable_GetCompileOptions_Args, fault
) {
    let executable = executable(args.executable)?;
    // CompileOptionsProto { executable_build_options (3) { num_replicas (4), num_partitions (5) } }.
    let bytes = vec![0x1a, 0x04, 0x20, executable.replicas as u8, 0x28, executable.partitions as u8];
    let (ptr, len, owner) = serialized(bytes);
    args.serialized_bytes = ptr;
    args.serialized_bytes_size = len;
    args.serialized_compile_options = owner.cast();
    args.serialized_compile_options_deleter = Some(free_serialized::<sys::PJRT_SerializedCompileOptions>);
    shape_array(fault, &mut args.serialized_bytes, &mut args.serialized_bytes_size);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_GetDeviceAssignment => fn loaded_get_device_assignment(
    args: PJRT_LoadedExecutable_GetDeviceAssignment_Args, fault
) {
    let loaded = loaded(args.executable)?;
    if loaded.devices.is_empty() {
        return Err(invalid("fake: a portable executable has no device assignment"));
    }
    // DeviceAssignmentProto { replica_count (1), computation_count (2),
    // computation_devices (3) { replica_device_ids (1) } per partition }.
    let mut bytes = vec![0x08, loaded.replicas as u8, 0x10, loaded.partitions as u8];
    for partition in 0..loaded.partitions {
        let ids: Vec<u8> = (0..loaded.replicas)
            .flat_map(|replica| {
                let device = loaded.devices[replica * loaded.partitions + partition];
                [0x08, device_index(device).unwrap_or(0) as u8]
            })
            .collect();
        bytes.extend([0x1a, ids.len() as u8]);
        bytes.extend(ids);
    }
    let (ptr, len, owner) = serialized(bytes);
    args.serialized_bytes = ptr;
    args.serialized_bytes_size = len;
    args.serialized_device_assignment = owner.cast();
    args.serialized_device_assignment_deleter = Some(free_serialized::<sys::PJRT_DeviceAssignmentSerialized>);
    shape_array(fault, &mut args.serialized_bytes, &mut args.serialized_bytes_size);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_AddressableDeviceLogicalIds => fn loaded_logical_ids(
    args: PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args, fault
) {
    let loaded = loaded(args.executable)?;
    args.addressable_device_logical_ids = loaded.logical_ids.as_ptr().cast_mut();
    args.num_addressable_device_logical_ids = loaded.logical_ids.len();
    let mut ptr = args.addressable_device_logical_ids.cast_const();
    shape_array(fault, &mut ptr, &mut args.num_addressable_device_logical_ids);
    args.addressable_device_logical_ids = ptr.cast_mut();
    Ok(())
});

// The deprecated per-loaded-executable fingerprint: the same text.
slot_fn!(PJRT_LoadedExecutable_Fingerprint => fn loaded_fingerprint(args: PJRT_LoadedExecutable_Fingerprint_Args, fault) {
    loaded(args.executable)?;
    set_string(fault, FINGERPRINT, &mut args.executable_fingerprint, &mut args.executable_fingerprint_size);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_AddressableDevices => fn loaded_addressable_devices(
    args: PJRT_LoadedExecutable_AddressableDevices_Args, fault
) {
    let loaded = loaded(args.executable)?;
    args.addressable_devices = loaded.devices.as_ptr();
    args.num_addressable_devices = loaded.devices.len();
    shape_array(fault, &mut args.addressable_devices, &mut args.num_addressable_devices);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_Delete => fn loaded_delete(args: PJRT_LoadedExecutable_Delete_Args, fault) {
    loaded(args.executable)?.deleted.store(true, Ordering::SeqCst);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_IsDeleted => fn loaded_is_deleted(args: PJRT_LoadedExecutable_IsDeleted_Args, fault) {
    args.is_deleted = loaded(args.executable)?.deleted.load(Ordering::SeqCst);
    Ok(())
});
