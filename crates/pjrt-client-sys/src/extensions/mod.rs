//! Extension structs (declared by hand, gated by each extension's own struct_size).
//!
//! A plugin lists its extensions as a chain of nodes starting at `PJRT_Api.extension_start`.
//! Every node starts with a [`PJRT_Extension_Base`] (`struct_size`, `type_`, `next`), followed by
//! members: function pointers, occasionally data. There is no version field: the node's own
//! `base.struct_size` says how many members the plugin provides, so a member may be read only
//! when `base.struct_size >= offset + size` of that member (see [`Extension::MEMBERS`]); it may
//! still be NULL.
//!
//! Some extensions changed shape over time without a version field, so `struct_size` alone cannot
//! always tell the forms apart:
//! * an older form may be *shorter* and put other functions at the offsets declared here. Such a
//!   form is described by [`Extension::OLDER_FORM`]: a node shorter than
//!   [`OlderForm::below_size`] is that form, and none of its members may be read as declared here
//!   (FFI version 1 at 0.53, `{base, user_data_add}`; a Layouts node shorter than its first known
//!   form, 56 bytes);
//! * an older form may have the *same* size but other args structs (FFI version 2 against 3,
//!   MemoryDescriptions version 0 against 1). Those are handled by the safe wrappers, which send
//!   args valid for every form; the older args structs are declared here too (`*_V2`,
//!   [`PJRT_FFI_TypeID_Register_Args`]).
//!
//! Layouts follow the 0.114 extension headers. The 0.115 CPU plugin's XlaTransform node is longer
//! (56 bytes) than the 0.114 layout declared here (40 bytes): the extra members are unknown to this
//! crate and never read.
//!
//! Args structs are declared with the shared `pjrt_struct!` (`STRUCT_SIZE` = offset of the last
//! field + its size, as in `macros.rs`). Some extension args structs have no `extension_start`
//! (FFI's register_handler, Stream, GPU custom call, Triton, Callback, XlaTransform): they are
//! declared as the API describes them.

//!
//! One file per extension, each with its args structs and its extension struct: `callback.rs`,
//! `custom_partitioner.rs`, `ffi.rs`, `gpu_custom_call.rs`, `layouts.rs`,
//! `memory_descriptions.rs`, `phase_compile.rs`, `profiler.rs`, `raw_buffer.rs`, `shardings.rs`,
//! `stream.rs`, `tpu_topology.rs`, `triton.rs`, `xla_transform.rs`. This file holds what they share: the member
//! tables ([`Extension`], [`ExtMember`]), the known older forms ([`OLDER_FORMS`]) and the
//! `ext_struct!` macro that declares an extension struct with its member table.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use crate::args::*;
use crate::error::*;

/// An extension member function that returns a `PJRT_Error*` (NULL on success).
pub type ExtFn<A> = Option<unsafe extern "C" fn(args: *mut A) -> *mut PJRT_Error>;
/// An extension member function that returns nothing.
pub type ExtVoidFn<A> = Option<unsafe extern "C" fn(args: *mut A)>;

/// One member of an extension struct, as this crate declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtMember {
    /// The member's C name, e.g. `PJRT_Layouts_MemoryLayout_Destroy` or `type_register`.
    pub name: &'static str,
    /// `"<extension struct>.<member>"`, unambiguous across extensions.
    pub qualified_name: &'static str,
    /// Byte offset inside the extension struct.
    pub offset: usize,
    /// Size in bytes (8 for every member declared so far).
    pub size: usize,
    /// The API minor version that introduced the member, as far as the PJRT changelog tells;
    /// where it does not, the version that introduced the extension, or an upper bound (the first
    /// header known to list it).
    pub since_minor: i32,
}

impl ExtMember {
    /// Whether a node of `struct_size` bytes contains this member.
    pub const fn within(&self, struct_size: usize) -> bool {
        struct_size >= self.offset + self.size
    }

    /// The name to report in errors: the C member name when it already says which extension it
    /// belongs to (starts with `PJRT_`), else the qualified name.
    pub fn error_name(&self) -> &'static str {
        if self.name.starts_with("PJRT_") {
            self.name
        } else {
            self.qualified_name
        }
    }
}

/// Every extension struct.
///
/// # Safety
/// Implementors must be `#[repr(C)]`, start with a [`PJRT_Extension_Base`], and list in `MEMBERS`
/// their fields after the base with exact offsets and sizes.
pub unsafe trait Extension: Sized {
    /// The `type_` value a node of this extension carries.
    const TYPE: PJRT_Extension_Type;
    /// The C struct name.
    const NAME: &'static str;
    /// Offset of the last member plus its size (the header's `*_STRUCT_SIZE`).
    const STRUCT_SIZE: usize;
    /// The members after the base, in order.
    const MEMBERS: &'static [ExtMember];
    /// An older, shorter form of this extension whose members are other functions (or take
    /// other args) than the ones declared here, if one is known (from [`OLDER_FORMS`]).
    const OLDER_FORM: Option<OlderForm> = older_form_of(Self::TYPE);

    /// Whether a node of `struct_size` bytes is the known older form ([`Self::OLDER_FORM`]):
    /// none of its members may then be read as declared.
    fn is_older_form(struct_size: usize) -> bool {
        Self::OLDER_FORM.is_some_and(|form| form.describes(struct_size))
    }

    /// The declared member called `name` (its C name), if any.
    fn member(name: &str) -> Option<&'static ExtMember> {
        Self::MEMBERS.iter().find(|m| m.name == name)
    }

    /// The declared member at byte `offset`, if any.
    fn member_at(offset: usize) -> Option<&'static ExtMember> {
        Self::MEMBERS.iter().find(|m| m.offset == offset)
    }
}

/// An older form of an extension struct that shares its type but not its member layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OlderForm {
    /// A node with a `struct_size` below this is the older form; from this size on, the members
    /// up to this offset are the ones declared.
    pub below_size: usize,
    /// What the older form is, naming the extension (used as the "function" of
    /// `Error::Unsupported`).
    pub description: &'static str,
    /// The API minor version from which the declared form is known to exist.
    pub declared_since_minor: i32,
}

impl OlderForm {
    /// Whether a node of `struct_size` bytes is this older form.
    pub const fn describes(&self, struct_size: usize) -> bool {
        struct_size < self.below_size
    }
}

/// The known older forms, by extension type (see the module docs): the one table both the typed
/// views ([`Extension::OLDER_FORM`]) and the listing of a plugin's chain read.
pub const OLDER_FORMS: &[(PJRT_Extension_Type, OlderForm)] = &[
    (
        // See `PJRT_Layouts_Extension`.
        PJRT_Extension_Type::Layouts,
        OlderForm {
            below_size: 56,
            description: "PJRT_Layouts_Extension (an early form shorter than 56 bytes, whose members are other \
                          functions than the declared ones; none is used)",
            declared_since_minor: 51,
        },
    ),
    (
        // See `PJRT_FFI_Extension`.
        PJRT_Extension_Type::FFI,
        OlderForm {
            below_size: 40,
            description: "PJRT_FFI_Extension (version 1, shorter than 40 bytes, whose member is \
                          user_data_add where type_register is declared; none is used)",
            declared_since_minor: 54,
        },
    ),
];

/// The known older form of extensions of type `type_`, if any ([`OLDER_FORMS`]).
pub const fn older_form_of(type_: PJRT_Extension_Type) -> Option<OlderForm> {
    let mut i = 0;
    while i < OLDER_FORMS.len() {
        if OLDER_FORMS[i].0 .0 == type_.0 {
            return Some(OLDER_FORMS[i].1);
        }
        i += 1;
    }
    None
}

const fn members_end(members: &[ExtMember]) -> usize {
    let mut end = std::mem::size_of::<PJRT_Extension_Base>();
    let mut i = 0;
    while i < members.len() {
        let e = members[i].offset + members[i].size;
        if e > end {
            end = e;
        }
        i += 1;
    }
    end
}

// Declared before the modules that use it (macros are scoped by textual order).
macro_rules! ext_struct {
    ($(#[$m:meta])* $name:ident = $kind:ident {
        $($(#[$fm:meta])* $field:ident : $ty:ty = since $minor:literal),+ $(,)?
    }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            pub base: $crate::PJRT_Extension_Base,
            $($(#[$fm])* pub $field: $ty),+
        }
        // SAFETY: repr(C), first field the base, MEMBERS computed from the fields themselves.
        unsafe impl $crate::Extension for $name {
            const TYPE: $crate::PJRT_Extension_Type = $crate::PJRT_Extension_Type::$kind;
            const NAME: &'static str = stringify!($name);
            const STRUCT_SIZE: usize = $crate::extensions::members_end(Self::MEMBERS);
            const MEMBERS: &'static [$crate::ExtMember] = &[$($crate::ExtMember {
                name: stringify!($field),
                qualified_name: concat!(stringify!($name), ".", stringify!($field)),
                offset: ::core::mem::offset_of!($name, $field),
                size: ::core::mem::size_of::<$ty>(),
                since_minor: $minor,
            }),+];
        }
    };
}

mod callback;
mod custom_partitioner;
mod ffi;
mod gpu_custom_call;
mod layouts;
mod memory_descriptions;
mod phase_compile;
mod profiler;
mod raw_buffer;
mod shardings;
mod stream;
mod tpu_topology;
mod triton;
mod xla_transform;

pub use callback::*;
pub use custom_partitioner::*;
pub use ffi::*;
pub use gpu_custom_call::*;
pub use layouts::*;
pub use memory_descriptions::*;
pub use phase_compile::*;
pub use profiler::*;
pub use raw_buffer::*;
pub use shardings::*;
pub use stream::*;
pub use tpu_topology::*;
pub use triton::*;
pub use xla_transform::*;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// Extension struct sizes: the API notes §5.2 (observed in the CPU plugins) and the 0.114
    /// headers' `*_STRUCT_SIZE`.
    #[test]
    fn extension_struct_sizes() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Layouts_Extension::STRUCT_SIZE, 80, "Layouts"),
            (PJRT_MemoryDescriptions_Extension::STRUCT_SIZE, 40, "MemoryDescriptions"),
            (PJRT_Shardings_Extension::STRUCT_SIZE, 40, "Shardings"),
            (PJRT_FFI_Extension::STRUCT_SIZE, 48, "FFI"),
            (PJRT_PhaseCompile_Extension::STRUCT_SIZE, 64, "PhaseCompile"),
            (PJRT_Xla_Transform_Extension::STRUCT_SIZE, 40, "XlaTransform (0.114)"),
            (PJRT_Stream_Extension::STRUCT_SIZE, 40, "Stream"),
            (PJRT_Gpu_Custom_Call::STRUCT_SIZE, 32, "Gpu_Custom_Call"),
            (PJRT_Profiler_Extension::STRUCT_SIZE, 40, "Profiler"),
            (PJRT_Triton_Extension::STRUCT_SIZE, 32, "Triton"),
            (PJRT_Callback_Extension::STRUCT_SIZE, 40, "Callback"),
            (PJRT_RawBuffer_Extension::STRUCT_SIZE, 80, "RawBuffer"),
            (PJRT_Custom_Partitioner_Extension::STRUCT_SIZE, 40, "Custom_Partitioner"),
            // The 27 members both header revisions read agree on (libtpu 0.0.52's node is 280).
            (PJRT_TpuTopology_Extension::STRUCT_SIZE, 240, "TpuTopology"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn extension_types() {
        let types = [
            (PJRT_Layouts_Extension::TYPE, 4),
            (PJRT_MemoryDescriptions_Extension::TYPE, 6),
            (PJRT_Shardings_Extension::TYPE, 19),
            (PJRT_FFI_Extension::TYPE, 5),
            (PJRT_PhaseCompile_Extension::TYPE, 9),
            (PJRT_Xla_Transform_Extension::TYPE, 24),
            (PJRT_Stream_Extension::TYPE, 3),
            (PJRT_Gpu_Custom_Call::TYPE, 0),
            (PJRT_Profiler_Extension::TYPE, 1),
            (PJRT_Triton_Extension::TYPE, 7),
            (PJRT_Callback_Extension::TYPE, 14),
            (PJRT_RawBuffer_Extension::TYPE, 8),
            (PJRT_Custom_Partitioner_Extension::TYPE, 2),
            (PJRT_TpuTopology_Extension::TYPE, 16),
        ];
        for (ty, value) in types {
            assert_eq!(ty.0, value);
        }
    }

    /// The profiler table and its args, laid out as `profiler_c_api.h` declares them (LP64).
    #[test]
    fn profiler_api_sizes() {
        use crate::Args as _;
        let expected = [
            (PLUGIN_Profiler_Error_Destroy_Args::STRUCT_SIZE, 24),
            (PLUGIN_Profiler_Error_Message_Args::STRUCT_SIZE, 40),
            (PLUGIN_Profiler_Error_GetCode_Args::STRUCT_SIZE, 28),
            (PLUGIN_Profiler_Create_Args::STRUCT_SIZE, 32),
            (PLUGIN_Profiler_Destroy_Args::STRUCT_SIZE, 16),
            (PLUGIN_Profiler_Start_Args::STRUCT_SIZE, 16),
            (PLUGIN_Profiler_Stop_Args::STRUCT_SIZE, 16),
            (PLUGIN_Profiler_CollectData_Args::STRUCT_SIZE, 32),
            (PLUGIN_Profiler_Api::STRUCT_SIZE, 80),
        ];
        for (ours, theirs) in expected {
            assert_eq!(ours, theirs);
        }
        assert_eq!(offset_of!(PLUGIN_Profiler_Api, collect_data), 72);
    }

    /// The custom partitioner's structs, laid out as the extension header declares them (LP64).
    #[test]
    fn custom_partitioner_layouts() {
        assert_eq!(PJRT_Register_Custom_Partitioner_Args::STRUCT_SIZE, 32);
        assert_eq!(PJRT_Register_Batch_Partitionable_Args::STRUCT_SIZE, 24);
        assert_eq!(std::mem::size_of::<JAX_CustomCallPartitioner_string>(), 16);
        assert_eq!(std::mem::size_of::<JAX_CustomCallPartitioner_aval>(), 40);
        assert_eq!(offset_of!(JAX_CustomCallPartitioner_aval, sharding), 24);
        assert_eq!(std::mem::size_of::<JAX_CustomCallPartitioner_version_and_error>(), 48);
        assert_eq!(offset_of!(JAX_CustomCallPartitioner_version_and_error, code), 28);
        assert_eq!(offset_of!(JAX_CustomCallPartitioner_version_and_error, error_msg), 32);
        assert_eq!(offset_of!(JAX_CustomCallPartitioner_Partition_Args, op_result), 64);
        assert_eq!(std::mem::size_of::<JAX_CustomCallPartitioner_Partition_Args>(), 160);
        assert_eq!(offset_of!(JAX_CustomCallPartitioner_InferShardingFromOperands_Args, has_result_sharding), 96);
        assert_eq!(std::mem::size_of::<JAX_CustomCallPartitioner_PropagateUserSharding_Args>(), 96);
        assert_eq!(offset_of!(JAX_CustomCallPartitioner_Callbacks, can_side_effecting_have_replicated_sharding), 48);
        assert_eq!(std::mem::size_of::<JAX_CustomCallPartitioner_Callbacks>(), 56);
        assert_eq!(PJRT_Custom_Partitioner_Extension::member_at(32).unwrap().name, "register_batch_partitionable");
    }

    #[test]
    fn member_tables() {
        let m = PJRT_Layouts_Extension::MEMBERS;
        assert_eq!(m.len(), 7);
        assert_eq!(m[0].offset, 24);
        assert_eq!(m[6].offset, 72);
        assert_eq!(m[6].name, "PJRT_Layouts_PJRT_Executable_GetParameterLayouts");
        assert!(m[6].within(80) && !m[6].within(79));
        let p = PJRT_PhaseCompile_Extension::member("phase_compile_c_buffers_destroy").unwrap();
        assert_eq!(p.offset, 56);
        assert_eq!(p.qualified_name, "PJRT_PhaseCompile_Extension.phase_compile_c_buffers_destroy");
        assert_eq!(p.error_name(), p.qualified_name);
        assert_eq!(m[0].error_name(), "PJRT_Layouts_MemoryLayout_Destroy");
        assert_eq!(PJRT_Profiler_Extension::member_at(32).unwrap().name, "traceme_context_id");
    }

    #[test]
    fn older_forms() {
        // Layouts: below the first four members; FFI: the version-1 `{base, user_data_add}`.
        assert!(PJRT_Layouts_Extension::is_older_form(32) && PJRT_Layouts_Extension::is_older_form(55));
        assert!(!PJRT_Layouts_Extension::is_older_form(56) && !PJRT_Layouts_Extension::is_older_form(80));
        assert!(PJRT_FFI_Extension::is_older_form(32) && !PJRT_FFI_Extension::is_older_form(40));
        // The bound covers exactly the members the older forms misplace.
        assert_eq!(
            PJRT_Layouts_Extension::OLDER_FORM.unwrap().below_size,
            PJRT_Layouts_Extension::MEMBERS[3].offset + 8
        );
        assert_eq!(PJRT_FFI_Extension::OLDER_FORM.unwrap().below_size, PJRT_FFI_Extension::MEMBERS[1].offset + 8);
        assert_eq!(PJRT_Shardings_Extension::OLDER_FORM, None);
        assert!(!PJRT_MemoryDescriptions_Extension::is_older_form(24));
    }

    #[test]
    fn args_struct_sizes() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Layouts_MemoryLayout_Destroy_Args::STRUCT_SIZE, 24, "MemoryLayout_Destroy"),
            (PJRT_Layouts_MemoryLayout_Serialize_Args::STRUCT_SIZE, 56, "MemoryLayout_Serialize"),
            (PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args::STRUCT_SIZE, 32, "Buffer_MemoryLayout"),
            (PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args::STRUCT_SIZE, 56, "Client_GetDefaultLayout"),
            (PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args::STRUCT_SIZE, 56, "Topology_GetDefaultLayout"),
            (PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args::STRUCT_SIZE, 40, "GetOutputLayouts"),
            (PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args::STRUCT_SIZE, 40, "GetParameterLayouts"),
            (PJRT_DeviceDescription_MemoryDescriptions_Args::STRUCT_SIZE, 48, "MemoryDescriptions"),
            (PJRT_MemoryDescription_Kind_Args::STRUCT_SIZE, 44, "MemoryDescription_Kind"),
            (PJRT_Shardings_PJRT_Executable_ParameterShardings_Args::STRUCT_SIZE, 48, "ParameterShardings"),
            (PJRT_Shardings_PJRT_Executable_OutputShardings_Args::STRUCT_SIZE, 48, "OutputShardings"),
            (PJRT_FFI_Type_Register_Args::STRUCT_SIZE, 48, "FFI_Type_Register"),
            (PJRT_FFI_UserData_Add_Args::STRUCT_SIZE, 40, "FFI_UserData_Add"),
            (PJRT_FFI_UserData_Add_Args_V2::STRUCT_SIZE, 48, "FFI_UserData_Add (v2)"),
            (PJRT_FFI_TypeID_Register_Args::STRUCT_SIZE, 40, "FFI_TypeID_Register (v2)"),
            (PJRT_FFI_Register_Handler_Args::STRUCT_SIZE, 52, "FFI_Register_Handler"),
            (PJRT_PhaseCompile_Get_Compiler_Args::STRUCT_SIZE, 24, "Get_Compiler"),
            (PJRT_PhaseCompile_Destroy_Compiler_Args::STRUCT_SIZE, 24, "Destroy_Compiler"),
            (PJRT_PhaseCompile_Run_Phase_Args::STRUCT_SIZE, 120, "Run_Phase"),
            (PJRT_PhaseCompile_Get_PhaseNames_Args::STRUCT_SIZE, 48, "Get_PhaseNames"),
            (PJRT_PhaseCompile_C_Buffers_Destroy_Args::STRUCT_SIZE, 40, "C_Buffers_Destroy"),
            (PJRT_XlaTransform_Args::STRUCT_SIZE, 89, "XlaTransform_Args"),
            (PJRT_Register_Xla_Transform_Args::STRUCT_SIZE, 40, "Register_Xla_Transform"),
            (PJRT_Clear_Xla_Transform_Args::STRUCT_SIZE, 41, "Clear_Xla_Transform"),
            (PJRT_Get_Stream_For_External_Ready_Events_Args::STRUCT_SIZE, 24, "Get_Stream"),
            (PJRT_Wait_Until_Buffer_Ready_On_Stream_Args::STRUCT_SIZE, 24, "Wait_Until_Buffer_Ready"),
            (PJRT_Gpu_Register_Custom_Call_Args::STRUCT_SIZE, 64, "Gpu_Register_Custom_Call"),
            (PJRT_Triton_Compile_Args::STRUCT_SIZE, 96, "Triton_Compile"),
            (PJRT_Callback_Tpu_SliceBuilderArgs::STRUCT_SIZE, 12, "Tpu_SliceBuilderArgs"),
            (PJRT_Callback_PrefatalArgs::STRUCT_SIZE, 32, "PrefatalArgs"),
            (PJRT_Callback_RegisterCallback_Args::STRUCT_SIZE, 40, "RegisterCallback"),
            (PJRT_Callback_InvokeCallback_Args::STRUCT_SIZE, 32, "InvokeCallback"),
            (PJRT_RawBuffer_CreateRawAliasOfBuffer_Args::STRUCT_SIZE, 32, "CreateRawAliasOfBuffer"),
            (PJRT_RawBuffer_Destroy_Args::STRUCT_SIZE, 24, "RawBuffer_Destroy"),
            (PJRT_RawBuffer_GetHostPointer_Args::STRUCT_SIZE, 32, "GetHostPointer"),
            (PJRT_RawBuffer_GetOnDeviceSizeInBytes_Args::STRUCT_SIZE, 32, "GetOnDeviceSizeInBytes"),
            (PJRT_RawBuffer_GetMemorySpace_Args::STRUCT_SIZE, 32, "GetMemorySpace"),
            (PJRT_RawBuffer_CopyRawDeviceToHost_Args::STRUCT_SIZE, 56, "CopyRawDeviceToHost"),
            (PJRT_RawBuffer_CopyRawHostToDevice_Args::STRUCT_SIZE, 56, "CopyRawHostToDevice"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
    }

    /// The TpuTopology args, laid out as XLA's extension header declares them (LP64; none has an
    /// `extension_start`).
    #[test]
    fn tpu_topology_layouts() {
        use crate::Args as _;
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_TpuTopology_Subslice_Args::STRUCT_SIZE, 56, "Subslice"),
            (PJRT_TpuTopology_IsSubsliceTopology_Args::STRUCT_SIZE, 17, "IsSubsliceTopology"),
            (PJRT_TpuTopology_SubsliceDeviceIdFromFullDeviceId_Args::STRUCT_SIZE, 48, "SubsliceDeviceId"),
            (PJRT_TpuTopology_ReplaceHostBounds_Args::STRUCT_SIZE, 40, "ReplaceHostBounds"),
            (PJRT_TpuTopology_IsEnhancedBarrierEnabled_Args::STRUCT_SIZE, 17, "IsEnhancedBarrierEnabled"),
            (PJRT_TpuTopology_HasLimitedIciConnectivity_Args::STRUCT_SIZE, 17, "HasLimitedIciConnectivity"),
            (PJRT_TpuTopology_IsReachableOverLimitedIci_Args::STRUCT_SIZE, 25, "IsReachableOverLimitedIci"),
            (PJRT_TpuTopology_ProcessCount_Args::STRUCT_SIZE, 20, "ProcessCount"),
            (PJRT_TpuTopology_CoreCountPerProcess_Args::STRUCT_SIZE, 20, "CoreCountPerProcess"),
            (PJRT_TpuTopology_ProcessIds_Args::STRUCT_SIZE, 40, "ProcessIds"),
            (PJRT_TpuTopology_LogiDeviceIdsOnProcess_Args::STRUCT_SIZE, 40, "LogiDeviceIdsOnProcess"),
            (PJRT_TpuTopology_ProcIdAndIdxOnProcForChip_Args::STRUCT_SIZE, 28, "ProcIdAndIdxOnProcForChip"),
            (PJRT_TpuTopology_ProcIdAndIdxOnProcForLogiDevice_Args::STRUCT_SIZE, 28, "ProcIdAndIdxForLogiDevice"),
            (PJRT_TpuTopology_ProcessCoordFromId_Args::STRUCT_SIZE, 48, "ProcessCoordFromId"),
            (PJRT_TpuTopology_ChipIdFromCoord_Args::STRUCT_SIZE, 36, "ChipIdFromCoord"),
            (PJRT_TpuTopology_LogiDeviceIdFromChipCoordAndIdx_Args::STRUCT_SIZE, 40, "LogiDeviceIdFromChipCoord"),
            (PJRT_TpuTopology_ChipCoordAndIdxForLogiDevice_Args::STRUCT_SIZE, 52, "ChipCoordAndIdxForLogiDevice"),
            (PJRT_TpuTopology_ChipsPerProcessBounds_Args::STRUCT_SIZE, 40, "ChipsPerProcessBounds"),
            (PJRT_TpuTopology_ChipBounds_Args::STRUCT_SIZE, 40, "ChipBounds"),
            (PJRT_TpuTopology_ProcessBounds_Args::STRUCT_SIZE, 40, "ProcessBounds"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
        assert_eq!(offset_of!(PJRT_TpuTopology_ProcessIds_Args, process_ids), 24);
        assert_eq!(offset_of!(PJRT_TpuTopology_LogiDeviceIdsOnProcess_Args, max_logical_device_ids), 20);
        assert_eq!(offset_of!(PJRT_TpuTopology_ProcessCoordFromId_Args, coords_max_dims), 24);
        assert_eq!(offset_of!(PJRT_TpuTopology_ChipIdFromCoord_Args, chip_id), 32);
        assert_eq!(offset_of!(PJRT_TpuTopology_ChipCoordAndIdxForLogiDevice_Args, device_index_on_chip), 48);
        assert_eq!(offset_of!(PJRT_TpuTopology_SubsliceDeviceIdFromFullDeviceId_Args, full_device_id), 40);
        let m = PJRT_TpuTopology_Extension::MEMBERS;
        assert_eq!(m.len(), 27);
        assert_eq!((m[0].name, m[0].offset), ("subslice", 24));
        assert_eq!((m[7].name, m[7].offset), ("process_count", 80));
        assert_eq!((m[16].name, m[16].offset), ("process_ids", 152));
        assert_eq!((m[26].name, m[26].offset), ("process_bounds", 232));
    }

    #[test]
    fn field_offsets() {
        assert_eq!(offset_of!(PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args, type_), 24);
        assert_eq!(offset_of!(PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args, dims), 32);
        assert_eq!(offset_of!(PJRT_FFI_Type_Register_Args, type_id), 32);
        assert_eq!(offset_of!(PJRT_FFI_Register_Handler_Args, target_name), 8);
        assert_eq!(offset_of!(PJRT_FFI_UserData_Add_Args, user_data), 24);
        assert_eq!(std::mem::size_of::<PJRT_FFI_Type_Info>(), 24);
        assert_eq!(std::mem::size_of::<PJRT_FFI_UserData>(), 16);
        assert_eq!(std::mem::size_of::<PJRT_FFI_UserData_V2>(), 24);
        // The v2 register args are a prefix of the v3 ones, and v2 user data extends v3's.
        assert_eq!(
            offset_of!(PJRT_FFI_TypeID_Register_Args, type_id),
            offset_of!(PJRT_FFI_Type_Register_Args, type_id)
        );
        assert_eq!(offset_of!(PJRT_FFI_Type_Register_Args, type_info), PJRT_FFI_TypeID_Register_Args::STRUCT_SIZE);
        assert_eq!(offset_of!(PJRT_FFI_UserData_V2, data), offset_of!(PJRT_FFI_UserData, data));
        assert_eq!(offset_of!(PJRT_FFI_UserData_Add_Args_V2, user_data), 24);
        assert_eq!(std::mem::size_of::<PJRT_XlaTransform_version_and_error>(), 48);
        assert_eq!(offset_of!(PJRT_XlaTransform_version_and_error, code), 28);
        assert_eq!(offset_of!(PJRT_XlaTransform_Args, hlo_module), 56);
        assert_eq!(offset_of!(PJRT_Clear_Xla_Transform_Args, name), 16);
        assert_eq!(offset_of!(PJRT_Triton_Compile_Args, out_asm), 56);
        assert_eq!(offset_of!(PJRT_Gpu_Register_Custom_Call_Args, handler_instantiate), 32);
        assert_eq!(offset_of!(PJRT_Callback_RegisterCallback_Args, callback), 24);
        assert_eq!(offset_of!(PJRT_MemoryDescription_Kind_Args, kind_id), 40);
    }
}
