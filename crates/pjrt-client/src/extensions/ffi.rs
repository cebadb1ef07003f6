//! The FFI extension (`PJRT_FFI_Extension`): register custom-call handlers and type ids, add user
//! data to an execute context.

use std::ffi::{c_char, c_void};
use std::fmt;
use std::marker::PhantomData;

use crate::error::Result;
use crate::executable::context_data::release_user_data;
use crate::executable::execute_options::ExecuteContext;
use crate::extensions::{ext_fn, FfiExtension};
use crate::sys::{self, Args};

/// An FFI type id registered for Rust values of type `T` by
/// [`FfiExtension::register_user_data_type`]: the key under which
/// [`FfiExtension::add_owned_user_data`] puts a `T` into an execute context, and under which an
/// XLA FFI handler finds it. Only such a registration makes one, so the plugin never pairs a
/// Rust value with a deleter that is not this crate's.
///
/// ```
/// use pjrt_client::extensions::UserDataType;
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let ffi = plugin.ffi_extension().expect("the CPU plugins have the FFI extension");
/// let scale: UserDataType<f64> = ffi.register_user_data_type("user_data_type_example::Scale")?;
/// let copy = scale; // Copy: one registration serves every context
/// assert_eq!(copy.id(), scale.id());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub struct UserDataType<T> {
    id: i64,
    _type: PhantomData<fn(T) -> T>,
}

impl<T> UserDataType<T> {
    /// The id the plugin assigned (what an FFI handler looks the data up by).
    pub fn id(&self) -> i64 {
        self.id
    }
}

impl<T> Clone for UserDataType<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for UserDataType<T> {}

impl<T> fmt::Debug for UserDataType<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserDataType").field("id", &self.id).field("type", &std::any::type_name::<T>()).finish()
    }
}

/// # Versions
///
/// The FFI extension struct has the same size (48 bytes) in versions 2 and 3, and nothing in it
/// tells them apart, so every call sends args that are correct for both (see
/// [`sys::PJRT_FFI_Extension`]):
/// * type registration sends the version-3 [`sys::PJRT_FFI_Type_Register_Args`] (48 bytes) with
///   a non-NULL, zeroed `type_info` (version 3 reads it unconditionally); a version-2 plugin reads
///   the first 40 bytes, which are its [`sys::PJRT_FFI_TypeID_Register_Args`];
/// * adding user data sends [`sys::PJRT_FFI_UserData_Add_Args_V2`] (48 bytes) whose user data has
///   a NULL deleter: a version-2 plugin reads all of it (and has nothing to delete), a version-3
///   one reads `type_id` and `data` at the same offsets;
/// * handler registration args are the same in both.
///
/// A version-1 struct (0.53, 32 bytes, `user_data_add` where `type_register` is declared) is an
/// older form: listed, never used.
impl<'p> FfiExtension<'p> {
    /// Registers an external FFI type by name in the plugin's (process-wide) type registry and
    /// returns the id the plugin assigned. Objects of this type get no deleter.
    pub fn register_type(&self, name: &str) -> Result<i64> {
        self.register_type_with_id(name, 0)
    }

    /// Registers an external FFI type under a caller-chosen `type_id` (0: let the plugin
    /// assign one) and returns the id in effect: plugins older than 0.67 assign their own id
    /// whatever `type_id` says.
    pub fn register_type_with_id(&self, name: &str, type_id: i64) -> Result<i64> {
        self.register(name, type_id, sys::PJRT_FFI_Type_Info::default())
    }

    /// Registers `name` as the FFI type of Rust values of type `T` put into execute contexts
    /// with [`Self::add_owned_user_data`]. The plugin assigns the id; a name registered before
    /// (in this process, by anyone) is refused by the plugin, so the registration, and the
    /// deleter it carries, is this crate's own. An XLA FFI handler that reads the data must
    /// expect a `T` (make `T` `#[repr(C)]` for a handler written in C or C++).
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let ffi = plugin.ffi_extension().expect("the CPU plugins have the FFI extension");
    /// let settings = ffi.register_user_data_type::<[f32; 2]>("my_crate::Settings")?;
    /// assert!(settings.id() > 0);
    /// // The name is taken now: a second registration is refused.
    /// assert!(ffi.register_user_data_type::<[f32; 2]>("my_crate::Settings").is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn register_user_data_type<T: Send + Sync + 'static>(&self, name: &str) -> Result<UserDataType<T>> {
        // Plugins whose user data carries no deleter of its own delete it with the type's.
        let info = sys::PJRT_FFI_Type_Info { deleter: Some(release_user_data), serialize: None, deserialize: None };
        let id = self.register(name, 0, info)?;
        Ok(UserDataType { id, _type: PhantomData })
    }

    fn register(&self, name: &str, type_id: i64, mut info: sys::PJRT_FFI_Type_Info) -> Result<i64> {
        let (register, fn_name) = ext_fn!(self, sys::PJRT_FFI_Extension, type_register);
        // Version 3 reads the type info unconditionally (copying the deleter): never NULL.
        // Version 2 reads the first 40 bytes of these args, its whole args struct.
        let mut args = sys::PJRT_FFI_Type_Register_Args::new();
        args.type_name = name.as_ptr() as *const c_char;
        args.type_name_size = name.len();
        args.type_id = type_id;
        args.type_info = &mut info;
        // SAFETY: args built with `Args::new` (48 bytes: the version-3 args, whose 40-byte prefix
        // is the version-2 args); name and info outlive the call; `type_info` is not NULL.
        self.api.check(unsafe { register(&mut args) }, fn_name)?;
        Ok(args.type_id)
    }

    /// Adds user data for XLA FFI handlers to an execute context (`user_data_add`): handlers of
    /// executions run with `context` find `data` under `type_id` (from [`Self::register_type`]).
    /// The plugin does not take ownership of `data` (no deleter is passed).
    ///
    /// # Safety
    /// `data` must point to an object of the type registered as `type_id` that stays valid, and
    /// usable from the threads the plugin runs handlers on, for as long as any execution with
    /// `context` may run a handler that reads it.
    pub unsafe fn add_user_data(
        &self,
        context: &crate::executable::execute_options::ExecuteContext,
        type_id: i64,
        data: *mut c_void,
    ) -> Result<()> {
        self.same_plugin(context.api())?;
        // SAFETY: the context is alive (borrowed) and belongs to this plugin; `data` is the
        // caller's contract.
        unsafe { self.add_user_data_raw(context.as_raw(), type_id, data, None) }
    }

    /// Moves `value` into `context` for the XLA FFI handlers of executions run with it: they
    /// find it under `data_type`. The context owns the value from now on: it is dropped exactly
    /// once, after the plugin has destroyed the context (when the last clone of the context and
    /// the last execution using it are gone), on a thread of this crate, never inside the plugin.
    /// That holds whether the plugin calls the deleter it is given, calls it twice, or never.
    ///
    /// A context holds one value per type: adding a second one of the same type is refused by the
    /// plugin (the value is still kept until the context goes, as the plugin may have seen it).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use pjrt_client::ExecuteContext;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// struct Counter(Arc<AtomicUsize>);
    /// impl Drop for Counter {
    ///     fn drop(&mut self) { self.0.fetch_add(1, Ordering::SeqCst); }
    /// }
    /// let ffi = plugin.ffi_extension().expect("the CPU plugins have the FFI extension");
    /// let counter_type = ffi.register_user_data_type::<Counter>("doc_example::Counter")?;
    /// let drops = Arc::new(AtomicUsize::new(0));
    /// let context = ExecuteContext::new(&plugin)?;
    /// ffi.add_owned_user_data(&context, counter_type, Counter(drops.clone()))?;
    /// drop(context); // the plugin destroys the context, then the value goes
    /// pjrt_client::flush_released();
    /// assert_eq!(drops.load(Ordering::SeqCst), 1);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn add_owned_user_data<T: Send + Sync + 'static>(
        &self,
        context: &ExecuteContext,
        data_type: UserDataType<T>,
        value: T,
    ) -> Result<()> {
        self.same_plugin(context.api())?;
        // Resolved before the value is adopted: a missing member fails with nothing to keep.
        let _ = ext_fn!(self, sys::PJRT_FFI_Extension, user_data_add);
        let data = context.adopt_user_data(value);
        // SAFETY: the context is alive (borrowed) and belongs to this plugin; `data` points to a
        // `T` owned by the context until the plugin has destroyed it, and the deleter looks the
        // pointer up instead of trusting it (see `context_data`).
        unsafe { self.add_user_data_raw(context.as_raw(), data_type.id, data, Some(release_user_data)) }
    }

    /// # Safety
    /// `context` must be a live execute context of this plugin; `data` as for
    /// [`Self::add_user_data`].
    /// `deleter` is read by plugins whose user data carries one (versions 1, 2, early 3).
    pub(super) unsafe fn add_user_data_raw(
        &self,
        context: *mut sys::PJRT_ExecuteContext,
        type_id: i64,
        data: *mut c_void,
        deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> Result<()> {
        let (add, fn_name) = ext_fn!(self, sys::PJRT_FFI_Extension, user_data_add);
        let mut args = sys::PJRT_FFI_UserData_Add_Args_V2::new();
        args.context = context;
        args.user_data = sys::PJRT_FFI_UserData_V2 { type_id, data, deleter };
        // The member is declared with the version-3 args; the 48-byte version-2 args are valid
        // for both versions (see the type's docs), so they are what is passed.
        let args_ptr = (&mut args as *mut sys::PJRT_FFI_UserData_Add_Args_V2).cast::<sys::PJRT_FFI_UserData_Add_Args>();
        // SAFETY: args built with `Args::new` with struct_size 48, at least what either version
        // checks for; the first 40 bytes have the version-3 layout; the deleter is NULL or this
        // crate's, which frees only what it owns; the context is live (caller's contract).
        self.api.check(unsafe { add(args_ptr) }, fn_name)
    }

    /// Registers an XLA FFI handler for the custom-call target `target_name` on `platform_name`
    /// (e.g. `"Host"`, `"CUDA"`). The args are the same in versions 2 and 3 (from 0.73).
    ///
    /// This is the raw escape hatch: a handler written in Rust is registered safely, with its
    /// frames decoded and checked, through [`crate::ffi::register`]. What this call does on the
    /// CPU plugins (0.106: XLA FFI 0.3, 0.115: XLA FFI 0.4):
    /// - the handler is found at compile time for `"Host"` (or `"cpu"`) and runs;
    /// - the registry is global to the loaded plugin (every client of it) and permanent;
    /// - the plugin answers **OK even when nothing was registered**: when the handler does not
    ///   answer XLA's metadata query (a frame whose `extension_start` is an
    ///   `XLA_FFI_Metadata_Extension`), when it claims a newer FFI minor version than the
    ///   plugin's, and when a different handler already holds the name (the first one stays).
    ///   Only compiling a program that calls the target proves a registration
    ///   ([`crate::ffi::probe_program`]).
    ///
    /// # Safety
    /// `handler` must be a valid `XLA_FFI_Handler*` of the XLA FFI ABI the plugin was built with,
    /// callable for as long as the plugin may run programs that use `target_name`.
    pub unsafe fn register_handler(
        &self,
        target_name: &str,
        platform_name: &str,
        handler: *mut c_void,
        command_buffer_compatible: bool,
    ) -> Result<()> {
        let (register, fn_name) = ext_fn!(self, sys::PJRT_FFI_Extension, register_handler);
        let mut args = sys::PJRT_FFI_Register_Handler_Args::new();
        args.target_name = target_name.as_ptr() as *const c_char;
        args.target_name_size = target_name.len();
        args.handler = handler;
        args.platform_name = platform_name.as_ptr() as *const c_char;
        args.platform_name_size = platform_name.len();
        args.traits = if command_buffer_compatible {
            sys::PJRT_FFI_Handler_TraitsBits::COMMAND_BUFFER_COMPATIBLE
        } else {
            sys::PJRT_FFI_Handler_TraitsBits::NONE
        };
        // SAFETY: args built with `Args::new`; strings outlive the call; the handler is the
        // caller's contract.
        self.api.check(unsafe { register(&mut args) }, fn_name)
    }
}
