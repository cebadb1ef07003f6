//! The plugin's extension chain.
//!
//! A plugin may offer optional features outside its function table, as a chain of extension
//! structs starting at `PJRT_Api.extension_start`. [`Plugin::extensions`] lists the chain;
//! [`Plugin::extension`] (and one shortcut per known extension, e.g.
//! [`Plugin::layouts_extension`]) returns a typed view, [`ExtensionRef`].
//!
//! Every member is gated by the extension's own `struct_size`: a member is read only when the
//! plugin's struct is long enough to contain it, and called only when it is non-NULL; otherwise
//! the call fails with [`Error::Unsupported`] naming the member. Members are read by byte offset
//! inside the plugin's `struct_size`; no reference to (or place of) a whole extension struct is
//! ever formed, since the plugin's may be shorter than the one declared. Extensions of a type this
//! crate does not know are listed as [`ExtensionKind::Other`] and otherwise ignored.
//!
//! Extension structs have no version field, and some older forms put other functions where the
//! declared members are (see [`crate::sys::Extension::OLDER_FORM`]): a node in such a form is
//! listed ([`ExtensionInfo::older_form`]) and its typed view exists, but it reports no member and
//! every call fails with [`Error::Unsupported`] naming the older form. Older forms of the same
//! size that differ only in their args (FFI version 2, MemoryDescriptions version 0) are handled
//! by sending args valid for every form; see [`FfiExtension`] and
//! [`MemoryDescriptionsExtension::device_memory_descriptions`].
//!
//! Safe calls exist for the extensions the CPU plugins expose: Layouts ([`LayoutsExtension`]),
//! MemoryDescriptions ([`MemoryDescriptionsExtension`]), Shardings ([`ShardingsExtension`]),
//! FFI ([`FfiExtension`]) and PhaseCompile ([`PhaseCompileExtension`]), for CustomPartitioner
//! ([`CustomPartitionerExtension`], on neither CPU plugin) and for TpuTopology
//! ([`TpuTopologyExtension`], the TPU plugin's; also reached through [`crate::Topology`]'s methods).
//! The others (XlaTransform, Stream, GPU custom call, Profiler, Triton, Callback, RawBuffer) are
//! reachable as typed views whose raw struct ([`ExtensionRef::as_raw`]) can be used with [`crate::sys`].
//!
//! ```
//! # fn main() -> pjrt_client::Result<()> {
//! use pjrt_client::{Client, ClientOptions, ElementType, Plugin};
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! for info in plugin.extensions() {
//!     println!("{} ({} bytes)", info.kind, info.struct_size);
//! }
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! if let Some(layouts) = plugin.layouts_extension() {
//!     let layout = layouts.client_default_layout(&client, ElementType::F32, &[2, 3])?;
//!     println!("{layout}"); // {1,0} on the CPU plugins
//! }
//! # Ok(()) }
//! ```

mod custom_partitioner;
mod ffi;
mod layouts;
mod memory_descriptions;
mod phase_compile;
pub mod profiler;
mod shardings;
mod tpu_topology;

pub use ffi::UserDataType;
pub use layouts::SerializedLayout;
pub use memory_descriptions::MemoryDescription;
pub use shardings::ExecutableShardings;
pub use tpu_topology::MAX_TPU_DIMS;

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::call::Api;
use crate::error::{Error, Result};
use crate::plugin::Plugin;
use crate::sys::{self, Extension};

/// The most nodes [`Plugin::extensions`] walks: a longer chain (or a cycle) is cut there.
pub const MAX_CHAIN_LENGTH: usize = 64;

/// `struct_size` was added at the front of `PJRT_Extension_Base` in 0.45; older bases have a
/// different layout, so their chains are not walked.
const BASE_WITH_SIZE_MINOR: i32 = 45;

macro_rules! extension_kinds {
    ($($variant:ident = $value:literal, $name:literal;)+) => {
        /// The type of an extension (`PJRT_Extension_Type`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ExtensionKind {
            $(
                #[doc = concat!("`", $name, "` (", stringify!($value), ")")]
                $variant,
            )+
            /// A type this crate does not know (from a newer plugin): listed, never used.
            Other(i32),
        }

        impl ExtensionKind {
            /// Converts the raw C value; unknown values become [`ExtensionKind::Other`].
            pub fn from_raw(raw: sys::PJRT_Extension_Type) -> Self {
                match raw.0 {
                    $($value => Self::$variant,)+
                    other => Self::Other(other),
                }
            }

            /// The raw C value.
            pub fn to_raw(self) -> sys::PJRT_Extension_Type {
                sys::PJRT_Extension_Type(match self {
                    $(Self::$variant => $value,)+
                    Self::Other(value) => value,
                })
            }

            /// The name the C API gives the type (e.g. `"Layouts"`), `None` for unknown types.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(Self::$variant => Some($name),)+
                    Self::Other(_) => None,
                }
            }
        }
    };
}

extension_kinds! {
    GpuCustomCall = 0, "Gpu_Custom_Call";
    Profiler = 1, "Profiler";
    CustomPartitioner = 2, "Custom_Partitioner";
    Stream = 3, "Stream";
    Layouts = 4, "Layouts";
    Ffi = 5, "FFI";
    MemoryDescriptions = 6, "MemoryDescriptions";
    Triton = 7, "Triton";
    RawBuffer = 8, "RawBuffer";
    PhaseCompile = 9, "PhaseCompile";
    Example = 10, "Example";
    Unknown = 11, "Unknown";
    CrossHostTransfers = 12, "CrossHostTransfers";
    ExecutableMetadata = 13, "ExecutableMetadata";
    Callback = 14, "Callback";
    HostAllocator = 15, "HostAllocator";
    TpuTopology = 16, "TpuTopology";
    TpuExecutable = 17, "TpuExecutable";
    Megascale = 18, "Megascale";
    Shardings = 19, "Shardings";
    AbiVersion = 20, "AbiVersion";
    Collectives = 21, "Collectives";
    MultiSlice = 22, "MultiSlice";
    HostMemoryAllocator = 23, "HostMemoryAllocator";
    XlaTransform = 24, "XlaTransform";
}

impl fmt::Display for ExtensionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown extension type {}", self.to_raw().0),
        }
    }
}

/// One node of a plugin's extension chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ExtensionInfo {
    /// Its type.
    pub kind: ExtensionKind,
    /// The size the plugin gives its struct: which members it provides.
    pub struct_size: usize,
    /// Whether the node is a known older form of its extension whose members are other
    /// functions than the declared ones (e.g. a Layouts node shorter than 56 bytes): listed,
    /// never used.
    pub older_form: bool,
}

/// Whether a node of this type and size is its extension's known older form.
fn is_older_form(type_: sys::PJRT_Extension_Type, struct_size: usize) -> bool {
    sys::older_form_of(type_).is_some_and(|form| form.describes(struct_size))
}

/// A node read from the chain.
#[derive(Clone, Copy, Debug)]
struct Node {
    ptr: NonNull<sys::PJRT_Extension_Base>,
    type_: sys::PJRT_Extension_Type,
    struct_size: usize,
}

/// Reads a `T` at byte `offset` of a plugin struct, unaligned, without forming a reference to or
/// a place of the struct.
///
/// # Safety
/// `offset + size_of::<T>()` bytes from `ptr` must be readable (inside the plugin's struct), and
/// any bit pattern there must be a valid `T` (integers, raw pointers, `Option<fn>`).
pub(crate) unsafe fn read_at<T: Copy>(ptr: *const u8, offset: usize) -> T {
    // SAFETY: guaranteed by the caller.
    unsafe { ptr.add(offset).cast::<T>().read_unaligned() }
}

const BASE_TYPE_OFFSET: usize = std::mem::offset_of!(sys::PJRT_Extension_Base, type_);
const BASE_NEXT_OFFSET: usize = std::mem::offset_of!(sys::PJRT_Extension_Base, next);

/// Walks a chain from `start`: stops at NULL, at a node seen before, at a node too short to hold
/// its `next` field, or after [`MAX_CHAIN_LENGTH`] nodes. A node too short even for its `type`
/// is not listed. Each field of a base is read only when the node's `struct_size` covers it.
///
/// # Safety
/// `start` must be NULL or point to a node readable for its own `struct_size` (and at least the
/// 8 bytes of `struct_size`), and so must every `next` of a node whose `struct_size` covers the
/// whole base.
unsafe fn walk(start: *mut sys::PJRT_Extension_Base) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut current = start;
    while let Some(ptr) = NonNull::new(current) {
        if nodes.len() >= MAX_CHAIN_LENGTH || nodes.iter().any(|n| n.ptr == ptr) {
            break;
        }
        let bytes = ptr.as_ptr() as *const u8;
        // SAFETY: guaranteed by the caller: a node's `struct_size` (offset 0) is readable.
        let struct_size: usize = unsafe { read_at(bytes, 0) };
        if struct_size < BASE_TYPE_OFFSET + std::mem::size_of::<sys::PJRT_Extension_Type>() {
            // Malformed: not even `type` is part of this node.
            break;
        }
        // SAFETY: `type` lies inside the node (checked just above); an int32 newtype.
        let type_: sys::PJRT_Extension_Type = unsafe { read_at(bytes, BASE_TYPE_OFFSET) };
        nodes.push(Node { ptr, type_, struct_size });
        if struct_size < BASE_NEXT_OFFSET + std::mem::size_of::<*mut sys::PJRT_Extension_Base>() {
            // Malformed: `next` is not part of this node.
            break;
        }
        // SAFETY: `next` lies inside the node (checked just above); a raw pointer.
        current = unsafe { read_at(bytes, BASE_NEXT_OFFSET) };
    }
    nodes
}

/// The plugin's chain, read only after `Api::new` checked the table's header.
fn chain(api: &Api) -> Vec<Node> {
    if api.version().minor < BASE_WITH_SIZE_MINOR {
        return Vec::new();
    }
    // SAFETY: `Api::new` checked that the table holds at least its 40-byte header, which contains
    // `extension_start` (offset 8). The plugin's chain is static data that lives as long as the
    // plugin (never unloaded), as the API requires.
    unsafe {
        let start = read_at(api.raw() as *const u8, std::mem::offset_of!(sys::PJRT_Api, extension_start));
        walk(start)
    }
}

fn infos(api: &Api) -> Vec<ExtensionInfo> {
    chain(api)
        .into_iter()
        .map(|n| ExtensionInfo {
            kind: ExtensionKind::from_raw(n.type_),
            struct_size: n.struct_size,
            older_form: is_older_form(n.type_, n.struct_size),
        })
        .collect()
}

fn find<E: Extension>(api: &Api) -> Option<ExtensionRef<'_, E>> {
    chain(api)
        .into_iter()
        .find(|n| n.type_ == E::TYPE && n.struct_size >= std::mem::size_of::<sys::PJRT_Extension_Base>())
        // SAFETY: the node comes from the plugin's chain and carries `E`'s type.
        .map(|n| unsafe { ExtensionRef::new(api, n.ptr.cast(), n.struct_size) })
}

/// A typed view of one extension struct of a plugin, borrowed from the plugin.
///
/// Members are gated by the plugin's `struct_size` for the struct (see the module docs).
pub struct ExtensionRef<'p, E: Extension> {
    api: &'p Api,
    ptr: NonNull<E>,
    struct_size: usize,
}

impl<E: Extension> Clone for ExtensionRef<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E: Extension> Copy for ExtensionRef<'_, E> {}

// SAFETY: the extension struct is immutable static data of the plugin, which is never unloaded;
// whether its functions may be called concurrently is the plugin's contract for each, as for the
// function table.
unsafe impl<E: Extension> Send for ExtensionRef<'_, E> {}
// SAFETY: as above; the view has no interior mutability.
unsafe impl<E: Extension> Sync for ExtensionRef<'_, E> {}

/// The type of a field, known without forming any place or reference of the struct (the closure
/// is never called).
fn field_type<E, T>(_field: fn(&E) -> &T) -> PhantomData<T> {
    PhantomData
}

/// Reads a member after checking that the plugin's struct contains it (and is not an older form),
/// and evaluates to the non-NULL function pointer; returns `Error::Unsupported` from the enclosing
/// function otherwise.
macro_rules! ext_fn {
    ($ext:expr, $ty:ty, $field:ident) => {{
        const OFFSET: usize = ::core::mem::offset_of!($ty, $field);
        let ext: &$crate::extensions::ExtensionRef<'_, $ty> = $ext;
        let function = ext.read_member(OFFSET, $crate::extensions::field_type::<$ty, _>(|e| &e.$field))?;
        match function {
            Some(function) => (function, ext.member_name(OFFSET)),
            None => return Err(ext.unsupported(OFFSET)),
        }
    }};
}
pub(crate) use ext_fn;

impl<'p, E: Extension> ExtensionRef<'p, E> {
    /// # Safety
    /// `ptr` must point to the plugin's extension node of type `E::TYPE`, readable for
    /// `struct_size` bytes for as long as the plugin lives.
    unsafe fn new(api: &'p Api, ptr: NonNull<E>, struct_size: usize) -> Self {
        Self { api, ptr, struct_size }
    }

    /// The size the plugin gives this struct.
    pub fn struct_size(&self) -> usize {
        self.struct_size
    }

    /// The plugin's struct, for use with [`crate::sys`]. It stays valid while the plugin is
    /// loaded (always); read no member beyond [`Self::struct_size`].
    pub fn as_raw(&self) -> *const E {
        self.ptr.as_ptr()
    }

    /// Whether the plugin's struct is a known older form of the extension (see
    /// [`Extension::OLDER_FORM`]): then no member is reported or called.
    pub fn is_older_form(&self) -> bool {
        E::is_older_form(self.struct_size)
    }

    /// Whether the plugin provides the member `name` (its C name, e.g. `"type_register"`):
    /// declared by this crate, inside the plugin's struct, and not NULL (not zero, for data).
    /// Never for a struct in an older form.
    pub fn has(&self, name: &str) -> bool {
        E::member(name).is_some_and(|m| self.present(m))
    }

    /// The C names of the members the plugin provides (see [`Self::has`]), in struct order.
    pub fn members(&self) -> Vec<&'static str> {
        E::MEMBERS.iter().filter(|m| self.present(m)).map(|m| m.name).collect()
    }

    fn present(&self, member: &sys::ExtMember) -> bool {
        if self.is_older_form() || !member.within(self.struct_size) || member.size != std::mem::size_of::<usize>() {
            return false;
        }
        // SAFETY: the member lies inside the plugin's struct_size (checked just above) and is 8
        // bytes, read unaligned as plain bits.
        let bits: usize = unsafe { read_at(self.ptr.as_ptr() as *const u8, member.offset) };
        bits != 0
    }

    fn member_info(&self, offset: usize) -> &'static sys::ExtMember {
        E::member_at(offset).expect("every gated offset is a declared member")
    }

    fn member_name(&self, offset: usize) -> &'static str {
        self.member_info(offset).error_name()
    }

    /// `Ok` when the member at `offset` lies inside the plugin's struct and the struct is not an
    /// older form.
    fn gate(&self, offset: usize) -> Result<()> {
        if let (true, Some(form)) = (self.is_older_form(), E::OLDER_FORM) {
            return Err(self.api.unsupported_feature(form.description, form.declared_since_minor));
        }
        if self.member_info(offset).within(self.struct_size) {
            Ok(())
        } else {
            Err(self.unsupported(offset))
        }
    }

    /// Reads the member at `offset` (of type `T`, as declared) after [`Self::gate`].
    fn read_member<T: Copy>(&self, offset: usize, _type: PhantomData<T>) -> Result<T> {
        self.gate(offset)?;
        let member = self.member_info(offset);
        assert_eq!(member.size, std::mem::size_of::<T>(), "{} is read as its declared type", member.qualified_name);
        // SAFETY: `gate` checked that the member lies inside the plugin's struct_size, and its size
        // is that of `T` (asserted); every declared member type (`Option<fn>`, raw pointers,
        // integers) is valid for any bits the plugin stores there.
        Ok(unsafe { read_at(self.ptr.as_ptr() as *const u8, offset) })
    }

    #[cold]
    fn unsupported(&self, offset: usize) -> Error {
        let member = self.member_info(offset);
        self.api.unsupported_feature(member.error_name(), member.since_minor)
    }

    /// Refuses objects of another plugin: calling this plugin's code on them would be undefined.
    /// Two handles on one table (`Plugin::from_table`) are one plugin.
    fn same_plugin(&self, api: &Api) -> Result<()> {
        if std::ptr::eq(self.api.raw(), api.raw()) {
            Ok(())
        } else {
            Err(Error::invalid(format!("the object passed to the {} extension belongs to another plugin", E::NAME)))
        }
    }
}

impl<E: Extension> fmt::Debug for ExtensionRef<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtensionRef")
            .field("extension", &E::NAME)
            .field("struct_size", &self.struct_size)
            .field("older_form", &self.is_older_form())
            .field("members", &self.members())
            .finish()
    }
}

/// The Layouts extension: memory layouts of buffers, executables and a client's defaults.
pub type LayoutsExtension<'p> = ExtensionRef<'p, sys::PJRT_Layouts_Extension>;
/// The MemoryDescriptions extension: the memory kinds of a device.
pub type MemoryDescriptionsExtension<'p> = ExtensionRef<'p, sys::PJRT_MemoryDescriptions_Extension>;
/// The Shardings extension: an executable's parameter and output shardings.
pub type ShardingsExtension<'p> = ExtensionRef<'p, sys::PJRT_Shardings_Extension>;
/// The FFI extension: XLA FFI types and handlers.
pub type FfiExtension<'p> = ExtensionRef<'p, sys::PJRT_FFI_Extension>;
/// The PhaseCompile extension (experimental; unusable on the CPU plugins, which give no compiler).
pub type PhaseCompileExtension<'p> = ExtensionRef<'p, sys::PJRT_PhaseCompile_Extension>;
/// The XlaTransform extension (raw access only).
pub type XlaTransformExtension<'p> = ExtensionRef<'p, sys::PJRT_Xla_Transform_Extension>;
/// The Stream extension (GPU; raw access only).
pub type StreamExtension<'p> = ExtensionRef<'p, sys::PJRT_Stream_Extension>;
/// The GPU custom-call extension (raw access only).
pub type GpuCustomCallExtension<'p> = ExtensionRef<'p, sys::PJRT_Gpu_Custom_Call>;
/// The Profiler extension (its table: [`ExtensionRef::profiler_api`]; a session on it:
/// [`profiler::ProfilerSession`]).
pub type ProfilerExtension<'p> = ExtensionRef<'p, sys::PJRT_Profiler_Extension>;
/// The Triton extension (GPU; raw access only).
pub type TritonExtension<'p> = ExtensionRef<'p, sys::PJRT_Triton_Extension>;
/// The Callback extension (raw access only).
pub type CallbackExtension<'p> = ExtensionRef<'p, sys::PJRT_Callback_Extension>;
/// The RawBuffer extension (experimental; raw access only).
pub type RawBufferExtension<'p> = ExtensionRef<'p, sys::PJRT_RawBuffer_Extension>;
/// The CustomPartitioner extension: JAX custom-call partitioners and batch partitionable calls.
pub type CustomPartitionerExtension<'p> = ExtensionRef<'p, sys::PJRT_Custom_Partitioner_Extension>;
/// The TpuTopology extension: a TPU topology's processes, chips, cores and logical devices (only
/// the TPU plugin has it).
pub type TpuTopologyExtension<'p> = ExtensionRef<'p, sys::PJRT_TpuTopology_Extension>;

impl Plugin {
    /// The plugin's extension chain, in chain order (which carries no meaning). Unknown types
    /// are listed as [`ExtensionKind::Other`]. Empty for plugins older than 0.45, whose chain has
    /// another layout.
    pub fn extensions(&self) -> Vec<ExtensionInfo> {
        infos(self.api())
    }

    /// A typed view of the first extension of type `E` in the chain.
    pub fn extension<E: Extension>(&self) -> Option<ExtensionRef<'_, E>> {
        find(self.api())
    }

    /// The Layouts extension.
    pub fn layouts_extension(&self) -> Option<LayoutsExtension<'_>> {
        self.extension()
    }

    /// The MemoryDescriptions extension.
    pub fn memory_descriptions_extension(&self) -> Option<MemoryDescriptionsExtension<'_>> {
        self.extension()
    }

    /// The Shardings extension.
    pub fn shardings_extension(&self) -> Option<ShardingsExtension<'_>> {
        self.extension()
    }

    /// The FFI extension.
    pub fn ffi_extension(&self) -> Option<FfiExtension<'_>> {
        self.extension()
    }

    /// The PhaseCompile extension.
    pub fn phase_compile_extension(&self) -> Option<PhaseCompileExtension<'_>> {
        self.extension()
    }

    /// The XlaTransform extension.
    pub fn xla_transform_extension(&self) -> Option<XlaTransformExtension<'_>> {
        self.extension()
    }

    /// The Stream extension.
    pub fn stream_extension(&self) -> Option<StreamExtension<'_>> {
        self.extension()
    }

    /// The GPU custom-call extension.
    pub fn gpu_custom_call_extension(&self) -> Option<GpuCustomCallExtension<'_>> {
        self.extension()
    }

    /// The Profiler extension.
    pub fn profiler_extension(&self) -> Option<ProfilerExtension<'_>> {
        self.extension()
    }

    /// The Triton extension.
    pub fn triton_extension(&self) -> Option<TritonExtension<'_>> {
        self.extension()
    }

    /// The Callback extension.
    pub fn callback_extension(&self) -> Option<CallbackExtension<'_>> {
        self.extension()
    }

    /// The RawBuffer extension.
    pub fn raw_buffer_extension(&self) -> Option<RawBufferExtension<'_>> {
        self.extension()
    }

    /// The CustomPartitioner extension (on neither CPU plugin).
    ///
    /// ```
    /// let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// assert!(plugin.custom_partitioner_extension().is_none(), "the CPU plugins have none");
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn custom_partitioner_extension(&self) -> Option<CustomPartitionerExtension<'_>> {
        self.extension()
    }

    /// The TpuTopology extension (only the TPU plugin, `libtpu`, has it).
    pub fn tpu_topology_extension(&self) -> Option<TpuTopologyExtension<'_>> {
        self.extension()
    }
}

#[cfg(test)]
mod tests {
    use super::layouts::ExecutableSide;
    use super::memory_descriptions::default_memory_index;
    use super::*;
    use crate::call::slice_from_raw;
    use crate::sys::Args;
    use std::ffi::{c_char, c_void};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fake function table with nothing but a header: enough for `Api` (errors are never
    /// produced by the fake extension functions below).
    fn fake_api(minor: i32) -> Api {
        fake_api_with_chain(minor, std::ptr::null_mut())
    }

    /// The same, with an extension chain starting at `start`.
    fn fake_api_with_chain(minor: i32, start: *mut sys::PJRT_Extension_Base) -> Api {
        // SAFETY: every field of `PJRT_Api` is an integer, a pointer or an `Option<fn>`, all
        // valid when zero.
        let table: &'static mut sys::PJRT_Api = Box::leak(Box::new(unsafe { std::mem::zeroed() }));
        table.struct_size = std::mem::size_of::<sys::PJRT_Api>();
        table.pjrt_api_version.minor_version = minor;
        table.extension_start = start;
        // SAFETY: the table is leaked, so valid for the rest of the process.
        unsafe { Api::new(NonNull::from(table)) }.expect("a valid fake table")
    }

    fn base(type_: sys::PJRT_Extension_Type, struct_size: usize) -> sys::PJRT_Extension_Base {
        sys::PJRT_Extension_Base { struct_size, type_, next: std::ptr::null_mut() }
    }

    thread_local! {
        /// Calls of `counting` on this thread: the fake functions run on the calling test's
        /// thread, so tests running in parallel never see each other's calls.
        static CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn calls() -> usize {
        CALLS.with(|c| c.get())
    }

    unsafe extern "C" fn counting<A>(_args: *mut A) -> *mut sys::PJRT_Error {
        CALLS.with(|c| c.set(c.get() + 1));
        std::ptr::null_mut()
    }

    fn full_layouts(struct_size: usize) -> sys::PJRT_Layouts_Extension {
        sys::PJRT_Layouts_Extension {
            base: base(sys::PJRT_Extension_Type::Layouts, struct_size),
            PJRT_Layouts_MemoryLayout_Destroy: Some(counting),
            PJRT_Layouts_MemoryLayout_Serialize: Some(counting),
            PJRT_Layouts_PJRT_Client_GetDefaultLayout: Some(counting),
            PJRT_Layouts_PJRT_Buffer_MemoryLayout: Some(counting),
            PJRT_Layouts_PJRT_Topology_GetDefaultLayout: Some(counting),
            PJRT_Layouts_PJRT_Executable_GetOutputLayouts: Some(counting),
            PJRT_Layouts_PJRT_Executable_GetParameterLayouts: Some(counting),
        }
    }

    /// A view of a fake extension struct on a fake table of API version `0.minor`.
    fn view<E: Extension>(minor: i32, ext: &mut E) -> ExtensionRef<'static, E> {
        let api: &'static Api = Box::leak(Box::new(fake_api(minor)));
        // SAFETY: `ext` starts with its base.
        let size = unsafe { (*(ext as *mut E as *const sys::PJRT_Extension_Base)).struct_size };
        // SAFETY: `ext` is readable for `size` bytes; the tests keep it alive while the view is
        // used.
        unsafe { ExtensionRef::new(api, NonNull::from(ext), size) }
    }

    #[test]
    fn members_beyond_struct_size_are_never_read_or_called() {
        // Only the first five members (up to Topology_GetDefaultLayout, the 0.75 form) are inside
        // the plugin's struct; the bytes after it hold valid-looking pointers that must be ignored.
        let mut short = full_layouts(64);
        let ext = view(115, &mut short);
        assert!(ext.has("PJRT_Layouts_MemoryLayout_Destroy"));
        assert!(ext.has("PJRT_Layouts_PJRT_Topology_GetDefaultLayout"));
        assert!(!ext.has("PJRT_Layouts_PJRT_Executable_GetOutputLayouts"));
        assert!(!ext.has("no_such_member"));
        assert!(!ext.is_older_form());
        assert_eq!(
            ext.members(),
            [
                "PJRT_Layouts_MemoryLayout_Destroy",
                "PJRT_Layouts_MemoryLayout_Serialize",
                "PJRT_Layouts_PJRT_Client_GetDefaultLayout",
                "PJRT_Layouts_PJRT_Buffer_MemoryLayout",
                "PJRT_Layouts_PJRT_Topology_GetDefaultLayout",
            ]
        );

        let before = calls();
        let fake_exe = NonNull::<sys::PJRT_Executable>::dangling().as_ptr();
        // SAFETY: the gate refuses before anything is called with the dangling pointer.
        let err = unsafe { ext.executable_layouts_raw(fake_exe, ExecutableSide::Parameters) }.unwrap_err();
        match err {
            Error::Unsupported { function, since_minor, plugin_minor, .. } => {
                assert_eq!(function, "PJRT_Layouts_PJRT_Executable_GetParameterLayouts");
                assert_eq!(since_minor, 93);
                assert_eq!(plugin_minor, 115);
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
        // SAFETY: as above.
        let err = unsafe { ext.executable_layouts_raw(fake_exe, ExecutableSide::Outputs) }.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unsupported { function: "PJRT_Layouts_PJRT_Executable_GetOutputLayouts", since_minor: 81, .. }
            ),
            "{err:?}"
        );
        assert_eq!(calls(), before, "nothing beyond struct_size was called");
    }

    #[test]
    fn members_inside_struct_size_are_called_and_null_ones_refused() {
        let mut full = full_layouts(sys::PJRT_Layouts_Extension::STRUCT_SIZE);
        full.PJRT_Layouts_MemoryLayout_Serialize = None;
        let ext = view(115, &mut full);
        assert!(!ext.has("PJRT_Layouts_MemoryLayout_Serialize"));
        assert!(ext.has("PJRT_Layouts_PJRT_Executable_GetParameterLayouts"));
        // GetOutputLayouts is present but Serialize is NULL: refused before any call.
        let before = calls();
        // SAFETY: every member the call needs is checked before GetOutputLayouts is called, so
        // the dangling pointer is never used.
        let err =
            unsafe { ext.executable_layouts_raw(NonNull::dangling().as_ptr(), ExecutableSide::Outputs) }.unwrap_err();
        assert!(matches!(err, Error::Unsupported { function: "PJRT_Layouts_MemoryLayout_Serialize", .. }), "{err:?}");
        assert_eq!(calls(), before);

        // A present member is called: destroying a (fake) owned layout calls Destroy once.
        let (destroy, name) =
            (|| -> Result<_> { Ok(ext_fn!(&ext, sys::PJRT_Layouts_Extension, PJRT_Layouts_MemoryLayout_Destroy)) })()
                .unwrap();
        assert_eq!(name, "PJRT_Layouts_MemoryLayout_Destroy");
        let owned = ext.own(NonNull::dangling().as_ptr(), destroy, name, "test").unwrap();
        drop(owned);
        assert_eq!(calls(), before + 1);
    }

    #[test]
    fn unsupported_names_members_without_prefix_by_extension() {
        let mut phase = sys::PJRT_PhaseCompile_Extension {
            base: base(sys::PJRT_Extension_Type::PhaseCompile, 64),
            phase_compile_get_compiler: None,
            phase_compile_destroy_compiler: None,
            phase_compile_run_phases: Some(counting),
            phase_compile_get_phase_names: Some(counting),
            phase_compile_c_buffers_destroy: None,
        };
        let ext = view(106, &mut phase);
        let err = ext.phase_names().unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unsupported {
                    function: "PJRT_PhaseCompile_Extension.phase_compile_get_compiler",
                    plugin_minor: 106,
                    ..
                }
            ),
            "{err:?}"
        );
        // A short FFI struct (version 2 before 0.73): register_handler outside.
        let mut ffi = sys::PJRT_FFI_Extension {
            base: base(sys::PJRT_Extension_Type::FFI, 40),
            type_register: Some(counting),
            user_data_add: Some(counting),
            register_handler: Some(counting),
        };
        let ext = view(106, &mut ffi);
        assert_eq!(ext.members(), ["type_register", "user_data_add"]);
        // SAFETY: refused before the handler is used.
        let err = unsafe { ext.register_handler("t", "Host", std::ptr::null_mut(), false) }.unwrap_err();
        assert!(
            matches!(err, Error::Unsupported { function: "PJRT_FFI_Extension.register_handler", since_minor: 73, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn profiler_data_members_are_gated_too() {
        let mut profiler = sys::PJRT_Profiler_Extension {
            base: base(sys::PJRT_Extension_Type::Profiler, 24),
            profiler_api: NonNull::dangling().as_ptr(),
            traceme_context_id: 7,
        };
        assert_eq!(view(115, &mut profiler).profiler_api(), None);
        profiler.base.struct_size = 40;
        assert!(view(115, &mut profiler).profiler_api().is_some());
    }

    #[test]
    fn walk_stops_at_cycles_and_keeps_unknown_types() {
        let mut layouts = full_layouts(80);
        let mut unknown = base(sys::PJRT_Extension_Type(999), 24);
        let mut shardings = base(sys::PJRT_Extension_Type::Shardings, 40);
        let first = std::ptr::addr_of_mut!(layouts.base);
        let second = std::ptr::addr_of_mut!(unknown);
        let third = std::ptr::addr_of_mut!(shardings);
        // SAFETY: three live nodes, linked and read through raw pointers only; the last links
        // back to the first (a cycle).
        let nodes = unsafe {
            (*first).next = second;
            (*second).next = third;
            (*third).next = first;
            walk(first)
        };
        let kinds: Vec<_> = nodes.iter().map(|n| (ExtensionKind::from_raw(n.type_), n.struct_size)).collect();
        assert_eq!(
            kinds,
            [(ExtensionKind::Layouts, 80), (ExtensionKind::Other(999), 24), (ExtensionKind::Shardings, 40)]
        );
        assert_eq!(ExtensionKind::Other(999).to_string(), "unknown extension type 999");
        assert_eq!(ExtensionKind::from_raw(sys::PJRT_Extension_Type::XlaTransform), ExtensionKind::XlaTransform);
        for raw in 0..=24 {
            assert_eq!(ExtensionKind::from_raw(sys::PJRT_Extension_Type(raw)).to_raw().0, raw);
            assert!(ExtensionKind::from_raw(sys::PJRT_Extension_Type(raw)).name().is_some());
        }
    }

    #[test]
    fn walk_is_bounded_and_stops_at_short_nodes() {
        let mut nodes: Vec<sys::PJRT_Extension_Base> =
            (0..100).map(|_| base(sys::PJRT_Extension_Type::Example, 24)).collect();
        let ptr = nodes.as_mut_ptr();
        for i in 0..99 {
            // SAFETY: both indices are in bounds.
            unsafe { (*ptr.add(i)).next = ptr.add(i + 1) };
        }
        // SAFETY: a chain of live bases.
        assert_eq!(unsafe { walk(ptr) }.len(), MAX_CHAIN_LENGTH);
        nodes[1].struct_size = 16; // too short to hold `next`
                                   // SAFETY: as above.
        assert_eq!(unsafe { walk(nodes.as_mut_ptr()) }.len(), 2);
        // SAFETY: NULL is an empty chain.
        assert!(unsafe { walk(std::ptr::null_mut()) }.is_empty());
    }

    #[test]
    fn chains_of_plugins_older_than_0_45_are_not_read() {
        let api = fake_api(44);
        // The fake table's extension_start is NULL anyway; what matters is that it is not read.
        assert!(infos(&api).is_empty());
        assert!(find::<sys::PJRT_Layouts_Extension>(&api).is_none());
    }
    // ---- older forms ----------------------------------------------------------------------

    /// An early-form Layouts node: the base and one function at offset 24 (32 bytes in all,
    /// nothing after it).
    #[repr(C)]
    struct EarlyLayouts {
        base: sys::PJRT_Extension_Base,
        get_memory_layout: sys::ExtFn<sys::PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args>,
    }

    static EARLY_CALLS: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn early_get_memory_layout(
        _args: *mut sys::PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args,
    ) -> *mut sys::PJRT_Error {
        EARLY_CALLS.fetch_add(1, Ordering::SeqCst);
        std::ptr::null_mut()
    }

    #[test]
    fn an_early_form_layouts_struct_is_listed_but_none_of_its_members_is_used() {
        let early: &'static mut EarlyLayouts = Box::leak(Box::new(EarlyLayouts {
            base: base(sys::PJRT_Extension_Type::Layouts, 32),
            get_memory_layout: Some(early_get_memory_layout),
        }));
        assert_eq!(std::mem::size_of::<EarlyLayouts>(), 32);
        let api: &'static Api = Box::leak(Box::new(fake_api_with_chain(115, std::ptr::addr_of_mut!(early.base))));

        // Listed, with its size, and marked as the older form.
        assert_eq!(infos(api), [ExtensionInfo { kind: ExtensionKind::Layouts, struct_size: 32, older_form: true }]);

        // The typed view exists but reports nothing: the pointer at offset 24 is not Destroy.
        let ext = find::<sys::PJRT_Layouts_Extension>(api).expect("a view of the early form");
        assert!(ext.is_older_form());
        assert!(!ext.has("PJRT_Layouts_MemoryLayout_Destroy"));
        assert!(ext.members().is_empty(), "{ext:?}");

        // Every call refuses, naming the early form, and nothing is called.
        let fake = NonNull::dangling().as_ptr();
        // SAFETY: refused before anything is called with the dangling pointers.
        let errors = unsafe {
            [
                ext.buffer_layout_raw(fake).unwrap_err(),
                ext.executable_layouts_raw(NonNull::dangling().as_ptr(), ExecutableSide::Outputs).unwrap_err(),
                ext.serialize(NonNull::dangling().as_ptr()).unwrap_err(),
            ]
        };
        for err in errors {
            match &err {
                Error::Unsupported { function, since_minor: 51, plugin_minor: 115, .. } => {
                    assert!(function.starts_with("PJRT_Layouts_Extension (an early form"), "{err}");
                }
                other => panic!("expected Unsupported naming the early form, got {other:?}"),
            }
        }
        assert_eq!(EARLY_CALLS.load(Ordering::SeqCst), 0, "the early form's function was never called");

        // A 56-byte node is the first usable form.
        let mut usable = full_layouts(56);
        let ext = view(115, &mut usable);
        assert!(!ext.is_older_form());
        assert_eq!(ext.members().len(), 4);
    }

    /// A version-1 FFI node: `{base, user_data_add}` (32 bytes, nothing after it).
    #[repr(C)]
    struct FfiV1 {
        base: sys::PJRT_Extension_Base,
        user_data_add: sys::ExtFn<sys::PJRT_FFI_UserData_Add_Args_V2>,
    }

    static FFI_V1_CALLS: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn ffi_v1_user_data_add(_args: *mut sys::PJRT_FFI_UserData_Add_Args_V2) -> *mut sys::PJRT_Error {
        FFI_V1_CALLS.fetch_add(1, Ordering::SeqCst);
        std::ptr::null_mut()
    }

    #[test]
    fn a_version_1_ffi_struct_is_listed_but_its_user_data_add_is_never_taken_for_type_register() {
        let v1: &'static mut FfiV1 = Box::leak(Box::new(FfiV1 {
            base: base(sys::PJRT_Extension_Type::FFI, 32),
            user_data_add: Some(ffi_v1_user_data_add),
        }));
        let api: &'static Api = Box::leak(Box::new(fake_api_with_chain(53, std::ptr::addr_of_mut!(v1.base))));
        assert_eq!(infos(api), [ExtensionInfo { kind: ExtensionKind::Ffi, struct_size: 32, older_form: true }]);
        let ext = find::<sys::PJRT_FFI_Extension>(api).unwrap();
        assert!(ext.is_older_form());
        assert!(!ext.has("type_register"));
        assert!(ext.members().is_empty());
        let err = ext.register_type("t").unwrap_err();
        assert!(
            matches!(err, Error::Unsupported { function, since_minor: 54, plugin_minor: 53, .. }
                if function.starts_with("PJRT_FFI_Extension (version 1")),
            "{err:?}"
        );
        // SAFETY: refused before the dangling context is used.
        let err =
            unsafe { ext.add_user_data_raw(NonNull::dangling().as_ptr(), 1, std::ptr::null_mut(), None) }.unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
        assert_eq!(FFI_V1_CALLS.load(Ordering::SeqCst), 0);
    }

    // ---- MemoryDescriptions version 0 and 1 -------------------------------------------------

    static MEMORY_A: u8 = 0;
    static MEMORY_B: u8 = 0;

    struct Descriptions([*const sys::PJRT_MemoryDescription; 2]);
    // SAFETY: two addresses of statics, never written through.
    unsafe impl Sync for Descriptions {}
    static DESCRIPTIONS: Descriptions = Descriptions([
        &MEMORY_A as *const u8 as *const sys::PJRT_MemoryDescription,
        &MEMORY_B as *const u8 as *const sys::PJRT_MemoryDescription,
    ]);

    /// Version 0: reads and writes only its 40-byte args (no `default_memory_index`); refuses
    /// (by writing no descriptions) args shorter than that.
    unsafe extern "C" fn describe_v0(
        args: *mut sys::PJRT_DeviceDescription_MemoryDescriptions_Args,
    ) -> *mut sys::PJRT_Error {
        let bytes = args as *mut u8;
        // SAFETY: struct_size at 0 of the caller's args.
        let size = unsafe { bytes.cast::<usize>().read() };
        if size >= 40 {
            // SAFETY: the two out fields lie inside the 40 bytes checked just above.
            unsafe {
                bytes.add(24).cast::<*const *const sys::PJRT_MemoryDescription>().write(DESCRIPTIONS.0.as_ptr());
                bytes.add(32).cast::<usize>().write(2);
            }
        }
        std::ptr::null_mut()
    }

    /// Version 1 writing `INDEX` as the default (SIZE_MAX: none).
    unsafe extern "C" fn describe_v1<const INDEX: usize>(
        args: *mut sys::PJRT_DeviceDescription_MemoryDescriptions_Args,
    ) -> *mut sys::PJRT_Error {
        // SAFETY: the caller's args; fields written only when its struct_size covers them.
        unsafe {
            if (*args).struct_size >= 48 {
                (*args).memory_descriptions = DESCRIPTIONS.0.as_ptr();
                (*args).num_memory_descriptions = 2;
                (*args).default_memory_index = INDEX;
            }
        }
        std::ptr::null_mut()
    }

    unsafe extern "C" fn kind(args: *mut sys::PJRT_MemoryDescription_Kind_Args) -> *mut sys::PJRT_Error {
        // SAFETY: the caller's args, 44 bytes.
        unsafe {
            let a = (*args).memory_description == DESCRIPTIONS.0[0];
            let kind: &'static str = if a { "device" } else { "pinned_host" };
            (*args).kind = kind.as_ptr() as *const c_char;
            (*args).kind_size = kind.len();
            (*args).kind_id = if a { 0 } else { 1 };
        }
        std::ptr::null_mut()
    }

    fn defaults(describe: sys::ExtFn<sys::PJRT_DeviceDescription_MemoryDescriptions_Args>) -> Vec<(String, bool)> {
        let mut ext = sys::PJRT_MemoryDescriptions_Extension {
            base: base(sys::PJRT_Extension_Type::MemoryDescriptions, 40),
            PJRT_DeviceDescription_MemoryDescriptions: describe,
            PJRT_MemoryDescription_Kind: Some(kind),
        };
        let ext = view(115, &mut ext);
        // SAFETY: the fake functions never use the description.
        let descriptions = unsafe { ext.memory_descriptions_raw(NonNull::dangling().as_ptr()) }.unwrap();
        descriptions.into_iter().map(|d| (d.kind, d.is_default)).collect()
    }

    #[test]
    fn a_version_0_memory_descriptions_plugin_reports_no_default() {
        let none = [("device".to_owned(), false), ("pinned_host".to_owned(), false)];
        // Version 0 never writes default_memory_index: not "memory 0 is the default".
        assert_eq!(defaults(Some(describe_v0)), none);
        // Version 1: SIZE_MAX is no default; an index past the descriptions is no default (and
        // no panic); a valid index marks that memory.
        assert_eq!(defaults(Some(describe_v1::<{ usize::MAX }>)), none);
        assert_eq!(defaults(Some(describe_v1::<2>)), none);
        assert_eq!(defaults(Some(describe_v1::<{ usize::MAX - 1 }>)), none);
        assert_eq!(defaults(Some(describe_v1::<1>)), [("device".to_owned(), false), ("pinned_host".to_owned(), true)]);
        assert_eq!(defaults(Some(describe_v1::<0>)), [("device".to_owned(), true), ("pinned_host".to_owned(), false)]);
        assert_eq!(default_memory_index(0, 0), None);
    }

    // ---- FFI versions 2 and 3 ---------------------------------------------------------------

    static FFI_V2_REGISTER_SIZE: AtomicUsize = AtomicUsize::new(0);
    static FFI_V3_TYPE_INFO_SEEN: AtomicUsize = AtomicUsize::new(0);
    static FFI_V2_ADD_SEEN: AtomicUsize = AtomicUsize::new(0);
    static FFI_V3_ADD_SEEN: AtomicUsize = AtomicUsize::new(0);

    /// Version 2: `type_id_register` reads only its 40-byte args, and refuses (by assigning no
    /// id) anything shorter.
    unsafe extern "C" fn ffi_v2_type_id_register(args: *mut sys::PJRT_FFI_Type_Register_Args) -> *mut sys::PJRT_Error {
        let args = args.cast::<sys::PJRT_FFI_TypeID_Register_Args>();
        // SAFETY: struct_size first; the rest only when covered.
        unsafe {
            let size = (*args).struct_size;
            FFI_V2_REGISTER_SIZE.store(size, Ordering::SeqCst);
            if size >= sys::PJRT_FFI_TypeID_Register_Args::STRUCT_SIZE {
                let name = slice_from_raw((*args).type_name as *const u8, (*args).type_name_size);
                if name == b"v2_type" && (*args).type_id == 0 {
                    (*args).type_id = 2;
                }
            }
        }
        std::ptr::null_mut()
    }

    /// Version 3: needs 48 bytes and dereferences `type_info` unconditionally.
    unsafe extern "C" fn ffi_v3_type_register(args: *mut sys::PJRT_FFI_Type_Register_Args) -> *mut sys::PJRT_Error {
        // SAFETY: struct_size first; the rest only when covered.
        unsafe {
            if (*args).struct_size >= sys::PJRT_FFI_Type_Register_Args::STRUCT_SIZE {
                let info = (*args).type_info;
                if !info.is_null() {
                    FFI_V3_TYPE_INFO_SEEN.fetch_add(1, Ordering::SeqCst);
                    if (*info).deleter.is_none() && (*args).type_id == 0 {
                        (*args).type_id = 3;
                    }
                }
            }
        }
        std::ptr::null_mut()
    }

    /// Version 2: 48-byte args whose user data carries a deleter.
    unsafe extern "C" fn ffi_v2_user_data_add(args: *mut sys::PJRT_FFI_UserData_Add_Args) -> *mut sys::PJRT_Error {
        let args = args.cast::<sys::PJRT_FFI_UserData_Add_Args_V2>();
        // SAFETY: struct_size first; the rest only when covered.
        unsafe {
            if (*args).struct_size >= sys::PJRT_FFI_UserData_Add_Args_V2::STRUCT_SIZE {
                let u = (*args).user_data;
                if u.type_id == 5 && u.data as usize == 0x1234 && u.deleter.is_none() {
                    FFI_V2_ADD_SEEN.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        std::ptr::null_mut()
    }

    /// Version 3: 40-byte args, 16 bytes of user data.
    unsafe extern "C" fn ffi_v3_user_data_add(args: *mut sys::PJRT_FFI_UserData_Add_Args) -> *mut sys::PJRT_Error {
        // SAFETY: struct_size first; the rest only when covered.
        unsafe {
            if (*args).struct_size >= sys::PJRT_FFI_UserData_Add_Args::STRUCT_SIZE {
                let u = (*args).user_data;
                if u.type_id == 5 && u.data as usize == 0x1234 {
                    FFI_V3_ADD_SEEN.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        std::ptr::null_mut()
    }

    #[test]
    fn ffi_calls_send_args_valid_for_versions_2_and_3() {
        let mut v2 = sys::PJRT_FFI_Extension {
            base: base(sys::PJRT_Extension_Type::FFI, 48),
            type_register: Some(ffi_v2_type_id_register),
            user_data_add: Some(ffi_v2_user_data_add),
            register_handler: None,
        };
        let mut v3 = sys::PJRT_FFI_Extension {
            base: base(sys::PJRT_Extension_Type::FFI, 48),
            type_register: Some(ffi_v3_type_register),
            user_data_add: Some(ffi_v3_user_data_add),
            register_handler: None,
        };
        let v2 = view(80, &mut v2);
        let v3 = view(115, &mut v3);

        assert_eq!(v2.register_type("v2_type").unwrap(), 2);
        assert_eq!(FFI_V2_REGISTER_SIZE.load(Ordering::SeqCst), 48);
        assert_eq!(v3.register_type("v3_type").unwrap(), 3);
        assert_eq!(FFI_V3_TYPE_INFO_SEEN.load(Ordering::SeqCst), 1, "version 3 saw a non-NULL type_info");

        let data = 0x1234 as *mut c_void;
        // SAFETY: the fake functions never use the context or the data.
        unsafe {
            v2.add_user_data_raw(NonNull::dangling().as_ptr(), 5, data, None).unwrap();
            v3.add_user_data_raw(NonNull::dangling().as_ptr(), 5, data, None).unwrap();
        }
        assert_eq!(FFI_V2_ADD_SEEN.load(Ordering::SeqCst), 1, "version 2 got 48 bytes and a NULL deleter");
        assert_eq!(FFI_V3_ADD_SEEN.load(Ordering::SeqCst), 1);
    }

    // ---- reads stay inside struct_size --------------------------------------------------------

    #[test]
    fn members_are_read_only_inside_struct_size() {
        // Exactly 40 bytes of FFI struct (heap, nothing after it): the two members inside are
        // read, the third (offset 40) never.
        let words: &'static mut [usize; 5] = Box::leak(Box::new([40, 5, 0, 0, 0]));
        words[3] = counting::<sys::PJRT_FFI_Type_Register_Args> as *const () as usize;
        words[4] = counting::<sys::PJRT_FFI_UserData_Add_Args> as *const () as usize;
        let api: &'static Api = Box::leak(Box::new(fake_api(115)));
        let ptr = NonNull::from(words).cast::<sys::PJRT_FFI_Extension>();
        // SAFETY: 40 readable bytes, the node's struct_size.
        let ext = unsafe { ExtensionRef::new(api, ptr, 40) };
        assert_eq!(ext.members(), ["type_register", "user_data_add"]);
        // SAFETY: refused before the handler is used.
        let err = unsafe { ext.register_handler("t", "Host", std::ptr::null_mut(), false) }.unwrap_err();
        assert!(matches!(err, Error::Unsupported { function: "PJRT_FFI_Extension.register_handler", .. }), "{err:?}");

        // A chain node of 8 bytes holds only its struct_size: its type is never read, and it is
        // not listed; one of 12 bytes is listed but its `next` is never read.
        let tiny: &'static mut usize = Box::leak(Box::new(8));
        // SAFETY: 8 readable bytes, the node's struct_size.
        assert!(unsafe { walk((tiny as *mut usize).cast()) }.is_empty());
        let short: &'static mut [u32; 3] = Box::leak(Box::new([12, 0, sys::PJRT_Extension_Type::Shardings.0 as u32]));
        // SAFETY: 12 readable bytes, the node's struct_size.
        let nodes = unsafe { walk((short as *mut [u32; 3]).cast()) };
        assert_eq!(nodes.len(), 1);
        assert_eq!((nodes[0].type_, nodes[0].struct_size), (sys::PJRT_Extension_Type::Shardings, 12));
    }
}
