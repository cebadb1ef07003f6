//! Fault injection: every PJRT slot the library calls is made to fail, to return NULL outputs or
//! impossible counts, or to hand out events that complete with an error, late, or never.
//!
//! Each case of the matrix runs one library operation on the fake plugin with the fault armed
//! (through the fake's run-time directives, see `fake-plugin`), then checks that
//! - the operation returned the expected typed error (`Error::Pjrt`, `Error::InvalidArgument`,
//!   `Error::Timeout`), or the expected result, and did not panic;
//! - every object the fake handed out (errors, clients, buffers, events, executables) was
//!   destroyed exactly once after the Rust objects dropped (or, when the fault is a failing
//!   destroy, that exactly that one object stayed with the plugin);
//! - the same client still works: uploads, downloads, queries, compile and execute.
//!
//! `every_called_slot_is_in_the_fault_matrix` keeps the matrix complete: it reads the library's
//! sources and fails when a slot they call has no case.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pjrt_client::{
    ArrayShape, Buffer, Client, ClientOptions, CompileOptions, DownloadOptions, ElementType, Error, ErrorCode,
    ExecuteOptions, HostBufferSemantics, HostSource, LoadError, Placement, Plugin, ProcessInfo, ProcessState,
    ShapeSpec, Topology, UploadOptions, UserEvent,
};

use crate::fake_support::{compile, program, Fake, OBJECT_KINDS};

/// How long a wait for an event that never completes is given.
const NEVER_TIMEOUT: u64 = 100;
/// How long a wait for a late event (30 ms) is given: long enough to never time out.
const LATE_TIMEOUT: u64 = 10_000;

/// The library operations under test. Each sets up what it needs, arms the fault, then does the
/// one thing the case is about.
#[derive(Clone, Copy, Debug)]
enum Op {
    ClientNew,
    LookupDevice,
    LookupAddressableDevice,
    AddressableMemories,
    DefaultDeviceAssignment,
    DeviceId,
    DeviceProcessIndex,
    DeviceKind,
    DeviceDebugString,
    DeviceToString,
    DeviceAttributes,
    DeviceIsAddressable,
    DeviceLocalHardwareId,
    DeviceMemories,
    DeviceDefaultMemory,
    MemoryId,
    MemoryKind,
    MemoryKindId,
    MemoryDebugString,
    MemoryToString,
    MemoryDevices,
    /// `Client::upload` (copy during the call).
    Upload,
    /// `Client::upload_with` of bytes with `CopyUntilTransferCompletes` (waits for the done event).
    UploadUntilDone,
    /// The buffer queries run on a copy (whose shape is not cached).
    BufferElementType,
    BufferDimensions,
    BufferDevice,
    BufferMemory,
    BufferOnDeviceSize,
    BufferDelete,
    BufferIsDeleted,
    /// `ready_event()` then `wait()`.
    ReadyEventWait,
    /// `ready_event()` then `wait_timeout(ms)`.
    ReadyEventWithin(u64),
    /// `ready_event()` then `on_ready(..)`; the result is the status the callback got.
    OnReady,
    ToVec,
    /// `to_bytes_async` into a destination, then `HostTransfer::wait_timeout(ms)`.
    ToHostWithin(u64),
    CopyToDevice,
    CopyToMemory,
    Compile,
    ParameterShapes,
    Execute,
    /// 2 replicas: `execute_sharded` then `Execution::wait`.
    ExecuteReplicated,
    /// 2 replicas: `execute_sharded` then `Execution::wait_timeout(ms)`.
    ExecuteReplicatedWithin(u64),
    ExecutableDelete,
    ExecutableIsDeleted,
    Fingerprint,
    DropBuffer,
    DropEvent,
    DropExecutable,
    DropClient,
    /// A user event set with an error, then awaited.
    UserEvent,
    /// Host memory DMA-mapped, then unmapped.
    DmaMap,
    /// The state of two processes handed to the client.
    UpdateGlobalProcessInfo,
    MemoryStats,
    ClearMemoryStats,
    RuntimeAttributes,
    PoisonExecution,
    /// An async tracking event made, then dropped.
    AsyncTrackingEvent,
    CodeSize,
    CostAnalysis,
    OutputMemoryKinds,
    ParameterMemoryKinds,
    CompiledMemoryStats,
    CompileOptionsOf,
    DeviceAssignmentOf,
    LogicalIds,
    /// An execute context made, then dropped.
    NewExecuteContext,
    ClientTopology,
    /// A transfer manager for one f32[4] buffer: queries, metadata, two pieces of data, retrieve.
    TransferManagerData,
    TransferManagerLiteral,
    /// A transfer manager whose buffer is set to an error.
    TransferManagerError,
    Uninitialized,
    /// An error buffer made; its ready event must fail with the error.
    ErrorBuffer,
    IsOnCpu,
    LegacyLayout,
    UnpaddedDimensions,
    DynamicDimensions,
    UnsafePointer,
    /// An external reference taken, its device pointer read, then released.
    ExternalReference,
    RawCopy,
    Bitcast,
    TopologyName,
    TopologyVersion,
    TopologyDescriptions,
    TopologyAttributes,
    TopologyFingerprint,
    TopologySerialize,
    TopologyKindIds,
    CanonicalShape,
    /// A 2-replica executable serialized.
    Serialize,
    /// A 2-replica executable serialized, then loaded again.
    DeserializeAndLoad,
    /// A topology made by name (`Topology::create`), then queried.
    TopologyCreate,
    /// The client's topology serialized, then rebuilt from the bytes.
    TopologyDeserialize,
    /// A topology made by name, then dropped.
    DropTopology,
    /// Ahead-of-time compilation on a topology made by name.
    AotCompile,
    /// An ahead-of-time compiled executable loaded onto the client, then run.
    ClientLoad,
    /// A view of host memory (the fake's device memory) read back, then dropped: its on-delete
    /// callback must run; when the view fails, what the callback held must be released.
    View,
    /// An upload donated with a control dependency, which is then signalled.
    Donate,
    /// An alias buffer made and fulfilled with an upload.
    Alias,
    /// An alias buffer made, then failed.
    AliasFail,
    /// A raw copy whose destination is given after the call, then awaited.
    RawCopyFuture,
    /// An execution whose receive callback (channel 1) fills the fake's 16-byte host stream and
    /// waits for the chunk; the callback's failure is the result.
    HostReceive,
}

/// What a case must give.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// `Error::Pjrt` from this function (the fake's INTERNAL code, a message starting "fake:").
    Pjrt(&'static str),
    /// `Error::Pjrt` from this function with exactly this code and message.
    PjrtExactly(&'static str, ErrorCode, &'static str),
    Invalid,
    Timeout,
    /// The full result.
    Ok,
    /// Success, but without what the plugin could not deliver (e.g. no parameter shapes).
    Degraded,
}

struct Case {
    op: Op,
    faults: &'static str,
    expect: Expect,
    /// A failing destroy leaves one object with the plugin: (its `*_created` counter, 1).
    stays: Option<&'static str>,
}

fn case(op: Op, faults: &'static str, expect: Expect) -> Case {
    Case { op, faults, expect, stays: None }
}

/// `fail`, `null_output` and `bad_count` of a slot returning an array or a string.
fn array_cases(op: Op, slot: &'static str) -> Vec<Case> {
    vec![
        fail_case(op, slot),
        case(op, format!("null_output {slot}").leak(), Expect::Invalid),
        case(op, format!("bad_count {slot}").leak(), Expect::Invalid),
    ]
}

/// `fail` and `null_output` of a slot returning a handle.
fn handle_cases(op: Op, slot: &'static str) -> Vec<Case> {
    vec![fail_case(op, slot), case(op, format!("null_output {slot}").leak(), Expect::Invalid)]
}

/// `fail` of a slot.
fn fail_case(op: Op, slot: &'static str) -> Case {
    case(op, format!("fail {slot}").leak(), Expect::Pjrt(slot))
}

fn client_and_device_cases() -> Vec<Case> {
    use Expect::*;
    use Op::*;
    let mut cases = vec![
        case(ClientNew, "fail PJRT_Client_Create", Pjrt("PJRT_Client_Create")),
        case(ClientNew, "null_output PJRT_Client_Create", Invalid),
        fail_case(ClientNew, "PJRT_Client_ProcessIndex"),
        fail_case(DefaultDeviceAssignment, "PJRT_Client_DefaultDeviceAssignment"),
        fail_case(DeviceId, "PJRT_DeviceDescription_Id"),
        fail_case(DeviceProcessIndex, "PJRT_DeviceDescription_ProcessIndex"),
        fail_case(DeviceIsAddressable, "PJRT_Device_IsAddressable"),
        fail_case(DeviceLocalHardwareId, "PJRT_Device_LocalHardwareId"),
        fail_case(MemoryId, "PJRT_Memory_Id"),
        fail_case(MemoryKindId, "PJRT_Memory_Kind_Id"),
    ];
    for (op, slot) in [
        (ClientNew, "PJRT_Client_PlatformName"),
        (ClientNew, "PJRT_Client_PlatformVersion"),
        (ClientNew, "PJRT_Client_Devices"),
        (ClientNew, "PJRT_Client_AddressableDevices"),
        (AddressableMemories, "PJRT_Client_AddressableMemories"),
        (DeviceAttributes, "PJRT_DeviceDescription_Attributes"),
        (DeviceKind, "PJRT_DeviceDescription_Kind"),
        (DeviceDebugString, "PJRT_DeviceDescription_DebugString"),
        (DeviceToString, "PJRT_DeviceDescription_ToString"),
        (DeviceMemories, "PJRT_Device_AddressableMemories"),
        (MemoryKind, "PJRT_Memory_Kind"),
        (MemoryDebugString, "PJRT_Memory_DebugString"),
        (MemoryToString, "PJRT_Memory_ToString"),
        (MemoryDevices, "PJRT_Memory_AddressableByDevices"),
    ] {
        cases.extend(array_cases(op, slot));
    }
    for (op, slot) in [
        (LookupDevice, "PJRT_Client_LookupDevice"),
        (LookupAddressableDevice, "PJRT_Client_LookupAddressableDevice"),
        (DeviceId, "PJRT_Device_GetDescription"),
        (DeviceDefaultMemory, "PJRT_Device_DefaultMemory"),
    ] {
        cases.extend(handle_cases(op, slot));
    }
    cases.push(Case { stays: Some("clients_created"), ..case(DropClient, "fail PJRT_Client_Destroy", Ok) });
    // Reading an error's payloads fails: the error itself still arrives.
    cases.push(case(
        LookupDevice,
        "fail PJRT_Client_LookupDevice\nfail PJRT_Error_ForEachPayload",
        Pjrt("PJRT_Client_LookupDevice"),
    ));
    cases.push(fail_case(UserEvent, "PJRT_Event_Create"));
    cases.push(case(UserEvent, "null_output PJRT_Event_Create", Invalid));
    cases.push(fail_case(UserEvent, "PJRT_Event_Set"));
    cases.push(fail_case(DmaMap, "PJRT_Client_DmaMap"));
    // A failed unmap leaves the range mapped (and its memory leaked, never freed under the device).
    cases.push(Case { stays: Some("dma_maps"), ..fail_case(DmaMap, "PJRT_Client_DmaUnmap") });
    cases.push(fail_case(UpdateGlobalProcessInfo, "PJRT_Client_UpdateGlobalProcessInfo"));
    cases.push(fail_case(MemoryStats, "PJRT_Device_MemoryStats"));
    cases.push(fail_case(ClearMemoryStats, "PJRT_Device_ClearMemoryStats"));
    cases.extend(array_cases(RuntimeAttributes, "PJRT_Device_GetAttributes"));
    cases.push(fail_case(PoisonExecution, "PJRT_Device_PoisonExecution"));
    cases.push(fail_case(AsyncTrackingEvent, "PJRT_Device_CreateAsyncTrackingEvent"));
    // A plugin may hand out no event (the CPU plugins do): not an error.
    cases.push(case(AsyncTrackingEvent, "null_output PJRT_Device_CreateAsyncTrackingEvent", Degraded));
    cases.push(Case {
        stays: Some("tracking_events_created"),
        ..case(AsyncTrackingEvent, "fail PJRT_AsyncTrackingEvent_Destroy", Ok)
    });
    cases
}

fn buffer_and_event_cases() -> Vec<Case> {
    use Expect::*;
    use Op::*;
    let within_never = ReadyEventWithin(NEVER_TIMEOUT);
    let within_late = ReadyEventWithin(LATE_TIMEOUT);
    let mut cases = vec![
        // Uploads: the done event. Copied during the call, so only a failure already known counts.
        case(Upload, "event error for PJRT_Client_BufferFromHostBuffer", Pjrt("PJRT_Event_Error")),
        case(Upload, "event late 30ms for PJRT_Client_BufferFromHostBuffer", Ok),
        case(Upload, "event never for PJRT_Client_BufferFromHostBuffer", Ok),
        fail_case(Upload, "PJRT_Event_IsReady"),
        case(UploadUntilDone, "event error for PJRT_Client_BufferFromHostBuffer", Pjrt("PJRT_Event_Await")),
        case(UploadUntilDone, "event late 30ms for PJRT_Client_BufferFromHostBuffer", Ok),
        // Await fails while the transfer still runs: the upload still waits for it to finish.
        case(
            UploadUntilDone,
            "event late 30ms for PJRT_Client_BufferFromHostBuffer\nfail PJRT_Event_Await",
            Pjrt("PJRT_Event_Await"),
        ),
        fail_case(BufferElementType, "PJRT_Buffer_ElementType"),
        fail_case(BufferOnDeviceSize, "PJRT_Buffer_OnDeviceSizeInBytes"),
        fail_case(BufferDelete, "PJRT_Buffer_Delete"),
        fail_case(BufferIsDeleted, "PJRT_Buffer_IsDeleted"),
        // Ready events.
        case(ReadyEventWait, "event error for PJRT_Buffer_ReadyEvent", Pjrt("PJRT_Event_Await")),
        case(ReadyEventWait, "event late 30ms for PJRT_Buffer_ReadyEvent", Ok),
        fail_case(ReadyEventWait, "PJRT_Event_Await"),
        case(within_never, "event never for PJRT_Buffer_ReadyEvent", Timeout),
        case(within_never, "event error for PJRT_Buffer_ReadyEvent", Pjrt("PJRT_Event_Error")),
        case(within_late, "event late 30ms for PJRT_Buffer_ReadyEvent", Ok),
        // A bounded wait reads the event's error once it completed.
        case(within_late, "event late 30ms error for PJRT_Buffer_ReadyEvent", Pjrt("PJRT_Event_Error")),
        fail_case(within_never, "PJRT_Event_IsReady"),
        fail_case(within_never, "PJRT_Event_Error"),
        case(within_never, "event never\nfail PJRT_Event_OnReady", Pjrt("PJRT_Event_OnReady")),
        fail_case(OnReady, "PJRT_Event_OnReady"),
        case(OnReady, "event error for PJRT_Buffer_ReadyEvent", Pjrt("PJRT_Event")),
        case(OnReady, "event late 30ms error for PJRT_Buffer_ReadyEvent", Pjrt("PJRT_Event")),
        // Downloads: the size query (first call), the copy (second call), its event.
        fail_case(ToVec, "PJRT_Buffer_ToHostBuffer"),
        case(ToVec, "fail PJRT_Buffer_ToHostBuffer after 1", Pjrt("PJRT_Buffer_ToHostBuffer")),
        case(ToVec, "bad_count PJRT_Buffer_ToHostBuffer", Invalid),
        // No event: nothing says the copy is over; the destination is never handed out.
        case(ToVec, "null_output PJRT_Buffer_ToHostBuffer", Invalid),
        case(ToVec, "event error for PJRT_Buffer_ToHostBuffer", Pjrt("PJRT_Event_Await")),
        case(ToVec, "event late 30ms for PJRT_Buffer_ToHostBuffer", Ok),
        fail_case(ToVec, "PJRT_Event_Await"),
        case(ToHostWithin(NEVER_TIMEOUT), "event never for PJRT_Buffer_ToHostBuffer", Timeout),
        case(ToHostWithin(LATE_TIMEOUT), "event late 30ms for PJRT_Buffer_ToHostBuffer", Ok),
        case(ToHostWithin(NEVER_TIMEOUT), "event never for PJRT_Buffer_ToHostBuffer\nfail PJRT_Event_IsReady", {
            Pjrt("PJRT_Event_IsReady")
        }),
        // Destroys that fail: nothing to report from Drop; the plugin keeps the object.
        Case { stays: Some("buffers_created"), ..case(DropBuffer, "fail PJRT_Buffer_Destroy", Ok) },
        Case { stays: Some("events_created"), ..case(DropEvent, "fail PJRT_Event_Destroy", Ok) },
    ];
    cases.extend(handle_cases(Upload, "PJRT_Client_BufferFromHostBuffer"));
    cases.extend(array_cases(BufferDimensions, "PJRT_Buffer_Dimensions"));
    cases.extend(handle_cases(BufferDevice, "PJRT_Buffer_Device"));
    cases.extend(handle_cases(BufferMemory, "PJRT_Buffer_Memory"));
    cases.extend(handle_cases(ReadyEventWait, "PJRT_Buffer_ReadyEvent"));
    cases.extend(handle_cases(CopyToDevice, "PJRT_Buffer_CopyToDevice"));
    cases.extend(handle_cases(CopyToMemory, "PJRT_Buffer_CopyToMemory"));
    cases
}

fn executable_cases() -> Vec<Case> {
    use Expect::*;
    use Op::*;
    let compile_error = "fake: injected failure in PJRT_Client_Compile";
    let mut cases = vec![
        fail_case(Compile, "PJRT_Executable_NumReplicas"),
        fail_case(Compile, "PJRT_Executable_NumPartitions"),
        fail_case(Compile, "PJRT_Executable_NumOutputs"),
        // More outputs than types and shapes.
        case(Compile, "bad_count PJRT_Executable_NumOutputs", Invalid),
        // Errors whose code or message cannot be read.
        case(
            Compile,
            "fail PJRT_Client_Compile\nfail PJRT_Error_GetCode",
            PjrtExactly("PJRT_Client_Compile", ErrorCode::Unknown, compile_error),
        ),
        case(
            Compile,
            "fail PJRT_Client_Compile\nnull_output PJRT_Error_Message",
            PjrtExactly("PJRT_Client_Compile", ErrorCode::Internal, ""),
        ),
        case(
            Compile,
            "fail PJRT_Client_Compile\nbad_count PJRT_Error_Message",
            PjrtExactly("PJRT_Client_Compile", ErrorCode::Internal, ""),
        ),
        // Parameter shapes: when the plugin cannot report its optimized program, the signature of
        // the MLIR text compiled gives them (checks stay on).
        case(ParameterShapes, "fail PJRT_Executable_OptimizedProgram", Ok),
        case(ParameterShapes, "fail PJRT_Executable_OptimizedProgram after 1", Ok),
        case(ParameterShapes, "null_output PJRT_Executable_OptimizedProgram", Ok),
        case(ParameterShapes, "bad_count PJRT_Executable_OptimizedProgram", Ok),
        // Execution.
        fail_case(Execute, "PJRT_LoadedExecutable_Execute"),
        case(Execute, "null_output PJRT_LoadedExecutable_Execute", Invalid),
        // Execute does not ask PJRT_Buffer_IsDeleted per argument (the plugin refuses deleted buffers).
        case(Execute, "event error for PJRT_LoadedExecutable_Execute", Pjrt("PJRT_Event_Await")),
        case(Execute, "event late 30ms for PJRT_LoadedExecutable_Execute", Ok),
        fail_case(ExecuteReplicated, "PJRT_LoadedExecutable_Execute"),
        case(ExecuteReplicated, "event error for PJRT_LoadedExecutable_Execute", Pjrt("PJRT_Event_Await")),
        case(ExecuteReplicated, "event late 30ms for PJRT_LoadedExecutable_Execute", Ok),
        case(ExecuteReplicatedWithin(NEVER_TIMEOUT), "event never for PJRT_LoadedExecutable_Execute", Timeout),
        case(ExecuteReplicatedWithin(LATE_TIMEOUT), "event late 30ms for PJRT_LoadedExecutable_Execute", Ok),
        case(
            ExecuteReplicatedWithin(LATE_TIMEOUT),
            "event late 30ms error for PJRT_LoadedExecutable_Execute",
            Pjrt("PJRT_Event_Error"),
        ),
        fail_case(ExecutableDelete, "PJRT_LoadedExecutable_Delete"),
        fail_case(ExecutableIsDeleted, "PJRT_LoadedExecutable_IsDeleted"),
        Case { stays: Some("executables_created"), ..case(DropExecutable, "fail PJRT_Executable_Destroy", Ok) },
        Case {
            stays: Some("loaded_executables_created"),
            ..case(DropExecutable, "fail PJRT_LoadedExecutable_Destroy", Ok)
        },
    ];
    cases.extend(handle_cases(Compile, "PJRT_Client_Compile"));
    cases.extend(handle_cases(Compile, "PJRT_LoadedExecutable_GetExecutable"));
    cases.extend(array_cases(Compile, "PJRT_Executable_Name"));
    cases.extend(array_cases(Compile, "PJRT_Executable_OutputElementTypes"));
    cases.extend(array_cases(Compile, "PJRT_Executable_OutputDimensions"));
    cases.extend(array_cases(Compile, "PJRT_LoadedExecutable_AddressableDevices"));
    // The deprecated per-loaded-executable fingerprint stands in when the new one fails; when both
    // fail, the first error is the one reported.
    cases.push(case(Fingerprint, "fail PJRT_Executable_Fingerprint", Ok));
    cases.push(case(
        Fingerprint,
        "fail PJRT_Executable_Fingerprint\nfail PJRT_LoadedExecutable_Fingerprint",
        Pjrt("PJRT_Executable_Fingerprint"),
    ));
    cases.push(case(Fingerprint, "null_output PJRT_Executable_Fingerprint", Invalid));
    cases.push(case(Fingerprint, "bad_count PJRT_Executable_Fingerprint", Invalid));
    cases.push(case(
        Fingerprint,
        "fail PJRT_Executable_Fingerprint\nbad_count PJRT_LoadedExecutable_Fingerprint",
        Invalid,
    ));
    cases.push(fail_case(CodeSize, "PJRT_Executable_SizeOfGeneratedCodeInBytes"));
    cases.extend(array_cases(CostAnalysis, "PJRT_Executable_GetCostAnalysis"));
    cases.extend(array_cases(OutputMemoryKinds, "PJRT_Executable_OutputMemoryKinds"));
    cases.extend(array_cases(ParameterMemoryKinds, "PJRT_Executable_ParameterMemoryKinds"));
    cases.push(fail_case(CompiledMemoryStats, "PJRT_Executable_GetCompiledMemoryStats"));
    cases.extend(array_cases(CompileOptionsOf, "PJRT_Executable_GetCompileOptions"));
    cases.extend(array_cases(DeviceAssignmentOf, "PJRT_LoadedExecutable_GetDeviceAssignment"));
    cases.extend(array_cases(LogicalIds, "PJRT_LoadedExecutable_AddressableDeviceLogicalIds"));
    cases.extend(handle_cases(TransferManagerData, "PJRT_Client_CreateBuffersForAsyncHostToDevice"));
    for slot in [
        "PJRT_AsyncHostToDeviceTransferManager_BufferCount",
        "PJRT_AsyncHostToDeviceTransferManager_BufferSize",
        "PJRT_AsyncHostToDeviceTransferManager_AddMetadata",
        "PJRT_AsyncHostToDeviceTransferManager_TransferData",
    ] {
        cases.push(fail_case(TransferManagerData, slot));
    }
    cases.extend(handle_cases(TransferManagerData, "PJRT_AsyncHostToDeviceTransferManager_Device"));
    cases.extend(handle_cases(TransferManagerData, "PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer"));
    cases.push(case(
        TransferManagerData,
        "event error for PJRT_AsyncHostToDeviceTransferManager_TransferData",
        Pjrt("PJRT_Event_Await"),
    ));
    cases.push(case(TransferManagerData, "event late 30ms for PJRT_AsyncHostToDeviceTransferManager_TransferData", Ok));
    // No done event: nothing says the plugin stopped reading the (borrowed) data.
    cases.push(case(TransferManagerData, "null_output PJRT_AsyncHostToDeviceTransferManager_TransferData", Invalid));
    cases.push(fail_case(TransferManagerLiteral, "PJRT_AsyncHostToDeviceTransferManager_TransferLiteral"));
    cases.push(case(
        TransferManagerLiteral,
        "null_output PJRT_AsyncHostToDeviceTransferManager_TransferLiteral",
        Invalid,
    ));
    cases.push(fail_case(TransferManagerError, "PJRT_AsyncHostToDeviceTransferManager_SetBufferError"));
    cases.push(Case {
        stays: Some("transfer_managers_created"),
        ..case(TransferManagerLiteral, "fail PJRT_AsyncHostToDeviceTransferManager_Destroy", Ok)
    });
    cases.extend(handle_cases(Uninitialized, "PJRT_Client_CreateUninitializedBuffer"));
    cases.extend(handle_cases(ErrorBuffer, "PJRT_Client_CreateErrorBuffer"));
    cases.push(fail_case(IsOnCpu, "PJRT_Buffer_IsOnCpu"));
    cases.extend(array_cases(LegacyLayout, "PJRT_Buffer_GetMemoryLayout"));
    cases.extend(array_cases(UnpaddedDimensions, "PJRT_Buffer_UnpaddedDimensions"));
    cases.extend(array_cases(DynamicDimensions, "PJRT_Buffer_DynamicDimensionIndices"));
    cases.push(fail_case(UnsafePointer, "PJRT_Buffer_UnsafePointer"));
    cases.push(fail_case(ExternalReference, "PJRT_Buffer_IncreaseExternalReferenceCount"));
    cases.push(fail_case(ExternalReference, "PJRT_Buffer_OpaqueDeviceMemoryDataPointer"));
    // A release that fails cannot be reported from Drop; the buffer stays usable.
    cases.push(case(ExternalReference, "fail PJRT_Buffer_DecreaseExternalReferenceCount", Ok));
    cases.push(fail_case(RawCopy, "PJRT_Buffer_CopyRawToHost"));
    // No event: nothing says when the plugin stops writing, so the destination is leaked, not freed.
    cases.push(case(RawCopy, "null_output PJRT_Buffer_CopyRawToHost", Invalid));
    cases.push(case(RawCopy, "event error for PJRT_Buffer_CopyRawToHost", Pjrt("PJRT_Event_Await")));
    cases.push(case(RawCopy, "event late 30ms for PJRT_Buffer_CopyRawToHost", Ok));
    cases.extend(handle_cases(Bitcast, "PJRT_Buffer_Bitcast"));
    cases.extend(handle_cases(ClientTopology, "PJRT_Client_TopologyDescription"));
    cases.extend(array_cases(TopologyName, "PJRT_TopologyDescription_PlatformName"));
    cases.extend(array_cases(TopologyVersion, "PJRT_TopologyDescription_PlatformVersion"));
    cases.extend(array_cases(TopologyDescriptions, "PJRT_TopologyDescription_GetDeviceDescriptions"));
    cases.extend(array_cases(TopologyAttributes, "PJRT_TopologyDescription_Attributes"));
    cases.push(fail_case(TopologyFingerprint, "PJRT_TopologyDescription_Fingerprint"));
    cases.extend(array_cases(TopologySerialize, "PJRT_TopologyDescription_Serialize"));
    cases.extend(array_cases(TopologyKindIds, "PJRT_TopologyDescription_GetMemorySpaceKindIds"));
    cases.extend(array_cases(CanonicalShape, "PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace"));
    // The kind ids are read first, to check the kind: their failure is the shape's failure.
    cases.push(case(
        CanonicalShape,
        "fail PJRT_TopologyDescription_GetMemorySpaceKindIds",
        Pjrt("PJRT_TopologyDescription_GetMemorySpaceKindIds"),
    ));
    // Serialized bytes that cannot be read are an error, and their owner is still freed.
    cases.extend(array_cases(Serialize, "PJRT_Executable_Serialize"));
    cases.extend(handle_cases(DeserializeAndLoad, "PJRT_Executable_DeserializeAndLoad"));
    cases.extend(handle_cases(TopologyCreate, "PJRT_TopologyDescription_Create"));
    cases.extend(handle_cases(TopologyDeserialize, "PJRT_TopologyDescription_Deserialize"));
    // A failed destroy cannot be reported from Drop: the plugin keeps the topology.
    cases.push(Case {
        stays: Some("topologies_created"),
        ..case(DropTopology, "fail PJRT_TopologyDescription_Destroy", Ok)
    });
    cases.extend(handle_cases(AotCompile, "PJRT_Compile"));
    cases.extend(handle_cases(ClientLoad, "PJRT_Client_Load"));
    cases.extend(handle_cases(View, "PJRT_Client_CreateViewOfDeviceBuffer"));
    cases.extend(handle_cases(Donate, "PJRT_Buffer_DonateWithControlDependency"));
    // The fulfil callback goes back to the plugin exactly once: on success, on failure, or when
    // the fulfiller is dropped (the counters check it).
    cases.extend(handle_cases(Alias, "PJRT_Client_CreateAliasBuffer"));
    cases.push(fail_case(Alias, "PJRT_Client_FulfillAliasBuffer"));
    cases.push(fail_case(AliasFail, "PJRT_Client_FulfillAliasBuffer"));
    cases.push(fail_case(RawCopyFuture, "PJRT_Buffer_CopyRawToHostFuture"));
    // No event (with a callback): the request is cancelled, which hands its data back.
    cases.push(case(RawCopyFuture, "null_output PJRT_Buffer_CopyRawToHostFuture", Invalid));
    for slot in [
        "PJRT_CopyToDeviceStream_TotalBytes",
        "PJRT_CopyToDeviceStream_GranuleSize",
        "PJRT_CopyToDeviceStream_CurrentBytes",
        "PJRT_CopyToDeviceStream_AddChunk",
    ] {
        cases.push(fail_case(HostReceive, slot));
    }
    cases.push(case(HostReceive, "event error for PJRT_CopyToDeviceStream_AddChunk", Pjrt("PJRT_Event_Await")));
    cases.push(case(HostReceive, "event late 30ms for PJRT_CopyToDeviceStream_AddChunk", Ok));
    cases
        .push(Case { stays: Some("streams_created"), ..case(HostReceive, "fail PJRT_CopyToDeviceStream_Destroy", Ok) });
    cases.push(fail_case(NewExecuteContext, "PJRT_ExecuteContext_Create"));
    cases.push(case(NewExecuteContext, "null_output PJRT_ExecuteContext_Create", Invalid));
    cases.push(Case {
        stays: Some("execute_contexts_created"),
        ..case(NewExecuteContext, "fail PJRT_ExecuteContext_Destroy", Ok)
    });
    cases
}

/// Slots only reachable while a plugin loads: covered by `load_time_faults_from_the_sidecar`.
const LOAD_TIME_SLOTS: &[&str] = &["PJRT_Plugin_Initialize", "PJRT_Plugin_Attributes"];
/// `void` slots: they cannot fail, and every case with an error exercises this one.
const VOID_SLOTS: &[&str] = &["PJRT_Error_Destroy"];

// ---------------------------------------------------------------------------------------------
// The operations

struct Env {
    fake: Fake,
    plugin: Plugin,
    client: Client,
}

const A: [f32; 4] = [1., 2., 3., 4.];
const B: [f32; 4] = [10., 20., 30., 40.];
const SUM: [f32; 4] = [11., 22., 33., 44.];

fn upload(client: &Client, data: &[f32; 4], device: usize) -> pjrt_client::Result<Buffer> {
    let devices = client.devices();
    client.upload_with(HostSource::slice(data, &[4]), &UploadOptions::new().device(&devices[device]))
}

fn f32_4() -> ArrayShape {
    ArrayShape { element_type: Some(ElementType::F32), dims: vec![4] }
}

impl Op {
    /// Runs the operation; `Ok(false)` means success with a degraded result.
    fn run(self, env: &Env, arm: &dyn Fn()) -> pjrt_client::Result<bool> {
        let client = &env.client;
        let devices = client.devices();
        let d1 = devices[1];
        let bytes: Vec<u8> = A.iter().flat_map(|v| v.to_ne_bytes()).collect();
        match self {
            Op::ClientNew => {
                arm();
                let client = Client::new(&env.plugin, &ClientOptions::new())?;
                Ok(client.devices().len() == 2 && client.platform_name() == "fake")
            }
            Op::DmaMap => {
                arm();
                let mapping = client.dma_map(pjrt_client::AlignedHostBuffer::zeroed(256)?)?;
                Ok(mapping.unmap()?.len() == 256)
            }
            Op::UpdateGlobalProcessInfo => {
                arm();
                let infos = [
                    ProcessInfo::new(0, 1, ProcessState::Connected),
                    ProcessInfo {
                        error: Some((ErrorCode::Unavailable, "gone".into())),
                        ..ProcessInfo::new(1, 2, ProcessState::Error)
                    },
                ];
                client.update_global_process_info(&infos)?;
                Ok(true)
            }
            Op::MemoryStats => {
                arm();
                let stats = d1.memory_stats()?;
                Ok(stats.bytes_in_use == 1024 && stats.peak_bytes_in_use == Some(4096) && stats.num_allocs.is_none())
            }
            Op::ClearMemoryStats => {
                arm();
                d1.clear_memory_stats()?;
                Ok(true)
            }
            Op::RuntimeAttributes => {
                arm();
                Ok(d1.runtime_attributes()? == [("fake_device_index".to_owned(), pjrt_client::Value::Int64(1))])
            }
            Op::PoisonExecution => {
                arm();
                Ok(!d1.poison_execution(3, ErrorCode::Aborted, "stop")?)
            }
            Op::AsyncTrackingEvent => {
                arm();
                let event = d1.async_tracking_event("fault case")?;
                Ok(event.is_some())
            }
            Op::CodeSize => {
                let executable = compile(client, 1)?;
                arm();
                Ok(executable.generated_code_size()? == 4096)
            }
            Op::CostAnalysis => {
                let executable = compile(client, 1)?;
                arm();
                Ok(executable.cost_analysis()? == [("flops".to_owned(), pjrt_client::Value::Int64(4))])
            }
            Op::OutputMemoryKinds => {
                let executable = compile(client, 1)?;
                arm();
                Ok(executable.output_memory_kinds()? == ["device"])
            }
            Op::ParameterMemoryKinds => {
                let executable = compile(client, 1)?;
                arm();
                Ok(executable.parameter_memory_kinds()? == ["device", "device"])
            }
            Op::CompiledMemoryStats => {
                let executable = compile(client, 1)?;
                arm();
                let stats = executable.compiled_memory_stats()?;
                Ok(stats.argument_size_in_bytes == 32 && stats.peak_memory_in_bytes == Some(48))
            }
            Op::CompileOptionsOf => {
                let executable = compile(client, 2)?;
                arm();
                let options = executable.compile_options()?;
                Ok(options.num_replicas_requested() == 2 && options.num_partitions_requested() == 1)
            }
            Op::DeviceAssignmentOf => {
                let executable = compile(client, 2)?;
                arm();
                Ok(executable.device_assignment()? == pjrt_client::DeviceAssignment::new(vec![vec![0], vec![1]])?)
            }
            Op::LogicalIds => {
                let executable = compile(client, 2)?;
                arm();
                let ids = executable.addressable_device_logical_ids()?;
                Ok(ids.iter().map(|id| (id.replica, id.partition)).collect::<Vec<_>>() == [(0, 0), (1, 0)])
            }
            Op::NewExecuteContext => {
                arm();
                let context = pjrt_client::ExecuteContext::new(&env.plugin)?;
                drop(context);
                Ok(true)
            }
            Op::TransferManagerData => {
                arm();
                let manager = client.create_buffers_for_async_host_to_device(
                    &[ShapeSpec::new(ElementType::F32, &[4])],
                    Placement::Device(&d1),
                )?;
                let facts = manager.buffer_count()? == 1 && manager.buffer_size(0)? == 16 && manager.device()? == d1;
                manager.add_metadata(&[("origin".to_owned(), pjrt_client::Value::String("fault case".into()))])?;
                manager.transfer_data(0, &bytes[..8], 0, false)?;
                manager.transfer_data(0, &bytes[8..], 8, true)?;
                Ok(facts && manager.retrieve_buffer(0)?.to_vec::<f32>()? == A)
            }
            Op::TransferManagerLiteral => {
                arm();
                let manager = client.create_buffers_for_async_host_to_device(
                    &[ShapeSpec::new(ElementType::S32, &[2])],
                    Placement::Default,
                )?;
                let data: Vec<u8> = [7i32, 8].iter().flat_map(|v| v.to_ne_bytes()).collect();
                manager.transfer_literal(0, &data)?;
                Ok(manager.retrieve_buffer(0)?.to_vec::<i32>()? == [7, 8])
            }
            Op::TransferManagerError => {
                arm();
                let manager = client.create_buffers_for_async_host_to_device(
                    &[ShapeSpec::new(ElementType::U8, &[3])],
                    Placement::Default,
                )?;
                manager.set_buffer_error(0, ErrorCode::Unavailable, "gone")?;
                let buffer = manager.retrieve_buffer(0)?;
                match buffer.ready_event()?.wait_timeout(Duration::from_secs(LATE_TIMEOUT)) {
                    Err(Error::Pjrt { code: ErrorCode::Unavailable, message, .. }) => Ok(message == "gone"),
                    other => other.map(|()| false),
                }
            }
            Op::Uninitialized => {
                arm();
                let buffer = client.create_uninitialized_buffer(ElementType::S32, &[2, 3], Placement::Device(&d1))?;
                Ok(buffer.dimensions()? == [2, 3] && buffer.device()? == d1)
            }
            Op::ErrorBuffer => {
                arm();
                let buffer = client.create_error_buffer(
                    ErrorCode::DataLoss,
                    "boom",
                    ElementType::F32,
                    &[4],
                    Placement::Default,
                )?;
                match buffer.ready_event()?.wait_timeout(Duration::from_secs(LATE_TIMEOUT)) {
                    Err(Error::Pjrt { code: ErrorCode::DataLoss, message, .. }) => Ok(message == "boom"),
                    other => other.map(|()| false),
                }
            }
            Op::IsOnCpu => {
                let buffer = upload(client, &A, 0)?;
                arm();
                Ok(buffer.is_on_cpu()?)
            }
            Op::LegacyLayout => {
                let buffer = upload(client, &A, 0)?;
                arm();
                Ok(buffer.legacy_memory_layout()? == pjrt_client::MemoryLayout::dense(1))
            }
            Op::UnpaddedDimensions => {
                let buffer = upload(client, &A, 0)?;
                arm();
                Ok(buffer.unpadded_dimensions()? == [4])
            }
            Op::DynamicDimensions => {
                let buffer = upload(client, &A, 0)?;
                arm();
                Ok(buffer.dynamic_dimension_indices()?.is_empty())
            }
            Op::UnsafePointer => {
                let buffer = upload(client, &A, 0)?;
                arm();
                Ok(!buffer.unsafe_pointer()?.is_null())
            }
            Op::ExternalReference => {
                let buffer = upload(client, &A, 0)?;
                arm();
                let reference = buffer.external_reference()?;
                let pointer = reference.device_pointer()?;
                drop(reference);
                Ok(!pointer.is_null())
            }
            Op::RawCopy => {
                let buffer = upload(client, &A, 0)?;
                arm();
                let bytes = buffer.to_bytes(DownloadOptions::new().raw(4, 8))?;
                Ok(bytes == [2f32, 3.].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>())
            }
            Op::Bitcast => {
                let buffer = upload(client, &A, 0)?;
                arm();
                let square = buffer.bitcast(ElementType::F32, &[2, 2])?;
                Ok(square.dimensions()? == [2, 2] && square.to_vec::<f32>()? == A)
            }
            Op::ClientTopology => {
                arm();
                let topology = client.topology()?;
                Ok(!topology.as_raw().is_null())
            }
            Op::TopologyName => {
                let topology = client.topology()?;
                arm();
                Ok(topology.platform_name()? == "fake")
            }
            Op::TopologyVersion => {
                let topology = client.topology()?;
                arm();
                Ok(topology.platform_version()? == "fake 0.1")
            }
            Op::TopologyDescriptions => {
                let topology = client.topology()?;
                arm();
                let descriptions = topology.device_descriptions()?;
                Ok(descriptions.len() == 2 && descriptions[1].id()? == 1 && topology.device_count()? == 2)
            }
            Op::TopologyAttributes => {
                let topology = client.topology()?;
                arm();
                Ok(topology.attributes()?.len() == 2)
            }
            Op::TopologyFingerprint => {
                let topology = client.topology()?;
                arm();
                Ok(topology.fingerprint()? == 0xfa4e)
            }
            Op::TopologySerialize => {
                let topology = client.topology()?;
                arm();
                Ok(topology.serialize()? == b"fake topology")
            }
            Op::TopologyKindIds => {
                let topology = client.topology()?;
                arm();
                Ok(topology.memory_space_kind_ids()? == [0, 1])
            }
            Op::CanonicalShape => {
                let topology = client.topology()?;
                arm();
                let shape = topology.canonical_shape(1, ElementType::F32, &[2, 3])?;
                Ok(shape.primitive_type == 11 && shape.dims == [2, 3] && shape.minor_to_major == Some(vec![1, 0]))
            }
            Op::Serialize => {
                let executable = compile(client, 2)?;
                arm();
                Ok(executable.serialize()? == b"fake-executable 2 1")
            }
            Op::DeserializeAndLoad => {
                let bytes = compile(client, 2)?.serialize()?;
                arm();
                let again = client.deserialize_and_load(&bytes)?;
                Ok(again.num_replicas() == 2 && again.output_shapes() == [f32_4()])
            }
            Op::TopologyCreate => {
                arm();
                let topology = Topology::create(&env.plugin, "fake", &[])?;
                Ok(topology.platform_name()? == "fake" && topology.device_count()? == 2)
            }
            Op::TopologyDeserialize => {
                let bytes = client.topology()?.serialize()?;
                arm();
                let topology = Topology::deserialize(&env.plugin, &bytes)?;
                Ok(topology.fingerprint()? == 0xfa4e)
            }
            Op::DropTopology => {
                let topology = Topology::create(&env.plugin, "fake", &[])?;
                arm();
                drop(topology);
                Ok(true)
            }
            Op::AotCompile => {
                let topology = Topology::create(&env.plugin, "fake", &[])?;
                arm();
                let compiled = topology.compile(&program(), &CompileOptions::new().num_replicas(2), None)?;
                Ok(compiled.name()? == "fake_add" && compiled.num_replicas()? == 2)
            }
            Op::ClientLoad => {
                let compiled = client.topology()?.compile(&program(), &CompileOptions::new(), Some(client))?;
                let (a, b) = (upload(client, &A, 0)?, upload(client, &B, 0)?);
                arm();
                let loaded = client.load(&compiled, &CompileOptions::new())?;
                Ok(loaded.execute(&[&a, &b], &ExecuteOptions::new())?[0].to_vec::<f32>()? == SUM)
            }
            Op::View => {
                let memory = A.to_vec();
                let deleted = Arc::new(AtomicBool::new(false));
                let on_delete = {
                    let deleted = deleted.clone();
                    Box::new(move || deleted.store(true, Ordering::SeqCst))
                };
                arm();
                // SAFETY: `memory` holds an f32[4] and outlives the view (dropped below).
                let view = unsafe {
                    client.view_of_device_pointer(
                        memory.as_ptr() as *mut std::ffi::c_void,
                        ElementType::F32,
                        &[4],
                        Placement::Device(&d1),
                        Some(on_delete),
                    )
                };
                // Whatever happened, nothing may still hold the callback's closure but the plugin
                // (after success, until the view is dropped).
                let view = match view {
                    Ok(view) => view,
                    Err(e) => {
                        assert_eq!(Arc::strong_count(&deleted), 1, "a failed view keeps its on-delete closure");
                        return Err(e);
                    }
                };
                let read = view.to_vec::<f32>()? == A;
                drop(view);
                Ok(read && deleted.load(Ordering::SeqCst) && Arc::strong_count(&deleted) == 1)
            }
            Op::Donate => {
                let buffer = upload(client, &A, 0)?;
                arm();
                let (donated, dependency) = buffer.donate_with_control_dependency()?;
                dependency.ready();
                Ok(buffer.is_deleted()? && donated.to_vec::<f32>()? == A)
            }
            Op::Alias | Op::AliasFail => {
                let memory = d1.default_memory()?;
                let source = upload(client, &B, 1)?;
                arm();
                let (alias, fulfiller) =
                    client.create_alias_buffer(ElementType::F32, &[4], Placement::Memory(&memory))?;
                if matches!(self, Op::AliasFail) {
                    fulfiller.fail(ErrorCode::Aborted, "no data")?;
                    return Ok(alias.dimensions()? == [4]);
                }
                fulfiller.fulfill(&source)?;
                Ok(source.is_deleted()? && alias.dimensions()? == [4])
            }
            Op::RawCopyFuture => {
                let buffer = upload(client, &A, 0)?;
                arm();
                let request = buffer.raw_copy_request(4, 8)?;
                let copied = request.fulfill(vec![0; 8])?.wait_timeout(Duration::from_secs(LATE_TIMEOUT))?;
                Ok(copied == [2f32, 3.].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>())
            }
            Op::HostReceive => {
                let executable = compile(client, 1)?;
                let (a, b) = (upload(client, &A, 0)?, upload(client, &B, 0)?);
                let received = Arc::new(AtomicBool::new(false));
                // The chunks' events, waited for here: a callback may not wait for the plugin.
                let chunk_events = Arc::new(Mutex::new(Vec::new()));
                let options = {
                    let (received, chunk_events) = (received.clone(), chunk_events.clone());
                    ExecuteOptions::new().on_recv(1, move |stream| {
                        let size = usize::try_from(stream.total_bytes()?).unwrap_or(0);
                        if let Some(done) = stream.add_chunk(vec![7; size])? {
                            chunk_events.lock().unwrap().push(done);
                        }
                        received.store(stream.current_bytes()? == 16, Ordering::SeqCst);
                        Ok(())
                    })
                };
                arm();
                let out = executable.execute(&[&a, &b], &options)?;
                if let Some(failure) = options.take_callback_failures().into_iter().next() {
                    return Err(failure);
                }
                let chunk_events = std::mem::take(&mut *chunk_events.lock().unwrap());
                for done in chunk_events {
                    done.wait()?;
                }
                Ok(received.load(Ordering::SeqCst) && out[0].to_vec::<f32>()? == SUM)
            }
            Op::UserEvent => {
                arm();
                let event = UserEvent::new(&env.plugin)?;
                event.set_error(ErrorCode::Aborted, "stop")?;
                match event.event().wait() {
                    Err(Error::Pjrt { code: ErrorCode::Aborted, message, .. }) => Ok(message == "stop"),
                    other => other.map(|()| false),
                }
            }
            Op::LookupDevice => {
                arm();
                Ok(client.lookup_device(1)? == d1)
            }
            Op::LookupAddressableDevice => {
                arm();
                Ok(client.lookup_addressable_device(1)? == d1)
            }
            Op::AddressableMemories => {
                arm();
                Ok(client.addressable_memories()?.len() == 3)
            }
            Op::DefaultDeviceAssignment => {
                arm();
                Ok(client.default_device_assignment(2, 1)? == [[0], [1]])
            }
            Op::DeviceId => {
                arm();
                Ok(d1.id()? == 1)
            }
            Op::DeviceProcessIndex => {
                arm();
                Ok(d1.process_index()? == 0)
            }
            Op::DeviceKind => {
                arm();
                Ok(d1.kind()? == "fake")
            }
            Op::DeviceDebugString => {
                arm();
                Ok(d1.debug_string()?.contains("id=1"))
            }
            Op::DeviceToString => {
                arm();
                Ok(d1.to_string()? == "FakeDevice(id=1)")
            }
            Op::DeviceAttributes => {
                arm();
                Ok(d1.attributes()?.len() == 2)
            }
            Op::DeviceIsAddressable => {
                arm();
                d1.is_addressable()
            }
            Op::DeviceLocalHardwareId => {
                arm();
                Ok(d1.local_hardware_id()? == 1)
            }
            Op::DeviceMemories => {
                arm();
                Ok(d1.memories()?.len() == 2)
            }
            Op::DeviceDefaultMemory => {
                arm();
                Ok(d1.default_memory()?.to_string()? == "FAKE_DEVICE_1")
            }
            Op::MemoryId | Op::MemoryKind | Op::MemoryKindId | Op::MemoryDebugString | Op::MemoryToString => {
                let memory = d1.default_memory()?;
                arm();
                Ok(match self {
                    Op::MemoryId => memory.id()? == 1,
                    Op::MemoryKind => memory.kind()? == "device",
                    Op::MemoryKindId => memory.kind_id()? == 0,
                    Op::MemoryDebugString => memory.debug_string()?.contains("device"),
                    _ => memory.to_string()? == "FAKE_DEVICE_1",
                })
            }
            Op::MemoryDevices => {
                let pinned = client.addressable_memories()?[2];
                arm();
                Ok(pinned.devices()?.len() == 2)
            }
            Op::Upload => {
                arm();
                let buffer = client.upload(&A, &[4])?;
                Ok(buffer.dimensions()? == [4])
            }
            Op::UploadUntilDone => {
                let layout = UploadOptions::new().semantics(HostBufferSemantics::CopyUntilTransferCompletes);
                arm();
                client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[4]), &layout)?;
                Ok(true)
            }
            Op::BufferElementType
            | Op::BufferDimensions
            | Op::BufferDevice
            | Op::BufferMemory
            | Op::BufferOnDeviceSize
            | Op::BufferDelete
            | Op::BufferIsDeleted => {
                // A copy: its shape is not known until asked.
                let copy = upload(client, &A, 0)?.copy_to_device(&d1)?;
                arm();
                Ok(match self {
                    Op::BufferElementType => copy.element_type()? == ElementType::F32,
                    Op::BufferDimensions => copy.dimensions()? == [4] && copy.element_count()? == 4,
                    Op::BufferDevice => copy.device()? == d1,
                    Op::BufferMemory => copy.memory()?.to_string()? == "FAKE_DEVICE_1",
                    Op::BufferOnDeviceSize => copy.on_device_size()? == 16,
                    Op::BufferDelete => {
                        copy.delete()?;
                        true
                    }
                    _ => !copy.is_deleted()?,
                })
            }
            Op::ReadyEventWait => {
                let buffer = upload(client, &A, 0)?;
                arm();
                buffer.ready_event()?.wait()?;
                Ok(true)
            }
            Op::ReadyEventWithin(ms) => {
                let buffer = upload(client, &A, 0)?;
                arm();
                buffer.ready_event()?.wait_timeout(Duration::from_millis(ms))?;
                Ok(true)
            }
            Op::OnReady => {
                let buffer = upload(client, &A, 0)?;
                arm();
                let event = buffer.ready_event()?;
                let (sender, receiver) = mpsc::channel();
                event
                    .on_ready(move |status| {
                        let _ = sender.send(status);
                    })?
                    .wait()?;
                receiver.recv().expect("the callback ran")?;
                Ok(true)
            }
            Op::ToVec => {
                let buffer = upload(client, &A, 0)?;
                arm();
                Ok(buffer.to_vec::<f32>()? == A)
            }
            Op::ToHostWithin(ms) => {
                let buffer = upload(client, &A, 0)?;
                arm();
                let transfer = buffer.to_bytes_async(DownloadOptions::new().destination(vec![0; 16]))?;
                Ok(transfer.wait_timeout(Duration::from_millis(ms))? == bytes)
            }
            Op::CopyToDevice => {
                let buffer = upload(client, &A, 0)?;
                arm();
                buffer.copy_to_device(&d1)?;
                Ok(true)
            }
            Op::CopyToMemory => {
                let buffer = upload(client, &A, 0)?;
                let pinned = client.addressable_memories()?[2];
                arm();
                buffer.copy_to_memory(&pinned)?;
                Ok(true)
            }
            Op::Compile => {
                arm();
                let executable = compile(client, 1)?;
                Ok(executable.output_shapes() == [f32_4()] && executable.name() == "fake_add")
            }
            Op::ParameterShapes => {
                let executable = compile(client, 1)?;
                arm();
                Ok(executable.parameter_shapes() == Some(&[f32_4(), f32_4()][..]))
            }
            Op::Execute => {
                let executable = compile(client, 1)?;
                let (a, b) = (upload(client, &A, 0)?, upload(client, &B, 0)?);
                arm();
                Ok(executable.execute(&[&a, &b], &ExecuteOptions::new())?.len() == 1)
            }
            Op::ExecuteReplicated | Op::ExecuteReplicatedWithin(_) => {
                let executable = compile(client, 2)?;
                let (a0, b0) = (upload(client, &A, 0)?, upload(client, &B, 0)?);
                let (a1, b1) = (upload(client, &A, 1)?, upload(client, &B, 1)?);
                arm();
                let mut execution =
                    executable.execute_sharded_async(&[[&a0, &b0], [&a1, &b1]], &ExecuteOptions::new())?;
                let outputs = match self {
                    Op::ExecuteReplicatedWithin(ms) => execution.wait_timeout(Duration::from_millis(ms))?,
                    _ => execution.wait()?,
                };
                Ok(outputs.len() == 2 && outputs.iter().all(|o| o.len() == 1))
            }
            Op::ExecutableDelete => {
                let executable = compile(client, 1)?;
                arm();
                executable.delete()?;
                Ok(true)
            }
            Op::ExecutableIsDeleted => {
                let executable = compile(client, 1)?;
                arm();
                Ok(!executable.is_deleted()?)
            }
            Op::Fingerprint => {
                let executable = compile(client, 1)?;
                arm();
                Ok(executable.fingerprint()? == "fake-fingerprint-1")
            }
            Op::DropBuffer => {
                let buffer = upload(client, &A, 0)?;
                arm();
                drop(buffer);
                Ok(true)
            }
            Op::DropEvent => {
                let buffer = upload(client, &A, 0)?;
                let event = buffer.ready_event()?;
                arm();
                drop(event);
                Ok(true)
            }
            Op::DropExecutable => {
                let executable = compile(client, 1)?;
                arm();
                drop(executable);
                Ok(true)
            }
            Op::DropClient => {
                let other = Client::new(&env.plugin, &ClientOptions::new())?;
                arm();
                drop(other);
                Ok(true)
            }
        }
    }
}

/// Normal work on the client (and a new one) with no fault armed.
fn smoke(env: &Env) -> pjrt_client::Result<()> {
    let client = &env.client;
    let devices = client.devices();
    assert_eq!(devices.len(), 2);
    assert_eq!(client.lookup_device(1)?, devices[1]);
    assert_eq!(devices[1].kind()?, "fake");
    assert_eq!(devices[1].memories()?.len(), 2);
    let executable = compile(client, 1)?;
    assert_eq!(executable.parameter_shapes(), Some(&[f32_4(), f32_4()][..]));
    let (a, b) = (upload(client, &A, 0)?, upload(client, &B, 0)?);
    let out = executable.execute(&[&a, &b], &ExecuteOptions::new())?;
    assert_eq!(out[0].to_vec::<f32>()?, SUM);
    assert_eq!(a.copy_to_device(&devices[1])?.to_vec::<f32>()?, A);
    let pinned = client.addressable_memories()?[2];
    assert_eq!(b.copy_to_memory(&pinned)?.to_vec::<f32>()?, B);
    b.ready_event()?.wait_timeout(Duration::from_secs(10))?;
    let other = Client::new(&env.plugin, &ClientOptions::new())?;
    assert_eq!(other.devices().len(), 2);
    Ok(())
}

fn check(expect: Expect, result: &pjrt_client::Result<bool>) -> Result<(), String> {
    let fine = match (expect, result) {
        (Expect::Pjrt(f), Err(Error::Pjrt { function, code: ErrorCode::Internal, message, .. })) => {
            *function == f && message.starts_with("fake:")
        }
        (Expect::PjrtExactly(f, c, m), Err(Error::Pjrt { function, code, message, .. })) => {
            *function == f && *code == c && message == m
        }
        (Expect::Invalid, Err(Error::InvalidArgument(_))) => true,
        (Expect::Timeout, Err(Error::Timeout { .. })) => true,
        (Expect::Ok, Ok(true)) => true,
        (Expect::Degraded, Ok(false)) => true,
        _ => false,
    };
    if fine {
        Ok(())
    } else {
        Err(format!("expected {expect:?}, got {result:?}"))
    }
}

/// Runs every case on one fresh copy of the fake and reports all failures together.
fn run_matrix(cases: Vec<Case>) {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let env = Env { fake, plugin, client };
    smoke(&env).expect("the client works before any fault");
    let mut failures = Vec::new();
    for case in &cases {
        let label = format!("{:?} with `{}`", case.op, case.faults.replace('\n', "; "));
        if let Err(message) = run_case(&env, case) {
            failures.push(format!("{label}: {message}"));
        }
    }
    env.fake.set_faults("");
    drop(env.client);
    env.fake.settle();
    let stays: Vec<&str> = cases.iter().filter_map(|c| c.stays).collect();
    for (kind, (created, destroyed)) in OBJECT_KINDS.iter().enumerate() {
        let expected = stays.iter().filter(|s| **s == OBJECT_KINDS[kind].0).count() as i64;
        let live = env.fake.counter(created) - env.fake.counter(destroyed);
        if live != expected {
            failures.push(format!("at the end: {live} {created} not destroyed, expected {expected}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} fault cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

fn run_case(env: &Env, case: &Case) -> Result<(), String> {
    let fake = &env.fake;
    fake.set_faults("");
    fake.settle();
    let mut expected_live = fake.live_objects();
    if let Some(kind) = case.stays {
        let index = OBJECT_KINDS.iter().position(|(created, _)| *created == kind).unwrap();
        expected_live[index] += 1;
    }
    let injected = fake.counter("faults_injected");
    let arm = || fake.set_faults(case.faults);
    let result =
        catch_unwind(AssertUnwindSafe(|| case.op.run(env, &arm))).map_err(|_| "the operation panicked".to_owned())?;
    // What the operation dropped inside a plugin callback is destroyed on the release thread:
    // let that happen while the faults still apply.
    pjrt_client::flush_released();
    fake.set_faults("");
    check(case.expect, &result)?;
    if fake.counter("faults_injected") == injected {
        return Err(format!("the fault never fired (result {result:?})"));
    }
    let leaks = |when: &str| {
        fake.settle();
        let live = fake.live_objects();
        if live != expected_live {
            let kinds: Vec<String> = OBJECT_KINDS
                .iter()
                .zip(live.iter().zip(&expected_live))
                .filter(|(_, (l, e))| l != e)
                .map(|((created, _), (l, e))| format!("{created}: {l} live, expected {e}"))
                .collect();
            return Err(format!("{when}: {}", kinds.join(", ")));
        }
        Ok(())
    };
    leaks("after the operation")?;
    catch_unwind(AssertUnwindSafe(|| smoke(env)))
        .map_err(|_| "the client is not usable afterwards (panic)".to_owned())?
        .map_err(|e| format!("the client is not usable afterwards: {e}"))?;
    leaks("after the follow-up work")
}

#[test]
fn client_and_device_faults() {
    run_matrix(client_and_device_cases());
}

#[test]
fn buffer_and_event_faults() {
    run_matrix(buffer_and_event_cases());
}

#[test]
fn executable_faults() {
    run_matrix(executable_cases());
}

#[test]
fn never_completing_events_can_be_abandoned() {
    // An event that never completes: every bounded wait times out, each time, and dropping
    // everything afterwards frees every plugin object (only the callbacks the waits registered
    // stay with the plugin, which never calls them).
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let executable = compile(&client, 2).unwrap();
    let devices = client.devices();
    let (a0, b0) = (upload(&client, &A, 0).unwrap(), upload(&client, &B, 0).unwrap());
    let (a1, b1) = (upload(&client, &A, 1).unwrap(), upload(&client, &B, 1).unwrap());
    fake.set_faults("event never");
    let started = Instant::now();
    let mut execution = executable.execute_sharded_async(&[[&a0, &b0], [&a1, &b1]], &ExecuteOptions::new()).unwrap();
    for _ in 0..2 {
        assert!(matches!(execution.wait_timeout(Duration::from_millis(20)), Err(Error::Timeout { .. })));
    }
    let event = a0.ready_event().unwrap();
    assert!(matches!(event.wait_timeout(Duration::ZERO), Err(Error::Timeout { .. })));
    assert!(!event.is_ready().unwrap());
    let transfer = a1.to_bytes_async(DownloadOptions::new().destination(vec![0; 16])).unwrap();
    assert!(matches!(transfer.wait_timeout(Duration::from_millis(20)), Err(Error::Timeout { .. })));
    assert!(started.elapsed() < Duration::from_secs(5));
    drop((execution, event));
    fake.set_faults("");
    assert_eq!(fake.counter("callbacks_invoked"), 0);
    // Still usable, on both devices.
    let mut out = executable.execute_sharded_async(&[[&a0, &b0], [&a1, &b1]], &ExecuteOptions::new()).unwrap();
    let outputs = out.wait_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(outputs[1][0].to_vec::<f32>().unwrap(), SUM);
    assert_eq!(outputs[1][0].device().unwrap(), devices[1]);
    drop(devices);
    drop((outputs, out, a0, b0, a1, b1, executable, client));
    fake.assert_nothing_leaked();
    // 1 from the execution's two waits (both gave up on the first device's event, which
    // registers its callback once, however often it is waited for), 1 from the event, 1 from
    // the transfer: the closures behind them are what the library leaks for such a plugin.
    assert_eq!(fake.counter("callbacks_dropped"), 3);
}

#[test]
fn load_time_faults_from_the_sidecar() {
    // The plugin's load-time calls run before a test could arm anything at run time: these
    // faults come from the sidecar file, after the scenario's name.
    for fault in ["fail", "null_output", "bad_count"] {
        let fake = Fake::with_sidecar("attributes", &format!("working\n{fault} PJRT_Plugin_Attributes\n"));
        let plugin = fake.load().unwrap_or_else(|e| panic!("{fault}: {e}"));
        assert!(plugin.attributes().is_empty(), "{fault}: attributes {:?}", plugin.attributes());
        assert_eq!(fake.counter("faults_injected"), 1, "{fault}");
        let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
        assert_eq!(client.devices().len(), 2);
        drop(client);
        fake.assert_nothing_leaked();
    }

    let fake = Fake::with_sidecar("initialize", "working\nfail PJRT_Plugin_Initialize\n");
    match fake.load() {
        Err(Error::Load { source: LoadError::Initialize(inner), .. }) => match *inner {
            Error::Pjrt { function: "PJRT_Plugin_Initialize", code: ErrorCode::Internal, ref message, .. } => {
                assert_eq!(message, "fake: injected failure in PJRT_Plugin_Initialize");
            }
            ref other => panic!("expected a PJRT_Plugin_Initialize error, got {other:?}"),
        },
        other => panic!("expected LoadError::Initialize, got {other:?}"),
    }
    fake.assert_nothing_leaked();

    // Run-time slots work from the sidecar too, with comments; and can be cleared at run time.
    let fake = Fake::with_sidecar("compile", "working\n# compile fails twice\nfail PJRT_Client_Compile after 1\n");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    compile(&client, 1).unwrap();
    assert!(matches!(compile(&client, 1), Err(Error::Pjrt { function: "PJRT_Client_Compile", .. })));
    fake.set_faults("");
    compile(&client, 1).unwrap();
    drop(client);
    fake.assert_nothing_leaked();

    // A sidecar the fake cannot read fails the load, saying why.
    let fake = Fake::with_sidecar("typo", "working\nfial PJRT_Client_Compile\n");
    match fake.load() {
        Err(Error::Load { source: LoadError::Initialize(inner), .. }) => {
            assert!(inner.to_string().contains("unknown directive `fial`"), "{inner}");
        }
        other => panic!("expected LoadError::Initialize, got {other:?}"),
    }
}

/// Slot names (as in `pjrt_client::sys::SLOTS`) mentioned in `text`.
fn slot_names(text: &str) -> BTreeSet<String> {
    let slots: BTreeSet<&str> = pjrt_client::sys::SLOTS.iter().map(|s| s.name).collect();
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| slots.contains(word))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_called_slot_is_in_the_fault_matrix() {
    let mut covered: BTreeSet<String> = [client_and_device_cases(), buffer_and_event_cases(), executable_cases()]
        .iter()
        .flatten()
        .flat_map(|c| slot_names(c.faults))
        .collect();
    covered.extend(LOAD_TIME_SLOTS.iter().chain(VOID_SLOTS).map(|s| s.to_string()));
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut missing = Vec::new();
    // Every module of the library (the table is only declared, in the pjrt-client-sys crate).
    let mut files = Vec::new();
    crate::layers::rust_files(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "src/ holds the library's modules: {files:?}");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // Code only: a slot named in a comment is not called.
        let code: String =
            text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        for slot in slot_names(&code) {
            if !covered.contains(&slot) {
                missing.push(format!("{slot} ({})", file.strip_prefix(&src).unwrap().display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these slots are called but have no fault case in tests/client/fault_injection.rs (implement them in \
         crates/fake-plugin if needed, then add cases):\n{}",
        missing.join("\n")
    );
}
