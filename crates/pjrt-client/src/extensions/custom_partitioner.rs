//! The CustomPartitioner extension (`PJRT_Custom_Partitioner_Extension`): register JAX custom-call
//! partitioners, and custom calls as batch partitionable, with the plugin's compiler.

use crate::error::{Error, Result};
use crate::extensions::{ext_fn, CustomPartitionerExtension};
use crate::sys::{self, Args};

impl<'p> CustomPartitionerExtension<'p> {
    /// Registers the custom call `name` as batch partitionable: the plugin's partitioner may
    /// split its batch dimension across devices (JAX's
    /// `register_custom_call_as_batch_partitionable`). The plugin copies the name.
    ///
    /// ```
    /// # fn main() -> pjrt_client::Result<()> {
    /// let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// match plugin.custom_partitioner_extension() {
    ///     Some(ext) => ext.register_batch_partitionable("my_custom_call")?,
    ///     // The CPU plugins have no CustomPartitioner extension.
    ///     None => assert!(plugin.extensions().iter().all(|e| e.kind != pjrt_client::extensions::ExtensionKind::CustomPartitioner)),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn register_batch_partitionable(&self, name: &str) -> Result<()> {
        if name.is_empty() {
            return Err(Error::invalid("a batch partitionable custom call needs a name"));
        }
        type C = sys::PJRT_Custom_Partitioner_Extension;
        let (register, function) = ext_fn!(self, C, register_batch_partitionable);
        let mut args = sys::PJRT_Register_Batch_Partitionable_Args::new();
        args.name = name.as_ptr().cast();
        args.name_size = name.len();
        // SAFETY: the member lies inside the plugin's struct and is non-NULL (`ext_fn!`); args are
        // built with `Args::new`; `name` is readable for `name_size` bytes during the call.
        self.api.check(unsafe { register(&mut args) }, function)
    }

    /// Registers a JAX custom-call partitioner under `name`; the plugin takes `callbacks` over
    /// and calls their `dtor` when it no longer needs them.
    ///
    /// ```
    /// # fn main() -> pjrt_client::Result<()> {
    /// let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// // The CPU plugins have no CustomPartitioner extension; a GPU or TPU plugin may.
    /// if let Some(ext) = plugin.custom_partitioner_extension() {
    ///     let callbacks: *mut pjrt_client::sys::JAX_CustomCallPartitioner_Callbacks = std::ptr::null_mut();
    ///     // SAFETY: a NULL partitioner is refused before the plugin sees it.
    ///     assert!(unsafe { ext.register_custom_partitioner("my_partitioner", callbacks) }.is_err());
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// `callbacks` must point to a `JAX_CustomCallPartitioner_Callbacks` that follows JAX's
    /// custom-call partitioner ABI (its version, functions and `private_data`), stays valid until
    /// the plugin calls its `dtor`, and whose functions may be called from any thread of the
    /// plugin's compiler. A NULL `callbacks` is refused.
    pub unsafe fn register_custom_partitioner(
        &self,
        name: &str,
        callbacks: *mut sys::JAX_CustomCallPartitioner_Callbacks,
    ) -> Result<()> {
        if name.is_empty() || callbacks.is_null() {
            return Err(Error::invalid("a custom partitioner needs a name and non-NULL callbacks"));
        }
        type C = sys::PJRT_Custom_Partitioner_Extension;
        let (register, function) = ext_fn!(self, C, register_custom_partitioner);
        let mut args = sys::PJRT_Register_Custom_Partitioner_Args::new();
        args.name = name.as_ptr().cast();
        args.name_size = name.len();
        args.callbacks = callbacks;
        // SAFETY: the member lies inside the plugin's struct and is non-NULL (`ext_fn!`); args are
        // built with `Args::new`; `name` is readable during the call; the callbacks are the
        // caller's promise (`# Safety`).
        self.api.check(unsafe { register(&mut args) }, function)
    }
}
