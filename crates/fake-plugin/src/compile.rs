//! Compiling and loading: `PJRT_Client_Compile`, ahead-of-time `PJRT_Compile` on a topology,
//! `PJRT_Client_Load`, and executables serialized and loaded back.

use std::ffi::{c_char, c_int};
use std::io::Write;
use std::ptr::null_mut;
use std::sync::atomic::AtomicBool;

use pjrt_client::compile_options::CompileOptions;
use pjrt_client_sys::{self as sys, PJRT_Error};

use crate::calls::{checked_args, slot_fn, sys_bytes};
use crate::clients::client;
use crate::counters::{bump, COUNTERS};
use crate::devices::{device_ptr, DEVICES};
use crate::errors::invalid;
use crate::executables::{executable, free_serialized, serialized, FakeExecutable, FakeLoaded};
use crate::faults::{injects, shape_array, Fault};
use crate::scenarios::config;
use crate::topology::topology;

slot_fn!(PJRT_Client_Compile => fn client_compile(args: PJRT_Client_Compile_Args, fault) {
    bump(&COUNTERS.compile_calls);
    client(args.client)?;
    // SAFETY: the client passes a valid program for the call.
    let program = unsafe { checked_args(args.program.cast_mut(), "PJRT_Program") }?;
    if program.code.is_null() || program.code_size == 0 {
        return Err(invalid("fake: empty program"));
    }
    let options = if args.compile_options.is_null() {
        return Err(invalid("fake: no compile options"));
    } else {
        // SAFETY: the client passes `compile_options_size` readable bytes.
        unsafe { std::slice::from_raw_parts(args.compile_options.cast::<u8>(), args.compile_options_size) }
    };
    let options = CompileOptions::from_proto_bytes(options).map_err(|e| invalid(format!("fake: {e}")))?;
    let replicas = options.num_replicas_requested().max(1);
    let partitions = options.num_partitions_requested().max(1);
    let count = replicas * partitions;
    if count > DEVICES.len() {
        return Err(invalid(format!("fake: {count} devices asked for, {} exist", DEVICES.len())));
    }
    if injects(fault, Fault::NullOutput) {
        args.executable = null_mut();
        return Ok(());
    }
    args.executable = new_loaded(replicas, partitions, options.is_portable());
    Ok(())
});

/// A loaded executable for `replicas` × `partitions` devices (none when portable).
fn new_loaded(replicas: usize, partitions: usize, portable: bool) -> *mut sys::PJRT_LoadedExecutable {
    let count = replicas * partitions;
    let devices: Vec<_> = if portable { Vec::new() } else { (0..count).map(device_ptr).collect() };
    let logical_ids = (0..devices.len())
        .map(|i| sys::PJRT_LogicalDeviceIds {
            replica: (i / partitions) as c_int,
            partition: (i % partitions) as c_int,
        })
        .collect();
    let loaded = FakeLoaded { devices, logical_ids, replicas, partitions, deleted: AtomicBool::new(false) };
    bump(&COUNTERS.loaded_executables_created);
    Box::into_raw(Box::new(loaded)).cast()
}

/// What `PJRT_Executable_Serialize` writes: this prefix, then the replica and partition counts.
const SERIALIZED_PREFIX: &[u8] = b"fake-executable ";

/// Reads (replicas, partitions) back from serialized bytes; anything else is not ours.
fn parse_serialized(bytes: &[u8]) -> Option<(usize, usize)> {
    let rest = std::str::from_utf8(bytes.strip_prefix(SERIALIZED_PREFIX)?).ok()?;
    let (replicas, partitions) = rest.split_once(' ')?;
    let (replicas, partitions): (usize, usize) = (replicas.parse().ok()?, partitions.parse().ok()?);
    (replicas >= 1 && partitions >= 1 && replicas * partitions <= DEVICES.len()).then_some((replicas, partitions))
}

slot_fn!(PJRT_Executable_Serialize => fn executable_serialize(args: PJRT_Executable_Serialize_Args, fault) {
    let executable = executable(args.executable.cast_mut())?;
    let mut bytes = SERIALIZED_PREFIX.to_vec();
    bytes.extend(format!("{} {}", executable.replicas, executable.partitions).bytes());
    let (ptr, len, owner) = serialized(bytes);
    args.serialized_bytes = ptr;
    args.serialized_bytes_size = len;
    args.serialized_executable = owner.cast();
    args.serialized_executable_deleter = Some(free_serialized::<sys::PJRT_SerializedExecutable>);
    shape_array(fault, &mut args.serialized_bytes, &mut args.serialized_bytes_size);
    Ok(())
});

slot_fn!(PJRT_Executable_DeserializeAndLoad => fn executable_deserialize_and_load(
    args: PJRT_Executable_DeserializeAndLoad_Args, fault
) {
    client(args.client)?;
    // SAFETY: the client passes `serialized_executable_size` readable bytes.
    let bytes = unsafe { sys_bytes(args.serialized_executable, args.serialized_executable_size) };
    let Some((replicas, partitions)) = parse_serialized(bytes) else {
        return Err(invalid("fake: not a serialized executable of this plugin"));
    };
    if config().logs_tuning_lines_on_load {
        log_tuning_lines();
    }
    if injects(fault, Fault::NullOutput) {
        args.loaded_executable = null_mut();
        return Ok(());
    }
    args.loaded_executable = new_loaded(replicas, partitions, false);
    Ok(())
});

/// Writes to fd 2, as the XLA CPU plugin's C++ logging does when it loads a serialized
/// executable compiled with tuning features the host's feature list lacks, its two lines (the
/// text of the 0.106 plugin's `cpu_aot_loader.cc`, its double space included).
fn log_tuning_lines() {
    let features = "+prefer-no-gather,+prefer-no-scatter";
    let mut text = String::new();
    for feature in ["+prefer-no-gather", "+prefer-no-scatter"] {
        text.push_str(&format!(
            "E0000 00:00:00.000000 {pid} cpu_aot_loader.cc:220] Loading XLA:CPU AOT result. Target machine feature \
             {feature} is not  supported on the host machine. Machine type used for XLA:CPU compilation doesn't \
             match the machine type for execution. Compile machine features: [{features}]. This could lead to \
             execution errors such as SIGILL.\n",
            pid = std::process::id()
        ));
    }
    // One write, straight to fd 2 (no Rust-side capture), as C++ logging does; stderr trouble is
    // not the load's.
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// The replica and partition counts of serialized compile options the client passed, checked
/// against the fake's devices.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes.
unsafe fn compile_options(ptr: *const c_char, len: usize) -> Result<(usize, usize, bool), *mut PJRT_Error> {
    if ptr.is_null() {
        return Err(invalid("fake: no compile options"));
    }
    // SAFETY: the caller's guarantee.
    let options =
        CompileOptions::from_proto_bytes(unsafe { sys_bytes(ptr, len) }).map_err(|e| invalid(format!("fake: {e}")))?;
    let replicas = options.num_replicas_requested().max(1);
    let partitions = options.num_partitions_requested().max(1);
    if replicas * partitions > DEVICES.len() {
        return Err(invalid(format!("fake: {} devices asked for, {} exist", replicas * partitions, DEVICES.len())));
    }
    Ok((replicas, partitions, options.is_portable()))
}

// Ahead-of-time compilation: an executable that is not loaded anywhere.
slot_fn!(PJRT_Compile => fn topology_compile(args: PJRT_Compile_Args, fault) {
    topology(args.topology)?;
    if !args.client.is_null() {
        client(args.client)?;
    }
    // SAFETY: the client passes a valid program for the call.
    let program = unsafe { checked_args(args.program.cast_mut(), "PJRT_Program") }?;
    if program.code.is_null() || program.code_size == 0 {
        return Err(invalid("fake: empty program"));
    }
    // SAFETY: the client passes `compile_options_size` readable bytes.
    let (replicas, partitions, _) = unsafe { compile_options(args.compile_options, args.compile_options_size) }?;
    if injects(fault, Fault::NullOutput) {
        args.executable = null_mut();
        return Ok(());
    }
    args.executable = Box::into_raw(Box::new(FakeExecutable { replicas, partitions })).cast();
    bump(&COUNTERS.executables_created);
    Ok(())
});

slot_fn!(PJRT_Client_Load => fn client_load(args: PJRT_Client_Load_Args, fault) {
    client(args.client)?;
    executable(args.executable)?;
    // SAFETY: the client passes `compile_options_size` readable bytes.
    let (replicas, partitions, portable) = unsafe { compile_options(args.compile_options, args.compile_options_size) }?;
    if injects(fault, Fault::NullOutput) {
        args.loaded_executable = null_mut();
        return Ok(());
    }
    args.loaded_executable = new_loaded(replicas, partitions, portable);
    Ok(())
});
