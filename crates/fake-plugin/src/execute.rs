//! Execution: `PJRT_LoadedExecutable_Execute`, which adds the `f32[4]` arguments of each device,
//! and execute contexts.

use std::ptr::null_mut;

use pjrt_client_sys::{self as sys, PJRT_Error};

use crate::buffers::{live_buffer, new_buffer, FakeBuffer};
use crate::calls::{checked_args, slot_fn};
use crate::counters::{bump, COUNTERS};
use crate::devices::{device_index, DEVICES};
use crate::errors::invalid;
use crate::events::handed_out_event;
use crate::executables::{loaded, NUM_PARAMETERS, PARAMETER_BYTES};
use crate::faults::{injects, Fault};
use crate::host_receives::run_host_receives;

/// An execute context: only its life is tracked.
struct FakeExecuteContext;

slot_fn!(PJRT_ExecuteContext_Create => fn execute_context_create(args: PJRT_ExecuteContext_Create_Args, fault) {
    if injects(fault, Fault::NullOutput) {
        args.context = null_mut();
        return Ok(());
    }
    args.context = Box::into_raw(Box::new(FakeExecuteContext)).cast();
    bump(&COUNTERS.execute_contexts_created);
    Ok(())
});

slot_fn!(PJRT_ExecuteContext_Destroy => fn execute_context_destroy(args: PJRT_ExecuteContext_Destroy_Args, fault) {
    if !args.context.is_null() {
        // SAFETY: a context this plugin created; the client destroys it once.
        drop(unsafe { Box::from_raw(args.context.cast::<FakeExecuteContext>()) });
        bump(&COUNTERS.execute_contexts_destroyed);
    }
    Ok(())
});

/// Adds the `f32[4]` arguments of one device.
fn add_f32(arguments: &[&FakeBuffer]) -> Result<Vec<u8>, *mut PJRT_Error> {
    let mut sum = [0f32; 4];
    for argument in arguments {
        if argument.element_type != sys::PJRT_Buffer_Type::F32 || argument.bytes.len() != PARAMETER_BYTES {
            return Err(invalid("fake: every argument must be an f32[4]"));
        }
        for (s, chunk) in sum.iter_mut().zip(argument.bytes.chunks_exact(4)) {
            *s += f32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
    }
    Ok(sum.iter().flat_map(|v| v.to_ne_bytes()).collect())
}

// Checks everything first, then creates the outputs and events: a failing call hands out nothing.
slot_fn!(PJRT_LoadedExecutable_Execute => fn loaded_execute(args: PJRT_LoadedExecutable_Execute_Args, fault) {
    bump(&COUNTERS.execute_calls);
    crate::profiler::note_execute();
    let loaded = loaded(args.executable)?;
    // SAFETY: the client passes valid execute options for the call.
    let options = unsafe { checked_args(args.options, "PJRT_ExecuteOptions") }?;
    // Plugins from 0.108 on read this flag (offset 120) when the options' struct_size covers it.
    // Read as a byte, as C writes it: any nonzero byte is true.
    const MAJOR_TO_MINOR: usize =
        std::mem::offset_of!(sys::PJRT_ExecuteOptions, use_major_to_minor_data_layout_for_callbacks);
    // SAFETY: the byte lies inside the options (struct_size checked just before the read).
    let major_to_minor = options.struct_size > MAJOR_TO_MINOR
        && unsafe { (options as *const sys::PJRT_ExecuteOptions).cast::<u8>().add(MAJOR_TO_MINOR).read() } != 0;
    if major_to_minor {
        bump(&COUNTERS.executions_major_to_minor);
    }
    let devices: Vec<usize> = if args.execute_device.is_null() {
        if loaded.devices.is_empty() {
            return Err(invalid("fake: a portable executable needs execute_device"));
        }
        loaded.devices.iter().map(|d| device_index(*d)).collect::<Result<_, _>>()?
    } else {
        vec![device_index(args.execute_device)?]
    };
    if args.num_devices != devices.len() {
        return Err(invalid(format!("fake: {} argument lists for {} devices", args.num_devices, devices.len())));
    }
    if args.num_args != NUM_PARAMETERS {
        return Err(invalid(format!("fake: {} arguments for {NUM_PARAMETERS} parameters", args.num_args)));
    }
    if args.argument_lists.is_null() || args.output_lists.is_null() {
        return Err(invalid("fake: NULL argument or output lists"));
    }
    let mut results = Vec::with_capacity(devices.len());
    for i in 0..devices.len() {
        // SAFETY: the client passes `num_devices` lists of `num_args` buffers each.
        let list = unsafe { *args.argument_lists.add(i) };
        if list.is_null() {
            return Err(invalid("fake: NULL argument list"));
        }
        let arguments = (0..NUM_PARAMETERS)
            // SAFETY: as above.
            .map(|j| live_buffer(unsafe { *list.add(j) }))
            .collect::<Result<Vec<_>, _>>()?;
        results.push(add_f32(&arguments)?);
    }
    if injects(fault, Fault::NullOutput) {
        return Ok(()); // outputs and events stay NULL
    }
    for i in 0..devices.len() {
        // SAFETY: the client's options for this launch of `devices.len()` devices.
        unsafe { run_host_receives(options, i) };
    }
    for (i, (bytes, device)) in results.into_iter().zip(devices).enumerate() {
        let output = new_buffer(sys::PJRT_Buffer_Type::F32, vec![4], bytes, device, DEVICES[device].default_memory);
        // SAFETY: the client passes `num_devices` output lists with room for the one output.
        unsafe { (*args.output_lists.add(i)).write(output) };
        if !args.device_complete_events.is_null() {
            let event = handed_out_event(None, "PJRT_LoadedExecutable_Execute");
            // SAFETY: the client passes `num_devices` event slots.
            unsafe { args.device_complete_events.add(i).write(event) };
        }
    }
    Ok(())
});
