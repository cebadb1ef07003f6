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
//! field + its size, as in `types.rs`). Some extension args structs have no `extension_start`
//! (FFI's register_handler, Stream, GPU custom call, Triton, Callback, XlaTransform): they are
//! declared as the API describes them.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

use super::types::*;

type Ext = *mut PJRT_Extension_Base;

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

macro_rules! ext_struct {
    ($(#[$m:meta])* $name:ident = $kind:ident {
        $($(#[$fm:meta])* $field:ident : $ty:ty = since $minor:literal),+ $(,)?
    }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            pub base: PJRT_Extension_Base,
            $($(#[$fm])* pub $field: $ty),+
        }
        // SAFETY: repr(C), first field the base, MEMBERS computed from the fields themselves.
        unsafe impl Extension for $name {
            const TYPE: PJRT_Extension_Type = PJRT_Extension_Type::$kind;
            const NAME: &'static str = stringify!($name);
            const STRUCT_SIZE: usize = members_end(Self::MEMBERS);
            const MEMBERS: &'static [ExtMember] = &[$(ExtMember {
                name: stringify!($field),
                qualified_name: concat!(stringify!($name), ".", stringify!($field)),
                offset: ::core::mem::offset_of!($name, $field),
                size: ::core::mem::size_of::<$ty>(),
                since_minor: $minor,
            }),+];
        }
    };
}

opaque!(
    PJRT_Layouts_MemoryLayout,
    PJRT_Layouts_SerializedLayout,
    PJRT_MemoryDescription,
    PJRT_PhaseCompiler,
    PJRT_RawBuffer,
    PLUGIN_Profiler,
    PLUGIN_Profiler_Error,
);

// ---------------------------------------------------------------------------------------------
// Layouts (extension type 4; header extension version 4)
// ---------------------------------------------------------------------------------------------

pjrt_struct!(PJRT_Layouts_MemoryLayout_Destroy_Args {
    struct_size: usize, extension_start: Ext, layout: *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_MemoryLayout_Serialize_Args {
    struct_size: usize, extension_start: Ext, layout: *mut PJRT_Layouts_MemoryLayout,
    serialized_bytes: *const c_char, serialized_bytes_size: usize,
    serialized_layout: *mut PJRT_Layouts_SerializedLayout,
    serialized_layout_deleter: Option<unsafe extern "C" fn(s_layout: *mut PJRT_Layouts_SerializedLayout)>,
});
pjrt_struct!(PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, layout: *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, type_: PJRT_Buffer_Type,
    dims: *const i64, num_dims: usize, layout: *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args {
    struct_size: usize, extension_start: Ext, topology_description: *mut PJRT_TopologyDescription,
    type_: PJRT_Buffer_Type, dims: *const i64, num_dims: usize, layout: *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_outputs: usize,
    layouts: *mut *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_parameters: usize,
    layouts: *mut *mut PJRT_Layouts_MemoryLayout,
});

ext_struct!(
    /// `PJRT_Layouts_Extension`: memory layouts of buffers, clients' defaults and executables.
    ///
    /// The first four members came together with the extension (0.51; 56 bytes). A shorter node
    /// is not a form this crate can use: an early cut of the extension is reported to have had a
    /// single member at offset 24, a buffer-layout getter with other args than
    /// `PJRT_Layouts_MemoryLayout_Destroy`. Such a node is listed, but none of its members is
    /// used ([`Extension::OLDER_FORM`]).
    ///
    /// Since-minors: 0.51 for the first four (CHANGELOG); `Topology_GetDefaultLayout` is in no
    /// CHANGELOG entry, 0.75 is the API version of the first header known to list it;
    /// `GetOutputLayouts` 0.81 and `GetParameterLayouts` 0.93 (CHANGELOG).
    PJRT_Layouts_Extension = Layouts {
        PJRT_Layouts_MemoryLayout_Destroy: ExtFn<PJRT_Layouts_MemoryLayout_Destroy_Args> = since 51,
        PJRT_Layouts_MemoryLayout_Serialize: ExtFn<PJRT_Layouts_MemoryLayout_Serialize_Args> = since 51,
        PJRT_Layouts_PJRT_Client_GetDefaultLayout: ExtFn<PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args> = since 51,
        PJRT_Layouts_PJRT_Buffer_MemoryLayout: ExtFn<PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args> = since 51,
        PJRT_Layouts_PJRT_Topology_GetDefaultLayout: ExtFn<PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args> = since 75,
        PJRT_Layouts_PJRT_Executable_GetOutputLayouts: ExtFn<PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args> = since 81,
        PJRT_Layouts_PJRT_Executable_GetParameterLayouts: ExtFn<PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args> = since 93,
    }
);

// ---------------------------------------------------------------------------------------------
// MemoryDescriptions (type 6)
// ---------------------------------------------------------------------------------------------

pjrt_struct!(
    /// Extension version 1 (0.61). Version 0 (0.59) had no `default_memory_index` (40 bytes) and
    /// the same struct size for the extension, so a version-0 plugin accepts these args but
    /// leaves `default_memory_index` as the caller set it. Version-1 plugins write `SIZE_MAX` for
    /// "no default".
    PJRT_DeviceDescription_MemoryDescriptions_Args {
        struct_size: usize, extension_start: Ext, device_description: *mut PJRT_DeviceDescription,
        memory_descriptions: *const *const PJRT_MemoryDescription, num_memory_descriptions: usize,
        default_memory_index: usize,
    }
);
pjrt_struct!(PJRT_MemoryDescription_Kind_Args {
    struct_size: usize, extension_start: Ext, memory_description: *const PJRT_MemoryDescription,
    kind: *const c_char, kind_size: usize, kind_id: c_int,
});

ext_struct!(
    /// `PJRT_MemoryDescriptions_Extension`: the memory kinds a device (description) has.
    PJRT_MemoryDescriptions_Extension = MemoryDescriptions {
        PJRT_DeviceDescription_MemoryDescriptions: ExtFn<PJRT_DeviceDescription_MemoryDescriptions_Args> = since 59,
        PJRT_MemoryDescription_Kind: ExtFn<PJRT_MemoryDescription_Kind_Args> = since 59,
    }
);

// ---------------------------------------------------------------------------------------------
// Shardings (type 19)
// ---------------------------------------------------------------------------------------------

pjrt_struct!(PJRT_Shardings_PJRT_Executable_ParameterShardings_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_parameters: usize,
    shardings: *const *const c_char, sharding_sizes: *const usize,
});
pjrt_struct!(PJRT_Shardings_PJRT_Executable_OutputShardings_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_outputs: usize,
    shardings: *const *const c_char, sharding_sizes: *const usize,
});

ext_struct!(
    /// `PJRT_Shardings_Extension`: serialized `xla.OpSharding`s of an executable's parameters and
    /// outputs.
    PJRT_Shardings_Extension = Shardings {
        PJRT_Shardings_PJRT_Executable_ParameterShardings: ExtFn<PJRT_Shardings_PJRT_Executable_ParameterShardings_Args> = since 91,
        PJRT_Shardings_PJRT_Executable_OutputShardings: ExtFn<PJRT_Shardings_PJRT_Executable_OutputShardings_Args> = since 91,
    }
);

// ---------------------------------------------------------------------------------------------
// FFI (type 5; header extension version 3)
//
// Forms, none with a version field:
// * version 1 (0.53): `{base, user_data_add}`, 32 bytes: the function at offset 24 is
//   `user_data_add`. Declared here as the older form: never used.
// * version 2 (0.54): `{base, type_id_register, user_data_add}`, 40 bytes; from 0.73 also
//   `register_handler` (48 bytes). `type_id_register` takes `PJRT_FFI_TypeID_Register_Args` (40
//   bytes); user data carries a deleter (`PJRT_FFI_UserData_V2`, add args 48 bytes).
// * version 3 (0.80): `{base, type_register, user_data_add, register_handler}`, 48 bytes;
//   `type_register` takes `PJRT_FFI_Type_Register_Args` (48 bytes, `type_info` read
//   unconditionally). For a few days the struct was 56 bytes, with a second type-register
//   function at offset 48 and, at offset 24, one taking either the version-2 or the version-3
//   args (the 48-byte args serve both). Early version-3 plugins still take
//   `PJRT_FFI_UserData_V2`; later ones the 16-byte `PJRT_FFI_UserData`.
// `PJRT_FFI_Register_Handler_Args` is the same in versions 2 and 3.
// ---------------------------------------------------------------------------------------------

/// `PJRT_FFI_Type_Info`: how the plugin treats objects of a registered type (no struct_size).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PJRT_FFI_Type_Info {
    pub deleter: Option<unsafe extern "C" fn(object: *mut c_void)>,
    /// Reserved by the API.
    pub serialize: Option<unsafe extern "C" fn()>,
    /// Reserved by the API.
    pub deserialize: Option<unsafe extern "C" fn()>,
}

/// `PJRT_FFI_UserData` (no struct_size), the later version-3 form (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_FFI_UserData {
    pub type_id: i64,
    pub data: *mut c_void,
}

/// `PJRT_FFI_UserData` of versions 1, 2 and early 3 (24 bytes): a later plugin reads the first
/// 16 bytes, so this form with a NULL `deleter` is valid for both.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_FFI_UserData_V2 {
    pub type_id: i64,
    pub data: *mut c_void,
    /// Called by the plugin when the execute context is destroyed; may be NULL.
    pub deleter: Option<unsafe extern "C" fn(data: *mut c_void)>,
}

c_enum!(
    /// `PJRT_FFI_Handler_TraitsBits` (a bit set).
    PJRT_FFI_Handler_TraitsBits { NONE = 0, COMMAND_BUFFER_COMPATIBLE = 1 }
);

pjrt_struct!(
    /// Version 3. Its first 40 bytes are [`PJRT_FFI_TypeID_Register_Args`] (version 2).
    PJRT_FFI_Type_Register_Args {
        struct_size: usize, extension_start: Ext, type_name: *const c_char, type_name_size: usize,
        type_id: i64, type_info: *mut PJRT_FFI_Type_Info,
    }
);
pjrt_struct!(
    /// Version 2 (`type_id_register`); `type_id` is in-out from 0.67, out only before.
    PJRT_FFI_TypeID_Register_Args {
        struct_size: usize, extension_start: Ext, type_name: *const c_char, type_name_size: usize,
        type_id: i64,
    }
);
pjrt_struct!(
    /// The later version-3 form (40 bytes).
    PJRT_FFI_UserData_Add_Args {
        struct_size: usize, extension_start: Ext, context: *mut PJRT_ExecuteContext, user_data: PJRT_FFI_UserData,
    }
);
pjrt_struct!(
    /// Versions 1, 2 and early 3 (48 bytes): accepted by later plugins too, which read the
    /// first 40 bytes (the user data's `type_id` and `data`).
    PJRT_FFI_UserData_Add_Args_V2 {
        struct_size: usize, extension_start: Ext, context: *mut PJRT_ExecuteContext,
        user_data: PJRT_FFI_UserData_V2,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_FFI_Register_Handler_Args {
        struct_size: usize, target_name: *const c_char, target_name_size: usize, handler: *mut c_void,
        platform_name: *const c_char, platform_name_size: usize, traits: PJRT_FFI_Handler_TraitsBits,
    }
);

ext_struct!(
    /// `PJRT_FFI_Extension`: XLA FFI types, user data and handlers (version 3; see the forms
    /// above). `type_register` is `type_id_register` in version 2, and `user_data_add` may take
    /// [`PJRT_FFI_UserData_Add_Args_V2`]: send args valid for both forms.
    ///
    /// Since-minors: the extension came at 0.53 in version 1, whose only member sits where
    /// `type_register` is declared; the declared layout exists from 0.54 (`type_id_register`,
    /// first header listing it) and `register_handler` from 0.73 (first header listing it).
    PJRT_FFI_Extension = FFI {
        type_register: ExtFn<PJRT_FFI_Type_Register_Args> = since 54,
        user_data_add: ExtFn<PJRT_FFI_UserData_Add_Args> = since 54,
        register_handler: ExtFn<PJRT_FFI_Register_Handler_Args> = since 73,
    }
);

// ---------------------------------------------------------------------------------------------
// PhaseCompile (type 9; experimental)
// ---------------------------------------------------------------------------------------------

pjrt_struct!(PJRT_PhaseCompile_Get_Compiler_Args {
    struct_size: usize, extension_start: Ext, phase_compiler: *const PJRT_PhaseCompiler,
});
pjrt_struct!(PJRT_PhaseCompile_Destroy_Compiler_Args {
    struct_size: usize, extension_start: Ext, phase_compiler: *const PJRT_PhaseCompiler,
});
pjrt_struct!(PJRT_PhaseCompile_Run_Phase_Args {
    struct_size: usize, extension_start: Ext, phase_compiler: *const PJRT_PhaseCompiler,
    input_programs: *mut *const c_char, input_programs_sizes: *const usize, num_input_programs: usize,
    phases_to_run: *mut *const c_char, phases_to_run_sizes: *const usize, num_phases_to_run: usize,
    compile_options: *const c_char, compile_options_size: usize, topology: *mut PJRT_TopologyDescription,
    output_programs: *mut *const c_char, output_programs_sizes: *const usize, num_output_programs: usize,
});
pjrt_struct!(PJRT_PhaseCompile_Get_PhaseNames_Args {
    struct_size: usize, extension_start: Ext, phase_compiler: *const PJRT_PhaseCompiler,
    phase_names: *mut *const c_char, phase_names_sizes: *const usize, num_phase_names: usize,
});
pjrt_struct!(PJRT_PhaseCompile_C_Buffers_Destroy_Args {
    struct_size: usize, extension_start: Ext, char_buffers: *mut *const c_char,
    char_buffer_sizes: *const usize, num_char_buffers: usize,
});

ext_struct!(
    /// `PJRT_PhaseCompile_Extension`: run individual compilation phases.
    PJRT_PhaseCompile_Extension = PhaseCompile {
        phase_compile_get_compiler: ExtFn<PJRT_PhaseCompile_Get_Compiler_Args> = since 81,
        phase_compile_destroy_compiler: ExtVoidFn<PJRT_PhaseCompile_Destroy_Compiler_Args> = since 81,
        phase_compile_run_phases: ExtFn<PJRT_PhaseCompile_Run_Phase_Args> = since 81,
        phase_compile_get_phase_names: ExtFn<PJRT_PhaseCompile_Get_PhaseNames_Args> = since 81,
        phase_compile_c_buffers_destroy: ExtVoidFn<PJRT_PhaseCompile_C_Buffers_Destroy_Args> = since 81,
    }
);

// ---------------------------------------------------------------------------------------------
// XlaTransform (type 24; the 0.114 layout: 2 members, 40 bytes)
// ---------------------------------------------------------------------------------------------

/// `PJRT_XlaTransform_string`: a (pointer, length) byte string.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_XlaTransform_string {
    pub data: *const c_char,
    pub size: usize,
}

/// `PJRT_XlaTransform_version_and_error`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_XlaTransform_version_and_error {
    pub api_version: i64,
    pub data: *mut c_void,
    pub cleanup_fn: Option<unsafe extern "C" fn(data: *mut c_void)>,
    pub has_error: bool,
    pub code: PJRT_Error_Code,
    pub error_msg: PJRT_XlaTransform_string,
}

pjrt_struct!(
    /// Note: no `extension_start`; passed by the plugin to the caller's callback.
    PJRT_XlaTransform_Args {
        struct_size: usize, header: PJRT_XlaTransform_version_and_error,
        hlo_module: PJRT_XlaTransform_string, transformed_hlo_module: PJRT_XlaTransform_string, changed: bool,
    }
);

/// `PJRT_XlaTransform_Callbacks`: provided by the caller; every callback is optional.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_XlaTransform_Callbacks {
    pub version: i64,
    pub dtor: Option<unsafe extern "C" fn(data: *mut PJRT_XlaTransform_Callbacks)>,
    pub transform_hlo_module:
        Option<unsafe extern "C" fn(data: *mut PJRT_XlaTransform_Callbacks, args: *mut PJRT_XlaTransform_Args)>,
}

c_enum!(
    /// `PJRT_XlaTransform_PipelineStage`.
    PJRT_XlaTransform_PipelineStage { kPreScheduler = 0, kPostScheduler = 1 }
);

pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Register_Xla_Transform_Args {
        struct_size: usize, name: *const c_char, name_size: usize, stage: PJRT_XlaTransform_PipelineStage,
        callbacks: *mut PJRT_XlaTransform_Callbacks,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Clear_Xla_Transform_Args {
        struct_size: usize, stage: PJRT_XlaTransform_PipelineStage, name: *const c_char, name_size: usize,
        callbacks: *mut PJRT_XlaTransform_Callbacks, cleared: bool,
    }
);

ext_struct!(
    /// `PJRT_Xla_Transform_Extension` as of the 0.114 header (newer plugins append members).
    PJRT_Xla_Transform_Extension = XlaTransform {
        register_xla_transform: ExtFn<PJRT_Register_Xla_Transform_Args> = since 114,
        clear_xla_transform: ExtFn<PJRT_Clear_Xla_Transform_Args> = since 114,
    }
);

// ---------------------------------------------------------------------------------------------
// Stream (type 3)
// ---------------------------------------------------------------------------------------------

pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Get_Stream_For_External_Ready_Events_Args {
        struct_size: usize, device: *mut PJRT_Device, stream: isize,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Wait_Until_Buffer_Ready_On_Stream_Args {
        struct_size: usize, stream: isize, buffer: *mut PJRT_Buffer,
    }
);

ext_struct!(
    /// `PJRT_Stream_Extension`: platform streams for externally managed buffers (GPU).
    PJRT_Stream_Extension = Stream {
        get_stream: ExtFn<PJRT_Get_Stream_For_External_Ready_Events_Args> = since 49,
        wait_stream: ExtFn<PJRT_Wait_Until_Buffer_Ready_On_Stream_Args> = since 49,
    }
);

// ---------------------------------------------------------------------------------------------
// Gpu_Custom_Call (type 0; header extension version 2)
// ---------------------------------------------------------------------------------------------

pjrt_struct!(
    /// Note: no `extension_start`. `api_version` is 0 for an untyped call, 1 for a typed one.
    PJRT_Gpu_Register_Custom_Call_Args {
        struct_size: usize, function_name: *const c_char, function_name_size: usize, api_version: c_int,
        handler_instantiate: *mut c_void, handler_prepare: *mut c_void, handler_initialize: *mut c_void,
        handler_execute: *mut c_void,
    }
);

ext_struct!(
    /// `PJRT_Gpu_Custom_Call`: register GPU custom-call targets.
    PJRT_Gpu_Custom_Call = Gpu_Custom_Call {
        custom_call: ExtFn<PJRT_Gpu_Register_Custom_Call_Args> = since 31,
    }
);

// ---------------------------------------------------------------------------------------------
// Profiler (type 1)
// ---------------------------------------------------------------------------------------------

ext_struct!(
    /// `PJRT_Profiler_Extension`: data members, no functions. `profiler_api` points at the
    /// plugin's profiler table, [`PLUGIN_Profiler_Api`] (XLA's `profiler_c_api.h`, version 1).
    PJRT_Profiler_Extension = Profiler {
        profiler_api: *mut PLUGIN_Profiler_Api = since 34,
        traceme_context_id: i64 = since 34,
    }
);

// The profiler table the extension points at: its own small API (`PLUGIN_PROFILER_VERSION` 1),
// sized by its own `struct_size`, with its own error type. `CollectData` hands out an XSpace
// protobuf (`tsl/profiler/protobuf/xplane.proto`).

pjrt_struct!(PLUGIN_Profiler_Error_Destroy_Args {
    struct_size: usize, priv_: *mut c_void, error: *mut PLUGIN_Profiler_Error,
});
pjrt_struct!(PLUGIN_Profiler_Error_Message_Args {
    struct_size: usize, priv_: *mut c_void, error: *const PLUGIN_Profiler_Error,
    message: *const c_char, message_size: usize,
});
pjrt_struct!(PLUGIN_Profiler_Error_GetCode_Args {
    struct_size: usize, priv_: *mut c_void, error: *const PLUGIN_Profiler_Error, code: c_int,
});
pjrt_struct!(PLUGIN_Profiler_Create_Args {
    struct_size: usize, options: *const c_char, options_size: usize, profiler: *mut PLUGIN_Profiler,
});
pjrt_struct!(PLUGIN_Profiler_Destroy_Args { struct_size: usize, profiler: *mut PLUGIN_Profiler });
pjrt_struct!(PLUGIN_Profiler_Start_Args { struct_size: usize, profiler: *mut PLUGIN_Profiler });
pjrt_struct!(PLUGIN_Profiler_Stop_Args { struct_size: usize, profiler: *mut PLUGIN_Profiler });
pjrt_struct!(PLUGIN_Profiler_CollectData_Args {
    struct_size: usize, profiler: *mut PLUGIN_Profiler, buffer: *mut u8, buffer_size_in_bytes: usize,
});

/// A profiler-table function that returns a `PLUGIN_Profiler_Error*` (NULL on success).
pub type ProfilerFn<A> = Option<unsafe extern "C" fn(args: *mut A) -> *mut PLUGIN_Profiler_Error>;

pjrt_struct!(
    /// `PLUGIN_Profiler_Api`: the plugin's profiler table. Gate every member by the table's own
    /// `struct_size`.
    PLUGIN_Profiler_Api {
        struct_size: usize,
        priv_: *mut c_void,
        error_destroy: Option<unsafe extern "C" fn(args: *mut PLUGIN_Profiler_Error_Destroy_Args)>,
        error_message: Option<unsafe extern "C" fn(args: *mut PLUGIN_Profiler_Error_Message_Args)>,
        error_get_code: ProfilerFn<PLUGIN_Profiler_Error_GetCode_Args>,
        create: ProfilerFn<PLUGIN_Profiler_Create_Args>,
        destroy: ProfilerFn<PLUGIN_Profiler_Destroy_Args>,
        start: ProfilerFn<PLUGIN_Profiler_Start_Args>,
        stop: ProfilerFn<PLUGIN_Profiler_Stop_Args>,
        collect_data: ProfilerFn<PLUGIN_Profiler_CollectData_Args>,
    }
);

// ---------------------------------------------------------------------------------------------
// Custom_Partitioner (type 2; header extension version 1)
//
// The plugin's registry of JAX custom-call partitioners. The `JAX_CustomCallPartitioner_*`
// structs (no struct_size; versioned by `JAX_CustomCallPartitioner_Callbacks.version` and each
// call's `header.api_version`) are JAX's callback ABI, declared so that the callbacks can be
// built; none is read by this crate.
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Triton (type 7; header extension version 2)
// ---------------------------------------------------------------------------------------------

pjrt_struct!(
    /// Note: no `extension_start`. `out_asm` and `out_path` are owned by the caller afterwards.
    PJRT_Triton_Compile_Args {
        struct_size: usize, module: *const c_char, module_size: usize, arch_name: *const c_char,
        arch_name_size: usize, num_warps: c_int, num_ctas: c_int, num_stages: c_int,
        out_asm: *const c_char, out_asm_size: usize, out_smem_bytes: i64, out_path: *const c_char,
        out_path_size: usize,
    }
);

ext_struct!(
    /// `PJRT_Triton_Extension`: compile a Triton kernel.
    PJRT_Triton_Extension = Triton {
        compile: ExtFn<PJRT_Triton_Compile_Args> = since 65,
    }
);

// ---------------------------------------------------------------------------------------------
// Callback (type 14)
// ---------------------------------------------------------------------------------------------

c_enum!(
    /// `PJRT_Callback_Type`.
    PJRT_Callback_Type { Unknown = 0, Tpu_SliceBuilder = 1, Prefatal = 2 }
);

c_enum!(
    /// `PJRT_Callback_Tpu_SliceFailureType` (int32).
    PJRT_Callback_Tpu_SliceFailureType {
        SLICE_FAILURE_UNKNOWN = 0, SLICE_FAILURE_INIT_ERROR = 1, SLICE_FAILURE_WORKER_UNAVAILABLE = 2,
        SLICE_FAILURE_FLAPPING_TASK_ERROR = 3, SLICE_FAILURE_SW_INJECT_ERROR = 4,
        SLICE_FAILURE_CHIP_DRIVER_ERROR = 5,
    }
);

pjrt_struct!(PJRT_Callback_Tpu_SliceBuilderArgs {
    struct_size: usize,
    failure_type: PJRT_Callback_Tpu_SliceFailureType
});
pjrt_struct!(PJRT_Callback_PrefatalArgs {
    struct_size: usize, error_code: PJRT_Error_Code, error_message: *const c_char, error_message_size: usize,
});

/// `PJRT_Callback_Function`: `args` is the type-specific args struct.
pub type PJRT_Callback_Function = Option<unsafe extern "C" fn(args: *mut c_void, user_arg: *mut c_void)>;

pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Callback_RegisterCallback_Args {
        struct_size: usize, client: *mut PJRT_Client, type_: PJRT_Callback_Type,
        callback: PJRT_Callback_Function, user_arg: *mut c_void,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Callback_InvokeCallback_Args {
        struct_size: usize, client: *mut PJRT_Client, type_: PJRT_Callback_Type, args: *mut c_void,
    }
);

ext_struct!(
    /// `PJRT_Callback_Extension`: register and invoke runtime callbacks (TPU slice failures,
    /// pre-fatal errors).
    PJRT_Callback_Extension = Callback {
        register_callback: ExtFn<PJRT_Callback_RegisterCallback_Args> = since 81,
        invoke_callback: ExtFn<PJRT_Callback_InvokeCallback_Args> = since 81,
    }
);

// ---------------------------------------------------------------------------------------------
// RawBuffer (type 8; experimental; header extension version 2)
// ---------------------------------------------------------------------------------------------

pjrt_struct!(PJRT_RawBuffer_CreateRawAliasOfBuffer_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, raw_buffer: *mut PJRT_RawBuffer,
});
pjrt_struct!(PJRT_RawBuffer_Destroy_Args { struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer });
pjrt_struct!(PJRT_RawBuffer_GetHostPointer_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, host_pointer: *mut c_void,
});
pjrt_struct!(PJRT_RawBuffer_GetOnDeviceSizeInBytes_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, on_device_size_in_bytes: usize,
});
pjrt_struct!(PJRT_RawBuffer_GetMemorySpace_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, memory_space: *mut PJRT_Memory,
});
pjrt_struct!(PJRT_RawBuffer_CopyRawDeviceToHost_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, dst: *mut c_void, offset: i64,
    transfer_size: i64, event: *mut PJRT_Event,
});
pjrt_struct!(PJRT_RawBuffer_CopyRawHostToDevice_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, src: *const c_void, offset: i64,
    transfer_size: i64, event: *mut PJRT_Event,
});

ext_struct!(
    /// `PJRT_RawBuffer_Extension`: raw aliases of buffers for byte-level device transfers.
    PJRT_RawBuffer_Extension = RawBuffer {
        PJRT_RawBuffer_CreateRawAliasOfBuffer: ExtFn<PJRT_RawBuffer_CreateRawAliasOfBuffer_Args> = since 81,
        PJRT_RawBuffer_Destroy: ExtFn<PJRT_RawBuffer_Destroy_Args> = since 81,
        PJRT_RawBuffer_GetOnDeviceSizeInBytes: ExtFn<PJRT_RawBuffer_GetOnDeviceSizeInBytes_Args> = since 81,
        PJRT_RawBuffer_GetMemorySpace: ExtFn<PJRT_RawBuffer_GetMemorySpace_Args> = since 81,
        PJRT_RawBuffer_CopyRawHostToDevice: ExtFn<PJRT_RawBuffer_CopyRawHostToDevice_Args> = since 81,
        PJRT_RawBuffer_CopyRawDeviceToHost: ExtFn<PJRT_RawBuffer_CopyRawDeviceToHost_Args> = since 81,
        PJRT_RawBuffer_GetHostPointer: ExtFn<PJRT_RawBuffer_GetHostPointer_Args> = since 81,
    }
);

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
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
        assert_eq!(std::mem::size_of::<PJRT_Extension_Base>(), 24);
        assert_eq!(offset_of!(PJRT_Extension_Base, type_), 8);
        assert_eq!(offset_of!(PJRT_Extension_Base, next), 16);
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
